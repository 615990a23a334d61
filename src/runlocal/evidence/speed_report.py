"""Speed model vs public measurements: the error tables benchmarks/speed_accuracy.py prints.

Per device class and per backend on the fitted records, leave-one-device-out, and each held-out round
(measurements/speed/held_out/, never fitted) on its own; the records and the fit are runlocal.evidence.speed_fit.

Run: python benchmarks/speed_accuracy.py            # evaluate the constants in speed.FIT
     python benchmarks/speed_accuracy.py --fit      # refit them and print the table
     python benchmarks/speed_accuracy.py --write    # refit and write them to src/runlocal/data/speed_fit.json
     python benchmarks/speed_accuracy.py --quiet    # summary only
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from runlocal.hardware import speed as S
from runlocal.hardware import ubatch_speed as UB
from runlocal.hardware.backend_speed import moe_prefill_range
from runlocal.hardware.catalog import Device

from .speed_fit import (
    DECODE_TARGET,
    ROUND_TUNING_DEVICES,
    Row,
    build_rows,
    fit_all,
    fit_core_rates,
    fit_document,
    fit_json,
    knee_rows,
    load_core_tuning,
    load_fa_tuning,
    load_held_out,
    load_records,
    parse_test,
    predict_row,
    predict_via_plan,
    record_model,
    refit,
    unmodelled_prefill,
    write_fit,
)
from .speed_fit_era import superseded
from .speed_fit_fa import term_off
from .speed_fit_fa import term_on as FA_TERM_ON
from .speed_fit_knees import apply_knees, fit_power_knees, knee_floors


def report_holdout(quiet: bool) -> None:
    recs = load_records(holdout=True)
    if not recs:
        return
    print("\nHeld-out records (never fitted), predicted through make_plan — the path `runlocal check` takes:")
    errs = []
    for r in recs:
        p = predict_via_plan(r)
        if p is None:
            continue
        e = pct(p, r["tokens_per_s"])
        errs.append(abs(e))
        if not quiet:
            print(f"  {r['device']:10} {r['model']:18} {r['quant']:7} ngl {r.get('n_gpu_layers')!s:>3} "
                  f"cpu-moe {r.get('n_cpu_moe', 0):>2}  {r['tokens_per_s']:7.1f} {p:7.1f} {e:+7.1%}  {r['source_url']}")
    print(f"  decode MdAPE {statistics.median(errs):.1%} over {len(errs)} records "
          f"({sum(1 for r in recs if r.get('n_cpu_moe') or (r.get('n_gpu_layers') or 99) < record_model(r['model']).n_layers)}"
          f" with weights in RAM)")


# --- reporting ------------------------------------------------------------------------------------------------

def pct(pred: float, meas: float) -> float:
    return (pred - meas) / meas


def report(rows: list[Row], consts, split_ms: float, *, quiet: bool) -> dict[str, dict[str, float]]:
    if not quiet:
        print(f"{'device':24} {'n':>2} {'backend':7} {'model':14} {'quant':7} {'test':12} {'measured':>9} "
              f"{'predicted':>9} {'error':>7}  source")
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        p = predict_row(r, consts, split_ms)
        if p is None:
            continue
        e = pct(p, r.measured)
        per[(r.klass, r.kind)].append(abs(e))
        if not quiet:
            rec = r.rec
            print(f"{rec['device']:24} {r.n_devices:>2} {r.backend:7} {rec['model']:14} {rec['quant']:7} {rec['test']:12} "
                  f"{r.measured:9.1f} {p:9.1f} {e:+7.1%}  {rec['source_url']}")
    return {f"{k}/{kind}": {"n": len(v), "median": statistics.median(v)} for (k, kind), v in per.items()}


def leave_one_device_out(rows: list[Row], by_backend: bool = False) -> dict[str, dict[str, float]]:
    """Each device's records predicted from constants fitted without it, MdAPE per device class (or backend)."""
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    tuning = load_core_tuning()
    saved, knees, floors = S.APPLE_CORE_TFLOPS, S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR
    for dev_id in sorted({r.rec["device"] for r in rows}):
        train = [r for r in rows if r.rec["device"] != dev_id]
        test = [r for r in rows if r.rec["device"] == dev_id and not superseded(r)]     # history: report_history
        by_arch = knee_rows(train)      # an architecture's power knee (and its floor) refitted without the device too
        train_knees = fit_power_knees(by_arch)
        apply_knees(train_knees, rows, knee_floors(by_arch, train_knees))
        consts, split_ms = fit_all(train)
        # an Apple M3+ chip's per-core rate refitted without it too (none left for its generation: no prediction)
        S.APPLE_CORE_TFLOPS = fit_core_rates(train + [r for r in tuning if r.rec["device"] != dev_id], consts)
        for r in test:
            if not any(t.klass == r.klass and t.kind == r.kind for t in train):
                continue    # the only device of its class with such records: nothing to learn from
            p = predict_row(r, consts, split_ms)
            if p is not None:
                per[(r.backend if by_backend else r.klass, r.kind)].append(abs(pct(p, r.measured)))
    S.APPLE_CORE_TFLOPS = saved
    apply_knees(knees, rows, floors)
    if by_backend:
        return {f"{k}/{kind}": {"n": len(v), "median": statistics.median(v), "p90": p90(v)}
                for (k, kind), v in per.items()}
    return {f"{k}/{kind}": {"n": len(v), "median": statistics.median(v)} for (k, kind), v in per.items()}


