"""Writes records.jsonl: for each weight type, the CPU_REPACK buffer real llama.cpp (llama-cpp-python 0.3.36, CPU)
logs for a shrunk zero-weight Qwen3-30B-A3B stored in it, and the bytes runlocal's repack rule plans
(runlocal.evidence.repack_runs says how).

    PYTHONPATH=src python measurements/llamacpp_nohost/measure_repack.py
"""

import json
from pathlib import Path

from runlocal.evidence.repack_runs import measure_all

rows = measure_all()
with (Path(__file__).parent / "records.jsonl").open("w") as f:
    for row in rows:
        f.write(json.dumps(row) + "\n")
for row in rows:
    print(f"{row['type']:7} CPU_REPACK logged {row['logged_repack_mib']:8.2f} MiB  planned {row['planned_repack_mib']:8.2f}")
