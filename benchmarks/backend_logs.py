"""Public llama.cpp logs scored per backend: KV and compute buffers, logged vs planned.

The records are measurements/public_logs/llamacpp.jsonl (CUDA, Vulkan, Metal, ROCm; benchmarks/accuracy.py prints each
of them), measurements/public_logs/sycl.jsonl (llama.cpp's SYCL backend on Intel GPUs) and
measurements/public_logs/backends_round2.jsonl (round 2: CPU, Metal, Vulkan, ROCm; collected by the rule in
round_backends_queries.md), the last two kept apart so that accuracy.py's output does not move. Each is planned and
scored by runlocal.evidence.public_scores exactly as accuracy.py scores llamacpp.jsonl (a SYCL or round-2 record with
--backend's rules for its backend); a record whose build or settings the planner does not model is shown with the
reason and not scored. On the cpu backend the "GPU compute" column is the CPU-only build's one compute buffer.

Round 2 has a held-out part (the rule file says which): it is printed only with --held-out, scored once after the
last change to the planner.

Run: python benchmarks/backend_logs.py [--held-out]
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


def print_rows(rows: list[dict], title: str) -> None:
    print(f"== {title}: MiB logged / predicted ==")
    for r in rows:
        cells = []
        for label, key, reason in (("KV", "kv", "kv_reason"), ("GPU compute", "compute_gpu", "compute_reason"),
                                   ("host compute", "compute_host", "host_reason")):
            pair = r[key]
            if not pair:
                continue
            shown = f"{label} {pair[0]:.2f} / {pair[1]:.2f} ({err(pair):+.1f}%)"
            cells.append(shown + ("" if r[reason] is None else f" not scored: {r[reason]}"))
        print(f"{r['source']:<44} {r['backend']:<7} {r['alias'] or '—':<14} build {r['build'][:30]}")
        for c in cells:
            print(f"    {c}")


def print_table(rows: list[dict], title: str) -> None:
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        for label, pair in scored(r).items():
            per[(r["backend"], label)].append(abs(err(pair)))
    print(f"\n== per backend, {title}: |error| of the scored records (n, median %, max %) ==")
    labels = ("KV", "GPU compute", "host compute")
    print(f"{'backend':8} " + " ".join(f"{lab:>26}" for lab in labels))
    for b in sorted({k[0] for k in per}, key=lambda x: ORDER.index(x) if x in ORDER else 99):
        cells = []
        for lab in labels:
            v = per.get((b, lab))
            cells.append(f"{len(v):>4} {statistics.median(v):9.2f} {max(v):9.2f}  " if v else f"{'-':>26}")
        print(f"{b:8} " + " ".join(f"{c:>26}" for c in cells))


def main(argv: list[str]) -> int:
    main_rows = public_scores.llamacpp_rows(public_logs.load_llamacpp())
    sycl_rows = public_scores.llamacpp_rows(public_logs.load_sycl())
    round2 = public_logs.load_backends_round2()
    held = public_logs.held_out_sources(round2)
    tuning = public_scores.llamacpp_rows([r for r in round2 if r["source_url"] not in held])
    print_rows(sycl_rows, "SYCL logs (measurements/public_logs/sycl.jsonl)")
    print()
    print_rows(tuning, "round 2, tuning part (measurements/public_logs/backends_round2.jsonl)")
    print_table(main_rows + sycl_rows + tuning, "llamacpp.jsonl + sycl.jsonl + round 2's tuning part")
    print_table(tuning, "round 2's tuning part alone")
    if "--held-out" in argv:
        held_rows = public_scores.llamacpp_rows([r for r in round2 if r["source_url"] in held])
        print()
        print_rows(held_rows, "round 2, HELD-OUT part (scored once, after the last planner change)")
        print_table(held_rows, "round 2's held-out part")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
