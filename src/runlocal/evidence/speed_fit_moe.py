"""MoE prompt speed on Vulkan (backend_speed.vulkan_expert_factor: each expert's mul_mm_id tiles padded to the tile
width ggml-vulkan picks) scored against public llama-bench rows, tuning and held out apart. Run:
``python -m runlocal.evidence.speed_fit_moe`` (benchmarks/speed_accuracy.py prints the same section).

Tuning: the moeprefill round's tuning tables (measurements/speed/moeprefill_2026.jsonl, ``fit_scope: "moe_prefill"``,
rule held_out/moeprefill_queries.md) and the MoE prompt rows of the fitted files that were unpredicted until session 19
(strixhalo_2026.jsonl's Radeon 8060S Vulkan rows, backends_2025.jsonl's RTX 5090 rows): single-GPU, no depth. The
moeprefill round's 3 held-out rows, scored once in session 19 (held_out/moeprefill_first_run.txt), are tuning since
session 20 (moeprefill_2026.jsonl, "spent"). Held out: the moeprefill2 round (held_out/moeprefill2.jsonl, rule
held_out/moeprefill2_queries.md). Each row is also priced by the dense formula alone (the expert factor forced to 1):
what a plan would print with no MoE term. The term fits no constant (VULKAN_EXPERT_SHARE stays 1.0: the tuning
rows' grid put its best at 0.98, 22.20 % against 22.23 % at 1.0). Plans do not apply it (backend_speed.
VULKAN_MOE_APPLIED: the held-out round failed); the rows are scored as if they did.

Since session 20 a plan prints a range instead of nothing (backend_speed.MOE_PREFILL_RANGES): on Vulkan the priced
figure × the measured spread of its vendor group's tuning rows, on ROCm's per-expert fallback and SYCL the dense
formula × (the slowest tuning row's ratio … 1.0). range_ratios reads those ratios off the rows; the report scores
each row inside or outside its range (the tuning rows set the ends, so they are inside by construction; the held-out
rows are the check).

Session 22 (round moeprefill3, rule held_out/moeprefill3_queries.md: committed repository files, pages, scoreboards)
found 3 Metal rows from one source and no held-out source, so the ranges are still unvalidated. What a figure would
be is written down before any later round is read (CANDIDATE_SHARES: one constant per range group, fitted on the
tuning rows only, checked leave-one-source-out on them), so that the next round with held-out rows scores (a) the
range and (b) that figure once, by the pass criteria of the rule (score_held_out). The round's Metal rows check the
figure a Metal plan prints (the dense formula; report_metal)."""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..hardware import backend_speed as BS
from ..hardware import speed as S
from .speed_fit import Row, build_rows, load_held_out, load_records, predict_row, prefill_row, unmodelled_prefill

SCOPE = "moe_prefill"
HELD_OUT_ROUND = "moeprefill3"    # the latest round: moeprefill2 and moeprefill3 had no held-out rows


def scored(rows: list[Row]) -> list[Row]:
    """Single-GPU Vulkan MoE prompt rows at no depth."""
    return [r for r in rows if r.kind == "pp" and r.n_experts and r.backend == "vulkan" and r.n_devices == 1
            and "@" not in r.rec["test"]]


def tuning_rows() -> list[Row]:
    return scored(build_rows(load_records(scope=SCOPE) + load_records(include_outliers=True)))


def held_out_rows() -> list[Row]:
    return scored(build_rows(load_held_out(HELD_OUT_ROUND)))


@contextmanager
def term_applied() -> Iterator[None]:
    """Score the rows as a plan would with backend_speed.VULKAN_MOE_APPLIED on (it is off: the held-out round failed)."""
    saved = BS.VULKAN_MOE_APPLIED
    BS.VULKAN_MOE_APPLIED = True
    try:
        yield
    finally:
        BS.VULKAN_MOE_APPLIED = saved


@contextmanager
def dense_formula() -> Iterator[None]:
    """Price the rows as if the experts' tiles were full: the dense formula a MoE prompt had no term beyond."""
    saved = BS.vulkan_expert_factor
    BS.vulkan_expert_factor = lambda *a, **k: 1.0
    try:
        yield
    finally:
        BS.vulkan_expert_factor = saved


