"""scipy: a sparse 50,000 x 50,000 co-occurrence matrix turned dense with .toarray() (float64, 18.6 GiB) under a cap of
mapped + 256 MiB."""
META = {"label": "oom_killer", "runtime": "numpy", "phase": "run", "wrapper": "python traceback",
        "version": "produced here: scipy 1.17.1, numpy 2.4.6, CPU",
        "cause": "host RAM refused (RLIMIT_AS) to scipy's dense array of a sparse matrix", "family": "numpy",
        "stage": "preprocessing"}

FILES = {"cooc.py": '''import numpy as np
from envsetup import cap
from scipy import sparse

rng = np.random.default_rng(0)
rows = rng.integers(0, 50_000, 1_000_000)
cols = rng.integers(0, 50_000, 1_000_000)
m = sparse.coo_matrix((np.ones(1_000_000), (rows, cols)), shape=(50_000, 50_000)).tocsr()
print("co-occurrence nnz:", m.nnz)
cap(256)
dense = m.toarray()
print(dense.sum())
'''}
CMD = "python3 cooc.py"
