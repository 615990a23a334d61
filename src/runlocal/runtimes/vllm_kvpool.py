"""vLLM's KV pool: the layer types that share it (``kv_groups``) and how many blocks, tokens and requests the memory
left for it holds (``kv_pool``), by engine generation (the rules and their logs: runtimes/vllm.py's docstring).
Split out of runtimes/vllm.py, unchanged."""

from __future__ import annotations

from dataclasses import dataclass
from math import lcm

from ..kv import layer_kv
from ..model.spec import AttentionSpec, ModelSpec, RecurrentSpec

BLOCK_SIZE = 16                      # vllm/config/cache.py: block_size on CUDA

# v0.6: V0 up to v0.6.4; v0: V0 from v0.6.5 (new profiler); v1-pre-hybrid: V1 before the hybrid KV-cache
# manager (v0.8–v0.9, sliding layers sized like full ones); v1: V1 with it, up to v0.20; v1-cudagraph: ≥ v0.21
ENGINES = ("v0.6", "v0", "v1-pre-hybrid", "v1", "v1-cudagraph")
# One KV-cache group of every layer, each sized for the whole context (V0's CacheEngine; V1 before the
# hybrid manager converted SlidingWindowSpec to FullAttentionSpec: unify_hybrid_kv_cache_specs)
UNIFIED_KV_ENGINES = ("v0.6", "v0", "v1-pre-hybrid")
# "GPU KV cache size" = int(max_concurrency × max_model_len): seen from v0.21 (issue #41789; PR #40694's
# formula); v0.19 still printed num_blocks // groups × block_size (issue #40691). v0.20 is not covered by a log.
CONCURRENCY_REPORT_ENGINES = ("v1-cudagraph",)
DEFAULT_ENGINE = "v1-cudagraph"      # vLLM ≥ 0.21


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class KVGroup:
    """Layers of one attention kind on one rank: bytes per token of one layer, and the window; or
    (kind "mamba") recurrent layers, whose state of ``state_bytes`` per request is one page (MambaSpec)."""

    kind: str
    layers: int
    bytes_per_token: int       # of one layer, on this rank (0 for a mamba group)
    window: int | None = None
    state_bytes: int = 0       # mamba: conv + SSM state of one layer on this rank, before padding
    chunk: int = 0             # mamba: the model's Mamba-2 chunk size (block alignment with prefix caching "all")


# --- Mamba / linear-attention state (vLLM v0.19.0, vllm/model_executor/layers/mamba/mamba_utils.py) ---------------
# MambaStateShapeCalculator: per TP rank, the conv state is (kernel − 1) × conv_dim / TP and the SSM ("temporal")
# state heads / TP × its per-head block: Gated DeltaNet conv_dim = 2 × key heads × key dim + value heads × value dim,
# SSM (value heads / TP, value dim, key dim); Mamba-2 conv_dim = intermediate + 2 × groups × d_state, with groups
# raised to the TP size when they do not divide it (extra_groups_for_head_shards), SSM (heads / TP, head_dim,
# d_state); Mamba-1 conv (kernel − 1, intermediate / TP), SSM (intermediate / TP, d_state).
# MambaStateDtypeCalculator._mamba_state_dtype: conv in mamba_cache_dtype ("auto": the model dtype — not the
# --kv-cache-dtype), SSM in mamba_ssm_cache_dtype ("auto": same as the conv state). Per-model hooks change the
# default (vllm/model_executor/models/config.py, MODELS_CONFIG_MAP): Qwen3_5ForConditionalGenerationConfig takes the
# HF config's mamba_ssm_dtype (Qwen3.5 ships "float32"); NemotronHForCausalLMConfig defaults to float32.
# Qwen3-Next (Qwen3NextForCausalLM) and Granite 4.0-H have no hook: both states in the model dtype.
SSM_DTYPE_FROM_CONFIG = ("Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration")
SSM_FP32_DEFAULT = ("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM")
# Models declaring SupportsMambaPrefixCaching (v0.19.0): with prefix caching their mamba_cache_mode is "all", the
# others' "align" (MambaModelConfig.verify_and_update_config). Without prefix caching — the default for hybrid
# models (ModelConfig.is_prefix_caching_supported is False for attn_type "hybrid") — it is "none".
MAMBA_PREFIX_CACHING = ("BambaForCausalLM", "NemotronHForCausalLM", "JambaForCausalLM", "Mamba2ForCausalLM",
                        "MambaForCausalLM", "Zamba2ForCausalLM", "GraniteMoeHybridForCausalLM", "FalconH1ForCausalLM")
