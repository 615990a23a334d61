"""The speed plan in words: the figures a Plan carries and the --explain steps (label, formula, value, source).

Kept apart from speed.py, which computes the SpeedPlan; everything here reads one and only formats it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memo import per_model
from .backend_speed import expert_tile_words, fits_parent, moe_range_words, pre_volta_decode_variant
from .build_era import (
    CURRENT_PREFILL_ARCHS,
    CURRENT_PREFILL_ENTRIES,
    FA_KV_FACTOR,
    HISTORY_SUFFIX,
    arch_key,
    era_words,
    prefill_entry,
)
from .fa_off_prefill import explain_words as fa_off_words
from .fa_prefill import SOURCE as FA_SOURCE
from .host_link import pageable_range_words
from .metal_kv import APPLIED as METAL_KV_APPLIED
from .metal_kv import SOURCE as METAL_KV_SOURCE
from .metal_kv import explain_words as metal_kv_words
from .nvidia_peak import MMA_SYNC_SOURCE, factor_words
from .soc_prompt import soc_cuda_words
from .speed import (
    APPLE_CORE_TFLOPS,
    CPU,
    CPU_CORES,
    CPU_FLOPS_PER_CORE,
    CPU_PRIOR_WORDS,
    FIT,
    HOST_REPACKED_GEMM_GFLOPS,
    POWER_KNEE_FLOOR,
    POWER_KNEE_W_PER_TOPS,
    SPLIT_OVERHEAD_MS,
    TP_ALLREDUCE_US,
    TP_EFFICIENCY,
    GPUPlace,
    SpeedPlan,
    apple_generation,
    backend_variant,
    host_link_gbs,
    published_peak,
    speed_plan,
)
from .token_work import active_matmul_params, is_float_quant, read_fraction, read_groups, rest_read_fraction
from .ubatch_speed import STREAM_K_LAUNCH_US

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec


def allocation_speed(model: ModelSpec, quant: str | None, alloc, targets: list, default_ram_gbs: float):
    """Decode and prefill tokens/s for a runtime's allocation, and its --explain steps (label, formula, value,
    source). Each token reads the weights it uses and the KV so far from the device holding them; devices in a
    layer split or offload add their times, a tensor-parallel group reads at once. Decode is given at half the
    context (the average over a generation that fills it), prefill for the request's prompt (--prompt-tokens, 512
    by default: llama-bench's pp512) with the time to its first token."""
    plan = speed_plan(model, quant, alloc, targets, default_ram_gbs)
    speed = speed_figures(plan)
    steps = speed_steps(plan, speed, placed_words(model, alloc))
    at = next((i for i, st in enumerate(steps) if st[0] == "prefill speed"), None)
    if at is not None:          # the FLOPs per token the prefill step divides, from the model's own counts
        steps.insert(at, matmul_flops_step(model))
    at = next((i for i, st in enumerate(steps) if st[0] == "decode speed"), None)
    if at is not None:          # the share of the weights' bytes the decode step's GB are
        steps.insert(at, read_bytes_step(model, quant))
    return speed, steps + metal_kv_steps(model, plan, alloc)


@per_model
def matmul_flops_step(model: ModelSpec) -> tuple[str, str, str, str]:
    """The prefill's matmul FLOPs per token, 2 × the weights a token multiplies (token_work.active_matmul_params),
    with the inputs to redo it: the parameters less the input embedding (a row a token, not a matmul) and the rest
    left out (1-D norms and biases; the routed experts a token does not reach; towers). Kept per model: each plan of a
    search explains its speed, and model.params sums every tensor (~2 ms a GLM-4.5-size MoE, twice a plan)."""
    matmul = active_matmul_params(model)
    embed = sum(t.numel for t in model.tensors if t.role == "embed") if not model.tie_word_embeddings else 0
    other = model.params - embed - matmul
    rest = f" − {other:,} others (1-D norms and biases, experts not routed to, towers)" if other > 0 else ""
    return ("prefill FLOPs (matmuls)", f"2 × ({model.params:,} params − {embed:,} input embedding (a row a token)"
            f"{rest}) = 2 × {matmul:,}", f"{2 * matmul / 1e9:.2f} GFLOP/token",
            "hardware/token_work.py active_matmul_params: 2 FLOPs a weight multiplied")


