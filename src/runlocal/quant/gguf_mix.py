"""GGUF file bytes for any model under any llama.cpp quantization type, without the file.

Two steps, each following llama.cpp's own code (ggml-org/llama.cpp: src/llama-quant.cpp at commit
007dbbf3fd17eefe9b47fee45f48f7ba5e62b714, compared with 8784689fee07c6daabf3487d24e1535534ef6e6b;
convert_hf_to_gguf.py's prepare_tensors and the MoE/Gemma 3 modify_tensors):

1. ``gguf_tensors`` — the tensors ``convert_hf_to_gguf.py`` writes: Hugging Face names mapped to
   GGUF names with gguf-py's ``TensorNameMap``; per-expert weights merged into 3-D
   ``ffn_{gate,up,down}_exps`` tensors and fused ``gate_up_proj`` experts split (``modify_tensors``
   of the MoE model classes); vision/audio towers dropped (they go to a separate mmproj file);
   ``lm_head`` absent when embeddings are tied; Gemma 3's out-of-vocabulary embedding rows trimmed;
   DeepSeek-V2/V3 and Kimi K2 (arch deepseek2, MLA) ``kv_b_proj`` split per head into ``attn_k_b``
   (K part transposed) and ``attn_v_b`` and the V3 router's ``e_score_correction_bias`` written as
   ``exp_probs_b`` (conversion/deepseek.py ``DeepseekV2Model.modify_tensors``, base.py
   ``map_tensor_name``; llama.cpp 0c1e5709, the build the measurements ran).
   Storage as ``prepare_tensors`` decides it: 1-D tensors, ``*_norm.weight``, biases (any name
   not ending in ``.weight``), routers (``ffn_gate_inp``), ``pos_embd``, ``token_types`` and
   ``ssm_conv1d`` stay F32; everything else keeps the checkpoint's 16-bit type.

2. ``choose_type`` — ``src/llama-quant.cpp``: ``tensor_allows_quantization`` (2-D/3-D weights only,
   no norms, routers, conv1d …), ``llama_ftype_get_default_type``, the per-ftype mix of
   ``llama_tensor_get_type_impl`` (Q6_K/Q5_K output and tied embeddings, ``use_more_bits`` for
   attn_v/ffn_down in Q4_K_M/Q5_K_M, the Q3_K_* / Q2_K / IQ* bumps, the n_expert == 8 and 70B
   bumps, the MXFP4_MOE split) and ``tensor_type_fallback`` when a row length is not a multiple
   of the block size. Tensors are visited in the loader's order (``weight_name_comparer``:
   non-block tensors first, then by block number, then by name), because the attn_v and
   ffn_down counters depend on it.

Bytes are exact block arithmetic from gguf-py's ``GGML_QUANT_SIZES`` (rows × blocks per row ×
block bytes), each tensor padded to the 32-byte ``general.alignment``. The header (tensor infos
+ key/value metadata, mostly the tokenizer vocabulary) is an estimate, see ``header_bytes``.

One deliberate departure from 007dbbf3: its ``tensor_category`` refactor sends ``attn_qkv`` and
``attn_kv_b`` through the attn_v rules (the ``ATTENTION_QKV`` branch became unreachable); the
releases that made the files on the Hub did not, so the earlier behaviour is the default and
``fused_qkv_as_v=True`` gives the new one (see ``choose_type``). MLA's ``attn_k_b`` / ``attn_v_b``
match no category (``tensor_get_category``: OTHER), so they keep the ftype's default type, ``attn_k_b``'s
128-element rows taking the fallback of the 256-block types (Q4_K → Q5_0, Q6_K → Q8_0 …).

What cannot be predicted from the model alone: an importance matrix changes a few IQ3/IQ4/Q4_0/
Q5_0 choices (``imatrix``); files made before 2024 used older Q2_K, Q3_K_M (80-layer) and Q4_K_S
mixes; hand-made mixes (``--output-tensor-type``, ``--tensor-type``, unsloth "UD" files, Q4_K_L …)
are not llama-quantize defaults.

Layout: gguf_ftypes.py (file types, tensor bytes), gguf_convert.py (step 1), gguf_quantize.py (step 2), and here
the header estimate and the public totals; the names other modules use are importable from here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from ..errors import InputError
from ..memo import IdMemo
from ..model.spec import ModelSpec, TensorInfo
from .ggml_types import Arch as MODEL_ARCH
from .ggml_types import GGMLType as GGMLQuantizationType
from .gguf_convert import arch_of_family, converted, gguf_arch, gguf_names, gguf_tensors
from .gguf_ftypes import ALIGNMENT, SUPPORTED_FTYPES, normalize_ftype, pad_to_alignment, tensor_bytes
from .gguf_quantize import allows_quantization, choose_type, default_imatrix

__all__ = ["ALIGNMENT", "SUPPORTED_FTYPES", "allows_quantization", "arch_of_family", "choose_type", "default_imatrix",
           "pad_to_alignment", "gguf_arch", "gguf_names", "gguf_tensors", "gguf_view", "header_bytes", "normalize_ftype",
           "predict_gguf_bytes", "tensor_bytes", "weight_bytes_by_type"]

# ------------------------------------------------------------------------------------------------
# header estimate

# Tokenizer metadata as convert_hf_to_gguf writes it (gguf.SpecialVocab / _set_vocab_*):
#   tokenizer.ggml.tokens      one string per token: 8-byte length + UTF-8 bytes
#   tokenizer.ggml.token_type  one int32 per token
#   tokenizer.ggml.scores      one float32 per token (SentencePiece vocabularies)
#   tokenizer.ggml.merges      one string "a b" per BPE merge (byte-level BPE vocabularies)
# Text lengths and merge counts are estimates, not read from any tokenizer: 9 bytes of text per
# token and 10 per merge string, fitted to the published Qwen3 and Llama 3 files in
# tests/data/gguf_published_sizes.json (whose headers then come out within 2 KB and 50 KB).
# Tokenizers converted from tiktoken ranks (Llama 3: 280,147 merges for 128,256 tokens; o200k;
# Tekken) carry about 2.2 merges per token, other BPE vocabularies about one.
_TOKEN_TEXT = 9
_MERGE_TEXT = 10
_FIXED_KV = 6_000          # general.*, <arch>.* hyperparameters, special token ids, chat template


def _tokenizer_kind(spec: ModelSpec, arch: str | None) -> tuple[str, float]:
    """('spm' | 'bpe', merges per token)."""
    v = spec.vocab_size
    if arch in (MODEL_ARCH.GEMMA, MODEL_ARCH.GEMMA2, MODEL_ARCH.GEMMA3, MODEL_ARCH.GEMMA3N):
        return "spm", 0.0
    if arch in (MODEL_ARCH.LLAMA, MODEL_ARCH.PHI3) and v <= 65_536 and v not in (49_152, 49_155):
        return "spm", 0.0                   # Llama 2, Mistral v0.1-v0.3, Mixtral, Phi-3, Yi
    if arch == MODEL_ARCH.GPT_OSS or (arch == MODEL_ARCH.LLAMA and v >= 128_000):
        return "bpe", 2.2                   # tiktoken-derived: Llama 3, o200k, Tekken
    return "bpe", 1.0


def header_bytes(spec: ModelSpec, typed: list[tuple[TensorInfo, GGMLQuantizationType]]) -> int:
    """Estimated GGUF header: fixed fields, tensor infos (exact), key/value metadata (estimated)."""
    n = 24                                                          # magic, version, n_tensors, n_kv
    for t, _ in typed:                                              # name, n_dims, dims, type, offset
        n += 8 + len(t.name.encode()) + 4 + 8 * len(t.shape) + 4 + 8
    kind, merges_per_token = _tokenizer_kind(spec, gguf_arch(spec))
    v = spec.vocab_size
    n += _FIXED_KV + v * (8 + _TOKEN_TEXT) + v * 4                  # tokens + token_type
    if kind == "spm":
        n += v * 4                                                  # scores
    else:
        n += int(v * merges_per_token) * (8 + _MERGE_TEXT)          # merges
    return pad_to_alignment(n)


# ------------------------------------------------------------------------------------------------
# public totals

def predict_gguf_bytes(spec: ModelSpec, ftype: str, *, include_metadata: bool = True,
                       imatrix: bool | None = None, fused_qkv_as_v: bool = False) -> int:
    """Predicted size of the single GGUF file llama-quantize writes for ``spec`` under ``ftype``.

    Tensor data is exact (each tensor padded to 32 bytes); the header is estimated (header_bytes).
    """
    tensors = gguf_tensors(spec)
    typed = choose_type(ftype, tensors, spec, imatrix=imatrix, fused_qkv_as_v=fused_qkv_as_v)
    data = sum(pad_to_alignment(tensor_bytes(t.shape, q)) for t, q in typed)
    return data + (header_bytes(spec, typed) if include_metadata else 0)


def weight_bytes_by_type(spec: ModelSpec, ftype: str, *, imatrix: bool | None = None,
                         fused_qkv_as_v: bool = False) -> dict[str, int]:
    """Tensor bytes per ggml type (e.g. {'Q4_K': …, 'Q6_K': …, 'F32': …}), largest first."""
    tensors = gguf_tensors(spec)
    totals: dict[str, int] = {}
    for t, q in choose_type(ftype, tensors, spec, imatrix=imatrix, fused_qkv_as_v=fused_qkv_as_v):
        totals[q.name] = totals.get(q.name, 0) + tensor_bytes(t.shape, q)
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def gguf_view(spec: ModelSpec, ftype: str) -> ModelSpec | None:
    """``spec`` as the GGUF llama-quantize would write under ``ftype``: GGUF tensor names and types, and the
    family as general.architecture. What llama.cpp's graph of a checkpoint or catalog model looks like
    (runtimes/ggml_graph.py traces it); None when the architecture or the type has no GGUF equivalent.
    Kept per spec object and ftype: every plan of a search asks again, and the lru_cache behind (which keeps one
    view for equal specs, so the caches keyed by the view's identity are shared) hashes the whole spec, every
    tensor, on each call (~0.3 ms for a 1,100-tensor MoE, ~50 times in one llama.cpp check)."""
    return _VIEWS.get(spec, ftype, lambda: _gguf_view(spec, ftype))


_VIEWS = IdMemo(64)


@lru_cache(maxsize=32)
def _gguf_view(spec: ModelSpec, ftype: str) -> ModelSpec | None:
    arch = gguf_arch(spec)
    if arch is None or not spec.tensors:
        return None
    try:
        ftype = normalize_ftype(ftype)
        typed = choose_type(ftype, converted(spec), spec)
    except (InputError, KeyError, ValueError):
        return None
    # TensorInfo built directly: dataclasses.replace costs ~5 µs a tensor, and an 80-layer model has ~2,900; one the
    # type leaves as converted (F32 norms, biases, routers: its bytes are the same type's) is the converter's own.
    # (The type's name read from a dict, not the enum's property, and the bytes once per shape: layers repeat them.)
    names, nbytes = _TYPE_NAMES, dict[tuple[tuple[int, ...], GGMLQuantizationType], int]()
    tensors = []
    for t, q in typed:
        name = names[q]
        if name == t.dtype:
            tensors.append(t)
            continue
        size = nbytes.get((t.shape, q))
        if size is None:
            size = nbytes[(t.shape, q)] = tensor_bytes(t.shape, q)
        tensors.append(TensorInfo(t.name, t.shape, t.role, t.layer, name, size))
    return replace(spec, tensors=tuple(tensors), family=arch)


_TYPE_NAMES = {q: q.name for q in GGMLQuantizationType}