def errors(rows: list[Row], consts: dict[str, S.Fit], split_ms: float) -> list[tuple[Row, float, float]]:
    """(row, predicted with the term, predicted by the dense formula) for each row both predict."""
    with term_applied():
        with_term = [predict_row(r, consts, split_ms) for r in rows]
        with dense_formula():       # a row's matmul FLOPs are priced when it is built
            rebuilt = build_rows([r.rec for r in rows])
            dense = [predict_row(r, consts, split_ms) for r in rebuilt]
    return [(r, p, d) for r, p, d in zip(rows, with_term, dense, strict=True) if p and d]


def fallback_rows(records: list[dict] | None = None) -> list[Row]:
    """Single-GPU ROCm / SYCL MoE prompt rows at no depth that a plan declines (backend_speed.moe_prefill_gap: the
    per-expert paths): the fitted files' and the spent held-out rounds' (round 2's #22413 B60 row, scored in session
    11; strixhalo's, scored in session 15), or ``records``'."""
    if records is None:
        records = load_records(include_outliers=True) + load_held_out("round2") + load_held_out("strixhalo")
    return [r for r in build_rows(records) if r.kind == "pp" and r.n_experts and r.backend in ("rocm", "sycl")
            and r.n_devices == 1 and "@" not in r.rec["test"] and unmodelled_prefill(r)]


def range_group(row: Row) -> tuple[str, str]:
    """The key of a row's range in backend_speed.MOE_PREFILL_RANGES."""
    return BS.moe_range_key(row.backend, row.device.vendor)


def priced_rows(vulkan: list[Row], fallback: list[Row], consts: dict[str, S.Fit],
                split_ms: float) -> list[tuple[Row, float]]:
    """(row, the figure a plan prices before declining it): Vulkan's with the padded tiles, ROCm / SYCL's by the dense
    formula (prefill_row skips the decline)."""
    with term_applied():
        out = [(r, p) for r in vulkan if (p := predict_row(r, consts, split_ms))]
    return out + [(r, p) for r in fallback if (p := prefill_row(r, consts, None))]


def range_ratios(pairs: list[tuple[Row, float]]) -> dict[tuple[str, str], list[float]]:
    """measured ÷ priced per range group: what MOE_PREFILL_RANGES' measured ends are read from."""
    out: dict[tuple[str, str], list[float]] = {}
    for r, p in pairs:
        out.setdefault(range_group(r), []).append(r.measured / p)
    return out


def report_ranges(consts: dict[str, S.Fit], split_ms: float) -> None:
    """Each range group's rows inside / outside backend_speed.MOE_PREFILL_RANGES, tuning and held out apart."""
    parts = (("tuning", priced_rows(tuning_rows(), fallback_rows(), consts, split_ms)),
             (f"held out (held_out/{HELD_OUT_ROUND}.jsonl)", priced_rows(held_out_rows(), fallback_rows(
                 [r for r in load_held_out(HELD_OUT_ROUND) if r.get("backend") in ("rocm", "sycl")]), consts, split_ms)))
    print("\nMoE prefill ranges (backend_speed.MOE_PREFILL_RANGES: printed where no MoE prompt figure is validated)")
    print(f"  {'rows':38} {'group':14} {'n':>3} {'sources':>7} {'ratio min':>9} {'max':>6} {'range':>13} {'inside':>7}")
    for title, pairs in parts:
        ratios = range_ratios(pairs)
        if not ratios:
            print(f"  {title:38} none")
        for group, values in sorted(ratios.items()):
            rng = BS.MOE_PREFILL_RANGES[group]
            inside = sum(rng.low <= v <= rng.high for v in values)
            sources = len({r.rec["source_url"] for r, _ in pairs if range_group(r) == group})
            print(f"  {title:38} {'/'.join(g for g in group if g):14} {len(values):3} {sources:7} {min(values):9.3f} "
                  f"{max(values):6.3f} {rng.low:5.2f}–{rng.high:<5.2f}  {inside:3}/{len(values)}")