# --- per backend, and the held-out records --------------------------------------------------------------------

def p90(values: list[float]) -> float:
    """The 90th percentile (statistics.quantiles' default, exclusive method); the value itself for one."""
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def backend_errors(rows: list[Row], consts, split_ms: float, *, quiet: bool = True,
                   label: str = "") -> dict[str, dict[str, float]]:
    """|error| per backend and kind (decode tg, prefill pp): n, median, p90; the rows printed unless quiet.
    A row without a prediction (no peak figure in the catalog, a multi-GPU prefill) counts as missing; a MoE prompt
    a plan prints a range for instead (backend_speed.moe_prefill_range) counts apart, as "ranged": the ranges are
    scored in their own section (speed_fit_moe.report_ranges), not as rows with no answer."""
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    missing: dict[tuple[str, str], int] = defaultdict(int)
    ranged: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        p = predict_row(r, consts, split_ms)
        if p is None:
            (ranged if as_range(r) else missing)[(r.backend, r.kind)] += 1
            continue
        per[(r.backend, r.kind)].append(abs(pct(p, r.measured)))
        if not quiet:
            rec = r.rec
            print(f"  {label}{rec['device']:20} {r.backend:7} {rec['model']:16} {rec['quant']:7} {rec['test']:13} "
                  f"{r.measured:9.1f} {p:9.1f} {pct(p, r.measured):+7.1%}  {rec['source_url']}")
    out = {f"{b}/{kind}": {"n": len(v), "median": statistics.median(v), "p90": p90(v)} for (b, kind), v in per.items()}
    for (b, kind), n in missing.items():
        out.setdefault(f"{b}/{kind}", {"n": 0})["missing"] = n
    for (b, kind), n in ranged.items():
        out.setdefault(f"{b}/{kind}", {"n": 0})["ranged"] = n
    return out


def as_range(row: Row) -> bool:
    """A row with no figure that a plan answers with a range instead: a MoE prompt on a backend with one
    (backend_speed.moe_prefill_range), scored in speed_fit_moe.report_ranges."""
    return bool(row.kind == "pp" and row.n_experts and moe_prefill_range(row.backend, row.device.vendor)
                and unmodelled_prefill(row))


def error_cells(stats: dict[str, dict[str, float]], prefix: str) -> str:
    """One table row's decode and prefill cells (n, median, p90, and rows with no prediction) for the stats keyed
    ``prefix + kind``."""
    cells = []
    for kind in ("tg", "pp"):
        st = stats.get(f"{prefix}{kind}", {})
        n = int(st.get("n", 0))
        miss = (f" (+{int(st['missing'])} none)" if st.get("missing") else "") + (
            f" (+{int(st['ranged'])} as ranges)" if st.get("ranged") else "")
        cells.append(f"{n:>{8 if kind == 'tg' else 9}} "
                     + (f"{st['median']:7.1%} {st['p90']:7.1%}" if n else f"{'-':>7} {'-':>7}") + miss)
    return " ".join(cells)


def print_backend_table(title: str, stats: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'backend':8} {'decode n':>8} {'median':>7} {'p90':>7} {'prefill n':>9} {'median':>7} {'p90':>7}")
    order = ["cuda", "rocm", "vulkan", "metal", "sycl", "cpu"]
    for b in sorted({k.split('/')[0] for k in stats}, key=lambda x: order.index(x) if x in order else 99):
        print(f"{b:8} {error_cells(stats, b + '/')}")


