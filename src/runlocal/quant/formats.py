"""Weight bytes of a model under a quantization format, tensor by tensor, without the file.

Each rule follows the format's real storage layout (cited per format); llama.cpp's GGUF types
are in gguf_mix.py. Tensors that a format leaves unquantized (embeddings, norms, the LM head,
routers) keep 16-bit storage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..model.spec import ModelSpec, TensorInfo

# Roles that are nn.Linear weights in transformers, i.e. what weight-only quantizers replace.
LINEAR_ROLES = frozenset({
    "attn_q", "attn_k", "attn_v", "attn_o", "attn_qkv", "attn_q_a", "attn_q_b", "attn_kv_a", "attn_kv_b",
    "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_up", "expert_gate", "expert_up", "expert_down", "expert_gate_up",
    "shared_gate", "shared_up", "shared_down", "ssm_in", "ssm_out",
})

FLOAT_BYTES = {"fp32": 4, "f32": 4, "float32": 4, "fp16": 2, "f16": 2, "float16": 2, "bf16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class WeightEstimate:
    quant: str
    total: int
    by_kind: dict[str, int] = field(default_factory=dict)    # e.g. {"nf4 linear": …, "bf16 other": …}
    formula: str = ""
    source: str = ""
    from_file: bool = False      # True when the bytes are the file's own tensor sizes


def _is_linear(t: TensorInfo) -> bool:
    return t.role in LINEAR_ROLES and len(t.shape) >= 2


def _in_out(t: TensorInfo) -> tuple[int, int, int]:
    """(experts, out_features, in_features) of a Linear-like weight; 3-D expert tensors keep their count."""
    if len(t.shape) == 3:
        return t.shape[0], t.shape[1], t.shape[2]
    return 1, t.shape[0], t.numel // t.shape[0]


def _bnb4(t: TensorInfo, *, double_quant: bool) -> int:
    # bitsandbytes Linear4bit (nf4/fp4), blocksize 64 (bitsandbytes/functional.py quantize_4bit,
    # QuantState): packed 4-bit weights, one absmax per 64 weights — f32, or with double quant
    # (bnb_4bit_use_double_quant=True) uint8 plus one f32 absmax per 256 absmax blocks — and the
    # 16-entry f32 code table (+ the 256-entry nested code table with double quant).
    n = t.numel
    blocks = -(-n // 64)
    if double_quant:
        return -(-n // 2) + blocks + 4 * -(-blocks // 256) + 16 * 4 + 256 * 4
    return -(-n // 2) + 4 * blocks + 16 * 4


def _bnb8(t: TensorInfo) -> int:
    # LLM.int8(): int8 weights + one f32 scale (SCB) per output row (bitsandbytes Int8Params).
    e, out, _ = _in_out(t)
    return t.numel + 4 * e * out


def _int4_grouped(t: TensorInfo, group: int, g_idx: bool) -> int:
    # AWQ / GPTQ packing: qweight int32 holds 8 nibbles → numel/2 bytes; per group of `group` input
    # features: fp16 scales per output (2 bytes) and packed 4-bit zeros (½ byte); GPTQ adds an int32
    # g_idx per input feature (autoawq gemm.py; auto-gptq qlinear_cuda.py).
    e, out, inp = _in_out(t)
    groups = -(-inp // group)
    return e * (out * inp // 2 + groups * out * 2 + groups * out // 2 + (inp * 4 if g_idx else 0))


def _fp8(t: TensorInfo) -> int:
    # vLLM/compressed-tensors fp8: one byte per weight + one f32 scale per tensor (per-tensor
    # dynamic scheme; block-wise checkpoints are read from their files).
    return t.numel + 4


def _fp8_block(t: TensorInfo) -> int:
    # DeepSeek-style fine-grained FP8 (Qwen3-*-FP8, quantization_config weight_block_size [128, 128]): one byte per
    # weight + one f32 weight_scale_inv per 128 × 128 block (transformers docs, quantization/finegrained_fp8;
    # vllm/model_executor/layers/quantization/fp8.py Fp8LinearMethod.create_weights with block_quant)
    e, out, inp = _in_out(t)
    return t.numel + 4 * e * -(-out // 128) * -(-inp // 128)


def _fp8_channel(t: TensorInfo) -> int:
    # compressed-tensors FP8_DYNAMIC (llm-compressor, RedHatAI "-FP8-dynamic"): one byte per weight + one f32 scale
    # per output channel (llm-compressor examples/quantization_w8a8_fp8: "static, per-channel quantization on the
    # weights")
    e, out, _ = _in_out(t)
    return t.numel + 4 * e * out


def _w4a16(t: TensorInfo) -> int:
    # compressed-tensors W4A16 (llm-compressor, RedHatAI "quantized.w4a16"): symmetric int4 packed into int32
    # (weight_packed, numel/2 bytes), a 16-bit weight_scale per group of 128 inputs and output, no zero points, and
    # a 2 × int64 weight_shape per tensor (compressed_tensors/compressors/quantized_compressors/pack_quantized.py)
    e, out, inp = _in_out(t)
    return e * (out * inp // 2 + -(-inp // 128) * out * 2 + 16)


def _modelopt_fp8(t: TensorInfo) -> int:
    # NVIDIA ModelOpt FP8 (hf_quant_config.json quant_algo "FP8"): fp8 e4m3 weight + an f32 weight_scale and an f32
    # input_scale per Linear (vllm/model_executor/layers/quantization/modelopt.py ModelOptFp8LinearMethod.create_weights:
    # PerTensorScaleParameter weight_scale and input_scale)
    return t.numel + 8


def _nvfp4(t: TensorInfo) -> int:
    # NVIDIA ModelOpt NVFP4 (quant_algo "NVFP4", group_size 16): two e2m1 values per uint8 byte, one fp8 e4m3
    # weight_scale per 16 inputs, an f32 weight_scale_2 (global) and an f32 input_scale per Linear
    # (vllm/model_executor/layers/quantization/modelopt.py ModelOptNvFp4LinearMethod.create_weights)
    e, out, inp = _in_out(t)
    return e * (out * inp // 2 + out * -(-inp // 16) + 8)


def _mxfp4(t: TensorInfo) -> int:
    # OCP MX FP4 (gpt-oss experts): blocks of 32 e2m1 values (16 bytes) + one e8m0 scale byte.
    return t.numel // 32 * 17


QUANT_FORMATS = {
    "nf4": ("bitsandbytes nf4", lambda t: _bnb4(t, double_quant=False), False),
    "fp4": ("bitsandbytes fp4", lambda t: _bnb4(t, double_quant=False), False),
    "nf4-dq": ("bitsandbytes nf4 with double quant", lambda t: _bnb4(t, double_quant=True), False),
    "fp4-dq": ("bitsandbytes fp4 with double quant", lambda t: _bnb4(t, double_quant=True), False),
    "int8": ("bitsandbytes LLM.int8()", _bnb8, False),
    "awq": ("AWQ int4, group 128", lambda t: _int4_grouped(t, 128, False), True),
    "gptq": ("GPTQ int4, group 128", lambda t: _int4_grouped(t, 128, True), True),
    "fp8": ("fp8 e4m3 weights", _fp8, True),
    "fp8-block": ("fp8 e4m3 weights, a scale per 128×128 block", _fp8_block, True),
    "fp8-channel": ("fp8 e4m3 weights, a scale per output channel", _fp8_channel, True),
    "w4a16": ("int4 weights, a 16-bit scale per 128 inputs (compressed-tensors)", _w4a16, True),
    "mxfp4": ("MXFP4 experts (gpt-oss)", _mxfp4, True),
    "modelopt-fp8": ("ModelOpt FP8: fp8 e4m3 weights, an f32 weight and input scale per tensor", _modelopt_fp8, True),
    "modelopt-nvfp4": ("ModelOpt NVFP4: e2m1 weights, an fp8 scale per 16 inputs, f32 global and input scales", _nvfp4, True),
    # compressed-tensors nvfp4-pack-quantized (llm-compressor scheme "NVFP4", RedHatAI "-NVFP4"; "ct-" keeps it apart from
    # llama.cpp's GGUF type NVFP4, which --quant nvfp4 names on llama.cpp and Ollama): weight_packed (two
    # e2m1 a byte), an fp8 e4m3 weight_scale per 16 inputs, f32 weight_global_scale and input_global_scale — the bytes of
    # ModelOpt's layout (vllm/model_executor/layers/quantization/compressed_tensors/schemes/
    # compressed_tensors_w4a4_nvfp4.py CompressedTensorsW4A4Fp4.create_weights)
    "ct-nvfp4": ("compressed-tensors NVFP4: e2m1 weights, an fp8 scale per 16 inputs, f32 global and input scales", _nvfp4,
              True),
}
# ModelOpt checkpoints quantize every Linear vLLM builds — lm_head and MoE routers included — unless
# hf_quant_config.json's exclude_modules names it (modelopt.py ModelOptQuantConfigBase.get_quant_method)
MODELOPT_FORMATS = frozenset({"modelopt-fp8", "modelopt-nvfp4"})
# Formats whose checkpoint names what it keeps unquantized (ModelOpt exclude_modules, compressed-tensors ignore): every
# Linear — lm_head and MoE routers included — is quantized unless the list names it; llm-compressor's recipes quantize
# targets="Linear" but the ignore list (examples/quantization_w4a4_fp4)
EXCLUDE_LIST_FORMATS = MODELOPT_FORMATS | {"ct-nvfp4"}
ALIASES = {"bnb-4bit": "nf4", "4bit": "nf4", "bnb-nf4": "nf4", "qlora": "nf4-dq", "bnb-8bit": "int8", "8bit": "int8",
           "llm.int8": "int8", "awq-4bit": "awq", "gptq-4bit": "gptq", "gptq-int4": "gptq", "awq-int4": "awq", "fp8_e4m3": "fp8"}


def float_bytes(t: TensorInfo, width: int) -> int:
    return t.numel * width


def excluded(name: str, patterns: tuple[str, ...]) -> bool:
    """A tensor of a module that hf_quant_config.json's exclude_modules keeps unquantized: an exact module name, a
    substring of it, or an fnmatch wildcard, as vLLM matches them (modelopt.py ModelOptQuantConfigBase.is_layer_excluded);
    or a compressed-tensors ``ignore`` entry "re:<regex>", matched with re.match (vLLM compressed_tensors/utils.py
    _is_equal_or_regex_match)."""
    import re
    from fnmatch import fnmatch

    module = name.rsplit(".", 1)[0]
    return any(re.match(p[3:], module) if p.startswith("re:") else (p == module or p in module or fnmatch(module, p))
               for p in patterns)


def _quantized(t: TensorInfo, q: str, model: ModelSpec, skip_router_and_head: bool) -> bool:
    if q == "mxfp4":
        return t.role.startswith("expert_")
    if q in EXCLUDE_LIST_FORMATS:
        linear = _is_linear(t) or (t.role in ("lm_head", "router") and len(t.shape) >= 2)
        return linear and not excluded(t.name, model.quant_exclude)
    return _is_linear(t) and not (skip_router_and_head and t.role == "router")


def estimate_weights(model: ModelSpec, quant: str, *, unquantized_width: int = 2) -> WeightEstimate:
    """Bytes of ``model``'s weights stored as ``quant`` (a float width or a weight-only format)."""
    q = ALIASES.get(quant.lower(), quant.lower())
    if q in FLOAT_BYTES:
        width = FLOAT_BYTES[q]
        total = sum(float_bytes(t, width) for t in model.tensors)
        return WeightEstimate(q, total, {q: total}, f"{model.params:,} params × {width} bytes", "dtype width")
    if q not in QUANT_FORMATS:
        raise InputError(f"quant: unknown format '{quant}'")
    label, per_tensor, skip_router_and_head = QUANT_FORMATS[q]
    quantized = kept = 0
    for t in model.tensors:
        if _quantized(t, q, model, skip_router_and_head):
            quantized += per_tensor(t)
        else:
            kept += float_bytes(t, unquantized_width)
    rest = ("the modules the checkpoint's exclude list names, embeddings and norms in 16 bit" if q in EXCLUDE_LIST_FORMATS
            else "embeddings, norms, LM head in 16 bit")
    return WeightEstimate(q, quantized + kept, {f"{q} linear": quantized, "16-bit other": kept},
                          f"linear layers as {label}; {rest}", label)
