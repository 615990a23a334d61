"""llama.cpp CPU-only decode vs runlocal's CPU constants (hardware/speed.py ``CPU``: share of RAM bandwidth, µs a layer).

The records and the rule they were collected by: measurements/speed/cpu_decode_queries.md (committed before any query),
the rows in measurements/speed/cpu_decode/ (tuning.jsonl; held_out.jsonl when a round finds a third source). Each row is
priced as one CPU part, exactly as ``speed.decode_seconds`` prices it: the bytes one token reads (llama-bench's size ×
token_work.read_fraction, or runlocal's own quant mix when no size is printed), the f16 KV at the tgN test's mean depth
N/2, the model's layers, and the host's theoretical RAM bandwidth (``ram_gbs``).

python benchmarks/cpu_decode_accuracy.py            # today's constants and the rule's grid fit on the tuning rows
python benchmarks/cpu_decode_accuracy.py --held-out # also score the held-out rows (once; the rule says so)
"""

from __future__ import annotations

import sys

from runlocal.evidence.cpu_decode import fit, load, table, token_reads
from runlocal.hardware import speed as S


def report(held_out: bool) -> list[str]:
    tuning, held = load("tuning.jsonl"), load("held_out.jsonl")
    sources = len({r["source"] for r in tuning})
    out = [f"CPU-only decode (llama.cpp): {len(tuning)} tuning rows from {sources} sources, {len(held)} held out"]
    out += table(tuning, "today's constants (speed.CPU)", S.CPU.decode_eff, S.CPU.layer_us)
    eff, layer_us, identified = fit(tuning)
    out += table(tuning, "fitted on the tuning rows" + ("" if identified else
                 " (layer_us not identified by these rows: kept, eff alone fitted)"), eff, layer_us)
    implied = [r["tokens_per_s"] * token_reads(r)[0] / (r["ram_gbs"] * 1e9) for r in tuning]
    out.append("  implied share of RAM bandwidth (weights only, no per-layer time): "
               + ", ".join(f"{x:.2f}" for x in implied))
    if held_out:
        if not held:
            out.append("held-out rows: none (the round found no third source); nothing scored")
        else:
            out += table(held, "HELD OUT, today's constants", S.CPU.decode_eff, S.CPU.layer_us)
            out += table(held, "HELD OUT, fitted constants", eff, layer_us)
    return out


if __name__ == "__main__":
    print("\n".join(report("--held-out" in sys.argv[1:])))
