"""A ProcessPoolExecutor packs token shards in 2 workers (each builds a 320 MB int64 array) inside a 400 MiB memory
cgroup: the OOM killer kills a worker and the pool raises BrokenProcessPool in the parent."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "run", "wrapper": "python traceback (process pool)",
        "version": "produced here: CPython 3.11.7 concurrent.futures, numpy, CPU",
        "cause": "kernel OOM killer in a 400 MiB memory cgroup kills a ProcessPoolExecutor worker; BrokenProcessPool",
        "family": "python", "stage": "preprocessing"}
CGROUP_MIB = 400
FILES = {"pack_shards.py": '''from concurrent.futures import ProcessPoolExecutor

import numpy as np


def pack(shard):
    ids = np.arange(40_000_000, dtype=np.int64) % 30000 + shard
    blocks = ids[: len(ids) // 2048 * 2048].reshape(-1, 2048)
    return shard, blocks.shape[0]


if __name__ == "__main__":
    with ProcessPoolExecutor(max_workers=2) as pool:
        for shard, n in pool.map(pack, range(8)):
            print(f"shard {shard}: {n} blocks", flush=True)
'''}
CMD = "python3 pack_shards.py"
