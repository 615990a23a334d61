"""The Metal FA-vec KV read (hardware/metal_kv.py): its one constant fitted, its error before → after on its tuning
rows by head ratio, and its held-out round scored with and without it, judged by the pass its rule fixed first
(held_out/backends4_queries.md; backends3 found no record). Run: ``python -m runlocal.evidence.speed_fit_metalkv``.

Tuning rows: the Metal decode rows of 2025-2026 llama.cpp builds — backends_2026.jsonl's (``fit_scope:
"scored_apart"``: a refit on them failed held-out backends2) and held_out/backends2.jsonl's (scored once by
backends2's first run; tuning for this term since, their failure there known). "Before" is the plan's model (the
``apple`` entry, KV factor 6.329); "after" the same entry with the term's KV read priced at factor 1."""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import replace

from ..hardware import speed as S
from ..hardware.metal_kv import ABSORBED, metal_kv_read
from .speed_fit import Row, build_rows, fit_for, load_held_out, load_records, parse_test, predict_row, record_model

TUNING_ROUND = "backends2"      # its Metal rows, scored once, tune the term
HELD_OUT_ROUND = "backends4"    # collected for the term (held_out/backends4_queries.md), scored once
# the pass backends4_queries.md fixed before any record: fa-on decode records at depth > 0, at least this many, from
# at least this many sources; MdAPE at depth > 0 lower with the term; at depth 0 no more than this many points higher
PASS_MIN_DEPTH_ROWS, PASS_MIN_SOURCES, PASS_DEPTH0_SLACK = 8, 2, 0.5


def metal_decode(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.backend == "metal" and r.kind == "tg"]


def tuning_rows() -> list[Row]:
    return metal_decode(build_rows(load_records(scope="scored_apart")) + build_rows(load_held_out(TUNING_ROUND)))


def head_ratio(row: Row) -> str:
    """The row's model by query heads per KV head: "MLA 16:1", "GQA 4:1", "MHA 1:1"."""
    model = record_model(row.rec["model"])
    att = model.attention_layers[0]
    g = model.n_heads // att.n_kv_heads
    return f"{'MLA' if att.kind == 'mla' else 'MHA' if g == 1 else 'GQA'} {g}:1"


