"""ggml tensors as the allocator sees them: types and their block sizes (the one table, quant/ggml_types.py),
shapes, strides, views, flags (ggml/include/ggml.h, ggml/src/ggml.c)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...quant.ggml_types import QUANT_SIZES

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
    src: tuple[Tensor | None, ...] = ()
    view_src: Tensor | None = None
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

    # kept once computed (type, shape and strides never change after creation); read as attributes, so an
    # instance's attributes stay inline (no dict object per tensor for the garbage collector to walk)
    _nbytes: int | None = field(default=None, init=False, repr=False)
    _layout: tuple | None = field(default=None, init=False, repr=False)     # periodic._layout

    def nbytes(self) -> int:
        # ggml.c ggml_nbytes
        got = self._nbytes
        if got is None:
            got = self._nbytes_now()
            if type(got) is int:      # (a size with the context as a symbol, affine.py, is asked in each walk:
                self._nbytes = got    # the walk's comparisons belong to that walk)
        return got

    def _nbytes_now(self) -> int:
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


# Shapes and strides are shared: a graph has few distinct ones and every tensor of a cached graph outlives the
# simulation, so one tuple per distinct value (instead of two per tensor) is less for the garbage collector to
# walk each time it meets a newly built graph (gcpause.py).
_TUPLES: dict[tuple, tuple] = {}
MAX_TUPLES = 1 << 16


def shared(t: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The one stored tuple equal to t."""
    got = _TUPLES.get(t)
    if got is None:
        if len(_TUPLES) >= MAX_TUPLES:
            _TUPLES.clear()
        got = _TUPLES[t] = t
    return got


def _strides(t: str, ne: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    blck, size = TYPES[t]
    nb0 = size
    nb1 = nb0 * (ne[0] // blck)
    nb2 = nb1 * ne[1]
    nb3 = nb2 * ne[2]
    return shared((nb0, nb1, nb2, nb3))


def _ne4(ne: Iterable[int]) -> tuple[int, int, int, int]:
    v = list(ne) + [1] * 4
    return shared((v[0], v[1], v[2], v[3]))
