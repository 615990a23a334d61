"""How close the vLLM planner comes to public vLLM start-up logs.

    .venv/bin/python benchmarks/accuracy_vllm.py

Reads measurements/public_logs/vllm.jsonl (real logs posted in public issues, see the README there).
For each record whose model is in the catalog, plans it with the record's settings on a GPU whose
capacity is the total memory vLLM reported (or, where the excerpt lacks it, the card's usual total;
the record's "planner" field says which), with the record's engine generation (V0 sizes its profile
run by max_model_len; V1 by max_num_batched_tokens), and prints predicted against logged:

* KV tokens ("GPU KV cache size", or # GPU blocks × 16, or "stored in KV cache (N)"),
* max concurrency ("Maximum concurrency for L tokens per request"),
* the budget split where logged (weights, activation peak, non-torch, KV memory),
* and, where the log gives the KV memory itself ("Available KV cache memory"), the KV-tokens
  conversion alone, from that memory;
* and, where the log gives both the token count and the concurrency, the concurrency that the record's
  engine derives from that many blocks (the pool's per-request arithmetic alone: sliding-window layers
  sized like full ones before the hybrid KV-cache manager, per-group block tables after it).

Figures a record says were logged by another rank than rank 0 (planner.logged_rank "worker": a V0
tensor-parallel worker that is not the driver) are compared with that rank's prediction.

Records whose model is not in the catalog are listed as skipped (the catalog is not edited here), unless the
record's planner.kv_layout gives the model's published attention / Gated DeltaNet layout: then the concurrency
from the logged token count is scored from it (no memory figures).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.runtimes.base import PARALLEL_AUTO, Settings, Target
from runlocal.runtimes.context_limit import vllm_planned_max_model_len
from runlocal.runtimes.options import VLLMOptions
from runlocal.runtimes.versions import VLLM_ENGINES, RuntimeVersion, parse_version, vllm_engine  # noqa: E402
from runlocal.runtimes.vllm import (
    CONCURRENCY_REPORT_ENGINES,
    SERVE_LIMITS_LARGE,
    SERVE_LIMITS_SMALL,
    UNIFIED_KV_ENGINES,
    VLLM,
    GiB,
    KVGroup,
    KVPool,
    budget_split,
    kv_groups,
    kv_pool,
    mamba_cache_mode,
    serve_limits,
)
from runlocal.runtimes.vllm_kvpool import gated_deltanet_state_bytes

from . import MEASUREMENTS
from . import REPO as ROOT
from .public_logs import load_jsonl

DATA = MEASUREMENTS / "public_logs" / "vllm.jsonl"
# `LLM(...)` (the offline class) defaults to twice the batched tokens of `vllm serve` in V1
LLM_CLASS_TOKENS = {SERVE_LIMITS_LARGE: 16384, SERVE_LIMITS_SMALL: 8192}


REQUIRED = ("source_url", "vllm_version", "gpu", "gpu_count", "model", "settings", "logged", "excerpt")


def load(path: Path = DATA) -> list[dict]:
    return load_jsonl(path, REQUIRED)



def logged_tokens(rec: dict) -> int | None:
    lg = rec["logged"]
    if "kv_cache_tokens" in lg:
        return lg["kv_cache_tokens"]
    if "num_gpu_blocks" in lg:
        return lg["num_gpu_blocks"] * lg.get("block_size", 16)
    return None


def settings_of(rec: dict, capacity: int, gpu_name: str) -> Settings:
    st, p = rec["settings"], rec.get("planner", {})
    kv = st.get("kv_cache_dtype", "auto")
    mbt = st.get("max_num_batched_tokens")
    if mbt is None and p.get("llm_class") and p.get("engine") != "v0":
        mbt = LLM_CLASS_TOKENS[serve_limits(capacity, gpu_name)]
    return Settings(runtime="vllm", ctx=st.get("max_model_len"), quant=p.get("quant"),
                    cache_type_k="f16" if kv == "auto" else kv, cache_type_v="f16" if kv == "auto" else kv,
                    parallel=st.get("max_num_seqs", PARALLEL_AUTO), tp=st.get("tensor_parallel_size", 1),
                    vllm=VLLMOptions(gpu_memory_utilization=st.get("gpu_memory_utilization", 0.9),
                                     max_num_batched_tokens=mbt, enforce_eager=bool(st.get("enforce_eager", False))))


def logged_blocks(rec: dict, pool: KVPool) -> int | None:
    """The block count behind the logged token figure, by the record's engine (the inverse of
    _report_kv_cache_config): blocks × 16 up to the hybrid manager, blocks // groups × 16 with it (the
    smallest count that prints so), int(concurrency × max_model_len) from v0.21."""
    tokens = logged_tokens(rec)
    if not tokens:
        return None
    engine = rec["planner"]["engine"]
    ctx = rec["logged"].get("max_concurrency_len") or rec["settings"].get("max_model_len")
    if engine in CONCURRENCY_REPORT_ENGINES:
        return round(tokens / ctx * pool.blocks_per_request) if ctx else None
    if engine in UNIFIED_KV_ENGINES:
        return tokens // 16
    # the smallest block of the groups: 16, or with mamba groups the enlarged attention block (a mamba group's
    # block is max_model_len without prefix caching, the attention block with it)
    smallest = min(pool.block_size, ctx) if pool.mamba_groups else 16
    return tokens // smallest * pool.groups


def layout_groups(layout: dict, tp: int, kv_cache_dtype: str) -> list[KVGroup]:
    """KV groups from a record's planner.kv_layout (the published architecture of a model the catalog lacks):
    full-attention layers and Gated DeltaNet layers, per rank as vLLM shapes them."""
    kv_bytes = 1 if kv_cache_dtype.startswith("fp8") else 2
    heads = max(1, layout["num_key_value_heads"] // tp)
    per_token = 2 * heads * layout["head_dim"] * kv_bytes
    ssm_bytes = 4 if layout.get("mamba_ssm_dtype") == "float32" else 2
    state = gated_deltanet_state_bytes(tp, layout["linear_num_key_heads"], layout["linear_num_value_heads"],
                                       layout["linear_key_head_dim"], layout["linear_value_head_dim"],
                                       layout["linear_conv_kernel_dim"], 2, ssm_bytes)
    return [KVGroup("full", layout["full_attention_layers"], per_token),
            KVGroup("mamba", layout["linear_attention_layers"], 0, None, state)]


def plan_record(rec: dict) -> dict | None:
    """Predicted figures for one record, or None when its model is not in the catalog."""
    p = rec.get("planner", {})
    if not p.get("catalog") and not p.get("kv_layout"):
        return None
    engine = p["engine"]
    tp = rec["settings"].get("tensor_parallel_size", 1)
    lg = rec["logged"]
    kv = rec["settings"].get("kv_cache_dtype", "auto")
    ct = "f16" if kv == "auto" else kv
    if p.get("catalog"):
        model = lookup(p["catalog"])
        groups = kv_groups(model, ct, ct, tp)
        mode = mamba_cache_mode(model, bool(rec["settings"].get("enable_prefix_caching")))
    else:
        # no catalog entry: the pool's shape alone, from the record's kv_layout (no memory figures)
        model = None
        groups = layout_groups(p["kv_layout"], tp, kv)
        mode = p["kv_layout"].get("mamba_cache_mode", "none")
    out: dict = {"model": model}
    ctx = rec["settings"].get("max_model_len") or (model and model.max_position_embeddings)
    if not ctx:
        raise ValueError(f"{rec['source_url']}: no max_model_len and no catalog model to take it from")
    if p.get("gpu_total_gib") and model is not None:
        capacity = int(p["gpu_total_gib"] * GiB)
        gpu = Target(rec["gpu"], "gpu", capacity)
        s = settings_of(rec, capacity, rec["gpu"])
        weights = estimate(model, s.quant)
        targets = [gpu] * max(1, tp)
        alloc = VLLM(engine=engine, enable_prefix_caching=bool(rec["settings"].get("enable_prefix_caching"))
                     ).allocate(model, weights, s, targets)
        out["alloc"] = alloc
        out["budget"] = budget_split(model, weights, s.with_(ctx=vllm_planned_max_model_len(model, s.ctx)), gpu,
                                     engine)
        mbt = out["budget"].batched_tokens
    else:
        mbt = rec["settings"].get("max_num_batched_tokens") or SERVE_LIMITS_SMALL[0]
    avail = lg.get("available_kv_cache_memory_gib", lg.get("kv_cache_memory_gib"))
    if avail is not None and avail > 0:
        pool = kv_pool(int(avail * GiB), groups, ctx, mbt, engine, mamba_cache_mode=mode)
        out["conversion"] = pool
        # the memory is rounded to 0.01 GiB in the log: the tokens it allows span this band
        out["conversion_band"] = (kv_pool(int((avail - 0.005) * GiB), groups, ctx, mbt, engine,
                                          mamba_cache_mode=mode).tokens,
                                  kv_pool(int((avail + 0.005) * GiB), groups, ctx, mbt, engine,
                                          mamba_cache_mode=mode).tokens)
    conc_len = lg.get("max_concurrency_len")
    if lg.get("max_concurrency") and conc_len and logged_tokens(rec):
        shape = kv_pool(0, groups, conc_len, mbt, engine, mamba_cache_mode=mode)
        blocks = logged_blocks(rec, shape)
        if blocks:
            out["conc_from_tokens"] = kv_pool(0, groups, conc_len, mbt, engine, num_blocks=blocks,
                                              mamba_cache_mode=mode)
    return out


def logged_rank_figures(rec: dict, b) -> tuple[float, float]:
    """(activation, KV memory) in GiB predicted for the rank whose figures the record logs."""
    if rec.get("planner", {}).get("logged_rank") == "worker":
        return b.activation_workers / GiB, b.kv_memory_workers / GiB
    return b.activation / GiB, b.kv_memory / GiB


def pct(pred: float, real: float) -> float | None:
    if real in (0, None) or pred is None:
        return None
    return 100.0 * (pred - real) / abs(real)


def _peak_above_weights(logged: dict) -> float | None:
    """torch's peak above the weights, where the log gives the peak and not the activation figure itself."""
    if "peak_torch_memory_gib" in logged:
        return logged["peak_torch_memory_gib"] - logged["weights_gib"]
    return None


