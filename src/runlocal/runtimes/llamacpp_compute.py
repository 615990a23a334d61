"""llama.cpp's compute buffers: the ggml graph traced and placed as ggml-alloc places it (runtimes/ggml/), kept per
model and arguments, or the fitted phase sizes where the graph is not simulated; and the graph inputs the host
holds. Pure computation (no I/O)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

from ..kv import normalize_cache_type
from ..memo import IdMemo
from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import Step
from .ggml_scope import DELTA_NET_ARCHS, PIPELINE_COPIES, n_cpu_moe_overrides, supported
from .llamacpp_layout import Budget, Pools, buffer_device, largest_cpu_matmul, pad, sizer

MIB = 1 << 20


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
    total = 0
    for v in _v_widths(model):
        total += ubatch * 8 + ubatch * 8 * (1 if flash_attn or v == 0 else v)
    return total


def _v_widths(model: ModelSpec) -> tuple[int, ...]:
    """The widest V row (n_embd_v_gqa) of each KV cache (SWA, non-SWA), kept per model: every plan asks."""
    def now() -> tuple[int, ...]:
        widths: dict[str, int] = {}
        for a in model.attention_layers:
            key = "swa" if a.kind == "sliding" else "full"
            v = 0 if a.kind == "mla" else a.n_kv_heads * a.v_dim
            widths[key] = max(widths.get(key, 0), v)
        return tuple(widths.values())
    return _V_WIDTHS.get(model, None, now)



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
    if widest:
        return widest
    return 3 * (model.intermediate_size or 4 * h)


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
# measurements/llamacpp and on catalog models (tests/test_graph_prefix.py). Not so for MLA and hybrid-recurrent
# graphs, where holes left by earlier layers shift it.
PREFIX_EXACT = frozenset({"llama", "qwen3", "qwen3moe", "phi3", "gemma2", "gemma3", "gpt-oss"})


def graph_prefix(model: ModelSpec) -> ModelSpec:
    """graph_prefix_now, once per model object (the same object then keys the simulation's cache)."""
    return _PREFIXES.get(model, None, lambda: graph_prefix_now(model))


def graph_prefix_now(model: ModelSpec) -> ModelSpec:
    """The layers of ``model`` its compute buffer needs traced: two past the first layer of each kind, its last
    layers of the same kinds as the model's last ones (the output phase follows them), for the PREFIX_EXACT
    architectures; else all.
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
                      overrides: tuple[tuple[str, int | None], ...] = (),
                      n_outputs_max: int | None = None, kq_mask_f32: bool = False,
                      no_host: bool = False, gdn: str = "fused") -> tuple[tuple[int, ...], int]:
    """simulate_now, kept per model object and arguments: --fit, the searches and the fixes ask again."""
    args = (n_gpu_layers, n_ubatch, n_kv, flash_attn, n_seqs, n_stream, type_k, type_v, n_kv_swa, layer_gpus, n_gpus,
            overrides, n_outputs_max, kq_mask_f32, no_host, gdn)
    return _SIMULATED.get(model, args, lambda: _stored_or_simulated(model, args))


def _stored_or_simulated(model: ModelSpec, args: tuple) -> tuple[tuple[int, ...], int]:
    """The shipped table's answer for a catalog model (runtimes/compute_table.py: keyed by this code's digest, the
    spec's and the arguments, so a hit is what simulate_now returns), else simulate_now."""
    from .compute_table import lookup

    hit = lookup(model, args)
    return hit if hit is not None else simulate_now(model, *args)


def simulate_now(model: ModelSpec, n_gpu_layers: int | None, n_ubatch: int, n_kv: int, flash_attn: bool,
                 n_seqs: int, n_stream: int, type_k: str, type_v: str, n_kv_swa: int | None,
                 layer_gpus: tuple[int | None, ...] | None = None, n_gpus: int = 1,
                 overrides: tuple[tuple[str, int | None], ...] = (),
                 n_outputs_max: int | None = None, kq_mask_f32: bool = False,
                 no_host: bool = False, gdn: str = "fused") -> tuple[tuple[int, ...], int]:
    """((each GPU's), host) compute buffer bytes from the ggml-alloc simulation (runtimes/ggml/): the CUDA
    build with n_gpu_layers of the n_layer + 1 slots on one GPU (0: none, the GPU still runs the big matmuls), or
    the layers spread over n_gpus GPUs as ``layer_gpus`` says (src/llama-model.cpp: the ``where`` of
    LlamaCpp.buffers), with tensor overrides (regex, device; None the host) in llama.cpp's order; or ((), CPU)
    for a CPU-only run (n_gpu_layers None); kq_mask_f32 for a build before PR #23764; no_host for llama-server
    --no-host (the CPU keeps the weights it repacks and runs their matmuls: ggml/repack.py); gdn for a build before
    b8301 (unfused delta nets: ggml/delta_net_unfused.py). Cached: --fit and the solvers plan many times."""
    from . import ggml

    kw: dict[str, Any] = dict(n_seqs=n_seqs, n_stream=n_stream, type_k=type_k, type_v=type_v, n_kv_swa=n_kv_swa,
                              n_outputs_max=n_outputs_max, kq_mask_f32=kq_mask_f32, gdn=gdn)
    if n_gpu_layers is None and layer_gpus is None:
        return (), ggml.simulate_compute(model, n_ubatch, n_kv, flash_attn, **kw)
    from .ggml import affine

    def cuda(cells: Any) -> dict[str, int]:
        # a sliding-window cache as long as the context (a short one) is the same symbol
        swa = cells if n_kv_swa is not None and n_kv_swa == n_kv else n_kv_swa
        return ggml.simulate_compute_cuda(model, n_ubatch, cells, flash_attn, n_gpu_layers=n_gpu_layers or 0,
                                          layer_gpus=list(layer_gpus) if layer_gpus is not None else None,
                                          n_gpus=n_gpus, overrides=overrides, no_host=no_host,
                                          **{**kw, "n_kv_swa": swa})

    # the graphs are built once per shape with n_kv as a symbol, and scheduled once per placement; the walk runs per
    # context, or not at all inside a piece (runtimes/ggml/affine.py). The shape: every argument the graphs are built
    # from (all of kw, so an argument added there is in it) but n_kv
    swa_mode = "same" if n_kv_swa is not None and n_kv_swa == n_kv else n_kv_swa
    shape = (n_ubatch, flash_attn, tuple(sorted({**kw, "n_kv_swa": swa_mode}.items())))
    placement = (n_gpu_layers, layer_gpus, n_gpus, overrides, no_host)
    out = (affine.SHAPES.run(model, shape, placement, n_kv, cuda, getattr(_hint, "many", False)) if CONTEXT_SHAPES
           else cuda(n_kv))
    return tuple(out[f"CUDA{k} compute"] for k in range(n_gpus)), out["CUDA_Host compute"]


def compute_phases(model: ModelSpec, ubatch: int, n_kv: int, flash_attn: bool,
                   n_kv_swa: int | None = None, fa_copies: int = 0, n_outputs: int | None = None) -> dict[str, int]:
    """Peak bytes of ggml's compute graph in its three heaviest phases; the buffer is their max.

    Fitted to llama.cpp's logged "compute buffer size" over architectures, contexts, ubatch sizes
    and flash attention (measurements/llamacpp): the output phase holds the f32 logits of a
    ubatch; the FFN phase the gate/up/act intermediates; the attention phase (without flash
    attention) the f32 KQ scores of every head over n_kv cells. The KQ masks (f16 with flash
    attention, f32 without; a second one over the SWA cells for sliding-window models) stay live
    through the layers. The FFN width is the routed experts' for MoE layers (ffn_width).
    Not modelled (benchmarks/accuracy.py shows the misses): tensors that the allocator leaves below
    the logits in MLA, Mamba-2 and MoE graphs, and the K/V copies of a partial offload's CPU layers.
    ``n_outputs``: the prompt graph's rows of logits where the context caps them (llama-server since PR #23861;
    None: every ubatch token).
    """
    f32 = 4
    mask = kq_masks(ubatch, n_kv, n_kv_swa, flash_attn)
    n_ff = ffn_width(model)
    kv_width = max((a.n_kv_heads * a.k_dim for a in model.attention_layers), default=model.hidden_size)
    output = f32 * ((n_outputs or ubatch) * model.vocab_size + ubatch * 2 * model.hidden_size)
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



CONTEXT_SHAPES = True     # False: every context built and scheduled anew (the reference tests compare against)
_hint = threading.local()


class many_contexts:
    """Plans about to be made at many contexts of one launch (the page's memory curve): each graph shape is built
    with the context as a symbol from the first of them (runtimes/ggml/affine.py; else from the second)."""

    def __enter__(self) -> None:
        self.saved = getattr(_hint, "many", False)
        _hint.many = True

    def __exit__(self, *exc: object) -> None:
        _hint.many = self.saved

_PREFIXES = IdMemo(256)
_WIDTHS = IdMemo(256)
_V_WIDTHS = IdMemo(256)
_SIMULATED = IdMemo(2048)


# --- the compute and output buffers of one launch ----------------------------------------------------------------

@dataclass(frozen=True)
class ComputeSizing:
    """How the compute buffers were sized, for the explain step: the cells attended, the phase sizes (the fitted
    estimate), whether the graph was simulated, and the pipeline-parallelism note if any."""

    n_kv: int
    phases: dict[str, int]
    simulated: bool
    pipeline: Step | None
    n_outputs_max: int | None = None      # llama-server's output cap where it applies
    kq_mask_f32: bool = False             # a build before PR #23764: f32 mask inputs
    gdn: str = "fused"                    # a build before b8301: unfused delta nets (versions.llamacpp_gdn)


def size_compute(model: ModelSpec, weights: WeightEstimate, b: Budget, p: Pools, simulate_graph: bool,
                 gpu_kinds: tuple[str, ...], n_outputs_max: int | None = None,
                 kq_mask_f32: bool = False, gdn: str = "fused") -> ComputeSizing:
    """Each device's compute buffer and the host's output buffer, set on ``p``'s devices: the fitted phases first
    (kept where the graph is not simulated), then the traced graph where runtimes/ggml models it.
    ``n_outputs_max``: llama-server's output cap (LlamaCpp.n_outputs_max; None: the C API's n_batch).
    ``kq_mask_f32``: a build before PR #23764, whose KQ mask inputs are f32 (cast to f16 under flash attention);
    ``gdn``: the delta-net graph of a build before b8301."""
    s, c, fa = b.settings, b.context, b.flash_attn
    n_kv = c.n_ctx_seq if c.n_stream > 1 else c.n_ctx
    # ggml-cuda (NVIDIA, and AMD through HIP) sizes a flash-attention result with f16 copies of a quantized cache
    cells_all = c.n_ctx_seq * c.n_stream
    copies = (fa_f16_copies(model, cells_all, (p.n_swa_cells * c.n_stream) if p.n_swa_cells else None,
                            s.cache_type_k, s.cache_type_v)
              if fa and b.backend.ggml_cuda and any(k == "gpu" for k in gpu_kinds) else 0)
    # the prompt graph's rows of logits: min(n_ubatch, n_outputs_max) (runtimes/ggml/arch.py pp_outputs)
    phases = compute_phases(model, c.n_ubatch, n_kv, fa, p.n_swa_cells or None, copies,
                            None if n_outputs_max is None else max(1, min(c.n_ubatch, n_outputs_max)))
    _estimate_fitted(model, weights, b, p, phases, n_kv, kq_mask_f32)
    # The graph itself, traced and placed as ggml-alloc places it, where it is modelled: a built
    # architecture, CPU-only or CUDA GPUs (any -ngl, --split-mode layer over several GPUs with pipeline
    # parallelism, tensor overrides -ot / --n-cpu-moe). A checkpoint or catalog model is traced as the GGUF
    # llama-quantize would write of it (names, types: quant/gguf_mix.py).
    # (imported here: the GGUF view is only needed once a llama.cpp plan is made, not on other runtimes' paths; the
    # graph package runtimes/ggml/ only where the compute table does not answer: simulate_now)
    from ..quant.gguf_mix import gguf_view

    graph_model = model if weights.from_file else (gguf_view(model, weights.quant) if simulate_graph else None)
    simulated = (simulate_graph and graph_model is not None and supported(graph_model)
                 and all(d.kind == "gpu" for d in p.devs))
    if graph_model is None or graph_model.family not in DELTA_NET_ARCHS:
        gdn = "fused"           # (no delta net: the same graph, and the same simulation cache entries)
    # src/llama-context.cpp: pipeline parallelism with several GPUs, every layer offloaded, no tensor
    # overrides (--n-cpu-moe is one: common/arg.cpp adds it to tensor_buft_overrides)
    pipeline = len(p.devs) > 1 and b.ngl > model.n_layers and not s.llamacpp.override_tensor and not s.llamacpp.n_cpu_moe
    note = None
    if simulated:
        assert graph_model is not None
        gdn = _simulate_compute(model, graph_model, b, p, n_kv, n_outputs_max, kq_mask_f32, gdn)
        if pipeline:
            note = Step("pipeline parallelism", f"{len(p.devs)} GPUs, all layers: the scheduler keeps "
                        f"{PIPELINE_COPIES} copies of each split's inputs and of the graph inputs, "
                        "never freed (in the simulated compute buffers)", f"{PIPELINE_COPIES} copies",
                        "src/llama-context.cpp, ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph")
    elif len({w for w in b.where if w is not None}) > 1 and pipeline:
        note = _pipeline_estimate(model, b, p, n_kv, PIPELINE_COPIES)
    # output buffer: n_vocab f32 logits for each of n_seq_max outputs (src/llama-context.cpp output_reserve)
    p.host.output = model.vocab_size * 4 * b.n_seq
    return ComputeSizing(n_kv, phases, simulated, note, n_outputs_max, kq_mask_f32, gdn)


def _estimate_fitted(model: ModelSpec, weights: WeightEstimate, b: Budget, p: Pools, phases: dict[str, int],
                     n_kv: int, kq_mask_f32: bool = False) -> None:
    """The fitted estimate of each compute buffer (measurements/llamacpp)."""
    c, fa, devs, host = b.context, b.flash_attn, p.devs, p.host
    # the host holds the mask inputs: f32 in builds before PR #23764 whatever flash attention does
    masks = kq_masks(c.n_ubatch, n_kv, p.n_swa_cells or None, fa and not kq_mask_f32)
    row = model.hidden_size * c.n_ubatch * 4          # one f32 activation row set of the ubatch
    out_dev = b.where[model.n_layers]
    if not devs:
        host.compute = max(phases.values())
        return
    used = {w for w in b.where if w is not None}
    # host: the embeddings and their copy to the GPU, and the graph inputs built on the CPU
    # (KQ masks, the KV store's row indices)
    host.compute = host_compute(model, c.n_ubatch) + masks + kv_store_indices(model, c.n_ubatch, fa)
    if not used:
        # -ngl 0 on a GPU machine: the whole graph is reserved on the GPU (op offload) and the
        # weights of the offloaded matmuls are copied into its buffer; the host keeps the inputs.
        devs[0].compute = max(phases.values()) + largest_cpu_matmul(model, sizer(model, weights))
        return
    # The input layer (token embedding) stays on the CPU: its get_rows output lives in the host's
    # compute buffer, so each GPU's graph holds one n_embd row set fewer than a CPU-only graph.
    # The CPU layers of a partial offload run their matmuls on the GPU too (ggml-backend offloads
    # ops whose weights are in host memory for batches ≥ 32), which adds nothing to the peak.
    layer_part = max(v for k, v in phases.items() if k != "output") - row
    for i, d in enumerate(devs):
        if i in used:
            d.compute = max(layer_part, phases["output"] - row) if i == out_dev else layer_part
        if i in p.host_weights_of:
            # a GPU layer whose weights stay in host memory (-ot …=CPU, --n-cpu-moe): ggml-backend's
            # scheduler copies each such weight into the GPU's compute buffer to run the matmul there
            # (op offload, batches ≥ 32), one at a time beside the FFN's working set. An estimate:
            # benchmarks/accuracy.py scores it on public -ot logs.
            d.compute = max(d.compute, p.host_weights_of[i] + phases["ffn"] - row)


def _simulate_compute(model: ModelSpec, graph_model: ModelSpec, b: Budget, p: Pools, n_kv: int,
                      n_outputs_max: int | None, kq_mask_f32: bool = False, gdn: str = "fused") -> str:
    """The compute buffers from the traced graph (runtimes/ggml/), replacing the estimate; returns the delta-net graphs
    traced (an older build's mode resolved by its device check for this placement: ggml/gdn_probe.py)."""
    s, c, devs = b.settings, b.context, p.devs
    full = not devs or b.ngl > model.n_layers
    rules = (tuple((pat, buffer_device(buft)) for pat, buft in s.llamacpp.override_tensor)
             + n_cpu_moe_overrides(min(s.llamacpp.n_cpu_moe, model.n_layers)))
    kw = (c.n_ubatch, n_kv, b.flash_attn, b.n_seq, c.n_stream, normalize_cache_type(s.cache_type_k),
          normalize_cache_type(s.cache_type_v), p.n_swa_cells or None)
    if gdn in ("chunked", "probed"):
        from .ggml import gdn_probe
        from .ggml.arch import GraphParams

        on_host = not devs or any(w is None for w in b.where) or bool(rules)
        probe = GraphParams(n_kv=n_kv, flash_attn=b.flash_attn, n_stream=c.n_stream, type_k=kw[5], type_v=kw[6],
                            n_kv_swa=kw[7], kq_mask_f32=kq_mask_f32)
        gdn = gdn_probe.resolve(gdn, graph_model, probe, b.n_seq, b.where if devs and on_host else None, len(devs),
                                rules)
    if not devs or (len(devs) == 1 and not rules):
        # (CPU only: every weight is in host memory whatever the overrides say)
        # partial offload: which layers sit on the GPU depends on every layer, so the whole graph is traced
        gpu_c, host_c = simulated_compute(graph_prefix(graph_model) if full else graph_model,
                                          (-1 if b.ngl > model.n_layers else b.ngl) if devs else None, *kw,
                                          n_outputs_max=n_outputs_max, kq_mask_f32=kq_mask_f32,
                                          no_host=s.llamacpp.no_host and bool(devs) and not full, gdn=gdn)
    else:
        # several GPUs or tensor overrides: the layer at each device boundary and the overridden tensors
        # matter, so the whole graph is traced with each layer's device
        gpu_c, host_c = simulated_compute(graph_model, None, *kw, layer_gpus=b.where, n_gpus=len(devs),
                                          overrides=rules, n_outputs_max=n_outputs_max, kq_mask_f32=kq_mask_f32,
                                          no_host=s.llamacpp.no_host, gdn=gdn)
    for d, size in zip(devs, gpu_c):
        d.compute = size
    p.host.compute = host_c
    return gdn


def _pipeline_estimate(model: ModelSpec, b: Budget, p: Pools, n_kv: int, n_copies: int) -> Step:
    """Pipeline parallelism where the graph is not simulated (src/llama-context.cpp: several GPUs, every layer
    offloaded, --split-mode layer, no tensor overrides): the scheduler keeps GGML_SCHED_MAX_COPIES = 4 copies of
    every split input and graph input, flagged input+output so ggml-alloc never frees or reuses them
    (ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph, passes 5–6): three more of each GPU's inputs (the
    KQ masks, the KV store indices, positions and the incoming n_embd rows) and of the host's graph inputs."""
    c, fa = b.context, b.flash_attn
    extra = n_copies - 1
    row = model.hidden_size * c.n_ubatch * 4
    masks = kq_masks(c.n_ubatch, n_kv, p.n_swa_cells or None, fa)
    inputs = masks + kv_store_indices(model, c.n_ubatch, fa) + c.n_ubatch * 4
    used_gpus = sorted({w for w in b.where if w is not None})
    for i in used_gpus:
        p.devs[i].compute += extra * (inputs + row)
    p.host.compute += extra * (inputs + c.n_ubatch * 4)     # + the token ids
    return Step("pipeline parallelism", f"{len(used_gpus)} GPUs, all layers: {n_copies} copies of "
                f"each split's inputs (masks, KV indices, positions, {model.hidden_size}-wide rows)",
                f"+{extra * (inputs + row):,} B per GPU, +{extra * (inputs + c.n_ubatch * 4):,} B host",
                "ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph (n_copies); an estimate "
                "where the graph is not simulated")
