"""Public llama.cpp logs scored per backend: KV and compute buffers, logged vs planned.

The records are measurements/public_logs/llamacpp.jsonl (CUDA, Vulkan, Metal, ROCm; benchmarks/accuracy.py prints each
of them) and measurements/public_logs/sycl.jsonl (llama.cpp's SYCL backend on Intel GPUs, kept apart so that
accuracy.py's output does not move). Each is planned and scored by runlocal.evidence.public_scores exactly as
accuracy.py scores llamacpp.jsonl (a SYCL record is planned with --backend sycl's rules); a record whose build or
settings the planner does not model is shown with the reason and not scored.

Run: python benchmarks/backend_logs.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from runlocal.evidence import public_logs, public_scores

ORDER = ["cuda", "rocm", "vulkan", "metal", "sycl", "cpu"]


def scored(row: dict) -> dict[str, tuple[float, float]]:
    """The figures of one row that are scored (the same reasons as accuracy.py's table)."""
    out = {}
    if row["kv"] and row["kv_reason"] is None:
        out["KV"] = row["kv"]
    if row["compute_gpu"] and row["compute_reason"] is None and not row["override"]:
        out["GPU compute"] = row["compute_gpu"]
    if row["compute_host"] and row["host_reason"] is None:
        out["host compute"] = row["compute_host"]
    return out


def err(pair: tuple[float, float]) -> float:
    logged, predicted = pair
    return (predicted - logged) / logged * 100


def print_rows(rows: list[dict]) -> None:
    print("== SYCL logs (measurements/public_logs/sycl.jsonl): MiB logged / predicted ==")
    for r in rows:
        cells = []
        for label, key, reason in (("KV", "kv", "kv_reason"), ("GPU compute", "compute_gpu", "compute_reason"),
                                   ("host compute", "compute_host", "host_reason")):
            pair = r[key]
            if not pair:
                continue
            shown = f"{label} {pair[0]:.2f} / {pair[1]:.2f} ({err(pair):+.1f}%)"
            cells.append(shown + ("" if r[reason] is None else f" not scored: {r[reason]}"))
        print(f"{r['source']:<44} {r['alias'] or '—':<14} build {r['build'][:30]}")
        for c in cells:
            print(f"    {c}")


def print_table(rows: list[dict]) -> None:
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        for label, pair in scored(r).items():
            per[(r["backend"], label)].append(abs(err(pair)))
    print("\n== per backend: |error| of the scored records (n, median %, max %) ==")
    labels = ("KV", "GPU compute", "host compute")
    print(f"{'backend':8} " + " ".join(f"{lab:>26}" for lab in labels))
    for b in sorted({k[0] for k in per}, key=lambda x: ORDER.index(x) if x in ORDER else 99):
        cells = []
        for lab in labels:
            v = per.get((b, lab))
            cells.append(f"{len(v):>4} {statistics.median(v):9.2f} {max(v):9.2f}  " if v else f"{'-':>26}")
        print(f"{b:8} " + " ".join(f"{c:>26}" for c in cells))


def main() -> int:
    main_rows = public_scores.llamacpp_rows(public_logs.load_llamacpp())
    sycl_rows = public_scores.llamacpp_rows(public_logs.load_sycl())
    print_rows(sycl_rows)
    print_table(main_rows + sycl_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
