"""llama.cpp's layout of one launch, before any compute buffer: its constants and defaults, the context sizes
after its rounding, where each layer and each weight goes (-ngl, --tensor-split, -ot, --n-cpu-moe), and the
per-device buffers it logs. Pure computation (no I/O); the rules are cited where applied, the module
docstring of runtimes/llamacpp.py lists them."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ..errors import InputError
from ..kv import layer_kv
from ..memo import IdMemo, per_model
from ..model.spec import AttentionSpec, ModelSpec, split_in_gguf
from ..quant.formats import WeightEstimate
from ..quant.ggml_types import QUANT_SIZES, GGMLType
from ..units import MiB, round_up
from .backends import BackendRules, rules_for
from .base import PARALLEL_AUTO, DeviceKind, Settings, Step, Target

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
# src/llama-model.cpp make_cpu_buft_list orders GPU host buffers before the CPU's extra (repack) types, so with a GPU
# nothing is repacked (measurements/llamacpp_cpumoe)
HOST_WEIGHTS_MMAP = ("weights memory-mapped from the file (CPU_Mapped, page cache; on a CPU-only run, tensors the CPU "
                     "backend repacks are copied to an anonymous CPU_REPACK buffer): the host's share counted as "
                     "resident")
HOST_WEIGHTS_LOADED = "--no-mmap: weights read into anonymous host memory (CPU buffer), counted as resident"


pad = round_up     # GGML_PAD


@dataclass(frozen=True)
class _LayerSplit:
    """Which layers live where for a given -ngl."""

    gpu_layers: frozenset[int]
    output_on_gpu: bool


def _split(model: ModelSpec, n_gpu_layers: int) -> _LayerSplit:
    # src/llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 - ngl, 0); a layer il ≥ i_gpu_start
    # is offloaded, and the output layer counts as layer n_layer — so it is the first thing -ngl 1 offloads.
    n = model.n_layers
    start = max(n + 1 - n_gpu_layers, 0)
    return _LayerSplit(frozenset(range(start, n)), n_gpu_layers >= 1)


def matrix_row_pad(type_name: str, row: int) -> int:
    """The bytes ggml-cuda / ggml-sycl allocate beyond a tensor whose rows (ne[0]) hold `row` elements of type
    `type_name`: a quantized type's tensor whose rows are not a multiple of MATRIX_ROW_PADDING gets the bytes of the
    missing part of one row, so kernels may read past the last row (ggml-cuda.cu
    ggml_backend_cuda_buffer_type_get_alloc_size: ggml_row_size(type, MATRIX_ROW_PADDING - ne0 % MATRIX_ROW_PADDING)
    when ggml_is_quantized). Block sizes from ggml's one table (quant/ggml_types.py); 0 for a type that is not
    quantized (one element a block) or that ggml does not have (vLLM's fp8 cache types). Both the GPU weights
    (_weight_row_pad) and each layer's K and V tensors (_caches_by_layer_now) are padded so."""
    ggml_type = GGMLType.__members__.get(type_name.upper())
    if ggml_type is None or row % MATRIX_ROW_PADDING == 0:
        return 0
    block, size = QUANT_SIZES[ggml_type]
    return 0 if block == 1 else size * (MATRIX_ROW_PADDING - row % MATRIX_ROW_PADDING) // block


GPU_TENSOR_ALIGNMENT = 128     # ggml-cuda / ggml-sycl get_alignment: each tensor of a GPU buffer starts at 128 B


def _weight_row_pad(t, from_file: bool) -> int:
    """The bytes a weight takes in a GPU buffer beyond its data, per GGUF part: the row padding of a quantized weight
    (matrix_row_pad, on its rows' ne[0], the innermost dimension), and ggml-alloc rounds each tensor up to the buffer's
    alignment (ggml_backend_alloc_ctx_tensors_from_buft). Only for weights read from a file, whose types and sizes are
    known: gpt-oss's 2,880-wide matrices, Qwen3-30B-A3B's 768-wide expert rows (measurements/llamacpp/data/cuda.jsonl,
    measurements/llamacpp_cpumoe)."""
    if not from_file or t.nbytes is None or not t.shape:
        return 0
    part = t.nbytes // split_in_gguf(t)
    return round_up(part + matrix_row_pad(t.dtype or "", t.shape[-1]), GPU_TENSOR_ALIGNMENT) - part


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



def largest_cpu_matmul(model: ModelSpec, size_of) -> int:
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
    return n, s.llamacpp.kv_unified, n


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



@lru_cache(maxsize=1024)
def layer_devices_kept(n_layers: int, n_gpu_layers: int, shares: tuple[float, ...]) -> tuple[int | None, ...]:
    """layer_devices, kept: every plan of a search lays out its launch again, with a handful of -ngl and splits."""
    return tuple(layer_devices(n_layers, n_gpu_layers, list(shares)))


# weight bytes per device (None: the host), and per GPU the largest weight it copies in from the host
_Placed = tuple[dict[int | None, int], dict[int, int]]


def _place_weights(model: ModelSpec, weights: WeightEstimate, where: tuple[int | None, ...], n_cpu_moe: int,
                   override_tensor: tuple[tuple[str, str], ...], n_devs: int, pad_rows: bool = False) -> _Placed:
    """Weight bytes per device index (None = host) and, per GPU, its layers' largest weight kept in host memory:
    src/llama-model.cpp load_tensors (LlamaCpp.buffers); pad_rows: the GPUs' buffers pad quantized rows
    (_weight_row_pad). The same for every context, so kept per model."""
    key = (weights.quant, weights.total, weights.from_file, where, n_cpu_moe, override_tensor, n_devs, pad_rows)
    return _PLACEMENTS.get(model, key, lambda: _place_weights_now(model, weights, where, n_cpu_moe, override_tensor,
                                                                  n_devs, pad_rows))


def _place_weights_now(model, weights, where, n_cpu_moe, override_tensor, n_devs, pad_rows):
    if not override_tensor:
        return _place_by_layer(_weights_by_layer(model, weights), where, n_cpu_moe, pad_rows)
    return _place_each_tensor(model, weights, where, n_cpu_moe, override_tensor, n_devs, pad_rows)


# src/llama-model.cpp load_tensors, the rules both walks below apply (the one over tensors with -ot rules, the one
# over per-layer sums without): a weight's layer, its buffer, and the host-kept weights a GPU copies in.

def _weight_layer(t, n_layer: int) -> int:
    """The layer whose device holds a checkpoint tensor: a repeating layer's own; the output layer (n_layer: the LM
    head, the final norm), which counts as layer n_layer; else the input layer (-1: the token embedding)."""
    if t.layer is not None and t.layer < n_layer:
        return t.layer
    return n_layer if t.role in ("lm_head", "norm") else -1


def moved_by_cpu_moe(gguf_names: tuple[str, ...]) -> bool:
    """Whether --cpu-moe / --n-cpu-moe sends a tensor (its GGUF tensors' names) to the CPU. llama.cpp adds CPU buffer
    overrides, which src/llama-model-loader.cpp matches with std::regex_search against each GGUF tensor's name as it
    does -ot's (_overrides): --cpu-moe LLM_FFN_EXPS_REGEX "\\.ffn_(up|down|gate|gate_up)_(ch|)exps", --n-cpu-moe N
    "blk\\.i" + that regex for each i < N (ggml-org/llama.cpp common/common.h llm_ffn_exps_cpu_override,
    llm_add_n_cpu_ffn_overrides, common/arg.cpp; runtimes/ggml_scope.py FFN_EXPS_REGEX). The block number is the
    tensor's layer (_weight_buffers compares it with N). The regex takes the experts' biases too (gpt-oss:
    ffn_*_exps.bias) — measured on CUDA, gpt-oss-20b's 25.29 MiB of expert biases leave CUDA0
    (measurements/llamacpp_cpumoe/cuda_h200.jsonl) — and not the shared experts (ffn_*_shexp)."""
    search = _ffn_exps_search()
    # (a name the pattern matches holds "exps": the test first spares ~1 ms of a 1,500-tensor MoE's first plan)
    return any("exps" in name and search(name) for name in gguf_names)


@lru_cache(maxsize=1)
def _ffn_exps_search() -> Callable[[str], re.Match[str] | None]:
    """FFN_EXPS_REGEX compiled once (re.search(pattern, name) looks its pattern up on each call: ~1.5 ms of a
    1,000-tensor MoE's first plan)."""
    from .ggml_scope import FFN_EXPS_REGEX

    return re.compile(FFN_EXPS_REGEX).search


def _moved_by_cpu_moe_each(model: ModelSpec) -> tuple[bool, ...]:
    """moved_by_cpu_moe of each of model.tensors, under the names the GGUF gives them (quant.gguf_mix.gguf_names: a
    checkpoint's are mapped as convert_hf_to_gguf.py writes them); kept per model."""
    from ..quant.gguf_mix import gguf_names

    return _CPU_MOE.get(model, None, lambda: tuple(moved_by_cpu_moe(names) for names in gguf_names(model)))


def _weight_buffers(keys: Sequence[tuple[int, bool]], where: tuple[int | None, ...], n_cpu_moe: int
                    ) -> list[int | None]:
    """The device of each weight (None: the host) before any -ot rule, from its layer (_weight_layer) and whether
    --n-cpu-moe moves it (moved_by_cpu_moe): the input layer always stays on the CPU, --n-cpu-moe N keeps the
    experts of the first N layers on the CPU, else its layer's. (One list per layout: a call per weight would cost
    the per-layer walk half again.)"""
    return [None if il < 0 or (experts and il < n_cpu_moe) else where[il] for il, experts in keys]


def _keep_host_weight(host_weights_of: dict[int, int], where: tuple[int | None, ...], il: int, n_layer: int,
                      dev: int | None, size: int) -> None:
    """A matrix held on the host (dev None) of a repeating layer that runs on a GPU: that GPU copies it in to run
    its matmul, so each GPU's largest such weight is kept (llamacpp_compute reads it)."""
    runs_on = where[il] if 0 <= il < n_layer else None
    if dev is None and runs_on is not None:
        host_weights_of[runs_on] = max(host_weights_of.get(runs_on, 0), size)


def _add_tied_copy(placed: dict[int | None, int], where: tuple[int | None, ...], n_layer: int, size: int) -> None:
    """Tied embeddings: the output layer reads token_embd, which llama.cpp loads a second time (TENSOR_DUPLICATED)
    into the output layer's GPU buffer (src/llama-model.cpp load_tensors); none when that layer is on the host."""
    out_dev = where[n_layer]
    if out_dev is not None and size:
        placed[out_dev] = placed.get(out_dev, 0) + size


@dataclass(frozen=True)
class _LayerWeights:
    """A model's weight bytes grouped by what decides their buffer when no -ot rule applies: per (layer, whether
    --n-cpu-moe moves them) of _weight_layer and moved_by_cpu_moe, their bytes and their largest matrix part (-1:
    none); and the tied embedding's copy. Computed once per model and weight estimate, so each of --fit's layouts is
    a walk over groups, not tensors. Tuples of ints: the cyclic collector untracks them."""

    n_layer: int
    keys: tuple[tuple[int, bool], ...]
    sizes: tuple[int, ...]
    largest: tuple[int, ...]
    embed_copy: int
    pads: tuple[int, ...] = ()      # per group, its weights' row padding in a GPU buffer (_weight_row_pad)
    embed_copy_pad: int = 0


def _weights_by_layer(model: ModelSpec, weights: WeightEstimate) -> _LayerWeights:
    return _BY_LAYER.get(model, (weights.quant, weights.total, weights.from_file),
                         lambda: _weights_by_layer_now(model, weights))


def _weights_by_layer_now(model: ModelSpec, weights: WeightEstimate) -> _LayerWeights:
    keys, rows = _layer_rows(model)
    sizes, largest, pads = [0] * len(keys), [-1] * len(keys), [0] * len(keys)
    embed_copy = embed_copy_pad = 0
    padded = 1 if weights.from_file else 0      # (_weight_row_pad: only a file's weights)
    for size, (group, n_parts, matrix, pad, embed_pad) in zip(_tensor_sizes(model, weights), rows):
        part = size // n_parts
        sizes[group] += part * n_parts
        pads[group] += pad * padded
        if matrix and part > largest[group]:
            largest[group] = part
        if embed_pad >= 0:
            embed_copy += size
            embed_copy_pad += embed_pad * padded
    return _LayerWeights(model.n_layers, keys, tuple(sizes), tuple(largest), embed_copy, tuple(pads), embed_copy_pad)


@per_model
def _layer_rows(model: ModelSpec) -> tuple[tuple[tuple[int, bool], ...], tuple[tuple[int, int, bool, int, int], ...]]:
    """What _weights_by_layer_now reads of each tensor that no quant changes, once per model (its first rows plan it
    at the plan's quant and the smaller ones fixes.py offers): the groups' keys in their first tensor's order, and
    per tensor its group's index, GGUF parts, whether a matrix, row padding over its parts as a file's weight, and a
    tied token embedding's one-part padding (else -1)."""
    n, index, rows = model.n_layers, dict[tuple[int, bool], int](), []
    tied = not any(x.role == "lm_head" for x in model.tensors)
    for t, moved in zip(model.tensors, _moved_by_cpu_moe_each(model)):
        n_parts, pad = split_in_gguf(t), _weight_row_pad(t, True)
        group = index.setdefault((_weight_layer(t, n), moved), len(index))
        rows.append((group, n_parts, len(t.shape) > 1, pad * n_parts, pad if t.role == "embed" and tied else -1))
    return tuple(index), tuple(rows)


def _tensor_sizes(model: ModelSpec, weights: WeightEstimate) -> list[int]:
    """sizer(model, weights)'s size_of of each of model.tensors (the same integers), from _text_numbers's rows."""
    if weights.from_file and all(t.nbytes is not None for t in model.tensors):
        return [t.nbytes for t in model.tensors]  # type: ignore[misc]
    scale = _SCALES.get(model, (weights.quant, weights.total), lambda: _typed_scales(model, weights))
    mean, scale_of, from_file = scale[None], scale.get, weights.from_file
    return [nbytes if nbytes is not None and from_file else 0 if tower else int(numel * scale_of(key, mean))
            for key, numel, tower, nbytes in _text_numbers(model)[2]]


def _place_by_layer(w: _LayerWeights, where: tuple[int | None, ...], n_cpu_moe: int, pad_rows: bool = False
                    ) -> _Placed:
    """_place_each_tensor's sums without -ot rules, from the per-layer sums (integers: the same totals)."""
    placed: dict[int | None, int] = {}
    host_weights_of: dict[int, int] = {}
    pads = w.pads if pad_rows else (0,) * len(w.keys)
    for (il, _), dev, size, largest, pad in zip(w.keys, _weight_buffers(w.keys, where, n_cpu_moe), w.sizes,
                                                w.largest, pads):
        if dev is not None:
            size += pad
        if size:
            placed[dev] = placed.get(dev, 0) + size
        if dev is None and largest >= 0:       # (a host-held matrix: the rule's test first, as most are not)
            _keep_host_weight(host_weights_of, where, il, w.n_layer, dev, largest)
    _add_tied_copy(placed, where, w.n_layer, w.embed_copy + (w.embed_copy_pad if pad_rows else 0))
    return placed, host_weights_of


def _place_each_tensor(model: ModelSpec, weights: WeightEstimate, where: tuple[int | None, ...], n_cpu_moe: int,
                       override_tensor: tuple[tuple[str, str], ...], n_devs: int, pad_rows: bool = False) -> _Placed:
    n = model.n_layers
    placed: dict[int | None, int] = {}
    size_of = sizer(model, weights)

    def add(dev: int | None, size: int) -> None:
        placed[dev] = placed.get(dev, 0) + size

    overrides = _overrides(model, override_tensor, n_devs)
    host_weights_of: dict[int, int] = {}   # GPU → its layers' largest weight kept in host memory
    tied = not any(x.role == "lm_head" for x in model.tensors)
    embed_copy = 0
    keys = [(_weight_layer(t, n), moved) for t, moved in zip(model.tensors, _moved_by_cpu_moe_each(model))]
    for k, (t, (il, _), d) in enumerate(zip(model.tensors, keys, _weight_buffers(keys, where, n_cpu_moe))):
        n_parts = split_in_gguf(t)
        pad = _weight_row_pad(t, weights.from_file) if pad_rows else 0
        for part in range(n_parts):
            size = size_of(t) // n_parts
            dev = overrides.get((k, part), d)   # -ot: the first matching pattern's buffer
            add(dev, size + (pad if dev is not None else 0))
            if len(t.shape) > 1:
                _keep_host_weight(host_weights_of, where, il, n, dev, size)
        if t.role == "embed" and tied:
            embed_copy += size_of(t) + pad
    _add_tied_copy(placed, where, n, embed_copy)
    return placed, host_weights_of


# a multimodal checkpoint's vision / audio tower: convert_hf_to_gguf.py writes it to a separate --mmproj file, never
# to the model's GGUF (the weight estimate leaves it out: weights.py), so llama.cpp places none of it — measured on
# an H200 (measurements/llamacpp_h200/h200_archs.jsonl, shrunk Qwen3.5-0.8B, every layer on the GPU): CUDA0 model
# 81.51 MiB, CPU_Mapped 1.00 (the token embedding), where placing the tower's share on the host planned 24.27 / 57.54
TOWER_ROLES = ("vision", "projector", "audio")


def sizer(model: ModelSpec, weights: WeightEstimate):
    """A tensor's bytes: read from the file, or, for a model given by its config, the weight estimate spread over
    the text tensors at the types llama-quantize gives each (a tower tensor: none)."""
    if weights.from_file and all(t.nbytes is not None for t in model.tensors):
        return lambda t: t.nbytes
    scale = _SCALES.get(model, (weights.quant, weights.total), lambda: _typed_scales(model, weights))

    def size_of(t) -> int:
        if t.nbytes is not None and weights.from_file:
            return t.nbytes
        return 0 if t.role in TOWER_ROLES else int(t.numel * scale.get((t.layer, t.role), scale[None]))
    return size_of


def _typed_scales(model: ModelSpec, weights: WeightEstimate) -> dict:
    """Bytes per parameter of each (layer, role) as llama-quantize types it under the estimate's quant (gguf_view:
    llama-quant.cpp gives a tied token_embd the output's Q6_K under Q4_K_M, 6.56 bits, where the layers average
    4.9), scaled so the text tensors sum to the estimate; None: the estimate's mean, for what the view lacks or
    where the quant is a float width or has no GGUF typing (every tensor at the mean then)."""
    numel, n_text, _ = _text_numbers(model)
    mean = weights.total / max(1, n_text)
    scales: dict = {None: mean}
    from ..quant import gguf_table
    from ..quant.gguf_mix import gguf_view

    # a float width (F16, BF16, or vLLM's "bf16"): every tensor at it already, the mean is each one's
    ftype = (weights.quant or "").upper()
    if weights.from_file or ftype in FLOAT_FTYPES or ftype not in gguf_table.supported_ftypes():
        return scales
    view = gguf_view(model, ftype)
    if view is None:
        return scales
    typed: dict[tuple, int] = {}
    for v in view.tensors:
        typed[(v.layer, v.role)] = typed.get((v.layer, v.role), 0) + (v.nbytes or 0)
    matched = {k: n for k, n in numel.items() if typed.get(k)}
    typed_sum = sum(typed[k] for k in matched)
    # what the view's groups hold, rescaled to the estimate's bytes less the unmatched tensors' at the mean
    rest = weights.total - mean * sum(n for k, n in numel.items() if k not in matched)
    if typed_sum <= 0 or rest <= 0:
        return scales
    scales.update({k: typed[k] * rest / typed_sum / n for k, n in matched.items()})
    return scales


@per_model
def _text_numbers(model: ModelSpec) -> tuple[dict[tuple, int], int, tuple[tuple[tuple, int, bool, int | None], ...]]:
    """The text tensors' (not a tower's) elements per (layer, role) and in all, and per tensor what sizer's size_of
    reads: its (layer, role), elements, whether a tower's, its file bytes."""
    rows = tuple(((t.layer, t.role), t.numel, t.role in TOWER_ROLES, t.nbytes) for t in model.tensors)
    numel: dict[tuple, int] = {}
    for key, n, tower, _ in rows:
        if not tower:
            numel[key] = numel.get(key, 0) + n
    return numel, sum(numel.values()), rows


_SCALES = IdMemo(256)
FLOAT_FTYPES = ("F32", "F16", "BF16")


_PLACEMENTS = IdMemo(512)
_BY_LAYER = IdMemo(256)
_CPU_MOE = IdMemo(256)


# --- one launch, before its compute buffers ------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    """What one llama-server launch is before a byte is counted: the settings after the build's defaults, the
    context after llama.cpp's rounding, flash attention, the backend's rules, the slots (n_seq_max, and -c = ctx ×
    k) and the device of each layer (the last entry the output layer; None the host)."""

    settings: Settings
    context: Context
    flash_attn: bool
    backend: BackendRules
    n_seq: int
    k: int
    ngl: int
    where: tuple[int | None, ...]
    mla_cache: str = "k"    # how this build caches an MLA layer (MLA_CACHE_WORDS; runtimes/versions.py)


@dataclass
class Pools:
    """The buffers of each device (GPUs in order, then the host) with the weights, the KV cache and the recurrent
    state placed, and what the explain step and the compute sizing read of them."""

    devs: list[DeviceBuffers]
    host: DeviceBuffers
    host_weights_of: dict[int, int]   # GPU → its layers' largest weight kept in host memory
    kv_per_token: int                 # KV bytes per token over the attention layers
    n_swa_cells: int                  # cells per stream of the sliding-window layers (0: none)
    # per window (None: the layers holding the whole context): (window, layers, KV bytes per token, cells per stream)
    kv_groups: tuple[tuple[int | None, int, int, int], ...] = ()

    @property
    def all(self) -> list[DeviceBuffers]:
        return [*self.devs, self.host]


def place_pools(model: ModelSpec, weights: WeightEstimate, b: Budget, gpus: list[Target], host_t: Target) -> Pools:
    """Weights per device (src/llama-model.cpp load_tensors), then each layer's KV cache and recurrent state with
    the layer (offload_kqv, the default: src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp)."""
    s, c = b.settings, b.context
    devs = [DeviceBuffers(g.name, g.kind, g.capacity) for g in gpus]
    host = DeviceBuffers(host_t.name, "cpu", host_t.capacity)
    at = lambda i: host if i is None else devs[i]   # noqa: E731
    placed, host_weights_of = _place_weights(model, weights, b.where, s.llamacpp.n_cpu_moe, s.llamacpp.override_tensor,
                                             len(devs), b.backend.pads_quant_rows)
    for dev_index, size in placed.items():
        at(dev_index).model += size
    if not model.tensors:
        host.model = weights.total
    caches = _caches_by_layer(model, s.cache_type_k, s.cache_type_v, v_trans=not b.flash_attn, mla_cache=b.mla_cache)
    groups = _caches_by_device(model, s.cache_type_k, s.cache_type_v, b.where if s.llamacpp.kv_offload else None,
                               v_trans=not b.flash_attn, mla_cache=b.mla_cache)
    pads = b.backend.pads_quant_rows
    for (i, window), (bytes_per_token, row_pad) in groups.attention.items():
        cells = swa_cells(c, window, s.llamacpp.swa_full) if window else c.n_ctx_seq
        dev = at(i)
        dev.kv += bytes_per_token * cells * c.n_stream
        if dev.kind == "gpu" and pads:      # ggml-cuda, ggml-sycl get_alloc_size
            dev.kv += row_pad
    for i, state_bytes in groups.recurrent.items():
        # one f32 conv + ssm state per sequence (src/llama-memory-recurrent.cpp: mem_size = max(1, n_seq_max))
        at(i).rs += state_bytes * b.n_seq
    n_swa_cells = swa_cells(c, groups.last_window, s.llamacpp.swa_full) if groups.last_window else 0
    return Pools(devs, host, host_weights_of, caches.per_token, n_swa_cells, kv_window_groups(caches, c, s))


def kv_window_groups(caches: _LayerCaches, c: Context, s: Settings) -> tuple[tuple[int | None, int, int, int], ...]:
    """The attention layers by window (None first: those holding the whole context), each as (window, layers, KV
    bytes per token, cells per stream): the terms of the KV cache's sum that --explain writes out."""
    by: dict[int | None, tuple[int, int]] = {}
    for _, bytes_per_token, window, _ in caches.attention:
        n, b = by.get(window, (0, 0))
        by[window] = (n + 1, b + bytes_per_token)
    return tuple((w, n, b, swa_cells(c, w, s.llamacpp.swa_full) if w else c.n_ctx_seq)
                 for w, (n, b) in sorted(by.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)))


