"""Bounds on what a model file may claim: one table for GGUF metadata, config.json and the ModelSpec.

Every reader checks the hyperparameters it reads against these bounds before it builds anything
(a layer count drives a loop, a dimension a product), and every ModelSpec is checked once more when
it is built (``check_spec``): whichever file it came from, a spec that reaches a planner has integer,
positive, bounded dimensions, at least one attention head where it has attention, and KV heads that
divide the query heads. A bad value is a ModelFormatError (CLI exit 2, API 422) that names the key,
the value and what was expected.

Each bound is generous against the largest real model (cited beside it) so that no real file is
refused, and small enough that what is built from it stays cheap. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import ModelFormatError


@dataclass(frozen=True)
class Bound:
    lo: int
    hi: int
    what: str

    def describe(self) -> str:
        return f"an integer from {self.lo} to {self.hi:,} ({self.what})"


# llama.cpp refuses more than LLAMA_MAX_LAYERS = 512 layers (src/llama-hparams.h; llama-model.cpp asserts
# n_layer <= LLAMA_MAX_LAYERS); the deepest catalog model is Llama-3.1-405B, 126 layers. 1024 keeps room
# for vision towers and runtimes without that cap.
LAYERS = Bound(1, 1024, "a layer count")
# The widest catalog model is Llama-3.1-405B, hidden_size 16384; 2^17 is 8× that.
HIDDEN = Bound(1, 1 << 17, "a model width")
# Llama-3.1-405B's MLP is 53,248 wide; 2^20 is 19× that.
FFN = Bound(1, 1 << 20, "an MLP width")
# The most attention heads in the catalog: 128 (Llama-3.1-405B, DeepSeek-V3); 4096 is 32× that.
HEADS = Bound(1, 4096, "a head count")
# Head dimensions are 64–256 (Gemma: 256); MLA's cached width is kv_lora_rank + rope = 576 and
# q_lora_rank is 1536 (DeepSeek-V3); 2^16 is 40× the largest.
HEAD_DIM = Bound(1, 1 << 16, "a per-head or low-rank width")
# Gemma 3's vocabulary is 262,208, the largest in the catalog; 2^22 is 16× that.
VOCAB = Bound(1, 1 << 22, "a vocabulary size")
# Llama 4 Scout is trained for 10,485,760 tokens, the longest context in the catalog; 2^28 is 25× that.
CONTEXT = Bound(1, 1 << 28, "a context length in tokens")
# llama.cpp's LLAMA_MAX_EXPERTS is 1024 ("Kimi K3", src/llama-hparams.h); the catalog's most is 512
# (Qwen3-Next); 0 means a dense model.
EXPERTS = Bound(0, 1024, "an expert count")
# Recurrent-state sizes: Mamba d_state 16–256, conv kernels 4, expand 2 (catalog); generous caps.
STATE = Bound(1, 1 << 14, "a state size")
KERNEL = Bound(1, 1 << 10, "a convolution kernel width")
EXPAND = Bound(1, 1 << 6, "an expansion factor")
# Vision towers: patches 14–16 px, images up to 1540 px (Mistral Small 3.1), 3 channels, 4 tiles.
PIXELS = Bound(1, 1 << 16, "a size in pixels")
SMALL = Bound(1, 1 << 10, "a small factor")
# A layer index or count of layers that may be zero (offsets, dense-first layers, MTP layers).
LAYER_INDEX = Bound(0, LAYERS.hi, "a layer index or count")
CHUNK = Bound(0, 1 << 20, "a chunk size in tokens")

# Tensors. The GGUF with the most tensors we know is DeepSeek-V3's, about 1,100 (experts fused); a
# safetensors checkpoint of Kimi-K2 (int4, 61 layers × 384 experts × 3 projections × packed/scale/shape)
# lists about 211,000. 2^20 is 5× that.
MAX_TENSORS = 1 << 20
# The largest single tensor we know holds 384 × 2 × 2048 × 7168 = 11.3 G elements (Kimi-K2's fused
# gate_up experts); bitsandbytes flattens 4-bit weights to one long dimension. 2^36 is 6× that.
MAX_TENSOR_ELEMENTS = 1 << 36
# Kimi-K2 has 1.04 T parameters, the most in the catalog; 2^44 (17.6 T) is 17× that.
MAX_PARAMS = 1 << 44
# Lists in a config (layer_types, mlp_only_layers …) have one entry per layer at most.
MAX_LIST = 4 * LAYERS.hi


def _shown(value: Any) -> str:
    """A short rendering of a bad value: never a 5000-digit number or a megabyte of text."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def printable(text: Any, limit: int = 80) -> str:
    """A name from a file, safe inside a one-line message: control characters escaped, length capped."""
    return repr(str(text)[:limit])[1:-1]


