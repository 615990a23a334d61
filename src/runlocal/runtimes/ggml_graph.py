"""A small model of the ggml graph llama.cpp reserves, and of ggml-alloc's allocator, to size compute buffers.

llama.cpp sizes each backend's compute buffer by building the worst-case graph and letting ggml-alloc's
graph allocator (ggml/src/ggml-alloc.c, gallocr) place every intermediate tensor in one virtual buffer:
the buffer is the highest offset ever used. That offset depends on the order of the nodes, which tensors
are reused in place, and on the holes the best-fit allocator leaves below big tensors, so no closed formula
tracks it on every architecture. Here the graph is traced again in Python (shapes, strides, ops and sources
only; no data) in the node order ggml's graph builder produces, and run through a re-implementation of the
allocator. On the CUDA build the graph first goes through ggml-backend's scheduler (ggml_backend_sched_split_graph:
which backend runs each node, op offload of big ops on CPU weights, the splits and the copies of their inputs),
for any number of offloaded layers, one GPU or several (--split-mode layer, with pipeline parallelism's copies),
weights placed per tensor (-ot, --n-cpu-moe), and the allocator places the result in one buffer per GPU (CUDA0 …)
and CUDA_Host.
Everything follows the llama.cpp commit llama-cpp-python 0.3.36 vendors (0c1e57098); the functions each part
follows are named where they are modelled. Architectures: BUILDERS. Pure computation, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..quant.ggml_types import QUANT_SIZES

# --- tensor types --------------------------------------------------------------------------------
# (block size in elements, bytes per block), ggml/src/ggml.c type_traits: the one table, quant/ggml_types.py
TYPES: dict[str, tuple[int, int]] = {t.name.lower(): size for t, size in QUANT_SIZES.items()}

# ggml-alloc.c ggml_op_can_inplace: ops whose output may take over their parent's memory
INPLACE_OPS = frozenset({
    "FILL", "SCALE", "DIAG_MASK_ZERO", "DIAG_MASK_INF", "ADD", "ADD_ID", "ADD1", "SUB", "MUL", "DIV", "SQR",
    "SQRT", "LOG", "UNARY", "ROPE", "ROPE_BACK", "SILU_BACK", "RMS_NORM", "RMS_NORM_BACK", "CLAMP", "SOFT_MAX",
    "SOFT_MAX_BACK",
})
VIEW_OPS = frozenset({"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"})

FLAG_INPUT, FLAG_OUTPUT = 1, 2

CPU_ALIGNMENT = 32     # ggml-impl.h TENSOR_ALIGNMENT (ggml-backend.cpp ggml_backend_cpu_buffer_type_get_alignment)
CUDA_ALIGNMENT = 128   # ggml-cuda.cu ggml_backend_cuda_buffer_type_get_alignment


def type_size(t: str) -> int:
    return TYPES[t][1]


def row_size(t: str, n: int) -> int:
    blck, size = TYPES[t]
    return size * n // blck


@dataclass(eq=False)
class Tensor:
    """A ggml_tensor as far as allocation cares: shape ne[4], strides nb[4], op, sources, view source, flags.
    ``external``: data lives in a buffer of its own (weights, the KV cache), never allocated by the graph."""

    name: str
    type: str
    ne: tuple[int, int, int, int]
    nb: tuple[int, int, int, int]
    op: str = "NONE"
    src: tuple["Tensor | None", ...] = ()
    view_src: "Tensor | None" = None
    view_offs: int = 0
    flags: int = 0
    external: bool = False
    backend: int | None = None      # a backend forced by the graph builder (ggml_backend_sched_set_tensor_backend)
    weight: bool = False            # in a model buffer (GGML_BACKEND_BUFFER_USAGE_WEIGHTS), not the KV / RS cache
    layer: int | None = None        # external tensors: the layer whose device holds them (-1 the input layer,
    #                                 n_layer the output layer); nodes: the layer of a build_norm "norm"

    @property
    def is_view(self) -> bool:
        return self.view_src is not None

    def nbytes(self) -> int:
        # ggml.c ggml_nbytes
        blck, size = TYPES[self.type]
        if any(n <= 0 for n in self.ne):
            return 0
        if blck == 1:
            return size + sum((self.ne[i] - 1) * self.nb[i] for i in range(4))
        return self.ne[0] * self.nb[0] // blck + sum((self.ne[i] - 1) * self.nb[i] for i in range(1, 4))

    def nelements(self) -> int:
        return self.ne[0] * self.ne[1] * self.ne[2] * self.ne[3]

    def is_contiguous(self) -> bool:
        return self.nb == _strides(self.type, self.ne)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.op}, {self.type}, {list(self.ne)})"


def _strides(t: str, ne: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    blck, size = TYPES[t]
    nb0 = size
    nb1 = nb0 * (ne[0] // blck)
    nb2 = nb1 * ne[1]
    nb3 = nb2 * ne[2]
    return (nb0, nb1, nb2, nb3)


def _ne4(ne: Iterable[int]) -> tuple[int, int, int, int]:
    v = list(ne) + [1] * 4
    return (v[0], v[1], v[2], v[3])


class Graph:
    """A ggml_cgraph being built: ggml's ops as methods, and build_forward_expand's depth-first node order
    (ggml.c ggml_visit_parents_graph: sources first, left to right; op NONE → leaf, else node)."""

    def __init__(self) -> None:
        self.nodes: list[Tensor] = []
        self.leafs: list[Tensor] = []
        self._visited: set[int] = set()
        self._n = 0

    # --- graph ------------------------------------------------------------------------------
    def expand(self, t: Tensor) -> Tensor:
        stack: list[tuple[Tensor, int]] = [(t, 0)]
        if id(t) in self._visited:
            return t
        self._visited.add(id(t))
        while stack:
            node, i = stack.pop()
            if i < len(node.src):
                stack.append((node, i + 1))
                s = node.src[i]
                if s is not None and id(s) not in self._visited:
                    self._visited.add(id(s))
                    stack.append((s, 0))
                continue
            (self.leafs if node.op == "NONE" else self.nodes).append(node)
        return t

    # --- tensor creation --------------------------------------------------------------------
    def _name(self, name: str | None) -> str:
        self._n += 1
        return name or f"t{self._n}"

    def new(self, type_: str, ne: Iterable[int], op: str = "NONE", src: tuple[Tensor | None, ...] = (),
            name: str | None = None, flags: int = 0) -> Tensor:
        n4 = _ne4(ne)
        return Tensor(self._name(name), type_, n4, _strides(type_, n4), op, src, flags=flags)

    def input(self, type_: str, ne: Iterable[int], name: str) -> Tensor:
        """ggml_new_tensor + ggml_set_input: a graph input the allocator places first."""
        return self.new(type_, ne, name=name, flags=FLAG_INPUT)

    def weight(self, type_: str, ne: Iterable[int], name: str, layer: int | None = None,
               is_weight: bool = False) -> Tensor:
        """A tensor with data of its own: a model weight (is_weight) or a cache, held by layer's device."""
        t = self.new(type_, ne, name=name)
        t.external = True
        t.weight = is_weight
        t.layer = layer
        return t

    def _view(self, a: Tensor, ne: Iterable[int], nb: tuple[int, int, int, int], offs: int, op: str,
              name: str | None = None) -> Tensor:
        # ggml.c ggml_new_tensor_impl: a view of a view points at the root tensor
        root, base = (a.view_src, a.view_offs) if a.view_src is not None else (a, 0)
        return Tensor(self._name(name), a.type, _ne4(ne), nb, op, (a,), view_src=root, view_offs=base + offs,
                      external=a.external)

    def dup(self, a: Tensor, op: str, src: tuple[Tensor | None, ...], type_: str | None = None,
            name: str | None = None) -> Tensor:
        """ggml_dup_tensor: a new contiguous tensor of a's shape."""
        return self.new(type_ or a.type, a.ne, op, src, name)

    # --- views --------------------------------------------------------------------------------
    def view(self, a: Tensor, ne: Iterable[int], nb: Iterable[int] = (), offs: int = 0, name: str | None = None) -> Tensor:
        n4 = _ne4(ne)
        given = list(nb)
        full = list(_strides(a.type, n4))
        # ggml_view_2d/3d/4d: nb[1..] as given, nb[0] the type size, the rest follow contiguously
        for i, v in enumerate(given):
            full[i + 1] = v
        for i in range(len(given) + 1, 4):
            full[i] = full[i - 1] * n4[i - 1]
        return self._view(a, n4, (full[0], full[1], full[2], full[3]), offs, "VIEW", name)

    def reshape(self, a: Tensor, *ne: int, name: str | None = None) -> Tensor:
        n4 = _ne4(ne)
        return self._view(a, n4, _strides(a.type, n4), 0, "RESHAPE", name)

    def permute(self, a: Tensor, *axes: int, name: str | None = None) -> Tensor:
        ax = list(axes) + [3] * (4 - len(axes))
        ne, nb = [0] * 4, [0] * 4
        for i in range(4):
            ne[ax[i]] = a.ne[i]
            nb[ax[i]] = a.nb[i]
        return self._view(a, ne, (nb[0], nb[1], nb[2], nb[3]), 0, "PERMUTE", name)

    def transpose(self, a: Tensor, name: str | None = None) -> Tensor:
        ne = (a.ne[1], a.ne[0], a.ne[2], a.ne[3])
        nb = (a.nb[1], a.nb[0], a.nb[2], a.nb[3])
        return self._view(a, ne, nb, 0, "TRANSPOSE", name)

    # --- ops ------------------------------------------------------------------------------------
    def cont(self, a: Tensor, *ne: int, name: str | None = None) -> Tensor:
        return self.new(a.type, ne or a.ne, "CONT", (a,), name)

    def cpy(self, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
        t = self._view(b, b.ne, b.nb, 0, "CPY", name)
        t.src = (a, b)
        return t

    def mul_mat(self, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
        return self.new("f32", (a.ne[1], b.ne[1], b.ne[2], b.ne[3]), "MUL_MAT", (a, b), name)

    def mul_mat_id(self, a: Tensor, b: Tensor, ids: Tensor, name: str | None = None) -> Tensor:
        return self.new("f32", (a.ne[1], ids.ne[0], b.ne[2], 1), "MUL_MAT_ID", (a, b, ids), name)

    def get_rows(self, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
        type_ = "i32" if a.type == "i32" else "f32"
        return self.new(type_, (a.ne[0], b.ne[0], b.ne[1], b.ne[2]), "GET_ROWS", (a, b), name)

    def set_rows(self, a: Tensor, b: Tensor, c: Tensor, name: str | None = None) -> Tensor:
        t = self._view(a, a.ne, a.nb, 0, "SET_ROWS", name)
        t.src = (b, c, a)    # ggml.c ggml_set_rows: src order b, c, a
        return t

    def unary(self, op: str, a: Tensor, *others: Tensor | None, name: str | None = None) -> Tensor:
        """Element-wise ops that keep a's shape (ADD, MUL, SCALE, RMS_NORM, UNARY, ROPE, SOFT_MAX …)."""
        return self.dup(a, op, (a, *others), name=name)

    def add(self, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
        return self.unary("ADD", a, b, name=name)

    def mul(self, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
        return self.unary("MUL", a, b, name=name)

    def rms_norm(self, a: Tensor, name: str | None = None) -> Tensor:
        return self.unary("RMS_NORM", a, name=name)

    def norm(self, a: Tensor, name: str | None = None) -> Tensor:
        return self.unary("NORM", a, name=name)

    def rope(self, a: Tensor, pos: Tensor, factors: Tensor | None = None, name: str | None = None) -> Tensor:
        return self.unary("ROPE", a, pos, factors, name=name) if factors is not None else \
            self.unary("ROPE", a, pos, name=name)

    def soft_max(self, a: Tensor, mask: Tensor | None = None, sinks: Tensor | None = None,
                 name: str | None = None) -> Tensor:
        srcs: tuple[Tensor | None, ...] = (a, mask, sinks) if sinks is not None else ((a, mask) if mask is not None else (a,))
        return self.dup(a, "SOFT_MAX", srcs, name=name)

    def glu_split(self, a: Tensor, b: Tensor, name: str | None = None) -> Tensor:
        # ggml.c ggml_glu_impl with a second operand: a's shape; GLU is not an in-place op
        return self.new(a.type, a.ne, "GLU", (a, b), name)

    def glu(self, a: Tensor, name: str | None = None) -> Tensor:
        return self.new(a.type, (a.ne[0] // 2, a.ne[1], a.ne[2], a.ne[3]), "GLU", (a,), name)

    def flash_attn_ext(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, sinks: Tensor | None = None,
                       name: str | None = None) -> Tensor:
        srcs: tuple[Tensor | None, ...] = (q, k, v, mask) + ((sinks,) if sinks is not None else ())
        return self.new("f32", (v.ne[0], q.ne[2], q.ne[1], q.ne[3]), "FLASH_ATTN_EXT", srcs, name)

    def scale_inplace(self, a: Tensor, name: str | None = None) -> Tensor:
        """ggml_scale_inplace: a view of a computed in place."""
        t = self._view(a, a.ne, a.nb, 0, "SCALE", name)
        return t

    def ssm_conv(self, sx: Tensor, c: Tensor, name: str | None = None) -> Tensor:
        return self.new("f32", (c.ne[1], sx.ne[0] - c.ne[0] + 1, sx.ne[2]), "SSM_CONV", (sx, c), name)

    def ssm_scan(self, s: Tensor, x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor, ids: Tensor,
                 K: int = 1, name: str | None = None) -> Tensor:
        # ggml.c ggml_ssm_scan: y and the final states, concatenated in one 1-D f32 tensor
        n = x.nelements() + K * s.ne[0] * s.ne[1] * s.ne[2] * ids.ne[0]
        return self.new("f32", (n,), "SSM_SCAN", (s, x, dt, A, B, C, ids), name)

    def concat(self, a: Tensor, b: Tensor, dim: int = 0, name: str | None = None) -> Tensor:
        ne = list(a.ne)
        ne[dim] += b.ne[dim]
        return self.new(a.type, ne, "CONCAT", (a, b), name)

    def argsort_top_k(self, a: Tensor, k: int) -> Tensor:
        s = self.new("i32", a.ne, "ARGSORT", (a,))
        return self.view(s, (k, s.ne[1], s.ne[2], s.ne[3]), (s.nb[1], s.nb[2], s.nb[3]))

    def sum_rows(self, a: Tensor, name: str | None = None) -> Tensor:
        return self.new(a.type, (1, a.ne[1], a.ne[2], a.ne[3]), "SUM_ROWS", (a,), name)


# --- ggml-alloc.c: the dynamic allocator ------------------------------------------------------------

def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


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


@dataclass
class _Info:
    n_children: int = 0
    n_views: int = 0
    buffer_id: int = 0
    offset: int = 0
    allocated: bool = False


@dataclass
class Buffer:
    """One buffer type of the graph allocator: its alignment and how it sizes a tensor
    (ggml_backend_buft_get_alloc_size; ggml_nbytes unless the backend pads)."""

    alignment: int = CPU_ALIGNMENT
    alloc_size: Callable[[Tensor], int] = field(default=lambda t: t.nbytes())


def allocate(graph: Graph, buffers: list[Buffer], node_buffer: Callable[[int, Tensor], int] | None = None,
             leaf_buffer: Callable[[int, Tensor], int] | None = None,
             nodes: list[Tensor] | None = None, leafs: list[Tensor] | None = None) -> list[int]:
    """ggml-alloc.c ggml_gallocr_alloc_graph_impl: the size each buffer needs for this graph (max offset)."""
    nodes = graph.nodes if nodes is None else nodes
    leafs = graph.leafs if leafs is None else leafs
    allocs = [DynAllocator(b.alignment) for b in buffers]
    info: dict[int, _Info] = {}
    nb_of = node_buffer or (lambda i, t: 0)
    lb_of = leaf_buffer or (lambda i, t: 0)

    def hn(t: Tensor) -> _Info:
        h = info.get(id(t))
        if h is None:
            h = info[id(t)] = _Info()
        return h

    def size_of(t: Tensor, buffer_id: int) -> int:
        return buffers[buffer_id].alloc_size(t)

    def allocate_node(t: Tensor, buffer_id: int) -> None:
        h = hn(t)
        if t.external or h.allocated or t.is_view:
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
                            _free_extra(t, vs, vh)
                            return
                    else:
                        h.buffer_id, h.offset = ph.buffer_id, ph.offset
                        ph.allocated = False
                        _free_extra(t, p, ph)
                        return
        h.buffer_id = buffer_id
        h.offset = allocs[buffer_id].alloc(size_of(t, buffer_id))

    def _free_extra(t: Tensor, parent: Tensor, ph: _Info) -> None:
        # ggml_gallocr_free_extra_space: a smaller in-place result gives back the parent's tail
        a = allocs[ph.buffer_id].alignment
        psize = _align(size_of(parent, ph.buffer_id), a)
        nsize = _align(size_of(t, hn(t).buffer_id), a)
        if psize > nsize:
            allocs[ph.buffer_id].free(ph.offset + nsize, psize - nsize)

    def free_node(t: Tensor) -> None:
        if t.flags & FLAG_OUTPUT:
            return
        h = hn(t)
        allocs[h.buffer_id].free(h.offset, size_of(t, h.buffer_id))
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
    for i, node in enumerate(nodes):
        b = nb_of(i, node)
        for p in node.src:
            if p is not None:
                allocate_node(p, b)
        allocate_node(node, b)
        for p in node.src:
            if p is None:
                continue
            ph = hn(p)
            ph.n_children -= 1
            if ph.n_children == 0 and ph.n_views == 0:
                if p.is_view:
                    vs = p.view_src
                    assert vs is not None
                    vh = hn(vs)
                    vh.n_views -= 1
                    if vh.n_views == 0 and vh.n_children == 0 and vh.allocated:
                        free_node(vs)
                elif ph.allocated:
                    free_node(p)
    return [a.max_size for a in allocs]


# --- llama.cpp's decoder graphs ------------------------------------------------------------------------

@dataclass(frozen=True)
class GraphParams:
    """What decides the reserved graph's shapes (src/llama-context.cpp sched_reserve / graph_reserve)."""

    n_kv: int                    # cells one stream's attention spans (kv size per stream)
    flash_attn: bool
    n_stream: int = 1            # KV streams: n_seq_max without a unified cache, else 1
    type_k: str = "f16"
    type_v: str = "f16"
    n_kv_swa: int | None = None  # cells of one stream of the sliding-window cache (iSWA architectures)


def _gguf_type(dtype: str | None) -> str:
    t = (dtype or "f32").lower()
    return t if t in TYPES else "q4_0"


class DecoderGraph:
    """Builds llama.cpp's graph for one ubatch: src/llama-graph.cpp (build_inp_embd, build_attn, build_ffn,
    build_moe_ffn, build_norm) and the architecture's builder in src/models/<arch>.cpp, in their op order."""

    def __init__(self, model, p: GraphParams, n_tokens: int, n_seqs: int, n_outputs: int) -> None:
        self.m = model
        self.p = p
        self.g = Graph()
        self.n_tokens = n_tokens
        self.n_seqs = n_seqs
        self.n_outputs = n_outputs
        self.by_name = {t.name: t for t in model.tensors}
        self._weights: dict[str, Tensor] = {}
        self.n_embd = model.hidden_size
        self.n_head = model.n_heads
        self.inputs: list[Tensor] = []

    # --- weights and inputs ---------------------------------------------------------------------
    def w(self, name: str, layer: int | None = None) -> Tensor | None:
        """The model weight of that GGUF name. Its device follows src/llama-model.cpp load_tensors: blk.N.* on
        layer N's, token_embd on the input layer's (the CPU), the rest on the output layer's. ``layer`` asks for
        a TENSOR_DUPLICATED copy on another layer's device (per-layer rope_freqs, a tied output head)."""
        key = name if layer is None else f"{name}@{layer}"
        t = self._weights.get(key)
        if t is None:
            info = self.by_name.get(name)
            if info is None:
                return None
            if layer is None:
                if name.startswith("blk."):
                    layer = int(name.split(".")[1])
                else:
                    layer = -1 if name == "token_embd.weight" else self.m.n_layers
            t = self.g.weight(_gguf_type(info.dtype), tuple(reversed(info.shape)), name, layer, is_weight=True)
            self._weights[key] = t
        return t

    def lw(self, il: int, name: str) -> Tensor | None:
        return self.w(f"blk.{il}.{name}")

    def inp(self, type_: str, ne: Iterable[int], name: str) -> Tensor:
        t = self.g.input(type_, ne, name)
        self.inputs.append(t)
        return t

    def build_inp_embd(self, scale: bool = False) -> Tensor:
        # llama-graph.cpp build_inp_embd: both the token path (get_rows) and the embeddings input enter the
        # graph (ggml_build_forward_select), so the unused inp_embd input is allocated too
        g = self.g
        tokens = self.inp("i32", (self.n_tokens,), "inp_tokens")
        embd_in = self.inp("f32", (self.n_embd, self.n_tokens), "inp_embd")
        tok = self.w("token_embd.weight")
        assert tok is not None
        cur = g.get_rows(tok, tokens, name="embd")
        g.expand(cur)
        g.expand(embd_in)
        if scale:
            cur = g.unary("SCALE", cur, name="embd_scaled")
        g.expand(cur)
        return cur

    def build_inp_pos(self) -> Tensor:
        return self.inp("i32", (self.n_tokens,), "inp_pos")

    def build_inp_out_ids(self) -> Tensor:
        return self.inp("i32", (self.n_outputs,), "out_ids")

    def norm(self, x: Tensor, w: Tensor | None, b: Tensor | None = None, rms: bool = True,
             il: int = -1) -> Tensor:
        """llama-graph.cpp build_norm; with a weight and il >= 0 the result is named "norm", which
        llama-context.cpp graph_get_cb pins to the layer's device for small batches and full offload."""
        g = self.g
        cur = g.rms_norm(x) if rms else g.norm(x)
        if (w is not None or b is not None) and il >= 0:
            cur.layer = il
        if w is not None:
            cur = g.mul(cur, w)
        if b is not None:
            cur = g.add(cur, b)
        return cur

    # --- attention ------------------------------------------------------------------------------
    def kv_inputs(self, swa: bool = False, k_only: bool = False) -> dict:
        """llama-graph.cpp build_attn_inp_kv(_iswa) / llama-kv-cache.cpp build_input_*: the store indices,
        the KQ mask (f16 with flash attention) and, for a quantized cache, the Hadamard rotation inputs."""
        p = self.p
        n_kv = (p.n_kv_swa or p.n_kv) if swa else p.n_kv
        attn = [a for a in self.m.attention_layers if (a.kind == "sliding") == swa] or self.m.attention_layers
        # build_input_v_idxs: hparams.n_embd_v_gqa_max() spans every layer of the model
        v_gqa_max = max(a.n_kv_heads * a.v_dim for a in self.m.attention_layers)
        n_tokens = self.n_tokens
        suffix = "_swa" if swa else ""
        k_idxs = self.inp("i64", (n_tokens,), f"attn_inp_k_idxs{suffix}")
        v_idxs = None if k_only else \
            self.inp("i64", (n_tokens if p.flash_attn else n_tokens * v_gqa_max,), f"attn_inp_v_idxs{suffix}")
        mask_stream = p.n_stream if p.n_stream > 1 else 1
        mask = self.inp("f16" if p.flash_attn else "f32", (n_kv, n_tokens // mask_stream, 1, mask_stream),
                        f"attn_inp_kq_mask{suffix}")
        if k_only:
            # build_attn_inp_k_impl: no V indices, no rotation inputs
            return {"k_idxs": k_idxs, "mask": mask, "n_kv": n_kv}
        # llama-kv-cache.cpp: attn_rot_k / attn_rot_v for quantized caches whose head size is a multiple of 64
        hk = {a.k_dim for a in attn}
        hv = {a.v_dim for a in attn}
        k_rot = v_rot = None
        if _is_quant(p.type_k) and len(hk) == 1 and next(iter(hk)) % 64 == 0:
            nrot = 64
            while next(iter(hk)) % (nrot * 2) == 0:
                nrot *= 2
            k_rot = self.inp("f32", (nrot, nrot), f"attn_inp_k_rot{suffix}")
        if _is_quant(p.type_v) and len(hv) == 1 and next(iter(hv)) % 64 == 0:
            v_rot = self.inp("f32", (64, 64), f"attn_inp_v_rot{suffix}")
        return {"k_idxs": k_idxs, "v_idxs": v_idxs, "mask": mask, "k_rot": k_rot, "v_rot": v_rot, "n_kv": n_kv}

    def hadamard(self, cur: Tensor, rot: Tensor) -> Tensor:
        # src/llama-impl.h llama_mul_mat_hadamard
        g = self.g
        n = rot.ne[0]
        res = g.reshape(cur, n, cur.nelements() // n) if cur.is_contiguous() else g.cont(cur, n, cur.nelements() // n)
        res = g.mul_mat(rot, res)
        return g.reshape(res, *cur.ne)

    def kv_inputs_iswa(self) -> dict:
        """llama-graph.cpp build_attn_inp_kv_iswa: the base cache's inputs and the sliding-window cache's;
        build_attn picks them by the layer's kind."""
        return {"iswa": True, "full": self.kv_inputs(False), "sliding": self.kv_inputs(True)}

    def attn(self, inp: dict, il: int, q: Tensor, k: Tensor, v: Tensor, wo: Tensor | None, wo_b: Tensor | None,
             sinks: Tensor | None = None, softcap: bool = False) -> Tensor:
        """llama-graph.cpp build_attn (KV cache, or the iSWA pair of caches): store K and V with set_rows,
        attend over the cache's views."""
        g, p = self.g, self.p
        a = self.m.layers[il].attention
        iswa = inp.get("iswa", False)
        if iswa:
            inp = inp["sliding" if a.kind == "sliding" else "full"]
        if inp["k_rot"] is not None:
            q = self.hadamard(q, inp["k_rot"])
            k = self.hadamard(k, inp["k_rot"])
        if inp["v_rot"] is not None:
            v = self.hadamard(v, inp["v_rot"])
        # the non-SWA build_attn expands q, v, k; the iSWA one q, k, v
        for t in ((q, k, v) if iswa else (q, v, k)):
            g.expand(t)
        n_kv, ns = inp["n_kv"], p.n_stream
        k_gqa, v_gqa = a.n_kv_heads * a.k_dim, a.n_kv_heads * a.v_dim
        kc = g.weight(p.type_k, (k_gqa, n_kv, ns), f"cache_k_l{il}", il)
        vc = g.weight(p.type_v, (v_gqa, n_kv, ns), f"cache_v_l{il}", il)
        # llama-kv-cache.cpp cpy_k / cpy_v
        k2 = g.view(k, (k_gqa, k.ne[2]), (k.nb[2],))
        kdst = g.reshape(kc, k_gqa, n_kv * ns) if ns > 1 else kc
        g.expand(g.set_rows(kdst, k2, inp["k_idxs"]))
        v_trans = not p.flash_attn
        if not v_trans:
            v2 = g.view(v, (v_gqa, v.ne[2]), (v.nb[2],))
            vdst = g.reshape(vc, v_gqa, n_kv * ns) if ns > 1 else vc
            g.expand(g.set_rows(vdst, v2, inp["v_idxs"]))
        else:
            v2 = g.reshape(v, v_gqa, v.ne[2]) if row_size(v.type, v_gqa) == v.nb[2] else g.cont(v, v_gqa, v.ne[2])
            vview = g.reshape(vc, 1, vc.nelements())
            v2 = g.reshape(v2, 1, v2.nelements())
            g.expand(g.set_rows(vview, v2, inp["v_idxs"]))
        # get_k / get_v
        kv = g.view(kc, (a.k_dim, a.n_kv_heads, n_kv, ns),
                    (row_size(kc.type, a.k_dim), row_size(kc.type, k_gqa), row_size(kc.type, k_gqa * n_kv)))
        if not v_trans:
            vv = g.view(vc, (a.v_dim, a.n_kv_heads, n_kv, ns),
                        (row_size(vc.type, a.v_dim), row_size(vc.type, v_gqa), row_size(vc.type, v_gqa * n_kv)))
        else:
            vv = g.view(vc, (n_kv, a.n_kv_heads, a.v_dim, ns),
                        (row_size(vc.type, n_kv * a.v_dim), row_size(vc.type, n_kv), row_size(vc.type, n_kv * v_gqa)))
        cur = self.mha(q, kv, vv, inp["mask"], sinks, softcap)
        if inp["v_rot"] is not None:
            cur = self.hadamard(cur, inp["v_rot"])
        if wo is not None:
            cur = g.mul_mat(wo, cur)
        if wo_b is not None:
            cur = g.add(cur, wo_b)
        return cur

    def attn_k_only(self, inp: dict, il: int, q: Tensor, k: Tensor, v: Tensor, wo: Tensor | None,
                    v_mla: Tensor | None) -> Tensor:
        """llama-graph.cpp build_attn with a K-only cache (llm_graph_input_attn_k; MLA): K is stored, V is a
        view of the cached K's first v.ne[0] columns, and v_mla decompresses the result per head."""
        g, p = self.g, self.p
        a = self.m.layers[il].attention
        g.expand(q)
        g.expand(v)
        g.expand(k)
        n_kv, ns = inp["n_kv"], p.n_stream
        k_gqa = a.n_kv_heads * a.k_dim
        kc = g.weight(p.type_k, (k_gqa, n_kv, ns), f"cache_k_l{il}", il)
        k2 = g.view(k, (k_gqa, k.ne[2]), (k.nb[2],))
        kdst = g.reshape(kc, k_gqa, n_kv * ns) if ns > 1 else kc
        g.expand(g.set_rows(kdst, k2, inp["k_idxs"]))
        kv = g.view(kc, (a.k_dim, a.n_kv_heads, n_kv, ns),
                    (row_size(kc.type, a.k_dim), row_size(kc.type, k_gqa), row_size(kc.type, k_gqa * n_kv)))
        vv = g.view(kv, (v.ne[0], kv.ne[1], kv.ne[2], kv.ne[3]), (kv.nb[1], kv.nb[2], kv.nb[3]))
        cur = self.mha(q, kv, vv, inp["mask"], None, False, v_mla)
        if wo is not None:
            cur = g.mul_mat(wo, cur)
        return cur

    def mha(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, sinks: Tensor | None, softcap: bool,
            v_mla: Tensor | None = None) -> Tensor:
        """llama-graph.cpp build_attn_mha."""
        g, p = self.g, self.p
        v_trans = v.nb[1] > v.nb[2]
        ns = k.ne[3]
        q = g.view(q, (q.ne[0], q.ne[1], q.ne[2] // ns, ns), (q.nb[1], q.nb[2], q.nb[2] * (q.ne[2] // ns)))
        q = g.permute(q, 0, 2, 1, 3)
        k = g.permute(k, 0, 2, 1, 3)
        v = g.permute(v, 0, 2, 1, 3)
        if p.flash_attn:
            if v_trans:
                v = g.transpose(v)
            cur = g.flash_attn_ext(q, k, v, mask, sinks)
            if v_mla is not None:
                cur = g.permute(cur, 0, 2, 1, 3)
                cur = g.mul_mat(v_mla, cur)
                cur = g.permute(cur, 0, 2, 1, 3)
                cur = g.cont(cur)
            cur = g.reshape(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        else:
            kq = g.mul_mat(k, q, name="kq")
            if softcap:
                kq = g.unary("SCALE", kq)
                kq = g.unary("UNARY", kq)
                kq = g.unary("SCALE", kq)
            kq = g.soft_max(kq, mask, sinks)
            if not v_trans:
                v = g.cont(g.transpose(v))
            kqv = g.mul_mat(v, kq)
            if v_mla is not None:
                kqv = g.mul_mat(v_mla, kqv)
            cur = g.permute(kqv, 0, 2, 1, 3)
            cur = g.cont(cur, cur.ne[0] * cur.ne[1], cur.ne[2] * cur.ne[3])
        g.expand(cur)
        return cur

    # --- feed-forward -----------------------------------------------------------------------------
    def ffn(self, cur: Tensor, up: Tensor | None, gate: Tensor | None, down: Tensor, par: bool = True,
            act: str = "silu", up_b: Tensor | None = None, down_b: Tensor | None = None) -> Tensor:
        """llama-graph.cpp build_ffn: the parallel-gate path (gate and up, then swiglu/geglu_split) or a fused
        gate_up (LLM_FFN_SWIGLU, one input)."""
        g = self.g
        tmp = g.mul_mat(up, cur) if up is not None else cur
        if up_b is not None:
            tmp = g.add(tmp, up_b)
        if gate is not None:
            x = g.mul_mat(gate, cur if par else tmp)
            x = g.glu_split(x, tmp)
        elif act == "swiglu":
            x = g.glu(tmp)
        else:
            x = g.unary("UNARY", tmp)
        x = g.mul_mat(down, x)
        if down_b is not None:
            x = g.add(x, down_b)
        return x

    def moe(self, cur: Tensor, il: int, n_expert: int, n_used: int, norm_w: bool,
            gating: str = "softmax", gate_inp_b: Tensor | None = None, exp_probs_b: Tensor | None = None,
            w_scale: bool = False, oai: bool = False) -> Tensor:
        """llama-graph.cpp build_moe_ffn: router logits → probs → top-k ids → weights; mul_mat_id for up, gate,
        down over the n_used chosen experts; the weighted experts summed by views and adds."""
        g = self.g
        n_embd, n_tokens = cur.ne[0], cur.ne[1]
        logits = g.mul_mat(self.lw(il, "ffn_gate_inp.weight"), cur, name=f"ffn_moe_logits-{il}")  # type: ignore[arg-type]
        if gate_inp_b is not None:
            logits = g.add(logits, gate_inp_b)
        if gating == "softmax":
            probs = g.soft_max(logits)
        elif gating == "sigmoid":
            probs = g.unary("UNARY", logits)
        else:   # softmax_weight: the weights are soft-maxed after the selection
            probs = logits
        sel = g.add(probs, exp_probs_b) if exp_probs_b is not None else probs
        selected = g.argsort_top_k(sel, n_used)
        probs3 = g.reshape(probs, 1, n_expert, n_tokens)
        weights = g.get_rows(probs3, selected)
        if gating == "softmax_weight":
            weights = g.reshape(weights, n_used, n_tokens)
            weights = g.soft_max(weights)
            weights = g.reshape(weights, 1, n_used, n_tokens)
        if norm_w:
            weights = g.reshape(weights, n_used, n_tokens)
            wsum = g.sum_rows(weights)
            wsum = g.unary("CLAMP", wsum)
            weights = g.new(weights.type, weights.ne, "DIV", (weights, wsum))
            weights = g.reshape(weights, 1, n_used, n_tokens)
        if w_scale:
            weights = g.unary("SCALE", weights)
        g.expand(weights)
        cur3 = g.reshape(cur, n_embd, 1, n_tokens)
        up = g.mul_mat_id(self.lw(il, "ffn_up_exps.weight"), cur3, selected)  # type: ignore[arg-type]
        ub = self.lw(il, "ffn_up_exps.bias")
        if ub is not None:
            up = g.new(up.type, up.ne, "ADD_ID", (up, ub, selected))
        gate_w = self.lw(il, "ffn_gate_exps.weight")
        x = g.mul_mat_id(gate_w, cur3, selected) if gate_w is not None else up
        gb = self.lw(il, "ffn_gate_exps.bias")
        if gb is not None:
            x = g.new(x.type, x.ne, "ADD_ID", (x, gb, selected))
        x = g.glu_split(x, up) if gate_w is not None else g.unary("UNARY", x)
        experts = g.mul_mat_id(self.lw(il, "ffn_down_exps.weight"), x, selected)  # type: ignore[arg-type]
        db = self.lw(il, "ffn_down_exps.bias")
        if db is not None:
            experts = g.new(experts.type, experts.ne, "ADD_ID", (experts, db, selected))
        experts = g.mul(experts, weights)
        g.expand(experts)
        views = []
        for i in range(n_used):
            v = g.view(experts, (n_embd, n_tokens), (experts.nb[2],), i * experts.nb[1])
            g.expand(v)
            views.append(v)
        out = views[0]
        for v in views[1:]:
            out = g.add(out, v)
            g.expand(out)
        if n_used == 1:
            out = g.cont(out)
        return out

    # --- output -----------------------------------------------------------------------------------
    def output(self, cur: Tensor, norm_b: Tensor | None = None, softcap: bool = False) -> None:
        """The final norm (res->t_embd) and the LM head (res->t_logits), both graph outputs
        (llama-graph.cpp llm_graph_result::set_outputs)."""
        g = self.g
        cur = self.norm(cur, self.w("output_norm.weight"), norm_b)
        cur.flags |= FLAG_OUTPUT
        head = self.w("output.weight") or self.w("token_embd.weight", self.m.n_layers)
        assert head is not None
        cur = g.mul_mat(head, cur, name="result_output")
        if softcap:
            cur = g.unary("SCALE", cur)
            cur = g.unary("UNARY", cur)
            cur = g.unary("SCALE", cur)
        cur.flags |= FLAG_OUTPUT
        g.expand(cur)


def _is_quant(t: str) -> bool:
    return TYPES[t][0] > 1


def _qkv(b: DecoderGraph, il: int, cur: Tensor, n_head: int, n_head_kv: int, hd_k: int, hd_v: int
         ) -> tuple[Tensor, Tensor, Tensor]:
    """llama-graph.cpp build_qkv: separate projections (+ biases) reshaped to heads, or views of a fused QKV."""
    g = b.g
    n_tokens = cur.ne[1]
    wqkv = b.lw(il, "attn_qkv.weight")
    if wqkv is not None:
        qkv = g.mul_mat(wqkv, cur)
        bias = b.lw(il, "attn_qkv.bias")
        if bias is not None:
            qkv = g.add(qkv, bias)
        eq, ek = hd_k * n_head, hd_k * n_head_kv
        q = g.view(qkv, (hd_k, n_head, n_tokens), (row_size(qkv.type, hd_k), qkv.nb[1]), 0)
        k = g.view(qkv, (hd_k, n_head_kv, n_tokens), (row_size(qkv.type, hd_k), qkv.nb[1]), row_size(qkv.type, eq))
        v = g.view(qkv, (hd_v, n_head_kv, n_tokens), (row_size(qkv.type, hd_v), qkv.nb[1]), row_size(qkv.type, eq + ek))
        return q, k, v
    out = []
    for name, heads, hd in (("q", n_head, hd_k), ("k", n_head_kv, hd_k), ("v", n_head_kv, hd_v)):
        t = g.mul_mat(b.lw(il, f"attn_{name}.weight"), cur, name=f"{name.upper()}cur-{il}")  # type: ignore[arg-type]
        bias = b.lw(il, f"attn_{name}.bias")
        if bias is not None:
            t = g.add(t, bias)
        out.append(t)
    q, k, v = out
    return (g.reshape(q, hd_k, n_head, n_tokens), g.reshape(k, hd_k, n_head_kv, n_tokens),
            g.reshape(v, hd_v, n_head_kv, n_tokens))


def build_llama_like(b: DecoderGraph) -> None:
    """src/models/llama.cpp, qwen3.cpp, qwen3moe.cpp, phi3.cpp: pre-norm attention (optional Q/K norms, rope
    factors, fused QKV) and a dense, fused-gate_up or MoE FFN."""
    g, m = b.g, b.m
    arch = m.family
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    n_layer = m.n_layers
    for il in range(n_layer):
        a = m.layers[il].attention
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), b.lw(il, "attn_norm.bias"), il=il)
        q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
        qn, kn = b.lw(il, "attn_q_norm.weight"), b.lw(il, "attn_k_norm.weight")
        if qn is not None:
            q = b.norm(q, qn, il=il)
        rope_factors = b.w("rope_freqs.weight", il)     # llama-model.cpp: one (duplicated) copy per layer
        q = g.rope(q, pos, rope_factors)
        if kn is not None:
            k = b.norm(k, kn, il=il)
        k = g.rope(k, pos, rope_factors)
        if arch == "phi3":
            q = g.unary("SCALE", q)
        cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inpSA = g.get_rows(inpSA, out_ids)
        ffn_inp = g.add(cur, inpSA)
        cur = b.norm(ffn_inp, b.lw(il, "ffn_norm.weight"), b.lw(il, "ffn_norm.bias"), il=il)
        if b.lw(il, "ffn_gate_inp.weight") is not None:
            cur = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True)
        elif b.lw(il, "ffn_gate.weight") is None:
            cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), None, b.lw(il, "ffn_down.weight"), par=False, act="swiglu")  # type: ignore[arg-type]
        else:
            cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), b.lw(il, "ffn_gate.weight"), b.lw(il, "ffn_down.weight"))  # type: ignore[arg-type]
        cur = g.add(cur, ffn_inp) if arch != "phi3" else g.add(ffn_inp, cur)
        inpL = cur
    b.output(inpL)


def build_gemma(b: DecoderGraph) -> None:
    """src/models/gemma2.cpp, gemma3.cpp: scaled embeddings, iSWA attention (gemma3: Q/K norms; gemma2: logit
    soft-capping in attention and on the output), post-attention and post-FFN norms, a GELU-gated FFN."""
    g, m = b.g, b.m
    gemma2 = m.family == "gemma2"
    inpL = b.build_inp_embd()
    inpL = g.unary("SCALE", inpL, name="inp_scaled")
    pos = b.build_inp_pos()
    iswa = any(a.kind == "sliding" for a in m.attention_layers)
    inp = b.kv_inputs_iswa() if iswa else b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    n_layer = m.n_layers
    for il in range(n_layer):
        a = m.layers[il].attention
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
        if not gemma2:
            q = b.norm(q, b.lw(il, "attn_q_norm.weight"), il=il)
        q = g.rope(q, pos)
        if not gemma2:
            k = b.norm(k, b.lw(il, "attn_k_norm.weight"), il=il)
        k = g.rope(k, pos)
        q = g.unary("SCALE", q)
        # gemma2 sets hparams.attn_soft_cap: build_attn_mha caps KQ (without flash attention)
        cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), None, softcap=gemma2)
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inpL = g.get_rows(inpL, out_ids)
        cur = b.norm(cur, b.lw(il, "post_attention_norm.weight"), il=il)
        sa_out = g.add(cur, inpL)
        cur = b.norm(sa_out, b.lw(il, "ffn_norm.weight"), il=il)
        cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), b.lw(il, "ffn_gate.weight"), b.lw(il, "ffn_down.weight"))  # type: ignore[arg-type]
        cur = b.norm(cur, b.lw(il, "post_ffw_norm.weight"))
        inpL = g.add(cur, sa_out)
    # gemma3: final soft-capping only when the GGUF sets final_logit_softcapping (the converter does not)
    b.output(inpL, softcap=gemma2)


def build_openai_moe(b: DecoderGraph) -> None:
    """src/models/openai-moe.cpp (gpt-oss): iSWA attention with biases and attention sinks, an MoE FFN with
    biased router and experts, the softmax taken over the chosen experts' logits (SOFTMAX_WEIGHT) and the
    swiglu_oai activation. The last layer's output is a graph output (res->t_h_nextn) and the rows of the
    output tokens are picked after the last layer (cparams.embeddings_nextn_masked is false)."""
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    inp = b.kv_inputs_iswa()
    out_ids = b.build_inp_out_ids()
    for il in range(m.n_layers):
        a = m.layers[il].attention
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
        q = g.rope(q, pos)
        k = g.rope(k, pos)
        cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"),
                     sinks=b.lw(il, "attn_sinks.weight"))
        ffn_inp = g.add(cur, inpSA)
        cur = b.norm(ffn_inp, b.lw(il, "post_attention_norm.weight"), il=il)
        cur = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False, gating="softmax_weight",
                    gate_inp_b=b.lw(il, "ffn_gate_inp.bias"))
        inpL = g.add(cur, ffn_inp)
    inpL.flags |= FLAG_OUTPUT       # res->t_h_nextn
    cur = g.get_rows(inpL, out_ids)
    b.output(cur)