@dataclass(frozen=True)
class _LayerCaches:
    """Each attention layer's KV bytes per token, window and CUDA row padding (K and V), and each recurrent
    layer's state bytes per sequence, for one model and cache types: the same for every layout and context."""

    attention: tuple[tuple[int, int, int | None, int], ...]   # (layer, bytes per token, window, row pad)
    recurrent: tuple[tuple[int, int], ...]                     # (layer, conv + ssm state bytes)
    per_token: int                                             # KV bytes per token over the attention layers


def kv_per_token(model: ModelSpec, cache_type_k: str, cache_type_v: str, *, v_trans: bool = False,
                 mla_cache: str = "k") -> int:
    """KV bytes per token over the attention layers (MLA: as the build caches it, today K alone), kept per model and
    cache types."""
    return _caches_by_layer(model, cache_type_k, cache_type_v, v_trans=v_trans, mla_cache=mla_cache).per_token


def _caches_by_layer(model: ModelSpec, cache_type_k: str, cache_type_v: str, *, v_trans: bool = False,
                     mla_cache: str = "k") -> _LayerCaches:
    return _CACHES.get(model, (cache_type_k, cache_type_v, v_trans, mla_cache),
                       lambda: _caches_by_layer_now(model, cache_type_k, cache_type_v, v_trans, mla_cache))


