"""The planners' memos keyed by an object's identity (runlocal.memo.IdMemo) or by their arguments can never hand one
question another's answer: two inputs that differ in the one field a memo reads get their own answers, checked
against hand computations; equal inputs share one answer."""

from __future__ import annotations

import copy
from dataclasses import replace

from runlocal.model import catalog
from runlocal.quant.gguf_mix import gguf_view

# ggml's Q8_0 block: 32 weights in 34 bytes (an f16 scale and 32 int8: ggml/src/ggml-common.h block_q8_0)
Q8_0_BYTES_PER_32 = 34


def test_gguf_view_is_per_spec_and_ftype() -> None:
    spec = catalog.lookup("llama-3.1-8b")
    q8 = gguf_view(spec, "Q8_0")
    f16 = gguf_view(spec, "F16")
    assert q8 is not None and f16 is not None
    q8_q = next(t for t in q8.tensors if t.name == "blk.0.attn_q.weight")
    f16_q = next(t for t in f16.tensors if t.name == "blk.0.attn_q.weight")
    # the same spec object under two ftypes: each its own view (4096 × 4096 weights)
    assert q8_q.nbytes == 4096 * 4096 // 32 * Q8_0_BYTES_PER_32
    assert f16_q.nbytes == 4096 * 4096 * 2
    assert gguf_view(spec, "Q8_0") is q8          # asked again: the kept view


def test_gguf_view_of_a_spec_differing_in_one_tensor() -> None:
    spec = catalog.lookup("llama-3.1-8b")
    before = gguf_view(spec, "F16")
    # the same spec but for the embedding's rows (a vocabulary of 1,024 more tokens)
    embed = spec.tensors[0]
    assert embed.name == "model.embed_tokens.weight" and embed.shape == (128256, 4096)
    other = replace(spec, tensors=(replace(embed, shape=(129280, 4096)), *spec.tensors[1:]))
    after = gguf_view(other, "F16")
    assert before is not None and after is not None and after is not before
    bytes_of = {v: next(t.nbytes for t in v.tensors if t.name == "token_embd.weight") for v in (before, after)}
    assert bytes_of[before] == 128256 * 4096 * 2
    assert bytes_of[after] == 129280 * 4096 * 2
    # an equal spec that is another object shares the view (the caches keyed by the view's identity are shared)
    assert gguf_view(copy.copy(spec), "F16") is before
