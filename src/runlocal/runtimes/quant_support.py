"""Which --quant formats each engine loads, so that a plan's weight bytes are what its printed command loads.

A format the engine cannot load is refused with a one-line input error naming the formats it does load (MLX's own
rule is runtimes/mlx.py weight_format). Sources:

- llama.cpp and Ollama load GGUF files: the file types llama-quantize writes (tools/quantize/quantize.cpp,
  QUANT_OPTIONS); an AWQ / GPTQ / bitsandbytes / FP8 / MLX checkpoint is not a GGUF type, and `-hf REPO:AWQ` names
  no file of a GGUF repo.
- vLLM and SGLang load a checkpoint as stored (its config.json's quantization_config names the method), quantize a
  16-bit one to FP8 at load (--quantization fp8: docs features/quantization/fp8; SGLang docs
  advanced_features/quantization "online quantization"), and vLLM alone quantizes one to bitsandbytes 4-bit at load
  (docs features/quantization/bnb: "Inflight quantization: load as 4bit quantization", --quantization
  bitsandbytes; 8-bit only from a checkpoint stored so). vLLM reads a GGUF file only experimentally, one local file
  with --tokenizer (docs features/quantization/gguf), which runlocal does not plan.
- transformers quantizes with bitsandbytes at load (BitsAndBytesConfig load_in_4bit / load_in_8bit) or loads a
  checkpoint as stored; a GGUF file is dequantized to a torch dtype on load (docs gguf: "dequantize it to fp32"), so
  a GGUF type saves it no memory.

Pure computation.
"""

from __future__ import annotations

from ..errors import InputError
from ..model.spec import ModelSpec
from ..quant.formats import FLOAT_BYTES

BNB = frozenset({"nf4", "fp4", "nf4-dq", "fp4-dq", "int8"})     # transformers' BitsAndBytesConfig at load


def refuse_unloadable(model: ModelSpec, quant: str, runtime: str) -> None:
    """Raise an InputError naming --quant, the engine and what it loads when ``runtime`` cannot load ``quant``."""
    from ..quant import gguf_table
    from ..quant.unsloth import unsloth_name
    from .published import (
        BNB_4BIT,
        NVFP4_FORMATS,
        QUANT_FAMILIES,
        canonical_quant,
        gguf_quant,
        published_checkpoint,
        stored_as,
    )
    from .registry import engine

    q = canonical_quant(quant)
    known = engine(runtime)
    unsloth = unsloth_name(quant)       # a GGUF file of Unsloth's dynamic mix: planned as its base llama.cpp type
    ftype = gguf_quant(unsloth[1] if unsloth else quant)
    is_gguf = ftype in gguf_table.supported_ftypes() and q not in FLOAT_BYTES
    if known.ggml:
        if ftype not in gguf_table.supported_ftypes():
            raise InputError(f"quant: {known.name} runs GGUF file types (Q4_K_M, Q5_K_M, Q8_0, IQ4_XS, F16, MXFP4 …: "
                             f"llama-quantize's types), not '{quant}' — AWQ, GPTQ, bitsandbytes and FP8 checkpoints "
                             "are vLLM, SGLang or transformers formats")
        return
    if q in FLOAT_BYTES or stored_as(model, quant):
        return
    if known.hub_checkpoints:
        if q in QUANT_FAMILIES or published_checkpoint(model, q) or (runtime == "vllm" and q in BNB_4BIT):
            return
        label = {"vllm": "vLLM", "sglang": "SGLang"}.get(runtime, runtime)
        bnb = (" or nf4 / fp4 made at load (--quantization bitsandbytes)" if runtime == "vllm" else "")
        gguf = (" (vLLM reads a GGUF file only experimentally, one local file with --tokenizer, not planned here)"
                if runtime == "vllm" and is_gguf else "")
        raise InputError(f"quant: {label} runs bf16 / fp16, the checkpoint as stored, a published fp8 / awq / gptq / "
                         f"w4a16 one, fp8 made at load (--quantization fp8){bnb}; not '{quant}'{gguf}")
    if known.quant_from_config_only:          # transformers
        if QUANT_FAMILIES.get(q) == NVFP4_FORMATS:
            # ModelOpt's hf_quant_config.json is not read by from_pretrained (quantizers/auto.py), so an NVFP4 export
            # would load as 16-bit; runlocal plans NVFP4 checkpoints where they run as stored
            raise InputError(f"quant: transformers does not load a published NVFP4 checkpoint as stored (no ModelOpt "
                             f"quantizer); vLLM and SGLang run them (-r vllm / -r sglang); not '{quant}'")
        # bitsandbytes at load; or a published AWQ / GPTQ / FP8 checkpoint, which from_pretrained loads as stored
        # through its config.json's quantization_config (quantizers/auto.py) — planned as that repo (weights.py)
        if q in BNB or published_checkpoint(model, q):
            return
        raise InputError("quant: transformers quantizes at load with bitsandbytes (nf4, fp4, int8: BitsAndBytesConfig) "
                         "or runs bf16 / fp16 / fp32, the checkpoint as stored or a published awq / gptq / fp8 one"
                         + (f" (no {quant} checkpoint of {model.id} is known here: pass its repo as the model)"
                            if q in QUANT_FAMILIES else "") + f"; not '{quant}'"
                         + (" (it dequantizes a GGUF file to 16/32-bit on load: no memory saved)"
                            if is_gguf else ""))
