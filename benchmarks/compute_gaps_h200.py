"""The llama.cpp planner's compute buffers against measurements/llamacpp_h200 (one shrunk catalog model per GGUF
architecture, 16 contexts each, llama.cpp 0c1e57098 on an H200 and on the CPU), per architecture: whether
runtimes/ggml builds its graph, and per buffer (CUDA0, CUDA_Host, the CPU-only run) the records exact to the printed
0.01 MiB and the worst predicted − logged MiB (most negative: the worst under-prediction). Sorted by the worst
under-prediction first — an under-predicted buffer is a "fits" that fails to start.

    PYTHONPATH=src python benchmarks/compute_gaps_h200.py
"""

from __future__ import annotations

from collections import defaultdict

from runlocal.evidence import MEASUREMENTS
from runlocal.evidence import llamacpp_runs as A
from runlocal.runtimes.ggml.arch import BUILDERS

FILES = (("cpu", "cpu_archs.jsonl"), ("cuda", "h200_archs.jsonl"))
BUFFERS = ("CUDA0", "CUDA_Host", "CPU")


def gaps() -> dict[tuple[str, str], list[float]]:
    """(architecture, buffer) → [records, exact, worst predicted − logged, largest predicted − logged] (MiB)."""
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for backend, name in FILES:
        records = A.load_records([MEASUREMENTS / "llamacpp_h200" / name])
        specs = A.model_specs({(r["model"], r["weight_type"]) for r in records}, False)
        rows, _ = A.evaluate(records, specs)
        arch = {r["model"]: r["arch"] for r in records}
        for r in rows:
            if r["component"] != "compute":
                continue
            buf = "CPU" if backend == "cpu" else ("CUDA0" if r["device"] == "gpu" else "CUDA_Host")
            s = out[(arch[r["model"]], buf)]
            d = r["predicted"] - r["logged"]
            s[0] += 1
            s[1] += A.exact_to_print(r)
            s[2], s[3] = min(s[2], d), max(s[3], d)
    return out


def main() -> None:
    g = gaps()
    archs = sorted({a for a, _ in g}, key=lambda a: min(g[(a, b)][2] for b in BUFFERS if (a, b) in g))
    print(f"{'architecture':15s}{'graph':6s}" + "".join(f"{b + ': exact, worst −, worst +':>36s}" for b in BUFFERS))
    for a in archs:
        cells = []
        for b in BUFFERS:
            n, ex, lo, hi = g[(a, b)]
            cells.append(f"{int(ex):>5d}/{int(n):<3d}{lo:+11.2f}{hi:+11.2f}")
        print(f"{a:15s}{'yes' if a in BUILDERS else 'no':6s}" + "".join(f"{c:>36s}" for c in cells))


if __name__ == "__main__":
    main()