def fail(where: str, key: str, value: Any, expected: str) -> ModelFormatError:
    got = "missing" if value is None else _shown(value)
    return ModelFormatError(f"{where}: {key} is {got} (expected {expected})")


def check_int(value: Any, key: str, bound: Bound, where: str) -> int:
    """``value`` as an int within ``bound``; bools, floats, strings and out-of-range ints are refused."""
    if isinstance(value, bool) or not isinstance(value, int) or not bound.lo <= value <= bound.hi:
        raise fail(where, key, value, bound.describe())
    return value


def check_ints(values: Any, key: str, bound: Bound, where: str, *, length: int | None = None) -> list[int]:
    """A list of ints within ``bound`` (per-layer arrays), of exactly ``length`` entries when given."""
    if not isinstance(values, list) or len(values) > MAX_LIST or length is not None and len(values) != length:
        n = f"{length} entries" if length is not None else f"at most {MAX_LIST} entries"
        raise fail(where, key, values if not isinstance(values, list) else f"a list of {len(values)}",
                   f"a list of {n}, each {bound.describe()}")
    return [check_int(v, f"{key}[{i}]", bound, where) for i, v in enumerate(values)]


def check_flag(value: Any, key: str, where: str) -> bool:
    if value is None or isinstance(value, bool) or value in (0, 1) and isinstance(value, int):
        return bool(value)
    raise fail(where, key, value, "true or false")


# ------------------------------------------------------------------------------------------------
# config.json keys (transformers' names, every level: top, text_config, vision_config)

_HF: dict[str, Bound] = {}
for _bound, _keys in (
    (LAYERS, "num_hidden_layers depth num_global_layers n_layer"),
    (HIDDEN, "hidden_size out_hidden_size projector_input_dim projector_output_dim vision_output_dim"),
    (FFN, ("intermediate_size moe_intermediate_size shared_expert_intermediate_size shared_intermediate_size "
          "intermediate_size_mlp mamba_d_ssm")),
    (HEADS, ("num_attention_heads num_key_value_heads linear_num_key_heads linear_num_value_heads mamba_n_heads "
            "num_heads attention_heads mamba_n_groups n_groups")),
    (HEAD_DIM, ("head_dim linear_key_head_dim linear_value_head_dim qk_rope_head_dim qk_nope_head_dim v_head_dim "
               "kv_lora_rank q_lora_rank")),
    (VOCAB, "vocab_size"),
    (CONTEXT, "max_position_embeddings sliding_window attention_chunk_size num_position_embeddings"),
    (EXPERTS, "num_experts num_local_experts n_routed_experts num_experts_per_tok n_shared_experts"),
    (STATE, "mamba_d_state state_size"),
    (KERNEL, "mamba_d_conv conv_kernel linear_conv_kernel_dim"),
    (EXPAND, "mamba_expand expand"),
    (PIXELS, "patch_size image_size"),
    (SMALL, "num_channels in_channels temporal_patch_size spatial_merge_size max_num_tiles"),
    # periods: "every k-th layer" (k ≥ 1: a zero divides by zero, Qwen3-Next's full_attention_interval)
    (Bound(1, LAYERS.hi, "a layer period"), ("full_attention_interval decoder_sparse_step sliding_window_pattern "
                                            "no_rope_layer_interval interleave_moe_layer_step attn_layer_period "
                                            "expert_layer_period")),
    (LAYER_INDEX, ("attn_layer_offset expert_layer_offset first_k_dense_replace num_nextn_predict_layers "
                  "max_window_layers mtp_num_hidden_layers")),
    (CHUNK, "mamba_chunk_size chunk_size"),
):
    for _k in _keys.split():
        _HF[_k] = _bound
