"""numpy: cosine similarity of 60,000 normalised 384-d embeddings, `emb @ emb.T` (60,000 x 60,000 float32, 13.4 GiB),
under a cap of mapped + 256 MiB."""
META = {"label": "oom_killer", "runtime": "numpy", "phase": "run", "wrapper": "python traceback",
        "cause": "host RAM refused (RLIMIT_AS) to numpy's 13.4 GiB similarity matrix", "family": "numpy",
        "stage": "post-processing"}

FILES = {"dedup.py": '''import numpy as np
from envsetup import cap

rng = np.random.default_rng(0)
emb = rng.standard_normal((60_000, 384), dtype=np.float32)
emb /= np.linalg.norm(emb, axis=1, keepdims=True)
print("embeddings", emb.shape, emb.dtype)
cap(256)
sims = emb @ emb.T
dups = np.argwhere(np.triu(sims, 1) > 0.95)
print(len(dups), "near-duplicate pairs")
'''}
CMD = "python3 dedup.py"
