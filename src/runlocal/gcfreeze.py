"""CPython's cyclic collector in a long-lived planning process (the API server, the benchmark's grid).

A full (generation-2) collection traverses every container object the process holds, and a planning process
holds many that live on: the specs' tensors (a deep MoE's GGUF view is ~1,500 TensorInfo), the memos' plans and
buffers, the compute table's entries — about 490,000 objects after 800 rows of issue 16's grid, 277,000 of them
TensorInfo. Each full collection then took 0.13–0.43 s of one row's time (a 2,500-row sample: 9 of them, 8 of
its 41 rows over 100 ms), and it never found anything to free: planning makes no reference cycles (500 rows of
the grid with the collector off, then `gc.collect()` after each: 0 unreachable objects).

So a long-lived process moves what is alive after each plan into the permanent generation (`gc.freeze()`: O(1),
a list splice), which collections skip: the objects a plan kept are never traversed again, and the ones it let
go are still freed at once by reference counting. What freezing could lose is a reference cycle that was already
garbage at the freeze (the server's own code, not the planner's, may make some), so `sweep_if_due` unfreezes
and collects every SWEEP_EVERY plans — one full collection (up to ~0.3 s) per 2,000 plans, ~0.15 ms a plan, and a
cycle frozen by mistake is held for at most 2,000 plans, so a server's memory stays bounded however long it runs
(a doubling schedule would hold such garbage for as many plans as the server had answered) — and the server
calls it only with no plan in flight. (Counting plans, not the
frozen objects: gc.get_freeze_count() walks the whole permanent generation, some 5 ms at 500,000 objects.)
A short process (`runlocal check`) never calls either: it exits before a full collection matters.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
SWEEP_EVERY = 2_000
_plans = 0          # plans frozen after since start-up
_sweep_at = SWEEP_EVERY   # the plan count at which the next sweep is due


def freeze_long_lived() -> int:
    """At start-up: collect, then freeze what is left (imports, catalogs). The number of objects frozen."""
    with _lock:
        gc.collect()
        gc.freeze()
        return gc.get_freeze_count()


def freeze_after_plan() -> None:
    """After a plan: what it kept leaves the collector's generations (what it dropped is already freed)."""
    global _plans
    with _lock:
        gc.freeze()
        _plans += 1


def sweep_if_due() -> bool:
    """Unfreeze, collect and freeze again every SWEEP_EVERY plans, so a cycle frozen by mistake is freed. Whether
    it swept."""
    global _sweep_at
    with _lock:
        if _plans < _sweep_at:
            return False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _sweep_at = _plans + SWEEP_EVERY
        return True