def _caches_by_layer_now(model: ModelSpec, cache_type_k: str, cache_type_v: str, v_trans: bool,
                         mla_cache: str = "k") -> _LayerCaches:
    """``v_trans`` (flash attention off: V stored transposed): every layer's V rows are as wide as the widest
    layer's, hparams.n_embd_v_gqa_max() (src/llama-kv-cache.cpp [TAG_V_CACHE_VARIABLE]: "the V embeddings have
    different sizes across layers and FA is not enabled - padding V cache to …"; Gemma 4's full layers are wider or
    narrower than its sliding ones); with flash attention each layer keeps its own width. An MLA layer is cached as
    the build does (``mla_cache``, MLA_CACHE_WORDS): before PR #19067 it is an ordinary K/V layer."""
    attention, recurrent, per_token = [], [], 0
    heads = mla_head_widths(model) if mla_cache == MLA_CACHE_HEADS else None
    cached = [mla_as_cached(la.attention, mla_cache, heads) if la.attention is not None else None for la in model.layers]
    v_max = max((a.n_kv_heads * a.v_dim for a in cached if a is not None and a.kind != "mla"), default=0)
    for il, layer in enumerate(model.layers):
        if (a := cached[il]) is not None:
            if v_trans and a.kind != "mla" and a.n_kv_heads * a.v_dim < v_max:
                # the same K row (heads × width), a V row v_max wide
                a = replace(a, n_kv_heads=1, k_dim=a.n_kv_heads * a.k_dim, v_dim=v_max)
            # MLA: V is a view of the cached latent, no V rows are stored (src/llama-kv-cache.cpp, is_mla)
            lk = layer_kv(a, cache_type_k, cache_type_v, store_v=a.kind != "mla")
            per_token += lk.bytes_per_token
            row_pad = matrix_row_pad(cache_type_k, a.n_kv_heads * a.k_dim)
            if a.kind != "mla":
                row_pad += matrix_row_pad(cache_type_v, a.n_kv_heads * a.v_dim)
            attention.append((il, lk.bytes_per_token, lk.window, row_pad))
        if layer.recurrent is not None:
            r = layer.recurrent
            recurrent.append((il, (r.conv_elems + r.state_elems) * 4))
    return _LayerCaches(tuple(attention), tuple(recurrent), per_token)