# keys that may also say "auto" (transformers computes them)
_AUTO = {"mamba_dt_rank": HIDDEN, "time_step_rank": HIDDEN, "mamba_d_head": HEAD_DIM}
_INT_LISTS = {"mlp_only_layers", "moe_layers", "cross_attention_layers", "no_rope_layers"}
_STR_LISTS = {"layer_types"}
_FLAGS = {"tie_word_embeddings", "attention_bias", "mlp_bias", "use_sliding_window", "qkv_bias", "use_qk_norm",
          "qk_layernorm", "vision_use_head", "mamba_conv_bias", "mamba_proj_bias", "mamba_rms_norm",
          "projectors_bias", "use_bias", "use_conv_bias", "multimodal_projector_bias"}


def check_config_value(key: str, value: Any, where: str) -> Any:
    """A config.json value as read for ``key``; known keys must hold what transformers' config classes hold.

    ``None`` passes (the reader falls back to the class default or reports it missing)."""
    if value is None:
        return value
    if key in _HF:
        return check_int(value, key, _HF[key], where)
    if key in _AUTO:
        return value if value == "auto" else check_int(value, key, _AUTO[key], where)
    if key in _FLAGS:
        return check_flag(value, key, where)
    if key in _INT_LISTS:
        return check_ints(value, key, LAYER_INDEX, where)
    if key in _STR_LISTS:
        if not (isinstance(value, list) and len(value) <= MAX_LIST and all(isinstance(v, str) and len(v) <= 64
                                                                          for v in value)):
            raise fail(where, key, value, f"a list of at most {MAX_LIST} layer-type names")
        return value
    if key == "vision_feature_layer" and isinstance(value, list):
        return check_ints(value, key, Bound(-LAYERS.hi, LAYERS.hi, "a layer index"), where)
    if key == "vision_feature_layer":
        return check_int(value, key, Bound(-LAYERS.hi, LAYERS.hi, "a layer index"), where)
    if key == "supported_aspect_ratios" and not (isinstance(value, list) and len(value) <= MAX_LIST):
        raise fail(where, key, value, f"a list of at most {MAX_LIST} aspect ratios")
    return value


def check_heads(heads: int, kv_heads: int, where: str, keys: tuple[str, str]) -> None:
    """KV heads must not exceed the query heads and must divide them: transformers' repeat_kv, vLLM's
    attention layer and ggml_mul_mat's broadcast (ggml.c ggml_can_mul_mat: ne[2] % ne[2] == 0) all need it."""
    if kv_heads > heads or heads % kv_heads:
        raise ModelFormatError(f"{where}: {keys[1]} is {kv_heads} (expected at most {keys[0]} = {heads} "
                               f"and dividing it)")


# ------------------------------------------------------------------------------------------------
# the one check every ModelSpec passes, whichever reader built it

def check_spec(spec: Any) -> Any:
    """Refuse a ModelSpec whose numbers no real model has; return it unchanged otherwise."""
    where = spec.source or spec.id
    check_int(spec.n_layers, "layers", LAYERS, where)
    check_int(spec.hidden_size, "hidden size", HIDDEN, where)
    check_int(spec.vocab_size, "vocabulary size", VOCAB, where)
    check_int(spec.n_heads, "attention heads", Bound(0, HEADS.hi, HEADS.what), where)
    if spec.intermediate_size is not None:
        check_int(spec.intermediate_size, "intermediate size", FFN, where)
    if spec.max_position_embeddings is not None:
        check_int(spec.max_position_embeddings, "context length", CONTEXT, where)
    check_int(spec.n_experts, "experts", EXPERTS, where)
    if spec.n_experts:
        # llama.cpp asserts 0 < n_expert_used <= n_expert (src/llama-model.cpp, load_hparams)
        check_int(spec.n_experts_active, "experts per token", Bound(1, spec.n_experts, "at most the experts"), where)
    if len(spec.layers) != spec.n_layers:
        raise ModelFormatError(f"{where}: {len(spec.layers)} layer descriptions for {spec.n_layers} layers")
    _check_layers(spec.layers, spec.n_heads, where)
    _check_tensors(spec.tensors, where)
    return spec


