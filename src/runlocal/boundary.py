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

from collections.abc import Callable, Iterable

# a probe: (passes, room) — room > 0 bytes to spare, < 0 bytes over, per device (by name) or one figure; None
# not known (e.g. implied, or refused)
Room = float | dict[str, float] | None
Probe = Callable[[int], tuple[bool, Room]]


def device_keys(names: Iterable[str]) -> list[str]:
    """A key per device for the rooms (a Room's dict), in order: its name, and for the second and later of one name
    "name #k" — four RTX 3090s are four devices (keyed by name alone they were one, the last: a search guided by one
    GPU's room, and a margin checked on it only)."""
    seen: dict[str, int] = {}
    keys = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return keys


def _crossing(a: int, b: int, room_a: Room, room_b: Room) -> int | None:
    """Where the first device's room, straight between a (passing) and b (failing), reaches zero: the memory of a
    plan is a sum of lines per device, and the device that runs out first decides (another may be fuller at a)."""
    if room_a is None or room_b is None:
        return None
    ra = room_a if isinstance(room_a, dict) else {"": room_a}
    rb = room_b if isinstance(room_b, dict) else {"": room_b}
    points = [a + (b - a) * ra[k] / (ra[k] - rb[k]) for k in ra.keys() & rb.keys() if ra[k] >= 0 > rb[k]]
    return int(min(points)) if points else None


def _secant(p: tuple[int, Room], q: tuple[int, Room]) -> int | None:
    """Where the line through the last two probes' rooms reaches zero, on the device whose room falls and runs out
    first: where memory bends (--fit moving layers to the host as the slots grow), the two latest plans lie closer
    to the edge than the bracket's ends."""
    (n1, room1), (n2, room2) = p, q
    if room1 is None or room2 is None or n1 == n2:
        return None
    r1 = room1 if isinstance(room1, dict) else {"": room1}
    r2 = room2 if isinstance(room2, dict) else {"": room2}
    points = [n1 + (n2 - n1) * r1[k] / (r1[k] - r2[k]) for k in r1.keys() & r2.keys()
              if r1[k] != r2[k] and (r2[k] - r1[k]) / (n2 - n1) < 0]
    return int(min(points)) if points else None


def _kept_half(old: Room, new: Room, over: Room) -> bool:
    """On the device most over at the failing end, the new probe kept more than half the room of the end it
    replaces: a line aimed at zero missed (the room moves in steps, --fit shifting layers)."""
    if old is None or new is None or over is None:
        return False
    if isinstance(old, dict) and isinstance(new, dict) and isinstance(over, dict):
        key = min(over, key=lambda k: over[k])
        if key not in old or key not in new:
            return False
        return abs(new[key]) > abs(old[key]) / 2
    if isinstance(old, dict) or isinstance(new, dict):
        return False
    return abs(new) > abs(old) / 2


def largest_guided(lo: int, hi: int, probe: Probe, first: int | None = None, *,
                   top_first: bool = False) -> int | None:
    """Largest n in [lo, hi] with probe(n) passing, assuming passing is monotone decreasing in n; None if lo fails.
    lo first, then hi (most searches end there), then the bracket shrinks by interpolation on the room (the line
    through the two latest probes where it lands inside the bracket, else through the bracket's ends); the step
    bisects where one end moved three times running or the last probe kept more than half the room of the end it
    replaced (the room's line can be far from straight: it moves in steps where --fit shifts layers).
    ``first``, inside (lo, hi): probed before either end (a point often near the edge): where it passes it is the
    bracket's lower end (lo is then not asked: it passes too), else its upper end.
    ``top_first``: hi before anything else, and where hi passes it is the answer, nothing below asked (the longest
    context: many plans start at the range's top, and one that does is the largest that starts).
    The probes depend on lo, hi, first and the probes' answers alone: where passing is not monotone, the answer is
    still an n that passes with n + 1 failing (or hi), every n probed below it passing and every one above failing —
    the same n for every caller with the same range, first and probe."""
    known_lo = known_hi = False
    if top_first and lo < hi:
        ok_hi, room_hi = probe(hi)
        if ok_hi:
            return hi
        known_hi = True
    if first is not None and lo < first < hi:
        ok_first, room_first = probe(first)
        if ok_first:
            lo, room_lo, known_lo = first, room_first, True
        else:
            hi, room_hi, known_hi = first, room_first, True
    if not known_lo:
        ok_lo, room_lo = probe(lo)
        if not ok_lo:
            return None
    if lo >= hi:
        return max(lo, hi)
    if not known_hi:
        ok_hi, room_hi = probe(hi)
        if ok_hi:
            return hi
    a, b = lo, hi                  # probe(a) passes, probe(b) fails
    same_end, last_end = 0, ""
    latest: list[tuple[int, Room]] = []       # the probes inside the bracket, newest last
    bent = False
    while b - a > 1:
        g = None
        # bisect where one end moved three times running, or the last probe's room says the line is bent (it kept
        # more than half the room of the end it replaced)
        if same_end < 3 and not bent:
            g = _secant(latest[-2], latest[-1]) if len(latest) >= 2 else None
            g = g if g is not None and a < g < b else _crossing(a, b, room_lo, room_hi)
        g = (a + b + 1) // 2 if g is None else min(max(g, a + 1), b - 1)
        ok, room = probe(g)
        latest.append((g, room))
        bent = _kept_half(room_lo if ok else room_hi, room, room_hi)
        end = "a" if ok else "b"
        same_end = same_end + 1 if end == last_end else 1
        last_end = end
        if ok:
            a, room_lo = g, room
        else:
            b, room_hi = g, room
    return a


