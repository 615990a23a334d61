#!/usr/bin/env python3
"""Compute buffers: ggml-alloc simulation (runtimes/ggml_graph.py) vs the fitted formula vs llama.cpp's logs.

For every created context in measurements/llamacpp/data/{cpu,cuda}.jsonl whose architecture the simulation
models, prints per architecture, offload (-ngl: 0, half, all) and buffer (CPU compute; CUDA0 compute and
CUDA_Host compute on the CUDA build): n, median / max |error| %, the share within 5 % and the share equal to
the printed value (%.2f MiB), for the simulation and for LlamaCpp.buffers' fitted formula; then how many CUDA
records the simulated scheduler splits the pp and tg graphs into as many splits as llama.cpp logged.

  python benchmarks/compute_sim.py [--backend cpu|cuda|all] [--model NAME] [--worst N]
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict

from runlocal.evidence import llamacpp_runs as A
from runlocal.runtimes import ggml_graph as G
from runlocal.runtimes.llamacpp import LlamaCpp, context_sizes, swa_cells

MiB = 1 << 20


def is_context(rec: dict) -> bool:
    return rec.get("stage") not in ("skipped", "model_load") and bool(rec.get("ok"))


def _inputs(rec: dict, spec):
    """The record's settings as the simulation takes them: (context sizes, flash attention, n_kv, n_kv_swa)."""
    n_seq = rec["n_seq_max"]
    c = context_sizes(rec["n_ctx_requested"] // n_seq, n_seq, rec["n_batch"], rec["n_ubatch"], bool(rec.get("kv_unified")))
    fa = rec.get("flash_attn_effective", rec["flash_attn"] != "off")
    if isinstance(fa, str):
        fa = fa in ("on", "enabled", "true", "1")
    n_kv = c.n_ctx_seq if c.n_stream > 1 else c.n_ctx
    windows = [a.window for a in spec.attention_layers if a.kind == "sliding" and a.window]
    n_kv_swa = swa_cells(c, windows[0], bool(rec.get("swa_full"))) if windows else None
    return c, bool(fa), n_kv, n_kv_swa


def simulated(rec: dict, spec) -> dict[str, float] | None:
    """Simulated compute buffers in MiB, keyed like the record's `buffers`; None where not modelled."""
    if not G.supported(spec):
        return None
    n_seq = rec["n_seq_max"]
    c, fa, n_kv, n_kv_swa = _inputs(rec, spec)
    kw = dict(n_seqs=n_seq, n_stream=c.n_stream, type_k=rec["type_k"], type_v=rec["type_v"], n_kv_swa=n_kv_swa)
    if rec["backend"] == "cpu":
        return {"CPU compute": G.simulate_compute(spec, c.n_ubatch, n_kv, fa, **kw) / MiB}
    splits: list[int] = []
    out = G.simulate_compute_cuda(spec, c.n_ubatch, n_kv, fa, n_gpu_layers=rec.get("n_gpu_layers", 0),
                                  n_splits=splits, **kw)
    res = {k: v / MiB for k, v in out.items()}
    res["splits"] = splits      # type: ignore[assignment]
    return res


def through_shapes(rec: dict, spec, sim: dict) -> bool:
    """The record's CUDA buffers asked again through runtimes/ggml/affine.py (graphs built once per shape with n_kv
    as a symbol, walks per context or none inside a piece), as the planner asks: the same bytes as ``sim``?"""
    from runlocal.runtimes.llamacpp_compute import simulate_now

    c, fa, n_kv, n_kv_swa = _inputs(rec, spec)
    gpu, host = simulate_now(spec, rec.get("n_gpu_layers", 0), c.n_ubatch, n_kv, fa, rec["n_seq_max"], c.n_stream,
                             rec["type_k"], rec["type_v"], n_kv_swa)
    return abs(gpu[0] / MiB - sim["CUDA0 compute"]) + abs(host / MiB - sim["CUDA_Host compute"]) == 0


def logged_splits(rec: dict) -> list[int] | None:
    """The pp / tg split counts of sched_reserve's "graph: nodes = …, splits = …" line."""
    for line in rec.get("raw_log", []):
        m = re.search(r"splits = (\d+)(?: / (\d+))?", line)
        if m and "graph" in line:
            pp = int(m.group(1))
            return [pp, int(m.group(2)) if m.group(2) else pp]
    return None


def formula(rec: dict, spec) -> dict[str, float]:
    from runlocal.plan import estimate

    # the records are llama-cpp-python's: the C API, every ubatch token an output (no llama-server cap)
    _, bufs, _, _ = LlamaCpp(simulate_graph=False, output_cap=False).buffers(spec, estimate(spec, None),
                                                                             A.settings_of(rec), A.targets_of(rec))
    out = {}
    for b in bufs:
        if b.kind == "cpu":
            out["CUDA_Host compute" if rec["backend"] == "cuda" else "CPU compute"] = b.compute / MiB
        else:
            out["CUDA0 compute"] = b.compute / MiB
    return out


def summary(errs: list[tuple[float, float]]) -> str:
    """errs: (predicted, logged) MiB pairs."""
    pct = [abs(p - w) / w * 100 if w else 0.0 for p, w in errs]
    exact = sum(f"{p:.2f}" == f"{w:.2f}" for p, w in errs) / len(errs) * 100
    w5 = sum(x <= 5 for x in pct) / len(pct) * 100
    return f"{statistics.median(pct):7.2f} {max(pct):8.2f} {w5:5.0f}% {exact:5.0f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="all", choices=("cpu", "cuda", "all"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--worst", type=int, default=0, help="print the N worst simulated records")
    ap.add_argument("--context-shapes", action="store_true",
                    help="also ask each CUDA record through the context shapes (runtimes/ggml/affine.py), as the "
                         "planner does, and count those that come out byte for byte as the plain simulation")
    a = ap.parse_args(argv)
    files = {"cpu": [A.DATA / "cpu.jsonl"], "cuda": [A.DATA / "cuda.jsonl"]}
    paths = files["cpu"] + files["cuda"] if a.backend == "all" else files[a.backend]
    recs = [r for r in A.load_records(paths) if is_context(r) and (a.model is None or r["model"] == a.model)]
    specs = A.model_specs({(r["model"], r["weight_type"]) for r in recs}, False)
    sim_errs: dict[tuple, list] = defaultdict(list)
    fit_errs: dict[tuple, list] = defaultdict(list)
    worst = []
    split_miss = []
    shaped = [0, 0]
    for rec in recs:
        spec = specs[(rec["model"], rec["weight_type"])]
        sim = simulated(rec, spec)
        if sim is None:
            continue
        if a.context_shapes and rec["backend"] == "cuda":
            shaped[0] += through_shapes(rec, spec, sim)
            shaped[1] += 1
        fit = formula(rec, spec)
        offload = rec.get("n_gpu_layers_setting", "0")
        if "splits" in sim:
            want = logged_splits(rec)
            if want is not None and want != sim["splits"]:
                split_miss.append((rec["key"], sim["splits"], want))
        for buf, mib in rec["buffers"].items():
            if not buf.endswith("compute") or buf not in sim:
                continue
            key = (spec.family, rec["backend"], offload, buf)
            sim_errs[key].append((sim[buf], mib))
            fit_errs[key].append((fit.get(buf, 0.0), mib))
            worst.append((abs(sim[buf] - mib) / mib * 100 if mib else 0, sim[buf], mib, rec["key"], buf))
    print(f"{'arch':<14} {'backend':<7} {'ngl':<5} {'buffer':<18} {'n':>4} | {'simulation: med %':>17} {'max %':>8} {'≤5%':>6} "
          f"{'exact':>6} | {'fitted: med %':>13} {'max %':>8} {'≤5%':>6} {'exact':>6}")
    for key in sorted(sim_errs):
        arch, backend, offload, buf = key
        print(f"{arch:<14} {backend:<7} {offload:<5} {buf:<18} {len(sim_errs[key]):>4} | {summary(sim_errs[key]):>39} | "
              f"{summary(fit_errs[key]):>35}")
    n_cuda = sum(1 for r in recs if r["backend"] == "cuda" and G.supported(specs[(r["model"], r["weight_type"])]))
    print(f"scheduler splits (pp / tg) as logged: {n_cuda - len(split_miss)} of {n_cuda} CUDA records")
    for key, got, want in split_miss[:a.worst or 5]:
        print(f"  splits sim {got} logged {want}  {key}")
    if a.context_shapes:
        from runlocal.runtimes.ggml.affine import SHAPES

        print(f"through the context shapes: {shaped[0]} of {shaped[1]} CUDA records byte for byte as the plain "
              f"simulation ({SHAPES.made} shapes built, {SHAPES.stats.symbolic} symbolic walks, {SHAPES.stats.from_pieces} "
              "walks answered by a piece)")
    if a.worst:
        for pct, p, w, key, buf in sorted(worst, reverse=True)[:a.worst]:
            print(f"{pct:7.2f}% sim {p:9.2f} logged {w:9.2f}  {buf:<18} {key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