@dataclass(frozen=True)
class _DeviceCaches:
    """_LayerCaches summed per device (None: the host) for one layout: each attention layer's KV goes to its layer's
    device (offload_kqv) and counts ``cells`` of its own (the context, or its window's), so per (device, window) the
    bytes per token and the row padding add up; the recurrent states per device. Integers: place_pools' totals are
    the per-layer walk's, without walking ~100 layers for each of --fit's and the searches' plans."""

    attention: dict[tuple[int | None, int | None], tuple[int, int]]   # (device, window) → (bytes per token, pad)
    recurrent: dict[int | None, int]                                   # device → conv + ssm state bytes
    last_window: int | None       # the last sliding layer's window: the SWA cache's cells follow it (n_swa_cells)


def _caches_by_device(model: ModelSpec, cache_type_k: str, cache_type_v: str,
                      where: tuple[int | None, ...] | None, *, v_trans: bool = False,
                      mla_cache: str = "k") -> _DeviceCaches:
    """Per (model, cache types, layout); ``where`` None: -nkvo, every cache on the host."""
    def now() -> _DeviceCaches:
        caches = _caches_by_layer(model, cache_type_k, cache_type_v, v_trans=v_trans, mla_cache=mla_cache)
        attention: dict[tuple[int | None, int | None], tuple[int, int]] = {}
        last_window = None
        for il, bytes_per_token, window, row_pad in caches.attention:
            key = (where[il] if where is not None else None, window or None)
            per_token, pad = attention.get(key, (0, 0))
            attention[key] = (per_token + bytes_per_token, pad + row_pad)
            last_window = window or last_window
        recurrent: dict[int | None, int] = {}
        for il, state_bytes in caches.recurrent:
            dev = where[il] if where is not None else None
            recurrent[dev] = recurrent.get(dev, 0) + state_bytes
        return _DeviceCaches(attention, recurrent, last_window)
    return _BY_DEVICE.get(model, (cache_type_k, cache_type_v, where, v_trans, mla_cache), now)


