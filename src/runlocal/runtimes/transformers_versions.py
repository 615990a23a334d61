"""`--runtime transformers==X`: the rules of transformers release X that the planner models and that changed, each
read in the PyPI wheel of the releases named (``pip download transformers==X --no-deps``; line numbers at that
release):

- attn_implementation when not given: "eager" up to 4.35 (4.35.2 modeling_utils.py has no SDPA path); from 4.36.0
  "sdpa" where the model class declares ``_supports_sdpa = True``, else eager (4.36.0 modeling_utils.py:1309-1312
  `elif requested_attn_implementation in [None, "sdpa"]: … _check_and_enable_sdpa`, :1473 `if not
  is_torch_sdpa_available() or not cls._supports_sdpa: return config` (eager), :1481 `config._attn_implementation =
  "sdpa"`; 5.23.0 :1846-1879 get_correct_attn_implementation: "Sdpa is the default, so we try it and fallback to eager
  otherwise"). Which classes declare it, by release (SDPA_BY_MODEL_TYPE), read in models/<type>/modeling_<type>.py of
  every minor release 4.36.0 – 4.57.0, 5.0.0 and 5.23.0 (and 5.6 – 5.24 for gemma2): Mistral / Mixtral from 4.37,
  Phi and StableLM from 4.39, GPT-NeoX from 4.42, Phi-3 from 4.45 — eager before; Gemma 2 SDPA 4.42 – 5.20, eager from
  5.21.0 ("_supports_sdpa = False  # sdpa does not support softcapping"); gpt-oss eager in every release (4.55.0 on,
  `_supports_sdpa = False`). A torch below 2.1.1 also keeps eager (is_torch_sdpa_available): not modelled.
- an AWQ checkpoint without a CUDA GPU: refused up to 4.53 ("GPU is required to run AWQ quantized model.", 4.45.0
  quantizers/quantizer_awq.py:49-50; 4.46.0 :70-72 and 4.53.0 :76 unless the checkpoint's own version is IPEX, which
  the published GEMM checkpoints are not); 4.54 – 4.57 switch a GEMM checkpoint to autoawq's IPEX kernels on the CPU
  (4.54.0 :55-61, "No CUDA or XPU found, consider switching to the IPEX version"); 5.x has no GPU check (5.0.0 :46-61;
  the 5.23 planner's rule, runtimes/transformers.py).
- a fine-grained FP8 checkpoint (quant_method "fp8"): unknown before 4.49 ("Unknown quantization type", 4.46.0
  quantizers/auto.py:98; 4.49.0 auto.py:72 maps "fp8"); 4.49 – 4.50 refuse it without a GPU ("No GPU found. A GPU is
  needed for FP8 quantization.", 4.49.0 quantizer_finegrained_fp8.py:51) and below compute capability 9.0 (:54-57);
  4.53 – 4.57 below 8.9 (4.53.0 :48, :53-55; 4.51 – 4.52 not read: planned as 4.50); from 5.0 dequantized to bf16
  instead (5.0.0 :36-40 without a GPU, :48-54 below 8.9), the modelled rule.
- a compressed-tensors FP8 checkpoint (RedHatAI's FP8-dynamic, quant_method "compressed-tensors"): unknown before
  4.45 (4.44.0 quantizers/auto.py:86 "Unknown quantization type"; 4.45.0 auto.py:54 maps it); 4.45 – 5.14 keep the
  compressed wrappers, their weights FP8 in memory (4.45.0 quantizer_compressed_tensors.py:66
  `apply_quantization_config(…, run_compressed=True)`; 4.50.0 :119-122, 4.55.0 :122-123, 5.0.0 :72, 5.10.1 :67,
  5.14.0 :70 with `run_compressed` True by default, utils/quantization_config.py: 4.50.0 :1261, 5.0.0 :1126; decompressed
  after loading only where run_compressed=False); from 5.15.0 `run_compressed=False` always and `dequantize=False` by
  default: the weights left compressed and decompressed to 16 bits on the first forward (5.15.0 :46-49, :117, :124-131;
  5.16.0 :114, 5.18.0 :118, 5.22.0 :118, 5.23.0 :115), the modelled rule (runtimes/transformers.py fp8_dequantized).
  5.15.0's other rules read as 5.0.0's (quantizer_awq.py no GPU check, quantizer_finegrained_fp8.py:34-54, SDPA).

- device_map="auto"'s headroom when max_memory is not given (``device_map_shares``): from 5.0.0 transformers runs its
  own get_balanced_memory / get_max_memory (5.0.0 integrations/accelerate.py:209-213 one GPU × 0.9, "90% is a good
  compromise"; :296-297 RAM × 0.90), the modelled rule. Before, modeling_utils.py calls accelerate's (4.35.2
  modeling_utils.py:3396, 4.45.0 :3939, 4.57.0 :1340), so the headroom is the installed accelerate's: one GPU × 0.9
  from accelerate 0.22.0 (utils/modeling.py:787-794, also 0.23.0 :798, 0.26.0 :871-878, 1.0.0 :1006-1013, 1.15.0
  :1004-1011), the whole free memory in 0.21.0 and 0.20.3 (one GPU: no cap, 0.20.3 modeling.py:588-638), and all the
  available RAM (accelerate get_max_memory: psutil available, 0.20.3 :487, 1.15.0 :829; no RAM share before 5.0).
  The accelerate release: the one the user states (--accelerate X), else the newest read (ACCELERATE_NEWEST_READ,
  1.15.0): accelerate is no dependency of a plain `pip install transformers`, so a user who adds it gets the newest,
  and the releases set only a floor (dependency_versions_table.py "accelerate>=X": 0.20.3 at 4.35.2, 0.21.0 at 4.36.0
  – 4.44.0, 0.26.0 at 4.45.0 – 4.57.0, 1.1.0 from 5.0.0; ACCELERATE_MIN, named in the plan's line). The
  plan names the release assumed (accelerate_assumed; review20b finding 8: the floor was assumed before, 100 % of
  the GPU at 4.36 – 4.44, the optimistic end).

A release not read takes the nearest read release below it and says so; below 4.35.2 is refused naming the range.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from .versions import nearest_read
from .versions import release_text as _text

READ: tuple[tuple[int, ...], ...] = (
    (4, 35, 2), (4, 36, 0), (4, 45, 0), (4, 46, 0), (4, 49, 0), (4, 50, 0), (4, 53, 0), (4, 54, 0), (4, 57, 0),
    (5, 0, 0), (5, 15, 0), (5, 23, 0),
)
CURRENT = READ[-1]     # runtimes/transformers.py TF_REF
SDPA_DEFAULT_FROM = (4, 36, 0)
AWQ_IPEX_FROM = (4, 54, 0)          # a GEMM checkpoint switched to IPEX without CUDA
AWQ_NO_GPU_CHECK_FROM = (5, 0, 0)
# (first release, what a fine-grained FP8 checkpoint gets: the lowest compute capability with FP8 kernels; "unknown":
# no such quantizer; 0.0 in the last row: dequantized below 8.9, not refused)
FP8_RULES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((4, 35, 2), "unknown", "4.46.0 quantizers/auto.py:98 \"Unknown quantization type\""),
    ((4, 49, 0), "9.0", "4.49.0 quantizers/quantizer_finegrained_fp8.py:51, :54-57"),
    ((4, 53, 0), "8.9", "4.53.0 quantizers/quantizer_finegrained_fp8.py:48, :53-55"),
    ((5, 0, 0), "dequantize", "5.0.0 quantizers/quantizer_finegrained_fp8.py:36-40, :48-54"),
)

# (first release, what a compressed-tensors FP8 checkpoint's Linears hold once loaded: "unknown" no such quantizer;
# "compressed" FP8 kept; "first-forward" decompressed to 16 bits at the first forward)
CT_FP8_RULES: tuple[tuple[tuple[int, ...], str, str], ...] = (
    ((4, 35, 2), "unknown", "4.44.0 quantizers/auto.py:86 \"Unknown quantization type\""),
    ((4, 45, 0), "compressed", "4.45.0 quantizers/quantizer_compressed_tensors.py:66, 5.14.0 :70 "
                               "(run_compressed=True by default)"),
    ((5, 15, 0), "first-forward", "5.15.0 quantizers/quantizer_compressed_tensors.py:46-49, :117, :124-131"),
)

# model_type → (first release, the default attention from it), from the first read release holding the class: where
# its modeling file declares `_supports_sdpa = True` ("sdpa") or not ("eager", the fallback). A type absent here (or
# with no attention layers, e.g. mamba) is planned with SDPA and the plan says it was not read.
_SDPA, _EAGER = "sdpa", "eager"
SDPA_BY_MODEL_TYPE: dict[str, tuple[tuple[tuple[int, ...], str], ...]] = {
    "llama": (((4, 36, 0), _SDPA),), "falcon": (((4, 36, 0), _SDPA),),
    "mistral": (((4, 36, 0), _EAGER), ((4, 37, 0), _SDPA)), "mixtral": (((4, 36, 0), _EAGER), ((4, 37, 0), _SDPA)),
    "phi": (((4, 36, 0), _EAGER), ((4, 39, 0), _SDPA)), "stablelm": (((4, 38, 0), _EAGER), ((4, 39, 0), _SDPA)),
    "gpt_neox": (((4, 36, 0), _EAGER), ((4, 42, 0), _SDPA)), "phi3": (((4, 41, 0), _EAGER), ((4, 45, 0), _SDPA)),
    "gemma2": (((4, 42, 0), _SDPA), ((5, 21, 0), _EAGER)), "gpt_oss": (((4, 55, 0), _EAGER),),
    "qwen2": (((4, 37, 0), _SDPA),), "gemma": (((4, 38, 0), _SDPA),), "cohere": (((4, 39, 0), _SDPA),),
    "olmo": (((4, 40, 0), _SDPA),), "qwen2_moe": (((4, 40, 0), _SDPA),), "dbrx": (((4, 40, 0), _SDPA),),
    "jamba": (((4, 40, 0), _SDPA),), "granite": (((4, 45, 0), _SDPA),), "granitemoe": (((4, 45, 0), _SDPA),),
    "mllama": (((4, 45, 0), _SDPA),), "olmo2": (((4, 47, 0), _SDPA),), "cohere2": (((4, 48, 0), _SDPA),),
    "qwen2_5_vl": (((4, 49, 0), _SDPA),), "gemma3": (((4, 50, 0), _SDPA),), "gemma3_text": (((4, 50, 0), _SDPA),),
    "mistral3": (((4, 50, 0), _SDPA),), "qwen3": (((4, 51, 0), _SDPA),), "qwen3_moe": (((4, 51, 0), _SDPA),),
    "llama4": (((4, 51, 0), _SDPA),), "deepseek_v3": (((4, 51, 0), _SDPA),), "glm4": (((4, 52, 0), _SDPA),),
    "granitemoehybrid": (((4, 52, 0), _SDPA),), "falcon_h1": (((4, 53, 0), _SDPA),), "smollm3": (((4, 53, 0), _SDPA),),
    "glm4_moe": (((4, 54, 0), _SDPA),), "deepseek_v2": (((4, 54, 0), _SDPA),), "qwen3_vl": (((4, 57, 0), _SDPA),),
    "qwen3_vl_moe": (((4, 57, 0), _SDPA),), "qwen3_next": (((4, 57, 0), _SDPA),), "olmo3": (((4, 57, 0), _SDPA),),
    "minimax_m2": (((5, 0, 0), _SDPA),), "qwen3_5": (((5, 23, 0), _SDPA),), "qwen3_5_moe": (((5, 23, 0), _SDPA),),
    "nemotron_h": (((5, 23, 0), _SDPA),), "gemma4": (((5, 23, 0), _SDPA),),
}
OWN_BALANCED_MEMORY_FROM = (5, 0, 0)    # transformers' own get_balanced_memory / get_max_memory (5.0.0)
ACCELERATE_BUFFER_FROM = (0, 22, 0)     # accelerate get_balanced_memory's one-GPU × 0.9
DEVICE_MAP_SHARE = 0.9                  # one GPU's share, and RAM's from 5.0.0, when max_memory is not given
# (first read transformers release, the least accelerate its dependency_versions_table.py requires)
ACCELERATE_MIN: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = (
    ((4, 35, 2), (0, 20, 3)), ((4, 36, 0), (0, 21, 0)), ((4, 45, 0), (0, 26, 0)), ((5, 0, 0), (1, 1, 0)),
)
ACCELERATE_NEWEST_READ = (1, 15, 0)     # the newest accelerate read (utils/modeling.py:1004-1011, get_max_memory :829)
_ACCELERATE = re.compile(r"^\s*(?:accelerate\s*==\s*)?(\d+)\.(\d+)(?:\.(\d+))?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class TransformersRules:
    release: tuple[int, ...]
    attn_default: str           # "eager" | "sdpa"
    awq_cpu: str                # "refused" | "ipex" | "runs"
    fp8: str                    # FP8_RULES' value
    fp8_source: str
    note: str = ""
    ct_fp8: str = "first-forward"   # CT_FP8_RULES' value
    ct_fp8_source: str = ""
    asked: tuple[int, ...] | None = None   # the release asked (the SDPA table is read at every minor release)

    @property
    def ref(self) -> str:
        return f"transformers {_text(self.release)}"

    def words(self) -> str:
        awq = {"refused": "AWQ refused without a CUDA GPU (quantizer_awq.py)",
               "ipex": "AWQ GEMM switched to IPEX on the CPU (4.54–4.57)", "runs": "AWQ with no GPU check"}[self.awq_cpu]
        fp8 = {"unknown": "no fine-grained FP8 quantizer (before 4.49)",
               "9.0": "fine-grained FP8 refused below compute capability 9.0 or without a GPU",
               "8.9": "fine-grained FP8 refused below compute capability 8.9 or without a GPU",
               "dequantize": "fine-grained FP8 dequantized to bf16 below 8.9 or without a GPU"}[self.fp8]
        ct = {"unknown": "no compressed-tensors quantizer (before 4.45)",
              "compressed": "compressed-tensors FP8 kept FP8 (run_compressed, 4.45–5.14)",
              "first-forward": "compressed-tensors FP8 decompressed to 16 bits at the first forward"}[self.ct_fp8]
        text = (f"transformers {_text(self.release)}: attn_implementation {self.attn_default} by default"
                + (" (SDPA from 4.36.0)" if self.attn_default == "eager" else " where the model class declares it, "
                   "else eager (SDPA_BY_MODEL_TYPE)") + f"; {awq}; {fp8}; {ct}")
        return text + (f" — {self.note}" if self.note else "")


def transformers_rules(key: tuple[int, ...] | None, asked: str = "") -> TransformersRules:
    """The rules of release ``key`` (None: 5.23.0, the modelled one); not read: the nearest read release below, said
    in ``note``; below 4.35.2: InputError naming the read range."""
    release, note = nearest_read(key, READ, asked, "transformers", "transformers", "transformers")
    fp8, fp8_source = [(r, s) for first, r, s in FP8_RULES if release >= first][-1]
    awq = "runs" if release >= AWQ_NO_GPU_CHECK_FROM else "ipex" if release >= AWQ_IPEX_FROM else "refused"
    ct, ct_source = [(r, s) for first, r, s in CT_FP8_RULES if release >= first][-1]
    return TransformersRules(release, "sdpa" if release >= SDPA_DEFAULT_FROM else "eager", awq, fp8, fp8_source, note,
                             ct, ct_source, (key + (0, 0, 0))[:3] if key is not None else None)


def default_attention(rules: TransformersRules | None, model_type: str) -> tuple[str, str]:
    """(the attention implementation from_pretrained picks when none is asked, why) for a model class at this release
    (None: 5.23.0): eager before 4.36; then SDPA_BY_MODEL_TYPE's row (a release before the first read holding the
    class is answered as that one, said); SDPA for a type not in the table (said)."""
    key = (rules.asked or rules.release) if rules is not None else CURRENT
    if key < SDPA_DEFAULT_FROM:
        return _EAGER, f"transformers {_text(key)}: eager, the only implementation before 4.36.0"
    rows = SDPA_BY_MODEL_TYPE.get(model_type)
    if rows is None:
        return _SDPA, f"'{model_type}' not in runlocal's table of SDPA classes (SDPA_BY_MODEL_TYPE): SDPA assumed"
    known = [(first, impl) for first, impl in rows if key >= first]
    first, impl = known[-1] if known else rows[0]
    said = (f"its modeling_{model_type}.py declares _supports_sdpa = True from {_text(first)}" if impl == _SDPA else
            f"its modeling_{model_type}.py does not declare _supports_sdpa = True at {_text(first)}"
            + (f" (SDPA from {_text(rows[1][0])})" if len(rows) > 1 and rows[1][1] == _SDPA and first < rows[1][0]
               else "") + ": from_pretrained falls back to eager")
    return impl, (f"transformers {_text(key)}: " + said
                  + ("" if known else f"; the class is not in the releases read before {_text(first)}"))


def version_refusal(rules: TransformersRules, quant: str, cuda: bool, capability: float | None) -> str | None:
    """What this release refuses at load that 5.23 does not: AWQ without a CUDA GPU, a fine-grained FP8 checkpoint it
    does not know, or one on a GPU below its FP8 kernels' compute capability (``quant``: the planner's quant key;
    ``cuda``: a CUDA GPU is there; ``capability``: its compute capability)."""
    if quant.startswith("awq") and not cuda and rules.awq_cpu == "refused":
        return (f"{rules.ref}: \"GPU is required to run AWQ quantized model.\" (quantizers/quantizer_awq.py "
                "validate_environment; no GPU check from 5.0)")
    if quant == "fp8-channel" and rules.ct_fp8 == "unknown":
        return (f"{rules.ref}: quant_method \"compressed-tensors\" is an \"Unknown quantization type\" "
                f"(quantizers/auto.py; the compressed-tensors quantizer came in 4.45; {rules.ct_fp8_source})")
    if quant != "fp8-block" or rules.fp8 == "dequantize":
        return None
    if rules.fp8 == "unknown":
        return (f"{rules.ref}: quant_method \"fp8\" is an \"Unknown quantization type\" (quantizers/auto.py; the "
                "fine-grained FP8 quantizer came in 4.49)")
    if not cuda:
        return f"{rules.ref}: \"No GPU found. A GPU is needed for FP8 quantization.\" ({rules.fp8_source})"
    if capability is not None and capability < float(rules.fp8):
        return (f"{rules.ref}: \"FP8 quantized models is only supported on GPUs with compute capability >= "
                f"{rules.fp8}\" (compute capability {capability:g}; {rules.fp8_source})")
    return None


def accelerate_release(text: str) -> tuple[int, ...]:
    """--accelerate X → (major, minor, patch), or InputError naming the field."""
    m = _ACCELERATE.match(text)
    if m is None:
        raise InputError(f"accelerate: expected an accelerate release such as 0.21.0, got '{text}'")
    return tuple(int(x or 0) for x in m.groups())


def device_map_shares(rules: TransformersRules | None, accelerate: str | None) -> tuple[float, float, str]:
    """(one GPU's share, RAM's share, where it is read) of device_map="auto" when max_memory is not given, at this
    transformers release (None: 5.23.0) and accelerate release (None: the newest read, ACCELERATE_NEWEST_READ)."""
    release = rules.release if rules is not None else CURRENT
    stated = accelerate_release(accelerate) if accelerate else None
    if release >= OWN_BALANCED_MEMORY_FROM:
        ignored = f"; --accelerate {accelerate} does not apply: transformers' own code" if accelerate else ""
        return (DEVICE_MAP_SHARE, DEVICE_MAP_SHARE, f"transformers {_text(release)} integrations/accelerate.py "
                f"get_balanced_memory, get_max_memory (its own from 5.0.0){ignored}")
    if stated is not None:
        acc, how = stated, "as stated"
    else:
        acc = ACCELERATE_NEWEST_READ
        how = "the newest read: what `pip install accelerate` installs"
    buffer = acc >= ACCELERATE_BUFFER_FROM
    return (DEVICE_MAP_SHARE if buffer else 1.0, 1.0,
            f"accelerate {_text(acc)} ({how}) utils/modeling.py get_balanced_memory: "
            + ("one GPU × 0.9 (from 0.22.0)" if buffer else "one GPU's whole free memory (the 10 % buffer came in "
               "0.22.0)") + "; RAM whole (get_max_memory; × 0.9 from transformers 5.0.0)")


def accelerate_assumed(rules: TransformersRules | None, accelerate: str | None) -> str | None:
    """The plan's line naming the accelerate release assumed, where it decides device_map="auto"'s headroom (before
    transformers 5.0) and none was stated; else None."""
    release = rules.release if rules is not None else CURRENT
    if accelerate or release >= OWN_BALANCED_MEMORY_FROM:
        return None
    least = [least for first, least in ACCELERATE_MIN if release >= first][-1]
    return (f"accelerate {_text(ACCELERATE_NEWEST_READ)} assumed (the newest read; this transformers release requires "
            f">= {_text(least)}, dependency_versions_table.py): its device_map=\"auto\" keeps 10 % of one GPU free "
            "(from 0.22.0); --accelerate X plans the one installed")


__all__ = ["SDPA_BY_MODEL_TYPE", "TransformersRules", "accelerate_assumed", "accelerate_release", "default_attention",
           "device_map_shares", "transformers_rules", "version_refusal"]