def report_moe_prefill(consts: dict[str, S.Fit], split_ms: float, *, quiet: bool = False) -> None:
    """Tuning and held-out MoE prompt rows on Vulkan: every row, then median |error| with the term and by the dense
    formula."""
    for title, rows, rule in (("tuning", tuning_rows(), "moeprefill_queries.md, moeprefill2_queries.md"),
                              (f"held out (held_out/{HELD_OUT_ROUND}.jsonl)", held_out_rows(),
                               f"{HELD_OUT_ROUND}_queries.md")):
        got = errors(rows, consts, split_ms)
        print(f"\nMoE prefill on Vulkan, {title}: {len(got)} rows (backend_speed.vulkan_expert_factor; rule "
              f"held_out/{rule})")
        if not got:
            print("  none")
            continue
        if not quiet:
            print(f"  {'device':24} {'model':24} {'quant':8} {'test':7} {'measured':>9} {'term':>8} {'err':>7} "
                  f"{'dense':>8} {'err':>7}")
            for r, p, d in got:
                print(f"  {r.rec['device']:24} {r.rec['model']:24} {r.rec['quant']:8} {r.rec['test']:7} "
                      f"{r.measured:9.1f} {p:8.1f} {(p / r.measured - 1) * 100:+6.1f}% {d:8.1f} "
                      f"{(d / r.measured - 1) * 100:+6.1f}%")
        term = [abs(p / r.measured - 1) * 100 for r, p, _ in got]
        dense = [abs(d / r.measured - 1) * 100 for r, _, d in got]
        signed = [(p / r.measured - 1) * 100 for r, p, _ in got]
        sources = len({r.rec["source_url"] for r, _, _ in got})
        print(f"  MdAPE {statistics.median(term):.1f}% with the term (median {statistics.median(signed):+.1f}%, "
              f"max {max(term):.1f}%) against {statistics.median(dense):.1f}% by the dense formula; "
              f"{len(got)} rows from {sources} sources")
    report_ranges(consts, split_ms)
    report_candidates(consts, split_ms)
    report_metal(consts, split_ms)
    score_held_out(consts, split_ms)


# The figure each range group would print instead of its range (session 22, before any later round is read): the
# tuning rows' median measured ÷ priced, rounded to 0.01, times what the group prices — Vulkan: the padded mul_mm_id
# tiles (backend_speed.vulkan_expert_factor, from ggml-vulkan's matmul_id tile selector), so the constant is the share
# of the dense rate the expert GEMMs reach on that vendor's path; ROCm's per-expert fallback and SYCL: the dense
# formula, so the constant is the launch- and sync-bound slowdown of their one-GEMM-per-expert path (ggml-cuda
# ggml_cuda_mul_mat_id's fallback, ggml-sycl ggml_sycl_mul_mat_id), which the source does not size. Read off 33
# Vulkan rows (12 sources, two cards: the RTX 5090 and, but for one RX 7900 XT table, the Radeon 8060S), 44 ROCm rows
# (one model, GLM-4.5-Air, on the 8060S, four commits of one results file) and 1 SYCL row. Not applied to plans: no
# held-out round has had rows (moeprefill2, moeprefill3); test_moe_prefill_candidates checks them against the rows.
CANDIDATE_SHARES = {("vulkan", "amd"): 0.82, ("vulkan", "nvidia"): 1.49, ("rocm", ""): 0.42, ("sycl", ""): 0.11}
PASS_MDAPE, PASS_ROWS, PASS_SOURCES, RANGE_INSIDE = 25.0, 4, 2, 0.80     # the rule's criteria (moeprefill3_queries.md)


def tuning_pairs(consts: dict[str, S.Fit], split_ms: float) -> list[tuple[Row, float]]:
    """(row, priced) for every tuning row the ranges and the candidate figures are read from."""
    return priced_rows(tuning_rows(), fallback_rows(), consts, split_ms)


def leave_one_source_out(pairs: list[tuple[Row, float]], group: tuple[str, str]) -> list[float]:
    """|error| % of each of ``group``'s rows priced with the median ratio of the group's rows from other sources: the
    candidate figure's out-of-source error on the tuning rows (no held-out rows exist to do better)."""
    rows = [(r.rec["source_url"], r.measured / p) for r, p in pairs if range_group(r) == group]
    out = []
    for source in sorted({s for s, _ in rows}):
        rest = [v for s, v in rows if s != source]
        if rest:
            share = statistics.median(rest)
            out += [abs(share / v - 1) * 100 for s, v in rows if s == source]
    return out