def rows(records: list[dict]) -> list[dict]:
    table = []
    for i, rec in enumerate(records):
        short = rec["source_url"].replace("https://github.com/", "")
        res = plan_record(rec)
        row = {"i": i, "source": short, "model": rec["model"], "skipped": res is None,
               "engine": rec.get("planner", {}).get("engine"), "real_conc": rec["logged"].get("max_concurrency"),
               "real_tokens": logged_tokens(rec),
               "why": rec.get("planner", {}).get("note", ""),
               "scored": rec.get("planner", {}).get("end_to_end", True)}
        if res is not None:
            lg = rec["logged"]
            real_tokens = logged_tokens(rec)
            if "alloc" in res:
                a = res["alloc"]
                b = res["budget"]
                act_pred, kv_pred = logged_rank_figures(rec, b)
                row.update(pred_tokens=a.kv_cache_tokens, real_tokens=real_tokens,
                           err_tokens=pct(a.kv_cache_tokens, real_tokens) if real_tokens else None,
                           pred_conc=a.max_concurrency, real_conc=lg.get("max_concurrency"),
                           err_conc=pct(a.max_concurrency, lg.get("max_concurrency")) if lg.get("max_concurrency") else None,
                           refused_pred=a.refusal is not None, refused_real=bool(lg.get("refused")),
                           weights=(b.weights / GiB, lg.get("weights_gib")),
                           activation=(act_pred, lg.get("activation_peak_gib", _peak_above_weights(lg))),
                           non_torch=(b.non_torch / GiB, lg.get("non_torch_memory_gib")),
                           kv_gib=(kv_pred, lg.get("kv_cache_memory_gib", lg.get("available_kv_cache_memory_gib"))))
            if "conc_from_tokens" in res:
                row.update(conc_tok=res["conc_from_tokens"].max_concurrency,
                           err_conc_tok=pct(res["conc_from_tokens"].max_concurrency, lg["max_concurrency"]))
            if "conversion" in res:
                row.update(conv_tokens=res["conversion"].tokens, conv_band=res["conversion_band"],
                           err_conv=pct(res["conversion"].tokens, real_tokens) if real_tokens else None)
        table.append(row)
    return table