_CACHES = IdMemo(256)
_BY_DEVICE = IdMemo(1024)


# --- MLA (llama.cpp arch deepseek2: DeepSeek V2/V3/R1, Kimi K2, GLM-4.7-Flash …): what each build caches ---------
# The GGUF decides first: only a file with {arch}.attention.key_length_mla (convert_hf_to_gguf.py from PR #12801 on)
# is MLA (hparams.is_mla(); src/llama-model.cpp load_hparams reads the key as optional "for compatibility with
# existing DeepSeek V2 and V2.5 GGUFs"); an older conversion is an ordinary K/V model in every build (model/gguf.py).
# For an MLA model the build decides (runtimes/versions.py llamacpp_mla_cache): from PR #19067 (2026-01, "kv-cache :
# support V-less cache": is_mla() skips the V tensors) one latent K row, kv_lora_rank + qk_rope_head_dim wide, V a view
# of it; from PR #12801 (2025-04) to then the same K row and its kv_lora_rank part stored again as V (the GGUF's
# head_count_kv 1, key_length 576, value_length 512, allocated as any K/V layer); before PR #12801 MLA run as MHA,
# K n_head × (qk_nope + qk_rope), V n_head × v_head_dim.
MLA_CACHE_K, MLA_CACHE_KV, MLA_CACHE_HEADS = "k", "kv", "heads"
MLA_CACHE_WORDS = {
    MLA_CACHE_K: "the latent alone: K kv_lora_rank + qk_rope_head_dim wide, no V (V a view of K)",
    MLA_CACHE_KV: "the latent as K (kv_lora_rank + qk_rope_head_dim) and its kv_lora_rank part again as V",
    MLA_CACHE_HEADS: "every head's K and V, as multi-head attention: K n_head × (qk_nope + qk_rope_head_dim), "
                     "V n_head × v_head_dim",
}