def read_bytes_step(model: ModelSpec, quant: str | None) -> tuple[str, str, str, str]:
    """The bytes one decoded token reads, by kind of weight at each tensor's ggml type (token_work.read_groups), and the
    share of the weights' bytes that is (read_fraction); by elements where no type is known (review22 #10)."""
    groups = read_groups(model, quant)
    rest = rest_read_fraction(model, quant)
    applied = (f"; the decode step's GB: each device's weights, less the input embedding, × {rest:.2%}")
    if groups is None:
        return ("bytes read per token", f"no ggml types known for {quant or 'these weights'}: the share of the tensors' "
                f"elements a token reads (routed experts {model.n_experts_active or 0}/{model.n_experts or 0}, the input "
                f"embedding a row), the mix taken as uniform{applied}", f"{read_fraction(model, quant):.2%} of the weights",
                "hardware/token_work.py read_fraction")
    terms = []
    for g in groups:
        if g.label == "input embedding" and not g.share:
            terms.append(f"{g.label} ({g.types}) {g.stored / 1e9:.2f} GB: one row a token, held apart")
        elif g.share < 1.0:
            terms.append(f"{g.label} ({g.types}) {g.stored / 1e9:.2f} GB × {g.share:.4g} = {g.read / 1e9:.3f} GB")
        else:
            terms.append(f"{g.label} ({g.types}) {g.read / 1e9:.3f} GB, read whole")
    read, stored = sum(g.read for g in groups), sum(g.stored for g in groups)
    share = (f" (routed experts: {model.n_experts_active}/{model.n_experts} a token)" if model.n_experts else "")
    return ("bytes read per token", " + ".join(terms) + f" = {read / 1e9:.3f} GB of {stored / 1e9:.2f} GB{share}{applied}",
            f"{read / 1e9:.2f} GB a token ({read / stored:.2%} of the weights' bytes)" if stored else "0 GB",
            "hardware/token_work.py read_groups: each tensor's bytes at its ggml type (the file's, or llama-quantize's "
            "under the quant: quant/gguf_mix.py) × the share a token reads")


def placed_words(model: ModelSpec, alloc) -> dict[int, str]:
    """A llama.cpp launch's layers by device (runtimes/llamacpp_placed: -ngl, -ts, --n-cpu-moe, -ot as --fit left
    them), keyed by the device's index in the allocation: the decode formula names each term's device by them
    (review19 #8). Other engines: none (a tensor-parallel group runs every layer; Ollama places by its own rules)."""
    from ..runtimes.llamacpp_placed import placed_layers
    from ..runtimes.registry import engine

    s = alloc.settings
    if not engine(s.runtime).gpu_layers_flag or s.tp > 1:     # -ngl / -ts on its command line: llama-server's rule
        return {}
    gpus = [i for i, d in enumerate(alloc.devices) if d.kind != "cpu"]
    from ..runtimes.base import Target

    placed = placed_layers(model.n_layers, model.n_experts, s,
                           [Target(alloc.devices[i].name, "gpu", alloc.devices[i].capacity) for i in gpus])
    out = {i: f"GPU {k}: {placed.words(k)}" for k, i in enumerate(gpus)}
    host = next((i for i, d in enumerate(alloc.devices) if d.kind == "cpu"), None)
    if host is not None:
        out[host] = f"CPU: {placed.words(None)}"
    return out