def build_deepseek2(b: DecoderGraph) -> None:
    """src/models/deepseek2.cpp with MLA (the GGUF splits wkv_b into attn_k_b / attn_v_b): the absorbed
    queries attend over a K-only latent cache (MQA); dense FFN in the leading layers, then a softmax-gated
    MoE plus shared experts. Q without LoRA (the Lite models' wq) or with it (wq_a, norm, wq_b)."""
    g, m = b.g, b.m
    n_head = b.n_head
    mla = m.layers[0].attention
    n_rot = mla.k_dim - mla.v_dim                         # qk_rope_head_dim
    kv_lora = mla.v_dim
    inpL = b.build_inp_embd()
    pos = b.build_inp_pos()
    inp = b.kv_inputs(k_only=True)
    out_ids = b.build_inp_out_ids()
    n_layer = m.n_layers
    for il in range(n_layer):
        n_tokens = inpL.ne[1]
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        wq = b.lw(il, "attn_q.weight")
        if wq is not None:
            q = g.mul_mat(wq, cur)
        else:
            q = g.mul_mat(b.lw(il, "attn_q_a.weight"), cur)  # type: ignore[arg-type]
            q = b.norm(q, b.lw(il, "attn_q_a_norm.weight"), il=il)
            q = g.mul_mat(b.lw(il, "attn_q_b.weight"), q)  # type: ignore[arg-type]
        hd_k = q.ne[0] // n_head                          # n_embd_head_k_mla
        q = g.reshape(q, hd_k, n_head, n_tokens)
        kv_pe = g.mul_mat(b.lw(il, "attn_kv_a_mqa.weight"), cur)  # type: ignore[arg-type]
        rs = row_size(kv_pe.type, kv_lora + n_rot)
        kv_cmpr = g.view(kv_pe, (kv_lora, n_tokens), (rs,), 0)
        k_pe = g.view(kv_pe, (n_rot, 1, n_tokens), (rs, rs), row_size(kv_pe.type, kv_lora))
        k_pe = g.rope(k_pe, pos)
        kv_cmpr = b.norm(kv_cmpr, b.lw(il, "attn_kv_a_norm.weight"), il=il)
        nope = hd_k - n_rot
        q_nope = g.view(q, (nope, n_head, n_tokens), (q.nb[1], q.nb[2]), 0)
        q_pe = g.view(q, (n_rot, n_head, n_tokens), (q.nb[1], q.nb[2]), row_size(q.type, nope))
        q_pe = g.rope(q_pe, pos)
        q_nope = g.permute(q_nope, 0, 2, 1, 3)
        q_abs = g.mul_mat(b.lw(il, "attn_k_b.weight"), q_nope)  # type: ignore[arg-type]
        q_abs = g.permute(q_abs, 0, 2, 1, 3)
        qcur = g.concat(q_abs, q_pe, 0)
        kv_cmpr = g.reshape(kv_cmpr, kv_lora, 1, n_tokens)
        kcur = g.concat(kv_cmpr, k_pe, 0)
        cur = b.attn_k_only(inp, il, qcur, kcur, kv_cmpr, b.lw(il, "attn_output.weight"), b.lw(il, "attn_v_b.weight"))
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inpSA = g.get_rows(inpSA, out_ids)
        ffn_inp = g.add(cur, inpSA)
        cur = b.norm(ffn_inp, b.lw(il, "ffn_norm.weight"), il=il)
        if b.lw(il, "ffn_gate_inp.weight") is None:
            cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), b.lw(il, "ffn_gate.weight"), b.lw(il, "ffn_down.weight"))  # type: ignore[arg-type]
        else:
            moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=False,
                            exp_probs_b=b.lw(il, "exp_probs_b.bias"))
            shexp = b.ffn(cur, b.lw(il, "ffn_up_shexp.weight"), b.lw(il, "ffn_gate_shexp.weight"),
                          b.lw(il, "ffn_down_shexp.weight"))  # type: ignore[arg-type]
            cur = g.add(moe_out, shexp)
        inpL = g.add(cur, ffn_inp)
    b.output(inpL)


