"""torch.load of a pytorch_model.bin that is a git-lfs pointer file."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "python traceback",
        "cause": "pytorch_model.bin is a git-lfs pointer (cloned without git-lfs)", "stage": "state dict"}


def fixture(d):
    (d / "checkpoint").mkdir()
    (d / "checkpoint" / "pytorch_model.bin").write_text(
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d\nsize 2692841583\n")


FILES = {"restore.py": '''import torch

state = torch.load("checkpoint/pytorch_model.bin", map_location="cpu")
print(len(state), "tensors")
'''}
CMD = "python3 restore.py"