def report_candidates(consts: dict[str, S.Fit], split_ms: float) -> None:
    """Each group's candidate figure on its tuning rows: in sample, and leave-one-source-out."""
    pairs = tuning_pairs(consts, split_ms)
    print("\nMoE prefill candidate figures (CANDIDATE_SHARES × what the group prices; tuning rows only, not applied)")
    print(f"  {'group':14} {'share':>5} {'n':>3} {'sources':>7} {'as priced':>9} {'in sample':>9} {'LOSO':>6} {'LOSO p90':>8}")
    for group, values in sorted(range_ratios(pairs).items()):
        share = CANDIDATE_SHARES[group]
        loso = sorted(leave_one_source_out(pairs, group))
        sources = len({r.rec["source_url"] for r, _ in pairs if range_group(r) == group})
        cells = (f"{statistics.median(loso):5.1f}% {loso[max(0, math.ceil(0.9 * len(loso)) - 1)]:7.1f}%" if loso
                 else f"{'-':>6} {'-':>8}")
        print(f"  {'/'.join(g for g in group if g):14} {share:5.2f} {len(values):3} {sources:7} "
              f"{statistics.median([abs(1 / v - 1) * 100 for v in values]):8.1f}% "
              f"{statistics.median([abs(share / v - 1) * 100 for v in values]):8.1f}% {cells}")


def metal_rows() -> list[Row]:
    """The moe_prefill scope's Metal prompt rows (round moeprefill3's tuning part): what a Metal plan prints is the
    dense formula (no MoE term, no range), so they check that figure."""
    return [r for r in build_rows(load_records(scope=SCOPE)) if r.backend == "metal" and r.kind == "pp"]


def report_metal(consts: dict[str, S.Fit], split_ms: float) -> None:
    got = [(r, p) for r in metal_rows() if (p := predict_row(r, consts, split_ms))]
    print(f"\nMoE prefill on Metal, tuning: {len(got)} rows (the dense formula a Metal plan prints; rule "
          "held_out/moeprefill3_queries.md)")
    for r, p in got:
        print(f"  {r.rec['device']:24} {r.rec['model']:24} {r.rec['quant']:8} {r.rec['test']:8} ubatch {r.ubatch:5} "
              f"{r.measured:9.1f} {p:8.1f} {(p / r.measured - 1) * 100:+6.1f}%")


def held_out_verdicts(pairs: list[tuple[Row, float]]) -> dict[tuple[str, str], tuple[str, str]]:
    """Per range group of held-out (row, priced) pairs: (the range's verdict, the candidate figure's), by the rule's
    criteria: PASS_ROWS rows from PASS_SOURCES sources or "too few to judge"; the range holds with RANGE_INSIDE of the
    rows inside it, the figure passes with a median |error| <= PASS_MDAPE %."""
    out = {}
    for group, values in range_ratios(pairs).items():
        sources = len({r.rec["source_url"] for r, _ in pairs if range_group(r) == group})
        if len(values) < PASS_ROWS or sources < PASS_SOURCES:
            out[group] = ("too few to judge", "too few to judge")
            continue
        rng, share = BS.MOE_PREFILL_RANGES[group], CANDIDATE_SHARES[group]
        inside = sum(rng.low <= v <= rng.high for v in values) / len(values)
        mdape = statistics.median([abs(share / v - 1) * 100 for v in values])
        out[group] = (f"{'holds' if inside >= RANGE_INSIDE else 'FAIL'} ({inside:.0%} inside)",
                      f"{'pass' if mdape <= PASS_MDAPE else 'FAIL'} (MdAPE {mdape:.1f}%)")
    return out


def score_held_out(consts: dict[str, S.Fit], split_ms: float) -> None:
    """The latest round's held-out rows against (a) the ranges and (b) the candidate figures, once."""
    recs = load_held_out(HELD_OUT_ROUND)
    pairs = priced_rows(held_out_rows(), fallback_rows([r for r in recs if r.get("backend") in ("rocm", "sycl")]),
                        consts, split_ms)
    verdicts = held_out_verdicts(pairs)
    print(f"\nMoE prefill, held out (held_out/{HELD_OUT_ROUND}.jsonl): {len(pairs)} rows; (a) the range, (b) the "
          "candidate figure")
    if not verdicts:
        print("  none: every group too few to judge (the ranges stay unvalidated, no figure is adopted)")
    for group, (range_verdict, figure_verdict) in sorted(verdicts.items()):
        print(f"  {'/'.join(g for g in group if g):14} (a) {range_verdict}; (b) {figure_verdict}")


if __name__ == "__main__":   # pragma: no cover
    report_moe_prefill(dict(S.FIT), S.SPLIT_OVERHEAD_MS, quiet="--quiet" in sys.argv)
