"""torch.load (weights_only=True, the default) of a checkpoint holding a pickled user class: refused."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load",
        "wrapper": "python traceback", "cause": "torch.load weights_only refusing a pickled object"}


def fixture(d):
    import subprocess
    import sys
    (d / "trainstate.py").write_text("class TrainState:\n    def __init__(self, step):\n        self.step = step\n")
    subprocess.run([sys.executable, "-c", "import torch, trainstate; torch.save({'state': trainstate.TrainState(7),"
                    " 'w': torch.zeros(4)}, 'ckpt.pt')"], cwd=d, check=True)


FILES = {"resume.py": '''import torch

ckpt = torch.load("ckpt.pt", map_location="cpu")
print(ckpt["state"].step)
'''}
CMD = "python3 resume.py"
