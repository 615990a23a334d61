"""llama-server's --fit on several GPUs (ggml-org/llama.cpp common/fit.cpp at 08033df, common_params_fit_impl steps 3–4
and set_ngl_tensor_split_tbo): how many layers each GPU gets, which of them keep their experts in system memory, and
the -ngl / -ts / -ot that fit.cpp writes for it. Pure: the memory of each placement comes from the caller.

Step 3 fills the GPUs back to front (the last GPU first, with the last layers and the output layer) with "dense"
layers: for a MoE model every layer so placed holds only its dense tensors (its experts in system memory) except the
first layer of the last GPU's slice, which the -ot rules leave whole (fit.cpp counts the output layer as that GPU's one
full layer; the rule it writes for the output slot matches no tensor). Step 4, for a MoE model whose dense tensors
all fit, converts dense-only layers to full ones front to back (GPU 0 first), then tries to fit part of one more layer
(its up, or its up and gate, or its attention only, on the GPU, the rest overflowing to the next GPU or, on the last,
to system memory). Each layer count is searched by false position between a bracket's ends, as on one GPU
(llamacpp_fit.false_position's step rule, C's integer arithmetic included)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

# common_layer_fraction_t: which part of the first partial layer of a GPU overflows (the rest stays on the GPU)
ATTN, UP, GATE, MOE = 1, 2, 3, 4
# fit.cpp get_overflow_pattern: the tensors of layer il that leave the GPU, per fraction
FRACTION_TENSORS = {ATTN: r"ffn_(gate|up|gate_up|down).*", UP: r"ffn_(gate|gate_up|down).*", GATE: r"ffn_down.*",
                    MOE: r"ffn_(up|down|gate_up|gate)_(ch|)exps"}
FRACTION_WORDS = {ATTN: "its attention only", UP: "its attention and up projection",
                  GATE: "its attention, up and gate projections", MOE: "its dense tensors"}
# fit.cpp's pattern_moe_all: every layer's experts, for the probe of whether the dense tensors fit at all
ALL_EXPERTS = r"blk\.\d+\.ffn_(up|down|gate_up|gate)_(ch|)exps"


@dataclass(frozen=True)
class DeviceLayers:
    """fit.cpp's ngl_t for one GPU: its layers, how many of them are partial (experts, or for the first one the part
    ``overflow`` names, off the GPU), and which part of its first partial layer overflows."""

    n_layer: int = 0
    n_part: int = 0
    overflow: int = MOE

    @property
    def n_full(self) -> int:
        return self.n_layer - self.n_part


Layers = tuple[DeviceLayers, ...]
# per GPU: where its first partial layer's overflowing tensors go (None: system memory, else the next GPU's index)
Overflow = tuple[int | None, ...]
MemOf = Callable[[Layers, Overflow], Sequence[int]]


def c_step(delta: int, room: int, headroom: int) -> int:
    """fit.cpp's false-position step: uint32_t(int64 delta × (target − mem) / (mem_high − mem)), clamped to
    [1, delta − 1]; a headroom ≤ 0 steps delta − 1. C's division truncates toward zero and a negative quotient wraps
    in uint32_t to past delta − 1."""
    if headroom <= 0:
        step = delta - 1
    else:
        scaled = delta * room
        quotient = scaled // headroom if scaled >= 0 else -(-scaled // headroom)
        step = quotient if quotient >= 0 else delta - 1
    return min(max(step, 1), delta - 1)


def _set(layers: list[DeviceLayers], i: int, **changes: int) -> None:
    layers[i] = replace(layers[i], **changes)


class _Use:
    """One probe's use per GPU, simulated only where a decision needs it. fit.cpp measures every probe; runlocal's
    measure is a plan with graph simulations over every GPU, so a probe's use is made where it is first read: a
    comparison with a target that the floor (floor_of: the bytes without compute buffers, never above the use)
    already answers "over", or a false-position step the floor pins (_step), reads none. The probes, their order and
    every answer are fit.cpp's; only the simulations not needed to take its decisions are left out."""

    __slots__ = ("_make", "_floor_of", "_mem", "_floor")

    def __init__(self, layers: Layers, over: Overflow, mem_of: MemOf, floor_of: MemOf | None) -> None:
        self._make = lambda: list(mem_of(layers, over))
        self._floor_of = None if floor_of is None else (lambda: list(floor_of(layers, over)))
        self._mem: list[int] | None = None
        self._floor: list[int] | None = None
        if floor_of is None:
            self.mem()          # (no floor: every probe measured where fit.cpp measures it)

    @property
    def made(self) -> bool:
        return self._mem is not None

    def mem(self) -> list[int]:
        if self._mem is None:
            self._mem = self._make()
        return self._mem

    def floor(self) -> list[int] | None:
        """The lower bound of the use (the use itself where made already); None without floor_of."""
        if self._mem is not None:
            return self._mem
        if self._floor is None and self._floor_of is not None:
            self._floor = self._floor_of()
        return self._floor

    def over(self, d: int, target: int) -> bool:
        """GPU d's use is above target (fit.cpp's mem > target)."""
        floor = self.floor()
        return (floor is not None and floor[d] > target) or self.mem()[d] > target


