"""llama.cpp's --explain steps of one launch: how each buffer was sized (context cells, weights, KV, recurrent
state, compute, output), each with the llama.cpp source it follows. Moved out of llamacpp.py (LlamaCpp.explain)."""

from __future__ import annotations

from ..model.spec import ModelSpec
from ..quant.formats import WeightEstimate
from .base import PARALLEL_AUTO, Step
from .llamacpp_compute import ComputeSizing
from .llamacpp_kv_words import kv_cache_step, kv_inputs_step, recurrent_step, swa_cells_step
from .llamacpp_layout import AUTO_SLOTS, Budget, Pools
from .llamacpp_nohost import Repacked, no_host_step
from .llamacpp_placed import weights_step

# what an older build's delta nets are in the compute step (runtimes/versions.py llamacpp_gdn, ggml/gdn_probe.py)
GDN_WORDS = {"unfused": "the unfused delta nets (chunked prompt, one-token) of an older build (before b8233, or its "
                        "fused-op device check failed: a delta-net layer on the CPU)",
             "chunked": "the unfused chunked prompt delta net of an older build (before b8301, or its fused-op device "
                        "check failed: a delta-net layer on the CPU, op-offloaded prompt batches)",
             "ar-unfused": "the unfused one-token delta net of an older build (its fused-op device check failed)",
             "probed": "fused delta nets (their device check passes)"}



def buffer_steps(model: ModelSpec, weights: WeightEstimate, b: Budget, p: Pools, sizing: ComputeSizing | None,
                 repack: Repacked | None = None) -> list[Step]:
    """The steps that say how each buffer was sized (without the compute ones when ``sizing`` is None);
    ``repack``: --no-host's weights in CPU_REPACK (llamacpp_nohost.host_repack; the plan's
    Allocation.host_repacked, which the speed model reads)."""
    s, c, fa = b.settings, b.context, b.flash_attn
    steps: list[Step] = []
    if s.parallel == PARALLEL_AUTO:
        steps.append(Step("--parallel auto", f"not given: llama-server's default -np auto → {AUTO_SLOTS} slots "
                          "sharing one unified KV stream of -c = ctx cells (any one request may use all of it); "
                          "--parallel N plans N slots of ctx each", f"{AUTO_SLOTS} slots, unified KV",
                          "tools/server/server.cpp, common/arg.cpp"))
    cells_f = (f"unified: pad({'ctx' if b.k == 1 else 'ctx × parallel'}, 256)" if c.n_stream == 1
               else "pad(ctx, 256) per sequence")
    steps.append(Step("context cells", f"{cells_f} × {c.n_stream} stream{'s' if c.n_stream > 1 else ''}",
                      f"{c.n_ctx:,} ({c.n_ctx_seq:,} per sequence)", "src/llama-context.cpp"))
    steps.append(weights_step(model, weights, b.where, s, p.all))
    rec = sum(d.rs for d in p.all)
    if rec:
        steps.append(recurrent_step(model, b.n_seq, rec))
    steps += [st for st in (kv_inputs_step(model, s, b.mla_cache), swa_cells_step(model, c, s, p.n_swa_cells))
              if st is not None]
    steps.append(kv_cache_step(p, c, s))
    if not s.llamacpp.kv_offload:
        steps.append(Step("--no-kv-offload", "every KV cache and recurrent state in system RAM; attention then runs "
                          "on the CPU, compute buffers planned as with the cache offloaded (an upper bound on the GPU)",
                          f"{sum(d.kv for d in p.all):,} B in {p.host.name}", "src/llama-kv-cache.cpp "
                          "(!offload_kqv: CPU buffer type), src/llama-context.cpp graph_get_cb"))
    if s.llamacpp.no_host:
        steps.append(no_host_step(model, b, p, repack))
    if sizing is None:
        return steps
    if sizing.pipeline is not None:
        steps.append(sizing.pipeline)
    sizes = ", ".join(f"{d.name} {d.compute:,} B" for d in p.all if d.compute)
    outputs = (f", {min(c.n_ubatch, sizing.n_outputs_max)} rows of logits (llama-server's cap: n_parallel, "
               "PR #23861)"
               if sizing.n_outputs_max is not None else "")
    if fa and sizing.kq_mask_f32:
        outputs += ", f32 KQ mask inputs cast to f16 (a build before PR #23764)"
    if sizing.gdn != "fused" and sizing.simulated:
        outputs += ", " + GDN_WORDS.get(sizing.gdn, sizing.gdn)
    if sizing.simulated:
        steps.append(Step("compute buffer", f"ggml-alloc placement of the reserved {model.family} graph for n_ubatch "
                          f"{c.n_ubatch}, n_kv {sizing.n_kv:,}, flash attention {'on' if fa else 'off'}{outputs}", sizes,
                          "src/llama-context.cpp graph_reserve, ggml/src/ggml-alloc.c (runtimes/ggml_graph.py; "
                          "benchmarks/compute_sim.py checks it against measurements/llamacpp)"))
    else:
        steps.append(Step("compute buffer", ", ".join(f"{k} {v:,}" for k, v in sizing.phases.items())
                          + f" B for n_ubatch {c.n_ubatch}, n_kv {sizing.n_kv:,}, flash attention {'on' if fa else 'off'}"
                          + outputs,
                          sizes, "src/llama-context.cpp graph_reserve; sizes fitted to llama.cpp's logged buffers, "
                          "measurements/llamacpp"))
    steps.append(Step("output buffer", f"n_vocab {model.vocab_size:,} × 4 B × {b.n_seq} seq", f"{p.host.output:,} B",
                      "src/llama-context.cpp output_reserve"))
    return steps
