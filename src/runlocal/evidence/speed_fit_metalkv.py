"""The Metal FA-vec KV read (hardware/metal_kv.py): its one constant fitted, its error before → after on its tuning
rows by head ratio, and its held-out round (backends3) scored. Run: ``python -m runlocal.evidence.speed_fit_metalkv``.

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
HELD_OUT_ROUND = "backends3"    # collected for the term (held_out/backends3_queries.md), scored once


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
    held = metal_decode(build_rows(load_held_out(HELD_OUT_ROUND)))
    if not held:
        lines.append(f"Held-out {HELD_OUT_ROUND}: no records (held_out/{HELD_OUT_ROUND}_queries.md: none met the rule); "
                     "not scored, the term not applied")
        return lines
    lines += [f"Held-out {HELD_OUT_ROUND} ({len(held)} records, never fitted):", *rows_lines(held, consts, split_ms)]
    lines += table(f"  {HELD_OUT_ROUND} (before: the apple entry; after: the term):",
                   errors(held, lambda r: predict_row(r, consts, split_ms)),
                   errors(held, lambda r: predict_with_term(r, consts, split_ms)))
    return lines


if __name__ == "__main__":     # pragma: no cover
    print("\n".join(report()))
    sys.exit(0)
