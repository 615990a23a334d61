"""The longest context vLLM and SGLang start with: their own reading of config.json, and their refusal past it.

Both engines derive a maximum from config.json and refuse a longer ``--max-model-len`` / ``--context-length`` at
start-up unless an environment variable allows it (review21 #2: a ``vllm serve --max-model-len 65536`` for Qwen3-8B,
trained at 40,960, was printed as a command that runs). llama.cpp and Ollama warn and run instead.

vLLM (vllm/config/model.py ``_get_and_verify_max_len``; vllm/config.py before the split): the smallest of the length
keys (max_position_embeddings, n_positions, max_seq_len, seq_length, model_max_length, …); then, where config.json
has rope_scaling and the model is not Gemma 3 ("already scaled by RoPE scaling"), by release:
- to 0.29.0 (0.25.0 :2211-2219; 0.17.1–0.22.0 alike; rope block 0.26.0 :2213-2237, 0.27.0 / 0.27.1 :2307-2331,
  0.28.0 :2389-2413, 0.29.0 :2445-2469): rope_type not su / longrope / llama3 → ``derived *= factor`` (1.0 where
  none), after ``derived = original_max_position_embeddings`` for rope_type "yarn" alone;
- from 0.30.0 (0.30.0 :2461-2492, 0.31.0 :2539-2570, 0.32.0 :2585-2616, 0.33.0 :2610-2621; vLLM PR #56446, merged
  2026-09-11, after 0.29.0's upload on 09-09): yarn, deepseek_yarn and deepseek_llama_scaling join the exclusions —
  "YaRN variants leave max_position_embeddings already scaled … so `factor` must not be applied to it again" — so a
  yarn rope leaves max_position_embeddings (YARN_KEPT_FROM; every sdist 0.25.0 – 0.33.0 read by
  measurements/vllm_rocm/read_max_len.py, max_len.txt). The two agree wherever original × factor =
  max_position_embeddings (every yarn model in the catalog); they part where a user's override stretches the rope, so
  the YaRN stretch this module prints sets max_position_embeddings too from 0.30.0.
Past it: ``ValueError: User-specified max_model_len (N) is greater than the derived max_model_len (key=D or
model_max_length=None in model's config.json). … To allow overriding this maximum, set the env var
VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.`` Without --max-model-len the derived length is the default; the plan's default
is the model's own context (max_position_embeddings) instead, passed explicitly, since a linear rope_scaling factor
over a max_position_embeddings that already includes the stretch (LLaMA-2-7B-32K: 4,096 × 8 = 32,768, ×8 again =
262,144) would start the engine far past the trained length (review21b #2; ``*_default_note`` says so).

SGLang (python/sglang/srt/configs/model_config.py ``_derive_context_length``; hf_transformers_utils.py
``get_context_length``): the first of max_sequence_length, seq_length, max_seq_len, model_max_length,
max_position_embeddings, times rope_scaling's factor unless rope_scaling has original_max_position_embeddings or
rope_type llama3. Past it: ``ValueError: … User-specified context_length (N) is greater than the derived
context_length (D). … To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1``.

vLLM 0.9.1 alone then takes the tokenizer's length too: ModelConfig.get_and_verify_max_len ends
``max_model_len = min(max_model_len, tokenizer_config["model_max_length"])`` for every model, asked or derived, with no
message (0.9.1 vllm/config.py:1423-1443, PR #19201, written for BERT-style embedding models); 0.9.2 keeps it for pooling
models only ("for generative models, this can be incorrect and unduly limit the context window (e.g., DeepSeek-R1)",
:1452-1466, PR #20322); 0.8.5, 0.9.0 and 0.9.0.1 have no such step (their get_and_verify_max_len returns
_get_and_verify_max_len's length; every sdist sha256-checked against measurements/vllm_rocm/releases.txt). A vLLM
0.9.1 log: "Initializing a V1 LLM engine (v0.9.1) with config: … max_seq_len=12288" for InternVL3-14B asked 32768
(vllm-project/vllm#20241, "upgrade vLLM to 0.9.2 solved the problem"). So a 0.9.1 plan of a model whose
tokenizer_config.json states a shorter model_max_length (TOKENIZER_MAX_LENGTH) runs at that length.

The model description keeps max_position_embeddings only; rope_scaling is read from the catalog entry's config
(a model outside the catalog: none, so its max_position_embeddings). Neither engine's environment is read here:
the refusal names the variable that lifts it.
"""

from __future__ import annotations

import json

from ..model.spec import ModelSpec
from .published import catalog_alias, catalog_rope_scaling, rope_type, yarn_stretch
from .versions import VLLM_READ, release3

