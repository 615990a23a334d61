"""The largest n in [lo, hi] whose probe passes, where the probe also says by how much it passed or failed.

The searches (the longest context, the most parallel requests, --fit's layers) look for the edge of a monotone
predicate, and each probe is a plan that may cost a graph simulation. A plan's memory is close to linear in the
context, the slots and the layers, so the room it leaves (capacity − bytes, negative when over) points at the edge:
each step probes where the line through the two ends of the bracket crosses zero instead of its middle, and the
edge is found from two or three plans instead of log2(hi − lo). The answer is the same as runtimes.base.largest's
for a monotone predicate: the n that passes with n + 1 failing (or hi), each side confirmed by a probe; the room
only chooses which n to try. Where the room is not known (None), the step bisects. Pure, no imports.
"""

from __future__ import annotations

from collections.abc import Callable

# a probe: (passes, room) — room > 0 bytes to spare, < 0 bytes over, per device (by name) or one figure; None
# not known (e.g. implied, or refused)
Room = float | dict[str, float] | None
Probe = Callable[[int], tuple[bool, Room]]


def _crossing(a: int, b: int, room_a: Room, room_b: Room) -> int | None:
    """Where the first device's room, straight between a (passing) and b (failing), reaches zero: the memory of a
    plan is a sum of lines per device, and the device that runs out first decides (another may be fuller at a)."""
    if room_a is None or room_b is None:
        return None
    ra = room_a if isinstance(room_a, dict) else {"": room_a}
    rb = room_b if isinstance(room_b, dict) else {"": room_b}
    points = [a + (b - a) * ra[k] / (ra[k] - rb[k]) for k in ra.keys() & rb.keys() if ra[k] >= 0 > rb[k]]
    return int(min(points)) if points else None


def largest_guided(lo: int, hi: int, probe: Probe) -> int | None:
    """Largest n in [lo, hi] with probe(n) passing, assuming passing is monotone decreasing in n; None if lo fails.
    lo first, then hi (most searches end there), then the bracket shrinks by interpolation on the room; a step
    that moves the same end twice in a row bisects next (the room's line can be far from straight)."""
    ok_lo, room_lo = probe(lo)
    if not ok_lo:
        return None
    if lo >= hi:
        return max(lo, hi)
    ok_hi, room_hi = probe(hi)
    if ok_hi:
        return hi
    a, b = lo, hi                  # probe(a) passes, probe(b) fails
    same_end, last_end = 0, ""
    while b - a > 1:
        g = _crossing(a, b, room_lo, room_hi) if same_end < 2 else None
        g = (a + b + 1) // 2 if g is None else min(max(g, a + 1), b - 1)
        ok, room = probe(g)
        end = "a" if ok else "b"
        same_end = same_end + 1 if end == last_end else 1
        last_end = end
        if ok:
            a, room_lo = g, room
        else:
            b, room_hi = g, room
    return a


__all__ = ["Probe", "Room", "largest_guided"]
