"""A notebook: the cell before sets a cap of mapped + 128 MiB; np.loadtxt of a 3,000,000-row x 8-column text file
(a 192 MB float64 array) runs out of address space."""
META = {"label": "oom_killer", "runtime": "numpy", "phase": "run", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "host RAM refused (RLIMIT_AS) to np.loadtxt of a large text file", "family": "numpy",
        "stage": "data loading"}


def fixture(d):
    line = " ".join(f"{0.125 * (k + 1):.6f}" for k in range(8)) + "\n"
    with open(d / "features.txt", "w") as fh:
        for _ in range(30):
            fh.write(line * 100_000)


CELLS = ['''import numpy as np
from envsetup import cap
cap(128)''',
         '''X = np.loadtxt("features.txt", dtype=np.float64)
X.shape''']
CMD = "python3 nb.py"