# the first vLLM release whose derived length leaves a YaRN rope's max_position_embeddings unmultiplied (0.30.0
# config/model.py:2461-2492; 0.29.0 :2445-2469 still resets yarn to original × factor; measurements/vllm_rocm/max_len.txt)
YARN_KEPT_FROM = (0, 30, 0)
_VLLM_UNSCALED = ("su", "longrope", "llama3")
_VLLM_YARN_KINDS = ("yarn", "deepseek_yarn", "deepseek_llama_scaling")


# The length each engine assumes where config.json states none (no key it reads): vLLM's "default_max_len = 2048"
# ("Assuming the model's maximum length is %d", vllm/config/model.py _get_and_verify_max_len, vllm-project/vllm
# 0052a5b8; vllm/config.py before the split, c0c2335c), SGLang's ``return 2048`` after its CONTEXT_LENGTH_KEYS
# (python/sglang/srt/utils/hf_transformers_utils.py get_context_length, sgl-project/sglang 002fc100)
VLLM_NO_LENGTH = 2048
SGLANG_NO_LENGTH = 2048


# vLLM releases that cap max_model_len at the tokenizer's model_max_length for a generative model: [first, end)
TOKENIZER_CAP_RELEASES = ((0, 9, 1), (0, 9, 2))
# tokenizer_config.json's model_max_length of catalog models where it is below their context, as public texts state it
# (the catalog keeps config.json, not tokenizer_config.json: another model's is not known here, and not applied)
TOKENIZER_MAX_LENGTH: dict[str, tuple[int, str]] = {
    "deepseek-r1": (16384, "\"R1's tokenizer is the original LlamaTokenizer with model_max_length set to 16384\" "
                           "(vllm-project/vllm#14652); \"model_max_length in DeepSeek-R1's tokenizer_config.json is set "
                           "to 16K\" (#20241)"),
    "deepseek-r1-distill-qwen-7b": (16384, "vllm-project/vllm PR #20322: \"the max-seq-len is limited to 16384\" for "
                                           "DeepSeek-R1-Distill-Qwen-7B / -32B"),
    "deepseek-r1-distill-qwen-32b": (16384, "vllm-project/vllm PR #20322; deepseek-ai/DeepSeek-R1#695 "
                                            "(tokenizer_config.json model_max_length 16384, max_position_embeddings "
                                            "131072)"),
}


def vllm_tokenizer_cap(model: ModelSpec, release: tuple[int, ...] | None) -> tuple[int, str] | None:
    """(the tokenizer's model_max_length, where it is stated) where this vLLM release (None: the current one) caps
    max_model_len at it; None elsewhere."""
    if release is None or not TOKENIZER_CAP_RELEASES[0] <= release3(release) < TOKENIZER_CAP_RELEASES[1]:
        return None
    return TOKENIZER_MAX_LENGTH.get(catalog_alias(model) or "")


def vllm_tokenizer_capped(model: ModelSpec, ctx: int, release: tuple[int, ...] | None) -> int:
    """The max_model_len this vLLM release starts with for a --max-model-len of ``ctx``."""
    cap = vllm_tokenizer_cap(model, release)
    return min(ctx, cap[0]) if cap else ctx


def vllm_tokenizer_note(model: ModelSpec, asked: int, release: tuple[int, ...] | None) -> str | None:
    """What the plan says where vLLM 0.9.1 starts shorter than --max-model-len ``asked``; None elsewhere."""
    cap = vllm_tokenizer_cap(model, release)
    if cap is None or asked <= cap[0]:
        return None
    return (f"vLLM 0.9.1 starts with max_model_len {cap[0]:,}, not {asked:,}: it caps max_model_len at the tokenizer's "
            f"model_max_length ({cap[0]:,}: {cap[1]}) with no message (vllm/config.py:1432-1443, PR #19201), so longer "
            "requests are refused; 0.9.2 lifts it for generative models (PR #20322), or raise model_max_length in "
            "tokenizer_config.json")


def _yarn_kept(release: tuple[int, ...] | None) -> bool:
    """Whether this vLLM release (None: the current one) leaves a YaRN rope's max_position_embeddings as it is."""
    return release3(release or VLLM_READ[1]) >= YARN_KEPT_FROM


def vllm_derived_max_model_len(model: ModelSpec, release: tuple[int, ...] | None = None) -> int | None:
    """vLLM's derived max_model_len at this release (None: the current one; module docstring); None where config.json
    states no length."""
    derived: float | None = model.max_position_embeddings
    if not derived:
        return None
    rope = catalog_rope_scaling(model)
    kind = rope_type(rope)
    if not kind or "gemma3" in model.family:
        return int(derived)
    if _yarn_kept(release):
        if kind not in _VLLM_UNSCALED + _VLLM_YARN_KINDS:
            derived = derived * float(rope.get("factor") or 1.0)
    elif kind not in _VLLM_UNSCALED:
        if kind == "yarn" and rope.get("original_max_position_embeddings"):
            derived = float(rope["original_max_position_embeddings"])
        derived = derived * float(rope.get("factor") or 1.0)
    return int(derived)


