"""A Python supervisor runs a conversion step with subprocess.run(check=True) inside a 300 MiB memory cgroup; the step
(numpy, ~600 MB of float32 weights) is killed by the kernel's OOM killer and the supervisor's CalledProcessError names
SIGKILL."""
META = {"label": "oom_killer", "runtime": "numpy", "phase": None, "wrapper": "python traceback (subprocess supervisor)",
        "cause": "kernel OOM killer in a 300 MiB memory cgroup kills a numpy conversion step; CalledProcessError",
        "family": "numpy", "stage": "conversion"}
CGROUP_MIB = 300

FILES = {"convert_step.py": '''import numpy as np

shards = []
for i in range(6):
    w = np.ones((100, 1024, 256), dtype=np.float32)
    shards.append(w * 0.5)
    print(f"convert: shard {i} done", flush=True)
np.savez("converted.npz", *shards)
''', "pipeline.py": '''import subprocess
import sys

steps = [["python3", "convert_step.py", "--dtype", "f32"]]
for cmd in steps:
    print("running:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
print("pipeline finished")
'''}
CMD = "python3 pipeline.py"