def stated_version(rec: dict) -> RuntimeVersion | None:
    """The release number a record's vllm_version text states ('0.19.0 (stated; …)', 'V0 engine, v0.8.3'), if any."""
    m = re.search(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)?)(?![\w.])", rec["vllm_version"])
    return parse_version("vllm", m.group(1)) if m else None


def per_version(records: list[dict], table: list[dict]) -> None:
    """The scored KV-token errors per rule set (`--runtime vllm==X` picks one), and whether each record's stated
    release selects the rules it is scored with."""
    print("\nPer vLLM version (the rules `--runtime vllm==X` selects; runtimes/versions.py):")

    def summary(errs: list[float], what: str) -> str:
        return (f"{what} {len(errs)}: median {statistics.median(errs):4.1f}%, within 5% {sum(e <= 5 for e in errs)}"
                if errs else f"{what} 0")

    for first, engine, rules in VLLM_ENGINES:
        mine = [r for r in table if r["engine"] == engine and r["scored"] and "pred_tokens" in r]
        tokens = [abs(r["err_tokens"]) for r in mine if r.get("err_tokens") is not None and r["real_tokens"]]
        memory = [abs(e) for r in mine if r["kv_gib"][1] is not None and r["kv_gib"][1] > 0
                  if (e := pct(*r["kv_gib"])) is not None]
        since = "≤ 0.6.4" if first == (0,) else ".".join(map(str, first)) + "+"
        print(f"  {engine:<14} {since:<8} |error| {summary(tokens, 'KV tokens'):<38} "
              f"{summary(memory, 'KV GiB'):<34} {rules}")
    print("Records whose logged text states a release number (the rules it selects vs the record's engine):")
    for i, rec in enumerate(records):
        version = stated_version(rec)
        if version is None:
            continue
        picked = vllm_engine(version)[0]
        scored_with = rec.get("planner", {}).get("engine")
        same = "same" if picked == scored_with else f"DIFFERS (record scored with {scored_with})"
        print(f"  {i:>2} {version.text:<8} → {picked:<14} {same}   {rec['vllm_version'][:60]}")


