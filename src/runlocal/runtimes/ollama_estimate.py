"""Ollama v0.7.1 – v0.11.4 on several GPUs: its own estimator picks the GPUs and splits the layers (`ollama==X`).

Read in ollama/ollama at v0.9.0 and v0.11.4 (llm/memory.go unchanged in what follows from v0.7.1, 3fe74fba4 "Use first
layer as memory buffer in estimation", to v0.11.4; v0.11.5 moved the Go engine to measured layouts, d5a0d8d90, and
v0.12.11 both runners, f560bd077 — those releases are not modelled here):

* server/sched.go pickBestFullFitByLibrary: the GPUs sorted by free memory, most first; unless OLLAMA_SCHED_SPREAD,
  the first single GPU on which llm/memory.go PredictServerFit puts every layer (blocks + the output layer) takes the
  model alone; else every GPU, which EstimateGPULayers then splits (pickBestPartialFitByLibrary with one library).
* llm/memory.go EstimateGPULayers: per layer its GGUF blocks' bytes + its KV (fs/ggml/ggml.go GraphSize: num_ctx ×
  parallel × (head_k + head_v) × heads_kv × 2 B for f16); a buffer of blk.0 + its KV; each GPU kept only if its free
  memory holds GPU overhead + the graph + the GPU's minimum (457 MiB for CUDA and ROCm, discover/gpu.go) + 2 layers.
  Layers are placed last first, layer i on the (i mod n)-th GPU still with space (a GPU that cannot take it leaves
  the list); then the output layer the same way at index = layers placed. The graph is GraphSize's partial-offload
  size on every GPU when several (and when not every layer is placed), its full-offload size otherwise.
* GraphSize per architecture: "llama" (dense) and "qwen2" have formulas of their own (written out in graph_sizes);
  an architecture with no case of its own takes GQA × KV total / 6 for both. Other cases (gemma*, command-r, phi2,
  stablelm, deepseek2, chatglm, mllama, gptoss, a llama with experts) are not modelled: None (the plan then splits
  the layers as llama-server does, by free memory, as it does for v0.11.5 – v0.29).

The runner is then started with --n-gpu-layers (the layers placed) and --tensor-split (the layers per GPU, in the
sorted order) (llm/server.go NewLlamaServer). Pure computation: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20
MINIMUM_MEMORY = 457 * MiB          # discover/gpu.go cudaMinimumMemory, rocmMinimumMemory (v0.7.1 – v0.11.4)
MODELLED_FROM, MODELLED_TO = (0, 7, 1), (0, 11, 4)
OWN_CASES = frozenset({"llama", "llama4", "mllama", "gemma", "gemma2", "gemma3", "gemma3n", "commandr", "qwen2",
                       "phi2", "stablelm", "deepseek2", "chatglm", "gptoss"})   # GraphSize's cases (v0.11.4)


@dataclass(frozen=True)
class ModelShape:
    """What GraphSize and EstimateGPULayers read of a GGUF: its architecture (compared without separators), the
    attention's sizes, the vocabulary, each block's bytes and the output layer's (output_norm + output, else the
    token embedding)."""

    arch: str
    embedding: int
    heads: int
    heads_kv: int
    head_k: int
    head_v: int
    vocab: int
    blocks: tuple[int, ...]
    output: int
    experts: bool = False


@dataclass(frozen=True)
class Estimate:
    layers: int                     # layers placed on GPUs, the output layer counted as one
    counts: tuple[int, ...]         # per GPU, in the order given
    allocations: tuple[int, ...]    # bytes per GPU
    full: bool                      # every block and the output layer placed
    graph: int


def graph_sizes(m: ModelShape, context: int, batch: int, kv_total: int) -> tuple[int, int] | None:
    """(partial, full) offload graph bytes as fs/ggml/ggml.go GraphSize gives them at v0.9.0 / v0.11.4; None where
    the architecture has a case not modelled here."""
    e, h, hkv, v, c, b = m.embedding, m.heads, m.heads_kv, m.vocab, context, batch
    if m.arch == "llama" and not m.experts:
        full = max(4 * b * (1 + 4 * e + c * (1 + h)), 4 * b * (e + v))
        partial = 4 * b * e + max(4 * b * (1 + e + max(c, e)) + e * e * 9 // 16 + 4 * c * (b * h + m.head_k * hkv),
                                  4 * b * (e + v) + e * v * 105 // 128)
        return partial, full
    if m.arch == "qwen2":
        full = max(4 * b * (e + v), 4 * b * (1 + 2 * e + c + c * h))
        partial = max(4 * b * (e + v) + e * v * 105 // 128, 4 * (b * (1 + 2 * e + c * (1 + h)) + e * (1 + c)))
        return partial, full
    if m.arch in OWN_CASES:
        return None
    partial = (h // max(hkv, 1)) * kv_total // 6      # llm/memory.go: "graphPartialOffload = gqa * kvTotal / 6"
    return partial, partial


def estimate_gpu_layers(m: ModelShape, free: list[int], context: int, batch: int, kv_bytes: float = 2.0,
                        overhead: int = 0, minimum: int = MINIMUM_MEMORY) -> Estimate | None:
    """EstimateGPULayers for GPUs with these free bytes (num_gpu unset, no projector file, not Metal); ``context`` is
    num_ctx × parallel, ``batch`` min(num_ctx, num_batch)."""
    kv = [int(context * (m.head_k + m.head_v) * m.heads_kv * kv_bytes)] * len(m.blocks)
    graphs = graph_sizes(m, context, batch, sum(kv))
    if graphs is None:
        return None
    partial, full = graphs
    if len(free) > 1:
        full = partial                  # "multigpu should always use the partial graph size"
    graph = max(partial, full)
    buffer = m.blocks[0] + kv[0]
    alloc = [0] * len(free)
    counts = [0] * len(free)
    with_space = [i for i, f in enumerate(free) if f >= overhead + graph + minimum + 2 * buffer]
    for i in with_space:
        alloc[i] += minimum + buffer
    placed = 0
    for il in range(len(m.blocks) - 1, -1, -1):
        size = m.blocks[il] + kv[il]
        placed += _place(il, size, with_space, alloc, counts, free, overhead + graph)
    fully = placed >= len(m.blocks)
    if m.output:
        placed += _place(placed, m.output, with_space, alloc, counts, free, overhead + graph, drop=False)
        fully = fully and placed >= len(m.blocks) + 1
    for i in range(len(free)):
        if counts[i] > 0:
            alloc[i] += full if fully else partial
    return Estimate(placed, tuple(counts), tuple(alloc), fully, full if fully else partial)


def _place(index: int, size: int, with_space: list[int], alloc: list[int], counts: list[int], free: list[int],
           reserve: int, drop: bool = True) -> int:
    """One layer on the (index mod n)-th GPU with space; a GPU it does not fit leaves the list (blocks only)."""
    for j in range(len(with_space), 0, -1):
        g = with_space[index % j]
        if free[g] > reserve + alloc[g] + size:
            alloc[g] += size
            counts[g] += 1
            return 1
        if drop:
            with_space.pop(index % j)
    return 0


def pick_gpus(m: ModelShape, free: list[int], context: int, batch: int, spread: bool = False,
              kv_bytes: float = 2.0, overhead: int = 0) -> tuple[list[int], Estimate] | None:
    """(the GPUs given, by index into ``free``, in the order the runner gets them; their estimate) by
    pickBestFullFitByLibrary / pickBestPartialFitByLibrary; None where GraphSize's case is not modelled."""
    order = sorted(range(len(free)), key=lambda i: -free[i])
    if not spread:
        for i in order:
            one = estimate_gpu_layers(m, [free[i]], context, batch, kv_bytes, overhead)
            if one is None:
                return None
            if one.layers >= len(m.blocks) + 1:
                return [i], one
    every = estimate_gpu_layers(m, [free[i] for i in order], context, batch, kv_bytes, overhead)
    return (order, every) if every is not None else None





