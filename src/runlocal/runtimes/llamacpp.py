"""llama.cpp / llama-server: what it allocates on each device.

Rules follow llama.cpp's own code (ggml-org/llama.cpp; measured against the commit llama-cpp-python
0.3.36 vendors, 0c1e57098, in measurements/llamacpp — benchmarks/accuracy.py prints the comparison):
- context (src/llama-context.cpp, llama_context ctor): llama-server's -c is the total over the slots;
  a unified cache (--kv-unified) is one stream of pad(n_ctx, 256) cells, otherwise each of the
  n_seq_max sequences gets a stream of pad(n_ctx / n_seq_max, 256) cells. n_batch ≤ n_ctx, n_ubatch ≤ n_batch.
- KV (src/llama-kv-cache.cpp): one K row of n_embd_k_gqa and one V row of n_embd_v_gqa per layer per
  cell, in the cache type; MLA stores the latent only (V is a view of it). Sliding-window layers keep
  min(n_ctx_seq, pad(n_swa × seqs + n_ubatch, 256)) cells per stream, seqs = n_seq_max in a unified
  stream, else 1, and the full n_ctx_seq with --swa-full (src/llama-kv-cache-iswa.cpp). Recurrent layers
  a constant f32 conv + ssm state per sequence (src/llama-memory-recurrent.cpp). ggml-cuda pads
  quantized rows to 512 elements. llama_init_from_model refuses a quantized V cache without flash
  attention, and different K/V types for MLA.
- offload (src/llama-model.cpp load_tensors): the last n_gpu_layers slots of n_layer + 1 (the output
  layer is slot n_layer) go to the GPUs, split by --tensor-split (default: free memory per device,
  upper_bound over the cumulative shares); the token embedding stays on the CPU; tied embeddings are
  loaded again for a GPU output layer. KV and recurrent state live with their layer.
- defaults of the current llama-server (common/common.h, common/arg.cpp): -c 0 = the trained context,
  -np auto (tools/server/server.cpp: 4 slots sharing one unified KV stream of -c cells, so runlocal's --ctx, the
  longest request, is the whole -c; an explicit --parallel N is N slots with -c = ctx × N; slots()), -ngl auto,
  --fit on (common/fit.cpp: an unset context, then unset layers, are cut until every device keeps 1 GiB free;
  LlamaCpp.fit), -b 2048, -ub 512, flash attention auto.
- compute buffers (src/llama-context.cpp graph_reserve): for an architecture runtimes/ggml/ builds,
  CPU-only or on one GPU with any -ngl, the reserved graph is traced, split as ggml-backend's scheduler
  splits it and placed by a re-implementation of ggml-alloc (exact to 0.01 MiB on every record of
  measurements/llamacpp); otherwise (several GPUs, tensor overrides, other architectures) the heaviest
  phase of the graph, with phase sizes fitted to the buffers llama.cpp logs; the graph inputs (the
  embedding rows, KQ masks, KV store indices) sit in the host's buffer when layers run on a GPU.
"""

from __future__ import annotations

import re
import shlex
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError
from ..kv import layer_kv, normalize_cache_type, row_bytes
from ..memo import IdMemo
from ..model.spec import ModelSpec, split_in_gguf
from ..quant.formats import WeightEstimate
from ..units import MiB, round_up
from .backends import rules_for
from .base import (
    GGUF_LEVERS,
    PARALLEL_AUTO,
    Allocation,
    DeviceMemory,
    Settings,
    Step,
    Target,
    largest,
)
from .llamacpp_swa import as_llamacpp_loads, window_step

CTX_PAD = 256
MATRIX_ROW_PADDING = 512   # ggml-cuda/common.cuh
# common/common.h: n_ctx 0 = the model's trained context (then --fit may shorten it); 4096 when a model
# does not say what it was trained on
DEFAULT_CTX = 4096
FIT_MARGIN = 1024 * MiB     # common/common.h fit_params_target: leave 1 GiB free on every device
FIT_MIN_CTX = 4096          # common/common.h fit_params_min_ctx: --fit shortens the context no further
# -ngl auto (the default: --fit decides) and -ngl all, as common/arg.cpp stores them
NGL_AUTO, NGL_ALL = -1, -2
# llama-server -np -1, its default (common/arg.cpp, LLAMA_EXAMPLE_SERVER): tools/server/server.cpp sets
# n_parallel = 4 and kv_unified = true
AUTO_SLOTS = 4
DEFAULT_BATCH = 2048        # common/common.h: n_batch
DEFAULT_UBATCH = 512        # common/common.h: n_ubatch
# What a GPU pays beyond llama.cpp's logged buffers: the CUDA context and module load (523.6 MiB at
# the first model load) + cuBLAS state after the first decode (66 MiB), measured with NVML on an H100,
# driver 580, CUDA 13 (measurements/llamacpp/README.md). ROCm/Metal are assumed alike.
GPU_CONTEXT_OVERHEAD = 590 * MiB


# How the host's share of the weights is held (src/llama-model-loader.cpp load_all_data; llama-mmap.cpp).
# Both count in full against RAM here: mapped pages can be dropped and re-read, but a model that only fits
# that way reads its weights from disk on every token, and tensors the CPU backend repacks for its kernels
# (ggml-cpu/repack.cpp: Q4_0, Q4_K, Q6_K, IQ4_NL, Q8_0 … on AVX2 / NEON) are copied to anonymous memory anyway.
HOST_WEIGHTS_MMAP = ("weights memory-mapped from the file (CPU_Mapped, page cache; tensors the CPU backend repacks "
                     "are copied to an anonymous CPU_REPACK buffer): the host's share counted as resident")
HOST_WEIGHTS_LOADED = "--no-mmap: weights read into anonymous host memory (CPU buffer), counted as resident"


pad = round_up     # GGML_PAD


@dataclass(frozen=True)
class _Split:
    """Which layers live where for a given -ngl."""

    gpu_layers: frozenset[int]
    output_on_gpu: bool


def _split(model: ModelSpec, n_gpu_layers: int) -> _Split:
    # src/llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 - ngl, 0); a layer il ≥ i_gpu_start
    # is offloaded, and the output layer counts as layer n_layer — so it is the first thing -ngl 1 offloads.
    n = model.n_layers
    start = max(n + 1 - n_gpu_layers, 0)
    return _Split(frozenset(range(start, n)), n_gpu_layers >= 1)


def _cuda_row_pad(cache_type: str, row: int) -> int:
    """ggml-cuda over-allocates every quantized tensor whose rows are not a multiple of 512 elements
    by the bytes of the missing part of one row (ggml-cuda.cu, ggml_backend_cuda_buffer_type_get_alloc_size:
    MATRIX_ROW_PADDING), so kernels may read past the last row. One K (or V) tensor per layer."""
    from ..kv import CACHE_TYPES

    block, _ = CACHE_TYPES[cache_type]
    if block == 1 or row % MATRIX_ROW_PADDING == 0:
        return 0
    return row_bytes(cache_type, MATRIX_ROW_PADDING - row % MATRIX_ROW_PADDING)


def _overrides(model: ModelSpec, rules: tuple[tuple[str, str], ...], n_gpus: int) -> dict[tuple[int, int], int | None]:
    """(tensor index, part) an -ot rule moves → its device (None = host). Patterns are matched against
    the GGUF name with a search, the first matching rule wins (src/llama-model-loader.cpp: std::regex_search
    over tensor_buft_overrides). A checkpoint tensor the converter splits has one part per GGUF tensor."""
    if not rules:
        return {}
    compiled = []
    for pattern, buft in rules:
        dev = buffer_device(buft)
        if dev is not None and dev >= n_gpus:
            raise InputError(f"override-tensor: buffer type {buft} names GPU {dev}, but "
                             f"{'no GPU is' if not n_gpus else f'only {n_gpus} GPU(s) are'} in the plan")
        compiled.append((re.compile(pattern), dev))
    from ..quant.gguf_mix import gguf_names

    out: dict[tuple[int, int], int | None] = {}
    for k, names in enumerate(gguf_names(model)):
        for part, name in enumerate(names):
            for rx, dev in compiled:
                if rx.search(name):
                    out[(k, part)] = dev
                    break
    return out