def largest_predicted(lo: int, hi: int, passes: Callable[[int], bool], predicted: Callable[[int], float], *,
                      lo_passes: bool = False) -> int | None:
    """Largest n in [lo, hi] with passes(n), assuming passing is monotone decreasing in n; None if lo fails (with
    ``lo_passes``, lo is taken to pass unasked: for a caller whose answer is the same either way).
    Each step probes the edge of ``predicted`` inside the bracket: a guess of the room n leaves (positive: passes),
    cheap, assumed decreasing, and asked again after every probe (it may learn from them, e.g. the compute buffer of
    the last plan simulated beside the exact bytes without it). Right, the edge takes two probes (n passing, n + 1
    failing); a step that moves the same end twice in a row bisects next. Only the probes decide: the answer is
    runtimes.base.largest's for a monotone ``passes`` whatever ``predicted`` says."""
    if not lo_passes and not passes(lo):
        return None
    if lo >= hi:
        return max(lo, hi)
    if passes(hi):
        return hi
    a, b = lo, hi                  # passes(a) (or taken to), not passes(b)
    same_end, last_end = 0, ""
    while b - a > 1:
        if same_end >= 2:
            g = (a + b + 1) // 2
        else:     # the predicted edge (expected to pass), or a + 1 where none above a is predicted to (to fail)
            g = max(_predicted_edge(a, b, predicted), a + 1)
        g = min(g, b - 1)
        ok = passes(g)
        end = "a" if ok else "b"
        same_end = same_end + 1 if end == last_end else 1
        last_end = end
        if ok:
            a = g
        else:
            b = g
    return a


def edge_confirmed(a: int, b: int, passes: Callable[[int], bool], predicted: Callable[[int], float], *,
                   most: int) -> tuple[int, int]:
    """At most ``most`` probes between a (passing, or taken to) and b (failing) where ``predicted`` (a guess of the
    room, assumed decreasing) is near right: the first at its edge, then galloping from there by 1, 2, 4, …
    steps — up while the probes pass, down while they fail — until one passes and one fails, then bisecting what
    is left. Returns the bracket (a, b): passes(a) (or a as given), not passes(b); for a monotone ``passes`` the
    edge is in [a, b − 1], a itself where b = a + 1. Only the probes decide what is returned; the guess chooses
    where they are."""
    g = min(max(_predicted_edge(a, b, predicted), a + 1), b - 1)
    step, seen = 1, set()
    for _ in range(most):
        if b - a <= 1:
            break
        ok = passes(g)
        seen.add(ok)
        if ok:
            a = g
        else:
            b = g
        g = g + step if ok else g - step     # gallop on from the last probe, each step twice the one before
        step *= 2
        if len(seen) == 2 or not a < g < b:  # bracketed by the probes (or past an end): bisect what is left
            g = (a + b + 1) // 2
    return a, b


def _predicted_edge(a: int, b: int, predicted: Callable[[int], float]) -> int:
    """The largest n in [a, b − 1] whose predicted room is ≥ 0 (a when none is): interpolation on the room,
    alternating with bisection so a bent room costs at most twice log2(b − a) guesses."""
    p_lo, p_hi = predicted(a), predicted(b)
    if p_lo < 0:
        return a
    if p_hi >= 0:
        return b - 1
    lo, hi, step = a, b, 0
    while hi - lo > 1:
        g = lo + int((hi - lo) * p_lo / (p_lo - p_hi)) if step % 2 == 0 else (lo + hi) // 2
        g = min(max(g, lo + 1), hi - 1)
        p = predicted(g)
        if p >= 0:
            lo, p_lo = g, p
        else:
            hi, p_hi = g, p
        step += 1
    return lo


__all__ = ["Probe", "Room", "device_keys", "edge_confirmed", "largest_guided", "largest_predicted"]