def _rs(b: DecoderGraph, rs: dict, s: Tensor, state_size: int,
        get_rows: Callable[[Tensor, Tensor], Tensor] | None = None) -> Tensor:
    """llama-graph.cpp build_rs for the reserved (full) recurrent memory: rs_head 0, rs_z 0, n_rs = its size."""
    g = b.g
    n_seqs = b.n_seqs
    states = g.reshape(s, state_size, s.ne[1])
    zero = g.view(states, (state_size,), (), 0)
    g.expand(g.scale_inplace(zero))
    out = (get_rows or g.get_rows)(states, rs["main"])
    g.expand(out)
    extra = g.get_rows(states, rs["extra"])
    n_rs = s.ne[1]
    g.expand(g.cpy(extra, g.view(s, (state_size, n_rs - n_seqs), (s.nb[1],), n_seqs * s.nb[1])))
    return out


def _mamba2(b: DecoderGraph, rs: dict, cur: Tensor, il: int) -> Tensor:
    """src/models/mamba-base.cpp build_mamba2_layer (cparams.n_rs_seq 0: one state slot per sequence)."""
    g = b.g
    n_seqs = b.n_seqs
    n_seq_tokens = cur.ne[1] // n_seqs
    conv_w = b.lw(il, "ssm_conv1d.weight")
    in_w = b.lw(il, "ssm_in.weight")
    assert conv_w is not None and in_w is not None
    d_conv, conv_dim = conv_w.ne[0], conv_w.ne[1]
    n_head = b.lw(il, "ssm_dt.bias").ne[0]  # type: ignore[union-attr]
    d_inner = b.lw(il, "ssm_out.weight").ne[0]  # type: ignore[union-attr]
    head_dim = d_inner // n_head
    d_in_proj = in_w.ne[1]
    ng_ds = (conv_dim - d_inner) // 2                    # n_group * d_state
    rec = b.m.layers[il].recurrent
    n_embd_r, n_embd_s = rec.conv_elems, rec.state_elems
    d_state = n_embd_s // d_inner
    n_group = ng_ds // d_state
    mem = max(1, n_seqs)
    r_all = g.weight("f32", (n_embd_r, mem), f"cache_r_l{il}", il)
    s_all = g.weight("f32", (n_embd_s, mem), f"cache_s_l{il}", il)
    conv = _rs(b, rs, r_all, n_embd_r)
    conv = g.reshape(conv, d_conv - 1, conv_dim, n_seqs)
    zx = g.mul_mat(in_w, cur)
    zx = g.reshape(zx, d_in_proj, n_seq_tokens, n_seqs)
    f = 4
    z = g.view(zx, (head_dim, n_head, n_seq_tokens, n_seqs), (head_dim * f, zx.nb[1], zx.nb[2]), 0)
    xBC = g.view(zx, (conv_dim, n_seq_tokens, n_seqs), (zx.nb[1], zx.nb[2]), d_inner * f)
    dt = g.view(zx, (n_head, n_seq_tokens, n_seqs), (zx.nb[1], zx.nb[2]), (2 * d_inner + 2 * ng_ds) * f)
    conv_x = g.concat(conv, g.transpose(xBC), 0)
    row_count = (d_conv - 1) * conv_dim
    last = g.view(conv_x, (d_conv - 1, conv_dim, n_seqs), (conv_x.nb[1], conv_x.nb[2]), n_seq_tokens * conv_x.nb[0])
    g.expand(g.cpy(last, g.view(r_all, (row_count, n_seqs), (r_all.nb[1],), 0)))
    xBC = g.ssm_conv(conv_x, conv_w)
    xBC = g.add(xBC, b.lw(il, "ssm_conv1d.bias"))  # type: ignore[arg-type]
    xBC = g.unary("UNARY", xBC)
    x = g.view(xBC, (head_dim, n_head, n_seq_tokens, n_seqs), (head_dim * f, xBC.nb[1], xBC.nb[2]), 0)
    B = g.view(xBC, (d_state, n_group, n_seq_tokens, n_seqs), (d_state * f, xBC.nb[1], xBC.nb[2]), d_inner * f)
    C = g.view(xBC, (d_state, n_group, n_seq_tokens, n_seqs), (d_state * f, xBC.nb[1], xBC.nb[2]),
               (d_inner + n_group * d_state) * f)
    dt = g.add(g.cont(dt), b.lw(il, "ssm_dt.bias"))  # type: ignore[arg-type]
    A = b.lw(il, "ssm_a")
    assert A is not None

    def ssm_rows(states: Tensor, ids: Tensor) -> Tensor:
        ssm = g.reshape(states, d_state, head_dim, n_head, mem)
        return g.ssm_scan(ssm, x, dt, A, B, C, ids)

    y_ssm = _rs(b, rs, s_all, n_embd_s, ssm_rows)
    D = d_state * d_inner
    yrow = row_size("f32", D)
    g.expand(g.cpy(g.view(y_ssm, (D, n_seqs, 1), (yrow, yrow * n_seqs), x.nelements() * f),
                   g.view(s_all, (D, n_seqs, 1), (s_all.nb[1], mem * s_all.nb[1]), 0)))
    y = g.view(y_ssm, (head_dim, n_head, n_seq_tokens, n_seqs),
               (x.nb[1], n_head * x.nb[1], n_seq_tokens * n_head * x.nb[1]), 0)
    y = g.add(y, g.mul(x, b.lw(il, "ssm_d")))  # type: ignore[arg-type]
    y = g.glu_split(g.cont(z), y)
    norm_w = b.lw(il, "ssm_norm.weight")
    if norm_w is not None:
        y = g.reshape(y, d_inner // n_group, n_group, n_seq_tokens, n_seqs)
        y = b.norm(y, norm_w, il=il)
    y = g.reshape(y, d_inner, n_seq_tokens * n_seqs)
    return g.mul_mat(b.lw(il, "ssm_out.weight"), y)  # type: ignore[arg-type]


def build_granite_hybrid(b: DecoderGraph) -> None:
    """src/models/granite-hybrid.cpp: mamba2 layers (recurrent state) and attention layers, each followed by
    an MoE FFN with shared experts (or a dense FFN). Modelled as the Granite 4.0-H GGUFs are: NoPE (no
    positions input, no rope), and without the embedding / residual / logit multipliers, which only add
    in-place SCALE nodes."""
    g, m = b.g, b.m
    inpL = b.build_inp_embd()
    # build_inp_mem_hybrid: build_rs_inp_impl, then the attention inputs
    mem = max(1, b.n_seqs)
    s_copy = b.inp("i32", (mem,), "rs_s_copy")
    rs = {"main": g.view(s_copy, (b.n_seqs,), (), 0),
          "extra": g.view(s_copy, (mem - b.n_seqs,), (), b.n_seqs * s_copy.nb[0])}
    inp = b.kv_inputs()
    out_ids = b.build_inp_out_ids()
    n_layer = m.n_layers
    for il in range(n_layer):
        layer = m.layers[il]
        inpSA = inpL
        cur = b.norm(inpL, b.lw(il, "attn_norm.weight"), il=il)
        if layer.attention is None:
            cur = _mamba2(b, rs, cur, il)
        else:
            a = layer.attention
            q, k, v = _qkv(b, il, cur, b.n_head, a.n_kv_heads, a.k_dim, a.v_dim)
            cur = b.attn(inp, il, q, k, v, b.lw(il, "attn_output.weight"), b.lw(il, "attn_output.bias"))
        if il == n_layer - 1:
            cur = g.get_rows(cur, out_ids)
            inpSA = g.get_rows(inpSA, out_ids)
        ffn_inp = g.add(cur, inpSA)
        cur = b.norm(ffn_inp, b.lw(il, "ffn_norm.weight"), il=il)
        if b.lw(il, "ffn_gate_inp.weight") is None:
            cur = b.ffn(cur, b.lw(il, "ffn_up.weight"), b.lw(il, "ffn_gate.weight"), b.lw(il, "ffn_down.weight"))  # type: ignore[arg-type]
        else:
            moe_out = b.moe(cur, il, m.n_experts, m.n_experts_active, norm_w=True)
            if b.lw(il, "ffn_up_shexp.weight") is not None:
                shexp = b.ffn(cur, b.lw(il, "ffn_up_shexp.weight"), b.lw(il, "ffn_gate_shexp.weight"),
                              b.lw(il, "ffn_down_shexp.weight"))  # type: ignore[arg-type]
                cur = g.add(moe_out, shexp)
            else:
                cur = moe_out
        inpL = g.add(cur, ffn_inp)
    b.output(inpL)


BUILDERS: dict[str, Callable[[DecoderGraph], None]] = {
    # each checked against every record of measurements/llamacpp (benchmarks/compute_sim.py): CPU, and CUDA with
    # -ngl 0, half and all; other architectures are not modelled
    "llama": build_llama_like, "qwen3": build_llama_like, "qwen3moe": build_llama_like, "phi3": build_llama_like,
    "gemma2": build_gemma, "gemma3": build_gemma, "gpt-oss": build_openai_moe,
    "deepseek2": build_deepseek2, "granitehybrid": build_granite_hybrid,
}


# tensors a builder needs beyond the common ones: deepseek2's MLA graph reads wkv_b split in two, as
# convert_hf_to_gguf writes it since 2025 (an older file's attn_kv_b, or a checkpoint viewed as GGUF, is not built)
REQUIRED_TENSORS = {"deepseek2": "blk.0.attn_k_b.weight"}


def supported(model) -> bool:
    """The architecture has a builder and the tensors carry the GGUF names it reads."""
    names = {t.name for t in model.tensors}
    return (model.family in BUILDERS and "token_embd.weight" in names
            and REQUIRED_TENSORS.get(model.family, "token_embd.weight") in names)


def build_graph(model, p: GraphParams, n_tokens: int, n_seqs: int, n_outputs: int) -> DecoderGraph:
    b = DecoderGraph(model, p, n_tokens, n_seqs, n_outputs)
    BUILDERS[model.family](b)
    return b


def reserve_sizes(model, p: GraphParams, n_ubatch: int, n_seqs: int = 1,
                  buffers: list[Buffer] | None = None) -> list[int]:
    """src/llama-context.cpp sched_reserve: the pp graph (n_ubatch tokens, all of them outputs), the tg graph
    (one token per sequence) and pp again; each buffer keeps its largest size (ggml-alloc.c only grows a buffer)."""
    buffers = buffers or [Buffer()]
    sizes = [0] * len(buffers)
    # graph_reserve rounds n_tokens up to a multiple of n_seqs; the outputs stay min(n_ubatch, n_outputs_max)
    n_tokens = -(-n_ubatch // n_seqs) * n_seqs
    for nt, n_out in ((n_tokens, n_ubatch), (n_seqs, n_seqs)):
        b = build_graph(model, p, nt, n_seqs, n_out)
        for i, s in enumerate(allocate(b.g, buffers)):
            sizes[i] = max(sizes[i], s)
    return sizes


def simulate_compute(model, n_ubatch: int, n_kv: int, flash_attn: bool, *, n_seqs: int = 1, n_stream: int = 1,
                     type_k: str = "f16", type_v: str = "f16", n_kv_swa: int | None = None) -> int:
    """Bytes of llama.cpp's CPU compute buffer ("CPU compute buffer size") for a context: n_ubatch after the
    context's own capping, n_kv the cells one stream holds, n_seqs = n_seq_max, n_stream the KV streams,
    n_kv_swa the cells of the sliding-window cache (gemma2/3, gpt-oss)."""
    p = GraphParams(n_kv=n_kv, flash_attn=flash_attn, n_stream=n_stream, type_k=type_k, type_v=type_v,
                    n_kv_swa=n_kv_swa)
    return reserve_sizes(model, p, n_ubatch, n_seqs)[0]


# --- CUDA: two buffers through ggml_backend_sched ------------------------------------------------------

GPU, HOST = 0, 1      # backend ids as llama.cpp orders them: the GPU first, the CPU (last) backend


def _fattn_needs_f16(fa: Tensor) -> tuple[bool, bool]:
    """ggml-cuda fattn.cu ggml_cuda_get_best_fattn_kernel, as far as the size goes: a prompt batch runs the
    tensor-core kernels (MMA_F16 / TILE), which read K and V as f16; one token per sequence runs the vector
    kernel, which reads a quantized cache directly when it has a case for the head size and the K/V types
    (fattn-vec: head sizes 64, 128, 256, K and V of the same type without GGML_CUDA_FA_ALL_QUANTS)."""
    q, k, v = fa.src[0], fa.src[1], fa.src[2]
    assert q is not None and k is not None and v is not None
    if q.ne[1] > 1:
        return True, True
    fallback = q.ne[0] not in (64, 128, 256) or (k.type != v.type and "f16" not in (k.type, v.type))
    return k.type == "f32" or fallback, v.type == "f32" or fallback


def cuda_alloc_size(t: Tensor) -> int:
    """ggml-cuda.cu ggml_backend_cuda_buffer_type_get_alloc_size: a FLASH_ATTN_EXT result gets room for f16
    copies of a non-f16 K and V (fattn-common.cuh ggml_cuda_flash_attn_ext_get_f16_extra_data, 128-aligned;
    MLA's V, a view of K, shares K's); quantized tensors are padded to whole 512-element rows."""
    size = t.nbytes()
    if t.op == "FLASH_ATTN_EXT":
        k, v = t.src[1], t.src[2]
        assert k is not None and v is not None
        need_k, need_v = _fattn_needs_f16(t)
        end = size
        if need_k and k.type != "f16":
            end = _align(end, 128) + k.nelements() * 2
        v_is_k = v.view_src is not None and (v.view_src is k or (v.view_src is k.view_src and v.view_offs == k.view_offs))
        if need_v and v.type != "f16" and not v_is_k:
            end = _align(end, 128) + v.nelements() * 2
        size = end
    if _is_quant(t.type) and t.ne[0] % 512:
        size += row_size(t.type, 512 - t.ne[0] % 512)
    return size


MOE_REDUCTION_MAX_EXPERTS = 15    # ggml-cuda.cu MOE_WEIGHTED_REDUCTION_MAX_EXPERTS
MAX_SRC = 10                      # ggml.h GGML_MAX_SRC


def _cuda_alloc_deps(nodes: list[Tensor]) -> dict[int, list[Tensor]]:
    """ggml-cuda.cu ggml_backend_cuda_graph_optimize: for the fusions it will run, ggml-cuda asks the scheduler
    to keep tensors alive until a later node (add_alloc_dep), which the scheduler enforces with a dependency
    node after it (ggml-backend.cpp ggml_backend_sched_split_graph). Two MoE fusions matter here:
    - topk-moe (ggml_cuda_topk_moe_fusion): SOFT_MAX → RESHAPE → ARGSORT → VIEW → GET_ROWS [→ RESHAPE, SUM_ROWS,
      CLAMP, DIV, RESHAPE] [→ SCALE]: every node of the chain and its sources live until the node after it;
    - the weighted expert reduction (ggml_cuda_match_moe_weighted_reduction): MUL(experts, weights) → n VIEWs →
      n-1 ADDs: experts and weights live until the last ADD, so the MUL cannot reuse the experts in place.
    Returns id(until) → the tensors to keep."""
    deps: dict[int, list[Tensor]] = {}

    def keep(t: Tensor | None, until: Tensor) -> None:
        if t is None:
            return
        lst = deps.setdefault(id(until), [])
        if not any(x is t for x in lst):
            lst.append(t)

    i, n = 0, len(nodes)
    while i < n:
        node = nodes[i]
        # weighted reduction
        if node.op == "MUL" and node.type == "f32" and node.is_contiguous():
            a, b = node.src[0], node.src[1]
            experts, weights = (a, b) if a is not None and a.ne == node.ne else (b, a)
            n_used = node.ne[1]
            if (experts is not None and weights is not None and experts.ne == node.ne and weights.ne[0] == 1
                    and 2 <= n_used <= MOE_REDUCTION_MAX_EXPERTS and i + 2 * n_used - 1 < n + 1):
                span = nodes[i + 1:i + 2 * n_used]
                n_views = sum(1 for t in span if t.op == "VIEW" and t.view_src is node)
                n_adds = sum(1 for t in span if t.op == "ADD")
                if n_views == n_used and n_adds == n_used - 1 and span and span[-1].op == "ADD":
                    keep(experts, span[-1])
                    keep(weights, span[-1])
                    i += 2 * n_used
                    continue
        # topk-moe with a softmax gate (the common case: qwen3moe, granite, deepseek2 use their own gates)
        if node.op == "SOFT_MAX" and i + 4 < n:
            ops = [t.op for t in nodes[i:i + 5]]
            if ops == ["SOFT_MAX", "RESHAPE", "ARGSORT", "VIEW", "GET_ROWS"]:
                j = i + 5
                if [t.op for t in nodes[j:j + 5]] == ["RESHAPE", "SUM_ROWS", "CLAMP", "DIV", "RESHAPE"]:
                    j += 5
                if j < n and nodes[j].op == "SCALE":
                    j += 1
                ids = nodes[i + 3]
                n_expert = ids.nb[1] // ids.nb[0]
                if j < n and (n_expert & (n_expert - 1) == 0 and n_expert <= 512 or n_expert in (288, 576)):
                    until = nodes[j]
                    for t in nodes[i:j]:
                        keep(t, until)
                        for s_ in t.src:
                            keep(s_, until)
                    i = j
                    continue
        i += 1
    return deps


OP_OFFLOAD_MIN_BATCH = 32        # ggml-cuda.cu: op_offload_min_batch_size (GGML_OP_OFFLOAD_MIN_BATCH unset)


def _op_batch_size(t: Tensor) -> int:
    """ggml-cuda.cu get_op_batch_size: how many rows an op processes, for ggml_backend_cuda_device_offload_op."""
    if t.op == "GET_ROWS":
        return 0
    if t.op == "MUL_MAT":
        return t.ne[1]
    if t.op in ("MUL_MAT_ID", "ROPE"):
        return t.ne[2]
    return t.ne[1] * t.ne[2] * t.ne[3]


@dataclass
class _Split:
    backend: int
    inputs: list[Tensor] = field(default_factory=list)
    nodes: list[Tensor] = field(default_factory=list)


def _sched_split(g: Graph, layer_dev: Callable[[int], int], pin_norms: bool, *, n_backends: int = 2,
                 weight_dev: Callable[[Tensor], int] | None = None, n_copies: int = 1
                 ) -> tuple[list[Tensor], list[int], list[Tensor], list[int], int]:
    """ggml-backend.cpp ggml_backend_sched_split_graph over n_backends - 1 CUDA GPUs (ids 0 …, in device order)
    and the CPU (the last id, computing in CUDA_Host memory), with op offload on. Both kinds are taken to support
    every op of these graphs; a GPU supports only its own buffer type (no host buffer: discrete GPUs), the CPU
    every host buffer. ``layer_dev`` maps a layer to the device holding its weights and caches; ``weight_dev``,
    when given, a model weight to the device of its buffer (tensor overrides: -ot, --n-cpu-moe); ``pin_norms``:
    llama-context.cpp graph_get_cb pins each layer's "norm" to that device (fewer than 32 tokens or full
    offload); ``n_copies``: GGML_SCHED_MAX_COPIES under pipeline parallelism, else 1. Returns graph_copy's nodes
    with their backend ids, its leafs with theirs and the number of splits."""
    nodes, leafs = g.nodes, g.leafs
    host = n_backends - 1
    bid: dict[int, int] = {}

    def get(t: Tensor | None) -> int:
        return -1 if t is None else bid.get(id(t), -1)

    def place(t: Tensor) -> int:
        # the device of an external tensor's buffer: a weight's own (overrides), else its layer's
        if t.weight and weight_dev is not None:
            return weight_dev(t)
        return layer_dev(t.layer)  # type: ignore[arg-type]

    def buf_dev(t: Tensor) -> int | None:
        root = t.view_src if t.view_src is not None else t
        return place(root) if root.external and root.layer is not None else None

    def is_weight(t: Tensor) -> bool:
        return t.weight and t.view_src is None

    def from_cur(t: Tensor) -> int:
        # ggml_backend_sched_backend_id_from_cur
        d = buf_dev(t)
        if d is not None:
            return d
        if t.flags & FLAG_INPUT:
            return host
        if t.op not in ("ROPE", "FLASH_ATTN_EXT"):
            for src in t.src:
                if src is not None and is_weight(src):
                    d = place(src)
                    if d == host and _op_batch_size(t) >= OP_OFFLOAD_MIN_BATCH:
                        # the first backend that wants it, CUDA0, offloads a big op on a host weight
                        # (ggml_backend_offload_op), whichever GPU holds the layer
                        return 0
                    return d
        return -1

    def buffer_supported(t: Tensor, b: int) -> bool:
        # ggml_backend_sched_buffer_supported: where t lives (or will) is b's own buffer type
        d = buf_dev(t)
        if d is None:
            d = get(t)
            if d == -1 and t.view_src is not None:
                d = get(t.view_src)
            if d == -1:
                return False
        return d == b

    # llama-model-loader.cpp create_tensor: a TENSOR_DUPLICATED weight (per-layer rope_freqs, a tied output head)
    # is created once per buffer type, so the layers of one device share one tensor
    canon: dict[tuple[str, int], Tensor] = {}
    for node in nodes:
        if any(src is not None and src.weight for src in node.src):
            node.src = tuple(canon.setdefault((src.name, place(src)), src)
                             if src is not None and src.weight else src for src in node.src)
    # pass 1: pre-allocated tensors, inputs, ops on weights (user assignments first: the pinned norms)
    for leaf in leafs:
        bid[id(leaf)] = from_cur(leaf)
    for node in nodes:
        if pin_norms and node.layer is not None and not node.external:
            bid[id(node)] = layer_dev(node.layer)
        else:
            bid[id(node)] = from_cur(node)
    # pass 2: expand the GPU down and up over unassigned nodes (the CPU does not spread), then any backend
    compute = [n for n in nodes if n.op not in VIEW_OPS]
    for order, gpu_only in ((compute, True), (compute[::-1], True), (compute, False), (compute[::-1], False)):
        cur = -1
        for node in order:
            b = bid[id(node)]
            if b != -1:
                cur = -1 if gpu_only and b == host else b
            elif cur != -1:
                bid[id(node)] = cur
    # pass 3: the nodes still unassigned go where most of their inputs are (no upgrades: the buffer types differ)
    for node in compute:
        if bid[id(node)] == -1:
            best, n_best = -1, -1
            for b in range(n_backends):
                n = sum(1 for src in node.src if src is not None and (get(src) != -1 or get(src.view_src) != -1)
                        and buffer_supported(src, b))
                if n > n_best:
                    best, n_best = b, n
            bid[id(node)] = best
    # pass 4: views follow their source, unassigned sources their consumer
    for node in nodes:
        if node.view_src is not None and bid[id(node)] == -1:
            bid[id(node)] = get(node.view_src)
        for src in node.src:
            if src is not None and get(src) == -1:
                bid[id(src)] = get(src.view_src) if src.view_src is not None else bid[id(node)]
        if bid[id(node)] == -1:
            bid[id(node)] = 0
    # pass 5: splits; a source another backend cannot read gets a copy, an input of the split that needs it first
    splits: list[_Split] = []
    copies: dict[tuple[int, int], list[Tensor]] = {}
    first = next((bid[id(n)] for n in compute), 0)
    split = _Split(first)
    splits.append(split)
    cur = first
    for node in nodes:
        if node.op in VIEW_OPS:
            split.nodes.append(node)
            continue
        b = bid[id(node)]
        need_new = False
        if b == cur and split.inputs:
            # a weight from another backend: a new split lets the previous weight copies be freed
            need_new = any(src is not None and is_weight(src) and get(src) != cur and not buffer_supported(src, cur)
                           for src in node.src)
        if b != cur or need_new:
            split = _Split(b)
            splits.append(split)
            cur = b
        split.nodes.append(node)
        new_src = list(node.src)
        for j, src in enumerate(node.src):
            if src is None:
                continue
            if get(src) != cur and not buffer_supported(src, cur):
                key = (id(src), cur)
                c = copies.get(key)
                if c is None:
                    # ggml_dup_tensor_layout: same shape and strides; with several copies each is flagged
                    # input and output so that ggml-alloc never frees or reuses it
                    flags = FLAG_INPUT | FLAG_OUTPUT if n_copies > 1 else 0
                    c = [Tensor(f"{'CPU' if cur == host else f'CUDA{cur}'}#{src.name}#{k}", src.type, src.ne, src.nb,
                                flags=flags) for k in range(n_copies)]
                    copies[key] = c
                    split.inputs.append(src)
                new_src[j] = c[0]       # sched->cur_copy: 0 when reserving
        node.src = tuple(new_src)
    # pass 6 (pipeline parallelism): n_copies of every graph input, the original as copy 0, all kept
    input_copies: list[tuple[Tensor, int]] = []
    if n_copies > 1:
        for leaf in leafs:
            if not leaf.flags & FLAG_INPUT:
                continue
            b = get(leaf)
            leaf.flags |= FLAG_OUTPUT
            input_copies.append((leaf, b))
            for k in range(1, n_copies):
                input_copies.append((Tensor(f"{leaf.name}#{k}", leaf.type, leaf.ne, leaf.nb,
                                            flags=FLAG_INPUT | FLAG_OUTPUT), b))
    # ggml_backend_graph_optimize per split: the CUDA fusions' allocation dependencies
    deps: dict[int, list[Tensor]] = {}
    for sp in splits:
        if sp.backend != host:
            deps.update(_cuda_alloc_deps(sp.nodes))
    # graph_copy: per split, each input's dependency view and its copy, then the split's nodes (+ dependency nodes)
    out: list[Tensor] = []
    ids: list[int] = []
    for sp in splits:
        for src in sp.inputs:
            out.append(Tensor(f"{src.name} (view)", src.type, src.ne, src.nb, "NONE", (src,),
                              view_src=src.view_src or src))
            ids.append(get(src))
            out.append(copies[(id(src), sp.backend)][0])
            ids.append(sp.backend)
        for n in sp.nodes:
            out.append(n)
            ids.append(bid[id(n)])
            kept = deps.get(id(n), [])
            for k in range(0, len(kept), MAX_SRC):
                first_t = kept[k]
                out.append(Tensor(f"{first_t.name} (view)", first_t.type, first_t.ne, first_t.nb, "NONE",
                                  tuple(kept[k:k + MAX_SRC]), view_src=first_t.view_src or first_t))
                ids.append(sp.backend)
    # graph_copy's leafs: with several copies, the graph inputs' and the split inputs' copies first
    out_leafs = [t for t, _ in input_copies]
    leaf_ids = [b for _, b in input_copies]
    if n_copies > 1:
        for sp in splits:
            for src in sp.inputs:
                out_leafs += copies[(id(src), sp.backend)]
                leaf_ids += [sp.backend] * n_copies
    out_leafs += leafs
    leaf_ids += [bid[id(leaf)] for leaf in leafs]
    return out, ids, out_leafs, leaf_ids, len(splits)


def _layer_devices(n_layer: int, n_gpu_layers: int) -> Callable[[int], int]:
    """src/llama-model.cpp load_tensors (one GPU): the last n_gpu_layers of the n_layer + 1 layers (the output
    layer counts as one) go to the GPU; the input layer (token embeddings) always stays on the CPU."""
    ngl = n_layer + 1 if n_gpu_layers < 0 else n_gpu_layers
    i_gpu_start = max(n_layer + 1 - ngl, 0)

    def dev(il: int) -> int:
        return GPU if 0 <= il and il >= i_gpu_start else HOST
    return dev


PIPELINE_COPIES = 4   # ggml/CMakeLists.txt GGML_SCHED_MAX_COPIES: the scheduler's copies under pipeline parallelism
# common/common.h LLM_FFN_EXPS_REGEX: what --n-cpu-moe N keeps in host memory, for each of the first N layers
FFN_EXPS_REGEX = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"


def n_cpu_moe_overrides(n: int) -> tuple[tuple[str, int | None], ...]:
    """common/arg.cpp --n-cpu-moe N (llm_add_n_cpu_ffn_overrides): one CPU override per layer below N."""
    return tuple((f"blk\\.{i}{FFN_EXPS_REGEX}", None) for i in range(n))


def _weight_devices(layer_dev: Callable[[int], int], overrides: Iterable[tuple[str, int | None]], host: int
                    ) -> Callable[[Tensor], int] | None:
    """src/llama-model-loader.cpp create_tensor: the first override whose pattern std::regex_search-es the
    tensor's name decides its buffer (None: a CPU buffer, on the host; k: GPU k), else its layer's device."""
    import re

    rules = [(re.compile(p), host if d is None else d) for p, d in overrides]
    if not rules:
        return None
    cache: dict[str, int | None] = {}

    def dev(t: Tensor) -> int:
        if t.name not in cache:
            cache[t.name] = next((d for rx, d in rules if rx.search(t.name)), None)
        d = cache[t.name]
        return layer_dev(t.layer) if d is None else d  # type: ignore[arg-type]
    return dev


def simulate_compute_cuda(model, n_ubatch: int, n_kv: int, flash_attn: bool, *, n_gpu_layers: int = -1,
                          n_seqs: int = 1, n_stream: int = 1, type_k: str = "f16", type_v: str = "f16",
                          n_kv_swa: int | None = None, n_splits: list[int] | None = None,
                          layer_gpus: list[int | None] | None = None, n_gpus: int | None = None,
                          overrides: Iterable[tuple[str, int | None]] = (),
                          pipeline: bool | None = None) -> dict[str, int]:
    """Bytes of each "CUDAk compute" and of "CUDA_Host compute". One GPU: n_gpu_layers of the n_layer + 1 layers
    offloaded (< 0: all; 0: none, the GPU still runs the big batches' matrix products). Several GPUs (--split-mode
    layer): ``layer_gpus`` gives the GPU of each layer 0 … n_layer (the last the output layer; None: the host),
    as src/llama-model.cpp load_tensors spreads them by --tensor-split, and ``n_gpus`` how many there are.
    ``overrides``: (regex, device) tensor overrides in order (-ot, then --n-cpu-moe: n_cpu_moe_overrides), device
    None for a CPU buffer. ``pipeline``: pipeline parallelism (default as src/llama-context.cpp decides it:
    several GPUs, every layer offloaded, no tensor overrides), which keeps GGML_SCHED_MAX_COPIES copies of every
    split input and graph input. Modelled: the scheduler's backend assignment, op offload of ops on host weights
    for batches of 32 or more (to CUDA0, whichever GPU holds the layer), its splits with the copies of their
    inputs (weights in host memory, the KV cache of CPU layers, activations crossing devices) in the compute
    buffers, and ggml-alloc over the buffers. ``n_splits``, when given, receives the pp and tg graphs' split
    counts (llama.cpp logs them)."""
    p = GraphParams(n_kv=n_kv, flash_attn=flash_attn, n_stream=n_stream, type_k=type_k, type_v=type_v,
                    n_kv_swa=n_kv_swa)
    n_layer = model.n_layers
    overrides = tuple(overrides)
    if layer_gpus is None:
        n_gpus = 1
        layer_dev = _layer_devices(n_layer, n_gpu_layers)
        full = n_gpu_layers < 0 or n_gpu_layers > n_layer
    else:
        if len(layer_gpus) != n_layer + 1:
            raise ValueError(f"layer_gpus: {len(layer_gpus)} entries for {n_layer} layers + the output layer")
        n_gpus = n_gpus or max((d for d in layer_gpus if d is not None), default=0) + 1
        where = list(layer_gpus)

        def layer_dev(il: int) -> int:
            d = where[il] if 0 <= il <= n_layer else None
            return n_gpus if d is None else d      # type: ignore[return-value]
        full = all(d is not None for d in layer_gpus)
    host = n_gpus
    if pipeline is None:
        pipeline = n_gpus > 1 and full and not overrides
    n_copies = PIPELINE_COPIES if pipeline else 1
    weight_dev = _weight_devices(layer_dev, overrides, host)
    buffers = [Buffer(CUDA_ALIGNMENT, cuda_alloc_size) for _ in range(n_gpus)] + [Buffer(CPU_ALIGNMENT)]
    sizes = [0] * (n_gpus + 1)
    n_tokens = -(-n_ubatch // n_seqs) * n_seqs
    for nt, n_out in ((n_tokens, n_ubatch), (n_seqs, n_seqs)):
        b = build_graph(model, p, nt, n_seqs, n_out)
        nodes, ids, leafs, leaf_ids, ns = _sched_split(b.g, layer_dev, pin_norms=nt < 32 or full,
                                                       n_backends=n_gpus + 1, weight_dev=weight_dev,
                                                       n_copies=n_copies)
        if n_splits is not None:
            n_splits.append(ns)
        got = allocate(b.g, buffers, lambda i, t: ids[i], lambda i, t: leaf_ids[i], nodes=nodes, leafs=leafs)
        sizes = [max(x, y) for x, y in zip(sizes, got)]
    out = {f"CUDA{k} compute": sizes[k] for k in range(n_gpus)}
    out["CUDA_Host compute"] = sizes[host]
    return out