def modelled(version: tuple[int, ...] | None) -> bool:
    """Whether this release splits layers over several GPUs by the estimator above (v0.7.1 – v0.11.4)."""
    return version is not None and MODELLED_FROM <= version[:3] <= MODELLED_TO


def shape_of(model, weights, arch: str) -> ModelShape:
    """The ModelShape of a catalog model at the quant planned: each block's bytes and the output layer's as llama.cpp
    stores them (runtimes/llamacpp_layout.sizer), the attention sizes of its first attention layer."""
    from .llamacpp_layout import sizer

    size_of = sizer(model, weights)
    blocks = [0] * model.n_layers
    output = embed = 0
    for t in model.tensors:
        if t.layer is not None and t.layer < model.n_layers:
            blocks[t.layer] += size_of(t)
        elif t.role in ("lm_head", "norm"):
            output += size_of(t)
        elif t.role == "embed":
            embed = size_of(t)
    if not any(t.role == "lm_head" for t in model.tensors):
        output += embed                 # "output" absent: GroupLayers' token_embd stands for it
    a = model.attention_layers[0]
    experts = any(t.role.startswith("expert_") for t in model.tensors)
    return ModelShape(arch, model.hidden_size, model.n_heads, a.n_kv_heads, a.k_dim, a.v_dim, model.vocab_size,
                      tuple(blocks), output, experts)


