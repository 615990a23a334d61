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
    # from empty caches: earlier tests can leave this spec's view in the identity memo after the equality cache behind
    # it (32 views) dropped it, and an equal copy would then get a fresh view (slower, not wrong)
    from runlocal.quant import gguf_mix

    gguf_mix._VIEWS.clear()
    gguf_mix._gguf_view.cache_clear()
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


def test_weight_estimate_is_per_spec_and_quant() -> None:
    from runlocal.weights import estimate

    spec = catalog.lookup("llama-3.1-8b")
    # llama-quantize Q8_0 of Llama 3.1 8B: the 65 norm vectors (2 per layer × 32 + the final one, 4,096 wide) stay
    # F32, every other weight is Q8_0, 34 bytes per 32
    norms = 65 * 4096
    n_params = sum(t.numel for t in spec.tensors)
    q8 = estimate(spec, "Q8_0")
    assert q8.total == (n_params - norms) // 32 * Q8_0_BYTES_PER_32 + norms * 4
    bf16 = estimate(spec, "bf16")                    # the same object under another quant: its own answer
    assert bf16.total == (n_params - norms) * 2 + norms * 4      # (a GGUF BF16 keeps the norms F32 too)
    # a spec differing only in the embedding's rows: 1,024 rows × 4,096 × 2 bytes more
    embed = spec.tensors[0]
    other = replace(spec, tensors=(replace(embed, shape=(embed.shape[0] + 1024, 4096)), *spec.tensors[1:]))
    assert estimate(other, "bf16").total - bf16.total == 1024 * 4096 * 2
    # each call gets its own by_kind: a caller changing it changes no later answer
    q8.by_kind.clear()
    assert sum(estimate(spec, "Q8_0").by_kind.values()) == q8.total


def test_graph_support_is_per_spec() -> None:
    from runlocal.runtimes import ggml

    view = gguf_view(catalog.lookup("deepseek-v3"), "Q4_K_M")
    assert view is not None and ggml.supported(view)
    # the same view but for one name: without blk.0.attn_k_b (a file converted before wkv_b was split in two,
    # ggml-org/llama.cpp convert_hf_to_gguf.py DeepseekV2Model) llama.cpp's MLA graph is not the one simulated
    renamed = tuple(replace(t, name="blk.0.attn_kv_b.weight") if t.name == "blk.0.attn_k_b.weight" else t
                    for t in view.tensors)
    assert not ggml.supported(replace(view, tensors=renamed))
    assert ggml.supported(view)                      # asked again: unchanged


def test_kv_per_device_is_per_layout_offload_and_cache_type() -> None:
    """place_pools' KV per device, summed once per (model, cache types, layout): three launches of one model that
    differ only in -ngl, -nkvo or the cache type, each against the bytes worked out by hand."""
    from runlocal.plan import estimate
    from runlocal.runtimes import Settings, Target
    from runlocal.runtimes.llamacpp import LlamaCpp

    model = catalog.lookup("llama-3.1-8b")         # 32 layers, 8 KV heads of 128: a 1,024-wide K row and V row
    weights = estimate(model, "Q4_K_M")
    targets = [Target("GPU0", "gpu", 80 << 30), Target("CPU", "cpu", 128 << 30)]
    ctx = 4096                                     # one unified stream of 4,096 cells (-np auto: 4 slots share it)
    f16_layer = ctx * (1024 + 1024) * 2            # K and V rows, 2 bytes an element, per layer

    def kv(**llamacpp) -> tuple[int, int]:
        s = Settings(ctx=ctx).with_(**llamacpp)
        _, bufs, _, _ = LlamaCpp().buffers(model, weights, s, targets)
        return bufs[0].kv, bufs[-1].kv

    assert kv(n_gpu_layers=33) == (32 * f16_layer, 0)
    # -ngl 17: llama.cpp's i_gpu_start = 33 − 17 = 16, so layers 16…31 (16 of them) are on the GPU
    assert kv(n_gpu_layers=17) == (16 * f16_layer, 16 * f16_layer)
    assert kv(n_gpu_layers=33, kv_offload=False) == (0, 32 * f16_layer)       # -nkvo: every cache on the host
    # q8_0 K and V: 34 bytes per 32 elements (ggml's block_q8_0)
    q8_layer = ctx * (1024 + 1024) // 32 * Q8_0_BYTES_PER_32
    s = Settings(ctx=ctx, cache_type_k="q8_0", cache_type_v="q8_0").with_(n_gpu_layers=33)
    _, bufs, _, _ = LlamaCpp().buffers(model, weights, s, targets)
    assert (bufs[0].kv, bufs[-1].kv) == (32 * q8_layer, 0)
    assert kv(n_gpu_layers=17) == (16 * f16_layer, 16 * f16_layer)           # asked again: unchanged


