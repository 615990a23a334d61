"""A pids cgroup (pids.max 16): a ThreadPoolExecutor with 32 workers cannot start its threads."""
from harness73 import tiny_hf

META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "run", "wrapper": "python traceback",
        "cause": "a process/thread-count limit (pids cgroup, pids.max 16): threads cannot be created",
        "stage": "preprocessing"}
PIDS_MAX = 16


def fixture(d):
    tiny_hf(d / "tiny", layers=1, hidden=64)
    (d / "docs").mkdir()
    for i in range(200):
        (d / "docs" / f"doc{i:04d}.txt").write_text(" ".join(f"w{(i * 17 + j) % 30000}" for j in range(300)))


FILES = {"tokenize_parallel.py": '''import glob
from concurrent.futures import ThreadPoolExecutor

from tokenizers import Tokenizer

tok = Tokenizer.from_file("tiny/tokenizer.json")


def count(path):
    with open(path) as fh:
        return len(tok.encode(fh.read()).ids)


paths = sorted(glob.glob("docs/*.txt"))
with ThreadPoolExecutor(max_workers=32) as pool:
    total = sum(pool.map(count, paths))
print(total, "tokens")
'''}
CMD = "python3 tokenize_parallel.py"
