"""--fit's false-position step when the low end already misses its target (room < 0), as common/fit.cpp computes it:
uint32_t step = int64_t(delta) * (targets - mem) / (mem_high - mem), then clamped to [1, delta − 1]. C's int64 division
truncates toward zero, so a quotient in (−1, 0] is 0 → step 1, while one ≤ −1 wraps in uint32_t → step delta − 1
(review14 finding 13: runlocal stepped delta − 1 for every negative room)."""

from __future__ import annotations

from runlocal.runtimes.llamacpp_fit import false_position


class _Probes:
    """Every probed placement fails (so the bracket's high end comes down to each probe); records where it probed."""

    def __init__(self):
        self.probed: list[int] = []

    def passes(self, ngl: int, ncmoe: int) -> bool:
        self.probed.append(ngl)
        return False

    def probe(self, ngl: int, ncmoe: int) -> tuple[bool, float]:
        return False, -1e12


def _first_probe(room_lo: float, room_hi: float, lo: int = 0, hi: int = 10) -> int:
    p = _Probes()
    false_position(lo, hi, lambda: room_lo, lambda: room_hi, lambda g: (g, 0), p)  # type: ignore[arg-type]
    return p.probed[0]


def test_a_room_short_by_less_than_a_steps_share_steps_one_layer():
    # delta 10 × (−5) / 100 = −0.5 → truncated to 0 → clamped to 1
    assert _first_probe(-5, -105) == 1


def test_a_room_short_by_a_steps_share_or_more_wraps_to_the_top():
    # delta 10 × (−15) / 100 = −1.5 → −1 → uint32 4294967295 → clamped to delta − 1 = 9
    assert _first_probe(-15, -115) == 9


def test_a_positive_room_steps_in_proportion():
    # delta 10 × 30 / 100 = 3
    assert _first_probe(30, -70) == 3