def mla_head_widths(model: ModelSpec) -> tuple[int, int, int] | None:
    """(n_head, qk_nope + qk_rope, v_head_dim) of the first MLA layer, read from its weights (None without them):
    attn_output is n_embd × n_head·v_head_dim, kv_b n_head·(qk_nope + v_head_dim) × kv_lora_rank (a GGUF's attn_k_b
    n_head·qk_nope × kv_lora_rank and attn_v_b n_head·v_head_dim × kv_lora_rank), and the latent is kv_lora_rank +
    qk_rope wide (src/llama-model.cpp, LLM_ARCH_DEEPSEEK2 create_tensor shapes)."""
    il, a = next(((i, la.attention) for i, la in enumerate(model.layers)
                  if la.attention is not None and la.attention.kind == "mla"), (None, None))
    n_head, kv_lora = model.n_heads, a.v_dim if a is not None else 0
    if a is None or n_head <= 0 or kv_lora <= 0 or model.hidden_size <= 0:
        return None
    mine = [t for t in model.tensors if t.layer == il]
    o = sum(t.numel for t in mine if t.role == "attn_o")
    k_b = sum(t.numel for t in mine if t.role == "attn_kv_b" and ".attn_k_b" in t.name)
    kv_b = sum(t.numel for t in mine if t.role == "attn_kv_b")
    v_head, rest = divmod(o, model.hidden_size * n_head)
    nope, rest2 = divmod(k_b if k_b else kv_b, n_head * kv_lora)
    nope = nope if k_b else nope - v_head
    if rest or rest2 or v_head <= 0 or nope <= 0:
        return None
    return n_head, nope + a.k_dim - kv_lora, v_head