def _check_layers(layers: Iterable[Any], n_heads: int, where: str) -> None:
    cached = False
    for i, layer in enumerate(layers):
        a, r = layer.attention, layer.recurrent
        if a is not None:
            check_int(a.n_kv_heads, f"layer {i} KV heads", HEADS, where)
            if a.kind != "mla" and a.n_kv_heads > max(n_heads, 1):
                raise ModelFormatError(f"{where}: layer {i} has {a.n_kv_heads} KV heads for {n_heads} attention "
                                       "heads (expected at most as many)")
            check_int(a.k_dim, f"layer {i} key width", HEAD_DIM, where)
            check_int(a.v_dim, f"layer {i} value width", HEAD_DIM, where)
            if a.window is not None:
                check_int(a.window, f"layer {i} sliding window", CONTEXT, where)
            cached = True
        if r is not None:
            for name in ("conv_elems", "state_elems"):
                check_int(getattr(r, name), f"layer {i} recurrent {name}", Bound(0, 1 << 40, "elements"), where)
            cached = True
    if not cached:
        raise ModelFormatError(f"{where}: no layer has attention heads or a recurrent state "
                               "(expected attention head counts or SSM sizes)")


def _check_tensors(tensors: Any, where: str) -> None:
    if len(tensors) > MAX_TENSORS:
        raise ModelFormatError(f"{where}: {len(tensors):,} tensors (expected at most {MAX_TENSORS:,})")
    total = 0
    matrices = 0
    for t in tensors:
        n = 1
        for d in t.shape:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                raise ModelFormatError(f"{where}: tensor '{t.name[:80]}' has dimension {_shown(d)} "
                                       "(expected a non-negative integer)")
            n *= d
        if n > MAX_TENSOR_ELEMENTS:
            raise ModelFormatError(f"{where}: tensor '{t.name[:80]}' has {n:,} elements "
                                   f"(expected at most {MAX_TENSOR_ELEMENTS:,})")
        total += n
        matrices += len(t.shape) >= 2
    if not matrices:        # the speed model multiplies matrices; norms and biases alone are no model
        raise ModelFormatError(f"{where}: no weight matrix among {len(tensors)} tensors "
                               "(expected an embedding and layer weights)")
    if not 0 < total <= MAX_PARAMS:     # no tensors at all: nothing to plan, and a speed model dividing by 0
        raise ModelFormatError(f"{where}: {total:,} parameters (expected 1 to {MAX_PARAMS:,})")


# ------------------------------------------------------------------------------------------------
# JSON documents a model ships (config.json, the safetensors index, safetensors headers)

# A parsed JSON value costs up to ~115 bytes of Python objects (a short string key and value; measured
# with tracemalloc), so 2^20 values stay near 120 MB. The largest real document is a safetensors index:
# Kimi-K2's lists ~211,000 tensors, 2 values each.
MAX_JSON_VALUES = 1 << 20


def loads_bounded(raw: bytes, name: str, what: str) -> Any:
    """``json.loads`` of a model's JSON document with its size of values, nesting and numbers bounded first.

    Counting separators bounds the number of values before any is built (each one but the first of a
    container follows a comma); nesting past Python's recursion limit and integers past its 4300-digit
    limit are caught as the errors json raises for them."""
    import json

    values = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if values > MAX_JSON_VALUES:
        raise ModelFormatError(f"{name}: {what} holds about {values:,} JSON values (expected at most "
                               f"{MAX_JSON_VALUES:,})")
    try:
        text = raw.decode("utf-8")
        return json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelFormatError(f"{name}: {what} is not valid JSON ({str(e)[:80]})") from None
    except RecursionError:
        raise ModelFormatError(f"{name}: {what} nests too deep to read (expected a few levels)") from None
    except ValueError as e:     # an integer past Python's 4300-digit limit (sys.set_int_max_str_digits)
        raise ModelFormatError(f"{name}: {what} holds an unreadable value ({str(e)[:80]})") from None