def test_transformers_tensor_sizes_are_per_weights() -> None:
    """transformers' per-tensor bytes, kept per model object and the weights' format, total and source: weights
    differing only in their format or only in their total each get their own sizes."""
    from runlocal.quant.formats import WeightEstimate
    from runlocal.runtimes.transformers import _tensor_sizes

    spec = catalog.lookup("llama-3.1-8b")
    n = sum(t.numel for t in spec.tensors)
    embed = spec.tensors[0].numel                   # 128,256 × 4,096
    bf16 = _tensor_sizes(spec, WeightEstimate("bf16", n * 2))
    f32 = _tensor_sizes(spec, WeightEstimate("f32", n * 4))
    assert (bf16[0][0], f32[0][0]) == (embed * 2, embed * 4)                 # 2 and 4 bytes a weight
    # the same format with a total twice the tensors' own: every tensor scaled to keep the plan's total
    doubled = _tensor_sizes(spec, WeightEstimate("bf16", n * 4))
    assert doubled[0][0] == embed * 4 and sum(doubled[0]) == n * 4
    assert _tensor_sizes(spec, WeightEstimate("bf16", n * 2))[0][0] == embed * 2     # asked again: unchanged


def test_gguf_names_are_per_spec_and_the_same_as_unkept() -> None:
    """quant.gguf_convert.gguf_names is kept per spec object (a --fit search matches -ot rules against them at every
    probe); the kept tuple is names_of_gguf's list, and a spec differing in one tensor's name gets its own. Names by
    convert_hf_to_gguf.py's mapping (gguf-py tensor_mapping.py): q_proj → attn_q, the fused experts' gate_up_proj →
    ffn_gate_exps and ffn_up_exps (Qwen3MoeModel splits it)."""
    from runlocal.quant import gguf_convert

    gguf_convert._NAMES.clear()
    spec = catalog.lookup("qwen3-30b-a3b")
    names = gguf_convert.gguf_names(spec)
    assert names == tuple(gguf_convert.names_of_gguf(spec))
    assert gguf_convert.gguf_names(spec) is names               # asked again: the kept tuple
    by_name = dict(zip((t.name for t in spec.tensors), names))
    assert by_name["model.layers.0.self_attn.q_proj.weight"] == ("blk.0.attn_q.weight",)
    assert by_name["model.layers.3.mlp.experts.gate_up_proj"] == ("blk.3.ffn_gate_exps.weight",
                                                                  "blk.3.ffn_up_exps.weight")
    # the same spec but for layer 0's q_proj named as layer 1's: its own names, not the kept ones
    k = next(i for i, t in enumerate(spec.tensors) if t.name == "model.layers.0.self_attn.q_proj.weight")
    other = replace(spec, tensors=(*spec.tensors[:k], replace(spec.tensors[k], name="model.layers.1.self_attn.q_proj.weight"),
                                   *spec.tensors[k + 1:]))
    assert gguf_convert.gguf_names(other)[k] == ("blk.1.attn_q.weight",)
    assert gguf_convert.gguf_names(spec)[k] == ("blk.0.attn_q.weight",)