def by_source(rows: list[Row], consts, split_ms: float) -> None:
    per: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        p = predict_row(r, consts, split_ms)
        if p is not None and r.kind == "tg":
            per["/".join(r.rec["source_url"].split("/")[3:5])].append(abs(pct(p, r.measured)))
    print("\nDecode MdAPE by source")
    for src, v in sorted(per.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(v):4d}  {statistics.median(v):6.1%}  {src}")


def print_table(title: str, stats: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'device class':22} {'decode n':>8} {'decode MdAPE':>12} {'prefill n':>9} {'prefill MdAPE':>13}")
    for klass in sorted({k.split('/')[0] for k in stats}):
        tg, pp = stats.get(f"{klass}/tg"), stats.get(f"{klass}/pp")
        ok = "" if not tg else ("  ok" if tg["median"] <= DECODE_TARGET else "  ABOVE TARGET")
        tg_s = f"{tg['median']:.1%}" if tg else "-"
        pp_s = f"{pp['median']:.1%}" if pp else "-"
        print(f"{klass:22} {tg['n'] if tg else 0:>8} {tg_s:>12} {pp['n'] if pp else 0:>9} {pp_s:>13}{ok}")


def main(argv: list[str], reports: tuple = ()) -> int:
    recs = load_records()
    rows = build_rows(recs)
    devices = {r.rec["device"] for r in rows}
    print(f"{len(recs)} records, {len(devices)} devices, "
          f"{len({r.klass for r in rows})} device classes, from {len({r.rec['source_url'] for r in rows})} sources")
    if "--fit" in argv or "--write" in argv:
        consts, split_ms, attn, rates, knees, floors, fa_eff = refit(rows, load_core_tuning(), load_fa_tuning())
        S.ATTN_FACTOR, S.APPLE_CORE_TFLOPS, S.POWER_KNEE_W_PER_TOPS, S.POWER_KNEE_FLOOR = attn, rates, knees, floors
        S.FA_MMA_EFF = fa_eff
        text = fit_json(fit_document(consts, split_ms, attn, rates, knees, floors, fa_eff))
        print(f"\n{text}", end="")
        if "--write" in argv:
            write_fit(text)
            print(f"written to {S.FIT_PATH}")
    else:
        consts, split_ms = S.FIT, S.SPLIT_OVERHEAD_MS
    planned = [r for r in rows if not superseded(r)]     # the records of the builds a plan describes
    stats = report(planned, consts, split_ms, quiet="--quiet" in argv)
    print_table(f"Median absolute % error (MdAPE) with the fitted constants; target: decode <= {DECODE_TARGET:.0%}", stats)
    by_source(planned, consts, split_ms)
    print_table("Leave-one-device-out (each device predicted from constants fitted without it)",
                leave_one_device_out(rows))
    report_holdout(quiet="--quiet" in argv)
    report_backends(planned, consts, split_ms, quiet="--quiet" in argv)
    report_apple_cores(rows, consts, split_ms, quiet="--quiet" in argv)
    for name in ("round2", "round3", "round4", "round5", "round6", "round7", "round8", "round9", "newbuilds",
                 "newbuilds2", "newbuilds3", "backends2", "backends3", "backends4", "strixhalo", "pascal", "pascal2"):
        report_held_out_round(name, consts, split_ms, quiet="--quiet" in argv)
    report_held_out_pooled(consts, split_ms)
    with UB.scored(not UB.APPLIED):     # round 8 tests the micro-batch term: scored the other way too
        report_held_out_round("round8", consts, split_ms, quiet="--quiet" in argv)
    with term_off():        # round 9 tests the flash-attention term (hardware/fa_prefill.py): scored without it too
        report_held_out_round("round9", consts, split_ms, quiet="--quiet" in argv)
    for extra in reports:   # reports kept in their own modules (benchmarks/speed_accuracy.py: the hybrid rows)
        extra(consts, split_ms, quiet="--quiet" in argv)
    return 0