def _f(x, fmt="{:,.0f}"):
    return "—" if x is None else fmt.format(x)


def main() -> int:
    records = load()
    table = rows(records)
    print(f"vLLM planner vs {len(records)} public start-up logs ({DATA.relative_to(ROOT)})\n")
    print(f"{'#':>2} {'source':<34} {'KV tokens pred':>15} {'logged':>10} {'err%':>7} "
          f"{'conc pred':>9} {'logged':>7} {'err%':>7} {'KV GiB pred':>11} {'logged':>7} {'err%':>7} {'refuses p/l':>11}")
    errs_t, errs_c, errs_m = [], [], []
    for r in table:
        if r["skipped"] or "pred_tokens" not in r:
            continue
        kv_pred, kv_real = r["kv_gib"]
        err_m = pct(kv_pred, kv_real) if kv_real is not None and kv_real > 0 else None
        mark = "" if r["scored"] else "*"
        print(f"{r['i']:>2} {(mark + r['source'])[:34]:<34} {_f(r['pred_tokens']):>15} {_f(r['real_tokens']):>10} "
              f"{_f(r['err_tokens'], '{:+.1f}'):>7} {_f(r['pred_conc'], '{:.2f}'):>9} {_f(r['real_conc'], '{:.2f}'):>7} "
              f"{_f(r['err_conc'], '{:+.1f}'):>7} {kv_pred:>11.2f} {_f(kv_real, '{:.2f}'):>7} {_f(err_m, '{:+.1f}'):>7} "
              f"{('yes' if r['refused_pred'] else 'no') + '/' + ('yes' if r['refused_real'] else 'no'):>11}")
        if not r["scored"]:
            continue
        if r["err_tokens"] is not None and r["real_tokens"]:
            errs_t.append(abs(r["err_tokens"]))
        if r["err_conc"] is not None:
            errs_c.append(abs(r["err_conc"]))
        if err_m is not None:
            errs_m.append(abs(err_m))
    print("(* shown, not scored: the record's planner.exclude_reason says why)")
    if errs_t:
        print(f"\nmedian |error| KV tokens: {statistics.median(errs_t):.1f}% over {len(errs_t)} records; "
              f"within 5%: {sum(e <= 5 for e in errs_t)}/{len(errs_t)}")
    if errs_c:
        print(f"median |error| max concurrency: {statistics.median(errs_c):.1f}% over {len(errs_c)} records; "
              f"within 5%: {sum(e <= 5 for e in errs_c)}/{len(errs_c)}")
    if errs_m:
        print(f"median |error| KV memory (GiB, the logged rank): {statistics.median(errs_m):.1f}% over {len(errs_m)} records; "
              f"within 5%: {sum(e <= 5 for e in errs_m)}/{len(errs_m)}")

    print("\nKV-tokens conversion from the logged KV memory alone (GiB rounded to 0.01 in the log; with TP the "
          "pool follows the smallest rank, so a larger rank's memory converts to more):")
    for r in table:
        if "conv_tokens" in r:
            lo, hi = r["conv_band"]
            print(f"{r['i']:>2} {r['source'][:34]:<34} {_f(r['conv_tokens']):>10} in [{lo:,}, {hi:,}]  logged "
                  f"{_f(r.get('real_tokens') if r.get('real_tokens') else None):>10}  {_f(r['err_conv'], '{:+.2f}%')}")

    print("\nConcurrency from the logged token count (the engine's per-request blocks; no memory needed):")
    errs_ct = []
    for r in table:
        if "conc_tok" in r:
            errs_ct.append(abs(r["err_conc_tok"]))
            print(f"{r['i']:>2} {r['source'][:34]:<34} {r['conc_tok']:>8.2f}x  logged {r['real_conc']:.2f}x  "
                  f"{r['err_conc_tok']:+.2f}%  ({r['engine']})")
    if errs_ct:
        print(f"median |error| concurrency from logged tokens: {statistics.median(errs_ct):.1f}% over {len(errs_ct)} "
              f"records; within 5%: {sum(e <= 5 for e in errs_ct)}/{len(errs_ct)}")

    print("\nBudget split, GiB predicted / logged (rank 0, or the rank the record logs):")
    for r in table:
        if "weights" not in r:
            continue
        parts = []
        for k in ("weights", "activation", "non_torch", "kv_gib"):
            pr, lg = r[k]
            parts.append(f"{k} {pr:.2f}/{_f(lg, '{:.2f}')}")
        print(f"{r['i']:>2} {r['source'][:34]:<34} " + "  ".join(parts))

    per_version(records, table)

    skipped = [r for r in table if r["skipped"]]
    if skipped:
        print("\nSkipped (model not in the catalog):")
        for r in skipped:
            print(f"{r['i']:>2} {r['source'][:34]:<34} {r['model'][:60]}  {r['why']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