def mla_as_cached(a: AttentionSpec, mla_cache: str, heads: tuple[int, int, int] | None) -> AttentionSpec:
    """An MLA layer as the build's KV cache holds it: itself (K alone) from PR #19067, one K/V head of the latent
    before it, every head's K/V before PR #12801 (``heads`` from mla_head_widths; unknown: the latent K/V head)."""
    if a.kind != "mla" or mla_cache == MLA_CACHE_K:
        return a
    if mla_cache == MLA_CACHE_HEADS and heads is not None:
        return AttentionSpec("full", heads[0], heads[1], heads[2])
    return AttentionSpec("full", 1, a.k_dim, a.v_dim)


def mla_cache_step(model: ModelSpec, mla_cache: str, why: str) -> Step | None:
    """--explain's line for a model with MLA layers: what the build caches of each, and where that comes from."""
    mla = next((a for a in model.attention_layers if a.kind == "mla"), None)
    if mla is None:
        return None
    kv_lora, rope = mla.v_dim, mla.k_dim - mla.v_dim
    if mla_cache == MLA_CACHE_HEADS and (heads := mla_head_widths(model)) is not None:
        n, k, v = heads
        widths = f"K {n} × {k} = {n * k:,}, V {n} × {v} = {n * v:,} values per layer and token"
    elif mla_cache == MLA_CACHE_K:
        widths = f"K {kv_lora} + {rope} = {kv_lora + rope} values per layer and token, V none"
    else:
        widths = f"K {kv_lora} + {rope} = {kv_lora + rope}, V {kv_lora} values per layer and token"
        if mla_cache == MLA_CACHE_HEADS:
            widths += " (the per-head widths are not known without the model's weights: the latent K/V planned)"
    return Step("MLA cache", f"{MLA_CACHE_WORDS[mla_cache]}: {widths}", mla_cache, why)


def backend_rules(backend: str | None, targets: list[Target]) -> BackendRules:
    """runtimes/backends.py rules_for, kept per backend and first GPU: it reads only the first GPU's name and kind,
    and finding a loose GPU name in the device catalog costs more than a whole plan without a traced graph."""
    gpu = next((t for t in targets if t.kind != "cpu"), None)
    return _backend_rules(backend, gpu.name if gpu is not None else None, gpu.kind if gpu is not None else None)


@lru_cache(maxsize=256)
def _backend_rules(backend: str | None, gpu_name: str | None, gpu_kind: DeviceKind | None) -> BackendRules:
    gpus = [Target(gpu_name, gpu_kind, 0)] if gpu_name is not None and gpu_kind is not None else []
    return rules_for(backend, gpus)