def report_apple_cores(rows: list[Row], consts, split_ms: float, *, quiet: bool) -> None:
    """Apple M3 and later (no published TFLOPS): the fitted per-core rates against M1/M2's published per-core
    figures, and the error on the tuning part and, apart, on the held-out part."""
    m12: dict[str, list[float]] = defaultdict(list)
    for d, c in _m12_cores():
        if d.fp16_tflops:
            m12[d.family.split("-")[0]].append(d.fp16_tflops / c)
    print("\nApple M3 and later: prefill peak = GPU cores × a per-core rate fitted on the tuning part "
          "(TFLOPS/core; M1/M2 published: " + ", ".join(f"{g.upper()} {min(v):.3f}–{max(v):.3f}"
                                                       for g, v in sorted(m12.items())) + ")")
    print("  " + ", ".join(f"{g.upper()} {v:g}" for g, v in sorted(S.APPLE_CORE_TFLOPS.items())))
    tuning = [r for r in rows + load_core_tuning() if r.gen and r.cores and r.klass == "apple"]
    held = [r for r in build_rows(load_held_out()) if r.gen and r.cores]
    for title, part in (("fitted records and tuning part (in-sample)", tuning), ("held-out part (never fitted)", held)):
        if not quiet:
            print(f"\n  {title}:")
        stats = backend_errors(part, consts, split_ms, quiet=quiet, label="  ")
        devs = sorted({f"{r.rec['device']} ({r.cores}c)" for r in part})
        print_backend_table(f"  Apple M3+, {title}: {len(part)} records, {', '.join(devs)}", stats)


def _m12_cores() -> list[tuple[Device, int]]:
    """M1/M2 catalog entries with the full-GPU-bin core count their published fp16 figure is for."""
    full_bin = {"m1": 8, "m1-pro": 16, "m1-max": 32, "m1-ultra": 64, "m2": 10, "m2-pro": 19, "m2-max": 38, "m2-ultra": 76}
    from runlocal.hardware.catalog import load_devices
    return [(d, full_bin[d.family]) for d in load_devices() if d.family in full_bin]


def report_backends(rows: list[Row], consts, split_ms: float, *, quiet: bool) -> None:
    """The per-backend error tables: the fitted records, leave-one-device-out, and the held-out records."""
    print_backend_table("Per backend, fitted records: |error| median and p90 (decode tg, prefill pp)",
                        backend_errors(rows, consts, split_ms))
    print_backend_table("Per backend, leave-one-device-out", leave_one_device_out(rows, by_backend=True))
    held = build_rows(load_held_out())
    if not held:
        return
    if not quiet:
        print(f"\nHeld-out records ({len(held)}, set aside before fitting, measurements/speed/held_out/):")
    stats = backend_errors(held, consts, split_ms, quiet=quiet)
    print_backend_table("Per backend, held-out records (never fitted)", stats)


def group_errors(rows: list[Row], consts, split_ms: float, group) -> dict[str, dict[str, float]]:
    """|error| per ``group(row)`` and kind (decode tg, prefill pp): n, median, p90; rows with no prediction count as
    missing, or as ranged (as_range) (backend_errors, grouped by any key)."""
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    missing: dict[tuple[str, str], int] = defaultdict(int)
    ranged: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        p = predict_row(r, consts, split_ms)
        if p is None:
            (ranged if as_range(r) else missing)[(group(r), r.kind)] += 1
        else:
            per[(group(r), r.kind)].append(abs(pct(p, r.measured)))
    out = {f"{g}|{kind}": {"n": len(v), "median": statistics.median(v), "p90": p90(v)} for (g, kind), v in per.items()}
    for (g, kind), n in missing.items():
        out.setdefault(f"{g}|{kind}", {"n": 0})["missing"] = n
    for (g, kind), n in ranged.items():
        out.setdefault(f"{g}|{kind}", {"n": 0})["ranged"] = n
    return out


