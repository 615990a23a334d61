"""runlocal's llama.cpp planner against real llama.cpp runs (measurements/llamacpp/data/*.jsonl).

Every record is one llama.cpp context created by measurements/llamacpp/measure.py over a
zero-weight GGUF written by runlocal.evidence.zero_gguf, with the buffer sizes
llama.cpp logged (MiB, two decimals). For each record the planner is run under the record's
settings and its buffers are compared per architecture and component:

  KV       the attention layers' K/V buffers ("KV", "KV (SWA)", "KV (non-SWA)")
  RS       the recurrent state ("RS")
  compute  the compute buffers ("compute")
  output   the logits buffer ("output")
  model    the weights ("CPU_Mapped" / "CPU" / "CUDA0 model"). CPU runs that repack weights
           (use_extra_bufts) log a CPU_REPACK buffer and a CPU_Mapped range that overlap; their
           model row is left out (the file's tensor bytes are what runlocal counts); so is the host's
           model row of a partial GPU offload, whose CPU_Mapped range (token_embd … last CPU layer)
           spans tensors that live on the GPU (output.weight follows token_embd in these files)
  total    their sum, per device

Devices: CPU runs have one ("CPU"); CUDA runs a GPU ("CUDA0") and the host ("CPU" +
"CUDA_Host", pinned host memory). Records llama.cpp refused (ok=false at context creation)
must be predicted as refusals; records measure.py skipped (not attempted) are left out.

The model is read back from the same GGUF header llama.cpp loaded (runlocal.evidence.zero_gguf rebuilds
it, sparse, in a temporary folder; runlocal.model.gguf.read_gguf reads it), so the planner sees
exactly the tensors, types and hyper-parameters llama.cpp saw. --catalog uses the embedded
catalog's config.json instead (weights then follow from the catalog, not the file).

After the summary it prints the public logs (measurements/public_logs: llama.cpp and Ollama, every record
scored or shown with the reason it is not) and one summary per engine and component, vLLM's and
transformers' from benchmarks/accuracy_vllm.py and accuracy_transformers.py (runlocal.evidence.public_scores;
--no-public leaves these out).

  python benchmarks/accuracy.py [--data cpu.jsonl ...] [--catalog] [--records] [--no-public]
  (the same as python -m runlocal.evidence.llamacpp_runs)
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from runlocal.units import MiB

from . import MEASUREMENTS
from . import REPO as ROOT

DATA = MEASUREMENTS / "llamacpp" / "data"
CATALOG_ALIAS = {"phi-3-mini-4k": "phi-3-mini"}
COMPONENTS = ("KV", "RS", "compute", "output", "model", "total")


def load_records(paths: list[Path]) -> list[dict]:
    out = []
    for p in paths:
        if p.exists():
            out += [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    return out


def shrunk_catalog(rec: dict) -> bool:
    """A record of a shrunk catalog model (measurements/llamacpp_h200/arch_ggufs.py: catalog_gguf.write_gguf's F16
    file), not one of zero_gguf's full-size models."""
    return str(rec.get("model_repo", "")).startswith("catalog:")


def model_specs(names: set[tuple[str, str]], catalog: bool) -> dict:
    """(model, weight type) in the records → ModelSpec (from the rebuilt GGUF header, or the catalog). A model that
    is not one of zero_gguf's is a shrunk catalog model: its spec is the shrunk config's (catalog_gguf.shrunk_spec,
    the catalog / config.json path a user's plan takes, as test_llamacpp_catalog_real.py checks it)."""
    from .zero_gguf import MODELS

    shrunk = {(n, w) for n, w in names if n not in MODELS}
    if shrunk:
        from .catalog_gguf import shrunk_spec

        return {**{k: shrunk_spec(k[0])[0] for k in shrunk}, **model_specs(names - shrunk, catalog)}
    if catalog:
        from runlocal.model.catalog import lookup

        return {(n, w): lookup(CATALOG_ALIAS.get(n, n)) for n, w in names}
    import logging

    logging.getLogger("gguf").setLevel(logging.ERROR)    # gguf-py's note on granite's per-layer head_count_kv
    from runlocal.model.gguf import read_gguf

    from .zero_gguf import write_model

    specs = {}
    with tempfile.TemporaryDirectory() as d:
        for n, w in sorted(names):
            info = write_model(n, Path(d), w)   # sparse: the header and a hole
            specs[(n, w)] = read_gguf(info["path"])
    return specs


