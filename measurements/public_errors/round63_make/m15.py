"""A notebook: np.load of a 400 MB .npy of cached embeddings under a cap of mapped + 200 MiB set in the setup cell."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "notebook cell (IPython 8.12.3)",
        "cause": "host RAM refused (RLIMIT_AS) to numpy's np.load of an array larger than the cap",
        "family": "transformers"}


def fixture(d):
    import numpy as np
    np.save(d / "embeddings.npy", np.zeros((100_000, 1024), dtype=np.float32))


CELLS = ['''import numpy as np
from envsetup import cap
cap(200)''', '''emb = np.load("embeddings.npy")
emb.shape''']
CMD = "python3 nb.py"
