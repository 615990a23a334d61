"""runlocal's verdict against posted outcomes: "I ran X on Y with Z and it started / ran out of memory / was refused".

Each record of measurements/outcomes (public posts collected by the rule in its README, committed before any record
was looked at) is planned through the public Python API, `check(CheckRequest(...))`, offline (the catalog and the
devices and sizes the post states; HF_HUB_OFFLINE=1). Prints agreement per runtime and overall, the tuning part
(records.jsonl) and the held-out part (held_out.jsonl, every third source thread) apart, with the strict figure
beside it (an out-of-memory-while-running outcome agrees only with does_not_fit, not with tight), the records
runlocal could not resolve (with its reason) and those it refused as input, and each tuning miss. Each part prints
its collection batches apart (batch 1: session 16; batch 2: session 17, README "Batch 2"; batch 3: session 18, README
"Batch 3"; batch 4: session 19, README "Batch 4"; batch 5: session 21, README "Batch 5"; batch 6: session 22, README
"Batch 6"; batch 7: session 23, README "Batch 7") and then all together. The held-out part prints totals only; each
batch's first and only scoring is kept in measurements/outcomes/held_out_first_run.txt (batch 1),
held_out2_first_run.txt (batch 2), held_out3_first_run.txt (batch 3), held_out4_first_run.txt (batch 4),
held_out5_first_run.txt (batch 5), held_out6_first_run.txt (batch 6) and held_out7_first_run.txt (batch 7).

Each part is scored twice (README "Post dates and the era's release", session 23): as planned before — a record
that names no runtime version at the runtime's current release — and at the era's release, where such a record is
planned at `runtime_version_inferred`, the release current on the date it was posted. The era pass prints totals per
part and, for the tuning part only, the records whose verdict it changes.

    python benchmarks/verdict_accuracy.py                 # both parts
    python benchmarks/verdict_accuracy.py --part tuning   # what to run while tuning: held-out figures stay unseen
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from dataclasses import dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")     # offline: a model outside the catalog is "unresolved", not fetched

from runlocal.check import CheckRequest, check  # noqa: E402
from runlocal.errors import InputError, ModelNotFoundError, RunlocalError, UnknownModelError  # noqa: E402
from runlocal.evidence import outcomes  # noqa: E402

# a runtime whose versions are not modelled, or a release below the range read (README amendment (c): the bare runtime)
VERSION_NOT_MODELLED = ("versions are modelled for", "releases read are")


@dataclass(frozen=True)
class Scored:
    rec: dict
    status: str                 # "scored", "unresolved" or "error"
    verdict: str | None = None
    reason: str = ""            # runlocal's one line for unresolved / error
    version_dropped: bool = False
    memory: str = ""            # the plan's total need against the devices' capacity, for the miss list


def plan_record(rec: dict, era: bool = False) -> Scored:
    """``era``: a record without a runtime version is planned at the release current on its post's date."""
    dropped = False
    try:
        try:
            plan, _ = check(CheckRequest(**outcomes.request_fields(rec, era=era)))
        except InputError as e:
            if not any(words in str(e) for words in VERSION_NOT_MODELLED):
                raise
            dropped = True          # README amendment (c): the bare runtime, said so below
            plan, _ = check(CheckRequest(**outcomes.request_fields(rec, versioned=False)))
    except (ModelNotFoundError, UnknownModelError) as e:
        return Scored(rec, "unresolved", reason=str(e).splitlines()[0], version_dropped=dropped)
    except RunlocalError as e:
        return Scored(rec, "error", reason=str(e).splitlines()[0], version_dropped=dropped)
    gib = 2 ** 30
    memory = ", ".join(f"{d.name} {d.total / gib:.1f}/{d.capacity / gib:.1f} GiB"
                       for d in plan.allocation.devices if d.capacity)
    if plan.allocation.refusal:
        memory += f"; refusal: {plan.allocation.refusal}"
    if plan.allocation.compromise:
        memory += f"; compromise: {plan.allocation.compromise}"
    return Scored(rec, "scored", plan.verdict, version_dropped=dropped, memory=memory)


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "0/0"