def settings_of(rec: dict):
    from runlocal.runtimes import Settings
    from runlocal.runtimes.options import LlamaCppOptions

    n_seq = rec["n_seq_max"]
    return Settings(ctx=rec["n_ctx_requested"] // n_seq, parallel=n_seq, cache_type_k=rec["type_k"],
                    cache_type_v=rec["type_v"], llamacpp=LlamaCppOptions(
                        batch=rec["n_batch"], ubatch=rec["n_ubatch"], flash_attn=rec["flash_attn"],
                        kv_unified=bool(rec.get("kv_unified")), swa_full=bool(rec.get("swa_full")),
                        # -1 in llama-cpp-python: all layers (no --fit there)
                        n_gpu_layers=-2 if rec.get("n_gpu_layers", 0) < 0 else rec.get("n_gpu_layers", 0)))


def targets_of(rec: dict):
    from runlocal.runtimes import Target

    host = Target("CPU", "cpu", 1 << 40)
    if rec["backend"] == "cuda":
        return [Target("CUDA0", "gpu", 80 << 30), host]
    return [host]


def logged(rec: dict) -> tuple[dict[str, dict[str, float]], dict[tuple[str, str], int]]:
    """Logged MiB per device ("gpu" / "host") and component."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    n_printed: dict[tuple[str, str], int] = defaultdict(int)
    items = list(rec.get("buffers", {}).items()) + list(rec.get("model_buffers", {}).items())
    for key, mib in items:
        dev_name, _, kind = key.partition(" ")
        if dev_name == "CPU_REPACK":
            continue
        dev = "gpu" if dev_name.startswith(("CUDA0", "ROCm0", "Metal")) and not dev_name.endswith("_Host") else "host"
        kind = kind.split(" #")[0]
        comp = "KV" if kind.startswith("KV") else kind
        if comp == "model" and dev == "host" and rec.get("use_extra_bufts") and rec["backend"] == "cpu" \
                and any(k.startswith("CPU_REPACK") for k in rec.get("model_buffers", {})):
            continue    # repacked weights: the mapped range is not the weights' footprint (see the docstring)
        if comp == "model" and dev == "host" and rec["backend"] != "cpu" and rec.get("n_gpu_layers", 0) > 0:
            continue    # partial offload: CPU_Mapped is the file range of the CPU tensors, spanning GPU ones
        out[dev][comp] += mib
        n_printed[(dev, comp)] += 1
        n_printed[(dev, "total")] += 1
    for dev in out:
        out[dev]["total"] = sum(v for k, v in out[dev].items() if k != "total")
    return out, n_printed


def predicted(bufs) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for b in bufs:
        dev = "host" if b.kind == "cpu" else "gpu"
        out[dev] = {"KV": b.kv / MiB, "RS": b.rs / MiB, "compute": b.compute / MiB, "output": b.output / MiB,
                    "model": b.model / MiB, "total": b.total / MiB}
    return out


def evaluate(records: list[dict], specs: dict) -> tuple[list[dict], dict]:
    """One row per (record, device, component) with logged and predicted MiB; refusal counts per model."""
    from runlocal.plan import estimate
    from runlocal.runtimes.llamacpp import LlamaCpp

    rt = LlamaCpp(output_cap=False)     # llama-cpp-python: the C API's n_outputs_max = n_batch
    rows: list[dict] = []
    refusals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])   # [refused, predicted, wrongly predicted]
    for rec in records:
        if rec.get("stage") in ("skipped", "model_load"):
            continue
        spec = specs[(rec["model"], rec["weight_type"])]
        s = settings_of(rec)
        targets = targets_of(rec)
        weights = estimate(spec, "F16" if shrunk_catalog(rec) else None)    # the shrunk files are F16
        alloc = rt.allocate(spec, weights, s, targets)
        r = refusals[rec["model"]]
        if not rec.get("ok"):
            r[0] += 1
            r[1] += alloc.refusal is not None
            continue
        r[2] += alloc.refusal is not None
        _, bufs, _, _ = rt.buffers(spec, weights, s, targets)
        got, (want, n_printed) = predicted(bufs), logged(rec)
        for dev, comps in want.items():
            if "model" not in comps and dev in got:     # a repacked run: totals without the weights on both sides
                got[dev]["total"] -= got[dev]["model"]
        for dev, comps in want.items():
            for comp in COMPONENTS:
                if comp not in comps:
                    continue
                if comp == "RS" and not comps[comp]:
                    continue
                rows.append({"model": rec["model"], "backend": rec["backend"], "device": dev, "component": comp,
                             "logged": comps[comp], "predicted": got.get(dev, {}).get(comp, 0.0), "key": rec["key"],
                             "printed": n_printed[(dev, comp)]})
    return rows, refusals


def exact_to_print(r: dict) -> bool:
    """Equal to what llama.cpp printed (%.2f MiB); a sum of n printed values is exact within n × 0.005 MiB."""
    n = r.get("printed", 1)
    if n <= 1:
        return f"{r['predicted']:.2f}" == f"{r['logged']:.2f}"
    return abs(r["predicted"] - r["logged"]) <= 0.005 * n + 1e-9


def stats(rows: list[dict]) -> dict:
    abs_mib = [abs(r["predicted"] - r["logged"]) for r in rows]
    pct = [abs(r["predicted"] - r["logged"]) / r["logged"] * 100 if r["logged"] else 0.0 for r in rows]
    exact = [exact_to_print(r) for r in rows]
    return {"n": len(rows), "med_pct": statistics.median(pct), "max_pct": max(pct), "med_mib": statistics.median(abs_mib),
            "max_mib": max(abs_mib), "exact": sum(exact) / len(rows) * 100,
            "w5": sum(p <= 5 for p in pct) / len(rows) * 100, "w3": sum(p <= 3 for p in pct) / len(rows) * 100}


def table(rows: list[dict], by: tuple[str, ...]) -> str:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in by)].append(r)
    head = " ".join(f"{k:<18}" if k == "model" else f"{k:<9}" for k in by)
    lines = [f"{head} {'n':>4} {'med %':>7} {'max %':>7} {'med MiB':>8} {'max MiB':>8} {'exact':>6} {'≤3%':>5} {'≤5%':>5}",]
    lines.append("-" * len(lines[0]))
    order = {c: i for i, c in enumerate(COMPONENTS)}
    for key in sorted(groups, key=lambda k: tuple(order.get(x, 0) if isinstance(x, str) and x in order else x for x in k)):
        st = stats(groups[key])
        label = " ".join(f"{v:<18}" if k == "model" else f"{v:<9}" for k, v in zip(by, key))
        lines.append(f"{label} {st['n']:>4} {st['med_pct']:>7.2f} {st['max_pct']:>7.2f} {st['med_mib']:>8.2f} "
                     f"{st['max_mib']:>8.2f} {st['exact']:>5.0f}% {st['w3']:>4.0f}% {st['w5']:>4.0f}%")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="*", type=Path, default=[DATA / "cpu.jsonl", DATA / "cuda.jsonl"])
    ap.add_argument("--catalog", action="store_true", help="models from the embedded catalog, not the GGUF header")
    ap.add_argument("--detail", action="store_true", help="per architecture, device and component")
    ap.add_argument("--worst", type=int, default=0, help="print the N worst records per component")
    ap.add_argument("--no-public", action="store_true",
                    help="leave out the public-log sections and the all-engines summary (runlocal.evidence.public_scores)")
    a = ap.parse_args(argv)

    records = load_records(a.data)
    specs = model_specs({(r["model"], r["weight_type"]) for r in records}, a.catalog)
    rows, refusals = evaluate(records, specs)
    src = ("the embedded catalog (config.json)" if a.catalog
           else "the GGUF header llama.cpp loaded (make_zero_gguf.py → read_gguf)")
    files = ", ".join(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p) for p in a.data if p.exists())
    n_ok = len({r["key"] for r in rows})
    print(f"llama.cpp planner vs {n_ok} logged contexts ({files}); models from {src}")
    print("errors are |predicted − logged|; exact = equal to the printed 0.01 MiB\n")
    for backend in sorted({r["backend"] for r in rows}):
        sub = [r for r in rows if r["backend"] == backend]
        print(f"== {backend}: per component and device ==")
        print(table(sub, ("component", "device")))
        print()
        print(f"== {backend}: per architecture and component ==")
        print(table(sub, ("model", "component") if not a.detail else ("model", "device", "component")))
        print()
    print("== summary (for the README) ==")
    print(table(rows, ("backend", "device", "component")))
    print()
    refused = sum(v[0] for v in refusals.values())
    caught = sum(v[1] for v in refusals.values())
    false = sum(v[2] for v in refusals.values())
    print(f"refusals: llama.cpp refused {refused} contexts, runlocal predicted {caught} of them; "
          f"{false} contexts that started were predicted as refusals")
    if a.worst:
        for comp in COMPONENTS:
            sub = sorted((r for r in rows if r["component"] == comp),
                         key=lambda r: -abs(r["predicted"] - r["logged"]) / (r["logged"] or 1))[:a.worst]
            for r in sub:
                print(f"  {comp:8s} {r['device']:5s} {r['logged']:10.2f} {r['predicted']:10.2f}  {r['key']}")
    if not a.no_public:
        from .public_scores import report_public

        report_public(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