def _step(delta: int, target: int, low: _Use, high: _Use, d: int) -> int:
    """c_step(delta, target − low's use, high's use − low's use) on GPU d. Where high's use is not made yet and its
    floor bounds the quotient to at most 1 (a larger headroom gives a smaller quotient, never below 0 while the room
    is not negative), the step is 1 whatever high's compute buffers are: not simulated."""
    room = target - low.mem()[d]
    if not high.made and (floor := high.floor()) is not None and room >= 0:
        lower = floor[d] - low.mem()[d]
        if lower > 0 and delta * room // lower <= 1:
            return 1
    return c_step(delta, room, high.mem()[d] - low.mem()[d])


def fit_devices(n_layers: int, n_devices: int, moe: bool, mem_of: MemOf, targets: Sequence[int],
                dense_fits: bool, floor_of: MemOf | None = None) -> tuple[Layers, Overflow]:
    """common_params_fit_impl steps 3–4 on n_devices GPUs: each GPU's layers and what overflows. mem_of(layers,
    overflow) gives each GPU's use for a placement; targets each GPU's free memory less its margin; dense_fits
    whether every GPU's use with all experts in system memory sums under the targets (global_surplus_cpu_moe > 0);
    floor_of, where given, a lower bound of mem_of known without its compute buffers (LlamaCpp.floor): a probe's
    mem_of is then asked only where fit.cpp's decision needs it (_Use), with the same answer."""
    ngl = [DeviceLayers()] * n_devices
    over: list[int | None] = [None] * n_devices

    def use(layers: Sequence[DeviceLayers], overflow: Sequence[int | None]) -> _Use:
        return _Use(tuple(layers), tuple(overflow), mem_of, floor_of)

    mem = use(ngl, over)
    last = n_devices - 1
    for d in range(last, -1, -1):             # step 3: dense (dense-only) layers, back to front
        unassigned = n_layers + 1 - sum(x.n_layer for x in ngl[d + 1:])
        if unassigned <= 0:
            continue
        high = list(ngl)
        _set(high, d, n_layer=unassigned)
        if moe:
            _set(high, d, n_part=unassigned if d < last else unassigned - 1)
        mem_high = use(high, over)
        if not mem_high.over(d, targets[d]):
            ngl, mem = high, mem_high
            continue
        delta = high[d].n_layer - ngl[d].n_layer
        while delta > 1:
            step = _step(delta, targets[d], mem, mem_high, d)
            test = list(ngl)
            part = test[d].n_part + ((step - 1 if d == last and test[d].n_part == 0 else step) if moe else 0)
            _set(test, d, n_layer=test[d].n_layer + step, n_part=part)
            mem_test = use(test, over)
            if not mem_test.over(d, targets[d]):
                ngl, mem = test, mem_test
            else:
                high, mem_high = test, mem_test
            delta = high[d].n_layer - ngl[d].n_layer
    if not moe or not dense_fits:
        return tuple(ngl), tuple(over)
    return _fill_front_to_back(n_devices, use, targets, ngl, over, mem)