def host_compute(model: ModelSpec, ubatch: int) -> int:
    """The host's compute buffer when layers run on a GPU, without the masks: the token-embedding
    lookup (the input layer stays on the CPU) and its copy, two f32 rows of n_embd per ubatch token."""
    return 2 * model.hidden_size * ubatch * 4


def kq_masks(ubatch: int, n_kv: int, n_kv_swa: int | None, flash_attn: bool) -> int:
    """The KQ mask inputs, [n_kv, n_ubatch] in f16 with flash attention and f32 without; models with
    sliding-window layers build a second one over the SWA cache's cells (src/llama-graph.cpp,
    build_attn_inp_kv / build_attn_inp_kv_iswa)."""
    per = 2 if flash_attn else 4
    return ubatch * per * (n_kv + (n_kv_swa or 0))


def kv_store_indices(model: ModelSpec, ubatch: int, flash_attn: bool) -> int:
    """The int64 index inputs each KV cache's store uses (src/llama-kv-cache.cpp build_input_k_idxs /
    build_input_v_idxs): one per token for K, and for V one per token with flash attention but one per
    element (n_embd_v_gqa × n_tokens) without it, where V is stored transposed. Models with sliding-window
    layers have two caches (SWA and non-SWA); MLA stores no V."""
    widths: dict[str, int] = {}
    for a in model.attention_layers:
        key = "swa" if a.kind == "sliding" else "full"
        v = 0 if a.kind == "mla" else a.n_kv_heads * a.v_dim
        widths[key] = max(widths.get(key, 0), v)
    total = 0
    for v in widths.values():
        total += ubatch * 8 + ubatch * 8 * (1 if flash_attn or v == 0 else v)
    return total


def _largest_cpu_matmul(model: ModelSpec, size_of) -> int:
    """The biggest weight a GPU copies in to run a CPU-resident matmul (the LM head, or the token
    embedding when it is tied). size_of gives a tensor's bytes (read from the file, or scaled from the
    weight estimate for a model given by its config)."""
    head = [size_of(t) for t in model.tensors if t.role == "lm_head"]
    embed = [size_of(t) for t in model.tensors if t.role == "embed"]
    return (head or embed or [0])[0]


_GPU_BUFFER = re.compile(r"(CUDA|ROCm|Vulkan|SYCL|MTL|Metal|CANN|OpenCL)(\d*)")


def buffer_device(buft: str) -> int | None:
    """A llama.cpp buffer type name → None for the host (CPU), else the GPU's index (CUDA1 → 1)."""
    if buft == "CPU":
        return None
    m = _GPU_BUFFER.fullmatch(buft)
    if not m:
        raise InputError(f"override-tensor: unknown buffer type '{buft}': "
                         "expected CPU or a GPU's buffer name such as CUDA0, ROCm1, Vulkan0, Metal")
    return int(m.group(2) or 0)


