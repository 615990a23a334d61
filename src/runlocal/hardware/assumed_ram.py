"""No verdict turns on an unstated assumption: when the RAM size was neither given (--ram) nor read from this
machine, the plan is re-made at the RAM the setup needs and says so ("fits if RAM ≥ X GiB").

Pure computation over plans (no I/O): ``make`` is plan.make_plan and ``judge`` plan.judge_plan, passed in by the
caller. The verdict alone decides every size tried, so only the plan shown is made with its searches and fixes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..runtimes import Target
from ..units import GiB

ASSUMED_RAM_NOTE = "RAM: assumed"          # the note hardware/targets.py writes when it assumes a size
UNLIMITED = 1 << 50                          # 1 PiB: more RAM than any verdict can turn on
RANK = {"does_not_fit": 0, "tight": 1, "fits": 2}
MENTION_FROM = 2 * GiB                       # a fitting plan's RAM need is stated from this size up


def ram_was_assumed(notes: list[str]) -> bool:
    return any(n.startswith(ASSUMED_RAM_NOTE) for n in notes)


def _with_ram(targets: list[Target], size: int) -> list[Target]:
    return [replace(t, capacity=size, total=size) if t.kind == "cpu" else t for t in targets]


def settle_assumed_ram(targets: list[Target], make: Callable[..., Any], judge: Callable[[list[Target]], Any],
                       assumed: int):
    """The plan to show when ``targets`` hold ``assumed`` bytes of RAM that nobody stated: make(targets) when RAM
    does not decide it; else make() at the least RAM (whole GiB) that gives the verdict ample RAM gives, with a
    condition naming that size and the --ram flag. ``judge(targets)`` gives the allocation and verdict that
    make(targets) would (plan.judge_plan: the same plan without its searches and fixes), so the sizes tried on the
    way cost one allocation each and only the plan shown is made in full."""
    if not any(t.kind == "cpu" for t in targets):
        return make(targets, with_fixes=True)
    first = judge(targets)
    if first.verdict not in RANK:
        return make(targets, with_fixes=True)
    flag = f"set --ram to your machine's size; {assumed // GiB} GiB was assumed, not read"
    if first.verdict == "fits":
        plan = make(targets, with_fixes=True)
        cpu = [d for d in first.allocation.devices if d.kind == "cpu"]
        need = max((d.total for d in cpu), default=0)
        if need < MENTION_FROM:
            return plan
        if len(first.allocation.devices) == 1:
            need = int(need / 0.9)       # a CPU-only run fits below 90 % of RAM (plan.py TIGHT_SHARE)
        return _conditioned(plan, f"fits if RAM ≥ {-(-need // GiB)} GiB ({flag})")
    want = RANK.get(judge(_with_ram(targets, UNLIMITED)).verdict, -1)
    if want <= RANK[first.verdict]:
        return make(targets, with_fixes=True)   # more RAM would not change the verdict: it does not turn on RAM
    lo, hi = max(1, assumed // GiB), 2 * max(1, assumed // GiB)
    while RANK.get(judge(_with_ram(targets, hi * GiB)).verdict, -1) < want:
        lo, hi = hi, hi * 2
        if hi > UNLIMITED // GiB:
            return make(targets, with_fixes=True)
    while hi - lo > 1:                   # the least whole GiB that gives the ample verdict
        mid = (lo + hi) // 2
        if RANK.get(judge(_with_ram(targets, mid * GiB)).verdict, -1) >= want:
            hi = mid
        else:
            lo = mid
    settled = make(_with_ram(targets, hi * GiB), with_fixes=True)
    word = {2: "fits", 1: "runs, tight,"}[want]
    at = {"does_not_fit": "does not fit", "tight": "is tight"}[first.verdict]
    return _conditioned(settled, f"{word} if RAM ≥ {hi} GiB; at {assumed // GiB} GiB it {at} ({flag})")


def _conditioned(plan, condition: str):
    return replace(plan, conditions=(*getattr(plan, "conditions", ()), condition))


__all__ = ["ASSUMED_RAM_NOTE", "ram_was_assumed", "settle_assumed_ram"]