def print_group_table(title: str, label: str, stats: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{label:40} {'decode n':>8} {'median':>7} {'p90':>7} {'prefill n':>9} {'median':>7} {'p90':>7}")
    for g in sorted({k.split("|")[0] for k in stats}):
        print(f"{g:40} {error_cells(stats, g + '|')}")


# a round's collection rule, where it is not held_out/<round>_queries.md (round 4: MoE prompt speed on CUDA; pascal2:
# beside its tuning file, measurements/speed/pascal_2026.jsonl)
ROUND_RULES = {"round4": "held_out/moe_cuda_queries.md", "pascal2": "pascal2_queries.md"}


# the rounds pooled by report_held_out_pooled: round 1's files and every later round printed above but round 6 (tuning
# for the micro-batch term since session 14) and backends3 (no records)
POOLED_ROUNDS = (None, "round2", "round3", "round4", "round5", "round7", "round8", "round9", "newbuilds", "newbuilds2",
                 "newbuilds3", "backends2", "backends4", "strixhalo", "pascal", "pascal2")


def report_held_out_pooled(consts, split_ms: float) -> None:
    """Every held-out round's decode rows together, per backend, with today's constants (outliers and the round rows
    that tune an entry, speed_fit.ROUND_TUNING_DEVICES, left out): a re-score on today's model, not a held-out score —
    some rounds have since tuned other terms; each round's first run stays in held_out/<name>_first_run.txt."""
    errs: dict[str, list[float]] = defaultdict(list)
    for name in POOLED_ROUNDS:
        recs = [r for r in load_held_out(name) if not r.get("outlier")
                and r["device"] not in ROUND_TUNING_DEVICES.get(name or "", ())]
        for row in build_rows(recs):
            p = predict_row(row, consts, split_ms) if row.kind == "tg" else None
            if p:
                errs[row.backend].append(abs(pct(p, row.measured)))
    print("\nHeld-out rounds pooled, decode, with today's constants (a re-score: some rounds have tuned other terms "
          "since)")
    for backend, e in sorted(errs.items()):
        print(f"  {backend:8} {len(e):4d}  {statistics.median(e):6.1%}")
    every = [x for e in errs.values() for x in e]
    if every:
        print(f"  {'all':8} {len(every):4d}  {statistics.median(every):6.1%}")


def report_held_out_round(name: str, consts, split_ms: float, *, quiet: bool) -> None:
    """A later held-out round (held_out/<name>.jsonl, collected by the rule committed first in <name>_queries.md,
    never fitted): every record, then |error| per class/backend/variant (the fit entry a record is predicted from: its
    own kernel path), per backend and per source. Scored once when collected; the first run's output is kept in
    held_out/<name>_first_run.txt."""
    rows = build_rows(load_held_out(name))
    if not rows:
        return
    rule = ROUND_RULES.get(name, f"held_out/{name}_queries.md")
    term = f"; micro-batch term {'on' if UB.active() else 'off'}" if name in ("round6", "round8") else ""
    term += f"; flash-attention term {'on' if FA_TERM_ON() else 'off'}" if name == "round9" else ""
    fitted = TUNING_SINCE.get(name, "never fitted")
    print(f"\nHeld-out {name} ({len(rows)} records, collected by measurements/speed/{rule}, {fitted}{term}):")
    backend_errors(rows, consts, split_ms, quiet=quiet, label="  ")
    print_group_table(f"  {name}, per class/backend/variant", "fit entry", group_errors(rows, consts, split_ms, lambda r: r.key))
    print_group_table(f"  {name}, per backend", "backend", group_errors(rows, consts, split_ms, lambda r: r.backend))
    print_group_table(f"  {name}, per source", "source",
                      group_errors(rows, consts, split_ms, lambda r: "/".join(r.rec["source_url"].split("/")[3:7])))
    if name in DEPTH_ROUNDS:      # decode and prefill apart at no depth and with tokens already in the cache
        print_group_table(f"  {name}, by depth", "depth", group_errors(rows, consts, split_ms, depth_group))
        print_group_table(f"  {name}, by depth and flash attention", "depth, fa",
                          group_errors(rows, consts, split_ms, lambda r: f"{depth_group(r)}, fa {r.rec.get('fa', '-')}"))


# rounds collected to test speed at depth (llama-bench -d): scored also by depth, and by depth and flash attention
DEPTH_ROUNDS = ("round7", "round9", "backends2", "backends3", "backends4")
# held-out rounds scored once and tuning data since: what of them a fit reads (speed_fit.FA_TUNING_ROUNDS)
TUNING_SINCE = {"round7": "scored once in session 14; its CUDA flash-attention rows fit FA_MMA_EFF and its Radeon 8060S "
                          "rows the soc/vulkan entry since session 15 (speed_fit.ROUND_TUNING_DEVICES)",
                "backends2": "scored once in session 15; its Metal decode rows tune the Metal FA-vec KV read since "
                             "(hardware/metal_kv.py ABSORBED, not applied)"}


def depth_group(row: Row) -> str:
    """"depth 0" or "depth > 0" (the KV cache already holds tokens when the test starts: llama-bench's @dD)."""
    return "depth 0" if parse_test(row.rec["test"])[2] == 0 else "depth > 0"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
