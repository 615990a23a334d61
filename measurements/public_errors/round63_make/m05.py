"""safetensors.torch.load_file of a 400 MB checkpoint under a cap of mapped + 200 MiB."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to safetensors' load_file of a checkpoint larger than the cap",
        "family": "transformers"}


def fixture(d):
    import torch
    from safetensors.torch import save_file
    save_file({f"layers.{i}.weight": torch.zeros(2500, 10000) for i in range(4)}, str(d / "adapter.safetensors"))


FILES = {"merge.py": '''import torch
from safetensors.torch import load_file
from envsetup import cap

cap(200)
print("loading adapter weights ...")
sd = load_file("adapter.safetensors")
print({k: tuple(v.shape) for k, v in sd.items()})
'''}
CMD = "python3 merge.py"
