"""A hand-written GGUF conversion script reads bf16 safetensors tensors and upcasts each to numpy float32 (the bit
shift such converters use), keeping them for gguf.GGUFWriter; under a cap of mapped + 128 MiB a numpy upcast fails."""
META = {"label": "oom_killer", "runtime": "llamacpp", "phase": None, "wrapper": "python traceback",
        "version": "produced here: gguf-py 0.19.0, numpy 2.4.6, safetensors 0.8.0, torch 2.13.0+cpu, CPU",
        "cause": "host RAM refused (RLIMIT_AS) to numpy float32 copies made while converting bf16 weights to GGUF",
        "family": "llamacpp", "stage": "conversion"}


def fixture(d):
    import torch
    from safetensors.torch import save_file
    save_file({f"model.layers.{i}.mlp.up_proj.weight": torch.zeros(5632, 2048, dtype=torch.bfloat16)
               for i in range(8)}, str(d / "model.safetensors"))


FILES = {"to_gguf.py": '''import numpy as np
import torch
from envsetup import cap
from gguf import GGUFWriter
from safetensors import safe_open

writer = GGUFWriter("model-f32.gguf", "llama")
with safe_open("model.safetensors", framework="pt") as f:
    cap(128)
    for name in f.keys():
        raw = f.get_tensor(name).view(torch.int16).numpy()
        data = (raw.astype(np.uint32) << 16).view(np.float32)
        print(f"{name:45s} {str(data.shape):14s} bf16 -> f32")
        writer.add_tensor(name, data)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
'''}
CMD = "python3 to_gguf.py"
