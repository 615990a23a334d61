"""A Python launcher runs a worker with subprocess.run(check=True) inside a 300 MiB memory cgroup: the OOM killer
kills the worker (returncode -9) and the launcher raises CalledProcessError."""
META = {"label": "oom_killer", "runtime": "transformers", "phase": "load", "wrapper": "python traceback (subprocess)",
        "cause": "kernel OOM killer in a 300 MiB memory cgroup kills a worker loading shards; returncode -9",
        "family": "transformers"}
CGROUP_MIB = 300
FILES = {"launch.py": '''import subprocess, sys
print("launching worker for shard conversion", flush=True)
proc = subprocess.run([sys.executable, "worker.py"])
print("worker returncode:", proc.returncode, flush=True)
proc.check_returncode()
''', "worker.py": '''import torch
shards = []
for i in range(40):
    shards.append(torch.ones(64 * 2**20 // 4))
    print(f"shard {i} loaded ({(i + 1) * 64} MiB)", flush=True)
'''}
CMD = "python3 launch.py"
