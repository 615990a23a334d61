"""How close the SGLang planner comes to public SGLang start-up logs.

    .venv/bin/python benchmarks/accuracy_sglang.py

Reads measurements/public_logs/sglang.jsonl (real logs posted in public threads, see the README there).
SGLang prints "GB" that are GiB (bytes / 2**30: get_available_gpu_memory and the KV-cache line), so
every *_gib figure is compared as GiB. For each record whose model is in the catalog it prints:

* end to end: the record's settings (mem_fraction_static as logged, or as the record's SGLang version
  defaulted it: planner.mem_fraction_static) on a GPU of the record's assumed total (SGLang prints no
  total; planner.gpu_total_source says what was assumed) → predicted max_total_num_tokens, weights per
  GPU and KV GiB against the logged ones;
* from the logged pre-load free memory ("Load weight begin. avail mem", or "Load weight end" avail +
  mem usage): the same plan with the planner's CUDA-context deduction replaced by what SGLang measured,
  which isolates the weights estimate and the budget rule;
* the budget rule alone, from the logged figures only: (post-load free − pre-load free × (1 − fraction))
  // bytes per token, with the band the 0.01-GiB rounding of the log allows;
* the KV conversion: tokens × the planner's bytes per token against the logged K + V size;
* the defaulted mem_fraction_static where a record reports one.

Records whose model is not in the catalog, or that the record excludes (planner.exclude_reason), are
listed with the reason; their figures are shown but not scored.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.runtimes import get_runtime
from runlocal.runtimes.base import PARALLEL_AUTO, Settings, Target
from runlocal.runtimes.options import SGLangOptions
from runlocal.runtimes.sglang import CUDA_CONTEXT, GiB, MiB, SGLang, default_mem_fraction_static  # noqa: F401

from . import MEASUREMENTS
from . import REPO as ROOT
from .public_logs import load_jsonl

DATA = MEASUREMENTS / "public_logs" / "sglang.jsonl"
REQUIRED = ("source_url", "sglang_version", "gpu", "gpu_count", "model", "settings", "logged", "excerpt", "planner")
ROUNDING = 0.005            # SGLang prints GiB with two decimals


def load(path: Path = DATA) -> list[dict]:
    return load_jsonl(path, REQUIRED)



def logged_tokens(rec: dict) -> int | None:
    """max_total_num_tokens: the scheduler line, else the KV line's #tokens."""
    lg = rec["logged"]
    return lg.get("max_total_num_tokens", lg.get("kv_tokens"))


def logged_kv_gib(rec: dict) -> float | None:
    lg = rec["logged"]
    if "k_size_gib" in lg:
        return lg["k_size_gib"] + lg["v_size_gib"]
    return lg.get("kv_size_gib")


def pre_load_gib(rec: dict) -> float | None:
    """Free memory before the weights (SGLang's pre_model_load_memory), as logged or as avail + mem usage."""
    lg = rec["logged"]
    if "pre_load_avail_gib" in lg:
        return lg["pre_load_avail_gib"]
    if "post_load_avail_gib" in lg and "weights_gib" in lg:
        return round(lg["post_load_avail_gib"] + lg["weights_gib"], 2)
    return None


def logged_weights_gib(rec: dict) -> float | None:
    lg = rec["logged"]
    if "weights_gib" in lg:
        return lg["weights_gib"]
    if "pre_load_avail_gib" in lg and "post_load_avail_gib" in lg:
        return round(lg["pre_load_avail_gib"] - lg["post_load_avail_gib"], 2)
    return None


def fraction(rec: dict) -> float | None:
    """mem_fraction_static the run used: logged, else the record's reading of its version's default."""
    st, p = rec["settings"], rec["planner"]
    return st.get("mem_fraction_static") or p.get("mem_fraction_static")


