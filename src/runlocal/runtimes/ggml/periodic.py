"""Leaving repeated layers out of the simulated graph, exactly: a layer on top of the mirrors (arch builders, the
scheduler, ggml-alloc), which stay as they read against llama.cpp's C.

A decoder graph is one block of nodes repeated per layer. Where a run of layers repeats a period of p layers (the
same kind: spec, weights' names, types, shapes and devices, device; sched.layer_kinds), the graph is built with
HEAD periods of the run, then TAIL periods, and the ones between left out (reduced_layers); the builders build the
layers they are given, under their own indices. Why the buffers come out as the whole graph's:

- Building: a builder's layer body reads only that layer's spec and weights and the graph's shared inputs, so a
  left-out layer would have been built as a renamed copy of the period before the cut.
- Scheduling (ggml-backend.cpp ggml_backend_sched_split_graph): each pass decides a node from its own sources and
  weights (pass 1), from the nearest decided node before or after it (pass 2's expansions; every layer has nodes
  decided by their weights, so this reaches no further than the next layer), from its sources (3, 4) or, in the
  split pass (5), from the split it is in and the copies made so far (a graph input's copy once, for all layers). The
  period before the cut has periods of its kind on both sides, as the left-out ones had, so it is scheduled as they
  would have been; the walk's check below compares it node by node with the period after the cut.
- Allocating (ggml-alloc.c ggml_gallocr_alloc_graph_impl, its second pass: each node's sources, the node, then the
  sources whose last consumer it was freed) is a deterministic process over the node list, so from two states the
  same up to renaming, two equal stretches of nodes do the same thing. At a cut the walk checks (CutCheck, or the
  whole graph is simulated):
  1. the free blocks where the period before the cut begins equal those at the cut (offsets and sizes),
  2. a renaming phi takes the tensors pending there (created before, not external, children or views to come) one
     to one onto those pending at the cut: one pending at both is itself ("global": the graph inputs, their copies on
     a GPU); any other goes to the node one period on, with the same allocated flag, buffer, offset, children and
     views left, layout, flags and size, and a view's root renamed alike;
  3. the period after the cut is the period before it renamed: node by node the same op, layout, flags, buffer and
     size, and sources that are both external, the same global, or each the node a period after the other; no
     graph-input node (those are placed in the first pass, each at an offset of its own).
  Then every left-out period would have walked as the period before the cut did: the same offsets, the same peak
  (already in max_size), and the same state renamed; the whole graph's walk reaches the cut's tail in the state the
  reduced one does. A global's counts change the walk only when they reach 1 (in-place reuse) or 0 (a free), which
  in the whole graph happens no sooner than in the reduced one, as long as each still has two children or two views
  at the cut (checked too).
The graph inputs' counts and the split counts differ from the whole graph's, so split counts (n_splits) are taken
from the whole graph.
A fit asks for many placements of one graph shape, whose reduced layers differ (the device boundaries move, an -ot
rule names other layers) but mostly have the same shapes in the same order (layer_shapes: spec, weights' names,
types and shapes, last or not). A builder reads a layer only through those, its weights' names and its index as a
name, so the graph built for one list of layers is the other's with the layers renamed: sched._placed schedules it
with each layer's device and each weight's device (by its renamed name: overrides match names) asked of the layer it
stands for, and maps the cuts the same way; the walk checks the cuts as before.
With SKIP off every layer is built (the reference tests/unit/test_ggml_periodic.py compares with, on six
architectures and seven placements).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ...memo import IdMemo
from .types import FLAG_INPUT, Tensor

SKIP = True      # False: ggml-alloc walks every node (the reference the tests compare against)
# the longest period of layers looked for: iSWA patterns (gemma3 5 local : 1 global), llama-quantize's
# use_more_bits (a q6_k layer every third: quant/gguf_mix.py) and both together
MAX_PERIOD = 12
HEAD, TAIL = 2, 2     # periods of a run built before and after its cut (at least)
MIN_PERIOD = 2        # layers

_Snapshot = dict[int, tuple[Tensor, bool, int, int, int, int]]


def reduced_layers(kinds: list, extra: dict[int, int] | None = None
                   ) -> tuple[tuple[int, ...], list[tuple[int, int, int]]]:
    """The layers to build and the cuts, from each layer's kind (what decides its nodes and their placement: its
    spec, its weights' names, types, shapes and devices, its device; the last layer is a kind of its own). From
    each layer on, the run of whole periods of p layers that leaves the most layers out (HEAD periods kept before
    the cut, TAIL after it) is cut; where none would, the layer is kept. ggml-alloc's state may repeat only every
    few periods (two equal layers placed in turn), so a period is at least MIN_PERIOD layers; ``extra`` doubles the
    period of the run starting at a layer that many times (after its cut did not check out: an odd period whose
    layers ggml-alloc places in turn repeats only every two), or with -1 keeps a run from starting there.
    Each cut is (first layer of the last period before it, first layer after it, first layer of the second period
    after it)."""
    extra = extra or {}
    n = len(kinds)
    kept: list[int] = []
    cuts: list[tuple[int, int, int]] = []
    i = 0
    while i < n:
        best: tuple[int, int] | None = None        # (layers left out, period)
        head = HEAD
        for p in range(1, MAX_PERIOD + 1 if extra.get(i, 0) >= 0 else 1):
            j = i + p
            while j < n and kinds[j] == kinds[j - p]:
                j += 1
            q = -(-MIN_PERIOD // p) * p << extra.get(i, 0)
            periods = (min(j, n) - i) // q
            if periods > head + TAIL and (best is None or (periods - head - TAIL) * q > best[0]):
                best = ((periods - head - TAIL) * q, q)
        if best is None:
            kept.append(i)
            i += 1
            continue
        left_out, q = best
        head_end = i + head * q
        tail = head_end + left_out
        kept += range(i, head_end)
        kept += range(tail, tail + TAIL * q)
        cuts.append((head_end - q, tail, tail + q))
        i = tail + TAIL * q
    return tuple(kept), cuts


def run_start(cut: tuple[int, int, int]) -> int:
    """The first layer of the run a cut belongs to (the key of reduced_layers' ``extra``)."""
    a, c, e = cut
    return a - (HEAD - 1) * (e - c)


def layer_kinds(model, layer_dev: Callable[[int], int], weight_dev: Callable[[Tensor], int] | None) -> list[tuple]:
    """What decides each layer's nodes and where the scheduler puts them: its spec, its weights' names within the
    layer, types, shapes and devices, and its own device; the last layer is a kind of its own (the builders pick the
    output rows there)."""
    n = model.n_layers
    kinds = []
    for il, (names, probes) in enumerate(_layer_weights(model)):
        devs = tuple(weight_dev(probe) for probe in probes) if weight_dev is not None else ()
        kinds.append((model.layers[il], layer_dev(il), names, devs, il == n - 1))
    return kinds


def layer_shapes(model) -> list[int]:
    """Each layer's kind as far as the builders read it (layer_kinds without the devices: the spec, the weights'
    names within the layer, types and shapes, whether it is the last), numbered in order of first appearance. Two
    lists of layers with the same shapes build the same graph up to the layers' names: the graph built for one
    stands for the other, its layer il for the other's layer at the same position (sched._placed)."""
    def make() -> list[int]:
        ids: dict[tuple, int] = {}
        n = model.n_layers
        return [ids.setdefault((model.layers[il], names, il == n - 1), len(ids))
                for il, (names, _) in enumerate(_layer_weights(model))]
    return _SHAPES.get(model, None, make)


_WEIGHTS = IdMemo(64)
_SHAPES = IdMemo(64)


def _layer_weights(model) -> list[tuple[tuple[tuple, ...], list[Tensor]]]:
    """Each layer's weights (name within the layer, type, shape), with a tensor to ask each one's device by, once
    per model object."""
    def make() -> list[tuple[tuple[tuple, ...], list[Tensor]]]:
        out: list[list[tuple[tuple, Tensor]]] = [[] for _ in range(model.n_layers)]
        for t in model.tensors:
            if not t.name.startswith("blk."):
                continue
            _, il_s, rest = t.name.split(".", 2)
            il = int(il_s)
            if il < model.n_layers:
                probe = Tensor(t.name, "f32", (1, 1, 1, 1), (4, 4, 4, 4), weight=True, layer=il)
                out[il].append(((rest, t.dtype, tuple(t.shape)), probe))
        for ws in out:
            ws.sort(key=lambda w: repr(w[0]))
        return [(tuple(w for w, _ in ws), [probe for _, probe in ws]) for ws in out]
    return _WEIGHTS.get(model, None, make)


MORE_HEAD = 1       # doublings of a run's period before the run is not cut
MAX_TRIES = 2       # reduced graphs tried before the whole one (a failed try costs a reduced simulation)
# a graph that would leave out fewer layers (or a smaller share of them) is simulated whole: not worth a failed try
# (a reduced graph is built once per shape and sequence of layer shapes and serves every placement with them, so a
# quarter pays: deepseek-v3 Q4_K_M's irregular first and last eighths leave ~24 of 61 layers out)
MIN_LEFT_OUT, MIN_LEFT_OUT_SHARE = 8, 0.25

T = TypeVar("T")


def reduced(kinds: list, simulate: Callable[[tuple[int, ...] | None, list[tuple[int, int, int]]], T],
            remember: Callable[[tuple[int, ...], list[tuple[int, int, int]]], dict] | None = None) -> T:
    """simulate(layers, cuts) on the reduced graph (reduced_layers; layers None: all of them); a run whose cut does
    not check out is tried again with its period doubled, then left whole; after MAX_TRIES, or where fewer than
    MIN_LEFT_OUT layers or a MIN_LEFT_OUT_SHARE of the layers would be left out, the whole graph.
    ``remember(layers, cuts)``, given, returns a dict kept per graph shape and first reduced graph (the caller's
    key): what an earlier placement with that key ended with (the periods doubled, or the whole graph), so a
    placement after it starts there instead of paying the failed tries again. Speed only: whatever is tried, the
    walk checks each cut."""
    extra: dict[int, int] = {}
    box: dict | None = None
    first: tuple[int, ...] = ()
    for _ in range(MAX_TRIES if kinds else 0):
        layers, cuts = reduced_layers(kinds, extra)
        if box is None and remember is not None and cuts:
            box, first = remember(layers, cuts), layers
            if box.get("whole"):
                break
            if box.get("extra"):       # kept by position among the first reduced graph's layers (runs start there)
                extra = {first[i]: n for i, n in box["extra"].items()}
                layers, cuts = reduced_layers(kinds, extra)
        if not cuts or len(kinds) - len(layers) < max(MIN_LEFT_OUT, MIN_LEFT_OUT_SHARE * len(kinds)):
            break
        try:
            got = simulate(layers, cuts)
            if box is not None:
                at = {il: i for i, il in enumerate(first)}
                box["extra"] = {at[il]: n for il, n in extra.items() if il in at}
            return got
        except NotRepeated as e:
            start = run_start(cuts[e.cut]) if 0 <= e.cut < len(cuts) else -1
            if start < 0:
                break
            extra[start] = extra.get(start, 0) + 1 if extra.get(start, 0) < MORE_HEAD else -1
    if box is not None:
        box["whole"] = True
    return simulate(None, [])


class NotRepeated(Exception):
    """A cut of the reduced graph did not check out (``cut``: its index): the caller builds that run in full."""

    def __init__(self, message: str, cut: int = -1) -> None:
        super().__init__(message)
        self.cut = cut


class CutCheck:
    """ggml-alloc's walk over a reduced graph, watched at its cuts: ``at(i)`` is called by the walk at each
    watched position and raises NotRepeated where the state does not repeat (docstring, 1-3)."""

    def __init__(self, nodes: list[Tensor], cuts: Sequence[tuple[Tensor, Tensor, Tensor]], leafs: list[Tensor],
                 info: dict[int, Any], allocs: list[Any], node_buffer: Callable[[int, Tensor], int],
                 size_of: Callable[[Tensor, int], int]) -> None:
        self.nodes = nodes
        self.pos = {id(t): i for i, t in enumerate(nodes)}
        # each cut as positions: the period before it starts at a, the cut at c, the period after it ends at e
        self.cuts: dict[int, tuple[int, int]] = {}
        watch: set[int] = set()
        for k, (a, c, e) in enumerate(cuts):
            pa, pc, pe = (self.pos.get(id(t)) for t in (a, c, e))
            if pa is None or pc is None or pe is None or not pa < pc < pe or pe - pc != pc - pa:
                raise NotRepeated("the period before a cut and the one after it differ in length", k)
            self.cuts[pc] = (pa, k)
            watch.update((pa, pc))
        self.watch = watch
        self.info, self.allocs, self.nb_of, self.size_of = info, allocs, node_buffer, size_of
        self.cands: list[Tensor] = [t for t in leafs if not t.external]
        self.mark = 0                      # nodes before it are in cands or dead
        self.seen: dict[int, tuple[_Snapshot, tuple]] = {}

    def _snapshot(self, i: int) -> tuple[_Snapshot, tuple]:
        """The pending tensors at position i (created before it, not external, children or views to come) with
        their place and counts, and each buffer's free blocks."""
        snap: _Snapshot = {}
        info = self.info
        for t in (*self.cands, *self.nodes[self.mark:i]):
            if t.external:
                continue
            h = info.get(id(t))
            if h is not None and (h.n_children > 0 or h.n_views > 0):
                snap[id(t)] = (t, h.allocated, h.buffer_id, h.offset, h.n_children, h.n_views)
        self.cands = [v[0] for v in snap.values()]
        self.mark = i
        blocks = tuple(tuple(tuple(b) for b in a.blocks) for a in self.allocs)
        return snap, blocks

    def at(self, i: int) -> None:
        snap, blocks = self._snapshot(i)
        self.seen[i] = (snap, blocks)
        if i not in self.cuts:
            return
        a, k = self.cuts[i]
        before, blocks_before = self.seen[a]
        phi = self._rename(a, i, before, snap) if blocks_before == blocks else None
        if phi is None:
            raise NotRepeated(f"the walk's state at node {i} is not the one a period before", k)
        fixed = {id(t) for t, _, _ in phi[1]}
        if not self._same(a, i - a, fixed):
            raise NotRepeated(f"the period after node {i} is not the one before it", k)
        if not all(_keeps_two(snap[id(t)], 0, dc, dv) for t, dc, dv in phi[1]):
            raise NotRepeated(f"a graph input is freed or reused within the periods cut at node {i}", k)

    def _same(self, lo: int, L: int, fixed: set[int]) -> bool:
        """The L nodes from lo + L are the L nodes from lo renamed (docstring, 3): node by node the same op,
        layout, flags, buffer and size, and sources (and view roots) that are both external, the same global
        tensor (``fixed``), or each the tensor L positions after the other; no graph-input node."""
        nodes, pos, nb_of, size_of = self.nodes, self.pos, self.nb_of, self.size_of
        for i in range(lo, lo + L):
            a, b = nodes[i], nodes[i + L]
            if _layout(a) != _layout(b) or a.flags != b.flags or a.flags & FLAG_INPUT or len(a.src) != len(b.src):
                return False
            ba = nb_of(i, a)
            if ba != nb_of(i + L, b):
                return False
            if not (a.external or a.view_src is not None) and size_of(a, ba) != size_of(b, ba):
                return False
            if a.view_src is not None and not _renamed(a.view_src, b.view_src, L, pos, fixed):
                return False
            for x, y in zip(a.src, b.src):
                if not _renamed(x, y, L, pos, fixed):
                    return False
        return True

    def _rename(self, a: int, c: int, before: _Snapshot, now: _Snapshot
                ) -> tuple[list[Tensor], list[tuple[Tensor, int, int]]] | None:
        """phi from the pending tensors at position a onto those at position c, one period later (docstring, 2),
        or None."""
        L = c - a
        if len(before) != len(now):
            return None
        nodes, pos = self.nodes, self.pos
        per: list[Tensor] = []
        glob: list[tuple[Tensor, int, int]] = []
        images: set[int] = set()

        def image(t: Tensor) -> Tensor | None:
            if id(t) in now:
                return t
            j = pos.get(id(t))
            return nodes[j + L] if j is not None and j + L < c else None

        for tid, (t, allocated, buf, off, nc, nv) in before.items():
            if tid in now:
                _, a2, b2, o2, nc2, nv2 = now[tid]
                if (a2, b2, o2) != (allocated, buf, off) or nc2 > nc or nv2 > nv:
                    return None
                glob.append((t, nc - nc2, nv - nv2))
                images.add(tid)
                continue
            u = image(t)
            if u is None or id(u) not in now or now[id(u)][1:] != (allocated, buf, off, nc, nv):
                return None
            if _layout(t) != _layout(u) or t.flags != u.flags or self.size_of(t, buf) != self.size_of(u, buf):
                return None
            if t.view_src is not None:
                r, r2 = t.view_src, u.view_src
                if r2 is None or (image(r) is not r2 if id(r) in before else id(r2) in now):
                    return None
            per.append(u)
            images.add(id(u))
        if len(images) != len(now):
            return None
        return per, glob


class ReplayCheck(CutCheck):
    """A recorded walk's cut checks made again in its replay at another context (alloc.Program): the pending
    tensors at each watched position, their allocated flags, buffers and counts as recorded (structural: the walk's
    calls do not depend on sizes), their offsets and the free blocks from the replay, the sizes compared at its n_kv.
    The checks then compare what CutCheck compares and raise NotRepeated where it would."""

    def __init__(self, recorded: CutCheck, pending: dict[int, list[tuple]], offsets: list, allocs: list[Any],
                 size_of: Callable[[Tensor, int], Any]) -> None:
        self.nodes, self.pos, self.cuts, self.watch = recorded.nodes, recorded.pos, recorded.cuts, recorded.watch
        self.nb_of = recorded.nb_of
        self.allocs, self.size_of = allocs, size_of
        self.pending, self.offsets = pending, offsets
        self.seen = {}

    def _snapshot(self, i: int) -> tuple[_Snapshot, tuple]:
        snap: _Snapshot = {id(t): (t, allocated, b, self.offsets[slot], nc, nv)
                           for t, slot, allocated, b, nc, nv in self.pending[i]}
        return snap, tuple(tuple(tuple(b) for b in a.blocks) for a in self.allocs)


def _layout(t: Tensor) -> tuple:
    """What the walk reads of a tensor besides its flags, sources and buffer; fixed once the tensor is made."""
    got = t._layout
    if got is None:
        got = t._layout = (t.op, t.type, t.ne, t.nb, t.external, t.view_src is not None, t.view_offs)
    return got


def _renamed(x: Tensor | None, y: Tensor | None, L: int, pos: dict[int, int], fixed: set[int]) -> bool:
    """y is x renamed: both none or external, the same global tensor, or y the tensor L positions after x."""
    if x is y:
        return x is None or x.external or id(x) in fixed
    if x is None or y is None:
        return False
    if x.external or y.external:
        return x.external and y.external
    if id(x) in fixed:
        return False
    j = pos.get(id(x))
    return j is not None and pos.get(id(y)) == j + L


def _keeps_two(entry: tuple, m: int, dc: int, dv: int) -> bool:
    """A global tensor still has two children or two views to come after m more segments (so none of them frees
    it or reuses it in place), or the segments do not touch it."""
    nc, nv = entry[4], entry[5]
    return (dc == 0 and dv == 0) or nc - m * dc >= 2 or nv - m * dv >= 2

