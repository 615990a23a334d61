"""A shell script sets `ulimit -n 24` and runs a data-prep script that opens all 64 shard files of a text dataset at
once (to interleave them): Too many open files."""
META = {"label": "not_memory", "family": None, "runtime": "transformers", "phase": "load", "wrapper": "shell script (python traceback)",
        "version": "produced here: CPython 3.11.7, CPU",
        "cause": "the open-files limit (ulimit -n 24) passed by opening 64 dataset shards", "stage": "data loading"}


def fixture(d):
    (d / "data").mkdir()
    for i in range(64):
        (d / "data" / f"shard-{i:05d}.txt").write_text("".join(f"w{i} w{j} w{i + j}\n" for j in range(100)))


FILES = {"interleave.py": '''import glob
import heapq

paths = sorted(glob.glob("data/shard-*.txt"))
print(f"{len(paths)} shards", flush=True)
files = [open(p) for p in paths]
with open("train.txt", "w") as out:
    for line in heapq.merge(*files):
        out.write(line)
print("merged")
''', "prep.sh": '''#!/bin/bash
ulimit -n 24
python3 interleave.py
rc=$?
echo "interleave.py exited with $rc"
exit $rc
'''}
CMD = "bash prep.sh"