def kv_bytes_per_element(cache_type: str) -> float:
    """fs/ggml/ggml.go kvCacheBytesPerElement (v0.7.1 – v0.11.4): q8_0 1, q4_0 0.5, anything else (f16) 2. memory.go
    passes OLLAMA_KV_CACHE_TYPE only where flash attention is on (and the type supported); without it the plan's type
    is f16 already (Ollama._release_flash)."""
    return {"q8_0": 1.0, "q4_0": 0.5}.get(cache_type, 2.0)


def runner_split(model, weights, ctx: int, parallel: int, batch: int, free: list[int], arch: str,
                 spread: bool = False, kv_bytes: float = 2.0, overhead: int = 0
                 ) -> tuple[list[int], Estimate, str] | None:
    """(GPUs given by index, the estimate, why) for a v0.7.1 – v0.11.4 release; None where not modelled (an
    architecture whose GraphSize case is not written here, a model with other than full attention). ``kv_bytes``:
    kvCacheBytesPerElement of the cache type; ``overhead``: OLLAMA_GPU_OVERHEAD, reserved on every GPU."""
    import re

    if any(a.kind != "full" for a in model.attention_layers) or not model.attention_layers \
            or len(model.attention_layers) != model.n_layers:
        return None
    shape = shape_of(model, weights, re.sub(r"[^a-z0-9]", "", arch.lower()))
    picked = pick_gpus(shape, free, ctx * parallel, min(ctx, batch), spread, kv_bytes, overhead)
    if picked is None:
        return None
    gpus, est = picked
    n = len(shape.blocks) + 1
    where = ("fits one GPU whole: that GPU alone (server/sched.go pickBestFullFitByLibrary)" if len(gpus) == 1 else
             "no single GPU holds every layer: every GPU" if not spread else "OLLAMA_SCHED_SPREAD: every GPU")
    why = (f"Ollama's own estimator (llm/memory.go EstimateGPULayers, v0.7.1–v0.11.4): {where}; {est.layers}/{n} "
           f"layers, split {','.join(map(str, est.counts))} (--tensor-split), graph {est.graph / 2**30:.2f} GiB a GPU, "
           f"KV {kv_bytes:g} B an element, {MINIMUM_MEMORY // MiB} MiB minimum"
           + (f" + OLLAMA_GPU_OVERHEAD {overhead / MiB:.0f} MiB" if overhead else "") + " a GPU")
    return gpus, est, why


