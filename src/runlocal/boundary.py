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

# a probe: (passes, room) — room > 0 bytes to spare, < 0 bytes over, None not known (e.g. implied, or refused)
Probe = Callable[[int], tuple[bool, float | None]]


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
        if (same_end < 2 and room_lo is not None and room_hi is not None and room_lo >= 0 > room_hi):
            g = a + int((b - a) * room_lo / (room_lo - room_hi))
            g = min(max(g, a + 1), b - 1)
        else:
            g = (a + b + 1) // 2
        ok, room = probe(g)
        end = "a" if ok else "b"
        same_end = same_end + 1 if end == last_end else 1
        last_end = end
        if ok:
            a, room_lo = g, room
        else:
            b, room_hi = g, room
    return a


__all__ = ["Probe", "largest_guided"]
