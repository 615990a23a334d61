"""Which sliding windows llama.cpp really applies, for a model described by its config.json.

A config.json's ``sliding_window`` says how the model was trained; llama.cpp decides per architecture whether it
keeps a window cache (``hparams.swa_type`` / ``n_swa`` set in the architecture's ``load_arch_hparams``,
src/models/<arch>.cpp). An architecture that never sets them builds one plain cache of n_ctx cells for every
layer (src/llama-model.cpp create_memory: llama_kv_cache_iswa only when ``swa_type != LLAMA_SWA_TYPE_NONE``),
whatever the GGUF or the config carries. The cases that matter:

- Mistral-7B-v0.1 (config ``sliding_window`` 4096) converts to the ``llama`` architecture (convert_hf_to_gguf.py
  registers MistralForCausalLM / MixtralForCausalLM under LlamaModel), and src/models/llama.cpp reads no
  attention.sliding_window: llama.cpp caches all n_ctx cells (``n_swa = 0`` in its load log).
- Phi-3 (config ``sliding_window`` 2047): src/models/phi3.cpp reads the key, warns "Phi SWA is currently disabled"
  (ggml-org/llama.cpp PR #13676) and sets ``swa_type = NONE, n_swa = 0``.
- Qwen2/Qwen3 ``use_sliding_window``: src/models/qwen2.cpp / qwen3.cpp set no window.

So a config-derived ModelSpec keeps its windows for llama.cpp only when the architecture the converter writes
is in SWA_ARCHS; a ModelSpec read from a GGUF already says what llama.cpp reads (model/gguf.py) and is left
alone. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import replace

from ..memo import IdMemo
from ..model.spec import GGUF_NAME, AttentionSpec, ModelSpec
from .base import Step

# general.architecture → where llama.cpp turns the window on (ggml-org/llama.cpp master, src/models/*.cpp,
# load_arch_hparams; checked 2026-11 against the files named).
SWA_ARCHS: dict[str, str] = {
    "gemma2": "src/models/gemma2-iswa.cpp: swa_type STANDARD, set_swa_pattern(2)",
    "gemma3": "src/models/gemma3.cpp: swa_type STANDARD, set_swa_pattern(6)",
    "gemma3n": "src/models/gemma3n.cpp: swa_type STANDARD, set_swa_pattern(5)",
    "gemma4": "src/models/gemma4.cpp: swa_type STANDARD, per-layer sliding_window_pattern",
    "cohere2": "src/models/cohere2-iswa.cpp: swa_type STANDARD, set_swa_pattern(4)",
    "gpt-oss": "src/models/openai-moe-iswa.cpp: swa_type STANDARD, set_swa_pattern(2)",
    "llama4": "src/models/llama4.cpp: swa_type CHUNKED, n_swa 8192, 3 chunked layers then 1 full",
    "exaone4": "src/models/exaone4.cpp: swa_type STANDARD when attention.sliding_window is set, pattern 4",
    "olmo2": "src/models/olmo2.cpp: swa_type STANDARD when attention.sliding_window > 0 (OLMo 3), pattern 4",
    "plamo3": "src/models/plamo3.cpp: swa_type STANDARD when attention.sliding_window > 0, pattern 8",
}

# why the window goes, per architecture that has one in configs but not in llama.cpp
_DROPPED_WHY = {
    "llama": "src/models/llama.cpp reads no attention.sliding_window (Mistral/Mixtral configs convert to 'llama')",
    "phi3": "src/models/phi3.cpp: 'Phi SWA is currently disabled' (ggml-org/llama.cpp PR #13676): n_swa = 0",
}
DROPPED_NOTE = "llama.cpp: no sliding window"

_VIEWS = IdMemo(256)


def _from_gguf(model: ModelSpec) -> bool:
    # a spec read from a GGUF names its tensors as the file does (blk.N.…); one from a config, as the checkpoint
    return any(GGUF_NAME.match(t.name) for t in model.tensors[:8])


def loaded_arch(model: ModelSpec) -> str | None:
    """The general.architecture llama.cpp would load this model as (None: no known GGUF conversion)."""
    from ..quant.gguf_mix import gguf_arch

    return gguf_arch(model)


def as_llamacpp_loads(model: ModelSpec) -> ModelSpec:
    """``model`` with the sliding windows llama.cpp does not apply turned into full attention; the same object when
    nothing changes (the planners' caches key on identity, so one view is made per model)."""
    return _VIEWS.get(model, "swa", lambda: _view(model))


def _view(model: ModelSpec) -> ModelSpec:
    if _from_gguf(model) or not any(a.kind == "sliding" for a in model.attention_layers):
        return model
    arch = loaded_arch(model)
    if arch is None or arch in SWA_ARCHS:
        return model
    layers = tuple(
        replace(layer, attention=AttentionSpec("full", layer.attention.n_kv_heads, layer.attention.k_dim,
                                               layer.attention.v_dim, None))
        if layer.attention is not None and layer.attention.kind == "sliding" else layer
        for layer in model.layers)
    windows = sorted({a.window for a in model.attention_layers if a.kind == "sliding" and a.window})
    why = _DROPPED_WHY.get(arch, f"llama.cpp's '{arch}' architecture sets no swa_type (src/models/)")
    note = (f"{DROPPED_NOTE}: the config's {'/'.join(f'{w:,}' for w in windows)}-token window is not applied by "
            f"llama.cpp's '{arch}' architecture ({why}); every layer caches the whole context")
    return replace(model, layers=layers, notes=(*model.notes, note))


def window_step(model: ModelSpec) -> Step | None:
    """A plan step saying the config's window was dropped (None when it was not)."""
    note = next((n for n in model.notes if n.startswith(DROPPED_NOTE)), None)
    if note is None:
        return None
    return Step("sliding window", note[len(DROPPED_NOTE) + 2:], "none: n_swa = 0, every layer caches n_ctx cells",
                "llama.cpp src/models/<arch>.cpp load_arch_hparams, src/llama-model.cpp create_memory")