def vllm_planned_max_model_len(model: ModelSpec, ctx: int | None) -> int:
    """The --max-model-len a vLLM plan passes: the one asked, else the model's own context (max_position_embeddings,
    set explicitly: vllm_default_note), else vLLM's own length for a config.json that states none (VLLM_NO_LENGTH)."""
    return ctx or model.max_position_embeddings or VLLM_NO_LENGTH


def sglang_planned_context_length(model: ModelSpec, ctx: int | None) -> int:
    """The --context-length an SGLang plan passes: as vllm_planned_max_model_len, SGLang's own 2048 where config.json
    states no length (SGLANG_NO_LENGTH)."""
    return ctx or model.max_position_embeddings or SGLANG_NO_LENGTH


def sglang_derived_context_length(model: ModelSpec) -> int | None:
    """SGLang's derived context_length (module docstring); None where config.json states no length."""
    if not model.max_position_embeddings:
        return None
    rope = catalog_rope_scaling(model)
    factor = float(rope.get("factor") or 1) if rope else 1.0
    if "original_max_position_embeddings" in rope or rope_type(rope) == "llama3":
        factor = 1.0
    return int(factor * model.max_position_embeddings)


def _yarn_way(model: ModelSpec, ctx: int, flag: str, set_length: bool = False) -> str:
    """The override that stretches positions far enough (yarn_stretch); ``set_length``: max_position_embeddings
    raised to ctx too (vLLM from YARN_KEPT_FROM, which derives a YaRN model's length from max_position_embeddings
    alone)."""
    trained = model.max_position_embeddings or ctx
    factor, override = yarn_stretch(ctx, trained)
    if set_length:
        override["max_position_embeddings"] = trained * factor
    return f"{flag} '{json.dumps(override)}' (YaRN ×{factor}: {trained:,} × {factor} = {trained * factor:,} tokens)"


def _default_note(model: ModelSpec, derived: int | None, flag: str, engine: str) -> str | None:
    trained = model.max_position_embeddings
    if not derived or not trained or derived == trained:
        return None
    rope = catalog_rope_scaling(model)
    return (f"{flag} {trained:,} set explicitly: the model's own context (max_position_embeddings); {engine} "
            f"without it would start at {derived:,}, its length derived from config.json's rope_scaling "
            f"({rope_type(rope)}, factor {rope.get('factor')}), {derived / trained:g}× the positions the config "
            f"states")


def vllm_default_note(model: ModelSpec, release: tuple[int, ...] | None = None) -> str | None:
    """Why the command sets --max-model-len where vLLM's own default differs (module docstring); None elsewhere."""
    return _default_note(model, vllm_derived_max_model_len(model, release), "--max-model-len", "vLLM")


def sglang_default_note(model: ModelSpec) -> str | None:
    """Why the command sets --context-length where SGLang's own default differs; None elsewhere."""
    return _default_note(model, sglang_derived_context_length(model), "--context-length", "SGLang")


def vllm_context_refusal(model: ModelSpec, ctx: int | None, release: tuple[int, ...] | None = None) -> str | None:
    """vLLM's start-up refusal for a --max-model-len past its derived length at this release; None within it."""
    derived = vllm_derived_max_model_len(model, release)
    if not ctx or not derived or ctx <= derived:
        return None
    return (f"vLLM refuses to start: \"User-specified max_model_len ({ctx}) is greater than the derived max_model_len "
            f"(max_position_embeddings={derived} or model_max_length=None in model's config.json). … To allow "
            f"overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\" (vllm/config/model.py "
            f"_get_and_verify_max_len). No number of GPUs changes it: lower --max-model-len to {derived:,}, or "
            f"stretch the positions with {_yarn_way(model, ctx, '--hf-overrides', _yarn_kept(release))}, or set "
            f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (past the trained positions RoPE gives nan, vLLM warns)")


def sglang_context_refusal(model: ModelSpec, ctx: int | None) -> str | None:
    """SGLang's start-up refusal for a --context-length past its derived length; None within it."""
    derived = sglang_derived_context_length(model)
    if not ctx or not derived or ctx <= derived:
        return None
    return (f"SGLang refuses to start: \"User-specified context_length ({ctx}) is greater than the derived "
            f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. … To allow "
            f"overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1\" "
            f"(srt/configs/model_config.py _derive_context_length). No number of GPUs changes it: lower "
            f"--context-length to {derived:,}, or stretch the positions with "
            f"{_yarn_way(model, ctx, '--json-model-override-args')}, or set "
            f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
