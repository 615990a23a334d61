"""numpy post-processing: query embeddings from one model (384-d) scored against corpus embeddings from another
(768-d) with matmul."""
META = {"label": "not_memory", "family": None, "runtime": "numpy", "phase": "run", "wrapper": "python traceback",
        "cause": "embeddings of two different widths multiplied (shape mismatch)", "stage": "post-processing"}

FILES = {"rank.py": '''import numpy as np

rng = np.random.default_rng(0)
queries = rng.standard_normal((32, 384), dtype=np.float32)
corpus = rng.standard_normal((10_000, 768), dtype=np.float32)
print("queries", queries.shape, "corpus", corpus.shape)
scores = queries @ corpus.T
print(np.argsort(-scores, axis=1)[:, :10])
'''}
CMD = "python3 rank.py"