def release_split(ollama, model, weights, s, gpus: list) -> tuple[list[int], Estimate, str] | None:
    """runner_split for an Ollama planner (runtimes/ollama.py) whose release is v0.7.1 – v0.11.4; None for others.
    The batch is num_batch (api/types.go DefaultOptions 512 where unset), the KV type the plan's, the overhead the
    planner's OLLAMA_GPU_OVERHEAD, as llm/memory.go reads them."""
    from .llamacpp_swa import loaded_arch
    from .versions import parse_version

    release = getattr(ollama, "version", None)
    arch = loaded_arch(model) or model.family
    if not modelled(parse_version("ollama", release).key if release else None) or s.ctx is None:
        return None
    return runner_split(model, weights, s.ctx, s.parallel, s.llamacpp.batch or DEFAULT_NUM_BATCH,
                        [g.capacity for g in gpus], arch, ollama.sched_spread, kv_bytes_per_element(s.cache_type_k),
                        ollama.gpu_overhead)


def held_floor(ollama, model, weights, s, batch: int, flash: str, targets: list) -> tuple[list[int], list] | None:
    """Where the estimator places the layers (a fixed -ngl / --tensor-split, planned as Ollama.allocate plans it):
    each device's LlamaCpp.floor (a lower bound of its bytes) and the devices, GPUs in order then the host; None where
    the estimator does not place them (llama-server's --fit does, and its own bound applies)."""
    gpus = [t for t in targets if t.kind != "cpu"]
    if len(gpus) < 2 or (split := release_split(ollama, model, weights, s, gpus)) is None:
        return None
    held = ollama._llama_settings(s, batch, split[1].layers, 0, flash).with_(
        tensor_split=tuple(float(c) for c in split[1].counts))
    return ollama._llama.floor(model, weights, held, targets), gpus + [t for t in targets if t.kind == "cpu"][:1]


UNSCORED = ("Ollama v0.7.1–v0.11.4's own estimator, ported from llm/memory.go; not yet checked against a logged "
            "two-GPU split (measurements/ollama_estimate/records.md: 0 records)")


def estimator_words(est: Estimate, overhead: int) -> tuple[str, str, str]:
    """The plan's assumptions where the estimator placed the layers (one source with runner_split's step): the
    placement, OLLAMA_GPU_OVERHEAD's part in it, and that no record has scored the port."""
    return (f"GPU layers by Ollama's own estimator (llm/memory.go EstimateGPULayers): --n-gpu-layers {est.layers}, "
            f"--tensor-split {','.join(map(str, est.counts))} ({MINIMUM_MEMORY // MiB} MiB minimum + the graph a GPU; "
            "passed to the runner as they are, llm/server.go NewLlamaServer)",
            f"OLLAMA_GPU_OVERHEAD ({overhead / MiB:.0f} MiB) is reserved on every GPU by the estimator in these "
            "releases (llm/memory.go: envconfig.GpuOverhead())", UNSCORED)


# api/types.go DefaultOptions: NumBatch 512 (v0.12.0 :835, v0.20.0 :1075). server/sched.go automaticGenerationBatch
# (the batch by context and free memory) came with 9db4bdbad "runner: Remove CGO engines, use llama-server
# exclusively", first tagged v0.30.0-rc32 / v0.30.0; before it num_batch unset is 512.
DEFAULT_NUM_BATCH = 512
AUTOMATIC_BATCH_FROM = (0, 30, 0)
BATCH_BEFORE_V030 = "unset: Ollama's default 512 (automaticGenerationBatch only from v0.30.0)"


def release_batch(release: str | None) -> int | None:
    """num_batch where unset for ``ollama==release``: 512 before v0.30.0; None (automaticGenerationBatch) from it
    and for the current release."""
    from .versions import parse_version

    if not release or parse_version("ollama", release).key[:3] >= AUTOMATIC_BATCH_FROM:
        return None
    return DEFAULT_NUM_BATCH


__all__ = ["BATCH_BEFORE_V030", "UNSCORED", "Estimate", "ModelShape", "estimate_gpu_layers", "estimator_words",
           "graph_sizes", "held_floor", "kv_bytes_per_element", "modelled", "pick_gpus", "release_batch", "release_split",
           "runner_split", "shape_of"]