MAMBA_CACHE_MODES = ("none", "align", "all")
MODEL_DTYPE_BYTES = 2        # bf16/f16 checkpoints: the model dtype the "auto" state dtypes resolve to


def mamba_cache_mode(model: ModelSpec, enable_prefix_caching: bool) -> str:
    """The mamba_cache_mode vLLM v0.19 picks for this model (MambaModelConfig.verify_and_update_config)."""
    if not enable_prefix_caching:
        return "none"
    return "all" if model.architecture in MAMBA_PREFIX_CACHING else "align"


def gated_deltanet_state_bytes(tp: int, key_heads: int, value_heads: int, key_dim: int, value_dim: int,
                               kernel: int, conv_bytes: int = MODEL_DTYPE_BYTES,
                               ssm_bytes: int = MODEL_DTYPE_BYTES) -> int:
    """One Gated DeltaNet layer's state on one rank (gated_delta_net_state_shape): conv + SSM bytes."""
    conv_dim = 2 * key_heads * key_dim + value_heads * value_dim
    return ((kernel - 1) * (conv_dim // tp) * conv_bytes
            + (value_heads // tp) * value_dim * key_dim * ssm_bytes)


def recurrent_state_bytes_per_rank(r: RecurrentSpec, tp: int, architecture: str = "") -> int:
    """Conv + SSM state of one recurrent layer on one rank, as vLLM shapes and types it (see above)."""
    ssm_dtype = r.ssm_dtype if architecture in SSM_DTYPE_FROM_CONFIG else None
    if architecture in SSM_FP32_DEFAULT:
        ssm_dtype = r.ssm_dtype or "float32"
    ssm_bytes = 4 if ssm_dtype in ("float32", "fp32") else MODEL_DTYPE_BYTES
    tp = max(1, tp)
    if not r.conv_channels:                   # shapes unknown: split both parts evenly
        return _cdiv(r.conv_elems, tp) * MODEL_DTYPE_BYTES + _cdiv(r.state_elems, tp) * ssm_bytes
    rows = r.conv_elems // r.conv_channels    # kernel − 1
    channels = r.conv_channels
    if r.kind == "mamba2" and r.n_groups and r.n_groups % tp:
        channels += 2 * (tp - r.n_groups) * r.d_state
    return rows * (channels // tp) * MODEL_DTYPE_BYTES + (r.state_elems // tp) * ssm_bytes


def kv_groups(model: ModelSpec, cache_type_k: str, cache_type_v: str, tp: int = 1, pp: int = 1) -> list[KVGroup]:
    """The KV-cache layer types of the first pipeline stage, per rank (kv_cache_utils.py: one
    spec per layer; equal specs are grouped)."""
    layers = model.attention_layers
    recurrent = model.recurrent_layers
    if pp > 1:
        layers = layers[: _cdiv(len(layers), pp)]
        recurrent = recurrent[: _cdiv(len(recurrent), pp)]
    groups: dict[tuple, KVGroup] = {}
    key: tuple[str, int, int | None]      # (kind, bytes per token, window or chunk)
    for a in layers:
        heads = 1 if a.kind == "mla" else max(1, _cdiv(a.n_kv_heads, tp))
        lk = layer_kv(AttentionSpec(a.kind, heads, a.k_dim, a.v_dim, a.window), cache_type_k, cache_type_v,
                      store_v=a.kind != "mla")
        per_token = lk.k_bytes + (lk.v_bytes if a.kind != "mla" else 0)
        key = (a.kind if a.kind != "mla" else "full", per_token, a.window if a.kind == "sliding" else None)
        g = groups.get(key)
        groups[key] = KVGroup(key[0], (g.layers if g else 0) + 1, per_token, key[2])
    for r in recurrent:
        # one MambaSpec per distinct state (vLLM groups equal specs)
        state = recurrent_state_bytes_per_rank(r, tp, model.architecture)
        key = ("mamba", state, r.chunk_size)
        g = groups.get(key)
        groups[key] = KVGroup("mamba", (g.layers if g else 0) + 1, 0, None, state, r.chunk_size)
    return list(groups.values())


@dataclass(frozen=True)
class KVPool:
    num_blocks: int
    tokens: int                 # "GPU KV cache size: N tokens", as this engine reports it
    max_concurrency: float      # "Maximum concurrency for L tokens per request: X"
    bytes_per_token: int        # all layers of this rank
    bytes_per_block: int        # what one block costs across the layers that share it (page × group_size)
    blocks_per_request: int = 0  # blocks one request of max_model_len tokens takes, over all groups
    groups: int = 1             # KV-cache groups sharing the pool (block tables per request)
    group_size: int = 0         # layers per group
    block_size: int = BLOCK_SIZE  # tokens per block of the (largest-page) attention layers
    page_bytes: int = 0         # one layer's page (every group's, once unified)
    mamba_state_bytes: int = 0  # one recurrent layer's state on this rank, before padding to the page
    mamba_groups: int = 0       # of ``groups``, those of recurrent layers
    mamba_blocks_per_request: int = 0  # blocks one request takes in each mamba group
    mamba_cache_mode: str = "none"


# Hybrid grouping (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): when the largest layer
# count of the attention types is below 1.5 × the smallest, the largest is the group size (late 2025,
# for gpt-oss + an EAGLE drafter: 12 sliding + 13 full → groups of 13; the mid-2025 code always took
# the smallest). Only matters for unequal counts within 1.5×; every catalog hybrid model is n:1.
GROUP_SIZE_MAX_RATIO = 1.5


def _sliding_tokens(window: int, max_model_len: int, max_num_batched_tokens: int) -> int:
    """Tokens a sliding-window layer keeps for one request while it prefills in chunks
    (kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes)."""
    return min(window - 1 + max_num_batched_tokens, max_model_len)


def _mamba_blocks_per_request(mode: str, max_model_len: int, block: int) -> int:
    """MambaSpec.max_memory_usage_bytes (v0.19.0) in pages: one state per request ("none"), two ("align": the
    running state and the last block-aligned one), or one per block of the context ("all")."""
    if mode == "all":
        return _cdiv(max_model_len, block)
    return 2 if mode == "align" else 1


def kv_pool(available: int, groups: list[KVGroup], max_model_len: int, max_num_batched_tokens: int,
            engine: str = DEFAULT_ENGINE, num_blocks: int | None = None, mamba_cache_mode: str = "none",
            block_size: int = BLOCK_SIZE) -> KVPool:
    """Blocks, tokens and concurrency from the KV memory of the smallest rank (vllm/v1/core/kv_cache_utils.py),
    by engine generation (see the module docstring). ``num_blocks`` overrides the count the memory gives
    (to check the per-request arithmetic against a logged count). Mamba groups (``kind == "mamba"``) take
    part from the hybrid KV-cache manager on (``v1``); the older engines' pools hold the attention layers only.
    ``block_size``: tokens per block where --block-size is unset (16 on CUDA; the CPU backend's by release:
    vllm_cpu.cpu_block_size); a hybrid attention + mamba pool sizes its block from the state instead."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
    if mamba_cache_mode not in MAMBA_CACHE_MODES:
        raise ValueError(f"mamba_cache_mode: expected one of {MAMBA_CACHE_MODES}, got {mamba_cache_mode!r}")
    mamba = [g for g in groups if g.kind == "mamba"] if engine not in UNIFIED_KV_ENGINES else []
    groups = [g for g in groups if g.kind != "mamba"]
    per_token = sum(g.bytes_per_token * g.layers for g in groups)
    if mamba:
        return _hybrid_mamba_pool(available, groups, mamba, max_model_len, max_num_batched_tokens, engine,
                                  num_blocks, mamba_cache_mode)
    if not groups or per_token <= 0:
        return KVPool(0, 0, 0.0, 0, 0)
    avail = max(0, available)
    kinds = {(g.kind, g.window) for g in groups}
    if engine in UNIFIED_KV_ENGINES or len(kinds) == 1:
        # one group of every layer (FullAttentionSpec / UniformTypeKVCacheSpecs): a block holds a page of
        # each layer, num_blocks = available // Σ pages
        per_block = per_token * block_size
        blocks = avail // per_block if num_blocks is None else num_blocks
        (kind, window), = kinds if len(kinds) == 1 else {("full", None)}
        n_layers = sum(g.layers for g in groups)
        if engine in UNIFIED_KV_ENGINES:
            # V0 and v0.8: tokens = blocks × block, concurrency = tokens / max_model_len (PR #13596's formula).
            # A model whose every layer slides is sized for the whole context here too (an assumption: no log
            # of such a model on these versions; the hybrid-manager branch below holds the window only)
            tokens = blocks * block_size
            need = _cdiv(max_model_len, block_size)
            conc = tokens / max_model_len if max_model_len else 0.0
        else:
            span = _sliding_tokens(window, max_model_len, max_num_batched_tokens) if window else max_model_len
            need = _cdiv(span, block_size) + (1 if window else 0)
            conc = blocks / need if need else 0.0
            tokens = int(conc * max_model_len) if engine in CONCURRENCY_REPORT_ENGINES else blocks * block_size
        return KVPool(blocks, tokens, conc, per_token, per_block, need, 1, n_layers, block_size,
                      page_bytes=per_token * block_size // max(1, n_layers))
    # hybrid KV-cache manager: one type per distinct layer spec, pages unified to the largest by giving the
    # smaller ones proportionally larger blocks (unify_kv_cache_spec_page_size; vLLM refuses a page that does
    # not divide the largest, here rounded up)
    page = max(g.bytes_per_token for g in groups) * block_size
    group_size = _group_size([g.layers for g in groups])
    per_block = page * group_size
    blocks = max(0, available) // page // group_size if num_blocks is None else num_blocks
    n_groups = need = 0
    block_sizes = []
    for g in groups:
        block = block_size * _cdiv(page, g.bytes_per_token * block_size)
        block_sizes.append(block)
        k = _cdiv(g.layers, group_size)           # the last group of a type is padded
        n_groups += k
        need += k * _attention_blocks_per_request(g, block, max_model_len, max_num_batched_tokens)
    conc = blocks / need if need else 0.0
    if engine in CONCURRENCY_REPORT_ENGINES:
        tokens = int(conc * max_model_len)
    else:
        tokens = blocks // n_groups * min(block_sizes)
    return KVPool(blocks, tokens, conc, per_token, per_block, need, n_groups, group_size, block_size, page_bytes=page)


def _group_size(counts: list[int]) -> int:
    """_get_kv_cache_groups_uniform_page_size: the smallest layer count of the types, or the largest when it is
    below 1.5 × the smallest."""
    group_size = min(counts)
    if max(counts) < GROUP_SIZE_MAX_RATIO * min(counts):
        group_size = max(counts)
    return group_size


def _attention_blocks_per_request(g: KVGroup, block: int, max_model_len: int, max_num_batched_tokens: int) -> int:
    """FullAttentionSpec / SlidingWindowSpec.max_memory_usage_bytes in blocks of ``block`` tokens."""
    if g.window:
        return _cdiv(_sliding_tokens(g.window, max_model_len, max_num_batched_tokens), block) + 1
    return _cdiv(max_model_len, block)


def attention_block_for_mamba(state_bytes: int, attn_bytes_per_token: int, mode: str = "none",
                              chunk: int = 0) -> int:
    """The attention block size vLLM sets so that an attention page holds a mamba state
    (HybridAttentionMambaModelConfig.verify_and_update_config, v0.19.0): the smallest multiple of 16 tokens
    whose page ≥ the state ("none"/"align"), or with prefix caching "all" a multiple of lcm(chunk, 16) tokens."""
    if mode == "all":
        step = lcm(chunk or BLOCK_SIZE, BLOCK_SIZE)
        return step * _cdiv(_cdiv(state_bytes, attn_bytes_per_token), step)
    return BLOCK_SIZE * _cdiv(state_bytes, BLOCK_SIZE * attn_bytes_per_token)


def _hybrid_mamba_pool(available: int, attn: list[KVGroup], mamba: list[KVGroup], max_model_len: int,
                       max_num_batched_tokens: int, engine: str, num_blocks: int | None, mode: str) -> KVPool:
    """Attention + Mamba / linear-attention layers in one block pool (vLLM v0.19.0):

    * the attention block grows until one attention page ≥ the largest mamba state, and the mamba page is
      padded to the attention page (mamba_page_size_padded): one page size for every group;
    * layers are grouped as for sliding + full (_get_kv_cache_groups_uniform_page_size): e.g. Qwen3-Next,
      12 full + 36 Gated DeltaNet → group size 12, 1 + 3 groups; num_blocks = available // page // group size;
    * a request takes ceil(max_model_len / block) blocks in a full-attention group and 1 ("none"), 2 ("align")
      or ceil(max_model_len / block) ("all") in each mamba group; concurrency = num_blocks / their sum
      (get_max_concurrency_for_kv_cache_config);
    * "GPU KV cache size": up to v0.20 num_blocks // groups × the smallest group block size, where a mamba
      group's block is mamba_block_size (max_model_len without prefix caching) — issue #40691; from v0.21
      int(concurrency × max_model_len) (PR #40694).
    """
    state = max(g.state_bytes for g in mamba)
    a1 = max((g.bytes_per_token for g in attn), default=0)
    chunk = max(g.chunk for g in mamba)
    if a1:
        block = attention_block_for_mamba(state, a1, mode, chunk)
        page = block * a1
    else:                                      # attention-free (Mamba): one page per state
        block, page = max_model_len, state
    mamba_block = block if mode in ("align", "all") else max_model_len
    counts = [g.layers for g in attn] + [g.layers for g in mamba]
    group_size = _group_size(counts)
    blocks = max(0, available) // page // group_size if num_blocks is None else num_blocks
    n_groups = need = 0
    block_sizes = []
    for g in attn:
        g_block = page // g.bytes_per_token     # smaller attention pages get larger blocks
        block_sizes.append(g_block)
        k = _cdiv(g.layers, group_size)
        n_groups += k
        need += k * _attention_blocks_per_request(g, g_block, max_model_len, max_num_batched_tokens)
    per_mamba = _mamba_blocks_per_request(mode, max_model_len, mamba_block)
    n_mamba = 0
    for g in mamba:
        k = _cdiv(g.layers, group_size)
        n_mamba += k
        block_sizes.append(mamba_block)
    n_groups += n_mamba
    need += n_mamba * per_mamba
    conc = blocks / need if need else 0.0
    if engine in CONCURRENCY_REPORT_ENGINES:
        tokens = int(conc * max_model_len)
    else:
        tokens = blocks // n_groups * min(block_sizes)
    per_token = sum(g.bytes_per_token * g.layers for g in attn)
    return KVPool(blocks, tokens, conc, per_token, page * group_size, need, n_groups, group_size, block, page,
                  state, n_mamba, per_mamba, mode)
