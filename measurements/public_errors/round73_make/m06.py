"""A notebook memory-maps a 2 GiB uint16 token file for pretraining with np.memmap under a cap (mapped + 256 MiB)
set in the first cell: the mapping is refused."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "notebook cell (IPython 8.12.3)",
        "version": "produced here: numpy (np.memmap), CPU",
        "cause": "address space refused (RLIMIT_AS) to np.memmap of a 2 GiB token file", "family": "numpy",
        "stage": "mmap"}


def fixture(d):
    with open(d / "train_tokens.bin", "wb") as fh:
        fh.truncate(2 * 2**30)


CELLS = ['''import numpy as np
from envsetup import cap
cap(256)''',
         '''tokens = np.memmap("train_tokens.bin", dtype=np.uint16, mode="r")
print(f"{len(tokens):,} tokens")''',
         '''block = 1024
n_blocks = len(tokens) // block
print(n_blocks, tokens[:block].max())''']
CMD = "python3 nb.py"