def predict_with_term(row: Row, consts: dict[str, S.Fit], split_ms: float, absorbed: float = ABSORBED) -> float | None:
    """The row's decode speed with the term's KV read at factor 1 and the row's entry's other constants."""
    model = record_model(row.rec["model"])
    _, n, depth = parse_test(row.rec["test"])
    fit = replace(fit_for(row, consts), kv_factor=1.0)
    own = {**consts, row.key: fit, row.base_key: fit, row.klass: fit}
    return predict_row(replace(row, kv_read=metal_kv_read(model, depth + n // 2, absorbed)), own, split_ms)


def log_loss(rows: list[Row], consts, split_ms: float, absorbed: float) -> float:
    return sum(math.log(p / r.measured) ** 2 for r in rows if (p := predict_with_term(r, consts, split_ms, absorbed)))


def fit_absorbed(rows: list[Row], consts, split_ms: float) -> float:
    """ABSORBED: the share in [0, 1], in 0.01 steps, that minimises the summed squared log error over ``rows``."""
    return min((i / 100 for i in range(101)), key=lambda a: log_loss(rows, consts, split_ms, a))


def errors(rows: list[Row], predict) -> dict[str, list[float]]:
    """Signed % errors per head ratio, all rows, and the rows at depth > 0."""
    out: dict[str, list[float]] = {}
    for r in rows:
        p = predict(r)
        if p is not None:
            e = 100.0 * (p / r.measured - 1.0)
            out.setdefault(head_ratio(r), []).append(e)
            out.setdefault("all", []).append(e)
            if parse_test(r.rec["test"])[2] > 0:     # the rows the term moves: tokens already in the cache
                out.setdefault("all, depth > 0", []).append(e)
    return out


def table(title: str, before: dict[str, list[float]], after: dict[str, list[float]]) -> list[str]:
    lines = [title, f"  {'head ratio':14} {'n':>3} {'median |error| before → after':>32} {'median error before → after':>30}"]
    for k in sorted(before, key=lambda k: (k.startswith("all"), k)):
        b, a = before[k], after.get(k, [])
        lines.append(f"  {k:14} {len(b):>3} {statistics.median(map(abs, b)):>14.1f} % → {statistics.median(map(abs, a)):5.1f} %"
                     f" {statistics.median(b):>+13.1f} % → {statistics.median(a):+6.1f} %")
    return lines


def rows_lines(rows: list[Row], consts, split_ms: float) -> list[str]:
    out = []
    for r in rows:
        b, a = predict_row(r, consts, split_ms), predict_with_term(r, consts, split_ms)
        out.append(f"    {r.rec['device']:16} {r.rec['model']:17} {r.rec['test']:13} {str(r.rec.get('build'))[:18]:18} "
                   f"{r.measured:7.1f}  apple {b or 0:7.1f} ({100 * ((b or 0) / r.measured - 1):+6.1f} %)  "
                   f"term {a or 0:7.1f} ({100 * ((a or 0) / r.measured - 1):+6.1f} %)")
    return out


def report(consts=None, split_ms: float | None = None) -> list[str]:
    consts = consts or S.FIT
    split_ms = S.SPLIT_OVERHEAD_MS if split_ms is None else split_ms
    tune = tuning_rows()
    fitted = fit_absorbed(tune, consts, split_ms)
    lines = [f"Metal FA-vec KV read (hardware/metal_kv.py): ABSORBED fitted {fitted:g} on {len(tune)} tuning rows "
             f"(in the module: {ABSORBED:g})", *rows_lines(tune, consts, split_ms)]
    lines += table("  Tuning, in-sample (before: the apple entry a plan uses; after: the term, KV factor 1):",
                   errors(tune, lambda r: predict_row(r, consts, split_ms)),
                   errors(tune, lambda r: predict_with_term(r, consts, split_ms)))
    return lines + held_out_lines(consts, split_ms)


def mdape(v: list[float]) -> float:
    return statistics.median(map(abs, v)) if v else float("nan")


def p90(v: list[float]) -> float:
    s = sorted(map(abs, v))
    return s[min(len(s) - 1, int(0.9 * len(s)))] if s else float("nan")


def fa_on(row: Row) -> bool:
    return row.rec.get("fa") == 1


def held_out_lines(consts, split_ms: float) -> list[str]:
    """The held-out round scored once: every record with and without the term, fa-on decode by depth and head ratio
    (median and p90 |error|), fa-off / not-stated decode apart, prefill with the plan's model, and the pass."""
    rows = build_rows(load_held_out(HELD_OUT_ROUND))
    if not rows:
        return [f"Held-out {HELD_OUT_ROUND}: no records (held_out/{HELD_OUT_ROUND}_queries.md); not scored, the term "
                "not applied"]
    decode = metal_decode(rows)
    lines = [f"Held-out {HELD_OUT_ROUND} ({len(rows)} records, never fitted; rule held_out/{HELD_OUT_ROUND}_queries.md):",
             *rows_lines(decode, consts, split_ms)]
    on = [r for r in decode if fa_on(r)]
    before = errors(on, lambda r: predict_row(r, consts, split_ms))
    after = errors(on, lambda r: predict_with_term(r, consts, split_ms))
    lines += table(f"  {HELD_OUT_ROUND}, fa-on decode (before: the apple entry; after: the term):", before, after)
    if "all, depth > 0" in before:
        lines.append(f"  all, depth > 0: p90 |error| {p90(before['all, depth > 0']):.1f} % → "
                     f"{p90(after['all, depth > 0']):.1f} %")
    off = [r for r in decode if not fa_on(r)]
    if off:
        lines += table(f"  {HELD_OUT_ROUND}, fa-off / not-stated decode (not part of the pass):",
                       errors(off, lambda r: predict_row(r, consts, split_ms)),
                       errors(off, lambda r: predict_with_term(r, consts, split_ms)))
    lines += prefill_lines([r for r in rows if r.backend == "metal" and r.kind == "pp"], consts, split_ms)
    return lines + pass_lines(on, consts, split_ms)


def prefill_lines(rows: list[Row], consts, split_ms: float) -> list[str]:
    """Metal prefill of the round, with the plan's model as it is (the term does not touch prefill): scored, not tuned."""
    if not rows:
        return [f"  {HELD_OUT_ROUND}, prefill: no records"]
    out = [f"  {HELD_OUT_ROUND}, Metal prefill with the plan's model (scored, not tuned):"]
    by_depth: dict[str, list[float]] = {}
    for r in rows:
        p = predict_row(r, consts, split_ms)
        if p is None:
            out.append(f"    {r.rec['device']:16} {r.rec['model']:17} {r.rec['test']:13} {r.measured:8.1f}  not predicted")
            continue
        e = 100.0 * (p / r.measured - 1.0)
        out.append(f"    {r.rec['device']:16} {r.rec['model']:17} {r.rec['test']:13} {r.measured:8.1f}  "
                   f"plan {p:8.1f} ({e:+6.1f} %)")
        by_depth.setdefault("depth 0" if parse_test(r.rec["test"])[2] == 0 else "depth > 0", []).append(e)
    for k, v in sorted(by_depth.items()):
        out.append(f"    {k}: n {len(v)}, median |error| {mdape(v):.1f} %, p90 {p90(v):.1f} %, "
                   f"median {statistics.median(v):+.1f} %")
    return out


def pass_lines(on: list[Row], consts, split_ms: float) -> list[str]:
    """The pass held_out/backends4_queries.md fixed before any record, judged on the fa-on decode records."""
    def errs(rows: list[Row], predict) -> list[float]:
        return [100.0 * (p / r.measured - 1.0) for r in rows if (p := predict(r)) is not None]

    deep = [r for r in on if parse_test(r.rec["test"])[2] > 0]
    flat = [r for r in on if parse_test(r.rec["test"])[2] == 0]
    sources = {r.rec["source_url"].split("/blob/")[0] for r in deep}
    enough = len(deep) >= PASS_MIN_DEPTH_ROWS and len(sources) >= PASS_MIN_SOURCES
    plan, term = (lambda r: predict_row(r, consts, split_ms)), (lambda r: predict_with_term(r, consts, split_ms))
    d_before, d_after = mdape(errs(deep, plan)), mdape(errs(deep, term))
    deep_better = bool(deep) and d_after < d_before
    z_before, z_after = mdape(errs(flat, plan)), mdape(errs(flat, term))
    flat_ok = not flat or z_after <= z_before + PASS_DEPTH0_SLACK
    verdict = "PASS" if enough and deep_better and flat_ok else ("TOO FEW TO JUDGE" if not enough else "FAIL")
    return [f"  Pass (fixed first): 1. >= {PASS_MIN_DEPTH_ROWS} fa-on decode records at depth > 0 from >= "
            f"{PASS_MIN_SOURCES} sources: {len(deep)} from {len(sources)}: {'met' if enough else 'NOT met'}",
            f"    2. MdAPE at depth > 0 lower with the term: {d_before:.1f} % -> {d_after:.1f} %: "
            f"{'met' if deep_better else 'NOT met'}",
            f"    3. depth 0 no more than {PASS_DEPTH0_SLACK:g} points worse: "
            + (f"{z_before:.1f} % -> {z_after:.1f} %" if flat else "no depth-0 decode records")
            + f": {'met' if flat_ok else 'NOT met'}",
            f"  Verdict: {verdict}; the term is {'applied' if verdict == 'PASS' else 'not applied'}"]


if __name__ == "__main__":     # pragma: no cover
    print("\n".join(report()))
    sys.exit(0)