def settings_of(rec: dict, frac: float | None) -> Settings:
    st, p = rec["settings"], rec["planner"]
    kv = st.get("kv_cache_dtype") or "auto"
    kv = "f16" if kv.startswith("auto") else kv
    return Settings(runtime="sglang", ctx=st.get("context_length"), quant=p.get("quant"), cache_type_k=kv,
                    cache_type_v=kv, tp=st.get("tp_size") or 1, parallel=st.get("max_running_requests") or PARALLEL_AUTO,
                    sglang=SGLangOptions(mem_fraction_static=frac, chunked_prefill_size=st.get("chunked_prefill_size")))


def _plan(model, weights, s: Settings, capacity: int, total: int | None, name: str):
    gpu = Target(name, "gpu", capacity, None, total)
    runtime = get_runtime("sglang")
    assert isinstance(runtime, SGLang)
    return runtime.allocate(model, weights, s, [gpu] * max(1, s.tp))


def budget_tokens(pre: float, post: float, frac: float, cell: int) -> int:
    """kv_cache_configurator.py _profile_available_bytes, from logged GiB: (post − pre × (1 − f)) // cell."""
    return int(max(0.0, post - pre * (1 - frac)) * GiB // cell)


def plan_record(rec: dict) -> dict | None:
    p = rec["planner"]
    if not p.get("catalog"):
        return None
    model = lookup(p["catalog"])
    frac = fraction(rec)
    s = settings_of(rec, frac)
    weights = estimate(model, s.quant)
    out: dict = {"model": model, "weights": weights, "settings": s}
    # bytes per token need no GPU: plan once on a nominal one
    probe = _plan(model, weights, s.with_(mem_fraction_static=frac or 0.9), 80 * GiB, 80 * GiB, rec["gpu"])
    out["cell"] = probe.kv_bytes_per_token
    total_mib = p.get("gpu_total_mib_nvsmi")
    if p.get("gpu_total_gib") and frac is not None:
        cap = int(p["gpu_total_gib"] * GiB)
        out["alloc"] = _plan(model, weights, s, cap, int(total_mib * MiB) if total_mib else None, rec["gpu"])
    if p.get("gpu_total_gib"):
        # the default fraction the planner would pick on that card (arg_groups/memory_hook.py rule)
        cap = int(p["gpu_total_gib"] * GiB)
        d = _plan(model, weights, s.with_(mem_fraction_static=None), cap, int(total_mib * MiB) if total_mib else None,
                  rec["gpu"])
        out["default_fraction"] = d.settings.sglang.mem_fraction_static
    pre = pre_load_gib(rec)
    if pre is not None and frac is not None:
        cap = int(pre * GiB) + CUDA_CONTEXT
        out["alloc_pre"] = _plan(model, weights, s, cap, int(total_mib * MiB) if total_mib else cap, rec["gpu"])
    post = rec["logged"].get("post_load_avail_gib")
    if pre is not None and post is not None and frac is not None:
        c = out["cell"]
        out["budget"] = budget_tokens(pre, post, frac, c)
        lo = budget_tokens(pre + ROUNDING, post - ROUNDING, frac, c)
        hi = budget_tokens(pre - ROUNDING, post + ROUNDING, frac, c)
        out["budget_band"] = (lo, hi)
        out["budget_gib"] = post - pre * (1 - frac)
    return out


def pct(pred, real) -> float | None:
    if pred is None or real in (None, 0):
        return None
    return 100.0 * (pred - real) / abs(real)


def _f(x, fmt="{:,.0f}"):
    return "—" if x is None else fmt.format(x)


def rows(records: list[dict]) -> list[dict]:
    table = []
    for i, rec in enumerate(records):
        p = rec["planner"]
        row = {"i": i, "source": rec["source_url"].replace("https://github.com/", "").replace("https://", ""),
               "rec": rec, "scored": p.get("end_to_end", True) and not p.get("exclude_reason"),
               "why": p.get("exclude_reason", ""), "res": plan_record(rec)}
        real_t = logged_tokens(rec) or p.get("derived_max_total_num_tokens")
        row["real_tokens"] = real_t
        res = row["res"]
        if res is not None:
            if "alloc" in res:
                a = res["alloc"]
                w_pred = a.devices[0].weights / GiB
                row.update(pred_tokens=a.kv_cache_tokens, err_tokens=pct(a.kv_cache_tokens, real_t),
                           w_pred=w_pred, kv_pred=a.devices[0].kv_cache / GiB, refused_pred=a.refusal is not None)
            if "alloc_pre" in res:
                a = res["alloc_pre"]
                row.update(pre_tokens=a.kv_cache_tokens, err_pre=pct(a.kv_cache_tokens, real_t))
            if "budget" in res:
                row.update(budget_tokens=res["budget"], budget_band=res["budget_band"],
                           err_budget=pct(res["budget"], real_t))
            kv = logged_kv_gib(rec)
            if kv and real_t:
                row.update(conv_pred=real_t * res["cell"] / GiB, conv_real=kv)
        table.append(row)
    return table


def _print_end_to_end(records: list[dict], table: list[dict]) -> None:
    """The planner end to end, from the record's GPU total: tokens, weights and KV per record."""
    print(f"SGLang planner vs {len(records)} public start-up logs ({DATA.relative_to(ROOT)})")
    print("GB in SGLang's log = GiB. frac: mem_fraction_static used (L logged, I inferred for the record's version)\n")
    print(f"{'#':>2} {'source':<40} {'frac':>7} {'tokens pred':>12} {'logged':>10} {'err%':>7} "
          f"{'weights GiB p/l':>16} {'err%':>6} {'KV GiB p/l':>14} {'err%':>6}")
    errs_t, errs_w, errs_kv = [], [], []
    for r in table:
        rec, res = r["rec"], r["res"]
        if res is None or "pred_tokens" not in r:
            continue
        frac = fraction(rec)
        src = "L" if rec["settings"].get("mem_fraction_static") else "I"
        wl = logged_weights_gib(rec)
        kvl = logged_kv_gib(rec)
        err_w, err_kv = pct(r["w_pred"], wl), pct(r["kv_pred"], kvl)
        mark = "" if r["scored"] else "*"
        print(f"{r['i']:>2} {(mark + r['source'])[:40]:<40} {frac:>6}{src} {_f(r['pred_tokens']):>12} "
              f"{_f(r['real_tokens']):>10} {_f(r['err_tokens'], '{:+.1f}'):>7} "
              f"{r['w_pred']:>7.2f}/{_f(wl, '{:.2f}'):>7} {_f(err_w, '{:+.1f}'):>7} "
              f"{r['kv_pred']:>6.2f}/{_f(kvl, '{:.2f}'):>6} {_f(err_kv, '{:+.1f}'):>7}")
        if not r["scored"]:
            continue
        if r["err_tokens"] is not None:
            errs_t.append(abs(r["err_tokens"]))
        if err_w is not None:
            errs_w.append(abs(err_w))
        if err_kv is not None:
            errs_kv.append(abs(err_kv))
    print("(* shown, not scored: see the exclusions below)")
    for name, errs in (("max_total_num_tokens", errs_t), ("weights per GPU", errs_w), ("KV GiB", errs_kv)):
        if errs:
            print(f"median |error| {name} (end to end, assumed GPU total): {statistics.median(errs):.1f}% over "
                  f"{len(errs)} records; within 5%: {sum(e <= 5 for e in errs)}/{len(errs)}")


def _print_pre_load(table: list[dict]) -> None:
    """The pool from the logged pre-load free memory."""
    print("\nFrom the logged pre-load free memory (SGLang's own CUDA-context and NCCL overhead instead of the "
          f"planner's {CUDA_CONTEXT // MiB} MiB):")
    errs_pre = []
    for r in table:
        if "pre_tokens" in r:
            print(f"{r['i']:>2} {r['source'][:40]:<40} pre-load {pre_load_gib(r['rec']):>7.2f} GiB  tokens "
                  f"{_f(r['pre_tokens']):>10} vs {_f(r['real_tokens']):>10}  {_f(r['err_pre'], '{:+.2f}%')}")
            if r["err_pre"] is not None:
                errs_pre.append(abs(r["err_pre"]))
    if errs_pre:
        print(f"median |error|: {statistics.median(errs_pre):.2f}% over {len(errs_pre)} records; "
              f"within 5%: {sum(e <= 5 for e in errs_pre)}/{len(errs_pre)}")


def _print_budget_rule(table: list[dict]) -> None:
    """The budget rule alone, from the logged free memory before and after the weights."""
    print("\nBudget rule alone, from the logged free memory before/after the weights and the fraction "
          "((post − pre × (1 − f)) // bytes per token; band = ±0.005 GiB rounding):")
    for r in table:
        if "budget_tokens" in r:
            lo, hi = r["budget_band"]
            real = r["real_tokens"]
            inside = real is not None and lo <= real <= hi
            extra = ""
            if r["rec"]["logged"].get("initial_available_gib") is not None:
                extra = (f"  budget {r['res']['budget_gib']:.2f} GiB vs logged initial available "
                         f"{r['rec']['logged']['initial_available_gib']:.2f} GiB")
            print(f"{r['i']:>2} {r['source'][:40]:<40} {_f(r['budget_tokens']):>10} in [{lo:,}, {hi:,}]  logged "
                  f"{_f(real):>10}  {'inside' if inside else _f(r['err_budget'], '{:+.2f}%')}{extra}")


def _print_kv_conversion(table: list[dict]) -> None:
    """Logged tokens × the planner's bytes per token against the logged K + V."""
    print("\nKV conversion: logged tokens × planner bytes/token vs logged K + V (GiB):")
    for r in table:
        if "conv_pred" in r:
            print(f"{r['i']:>2} {r['source'][:40]:<40} {r['res']['cell']:>8,} B/token  {r['conv_pred']:>8.2f} vs "
                  f"{r['conv_real']:>8.2f}  {_f(pct(r['conv_pred'], r['conv_real']), '{:+.2f}%')}")


def _print_default_fractions(table: list[dict]) -> None:
    """The defaulted mem_fraction_static by the planner's rule."""
    print("\nDefaulted mem_fraction_static (planner's arg_groups/memory_hook.py rule on the record's GPU):")
    for r in table:
        res = r["res"]
        if res is not None and "default_fraction" in res:
            lg = r["rec"]["logged"].get("mem_fraction_static") if r["rec"]["planner"].get("default_fraction_case") else None
            tp = r["rec"]["settings"].get("tp_size") or 1
            print(f"{r['i']:>2} {r['source'][:40]:<40} TP {tp}: {res['default_fraction']}"
                  + (f"  logged default {lg}" if lg is not None else "  (this run's version used "
                     f"{fraction(r['rec'])}: a different default rule)"))
    m = lookup("qwen3-32b")
    print("   qwen3-32b on an H100 by TP: " + ", ".join(
        f"TP {tp} {default_mem_fraction_static(81559, 8192, 256 if tp < 4 else 512, tp, 1, False)}"
        for tp in (1, 2, 4)) + f"  (#29092 reports 0.828; {m.repo_id})")


def _print_unscored(table: list[dict]) -> None:
    """The records shown but not scored, and why."""
    print("\nNot scored:")
    for r in table:
        if not r["scored"]:
            print(f"{r['i']:>2} {r['source'][:40]:<40} {r['rec']['model'][:40]}: {r['why']}")


def main() -> int:
    records = load()
    table = rows(records)
    _print_end_to_end(records, table)
    _print_pre_load(table)
    _print_budget_rule(table)
    _print_kv_conversion(table)
    _print_default_fractions(table)
    _print_unscored(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