def report(name: str, results: list[Scored], details: bool) -> None:
    print(f"\n== {name}: {len(results)} records from {len({r.rec['thread'] for r in results})} threads ==")
    print(f"{'runtime':<13} {'records':>7} {'resolved':>8} {'agree':>14} {'strict':>14} {'unresolved':>10} {'error':>5}")
    groups: dict[str, list[Scored]] = collections.defaultdict(list)
    for r in results:
        groups[r.rec["runtime"]].append(r)
    for runtime in [*outcomes.RUNTIMES, "all"]:
        rows = results if runtime == "all" else groups.get(runtime, [])
        scored = [r for r in rows if r.status == "scored"]
        ok = sum(outcomes.agrees(r.rec["outcome"], r.verdict) for r in scored)
        strict = sum(outcomes.agrees(r.rec["outcome"], r.verdict, strict=True) for r in scored)
        print(f"{runtime:<13} {len(rows):>7} {len(scored):>8} {_pct(ok, len(scored)):>14} "
              f"{_pct(strict, len(scored)):>14} {sum(r.status == 'unresolved' for r in rows):>10} "
              f"{sum(r.status == 'error' for r in rows):>5}")
    scored = [r for r in results if r.status == "scored"]
    table = collections.Counter((r.rec["outcome"], r.verdict) for r in scored)
    print("posted outcome × verdict: " + ", ".join(f"{o}→{v} {n}" for (o, v), n in sorted(table.items())))
    dropped = [r.rec["id"] for r in results if r.version_dropped]
    if dropped:
        print(f"runtime version not modelled, planned at the current release: {len(dropped)} records")
    if not details:
        return
    for r in results:
        if r.status != "scored":
            print(f"  {r.status:<10} {r.rec['id']:<16} {r.rec['model_arg']}: {r.reason}")
    print("tuning misses:")
    for r in scored:
        if outcomes.agrees(r.rec["outcome"], r.verdict):
            continue
        rec = r.rec
        print(f"  {rec['id']:<16} {rec['outcome']:<11} → {r.verdict:<12} {rec['model_arg']} {rec.get('quant') or ''} "
              f"on {rec['device']} {rec['settings'] or ''}  [{r.memory}]  {rec['source']}")


def report_by_batch(name: str, results: list[Scored], details: bool) -> None:
    """Each collection batch apart (totals only), then both together (with the details when asked)."""
    for batch in outcomes.BATCHES:
        report(f"{name}, batch {batch}", [r for r in results if outcomes.batch_of(r.rec) == batch], details=False)
    report(f"{name}, batches {' + '.join(map(str, outcomes.BATCHES))}", results, details)


def report_era(name: str, before: list[Scored], era: list[Scored], details: bool) -> None:
    """The part at the era's release (totals, as `report` prints them), and with ``details`` each record whose
    verdict the era changes (the tuning part only: the held-out part prints totals)."""
    inferred = sum(bool(r.rec.get("runtime_version_inferred")) for r in era)
    unknown = sum(r.rec.get("posted", "unknown") == "unknown" for r in era)
    report(f"{name}, at the era's release ({inferred} records planned at an inferred release; {unknown} of unknown "
           "date planned as before)", era, details=False)
    if not details:
        return
    print("verdicts the era's release changes:")
    for b, e in zip(before, era):
        if (b.status, b.verdict) != (e.status, e.verdict):
            rec = b.rec
            print(f"  {rec['id']:<16} {rec['outcome']:<11} {b.verdict or b.status} → {e.verdict or e.status} at "
                  f"{rec['runtime']}=={rec.get('runtime_version_inferred')} (posted {rec.get('posted')})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("both", "tuning", "held_out"), default="both")
    args = ap.parse_args(argv)
    tuning, held_out = outcomes.load("records.jsonl"), outcomes.load("held_out.jsonl")
    outcomes.check_split(tuning, held_out)
    for part, recs, details in (("tuning", tuning, True), ("held_out", held_out, False)):
        if args.part not in ("both", part):
            continue
        name = "tuning (records.jsonl)" if details else "held out (held_out.jsonl): totals only"
        before = [plan_record(r) for r in recs]
        report_by_batch(name, before, details=details)
        report_era(name, before, [plan_record(r, era=True) for r in recs], details=details)
    return 0


if __name__ == "__main__":
    sys.exit(main())