def _fill_front_to_back(nd: int, use: Callable[[Sequence[DeviceLayers], Sequence[int | None]], _Use],
                        targets: Sequence[int], ngl: list[DeviceLayers], over: list[int | None], mem: _Use
                        ) -> tuple[Layers, Overflow]:
    """Step 4: dense-only layers converted to full ones, GPU 0 first, each GPU's count searched by false position,
    then part of one more layer tried (_one_more_layer)."""
    dense_start = nd
    for d in range(nd - 1, -1, -1):
        if ngl[d].n_layer == 0:
            break
        dense_start = d
    d = 0
    while d <= dense_start < nd:
        high = list(ngl)
        for j in range(dense_start, nd):
            move = high[j].n_layer if j < nd - 1 else high[j].n_layer - 1
            _set(high, d, n_layer=high[d].n_layer + move)
            _set(high, j, n_layer=high[j].n_layer - move, n_part=0)
        dense_start_high = nd - 1
        mem_high = use(high, over)
        if mem_high.over(d, targets[d]):
            delta = high[d].n_full - ngl[d].n_full
            while delta > 1:
                step = _step(delta, targets[d], mem, mem_high, d)
                test, start = _convert(ngl, d, dense_start, step)
                mem_test = use(test, over)
                if not mem_test.over(d, targets[d]):
                    ngl, mem, dense_start = test, mem_test, start
                else:
                    high, mem_high, dense_start_high = test, mem_test, start
                delta = high[d].n_full - ngl[d].n_full
        else:
            ngl, mem, dense_start = high, mem_high, dense_start_high
        ngl, over, mem, dense_start = _one_more_layer(nd, use, targets, d, ngl, over, mem, dense_start)
        d += 1
    return tuple(ngl), tuple(over)


def _convert(ngl: list[DeviceLayers], d: int, dense_start: int, step: int) -> tuple[list[DeviceLayers], int]:
    """step dense-only layers, taken from the front of the dense-only GPUs, made full layers of GPU d."""
    test = list(ngl)
    start, converted = dense_start, 0
    while start < len(test):
        n = min(step - converted, test[start].n_part)
        _set(test, start, n_layer=test[start].n_layer - n, n_part=test[start].n_part - n)
        _set(test, d, n_layer=test[d].n_layer + n)
        converted += n
        if test[start].n_part > 0:
            break
        start += 1
    return test, start


def _one_more_layer(nd: int, use: Callable[[Sequence[DeviceLayers], Sequence[int | None]], _Use],
                    targets: Sequence[int], d: int, ngl: list[DeviceLayers], over: list[int | None], mem: _Use,
                    dense_start: int) -> tuple[list[DeviceLayers], list[int | None], _Use, int]:
    """fit.cpp's "try to fit at least part of one more layer": the next dense-only layer moved to GPU d with its up
    projection on it (then also its gate), or else its attention only; the rest overflowing to GPU d + 1 (system
    memory on the last GPU). Taken where GPU d and the GPU overflowed to stay strictly under their targets. A probe
    here is only compared (a step's false position reads the uses it fails at, this one does not): where the floor
    already reaches a target, the use, at least the floor, does too, and the placement is refused without its compute
    buffers (a graph simulation each over several GPUs)."""
    if ngl[dense_start].n_layer <= (0 if d < nd - 1 else 1):
        return ngl, over, mem, dense_start
    test = list(ngl)
    start = dense_start
    _set(test, start, n_layer=test[start].n_layer - 1, n_part=test[start].n_part - 1)
    _set(test, d, n_layer=test[d].n_layer + 1, n_part=test[d].n_part + 1)
    if test[start].n_part == 0:
        start += 1
    over_test = list(over)
    if d < nd - 1:
        over_test[d] = d + 1

    def use_under() -> _Use | None:
        """The probe's use where it stays strictly under the targets; None where it does not."""
        probe = use(test, over_test)
        checked = [d] if d + 1 == nd else [d, d + 1]
        # (a use at least the floor: where the floor reaches a target, so does the use; else the use decides)
        floor = probe.floor()
        if floor is not None and any(floor[k] >= targets[k] for k in checked):
            return None
        return probe if all(probe.mem()[k] < targets[k] for k in checked) else None

    _set(test, d, overflow=UP)
    if (mem_test := use_under()) is not None:
        ngl, over, mem, dense_start = list(test), over_test, mem_test, start
        _set(test, d, overflow=GATE)
        if (mem_test := use_under()) is not None:
            ngl, over, mem, dense_start = list(test), over_test, mem_test, start
    else:
        _set(test, d, overflow=ATTN)
        if (mem_test := use_under()) is not None:
            ngl, over, mem, dense_start = list(test), over_test, mem_test, start
    return ngl, over, mem, dense_start


