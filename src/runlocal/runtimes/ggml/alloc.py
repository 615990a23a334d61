"""ggml-alloc.c's graph allocator (gallocr) and its dynamic tensor allocator: where every intermediate tensor is
placed in each backend's compute buffer, and so how big that buffer gets. ``allocate`` mirrors
ggml_gallocr_alloc_graph_impl step by step (over 80 lines, kept in its shape so it reads against its source)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...units import round_up
from . import affine
from .graph import Graph
from .periodic import CutCheck, ReplayCheck
from .types import CPU_ALIGNMENT, FLAG_INPUT, FLAG_OUTPUT, INPLACE_OPS, Tensor

# --- ggml-alloc.c: the dynamic allocator ------------------------------------------------------------

_align = round_up     # ggml-alloc.c aligned_offset / GGML_PAD


class DynAllocator:
    """ggml-alloc.c ggml_dyn_tallocr with one chunk (buffers below the backend's max size): free blocks kept
    sorted by offset; the last block is the open end of the buffer."""

    def __init__(self, alignment: int) -> None:
        self.alignment = alignment
        self.blocks: list[list[int]] = [[0, 1 << 62]]     # [offset, size]
        self.max_size = 0

    def alloc(self, size: int) -> int:
        # ggml_dyn_tallocr_alloc: best fit among all blocks but the last (the smallest that fits, the later one on
        # ties), else the last block
        size = _align(size, self.alignment)
        best, best_size = -1, None
        for i in range(len(self.blocks) - 1):
            bsize = self.blocks[i][1]
            if bsize >= size and (best_size is None or bsize <= best_size):
                best, best_size = i, bsize
        if best < 0:
            best = len(self.blocks) - 1
        block = self.blocks[best]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del self.blocks[best]
        self.max_size = max(self.max_size, offset + size)
        return offset

    def free(self, offset: int, size: int) -> None:
        # ggml_dyn_tallocr_free_bytes: merge with the block ending at offset or starting after it, else insert
        size = _align(size, self.alignment)
        blocks = self.blocks
        for i, block in enumerate(blocks):
            if block[0] + block[1] == offset:
                block[1] += size
                if i < len(blocks) - 1 and block[0] + block[1] == blocks[i + 1][0]:
                    block[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                return
            if offset + size == block[0]:
                block[0] = offset
                block[1] += size
                if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == block[0]:
                    blocks[i - 1][1] += block[1]
                    del blocks[i]
                return
        pos = 0
        while pos < len(blocks) and blocks[pos][0] < offset:
            pos += 1
        blocks.insert(pos, [offset, size])


class SymbolicAllocator(DynAllocator):
    """DynAllocator for a symbolic run (affine.py): the best fit chosen as at the point asked for, the interval
    narrowed to where the same block is chosen (not to where every block's fit stays the same)."""

    def alloc(self, size: int) -> int:
        size = _align(size, self.alignment)
        blocks = self.blocks
        best = affine.best_fit([b[1] for b in blocks[:-1]], size)
        if best < 0:
            best = len(blocks) - 1
        block = blocks[best]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del blocks[best]
        self.max_size = max(self.max_size, offset + size)
        return offset


# what a walk did to the dynamic allocators, and where it checked its cuts (allocate's trace)
ALLOC, INPLACE, EXTRA, FREE, CUTS, WATCH = range(6)


class Program:
    """A walk's calls on the dynamic allocators, replayable at another context (affine.py: a graph shape built with
    n_kv as a symbol). Which tensor is placed, reused in place, trimmed or freed, and in which buffer, follows from the
    graph's structure alone (its nodes, sources, views, flags, layouts, op kinds; allocate reads sizes only in the
    allocator calls and in ggml_gallocr_free_extra_space's comparison, both replayed here), so the same calls with
    the sizes at another n_kv are that context's walk. A reduced graph's cut checks (periodic.py) are made again at
    each context: which tensors are pending at a cut, their counts and buffers, and the renaming are structural and
    kept; their offsets, the free blocks and the sizes compared are the replay's (periodic.ReplayCheck).
    ``ops``: (ALLOC, slot, buffer, size) | (INPLACE, slot, slot of the tensor whose place it takes) |
    (EXTRA, slot of the parent, parent's size, result's size) | (FREE, slot, size) | (WATCH, node position);
    sizes as indices into size_list, each (a, b): a + b·m, asked at the first replay (a walk asked at one context
    only pays nothing for them)."""

    def __init__(self, trace: list, alignments: list[int], size_of: Callable[[Tensor, int], tuple[int, int]]
                 ) -> None:
        self.trace: list | None = trace       # compiled into ops at the first replay (most walks are asked once)
        self.alignments = alignments
        self.size_later = size_of     # the sizes, as (a, b), asked once each (the cut checks' into self.sizes)
        self.sizes: dict[tuple[int, int], tuple[int, int]] = {}      # (id(tensor), buffer) → (a, b)
        self.ops: list[tuple] = []
        self.check: CutCheck | None = None
        self.pending: dict[int, list[tuple]] = {}
        self.sized: list[tuple[Tensor, int]] = []      # the ops' sizes: each (tensor, buffer) once
        self.size_list: list[tuple[int, int]] = []     # their (a, b)
        self.n_slots = 0

    def _compile(self, trace: list) -> None:
        slots: dict[int, int] = {}
        index: dict[tuple[int, int], int] = {}

        def slot(t: Tensor) -> int:
            return slots.setdefault(id(t), len(slots))

        def size(t: Tensor, b: int) -> int:
            k = (id(t), b)
            i = index.get(k)
            if i is None:
                i = index[k] = len(self.sized)
                self.sized.append((t, b))
            return i
        ops = self.ops
        for ev in trace:
            kind, t = ev[0], ev[1]
            if kind == CUTS:
                self.check = ev[1]
            elif kind == WATCH:
                ops.append((WATCH, ev[1]))
            elif kind == ALLOC:
                ops.append((ALLOC, slot(t), ev[2], size(t, ev[2])))
            elif kind == INPLACE:
                ops.append((INPLACE, slot(t), slot(ev[2])))
            elif kind == EXTRA:
                ops.append((EXTRA, slot(t), size(t, ev[3]), size(ev[2], ev[4])))
            else:
                ops.append((FREE, slot(t), size(t, ev[2])))
        # at each watched position, the pending tensors with their slots (CutCheck's snapshot but the offsets)
        if self.check is not None:
            for i, (snap, _) in self.check.seen.items():
                self.pending[i] = [(t, slot(t), allocated, b, nc, nv) for t, allocated, b, _, nc, nv in snap.values()]
            self.check.info = {}        # (the recorded walk's records: not needed again)
        self.n_slots = len(slots)
        self.size_list = [self.size_later(t, b) for t, b in self.sized]

    def replay(self, m: Any, allocator: type[DynAllocator] | None = None) -> list[int]:
        """Each buffer's max size at m (an int, or a symbol with ``allocator`` SymbolicAllocator)."""
        if self.trace is not None:
            self._compile(self.trace)
            self.trace = None
        allocs = [(allocator or DynAllocator)(a) for a in self.alignments]
        off = [0] * self.n_slots
        buf = [0] * self.n_slots
        symbolic = not isinstance(m, int)

        def at(ab: tuple[int, int]) -> Any:
            return affine.make(ab[0], ab[1]) if symbolic else ab[0] + ab[1] * m
        sz = [affine.make(a, b) for a, b in self.size_list] if symbolic else [a + b * m for a, b in self.size_list]
        check = None
        if self.check is not None:
            def size_of(t: Tensor, b: int) -> Any:
                k = (id(t), b)
                ab = self.sizes.get(k)
                if ab is None:
                    ab = self.sizes[k] = self.size_later(t, b)
                return at(ab)
            check = ReplayCheck(self.check, self.pending, off, allocs, size_of)
        for op in self.ops:
            kind = op[0]
            if kind == FREE:
                s = op[1]
                allocs[buf[s]].free(off[s], sz[op[2]])
            elif kind == ALLOC:
                s, b = op[1], op[2]
                buf[s] = b
                off[s] = allocs[b].alloc(sz[op[3]])
            elif kind == INPLACE:
                s, p = op[1], op[2]
                buf[s], off[s] = buf[p], off[p]
            elif kind == EXTRA:
                p = op[1]
                dyn = allocs[buf[p]]
                psize, nsize = _align(sz[op[2]], dyn.alignment), _align(sz[op[3]], dyn.alignment)
                if psize > nsize:
                    dyn.free(off[p] + nsize, psize - nsize)
            else:
                assert check is not None
                check.at(op[1])
        return [a.max_size for a in allocs]


class _Info:
    """ggml-alloc.c hash_node: a tensor's counts and place (a slotted class: one per tensor per walk)."""

    __slots__ = ("n_children", "n_views", "buffer_id", "offset", "allocated")

    def __init__(self) -> None:
        self.n_children = 0
        self.n_views = 0
        self.buffer_id = 0
        self.offset = 0
        self.allocated = False


@dataclass
class Buffer:
    """One buffer type of the graph allocator: its alignment and how it sizes a tensor
    (ggml_backend_buft_get_alloc_size; ggml_nbytes unless the backend pads)."""

    alignment: int = CPU_ALIGNMENT
    alloc_size: Callable[[Tensor], int] = field(default=lambda t: t.nbytes())


def allocate(graph: Graph, buffers: list[Buffer], node_buffer: Callable[[int, Tensor], int] | None = None,
             leaf_buffer: Callable[[int, Tensor], int] | None = None,
             nodes: list[Tensor] | None = None, leafs: list[Tensor] | None = None,
             cuts: Sequence[tuple[Tensor, Tensor, Tensor]] = (), trace: list | None = None) -> list[int]:
    """ggml-alloc.c ggml_gallocr_alloc_graph_impl: the size each buffer needs for this graph (max offset).
    ``cuts``: where a reduced graph left out repeated layers (periodic.py), checked on the way (NotRepeated).
    ``trace``, given, receives what the walk did to the dynamic allocators, in order (Program)."""
    nodes = graph.nodes if nodes is None else nodes
    leafs = graph.leafs if leafs is None else leafs
    # (a walk with sizes that are symbols, affine.py: the best fit narrows the symbol's interval)
    allocator = SymbolicAllocator if affine.walking() else DynAllocator
    allocs = [allocator(b.alignment) for b in buffers]
    info: dict[int, _Info] = {}
    nb_of = node_buffer or (lambda i, t: 0)
    lb_of = leaf_buffer or (lambda i, t: 0)

    def hn(t: Tensor) -> _Info:
        h = info.get(id(t))
        if h is None:
            h = info[id(t)] = _Info()
        return h

    sizes: dict[int, int] = {}
    n_buffers = len(buffers)

    def size_of(t: Tensor, buffer_id: int) -> int:
        # the buffer type's get_alloc_size, asked once per tensor (sources do not change while allocating)
        k = id(t) * n_buffers + buffer_id
        got = sizes.get(k)
        if got is None:
            got = sizes[k] = buffers[buffer_id].alloc_size(t)
        return got

    def allocate_node(t: Tensor, buffer_id: int) -> None:
        h = hn(t)
        if t.external or h.allocated or t.view_src is not None:
            return
        h.allocated = True
        if t.op in INPLACE_OPS:
            for p in t.src:
                if p is None or not hn(p).allocated:          # external or not ours
                    continue
                if p.flags & FLAG_OUTPUT or (p.view_src is not None and p.view_src.flags & FLAG_OUTPUT):
                    continue
                if p.type != t.type or p.ne != t.ne or p.nb != t.nb:     # ggml_are_same_layout
                    continue
                ph = hn(p)
                if ph.n_children == 1 and ph.n_views == 0:
                    if p.is_view:
                        vs = p.view_src
                        assert vs is not None
                        vh = hn(vs)
                        if vh.n_views == 1 and vh.n_children == 0 and p.view_offs == 0:
                            h.buffer_id, h.offset = ph.buffer_id, ph.offset
                            ph.allocated = False
                            vh.allocated = False
                            if trace is not None:
                                trace.append((INPLACE, t, p))
                            _free_extra(t, vs, vh)
                            return
                    else:
                        h.buffer_id, h.offset = ph.buffer_id, ph.offset
                        ph.allocated = False
                        if trace is not None:
                            trace.append((INPLACE, t, p))
                        _free_extra(t, p, ph)
                        return
        h.buffer_id = buffer_id
        h.offset = allocs[buffer_id].alloc(size_of(t, buffer_id))
        if trace is not None:
            trace.append((ALLOC, t, buffer_id))

    def _free_extra(t: Tensor, parent: Tensor, ph: _Info) -> None:
        # ggml_gallocr_free_extra_space: a smaller in-place result gives back the parent's tail
        a = allocs[ph.buffer_id].alignment
        psize = _align(size_of(parent, ph.buffer_id), a)
        nsize = _align(size_of(t, hn(t).buffer_id), a)
        if trace is not None:
            trace.append((EXTRA, parent, t, ph.buffer_id, hn(t).buffer_id))
        if psize > nsize:
            allocs[ph.buffer_id].free(ph.offset + nsize, psize - nsize)

    def free_node(t: Tensor) -> None:
        if t.flags & FLAG_OUTPUT:
            return
        h = hn(t)
        allocs[h.buffer_id].free(h.offset, size_of(t, h.buffer_id))
        if trace is not None:
            trace.append((FREE, t, h.buffer_id))
        h.allocated = False

    # a view's placement is its root's: gallocr reads hash values of view roots, which share our ids
    for i, leaf in enumerate(leafs):
        allocate_node(leaf, lb_of(i, leaf))
    for i, node in enumerate(nodes):
        if node.is_view and node.op != "NONE":
            assert node.view_src is not None
            hn(node.view_src).n_views += 1
        if node.flags & FLAG_INPUT:
            allocate_node(node, nb_of(i, node))
        for s in node.src:
            if s is None:
                continue
            hn(s).n_children += 1
            if s.flags & FLAG_INPUT:
                allocate_node(s, nb_of(i, node))
    # the second pass; on a reduced graph, periodic.py checks at each cut that the walk's state repeats
    check = CutCheck(nodes, cuts, leafs, info, allocs, nb_of, size_of) if cuts else None
    watch = check.watch if check is not None else frozenset()
    if trace is not None and check is not None:
        trace.append((CUTS, check))
    # (every source has its record from the first pass; allocate_node is entered only where it would not return
    # at once: a tensor of the graph's own, not a view, not yet allocated)
    for i, node in enumerate(nodes):
        if i in watch:
            assert check is not None
            check.at(i)
            if trace is not None:
                trace.append((WATCH, i))
        b = nb_of(i, node)
        for p in node.src:
            if p is not None and not p.external and p.view_src is None and not info[id(p)].allocated:
                allocate_node(p, b)
        allocate_node(node, b)
        for p in node.src:
            if p is None:
                continue
            ph = info[id(p)]
            ph.n_children -= 1
            if ph.n_children == 0 and ph.n_views == 0:
                if p.view_src is not None:
                    vs = p.view_src
                    assert vs is not None
                    vh = hn(vs)
                    vh.n_views -= 1
                    if vh.n_views == 0 and vh.n_children == 0 and vh.allocated:
                        free_node(vs)
                elif ph.allocated:
                    free_node(p)
    return [a.max_size for a in allocs]
