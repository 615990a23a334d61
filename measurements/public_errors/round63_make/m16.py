"""torch.load of a 400 MB checkpoint (a torch.save'd state dict) under a cap of mapped + 200 MiB."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to torch.load of a checkpoint larger than the cap",
        "family": "transformers"}


def fixture(d):
    import torch
    torch.save({"model": {f"block.{i}.weight": torch.zeros(2500, 10000) for i in range(4)}, "step": 1200},
               d / "checkpoint.pt")


FILES = {"resume.py": '''import torch
from envsetup import cap

cap(200)
ckpt = torch.load("checkpoint.pt", map_location="cpu")
print("resuming from step", ckpt["step"])
'''}
CMD = "python3 resume.py"