def parse_tensor_overrides(values: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """llama.cpp's -ot / --override-tensor "<regex>=<buffer type>[,…]" (common/arg.cpp
    parse_tensor_buffer_overrides; several flags add up, in order). Buffer types: CPU (the host) or a
    GPU's buffer name, CUDA0, ROCm1, Vulkan0, Metal … (→ that GPU's index). llama.cpp matches with
    std::regex_search (ECMAScript); Python's re agrees on the patterns people use (\\., |, (), .*, [0-9])."""
    out: list[tuple[str, str]] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            pattern, eq, buft = item.partition("=")
            if not eq or not pattern:
                raise InputError(f"override-tensor: expected <tensor name pattern>=<buffer type>, got '{item}'")
            try:
                re.compile(pattern)
            except re.error as e:
                raise InputError(f"override-tensor: '{pattern}' is not a valid regular expression ({e})") from None
            buffer_device(buft)
            out.append((pattern, buft))
    return tuple(out)


def ffn_width(model: ModelSpec) -> int:
    return _WIDTHS.get(model, None, lambda: ffn_width_now(model))


def ffn_width_now(model: ModelSpec) -> int:
    """f32 values per token that the widest FFN holds at once (gate, up and their product), the max
    over layers. A dense layer: 3 × n_ff. A MoE layer computes only the n_expert_used chosen experts
    (ggml_mul_mat_id outputs [n_ff_exp, n_expert_used, n_tokens], src/llama-graph.cpp build_moe_ffn),
    plus its shared experts and the router's logits, probabilities and weights over n_expert."""
    # n_ff from the down projections ([n_ff, n_embd]), which no architecture fuses
    per_layer: dict[int, dict[str, int]] = {}
    h = model.hidden_size
    for t in model.tensors:
        if t.layer is None or t.role not in ("ffn_down", "expert_down", "shared_down"):
            continue
        d = per_layer.setdefault(t.layer, {})
        d[t.role] = d.get(t.role, 0) + t.numel
    widths: list[int] = []
    for d in per_layer.values():
        w = 3 * d.get("ffn_down", 0) // h + 3 * d.get("shared_down", 0) // h
        if "expert_down" in d and model.n_experts:
            w += 3 * (d["expert_down"] // (model.n_experts * h)) * max(1, model.n_experts_active) + 3 * model.n_experts
        widths.append(w)
    widest = max(widths, default=0)
    return widest if widest else 3 * (model.intermediate_size or 4 * h)


def fa_f16_copies(model: ModelSpec, cells: int, cells_swa: int | None, cache_type_k: str, cache_type_v: str) -> int:
    """Bytes ggml-cuda adds to a FLASH_ATTN_EXT result for f16 copies of a quantized K and V
    (ggml-cuda.cu get_alloc_size → fattn.cu ggml_cuda_flash_attn_ext_get_alloc_size): the tensor-core kernels
    (MMA_F16, TILE) that a prompt batch gets read f16 only, so K and V views over every cell the graph attends
    (cells × KV heads × head dim) are converted into room allocated with the op's output; MLA's V is a view of
    K and shares its copy. Largest over the attention layers (a sliding layer attends cells_swa)."""
    quant = ("f16", "bf16", "f32")
    need_k, need_v = cache_type_k not in quant, cache_type_v not in quant
    if not (need_k or need_v):
        return 0
    best = 0
    for a in model.attention_layers:
        n = cells_swa if (a.kind == "sliding" and cells_swa) else cells
        k = n * a.n_kv_heads * a.k_dim * 2 if need_k else 0
        v = n * a.n_kv_heads * a.v_dim * 2 if need_v and a.kind != "mla" else 0
        best = max(best, pad(k, 128) + pad(v, 128))
    return best


# Architectures whose compute buffer comes out the same from the first layers as from all of them (each layer
# frees what the previous one held, so ggml-alloc's peak repeats): checked on every simulated record of
# measurements/llamacpp and on catalog models (tests/test_graph_prefix.py). Not so for MLA and hybrid-recurrent graphs, where holes left by earlier layers shift it.
PREFIX_EXACT = frozenset({"llama", "qwen3", "qwen3moe", "phi3", "gemma2", "gemma3", "gpt-oss"})


def graph_prefix(model: ModelSpec) -> ModelSpec:
    """graph_prefix_now, once per model object (the same object then keys the simulation's cache)."""
    return _PREFIXES.get(model, None, lambda: graph_prefix_now(model))


def graph_prefix_now(model: ModelSpec) -> ModelSpec:
    """The layers of ``model`` its compute buffer needs traced: two past the first layer of each kind, its last
    layers of the same kinds as the model's last ones (the output phase follows them), for the PREFIX_EXACT architectures; else all.
    10–40× faster than tracing every layer of a deep model, and --fit plans many contexts."""
    if model.family not in PREFIX_EXACT:
        return model
    kind = [(la.attention.kind if la.attention else None, la.attention.window if la.attention else None,
             la.recurrent is not None, la.moe) for la in model.layers]
    first: dict[tuple, int] = {}
    for il, k in enumerate(kind):
        first.setdefault(k, il)
    w = max(first.values(), default=0) + 2
    n = w
    # end on the model's own last w layer kinds (gemma3's 5 local : 1 global: the output phase reuses holes by
    # how far back the last global layer was)
    while n < model.n_layers and kind[n - w:n] != kind[-w:]:
        n += 1
    if n >= model.n_layers:
        return model
    return replace(model, n_layers=n, layers=model.layers[:n],
                   tensors=tuple(t for t in model.tensors if t.layer is None or t.layer < n))


def simulated_compute(model: ModelSpec, n_gpu_layers: int | None, n_ubatch: int, n_kv: int, flash_attn: bool,
                      n_seqs: int, n_stream: int, type_k: str, type_v: str, n_kv_swa: int | None,
                      layer_gpus: tuple[int | None, ...] | None = None, n_gpus: int = 1,
                      overrides: tuple[tuple[str, int | None], ...] = ()) -> tuple[tuple[int, ...], int]:
    """simulate_now, kept per model object and arguments: --fit, the searches and the fixes ask again."""
    args = (n_gpu_layers, n_ubatch, n_kv, flash_attn, n_seqs, n_stream, type_k, type_v, n_kv_swa, layer_gpus, n_gpus,
            overrides)
    return _SIMULATED.get(model, args, lambda: simulate_now(model, *args))


def simulate_now(model: ModelSpec, n_gpu_layers: int | None, n_ubatch: int, n_kv: int, flash_attn: bool,
                 n_seqs: int, n_stream: int, type_k: str, type_v: str, n_kv_swa: int | None,
                 layer_gpus: tuple[int | None, ...] | None = None, n_gpus: int = 1,
                 overrides: tuple[tuple[str, int | None], ...] = ()) -> tuple[tuple[int, ...], int]:
    """((each GPU's), host) compute buffer bytes from the ggml-alloc simulation (runtimes/ggml/): the CUDA
    build with n_gpu_layers of the n_layer + 1 slots on one GPU (0: none, the GPU still runs the big matmuls), or
    the layers spread over n_gpus GPUs as ``layer_gpus`` says (src/llama-model.cpp: the ``where`` of
    LlamaCpp.buffers), with tensor overrides (regex, device; None the host) in llama.cpp's order; or ((), CPU)
    for a CPU-only run (n_gpu_layers None). Cached: --fit and the solvers plan many times."""
    from . import ggml

    kw: dict[str, Any] = dict(n_seqs=n_seqs, n_stream=n_stream, type_k=type_k, type_v=type_v, n_kv_swa=n_kv_swa)
    if n_gpu_layers is None and layer_gpus is None:
        return (), ggml.simulate_compute(model, n_ubatch, n_kv, flash_attn, **kw)
    out = ggml.simulate_compute_cuda(model, n_ubatch, n_kv, flash_attn, n_gpu_layers=n_gpu_layers or 0,
                                           layer_gpus=list(layer_gpus) if layer_gpus is not None else None,
                                           n_gpus=n_gpus, overrides=overrides, **kw)
    return tuple(out[f"CUDA{k} compute"] for k in range(n_gpus)), out["CUDA_Host compute"]


def compute_phases(model: ModelSpec, ubatch: int, n_kv: int, flash_attn: bool,
                   n_kv_swa: int | None = None, fa_copies: int = 0) -> dict[str, int]:
    """Peak bytes of ggml's compute graph in its three heaviest phases; the buffer is their max.

    Fitted to llama.cpp's logged "compute buffer size" over architectures, contexts, ubatch sizes
    and flash attention (measurements/llamacpp): the output phase holds the f32 logits of a
    ubatch; the FFN phase the gate/up/act intermediates; the attention phase (without flash
    attention) the f32 KQ scores of every head over n_kv cells. The KQ masks (f16 with flash
    attention, f32 without; a second one over the SWA cells for sliding-window models) stay live
    through the layers. The FFN width is the routed experts' for MoE layers (ffn_width).
    Not modelled (benchmarks/accuracy.py shows the misses): tensors that the allocator leaves below
    the logits in MLA, Mamba-2 and MoE graphs, and the K/V copies of a partial offload's CPU layers.
    """
    f32 = 4
    mask = kq_masks(ubatch, n_kv, n_kv_swa, flash_attn)
    n_ff = ffn_width(model)
    kv_width = max((a.n_kv_heads * a.k_dim for a in model.attention_layers), default=model.hidden_size)
    output = ubatch * f32 * (model.vocab_size + 2 * model.hidden_size)
    ffn = ubatch * f32 * (n_ff + 4 * model.hidden_size) + mask
    attention = 0 if flash_attn else (n_kv * ubatch * model.n_heads * f32
                                      + ubatch * f32 * (5 * model.hidden_size + 2 * kv_width) + mask)
    phases = {"output": output, "ffn": ffn, "attention": attention}
    if flash_attn and fa_copies:
        # the FLASH_ATTN_EXT node with its f16 K/V room, beside Q, the masks and three n_embd row sets (the
        # layer's input and two more the H100 runs show live there: llama-3.1-8b, gemma-2-9b at 64K, q8_0 cache)
        head_q = max((a.k_dim for a in model.attention_layers), default=model.hidden_size // max(1, model.n_heads))
        head_v = max((a.v_dim for a in model.attention_layers), default=head_q)
        phases["flash attention"] = (ubatch * model.n_heads * (head_q + head_v) * f32 + fa_copies
                                     + 3 * ubatch * f32 * model.hidden_size + mask)
    return phases


@dataclass
class DeviceBuffers:
    """What llama.cpp logs for one device: model, KV (attention layers), RS (recurrent state),
    compute and output buffers, in bytes."""

    name: str
    kind: str
    capacity: int
    model: int = 0
    kv: int = 0
    rs: int = 0
    compute: int = 0
    output: int = 0

    @property
    def total(self) -> int:
        return self.model + self.kv + self.rs + self.compute + self.output


@dataclass(frozen=True)
class Context:
    """llama.cpp's context sizes after its own rounding (src/llama-context.cpp, llama_context ctor)."""

    n_ctx: int          # cells over all streams
    n_ctx_seq: int      # cells one sequence can use
    n_stream: int       # 1 with a unified cache, n_seq_max otherwise
    n_seq: int
    n_batch: int
    n_ubatch: int


def slots(s: Settings) -> tuple[int, bool, int]:
    """(n_seq_max, unified, k) of llama-server for s.parallel, with -c = ctx × k. Not given (PARALLEL_AUTO, the
    server's -np auto): 4 slots in one unified stream whose -c is the context asked for, any one request may use
    all of it (k = 1); an explicit --parallel N: N sequences of ctx each (k = N), one stream with --kv-unified."""
    if s.parallel == PARALLEL_AUTO:
        return AUTO_SLOTS, True, 1
    n = max(1, s.parallel)
    return n, s.kv_unified, n


def context_sizes(ctx: int, n_seq: int, batch: int, ubatch: int, kv_unified: bool, total: int | None = None) -> Context:
    """llama-server -c is the total over all slots (total; ctx × parallel when not given). Unified: one stream of
    pad(n_ctx, 256) cells; otherwise each sequence gets its own stream of pad(n_ctx / n_seq, 256)
    cells (src/llama-context.cpp: n_ctx_seq = n_ctx / n_seq_max, GGML_PAD to 256, n_ctx = n_ctx_seq × n_seq_max).
    n_batch is capped at n_ctx and n_ubatch at n_batch (causal attention, same constructor)."""
    total = ctx * n_seq if total is None else total
    if kv_unified or n_seq == 1:
        n_ctx = pad(total, CTX_PAD)
        n_ctx_seq, streams = n_ctx, 1
    else:
        n_ctx_seq = pad(total // n_seq, CTX_PAD)
        n_ctx, streams = n_ctx_seq * n_seq, n_seq
    n_batch = min(n_ctx, batch)
    return Context(n_ctx, n_ctx_seq, streams, n_seq, n_batch, min(n_batch, ubatch))


def swa_cells(c: Context, n_swa: int, swa_full: bool) -> int:
    """Cells per stream of a sliding-window layer (src/llama-kv-cache-iswa.cpp): the full n_ctx_seq
    with --swa-full, else min(n_ctx_seq, pad(n_swa × n_seq_unified + n_ubatch, 256)) where a unified
    stream holds the windows of all n_seq sequences."""
    if swa_full:
        return c.n_ctx_seq
    seqs = c.n_seq if c.n_stream == 1 else 1
    return min(c.n_ctx_seq, pad(n_swa * seqs + c.n_ubatch, CTX_PAD))


def layer_devices(n_layers: int, n_gpu_layers: int, shares: list[float]) -> list[int | None]:
    """Device index of each repeating layer and (last entry) of the output layer; None = CPU.

    src/llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 - ngl, 0), act = min(ngl, n_layer + 1);
    layer il (the output layer is il = n_layer) goes to the first GPU whose cumulative share of
    --tensor-split (default: each device's free memory) exceeds (il - i_gpu_start) / act."""
    if not shares:
        return [None] * (n_layers + 1)
    total = sum(shares) or 1.0
    cum, run = [], 0.0
    for x in shares:
        run += x
        cum.append(run / total)
    start = max(n_layers + 1 - n_gpu_layers, 0)
    act = min(n_gpu_layers, n_layers + 1)
    out: list[int | None] = []
    for il in range(n_layers + 1):
        if il < start or il - start >= act:
            out.append(None)
        else:
            out.append(min(bisect_right(cum, (il - start) / act), len(shares) - 1))
    return out


def fit_layers(model: ModelSpec, run, ok, hopeless=None) -> tuple[int, int]:
    """common/fit.cpp common_params_fit_impl, steps 3–4 on one GPU: (-ngl, experts of how many layers in system
    memory). All layers if the device keeps its margin; else, for a MoE model, every layer on the GPU with the
    experts of as few layers as possible in system memory (dense-only layers converted back to full ones), and
    when even all experts out is too much, the dense-only layers filled back to front; for a dense model the
    layers filled back to front. run(ngl, n_cpu_moe) plans it, ok(plan) says whether the margin is kept.
    (Not modelled: the finer overflow of part of one more layer's FFN, LAYER_FRACTION_ATTN/UP/GATE.)
    hopeless(ngl, n_cpu_moe), when given, says without planning that ok would fail (a bound: LlamaCpp.floor)."""
    n = model.n_layers

    def passes(ngl: int, ncmoe: int) -> bool:
        return not (hopeless and hopeless(ngl, ncmoe)) and ok(run(ngl, ncmoe))

    if passes(n + 1, 0):
        return n + 1, 0
    if model.n_experts:
        keep = largest(0, n, lambda k: passes(n + 1, n - k))
        if keep is not None:
            return n + 1, n - keep
        return largest(0, n + 1, lambda g: passes(g, n)) or 0, n
    return largest(0, n + 1, lambda g: passes(g, 0)) or 0, 0


def _place_weights(model: ModelSpec, weights: WeightEstimate, where: tuple[int | None, ...], n_cpu_moe: int,
                   override_tensor: tuple[tuple[str, str], ...], n_devs: int) -> tuple[dict[int | None, int], dict[int, int]]:
    """Weight bytes per device index (None = host) and, per GPU, its layers' largest weight kept in host memory:
    src/llama-model.cpp load_tensors (LlamaCpp.buffers). The same for every context, so kept per model."""
    key = (weights.quant, weights.total, weights.from_file, where, n_cpu_moe, override_tensor, n_devs)
    return _PLACEMENTS.get(model, key, lambda: _place_weights_now(model, weights, where, n_cpu_moe, override_tensor,
                                                                  n_devs))


def _place_weights_now(model, weights, where, n_cpu_moe, override_tensor, n_devs):
    out_dev = where[model.n_layers]
    placed: dict[int | None, int] = {}
    size_of = _sizer(model, weights)

    def add(dev, size):
        placed[dev] = placed.get(dev, 0) + size

    overrides = _overrides(model, override_tensor, n_devs)
    host_weights_of: dict[int, int] = {}   # GPU → its layers' largest weight kept in host memory
    tied = not any(x.role == "lm_head" for x in model.tensors)
    for k, t in enumerate(model.tensors):
        if t.layer is not None and t.layer < model.n_layers:
            d = where[t.layer]
            if t.role.startswith("expert_") and t.layer < n_cpu_moe:
                d = None           # --n-cpu-moe N: the experts of the first N layers stay on the CPU
        elif t.role in ("lm_head", "norm"):
            d = out_dev            # the output layer (LM head, final norm) counts as layer n_layer
        else:
            d = None               # the token embedding (input layer) always stays on the CPU
        runs_on = where[t.layer] if t.layer is not None and t.layer < model.n_layers else None
        n_parts = split_in_gguf(t)
        for part in range(n_parts):
            size = size_of(t) // n_parts
            dev = overrides.get((k, part), d)   # -ot: the first matching pattern's buffer
            add(dev, size)
            if dev is None and runs_on is not None and len(t.shape) > 1:
                host_weights_of[runs_on] = max(host_weights_of.get(runs_on, 0), size)
        if t.role == "embed" and out_dev is not None and tied:
            # tied embeddings: the output layer reads token_embd, which llama.cpp loads a second time
            # (TENSOR_DUPLICATED) into the output layer's GPU buffer (src/llama-model.cpp load_tensors)
            add(out_dev, size_of(t))
    return placed, host_weights_of


def _sizer(model: ModelSpec, weights: WeightEstimate):
    """A tensor's bytes: read from the file, or scaled from the weight estimate for a model given by its config."""
    scale = weights.total / max(1, sum(t.numel for t in model.tensors)) if model.tensors else 0

    def size_of(t) -> int:
        return t.nbytes if (t.nbytes is not None and weights.from_file) else int(t.numel * scale)
    return size_of


_PLACEMENTS = IdMemo(512)
_PREFIXES = IdMemo(256)
_WIDTHS = IdMemo(256)
_SIMULATED = IdMemo(2048)
_BUFFERS = IdMemo(2048)
_ALLOCATIONS = IdMemo(2048)
_FLOORS = IdMemo(4096)


class LlamaCpp:
    name = "llama.cpp"
    pools_kv = False
    levers = GGUF_LEVERS

    def __init__(self, simulate_graph: bool = True) -> None:
        # False: size every compute buffer with the fitted phase formula (benchmarks/compute_sim.py compares both)
        self.simulate_graph = simulate_graph

    # the build's defaults (runtimes/versions.py llamacpp_rules): -np auto (PR #16736) and --fit (PR #16653)
    np_auto = True
    has_fit = True
    # --backend (runtimes/backends.py); None: from the GPU's vendor
    backend: str | None = None

    def _as_build_reads(self, s: Settings) -> Settings:
        """Settings as an older build reads them: no -np auto (one slot), no --fit."""
        if not self.np_auto and s.parallel == PARALLEL_AUTO:
            s = s.with_(parallel=1)
        if not self.has_fit and s.fit:
            s = s.with_(fit=False)
        return s

    def defaults(self, model: ModelSpec, settings: Settings, targets: list[Target]) -> Settings:
        has_gpu = any(t.kind != "cpu" for t in targets)
        ngl = settings.n_gpu_layers
        if ngl is None or ngl < 0:
            ngl = model.n_layers + 1 if has_gpu else 0
        return settings.with_(
            ctx=settings.ctx or self.auto_ctx(model, settings),
            batch=settings.batch or DEFAULT_BATCH,
            ubatch=min(settings.ubatch or DEFAULT_UBATCH, settings.batch or DEFAULT_BATCH),
            n_gpu_layers=ngl if has_gpu else 0,
            cache_type_k=normalize_cache_type(settings.cache_type_k, field="cache-type-k"),
            cache_type_v=normalize_cache_type(settings.cache_type_v, field="cache-type-v"),
        )

    @staticmethod
    def auto_ctx(model: ModelSpec, s: Settings, n_ctx_total: int | None = None) -> int:
        """Context per sequence for -c 0 (the default): llama_context uses the trained context for all of a
        unified cache (-np auto's included), and common/fit.cpp gives each of n_seq_max separate streams the
        trained context."""
        n_seq, unified, k = slots(s)
        streams = 1 if unified else n_seq
        total = n_ctx_total if n_ctx_total is not None else (model.max_position_embeddings or DEFAULT_CTX) * streams
        return max(1, total // k)

    def fit(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
            targets: list[Target]) -> tuple[Settings, list[Step]]:
        """llama-server --fit (on by default, common/fit.cpp common_params_fit_impl): the context and -ngl the
        user left unset are chosen so every device keeps FIT_MARGIN free. Step 1: the trained context and every
        layer; if a device is short, step 2 shortens an unset context, interpolating linearly between
        FIT_MIN_CTX and the trained context on the summed use and rounding down to 256 × streams (one device:
        done); step 3–4 fit the layers when -ngl is unset (fit_layers)."""
        gpus = [t for t in targets if t.kind != "cpu"]
        ctx_auto = settings.ctx is None
        ngl_auto = settings.n_gpu_layers is None or settings.n_gpu_layers == NGL_AUTO
        # only devices with memory of their own are fitted: with none (a CPU-only run) fit.cpp returns at once,
        # "llama_params_fit_impl: no devices with dedicated memory found" (src/llama.cpp, nd == 0), so -c 0 keeps
        # the trained context
        devices = gpus
        if not settings.fit or not (ctx_auto or ngl_auto) or not devices:
            return settings, []
        n_seq, unified, _ = slots(settings)
        streams = 1 if unified else n_seq
        trained = model.max_position_embeddings or DEFAULT_CTX
        n_max, n_min = trained * streams, FIT_MIN_CTX * streams
        s = settings.with_(ctx=settings.ctx or self.auto_ctx(model, settings, n_max))
        if ngl_auto:
            s = s.with_(n_gpu_layers=model.n_layers + 1 if gpus else 0)
        overhead = rules_for(self.backend, targets).gpu_context if gpus else 0

        def use_of(bufs: list[DeviceBuffers]) -> list[int]:
            out = [b.total for b in bufs if b.kind != "cpu"] if gpus else [bufs[-1].total]
            return [u + overhead for u in out]

        def used(st: Settings) -> list[int]:
            return use_of(self.buffers(model, weights, st, targets)[1])

        free = [t.capacity - FIT_MARGIN for t in devices]
        first_bufs = self.buffers(model, weights, s, targets)[1]
        first = use_of(first_bufs)
        steps: list[Step] = []
        if all(u <= f for u, f in zip(first, free)):
            if ctx_auto:
                steps.append(Step("context (-c 0, --fit)", f"the trained context {trained:,}"
                                  + (f" × {streams} streams" if streams > 1 else "") + " leaves "
                                  f"{FIT_MARGIN // MiB} MiB free on every device", f"{s.ctx:,} per sequence",
                                  "llama.cpp common/fit.cpp common_params_fit_impl, common/common.h"))
            return s, steps
        if ctx_auto and n_max > n_min:
            lo = s.with_(ctx=self.auto_ctx(model, settings, n_min))
            used_max, used_min, target = sum(first), sum(used(lo)), sum(free)
            if len(devices) > 1:
                # several GPUs: only whole layers go to a device; fit.cpp books half a layer per device more
                # (a sixth of one for MoE, whose tensors move one by one)
                per_layer = sum(b.model for b in first_bufs if b.kind != "cpu") \
                    // max(1, min(s.n_gpu_layers or 1, model.n_layers))
                target -= (len(devices) + 1) * per_layer // (6 if model.n_experts else 2)
            if target > used_min:
                n_ctx = n_min + (n_max - n_min) * (target - used_min) // max(1, used_max - used_min)
                align = CTX_PAD * streams
                n_ctx = max(n_ctx - n_ctx % align, n_min)
                s = s.with_(ctx=self.auto_ctx(model, settings, n_ctx))
                steps.append(Step("context (-c 0, --fit)",
                                  f"trained {trained:,} does not leave {FIT_MARGIN // MiB} MiB free: "
                                  f"{n_min:,} + ({n_max:,} − {n_min:,}) × (target − use at {n_min:,}) / "
                                  f"(use at {n_max:,} − use at {n_min:,}), rounded down to {align}",
                                  f"{s.ctx:,} per sequence", "llama.cpp common/fit.cpp common_params_fit_impl step 2"))
                if len(devices) <= 1:
                    return s, steps
            else:
                s = lo
                steps.append(Step("context (-c 0, --fit)", f"even {n_min:,} cells do not leave "
                                  f"{FIT_MARGIN // MiB} MiB free: the minimum", f"{s.ctx:,} per sequence",
                                  "llama.cpp common/fit.cpp common_params_fit_impl step 2"))
        if not gpus or not ngl_auto or s.n_cpu_moe or s.override_tensor or s.tensor_split:
            # fit.cpp leaves the layers alone when -ngl, -ts or tensor overrides (-ot, --n-cpu-moe) are the user's
            return s, steps

        def run(ngl: int, ncmoe: int) -> list[int]:
            return used(s.with_(n_gpu_layers=ngl, n_cpu_moe=ncmoe))

        # one GPU as fit.cpp does it; on several, runlocal keeps the split by free memory and cuts layers until
        # every GPU keeps its margin (fit.cpp fills each GPU back to front and writes its own -ts)
        def hopeless(ngl: int, ncmoe: int) -> bool:
            floors = self.floor(model, weights, s.with_(n_gpu_layers=ngl, n_cpu_moe=ncmoe), targets)
            return any(f > room for f, room in zip(floors[:len(gpus)], free))

        ngl, ncmoe = fit_layers(model, run, lambda us: all(u <= f for u, f in zip(us, free)), hopeless)
        s = s.with_(n_gpu_layers=ngl, n_cpu_moe=max(ncmoe, s.n_cpu_moe))
        blocks = model.n_layers if ngl > model.n_layers else max(0, ngl - 1)
        steps.append(Step("layers (--fit)", f"largest offload that leaves {FIT_MARGIN // MiB} MiB free on "
                          + ", ".join(g.name for g in gpus) + (f"; experts of {ncmoe} layers in system memory" if ncmoe else ""),
                          f"-ngl {ngl}: {blocks}/{model.n_layers} repeating layers on the GPU"
                          + (f", --n-cpu-moe {ncmoe}" if ncmoe else ""),
                          "llama.cpp common/fit.cpp common_params_fit_impl steps 3–4"))
        return s, steps

    @staticmethod
    def _compromise(model: ModelSpec, asked: Settings, s: Settings, has_gpu: bool = True) -> str | None:
        """What --fit gave up, in words (None: the trained context and every layer on the GPUs)."""
        parts = []
        trained = model.max_position_embeddings or DEFAULT_CTX
        assert s.ctx is not None                # s: after defaults()
        if asked.ctx is None and s.ctx < LlamaCpp.auto_ctx(model, asked):
            parts.append(f"the context shortened from the trained {trained:,} to {s.ctx:,}")
        if has_gpu and asked.n_gpu_layers in (None, NGL_AUTO) and (s.n_gpu_layers or 0) <= model.n_layers:
            parts.append(f"{model.n_layers + 1 - (s.n_gpu_layers or 0)} of {model.n_layers + 1} layers in system memory")
        if s.n_cpu_moe > asked.n_cpu_moe:
            parts.append(f"the experts of {s.n_cpu_moe} layers in system memory")
        if not parts:
            return None
        slower = any("system memory" in p for p in parts)
        return ("llama-server --fit (on by default) chose " + ", ".join(parts) + " to leave 1 GiB free on each device"
                + (": slower than all on the GPU (see speed and fixes)" if slower else ""))

    def flash_attention(self, settings: Settings, targets: list[Target]) -> bool:
        # flash_attn auto turns it on where the backend supports it (CUDA, Metal, CPU all do for
        # common head sizes); "off" keeps it off (a quantized V cache is then refused, see refusal()).
        return settings.flash_attn != "off"

    def refusal(self, model: ModelSpec, s: Settings, fa: bool) -> str | None:
        """llama_init_from_model's own refusals (src/llama-context.cpp), with its words."""
        if any(a.kind == "mla" for a in model.attention_layers) and s.cache_type_k != s.cache_type_v:
            # MLA caches one latent that V is a view of: K and V must share a type
            return (f"model does not support different K ({s.cache_type_k}) and V ({s.cache_type_v}) cache types")
        if not fa and s.cache_type_v not in ("f16", "bf16", "f32"):
            return "quantized V cache requires flash_attn to be enabled"
        return None

    def _key(self, weights: WeightEstimate, settings: Settings, targets: list[Target]) -> tuple:
        # buffers and allocate read of the weights only their format, total and whether they are the file's
        return (self.simulate_graph, self.backend, weights.quant, weights.total, weights.from_file, settings,
                tuple(targets))

    def buffers(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                targets: list[Target]) -> tuple[Settings, list[DeviceBuffers], list[Step], dict]:
        """Every buffer llama.cpp logs, per device: the GPUs in order, then the host ("CPU"). Kept per model and
        settings (--fit, Ollama's and the fixes' searches ask again); each call gets its own copies."""
        model, settings = as_llamacpp_loads(model), self._as_build_reads(settings)
        s, bufs, steps, info = _BUFFERS.get(model, self._key(weights, settings, targets),
                                            lambda: self.buffers_now(model, weights, settings, targets))
        return s, [replace(b) for b in bufs], list(steps), dict(info)

    def floor(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
              targets: list[Target]) -> list[int]:
        """Each device's bytes without its compute buffer (GPUs in order, then the host), the GPU context counted
        where anything is on it: a lower bound of the totals of buffers() / allocate() for the same settings
        (compute buffers are never negative), known without tracing the graph. A search skips a plan whose
        floor alone overflows a device: its verdict could only be the same."""
        def now() -> list[int]:
            _, bufs, _, _ = self.buffers_now(model, weights, settings, targets, with_compute=False)
            return [b.total + (GPU_CONTEXT_OVERHEAD if b.kind == "gpu" and b.total else 0) for b in bufs]
        return _FLOORS.get(model, self._key(weights, settings, targets), now)

    def surely_over(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], *, gpus_only: bool = False) -> bool:
        """allocate() would overflow a device (a GPU, with gpus_only): known from floor() where --fit leaves these
        settings alone."""
        fit_idle = not settings.fit or (settings.ctx is not None and settings.n_gpu_layers is not None
                                        and settings.n_gpu_layers != NGL_AUTO)
        if not fit_idle:
            return False
        caps = [t.capacity for t in targets if t.kind != "cpu"]
        caps.append(0 if gpus_only else next((t.capacity for t in targets if t.kind == "cpu"), 0))
        return any(cap > 0 and f > cap for f, cap in zip(self.floor(model, weights, settings, targets), caps))

    def buffers_now(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                    targets: list[Target], with_compute: bool = True) -> tuple[Settings, list[DeviceBuffers], list[Step], dict]:
        s = self.defaults(model, settings, targets)
        gpus = [t for t in targets if t.kind != "cpu"]
        host_t = next((t for t in targets if t.kind == "cpu"), None) or Target("CPU", "cpu", 0)
        fa = self.flash_attention(s, targets)
        backend = rules_for(self.backend, targets)
        n_seq, unified, k = slots(s)
        assert s.ctx is not None and s.batch is not None and s.ubatch is not None     # set by defaults()
        c = context_sizes(s.ctx, n_seq, s.batch, s.ubatch, unified, total=s.ctx * k)
        ngl = (s.n_gpu_layers or 0) if gpus else 0
        if s.tensor_split and len(s.tensor_split) > len(gpus):
            raise InputError(f"tensor-split: {len(s.tensor_split)} shares given for {len(gpus)} GPU(s)")
        shares = ([*s.tensor_split, *[0.0] * (len(gpus) - len(s.tensor_split))] if s.tensor_split
                  else [float(max(g.capacity, 1)) for g in gpus])
        where = layer_devices(model.n_layers, ngl, shares)
        out_dev = where[model.n_layers]
        devs = [DeviceBuffers(g.name, g.kind, g.capacity) for g in gpus]
        host = DeviceBuffers(host_t.name, "cpu", host_t.capacity)
        at = lambda i: host if i is None else devs[i]   # noqa: E731
        steps: list[Step] = []
        if s.parallel == PARALLEL_AUTO:
            steps.append(Step("--parallel auto", f"not given: llama-server's default -np auto → {AUTO_SLOTS} slots "
                              "sharing one unified KV stream of -c = ctx cells (any one request may use all of it); "
                              "--parallel N plans N slots of ctx each", f"{AUTO_SLOTS} slots, unified KV",
                              "tools/server/server.cpp, common/arg.cpp"))
        cells_f = (f"unified: pad({'ctx' if k == 1 else 'ctx × parallel'}, 256)" if c.n_stream == 1
                   else "pad(ctx, 256) per sequence")
        steps.append(Step("context cells", f"{cells_f} × {c.n_stream} stream{'s' if c.n_stream > 1 else ''}",
                          f"{c.n_ctx:,} ({c.n_ctx_seq:,} per sequence)", "src/llama-context.cpp"))

        # --- weights per device -----------------------------------------------------------
        def size_of(t) -> int:
            return _sizer(model, weights)(t)

        placed, host_weights_of = _place_weights(model, weights, tuple(where), s.n_cpu_moe, s.override_tensor,
                                                 len(devs))
        for dev_index, size in placed.items():
            at(dev_index).model += size
        if not model.tensors:
            host.model = weights.total
        n_gpu_layers = sum(1 for w in where[:-1] if w is not None)
        steps.append(Step("weights", f"{n_gpu_layers}/{model.n_layers} layers on GPU"
                          f"{' + output' if out_dev is not None else ''}; token embedding on CPU",
                          ", ".join(f"{d.name} {d.model:,} B" for d in [*devs, host]), "src/llama-model.cpp load_tensors"))

        # --- KV cache and recurrent state, on the device of their layer ---------------------
        # (offload_kqv, the default, keeps each layer's cache with the layer: src/llama-kv-cache.cpp)
        n_swa_cells = 0
        per_token = 0
        mla = False
        for il, layer in enumerate(model.layers):
            if layer.attention is not None:
                a = layer.attention
                mla = mla or a.kind == "mla"
                # MLA: V is a view of the cached latent, no V rows are stored (src/llama-kv-cache.cpp, is_mla)
                lk = layer_kv(a, s.cache_type_k, s.cache_type_v, store_v=a.kind != "mla")
                per_token += lk.bytes_per_token
                cells = c.n_ctx_seq
                if lk.window:
                    cells = n_swa_cells = swa_cells(c, lk.window, s.swa_full)
                dev = at(where[il] if s.kv_offload else None)     # -nkvo: every cache on the host (offload_kqv)
                dev.kv += lk.bytes_per_token * cells * c.n_stream
                if dev.kind == "gpu" and backend.ggml_cuda:
                    dev.kv += _cuda_row_pad(s.cache_type_k, a.n_kv_heads * a.k_dim)
                    if a.kind != "mla":
                        dev.kv += _cuda_row_pad(s.cache_type_v, a.n_kv_heads * a.v_dim)
            if layer.recurrent is not None:
                # one f32 conv + ssm state per sequence (src/llama-memory-recurrent.cpp: mem_size = max(1, n_seq_max))
                r = layer.recurrent
                at(where[il] if s.kv_offload else None).rs += (r.conv_elems + r.state_elems) * 4 * n_seq
        rec = sum(d.rs for d in [*devs, host])
        if rec:
            steps.append(Step("recurrent state", f"(conv + ssm elements) × 4 B × {n_seq} seq", f"{rec:,} B",
                              "src/llama-memory-recurrent.cpp"))
        kv_total = sum(d.kv for d in [*devs, host])
        steps.append(Step("KV cache", f"{per_token:,} B/token × {c.n_ctx_seq:,} cells × {c.n_stream} stream(s)"
                          + (f" (sliding-window layers: {n_swa_cells:,} cells per stream)" if n_swa_cells and n_swa_cells != c.n_ctx_seq else "")
                          + f", K {s.cache_type_k} V {s.cache_type_v}", f"{kv_total:,} B",
                          "src/llama-kv-cache.cpp, llama-kv-cache-iswa.cpp"))

        if not s.kv_offload:
            steps.append(Step("--no-kv-offload", "every KV cache and recurrent state in system RAM; attention then runs "
                              "on the CPU, compute buffers planned as with the cache offloaded (an upper bound on the GPU)",
                              f"{kv_total:,} B in {host.name}", "src/llama-kv-cache.cpp (!offload_kqv: CPU buffer type), "
                              "src/llama-context.cpp graph_get_cb"))
        if not with_compute:      # floor(): everything but the compute buffers
            host.output = model.vocab_size * 4 * n_seq
            return s, [*devs, host], steps, {"fa": fa, "context": c}
        # --- compute and output buffers ----------------------------------------------------
        n_kv = c.n_ctx_seq if c.n_stream > 1 else c.n_ctx
        # ggml-cuda (NVIDIA, and AMD through HIP) sizes a flash-attention result with f16 copies of a quantized cache
        cells_all = c.n_ctx_seq * c.n_stream
        copies = (fa_f16_copies(model, cells_all, (n_swa_cells * c.n_stream) if n_swa_cells else None,
                                s.cache_type_k, s.cache_type_v)
                  if fa and backend.ggml_cuda and any(g.kind == "gpu" for g in gpus) else 0)
        phases = compute_phases(model, c.n_ubatch, n_kv, fa, n_swa_cells or None, copies)
        masks = kq_masks(c.n_ubatch, n_kv, n_swa_cells or None, fa)
        row = model.hidden_size * c.n_ubatch * 4          # one f32 activation row set of the ubatch
        if devs:
            used = {w for w in where if w is not None}
            if used:
                # The input layer (token embedding) stays on the CPU: its get_rows output lives in the host's
                # compute buffer, so each GPU's graph holds one n_embd row set fewer than a CPU-only graph.
                # The CPU layers of a partial offload run their matmuls on the GPU too (ggml-backend offloads
                # ops whose weights are in host memory for batches ≥ 32), which adds nothing to the peak.
                layer_part = max(v for k, v in phases.items() if k != "output") - row
                for i, d in enumerate(devs):
                    if i in used:
                        d.compute = max(layer_part, phases["output"] - row) if i == out_dev else layer_part
                    if i in host_weights_of:
                        # a GPU layer whose weights stay in host memory (-ot …=CPU, --n-cpu-moe): ggml-backend's
                        # scheduler copies each such weight into the GPU's compute buffer to run the matmul there
                        # (op offload, batches ≥ 32), one at a time beside the FFN's working set. An estimate:
                        # benchmarks/accuracy.py scores it on public -ot logs.
                        d.compute = max(d.compute, host_weights_of[i] + phases["ffn"] - row)
                # host: the embeddings and their copy to the GPU, and the graph inputs built on the CPU
                # (KQ masks, the KV store's row indices)
                host.compute = host_compute(model, c.n_ubatch) + masks + kv_store_indices(model, c.n_ubatch, fa)
            else:
                # -ngl 0 on a GPU machine: the whole graph is reserved on the GPU (op offload) and the
                # weights of the offloaded matmuls are copied into its buffer; the host keeps the inputs.
                devs[0].compute = max(phases.values()) + _largest_cpu_matmul(model, size_of)
                host.compute = host_compute(model, c.n_ubatch) + masks + kv_store_indices(model, c.n_ubatch, fa)
        else:
            host.compute = max(phases.values())
        # The graph itself, traced and placed as ggml-alloc places it, where it is modelled: a built
        # architecture, CPU-only or CUDA GPUs (any -ngl, --split-mode layer over several GPUs with pipeline
        # parallelism, tensor overrides -ot / --n-cpu-moe). A checkpoint or catalog model is traced as the GGUF
        # llama-quantize would write of it (names, types: quant/gguf_mix.py).
        # (imported here: the graph model is only needed once a llama.cpp plan is made, not on other runtimes' paths)
        from ..quant.gguf_mix import gguf_view
        from . import ggml

        graph_model = model if weights.from_file else (gguf_view(model, weights.quant) if self.simulate_graph else None)
        simulated = (self.simulate_graph and graph_model is not None and ggml.supported(graph_model)
                     and all(d.kind == "gpu" for d in devs))
        used_gpus = sorted({w for w in where if w is not None})
        # src/llama-context.cpp: pipeline parallelism with several GPUs, every layer offloaded, no tensor
        # overrides (--n-cpu-moe is one: common/arg.cpp adds it to tensor_buft_overrides)
        pipeline = len(devs) > 1 and ngl > model.n_layers and not s.override_tensor and not s.n_cpu_moe
        if simulated:
            assert graph_model is not None
            full = not devs or ngl > model.n_layers
            rules = (tuple((pat, buffer_device(buft)) for pat, buft in s.override_tensor)
                     + ggml.n_cpu_moe_overrides(min(s.n_cpu_moe, model.n_layers)))
            kw = (c.n_ubatch, n_kv, fa, n_seq, c.n_stream, normalize_cache_type(s.cache_type_k),
                  normalize_cache_type(s.cache_type_v), n_swa_cells or None)
            if not devs or (len(devs) == 1 and not rules):
                # (CPU only: every weight is in host memory whatever the overrides say)
                # partial offload: which layers sit on the GPU depends on every layer, so the whole graph is traced
                gpu_c, host_c = simulated_compute(graph_prefix(graph_model) if full else graph_model,
                                                  (-1 if ngl > model.n_layers else ngl) if devs else None, *kw)
            else:
                # several GPUs or tensor overrides: the layer at each device boundary and the overridden tensors
                # matter, so the whole graph is traced with each layer's device
                gpu_c, host_c = simulated_compute(graph_model, None, *kw, layer_gpus=tuple(where), n_gpus=len(devs),
                                                  overrides=rules)
            for d, size in zip(devs, gpu_c):
                d.compute = size
            host.compute = host_c
            if pipeline:
                steps.append(Step("pipeline parallelism", f"{len(devs)} GPUs, all layers: the scheduler keeps "
                                  f"{ggml.PIPELINE_COPIES} copies of each split's inputs and of the graph inputs, "
                                  "never freed (in the simulated compute buffers)", f"{ggml.PIPELINE_COPIES} copies",
                                  "src/llama-context.cpp, ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph"))
        elif len(used_gpus) > 1 and pipeline:
            # pipeline parallelism (src/llama-context.cpp: several GPUs, every layer offloaded, --split-mode layer,
            # no tensor overrides): the scheduler keeps GGML_SCHED_MAX_COPIES = 4 copies of every split input and
            # graph input, flagged input+output so ggml-alloc never frees or reuses them (ggml/src/ggml-backend.cpp
            # ggml_backend_sched_split_graph, passes 5–6): three more of each GPU's inputs (the KQ masks, the KV
            # store indices, positions and the incoming n_embd rows) and of the host's graph inputs.
            extra = ggml.PIPELINE_COPIES - 1
            inputs = masks + kv_store_indices(model, c.n_ubatch, fa) + c.n_ubatch * 4
            for i in used_gpus:
                devs[i].compute += extra * (inputs + row)
            host.compute += extra * (inputs + c.n_ubatch * 4)     # + the token ids
            steps.append(Step("pipeline parallelism", f"{len(used_gpus)} GPUs, all layers: {ggml.PIPELINE_COPIES} copies of "
                              f"each split's inputs (masks, KV indices, positions, {model.hidden_size}-wide rows)",
                              f"+{extra * (inputs + row):,} B per GPU, +{extra * (inputs + c.n_ubatch * 4):,} B host",
                              "ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph (n_copies); an estimate "
                              "where the graph is not simulated"))
        # output buffer: n_vocab f32 logits for each of n_seq_max outputs (src/llama-context.cpp output_reserve)
        host.output = model.vocab_size * 4 * n_seq
        if simulated:
            steps.append(Step("compute buffer", f"ggml-alloc placement of the reserved {model.family} graph for n_ubatch "
                              f"{c.n_ubatch}, n_kv {n_kv:,}, flash attention {'on' if fa else 'off'}",
                              ", ".join(f"{d.name} {d.compute:,} B" for d in [*devs, host] if d.compute),
                              "src/llama-context.cpp graph_reserve, ggml/src/ggml-alloc.c (runtimes/ggml_graph.py; "
                              "benchmarks/compute_sim.py checks it against measurements/llamacpp)"))
        else:
            steps.append(Step("compute buffer", ", ".join(f"{k} {v:,}" for k, v in phases.items())
                              + f" B for n_ubatch {c.n_ubatch}, n_kv {n_kv:,}, flash attention {'on' if fa else 'off'}",
                              ", ".join(f"{d.name} {d.compute:,} B" for d in [*devs, host] if d.compute),
                              "src/llama-context.cpp graph_reserve; sizes fitted to llama.cpp's logged buffers, "
                              "measurements/llamacpp"))
        steps.append(Step("output buffer", f"n_vocab {model.vocab_size:,} × 4 B × {n_seq} seq", f"{host.output:,} B",
                          "src/llama-context.cpp output_reserve"))
        return s, [*devs, host], [backend.step(), *steps], {"fa": fa, "context": c, "gpu_context": backend.gpu_context}

    def allocate(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                 targets: list[Target]) -> Allocation:
        """The plan of one llama-server launch; kept per model and settings (an Allocation is immutable)."""
        model = as_llamacpp_loads(model)   # the windows llama.cpp applies, not the config's
        settings = self._as_build_reads(settings)
        return _ALLOCATIONS.get(model, self._key(weights, settings, targets),
                                lambda: self.allocate_now(model, weights, settings, targets))

    def allocate_now(self, model: ModelSpec, weights: WeightEstimate, settings: Settings,
                     targets: list[Target]) -> Allocation:
        asked = settings
        settings, fit_steps = self.fit(model, weights, settings, targets)
        s, bufs, steps, info = self.buffers(model, weights, settings, targets)
        steps = [*fit_steps, *([w] if (w := window_step(model)) else []), *steps]
        compromise = self._compromise(model, asked, s, any(t.kind != "cpu" for t in targets)) if fit_steps else None
        fa = info["fa"]
        c: Context = info["context"]
        devices: list[DeviceMemory] = []
        for b in bufs:
            if b.kind == "cpu":
                if b.capacity or b.total or len(bufs) == 1:
                    devices.append(DeviceMemory(b.name, "cpu", b.capacity, b.model, b.kv + b.rs, b.compute, b.output))
            else:
                devices.append(DeviceMemory(b.name, b.kind, b.capacity, b.model, b.kv + b.rs, b.compute,  # type: ignore[arg-type]
                                            info["gpu_context"] if b.kind == "gpu" and b.total else 0))
        per_token = sum(layer_kv(a, s.cache_type_k, s.cache_type_v, store_v=a.kind != "mla").bytes_per_token
                        for a in model.attention_layers)
        return Allocation(
            settings=s, devices=tuple(devices), kv_bytes_per_token=per_token,
            kv_cache_tokens=None, max_concurrency=None, refusal=self.refusal(model, s, fa), steps=tuple(steps),
            compromise=compromise,
            assumptions=(*([compromise] if compromise else []), f"flash attention {'on' if fa else 'off'}", f"n_ubatch {c.n_ubatch}, n_batch {c.n_batch}",
                         HOST_WEIGHTS_MMAP if s.mmap else HOST_WEIGHTS_LOADED),
        )

    def command(self, model: ModelSpec, settings: Settings) -> str:
        s = settings
        from .published import llama_server_model  # -m FILE, or -hf REPO:QUANT for a published GGUF

        _, _, k = slots(s)
        parts = ["llama-server", *llama_server_model(model, s.quant), "-c", str((s.ctx or DEFAULT_CTX) * k)]
        if s.parallel != PARALLEL_AUTO:
            # without -np llama-server runs its auto 4 slots, so an explicit count is written, 1 included
            parts += ["--parallel", str(max(1, s.parallel))]
        if s.n_gpu_layers is not None:
            parts += ["-ngl", str(s.n_gpu_layers)]
        if s.cache_type_k != "f16":
            parts += ["--cache-type-k", s.cache_type_k]
        if s.cache_type_v != "f16":
            parts += ["--cache-type-v", s.cache_type_v]
        from .flag_spelling import flash_attn_args, llamacpp_build, n_cpu_moe_args  # as the named build spells them

        build = llamacpp_build(getattr(self, "version", None))
        if s.flash_attn != "auto":
            parts += flash_attn_args(s.flash_attn, build)
        if s.n_cpu_moe:
            parts += n_cpu_moe_args(s.n_cpu_moe, build)
        if s.override_tensor:
            rules = ",".join(f"{p}={b}" for p, b in s.override_tensor)
            parts += ["-ot", shlex.quote(rules)]
        if s.kv_unified:
            parts += ["--kv-unified"]
        if s.swa_full:
            parts += ["--swa-full"]
        if s.tensor_split:
            parts += ["--tensor-split", ",".join(f"{x:g}" for x in s.tensor_split)]
        if not s.mmap:
            parts += ["--no-mmap"]
        if not s.kv_offload:
            parts += ["--no-kv-offload"]
        if not s.fit and self.has_fit:
            parts += ["--fit", "off"]
        return " ".join(parts)
