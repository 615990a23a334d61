"""NVIDIA ModelOpt checkpoints: the quantization a repo stores in ``hf_quant_config.json`` (or, from ModelOpt
0.31 on, in config.json's ``quantization_config`` with ``quant_method: modelopt``), read as vLLM reads it.

vLLM takes a separate ``hf_quant_config.json`` when config.json has no ``quantization_config``
(vllm/transformers_utils/config.py get_config: "ModelOpt 0.29.0 and before saves the quantization config in a
separate hf_quant_config.json") and parses it in vllm/model_executor/layers/quantization/modelopt.py
(ModelOptQuantConfigBase.from_config: ``quantization.quant_algo``, ``kv_cache_quant_algo``, ``exclude_modules``;
or the flat ``quant_algo`` / ``kv_cache_scheme`` / ``ignore`` form). SGLang does the same
(python/sglang/srt/configs/model_config.py ModelConfig._parse_quant_hf_config: "modelopt … don't have corresponding
field in hf config.json but has a standalone hf_quant_config.json", example nvidia/Llama-3.1-8B-Instruct-FP8).
Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ModelFormatError
from .limits import _shown as shown

# quant_algo → the quant/formats.py layout it stores (modelopt.py QUANT_ALGOS; ModelOptFp8Config picks
# ModelOptFp8LinearMethod for FP8, ModelOptFp8PcPtLinearMethod for FP8_PER_CHANNEL_PER_TOKEN, the 128×128
# block method for FP8_PB_WO; ModelOptNvFp4Config for NVFP4)
ALGO_FORMATS = {"FP8": "modelopt-fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel", "FP8_PB_WO": "fp8-block",
                "NVFP4": "modelopt-nvfp4", "W4A16_NVFP4": "modelopt-nvfp4"}
# kv_cache_quant_algo → vLLM's KV cache dtype when --kv-cache-dtype is auto (vllm/utils/torch_utils.py
# resolve_kv_cache_dtype_string, get_kv_cache_quant_algo_string; vLLM issue #34752)
KV_ALGOS = {"FP8": "fp8"}
MAX_EXCLUDES = 4096


@dataclass(frozen=True)
class ModelOptQuant:
    algo: str                       # quant_algo as written, upper-cased
    format: str                     # a quant/formats.py key
    kv_cache: str | None            # "fp8" when the checkpoint's KV scales make vLLM's auto KV dtype fp8
    exclude: tuple[str, ...]        # module names / wildcards kept unquantized


def is_modelopt(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    producer = doc.get("producer")
    method = doc.get("quant_method")
    # ModelOpt's own file may come without "producer" (hand-made exports): its "quantization" object names it
    return ((isinstance(producer, dict) and producer.get("name") == "modelopt")
            or (isinstance(method, str) and method.lower().startswith("modelopt"))
            or (not method and isinstance(doc.get("quantization"), dict) and "quant_algo" in doc["quantization"]))


def read_modelopt(doc: Any, where: str) -> ModelOptQuant:
    """A ModelOpt quantization config → the stored layout; one line naming the field when it is not one."""
    what = f"{where}: hf_quant_config.json"
    if not isinstance(doc, dict):
        raise ModelFormatError(f"{what} must hold a JSON object")
    if "quantization" in doc:
        q = doc["quantization"]
        if not isinstance(q, dict):
            raise ModelFormatError(f"{what}: 'quantization' is {shown(q)} (expected an object with quant_algo)")
        algo, kv, exclude = q.get("quant_algo"), q.get("kv_cache_quant_algo"), q.get("exclude_modules", [])
    else:       # config.json's quantization_config written by ModelOpt ≥ 0.31
        algo, exclude = doc.get("quant_algo"), doc.get("ignore", [])
        scheme = doc.get("kv_cache_scheme")
        kv = "FP8" if isinstance(scheme, dict) and scheme.get("type") == "float" and scheme.get("num_bits") == 8 else None
    if not isinstance(algo, str) or not algo:
        raise ModelFormatError(f"{what}: quant_algo is {shown(algo)} (expected one of {', '.join(ALGO_FORMATS)})")
    algo = algo.upper()
    if algo not in ALGO_FORMATS:
        raise ModelFormatError(f"{what}: quant_algo '{algo[:40]}' is not a layout runlocal plans (expected one of "
                               f"{', '.join(ALGO_FORMATS)}; vLLM's modelopt.py loads only those, MXFP8 and MIXED_PRECISION)")
    if kv is not None and not isinstance(kv, str):
        raise ModelFormatError(f"{what}: kv_cache_quant_algo is {shown(kv)} (expected a string such as 'FP8' or null)")
    if not (isinstance(exclude, list) and len(exclude) <= MAX_EXCLUDES
            and all(isinstance(m, str) and len(m) <= 300 for m in exclude)):
        raise ModelFormatError(f"{what}: exclude_modules must be a list of at most {MAX_EXCLUDES:,} module names")
    return ModelOptQuant(algo, ALGO_FORMATS[algo], KV_ALGOS.get(kv.upper()) if kv else None, tuple(exclude))
