"""A ggml_cgraph being built: ggml's ops as methods, in build_forward_expand's node order (ggml/src/ggml.c)."""

from __future__ import annotations

from collections.abc import Iterable

from .types import FLAG_INPUT, Tensor, _ne4, _strides, shared


def conv_channels(kernel: Tensor) -> int:
    """A recurrent layer's conv kernel channels: ggml reads them as ne[1] of the GGUF's (K, C) kernel; a checkpoint's
    (C, 1, K) view has them in ne[2] — all but the kernel size either way."""
    return kernel.nelements() // kernel.ne[0]


class Graph:
    """A ggml_cgraph being built: ggml's ops as methods, and build_forward_expand's depth-first node order
    (ggml.c ggml_visit_parents_graph: sources first, left to right; op NONE → leaf, else node)."""

    def __init__(self) -> None:
        self.nodes: list[Tensor] = []
        self.leafs: list[Tensor] = []
        self._visited: set[int] = set()
        self._n = 0
        # where each decoder layer's build began (len(nodes) then): the boundaries at which ggml-alloc's walk may
        # find its state repeating (periodic.py)
        self.layer_marks: dict[int, int] = {}

    def mark_layer(self, il: int) -> None:
        self.layer_marks.setdefault(il, len(self.nodes))

    def layer_start(self, il: int) -> Tensor | None:
        """The first node appended after layer il's mark."""
        m = self.layer_marks.get(il)
        return self.nodes[m] if m is not None and m < len(self.nodes) else None

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
        return Tensor(self._name(name), a.type, _ne4(ne), shared(nb), op, (a,), view_src=root, view_offs=base + offs,
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
        # ggml.c ggml_ssm_conv: (channels = c->ne[1], n_t, n_s)
        return self.new("f32", (conv_channels(c), sx.ne[0] - c.ne[0] + 1, sx.ne[2]), "SSM_CONV", (sx, c), name)

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
