"""A ~342 MB state dict serialised to bytes with safetensors.torch.save (to upload from memory); the cap
(mapped + 128 MiB, after load) is short for the serialised copy."""
from harness73 import tiny_hf

META = {"label": "oom_killer", "runtime": "transformers", "phase": None, "wrapper": "python traceback",
        "version": "produced here: safetensors 0.8.0, torch 2.13.0+cpu, CPU",
        "cause": "host RAM refused (RLIMIT_AS) to safetensors' in-memory serialisation of a 342 MB state dict",
        "family": "safetensors", "stage": "save"}


def fixture(d):
    tiny_hf(d / "tiny", layers=2, hidden=1024)


FILES = {"export_bytes.py": '''import safetensors.torch
from transformers import AutoModelForCausalLM
from envsetup import cap

model = AutoModelForCausalLM.from_pretrained("./tiny")
state = {k: v.contiguous() for k, v in model.state_dict().items()}
cap(128)
blob = safetensors.torch.save(state, metadata={"format": "pt"})
print(len(blob), "bytes ready for upload")
'''}
CMD = "python3 export_bytes.py"