def metal_kv_steps(model: ModelSpec, p: SpeedPlan, alloc) -> list[tuple[str, str, str, str]]:
    """A llama.cpp / Ollama plan on Metal with flash attention on: the KV read ggml-metal's FA vec kernel makes
    (hardware/metal_kv.py: a KV head's rows read once per query head sharing it, less what the GPU cache serves),
    with its inputs, beside the figure's fitted factor — the term is not applied (its held-out rounds had no records,
    backends3, or too few to judge, backends4)."""
    gpu = p.first_gpu
    part = next((q for q in p.parts if q.kv_bytes), None)
    if (METAL_KV_APPLIED or not p.decode or gpu is None or not gpu.ggml or gpu.backend != "metal" or part is None
            or alloc.settings.llamacpp.flash_attn == "off"):
        return []
    formula, value = metal_kv_words(model, p.ctx // 2, part.fit.kv_factor)
    return [("decode: Metal FA-vec KV read (not applied)", formula, value,
             f"hardware/metal_kv.py ({METAL_KV_SOURCE}; ABSORBED: evidence/speed_fit_metalkv.py)")]


def _unvalidated_prefill(p: SpeedPlan) -> str:
    """Why the prefill figure is unvalidated, or "" (the DGX Spark's soc/cuda share: hardware/soc_prompt.py)."""
    gpu = p.first_gpu
    dev = gpu.dev if gpu else None
    if gpu is None or dev is None or not soc_cuda_words(gpu.klass, dev.vendor):
        return ""
    return "the soc/cuda share's held-out round had one source, measured at -ub 2048"


def speed_figures(p: SpeedPlan) -> dict:
    return {"decode_tokens_per_s": round(p.decode, 1) if p.decode else None,
            "prefill_tokens_per_s": round(p.prefill, 1) if p.prefill else None,
            # what the figures assume: decode with the KV cache at half the context (the mean over a generation
            # that fills it); the same at a short context, one request; prefill of the request's prompt
            "decode_at_context": p.ctx // 2,
            "decode_short_tokens_per_s": round(p.decode_short, 1) if p.decode_short else None,
            "decode_short_context": p.short_ctx,
            "prefill_prompt_tokens": p.prompt,
            # the prompt at the prefill rate (SpeedPlan.ttft_s); None where prefill is not predicted
            "time_to_first_token_s": float(f"{p.ttft_s:.4g}") if p.ttft_s else None,   # a 1-token prompt: 1e-4 s
            # why there is no prefill figure, where the model declines one (hardware/backend_speed.py)
            **({"prefill_not_predicted": p.prefill_note} if p.prefill is None and p.prefill_note else {}),
            # a prefill figure from a share whose held-out round was too few to judge (review23b #1: said on the
            # speed line, not only in --explain)
            **({"prefill_unvalidated": why} if p.prefill and (why := _unvalidated_prefill(p)) else {}),
            # a MoE prompt with no validated figure: the range printed instead (backend_speed.MOE_PREFILL_RANGES)
            **({"prefill_range_tokens_per_s": [round(p.moe_range[0] * p.moe_range[1].low, 1),
                                               round(p.moe_range[0] * p.moe_range[1].high, 1)]}
               if p.prefill is None and p.moe_range else {}),
            # weights in RAM copied from mmap'd memory: the one measured pageable rate … the link's (host_link.py)
            **({"prefill_range_tokens_per_s": [round(p.link_range[0], 1), round(p.link_range[1], 1)]}
               if p.prefill is None and p.link_range else {})}


def _layers_words(q, share: bool = False) -> str:
    """A part's layers of fixed cost: its layers (``share``: its layer-equivalents, n_layers × its share of the
    weights' bytes, beside the layers placed), and the recurrent layers' extra kernels counted as layers."""
    count = f"{q.n_layers:.1f}" if share else f"{q.n_layers:.0f}"
    if not q.extra_layers:
        return f"{count} layer-eq." if share else f"{count} layers"
    return f"({count} + {q.extra_layers:.1f} for the recurrent kernels) layers"


def speed_steps(p: SpeedPlan, speed: dict, placed: dict[int, str] | None = None) -> list[tuple[str, str, str, str]]:
    """The --explain steps (label, formula, value, source) of a SpeedPlan and its figures. ``placed``: each device's
    layers as the launch placed them (placed_words), named before its term."""
    shown = [q for q in p.parts if q.weight_bytes or q.kv_bytes]
    placed = placed or {}
    steps = []
    if p.decode:
        several = len(shown) > 1
        terms = " + ".join(
            (f"[{placed[q.device]}] " if several and q.device in placed else "")
            + f"({q.weight_bytes / 1e9:.2f} GB + {q.fit.kv_factor:g}×{q.kv_bytes / 1e9:.2f} GB KV) ÷ "
            f"({q.fit.decode_eff:g} × {q.bandwidth_gbs} GB/s"
            f"{f', the slowest rank, × {q.tp}×{TP_EFFICIENCY:g}' if q.tp > 1 else ''})"
            f" + {_layers_words(q, several)} × {q.fit.layer_us + (2 * TP_ALLREDUCE_US if q.tp > 1 else 0):g} µs"
            for q in shown)
        split = f" + {len(shown) - 1} × {SPLIT_OVERHEAD_MS:g} ms split" if several else ""
        if several and all(q.tp == 1 for q in shown):
            split += (f"; each µs term's count: {p.n_layers} layers × the device's share of the weights' bytes "
                      "(GB above), the fit's layer-equivalents")
        scores = (f" (flash attention off: {p.score_bytes / 1e9:.2f} GB of it the F32 scores and the query groups' K/V re-reads,"
                  " fa_off_decode.py)"
                  if p.score_bytes else "")
        steps.append(("decode speed", f"1 / ({terms}{split}), KV at ctx {p.ctx // 2:,}{scores}",
                      f"{speed['decode_tokens_per_s']} tokens/s",
                      f"hardware/speed.py (fit{_fit_key_words(p.first_gpu)}: benchmarks/speed_accuracy.py"
                      f"{_era_words(p.first_gpu, p.parts)})"
                      + (f"; {CPU_PRIOR_WORDS}" if any(q.fit is CPU for q in shown) else "")))
        if p.state_traffic:     # inside the GB above: a recurrent layer reads and writes its whole state every token
            steps.append(("decode: recurrent state", p.state_words, f"{p.state_traffic / 1e6:.1f} MB/token",
                          "llama.cpp's recurrent graphs (delta-net-base.cpp, graph-context-mamba.cpp): the passes "
                          "counted in hardware/recurrent_speed.py" if p.first_gpu is None or p.first_gpu.ggml else
                          "vLLM's fla / mamba kernels (fused_recurrent_gated_delta_rule, selective_state_update) read "
                          "and write the state once: hardware/recurrent_speed.py"))
    # the recurrent layers' extra kernels (decode) and token-by-token scan (prefill), where the figures include them
    steps += [(label, words, value, "hardware/recurrent_speed.py") for label, words, value in p.recurrent_notes
              if (p.decode if label.startswith("decode") else p.prefill)]
    figure = p.prefill or (p.link_range[0] if p.link_range else None)
    if figure:
        gpu = p.first_gpu
        dev = gpu.dev if gpu else None
        tp = max((q.tp for q in p.parts), default=1)    # tensor parallel: every rank computes 1/tp of each layer
        how = (f"{p.eff:g} × {_peak_words(p)}{f' × {tp}×{TP_EFFICIENCY:g}' if tp > 1 else ''}" if gpu
               else f"{CPU_CORES} cores × {CPU_FLOPS_PER_CORE / 1e9:g} GFLOPS")
        link = (f" at {host_link_gbs(dev.pcie if dev else None, p.pageable):.1f} GB/s"
                f"{' (pageable: mmap; measured on one server only)' if p.pageable else ''}")
        pcie = (f" + {p.cpu_weights / 1e9:.1f} GB over PCIe per {p.ubatch}-token batch{link}"
                if gpu and p.cpu_weights else "")
        gpu_flops = p.flops - p.host_flops
        host = (f" + {p.host_flops / 1e9:.1f} GFLOP/token on the CPU (--no-host: matmuls on repacked weights, not "
                f"offloaded) ÷ {HOST_REPACKED_GEMM_GFLOPS:g} GFLOPS (the host CPU's rate, fitted on one machine: "
                "16 threads, AVX2 build)" if p.host_flops else "")
        fixed = (f" + {p.n_layers} layers × {p.layer_us:g} µs (fixed per layer per token, fitted)"
                 if gpu and p.layer_us else "")
        tiles = (f" (routed experts' FLOPs × {p.expert_factor:.2f}: "
                 f"{expert_tile_words(gpu.backend if gpu else None)})" if p.expert_factor > 1.0 else "")
        micro = _fa_words(p) + _ubatch_words(p)
        borrowed = ("; llama.cpp's achieved rate on this card, borrowed: no prefill measurement of this runtime"
                    if gpu and not gpu.ggml else "")
        steps.append(("prefill speed",
                      f"{p.prompt}-token prompt: {gpu_flops / 1e9:.1f} GFLOP/token{tiles} ÷ ({how}){fixed}{pcie}{host}"
                      f"{micro}{borrowed}{_read_bound_words(p)}{p.kernel_path}",
                      f"{speed['prefill_tokens_per_s']} tokens/s" if p.prefill else
                      f"{figure:,.1f} tokens/s at the measured pageable rate (the range's low end)",
                      f"hardware/speed.py{_prefill_era_words(gpu)}{prefill_source_words(gpu, p.quant, p.eff)}"
                      f"{soc_cuda_words(gpu.klass, dev.vendor) if gpu and dev else ''}"))
    if p.link_range and p.first_gpu:
        dev = p.first_gpu.dev
        formula, value = pageable_range_words(*p.link_range, p.cpu_weights, p.ubatch, dev.pcie if dev else None)
        steps.append(("prefill range", formula, value, "hardware/host_link.py pageable_range (review22 #3)"))
    elif p.prefill_note and not p.prefill:
        over = bool(p.ctx and p.prompt > p.ctx)     # the prompt is longer than the plan's context (speed_plan)
        steps.append(("prefill speed", p.prefill_note, "not predicted",
                      "hardware/speed.py" if over else "hardware/backend_speed.py"))
        if p.moe_range and p.first_gpu:
            formula, value = moe_range_words(p.moe_range[1], p.moe_range[0], p.first_gpu.backend)
            steps.append(("prefill range", formula, value,
                          "hardware/backend_speed.MOE_PREFILL_RANGES (evidence/speed_fit_moe.py; rule "
                          "measurements/speed/held_out/moeprefill2_queries.md, moeprefill3_queries.md)"))
    steps.append(ttft_step(p))
    return steps


def _read_bound_words(p: SpeedPlan) -> str:
    """Where a prompt of a few tokens is held to reading the weights once a micro-batch (speed.weight_read_floor)."""
    if not p.read_bound:
        return ""
    reads = -(-p.prompt // max(1, p.ubatch))
    return (f"; held to {reads} read{'s' if reads != 1 else ''} of the GPU's weights (one a micro-batch of "
            f"≤ {p.ubatch} tokens: a prompt this short runs at about decode speed)")


def ttft_step(p: SpeedPlan) -> tuple[str, str, str, str]:
    """The time to the first token of the plan's prompt, or why there is none."""
    if not p.ttft_s and p.link_range:
        low, high = p.link_range
        return ("time to first token", f"{p.prompt:,} prompt tokens ÷ {low:,.1f} … {high:,.1f} tokens/s (the prefill "
                "range: the copy of the weights in RAM at the one measured pageable rate … at the link's)",
                f"{p.prompt / high:,.3g}–{p.prompt / low:,.3g} s (range)", "hardware/host_link.py pageable_range")
    if not p.ttft_s:
        return ("time to first token", f"{p.prompt:,}-token prompt: no prefill speed predicted", "not predicted",
                "hardware/speed.py")
    return ("time to first token",
            f"{p.prompt:,} prompt token{'s' if p.prompt != 1 else ''} ÷ {p.prefill:,.1f} tokens/s prefill"
            f" (the prefill FLOPs above price each "
            f"token's attention over the prompt before it: mean depth {p.prompt / 2:,.0f}; the last micro-batch's "
            "logits give the first token)",
            f"{p.ttft_s:,.3g} s", "hardware/speed.py SpeedPlan.ttft_s")


def _era_words(gpu: GPUPlace | None, parts=()) -> str:
    """"; fitted on llama.cpp b6341-era+ on CUDA …" when the first GPU's constants are an entry fitted on current
    builds alone (hardware/build_era.py), so the figure says which builds it describes; where only the KV read is
    flash attention's (speed.flash_attention_fit: an entry fitted on older builds), that alone."""
    key = f"{gpu.klass}/{gpu.backend}" if gpu else ""
    words = era_words(key) if key in FIT else ""
    if words:
        return f"; fitted on {words}, KV read once a token (flash attention)"
    if gpu and parts and parts[0].fit.kv_factor == FA_KV_FACTOR and parts[0].kv_bytes:
        return ("; KV read once a token (flash attention, derived: build_era.py) — the rest of this entry fitted on "
                "older builds")
    return ""


def _prefill_era_words(gpu: GPUPlace | None) -> str:
    """Which builds the prompt rate's efficiency describes, where its entry is fitted on current builds alone."""
    key = f"{gpu.klass}/{gpu.backend}" if gpu else ""
    if not gpu or not era_words(key) or key not in FIT or key not in CURRENT_PREFILL_ENTRIES:
        return ""       # Vulkan: prompt constants fitted on every era's records (build_era.py)
    cc = gpu.dev.compute_capability if gpu.dev else None
    if cc and arch_key(key, cc) in FIT:
        return (f" (efficiency of compute capability {cc}'s own current-build prompt records, {arch_key(key, cc)}; "
                f"the rest {era_words(key)})")
    if prefill_entry(key, cc, FIT) is not None:
        return (f" (efficiency of 2024 llama.cpp builds, {key}{HISTORY_SUFFIX}: fewer than two current-build prompt "
                f"records of compute capability {cc} with flash attention)")
    if cc not in CURRENT_PREFILL_ARCHS.get(key, ()):
        fitted = ", ".join(CURRENT_PREFILL_ARCHS.get(key, ()))
        return (f" (current builds' efficiency, fitted on compute capability {fitted}: no prompt record of {cc}, an "
                "architecture no 2024 build ran)")
    return f" (fitted on {era_words(key)})"


def prefill_source_words(gpu: GPUPlace | None, quant: str | None, eff: float | None) -> str:
    """Which fit entry the prompt efficiency ``eff`` is, and whether that entry fitted it on prompt records of its own
    or carries its parent's (benchmarks/speed_accuracy.py: an entry with fewer than two prompt records of one weight
    kind keeps its parent's efficiency: class/backend → class → all devices "*"). Empty where the efficiency is not
    the chain's (an architecture's or build era's entry: _prefill_era_words says which)."""
    if gpu is None or gpu.klass == "cpu" or eff is None:
        return ""
    variant = backend_variant(gpu.dev, gpu.backend, decode=False)
    wanted = [k for k in (f"{gpu.klass}/{gpu.backend}:{variant}" if variant else "", f"{gpu.klass}/{gpu.backend}",
                          gpu.klass, "*") if k]
    chain = [k for k in wanted if k in FIT]
    field = "prefill_eff_float" if is_float_quant(quant) else "prefill_eff_quant"
    if not chain or getattr(FIT[chain[0]], field) != eff:
        return ""
    source = chain[0]
    for parent in chain[1:]:    # an entry that inherited the efficiency holds its parent's value
        if getattr(FIT[parent], field) != eff:
            break
        source = parent
    kind = "float-weight" if is_float_quant(quant) else "quantized-weight"
    whose = "the all-device entry (*)" if source == "*" else f"the {source} entry"
    if source == wanted[0]:
        return f"; efficiency {eff:g}: fitted on {source}'s own {kind} prompt records"
    if wanted[0] in FIT:    # the entry exists (other constants of its own) but kept its parent's efficiency
        return (f"; efficiency {eff:g} borrowed from {whose}: {wanted[0]} has fewer than two {kind} prompt records "
                "of its own")
    # no entry of its own: a parent's rate, fitted on that parent's records (this backend's among them, if any)
    return f"; efficiency {eff:g}: {whose}'s rate, not one fitted on {wanted[0]}'s {kind} prompt records alone"


def _fa_words(p: SpeedPlan) -> str:
    """The prompt's attention where llama.cpp runs it as the CUDA MMA FlashAttention kernel (hardware/fa_prefill.py):
    its two products' FLOPs at the tensor rates they accumulate at, over the kernel's fitted share of them."""
    fa = p.fa_attention
    if p.fa_off is not None:
        return " + attention (flash attention off, the unfused graph): " + fa_off_words(p.fa_off)[0]
    if fa is None:
        return ""
    rate = f"{fa.peak_tflops:g} TFLOPS f16" + (f" × {fa.mma_share:g} (mma.sync's share on Hopper)"
                                                if fa.mma_share < 1.0 else "") \
        + (f" × {fa.clock:.3g} (power-limited clock)" if fa.clock < 1.0 else "")
    f16 = (f"{fa.kq_tflops:.1f} × {fa.f16_factor:.3g} (FP16 accumulate runs at {fa.f16_factor:.3g}× on this card) = "
           if fa.f16_factor != 1.0 else "")
    borrowed = (f"; borrowed for {fa.borrowed_by}, which has no prompt record at depth: its FlashAttention kernels "
                "are not llama.cpp's" if fa.borrowed_by else "")
    return (f" + attention (flash attention, llama.cpp's CUDA MMA kernel): ({fa.kq_flops / 1e9:.2f} GFLOP Q·Kᵀ ÷ "
            f"({rate} = {fa.kq_tflops:.1f}, F32 accumulate) + {fa.vkq_flops / 1e9:.2f} GFLOP softmax·V ÷ "
            f"({f16}{fa.vkq_tflops:.1f}, F16 accumulate)) ÷ {fa.eff:g} (the kernel's share, "
            f"fitted) = {fa.seconds_per_token * 1e6:.1f} µs/token ({FA_SOURCE}; hardware/fa_prefill.py{borrowed})")


def _ubatch_words(p: SpeedPlan) -> str:
    """The micro-batch term in the prefill formula (hardware/ubatch_speed.py): each micro-batch's MMQ launches that
    run stream-k (a fixed cost each) or tiled (idle SMs in the last wave), per token, against a 512 micro-batch's."""
    t = p.ubatch_term
    if t is None or t.ubatch == 512:     # the micro-batch the fit was measured at: no term
        return ""
    here, ref = t.at_ubatch, t.at_reference
    return (f" + micro-batch {t.ubatch} on {t.sm_count} SMs: {here.stream_k} stream-k MMQ launches × "
            f"{STREAM_K_LAUNCH_US:g} µs (+ {here.idle_flops / 1e9:.1f} GFLOP of idle SMs) ÷ {t.ubatch} tokens − "
            f"the same at 512 ({ref.stream_k} launches, {ref.idle_flops / 1e9:.1f} GFLOP idle) ÷ 512 = "
            f"{t.seconds_per_token * 1e6:+.1f} µs/token (llama.cpp mmq.cuh launch_mul_mat_q; the launch cost fitted: "
            "benchmarks/ubatch_fit.py)")


def _fit_key_words(gpu: GPUPlace | None) -> str:
    """" intel/sycl:xe-hpg" when the first GPU's constants are a variant's (an architecture or kernel path); for an
    NVIDIA card older than Volta, where its memory class's share comes from, or that it has none."""
    if gpu is None:
        return ""
    variant = backend_variant(gpu.dev, gpu.backend)
    key = f"{gpu.klass}/{gpu.backend}:{variant}" if variant else None
    if not variant or fits_parent(variant):
        return f" {key}" if key in FIT else ""
    own = pre_volta_decode_variant(gpu.dev.compute_capability, gpu.dev.memory_type, gpu.backend) if gpu.dev else None
    if key in FIT and own != variant:   # speed.PRE_VOLTA_SIBLING: a GP10x GDDR5 card takes the GDDR5X class's share
        return (f" {key} — no {own} entry: the GTX 1080 Ti's share of bandwidth, the same GP10x kernels (no CUDA graph "
                "replay before Volta / Ampere); checked out of sample on a P40 run (held_out/pascal_first_run.txt)")
    if key in FIT:      # backend_speed.pre_volta_decode_variant: one constant on the class's tuning rows
        return (f" {key}, its share of bandwidth fitted on this memory class's rows alone (measurements/speed/"
                "pascal_2026.jsonl; ggml-cuda replays no CUDA graph before Volta / Ampere)")
    return (f" {gpu.klass}/{gpu.backend} — no {variant} entry: the share of cards with tensor cores, which "
            "reads high on Pascal (held_out/pascal_first_run.txt: a P40 +64 %)")


def _peak_words(p: SpeedPlan) -> str:
    """How the prefill peak reads in --explain: the datasheet figure and the shares applied to it (Hopper's mma.sync,
    the F16 path and a power-limited clock: reachable_peak), or an Apple M3+ chip's cores × fitted rate."""
    gpu = p.first_gpu
    dev = gpu.dev if gpu else None
    if dev is None:
        return f"{p.peak:g} peak"
    if dev.fp16_tflops is None and dev.gpu_cores and p.peak:
        gen = apple_generation(dev)
        return (f"{dev.gpu_cores} GPU cores × {APPLE_CORE_TFLOPS[gen or '']:g} TFLOPS/core ({(gen or '').upper()} rate "
                f"fitted to measured llama-bench prefill; Apple publishes no TFLOPS for it)")
    base = published_peak(dev, p.quant)
    fp8 = "FP8" in (p.quant or "").upper() and base == dev.fp8_tflops      # Hopper/Ada: the same dense figure as int8
    unit = "fp8 TFLOPS" if fp8 else "int8 TOPS" if base == dev.int8_tops and not is_float_quant(p.quant) else "fp16 TFLOPS"
    if (p.quant or "").upper() == "F32" and base == dev.fp32_tflops:
        unit = "fp32 TFLOPS (CUDA cores × 2 × boost clock)"
    elif unit == "int8 TOPS" and dev.fp32_tflops and not dev.fp8_tflops:     # Pascal 6.1: no int8 tensor cores
        unit = f"int8 TOPS (the __dp4a rate: 4 × {dev.fp32_tflops:g} fp32 TFLOPS)"
    words = f"{base:g} {unit}"
    share = p.peak_shares.mma_sync
    if share < 1.0:
        words += (f" × {share:g} (llama.cpp's MMQ issues mma.sync, which reaches {share:.0%} of the datasheet on Hopper: "
                  f"{MMA_SYNC_SOURCE})")
    return words + "".join(factor_words(dev, p.peak_shares, POWER_KNEE_W_PER_TOPS, POWER_KNEE_FLOOR))
