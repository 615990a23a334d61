"""llama-graph.cpp build_rs, shared by the recurrent builders (Mamba-2 in arch.py, the gated delta-net hybrids in
arch_hybrid.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .types import Tensor

if TYPE_CHECKING:
    from .arch import DecoderGraph


def build_rs(b: DecoderGraph, rs: dict, s: Tensor, state_size: int,
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
