"""The searches find the edge (the longest context, the most layers --fit offloads) from fewer plans, and the edge
is the same one: the value that passes with the next one failing.

Checked two ways: the guided search against the bisection on many monotone predicates whose "room" is straight,
bent or absent; and on real plans, each edge confirmed from both sides by planning its neighbours directly.
"""

from __future__ import annotations

import random

from runlocal.boundary import edge_confirmed, largest_guided, largest_predicted
from runlocal.check import check
from runlocal.request import CheckRequest
from runlocal.runtimes.base import largest
from runlocal.runtimes.llamacpp import FIT_MARGIN
from runlocal.verdict import fits


def _probe_counter(edge: int, room_of):
    asked: list[int] = []

    def probe(n: int) -> tuple[bool, float | None]:
        asked.append(n)
        return n <= edge, room_of(n)
    return probe, asked


def test_the_guided_search_ends_where_the_bisection_ends_whatever_the_room_says():
    rng = random.Random(16)
    for _ in range(3000):
        lo = rng.randint(0, 5)
        hi = lo + rng.randint(0, 600)
        edge = rng.randint(lo - 2, hi + 2)
        shape = rng.choice(["line", "bent", "none", "noise", "steps"])
        slope = rng.uniform(0.1, 50.0)

        def room_of(n, shape=shape, slope=slope, edge=edge):
            if shape == "line":
                return slope * (edge + 0.5 - n)
            if shape == "bent":
                return (edge + 0.5 - n) * (slope if n <= edge else slope * 40)
            if shape == "noise":       # a room that points the wrong way: only the verdicts may decide
                return rng.uniform(-1e9, 1e9)
            if shape == "steps":
                return float((edge - n) // 7) + (0.5 if n <= edge else -0.5)
            return None

        probe, _ = _probe_counter(edge, room_of)
        expected = largest(lo, hi, lambda n, e=edge: n <= e)
        assert largest_guided(lo, hi, probe) == expected, (lo, hi, edge, shape)
        # a fixed point probed first (the longest context's pivot), anywhere in the range or outside it; and with the
        # top before it: the same edge, and where the top passes, one probe
        first = rng.randint(lo - 3, hi + 3)
        probe, _ = _probe_counter(edge, room_of)
        assert largest_guided(lo, hi, probe, first) == expected, (lo, hi, edge, shape, first)
        probe, asked = _probe_counter(edge, room_of)
        assert largest_guided(lo, hi, probe, first, top_first=True) == expected, (lo, hi, edge, shape, first)
        if edge >= hi > lo:
            assert asked == [hi]


def test_where_passing_is_not_monotone_the_answer_is_still_an_edge_the_probes_bracket():
    # a hybrid model under --fit: whether a context starts jumps with -c (runs of passing contexts with gaps). The
    # answer passes, the next one fails (or it is the top), every probe below it passed and every one above failed
    rng = random.Random(1605)
    for _ in range(2000):
        lo, hi = 1, rng.randint(2, 1024)
        cuts = sorted(rng.sample(range(lo, hi + 2), rng.randint(1, min(9, hi + 1))))
        def passing(n, cuts=cuts):            # passes before the first cut, then alternates at each cut
            return sum(c <= n for c in cuts) % 2 == 0
        asked: list[tuple[int, bool]] = []
        def probe(n, passing=passing, asked=asked):
            asked.append((n, passing(n)))
            return passing(n), rng.uniform(-1e9, 1e9) if rng.random() < 0.5 else None
        got = largest_guided(lo, hi, probe, rng.randint(lo, hi), top_first=rng.random() < 0.5)
        if got is None:
            assert not passing(lo)
            continue
        assert passing(got) and (got == hi or not passing(got + 1)), (cuts, got)
        assert all(ok for n, ok in asked if n < got) and all(not ok for n, ok in asked if n > got), (cuts, asked)


def test_a_straight_room_finds_the_edge_in_a_handful_of_plans():
    # the longest context of a plan whose memory grows linearly: 1,024 units, the bisection needs about 11 plans
    for edge in (3, 47, 500, 1000):
        probe, asked = _probe_counter(edge, lambda n, e=edge: 1_000_000.0 * (e + 0.5 - n))
        assert largest_guided(1, 1024, probe) == edge
        assert len(set(asked)) <= 4, asked


def test_the_predicted_search_ends_where_the_bisection_ends_whatever_the_prediction_says():
    # --fit's layer searches probe where a predicted room (bytes without compute buffers, exact, less a guessed
    # compute buffer) reaches zero; a wrong guess may cost plans, never the answer
    rng = random.Random(1616)
    for _ in range(3000):
        lo = rng.randint(0, 3)
        hi = lo + rng.randint(0, 130)
        edge = rng.randint(lo - 2, hi + 2)
        shape = rng.choice(["exact", "offset", "bent", "noise", "flat"])
        slope, offset = rng.uniform(0.1, 50.0), rng.uniform(-300.0, 300.0)

        def predicted(n, shape=shape, slope=slope, offset=offset, edge=edge):
            if shape == "exact":
                return slope * (edge + 0.5 - n)
            if shape == "offset":        # the guessed compute buffer off by a constant
                return slope * (edge + 0.5 - n) + offset
            if shape == "bent":
                return (edge + 0.5 - n) * (slope if n <= edge else slope * 40) + offset
            if shape == "noise":         # a guess that points anywhere: only the verdicts may decide
                return rng.uniform(-1e9, 1e9)
            return 1.0

        lo_passes = rng.random() < 0.3 and edge >= lo
        asked: list[int] = []

        def passes(n: int, edge=edge, asked=asked) -> bool:
            asked.append(n)
            return n <= edge

        expected = largest(lo, hi, lambda n, e=edge: n <= e)
        assert largest_predicted(lo, hi, passes, predicted, lo_passes=lo_passes) == expected, (lo, hi, edge, shape)
        if lo_passes:
            assert lo not in asked
        if shape == "exact" and lo < edge < hi:
            assert len(set(asked)) <= 4, (asked, edge)       # lo, hi, then the edge from both sides


def test_the_capped_search_brackets_the_edge_with_its_own_probes_whatever_the_guess_says():
    # the max-context search over several GPUs makes at most a few whole --fit plans: what it answers must pass (a
    # probe said so, or it is the bracket's given lower end), the upper end must fail (a probe, or the given end),
    # and no probe beyond the cap; the exact edge of a monotone predicate lies in [a, b - 1]
    rng = random.Random(1727)
    for _ in range(3000):
        a0 = rng.randint(0, 20)
        b0 = a0 + rng.randint(1, 600)
        edge = rng.randint(a0, b0 - 1)          # a0 passes (taken to), b0 fails
        most = rng.randint(1, 6)
        miss = rng.randint(-40, 40)

        def predicted(n, edge=edge, miss=miss):
            return (edge + miss + 0.5 - n) * 1e6 if miss < 35 else rng.uniform(-1e9, 1e9)

        asked: list[int] = []

        def passes(n: int, edge=edge, asked=asked) -> bool:
            asked.append(n)
            return n <= edge

        a, b = edge_confirmed(a0, b0, passes, predicted, most=most)
        assert len(asked) <= most and all(a0 < n < b0 for n in asked)
        assert a0 <= a <= edge < b <= b0 and (a == a0 or a in asked) and (b == b0 or b in asked), (a0, b0, edge, a, b)


def test_the_capped_search_gallops_from_the_guess_by_hand():
    # the guess puts the edge at 34 (three steps short of the true 37, as the sketch of --fit is for deepseek-v3 on
    # four RTX 3090s); by hand: 34 passes, 34 + 1 = 35 passes, 35 + 2 = 37 passes, 37 + 4 = 41 fails -> (37, 41)
    asked: list[int] = []

    def passes(n: int) -> bool:
        asked.append(n)
        return n <= 37
    assert edge_confirmed(16, 640, passes, lambda n: 34.5 - n, most=4) == (37, 41)
    assert asked == [34, 35, 37, 41]
    # a guess three steps long: 40 fails, 39 fails, 37 passes (bracketed: bisect), 38 fails -> (37, 38), exact
    asked.clear()
    assert edge_confirmed(16, 640, passes, lambda n: 40.5 - n, most=4) == (37, 38)
    assert asked == [40, 39, 37, 38]


def _ngl(plan) -> int:
    step = next(s for s in plan.steps if s.label.startswith("layers ("))
    return int(step.value.split(":")[0].removeprefix("-ngl "))


def test_ollama_offloads_the_most_layers_that_keep_its_margin():
    # `runlocal check llama-3.1-70b --runtime ollama --gpu rtx-3060`: a 70B on a 12 GB card, partly in RAM
    req = CheckRequest(model="llama-3.1-70b", runtime="ollama", gpu="rtx-3060", ram="128G", use_measurements=False)
    plan, _ = check(req)
    ngl = _ngl(plan)
    gpu = next(d for d in plan.allocation.devices if d.kind == "gpu")
    assert 0 < ngl < plan.model.n_layers + 1
    targets = _targets(req)
    for k, keeps in ((ngl, True), (ngl + 1, False)):
        alloc = plan.planner.allocate(plan.model, plan.weights, plan.settings.with_(n_gpu_layers=k), targets)
        used = next(d for d in alloc.devices if d.kind == "gpu").total
        assert (used + FIT_MARGIN <= gpu.capacity) is keeps, (k, used, gpu.capacity)


def test_the_longest_context_is_an_edge_planned_from_both_sides():
    # `runlocal check llama-3.1-swallow-70b --gpu rtx-4090 --ctx 32768 --ram 48G`: --fit moves layers, max_context is
    # the longest -c that still runs given alone (llama-server's --fit placing the layers again for it), confirmed by
    # planning it and 256 tokens more as the user would ask (-c, no -ngl)
    req = CheckRequest(model="llama-3.1-swallow-70b", runtime="llama.cpp", gpu="rtx-4090", ctx="32768", ram="48G",
                       use_measurements=False)
    plan, _ = check(req)
    edge = plan.max_context
    assert edge and edge % 256 == 0 and edge < plan.model.max_position_embeddings
    targets = _targets(req)
    for ctx, runs in ((edge, True), (edge + 256, False)):
        asked = plan.settings.with_(ctx=ctx, n_gpu_layers=None, n_cpu_moe=0)
        alloc = plan.planner.allocate(plan.model, plan.weights, asked, targets)
        assert fits(alloc) is runs, ctx


def test_the_longest_context_is_the_same_whatever_context_was_asked():
    # `runlocal check gpt-oss-120b --gpu rtx-4090 --ram 41G`, without --ctx and with: --fit puts a 25th, then a 26th
    # layer's experts in system memory as the context grows, and llama-server does that again for each -c, so the
    # longest -c that starts is one figure (the placement --fit chose for the context asked, kept for every context
    # tried, gave 76,544 without --ctx and 122,112 with --ctx 64000 at 128 GiB of RAM) — and the edge: asked for with
    # -c alone, it runs there and not 256 tokens above (the host then holds a 26th layer's experts, over 41 GiB)
    def checked(ctx: int | None):
        return check(CheckRequest(model="gpt-oss-120b", runtime="llama.cpp", gpu="rtx-4090", ram="41G",
                                  ctx=None if ctx is None else str(ctx), use_measurements=False))[0]

    edges = {ctx: checked(ctx).max_context for ctx in (None, 4096, 65536)}
    edge = edges[None]
    assert edge and edge % 256 == 0 and set(edges.values()) == {edge}, edges
    assert 65536 < edge < 131072
    assert checked(edge).verdict != "does_not_fit"
    assert checked(edge + 256).verdict == "does_not_fit"


def test_where_fit_gave_nothing_up_the_longest_context_keeps_every_layer_on_the_gpu():
    # `runlocal check qwen3-4b-2507 --gpu rtx-4090`, with and without --ctx: every layer on the GPU (without -c --fit
    # cuts the trained 262,144). The longest context is the longest -c at which llama-server's --fit still moves
    # nothing off the GPU — not the trained 262,144, which it reaches only by moving layers to system memory (the
    # fixes offer that, with its cost) — and one figure whatever --ctx was: asked for with -c alone, the edge keeps
    # every layer on the GPU and 256 tokens more do not (review, session 12: 262,144 / 152,064 / 152,064 before)
    def checked(ctx: int | None):
        return check(CheckRequest(model="qwen3-4b-2507", runtime="llama.cpp", gpu="rtx-4090",
                                  ctx=None if ctx is None else str(ctx), use_measurements=False))[0]

    edges = {ctx: checked(ctx).max_context for ctx in (None, 32768, 131072)}
    edge = edges[None]
    assert edge and set(edges.values()) == {edge} and 32768 < edge < 262144, edges
    at_edge, above = checked(edge), checked(edge + 256)
    n_layers = at_edge.model.n_layers
    assert at_edge.settings.llamacpp.n_gpu_layers > n_layers and at_edge.allocation.compromise is None
    assert above.settings.llamacpp.n_gpu_layers <= n_layers        # --fit moves a layer to system memory


def _targets(req: CheckRequest):
    from runlocal.check import _inputs

    return _inputs(req)[2]


def test_fit_layers_answers_the_first_placement_that_keeps_the_margin_whatever_the_rooms_say():
    # --fit's layer search (fit_layers) on placements that keep the margin from some point of its order on (the
    # GPU's bytes only fall along it): the answer is the first such placement, or the last of the order where none
    # does. fit.cpp's false-position steps follow the rooms the plans leave: rooms that point the wrong way cost
    # plans, never the answer (for a GPU use monotone along the order); each placement is planned once
    from types import SimpleNamespace

    from runlocal.runtimes.llamacpp import FitProbes, fit_layers

    rng = random.Random(1617)
    for _ in range(2000):
        n = rng.randint(1, 70)
        model = SimpleNamespace(n_layers=n, n_experts=rng.choice([0, 8]))
        order = FitProbes(model, None, None).order()
        first = rng.randint(0, len(order) + 2)         # past the end: nothing keeps the margin
        guess = rng.uniform(-5.0, 5.0)
        index = {p: i for i, p in enumerate(order)}
        asked: list[tuple[int, int]] = []

        def run(ngl, ncmoe, asked=asked):
            asked.append((ngl, ncmoe))
            return (ngl, ncmoe)

        def ok(p, first=first, index=index):
            return index[p] >= first

        def hopeless(ngl, ncmoe, first=first, index=index, guess=guess):
            # the room without compute buffers: below 0 only where the plan fails too
            return (index[(ngl, ncmoe)] - first + 0.5) * 3.0 + abs(guess)

        answer = fit_layers(model, run, ok, hopeless, None, lambda p, g=guess: g)
        expected = order[min(first, len(order) - 1)]
        assert answer == expected, (n, model.n_experts, first, answer, expected)
        assert len(asked) == len(set(asked)), (n, first, asked)