def partial_layers(n_layers: int, layers: Layers, over: Overflow) -> list[tuple[int, int, int | None]]:
    """set_ngl_tensor_split_tbo's overrides: (layer, fraction, buffer: None system memory, else a GPU) for each partial
    layer — each GPU's slice holds its full layers first, then its partial ones; the first partial layer overflows
    its fraction to the GPU's overflow buffer, the others their experts to system memory."""
    out = []
    il0 = n_layers + 1 - sum(x.n_layer for x in layers)
    for d, x in enumerate(layers):
        il0 += x.n_full
        for il in range(il0, il0 + x.n_part):
            out.append((il, x.overflow if il == il0 else MOE, over[d] if il == il0 else None))
        il0 += x.n_part
    return out


def fit_flags(n_layers: int, layers: Layers, over: Overflow, buffer_name: Callable[[int | None], str]
              ) -> tuple[int, tuple[float, ...], tuple[tuple[str, str], ...]]:
    """(-ngl, -ts, -ot rules) as set_ngl_tensor_split_tbo sets them: -ngl the sum of the GPUs' layers, -ts each GPU's
    layer count, one rule per partial layer. The rules of one fraction and buffer are written as one pattern over
    their layers (blk\\.(12|13)\\.…): the same tensors move, as no two layers' patterns match one tensor (the block
    number is followed by a dot), so the first-match order between them is immaterial. A rule for the output slot
    (layer n_layers) matches no tensor and is left out."""
    groups: dict[tuple[int, int | None], list[int]] = {}
    for il, fraction, buf in partial_layers(n_layers, layers, over):
        if il < n_layers:
            groups.setdefault((fraction, buf), []).append(il)
    rules = []
    for (fraction, buf), ils in groups.items():
        block = str(ils[0]) if len(ils) == 1 else "(" + "|".join(map(str, ils)) + ")"
        rules.append((rf"blk\.{block}\.{FRACTION_TENSORS[fraction]}", buffer_name(buf)))
    return sum(x.n_layer for x in layers), tuple(float(x.n_layer) for x in layers), tuple(rules)


def describe(n_layers: int, layers: Layers, over: Overflow, names: Sequence[str], moe: bool) -> str:
    """Each GPU's share in words: its layers, and for a MoE model how many keep their experts in system memory."""
    parts = []
    first = n_layers + 1 - sum(x.n_layer for x in layers)
    moved = {il: (f, b) for il, f, b in partial_layers(n_layers, layers, over)}
    for name, x in zip(names, layers):
        span = range(first, first + x.n_layer)
        first += x.n_layer
        blocks = [il for il in span if il < n_layers]
        text = f"{name}: {x.n_layer} layer{'s' if x.n_layer != 1 else ''}"
        if blocks:
            text += f" (blocks {blocks[0]}–{blocks[-1]}{', output' if n_layers in span else ''})"
        elif n_layers in span:
            text += " (output)"
        partial = [il for il in blocks if il in moved]
        if moe and (in_ram := [il for il in partial if moved[il][1] is None]):
            text += f", {len(in_ram)} with experts in system memory"
        if partial and (first_part := moved[partial[0]])[0] != MOE:
            fraction, buf = first_part
            text += (f"; block {partial[0]} keeps {FRACTION_WORDS[fraction]} here, the rest "
                     + ("in system memory" if buf is None else f"on GPU {buf}"))
        parts.append(text)
    return "; ".join(parts)


_RULE_BLOCKS = re.compile(r"blk\\\.(?:\((\d+(?:\|\d+)*)\)|(\d+))\\\.ffn_")


def rule_layers(rules: Sequence[tuple[str, str]], buffer: str) -> list[int]:
    """The layers that fit_flags' rules send (some of) their FFN tensors to ``buffer`` from (read back from the rules'
    own form; another rule form counts none)."""
    out: list[int] = []
    for pattern, buf in rules:
        if buf == buffer and (m := _RULE_BLOCKS.match(pattern)):
            out += [int(x) for x in (m.group(1) or m.group(2)).split("|")]
    return sorted(set(out))
