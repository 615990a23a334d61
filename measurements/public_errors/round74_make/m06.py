"""A shell script sets `ulimit -v 1100000` (KiB) and loads a ~1.2 GB checkpoint with torch.load(mmap=True): the
checkpoint's mapping does not fit the address space left after importing torch."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "shell script reporting exit status",
        "version": "produced here: torch 2.13.0+cpu, CPU",
        "cause": "address space refused (ulimit -v) to torch.load's mmap of a 1.2 GB checkpoint", "family": "torch",
        "stage": "mmap of a state dict"}


def fixture(d):
    import torch
    sd = {f"layers.{i}.weight": torch.zeros(4096, 4096) for i in range(18)}
    torch.save(sd, d / "ckpt.pt")


FILES = {"inspect_ckpt.py": '''import torch

sd = torch.load("ckpt.pt", mmap=True, weights_only=True, map_location="cpu")
print(len(sd), "tensors;", sum(t.numel() for t in sd.values()) / 1e6, "M params")
''', "check.sh": '''#!/bin/bash
ulimit -v 1100000
echo "address-space limit: $(ulimit -v) KiB"
python3 inspect_ckpt.py
rc=$?
if [ $rc -ne 0 ]; then echo "inspect_ckpt.py FAILED (exit $rc)"; fi
exit $rc
'''}
CMD = "bash check.sh"


def cleanup(d):
    (d / "ckpt.pt").unlink(missing_ok=True)
