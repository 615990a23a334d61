"""What a token costs in a model's recurrent layers beyond their weights (Mamba, Mamba-2, the gated delta net of
Qwen3-Next / Qwen3.5): the state the graph moves, a fixed time per layer, and in a prompt the scan over its tokens.

**State passes (decode, derived).** A recurrent layer keeps a constant f32 state per sequence (llama.cpp's recurrent
memory, src/llama-model.cpp create_memory: r and s types GGML_TYPE_F32; ``kv.recurrent_state_bytes``). How many times
a decoded token moves it depends on the graph llama.cpp builds (src/models/delta-net-base.cpp,
graph-context-mamba.cpp), counted here as state-sized reads plus writes:

- Mamba / Mamba-2: ggml_ssm_scan reads the layer's state through the row ids itself (build_rs's get_ssm_rows: "avoiding
  to make unnecessary copies of the states") and writes the new state into its output (ssm-scan.cu): 2; the graph then
  stores it into the cache, ``ggml_cpy(y_ssm state view → ssm_states_all)``: a read and a write, 2 — 4 in all.
- gated delta net, fused op (GGML_OP_GATED_DELTA_NET, builds from b8233 one token / b8301 prompts): build_rs gathers the
  state rows (ggml_get_rows: read + write, 2); gated_delta_net.cu loads the state into registers
  (``s_shard[r] = curr_state[i]``) and stores the new one (``state[col * S_v + i] = s_shard[r]``), 2; build_recurrent_attn
  copies it into the cache (``ggml_cpy(new_state, ssm_states_all view)``), 2 — 6, or 4 on CUDA / HIP from PR #23940
  (CUDA_GDN_CACHE_BUILDS: b9862 on) and SYCL, which fuse that copy into the op (ggml_cuda_try_gdn_cache_fusion,
  ggml_sycl_try_gdn_cache_fusion; Vulkan's is PR #27973,
  open at the snapshot read), and on Metal from PR #28164 ("metal : single-source fusion table", mirroring PR #25788:
  ggml-metal-fusion.cpp ggml_metal_fusion_check_gdn_cache, GGML_METAL_FUSION_GDN_CACHE "GATED_DELTA_NET + CPY"):
  METAL_GDN_CACHE_BUILDS — b10488 (Ollama v0.33.0-rc2's LLAMA_CPP_VERSION, built before the PR was opened on
  2026-09-01) is without it, b10909 has it; a plan of the modelled llama.cpp build (b11312) counts 4, an Ollama plan
  (its llama-server at b10488) 6.
- gated delta net, unfused (builds before the fused op, or a backend without it): build_delta_net_autoregressive runs
  the rule as state-sized element-wise ops — mul(s, exp g) 2, mul(s, k) 2, sum_rows 1, repeat(k, s) 1, mul(k, dᵀ) 2,
  add(s, kd) 3, mul(s, q) 2, sum_rows 1 = 14 — plus the gather 2 and the cache copy 2: 18. (Builds before PR #19375,
  2026-02, ran a longer graph: 18 is their least.)

The conv state (ssm_conv's (d_conv − 1) × channels window, a twentieth of the delta-net state) is gathered by build_rs
(2), concatenated with the token (ggml_concat: read + write, 2), read by ggml_ssm_conv (1) and its last columns copied
back (ggml_cpy, 2): CONV_PASSES = 7. The bytes are streamed like the weights, at the decode share of bandwidth; no
constant is fitted for them.

**Kernels per recurrent layer (decode, one fitted constant).** Beyond its bytes a recurrent layer launches more small
kernels than an attention layer (the conv window's gather / concat / ssm_conv / copy back, the gates' sigmoid / softplus,
the state gather and store, the gated norm, and on the unfused path the delta rule's element-wise ops), each waiting on
the one before. Counted in runlocal's op-for-op mirror of llama.cpp's one-token graph (runtimes/ggml/arch.py,
arch_hybrid.py; its qwen35moe graph has 4,388 nodes where the log of llama.cpp issue #20587 prints 4,389 "with bs=1"): the
mean kernels (nodes that are not views) of a recurrent layer less those of an attention layer of the same model, both
over the inner layers (EXTRA_KERNELS; tests/accuracy/test_recurrent_kernels.py recounts them). A llama layer is
KERNELS_PER_LAYER = 19 kernels in the same mirror, and the speed fit's per-layer cost (Fit.layer_us) is what such a layer
costs beyond its bytes, so an extra kernel costs KERNEL_SCALE × layer_us ÷ 19: a recurrent layer adds
EXTRA_KERNELS × KERNEL_SCALE ÷ 19 layers' fixed cost. KERNEL_SCALE is the one constant, fitted by
evidence/speed_fit_hybrid.fit_kernel_scale on the tuning rows (measurements/speed/hybrid_2026.jsonl and
held_out/hybrid.jsonl, round 1's held-out part, scored once in hybrid_first_run.txt): the median over decode rows of
(measured − predicted seconds) ÷ (the extra kernels' seconds at scale 1). Architectures the mirror lacks (falcon-h1's
parallel layers, nemotron_h, mamba, jamba) take granitehybrid's Mamba-2 count, a stand-in.

**The prompt's scan (prefill, derived from op timings).** gated_delta_net.cu and ssm-scan.cu walk a prompt's tokens one
after another (``for (int t = 0; t < n_tokens; t++)`` with the state held in registers; "TODO: Add chunked kernel for
even faster pre-fill", issue #22967), so each prompt token costs every recurrent layer a state update whose time is not
the matmuls'. Each op takes its own public test-backend-ops timing at 512 tokens (SCAN_TIMINGS), as seconds per state
element per token on its own card:

- gated delta net: GATED_DELTA_NET, RTX 5090, CUDA master, S_v 128, 32 value heads (524,288 elements), L = 512:
  279.6 µs (PR #22587's kernel table, master column) → 1.042 ps per element per token;
- Mamba / Mamba-2: SSM_SCAN, RTX 4070, Vulkan after PR #18630, d_state 128 × head_dim 64 × 48 heads (393,216),
  512 tokens: 495.45 µs → 2.461 ps.

Across cards the kernel is not bandwidth-bound: PR #18630's "before" block times the same SSM_SCAN shape with
ggml-vulkan's ssm_scan shader as it was before that PR rewrote it (the PR's description, 2026-01-05, on top of
#18505) on an RTX 4070 (504 GB/s) at 910.72 µs and on an RTX 5090 (1,792 GB/s) at 467.55 µs — 1.95× for 3.56× the bandwidth, and
the two cards' SM count × clock differ by 3.6× (46 × 2.48 GHz vs 170 × 2.41), so neither yardstick alone explains it.
Both timings fit a fixed per-token latency (the token loop's serial steps, near equal on two cards of equal clock)
plus a part that scales with 1 ÷ bandwidth: t = SCAN_LATENCY_US + SCAN_BW_US_GBS ÷ bandwidth, solved on the pair
(294.1 µs + 310,758 µs·GB/s ÷ bandwidth; two points, two unknowns: solved, not checked). An op's rate moves from
its card to another by that form's ratio (scan_scale): ×1.95 from the 5090 to the 4070, ×0.51 back. It is the one
card-to-card pair public: the PR's "after" block (the shader every later Vulkan build runs, whose 4070 time gives the
SSM rate) is read here only to its 4070 line, and no CUDA, HIP or Metal scan kernel has a timing on two cards in the
PRs searched (#18505, CUDA's ssm_scan rewrite, times a GB10 only). So the form is a pre-#18630 Vulkan shader's, applied
to other kernels (ssm-scan.cu, gated_delta_net.cu, Metal's): ±2× (the shader's own before → after change, 1.84× on the
4070). The latency is an NVIDIA figure; AMD and Apple GPUs (other clocks, other schedulers) take it unmeasured.
Builds with the unfused chunked prompt graph (before b8301) run other kernels;
they are given the same rate (not measured) — the held-out round 2 (held_out/hybrid2_first_run.txt) finds those builds'
prompts far slower than that. Mamba-2 has a chunked SSD matmul path in later builds (CUDA PR #22675, Metal PR #26647),
where the token-sequential rate is an upper bound on the scan's time. The path plans assume (b8301 and later) has no
scored held-out prompt row — round 4 (held_out/hybrid4_queries.md) found no public current-build row of a catalog
hybrid that its rule admits — so --explain's scan step says the prompt speed is unvalidated there (PROMPT_PATH_STATUS).
Pure computation, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec

F32_BYTES = 4
MAMBA_STATE_PASSES = 4          # ssm_scan's read + write, the cache store's read + write
GDN_FUSED_STATE_PASSES = 6      # gather 2 + fused op 2 + cache copy 2
GDN_CACHE_FUSED_STATE_PASSES = 4   # CUDA / HIP, SYCL: the cache copy fused into the op
GDN_UNFUSED_STATE_PASSES = 18   # gather 2 + the autoregressive graph's 14 + cache copy 2
CONV_PASSES = 7                 # gather 2 + concat 2 + ssm_conv 1 + the window's copy back 2
KERNEL_STATE_PASSES = 2         # another runtime: its kernel's read and write of the state and window, the least
CACHE_FUSION_BACKENDS = ("cuda", "rocm", "sycl")    # ggml_{cuda,sycl}_try_gdn_cache_fusion (HIP builds ggml-cuda)
METAL_GDN_CACHE_BUILDS = (10488, 10909)     # Metal's GATED_DELTA_NET + CPY fusion (PR #28164): last without, first with
# CUDA / HIP's (PR #23940, "Remove redundant CUDA copies after gated_delta_net", merge commit 5a460de, 2026-07-03): a
# public master log lists 5a460de as the commit right after c8ae9a750, which a user's `llama-cli --version` prints as
# "9861 (c8ae9a750)"; the same log puts 86961efd5 23 commits after c8ae9a750, and a pinned release names it b9884
# (9861 + 23: the two anchors agree). So b9861 is the last build without, b9862 the first with. SYCL's
# (ggml_sycl_try_gdn_cache_fusion) is not gated: its first build was not looked up.
CUDA_GDN_CACHE_BUILDS = (9861, 9862)
CUDA_GDN_CACHE_MERGED = "2026-07-03"   # a record dated before it ran a build without the fusion
PLANNED_GDN_PATH = "fused"      # what a plan assumes: current builds (b8301 and later) fuse both graphs
# extra kernels of a recurrent layer over an attention layer, per HF / GGUF family and one-token graph (see above)
EXTRA_KERNELS = {
    ("qwen3_next", "fused"): 23, ("qwen3_next", "unfused"): 33,
    ("qwen3_5_moe", "fused"): 15, ("qwen3_5_moe", "unfused"): 28,
    ("qwen3_5", "fused"): 12, ("qwen3_5", "unfused"): 25,
    ("granitemoehybrid", "fused"): 17,
}
GGUF_FAMILY = {"qwen3next": "qwen3_next", "qwen35moe": "qwen3_5_moe", "qwen35": "qwen3_5",
               "granitehybrid": "granitemoehybrid"}
STAND_IN = {"gated_deltanet": "qwen3_5_moe", "mamba2": "granitemoehybrid", "mamba": "granitemoehybrid"}
KERNELS_PER_LAYER = 19          # a llama-3.1-8b layer's kernels in the same mirror
# fitted by evidence/speed_fit_hybrid.fit_kernel_scale (python benchmarks/speed_accuracy.py prints the refit;
# tests/accuracy/test_recurrent_kernels.py checks it): an extra kernel's cost in units of layer_us ÷ KERNELS_PER_LAYER
KERNEL_SCALE = 0.54     # 0.67 before session 22 counted a token's weight bytes by type (review22 #10)
# (recurrent kind, op, card, its bandwidth GB/s, state elements, µs for SCAN_TOKENS tokens, source)
SCAN_TIMINGS = {
    "gated_deltanet": ("GATED_DELTA_NET", "RTX 5090", 1792.0, 524_288, 279.6, "llama.cpp PR #22587, master column"),
    "mamba2": ("SSM_SCAN", "RTX 4070", 504.0, 393_216, 495.45, "llama.cpp PR #18630, after"),
}
SCAN_TOKENS = 512
# the same SSM_SCAN shape on two cards (PR #18630's "before" block: ggml-vulkan's ssm_scan shader before that PR's
# rewrite, on NVIDIA cards): (bandwidth GB/s, µs) on the RTX 4070 and the RTX 5090 — the scan form's only source
SCAN_CARD_PAIR = ((504.0, 910.72), (1792.0, 467.55))
(_BW_A, _US_A), (_BW_B, _US_B) = SCAN_CARD_PAIR
SCAN_BW_US_GBS = (_US_A - _US_B) / (1 / _BW_A - 1 / _BW_B)     # the part that scales with 1 ÷ bandwidth, µs·GB/s
SCAN_LATENCY_US = _US_B - SCAN_BW_US_GBS / _BW_B                # the fixed part, µs for SCAN_TOKENS tokens


def scan_scale(bandwidth_gbs: float, ref_gbs: float) -> float:
    """How much longer a scan takes on a card of ``bandwidth_gbs`` than on one of ``ref_gbs`` (the latency + 1 ÷
    bandwidth form fitted on SCAN_CARD_PAIR)."""
    return (SCAN_LATENCY_US + SCAN_BW_US_GBS / bandwidth_gbs) / (SCAN_LATENCY_US + SCAN_BW_US_GBS / ref_gbs)


def scan_timing(kind: str) -> tuple:
    """The op timing a recurrent kind's scan takes (Mamba-1's selective scan: the SSM_SCAN one)."""
    return SCAN_TIMINGS["gated_deltanet" if kind == "gated_deltanet" else "mamba2"]


def scan_rate(kind: str, bandwidth_gbs: float) -> float:
    """Seconds per state element per prompt token of ``kind``'s scan on a card of ``bandwidth_gbs``."""
    _, _, ref_gbs, elems, us, _ = scan_timing(kind)
    return us * 1e-6 / SCAN_TOKENS / elems * scan_scale(bandwidth_gbs, ref_gbs)


def cache_fused(backend: str, build: int | None = None) -> bool:
    """Whether the fused delta-net op writes its state into the cache itself on ``backend`` at llama.cpp ``build``
    (None: the modelled build); builds between Metal's known ones take the newer rule."""
    if backend == "metal":
        return build is None or build > METAL_GDN_CACHE_BUILDS[0]
    if backend in ("cuda", "rocm"):
        return build is None or build > CUDA_GDN_CACHE_BUILDS[0]
    return backend in CACHE_FUSION_BACKENDS


def state_passes(kind: str, gdn_path: str | None = PLANNED_GDN_PATH, backend: str | None = None,
                 build: int | None = None) -> int:
    """State-sized reads + writes a decoded token makes in one recurrent layer of ``kind`` (see the module docstring);
    ``gdn_path`` is the one-token graph of a gated delta net ("chunked" builds fuse the one-token graph), ``build`` the
    llama.cpp build (None: the modelled one). No ggml ``backend`` (a runtime other than llama.cpp, whose graph is not
    counted): the kernel's own read and write."""
    if backend is None:
        return KERNEL_STATE_PASSES
    if kind != "gated_deltanet":
        return MAMBA_STATE_PASSES
    if gdn_path == "unfused":
        return GDN_UNFUSED_STATE_PASSES
    return GDN_CACHE_FUSED_STATE_PASSES if cache_fused(backend, build) else GDN_FUSED_STATE_PASSES


def recurrent_state_traffic(model: ModelSpec, gdn_path: str | None = PLANNED_GDN_PATH,
                            backend: str | None = None, build: int | None = None) -> float:
    """Bytes one decoded token moves through the recurrent layers' f32 states and conv windows on a ggml ``backend``
    ("cuda", "vulkan", "cpu", …; None: another runtime, the kernel's own read and write) at llama.cpp ``build``
    (None: the modelled one); 0 without them."""
    conv = CONV_PASSES if backend is not None else KERNEL_STATE_PASSES
    return float(sum(F32_BYTES * (state_passes(r.kind, gdn_path, backend, build) * r.state_elems + conv * r.conv_elems)
                     for r in model.recurrent_layers))


def extra_kernels(model: ModelSpec, gdn_path: str | None = PLANNED_GDN_PATH) -> int:
    """Kernels one recurrent layer of ``model`` launches per decoded token beyond an attention layer (EXTRA_KERNELS;
    the one-token graph of "chunked" builds is the fused one)."""
    if not model.recurrent_layers:
        return 0
    family = GGUF_FAMILY.get(model.family, model.family)
    path = "unfused" if gdn_path == "unfused" and model.recurrent_layers[0].kind == "gated_deltanet" else "fused"
    if (family, "fused") not in EXTRA_KERNELS:
        family = STAND_IN.get(model.recurrent_layers[0].kind, "granitemoehybrid")
    return EXTRA_KERNELS.get((family, path), EXTRA_KERNELS[(family, "fused")])


def extra_layers(model: ModelSpec, gdn_path: str | None = PLANNED_GDN_PATH, scale: float | None = None) -> float:
    """The recurrent layers' extra kernels as layers of fixed cost (× Fit.layer_us): recurrent layers × EXTRA_KERNELS
    × KERNEL_SCALE ÷ KERNELS_PER_LAYER."""
    k = KERNEL_SCALE if scale is None else scale
    return len(model.recurrent_layers) * extra_kernels(model, gdn_path) * k / KERNELS_PER_LAYER


def scan_seconds(model: ModelSpec, bandwidth_gbs: float | None) -> float:
    """Seconds a prompt token's token-by-token state update takes over all recurrent layers on a card of
    ``bandwidth_gbs`` (each layer's state elements × its op's scan_rate); 0 without recurrent layers or a bandwidth."""
    if not bandwidth_gbs:
        return 0.0
    return sum(r.state_elems * scan_rate(r.kind, bandwidth_gbs) for r in model.recurrent_layers)


def with_scan(prefill_tokens_per_s: float | None, scan_s: float) -> float | None:
    """A prompt rate with the scan's seconds per token added."""
    if not prefill_tokens_per_s or not scan_s:
        return prefill_tokens_per_s
    return 1.0 / (1.0 / prefill_tokens_per_s + scan_s)


def state_traffic_words(model: ModelSpec, traffic: float, gdn_path: str | None = PLANNED_GDN_PATH,
                        backend: str | None = None, build: int | None = None) -> str:
    """The --explain words for the state bytes: layers, elements per layer, passes, bytes."""
    layers = model.recurrent_layers
    if not layers or not traffic:
        return ""
    r = layers[0]
    uniform = len({(x.state_elems, x.conv_elems, x.kind) for x in layers}) == 1
    conv = CONV_PASSES if backend is not None else KERNEL_STATE_PASSES
    elems = (f"({state_passes(r.kind, gdn_path, backend, build)} passes × {r.state_elems:,} state + {conv} × "
             f"{r.conv_elems:,} conv elements)" if uniform else "(their state and conv elements × their passes)")
    at = f" at b{build}" if build else ""
    whose = (f"the passes llama.cpp's {r.kind} graph ({gdn_path or 'fused'} path{at}) makes over the state"
             if backend is not None else "the kernel's own read and write (a runtime other than llama.cpp)")
    return (f"{len(layers)} layers × {elems} × {F32_BYTES} B f32 = {traffic / 1e6:.1f} MB/token, in the decode GB "
            f"above: {whose} (hardware/recurrent_speed.py)")


def kernel_words(model: ModelSpec, gpu_extra_layers: float, gdn_path: str | None = PLANNED_GDN_PATH) -> str:
    """The --explain words for the recurrent layers' extra kernels (``gpu_extra_layers``: the GPU parts' share)."""
    n, k = len(model.recurrent_layers), extra_kernels(model, gdn_path)
    share = gpu_extra_layers / extra_layers(model, gdn_path) if extra_layers(model, gdn_path) else 0.0
    on_gpu = "" if share > 0.999 else f", {share:.0%} of them on the GPU"
    return (f"{n} recurrent layers × {k} kernels more than an attention layer × {KERNEL_SCALE:g} ÷ {KERNELS_PER_LAYER}"
            f"{on_gpu} = {gpu_extra_layers:.1f} layers' fixed cost, in the decode time above (kernels counted in "
            "llama.cpp's graph; the scale fitted on the hybrid tuning rows: hardware/recurrent_speed.py)")


def explain_notes(model: ModelSpec, gpu_extra: tuple[float, float], bandwidth_gbs: float | None,
                  scan_counted: bool, ggml: bool = True) -> tuple[tuple[str, str, str], ...]:
    """The --explain steps (label, formula, value) of the kernels and scan terms a plan counted: the kernels the GPU
    parts carry (``gpu_extra``: their extra layers and those × their Fit.layer_us, µs), the scan where the prompt rate
    included it, and for a runtime other than llama.cpp / Ollama (``ggml`` False) what its prompt leaves unpriced."""
    if not model.recurrent_layers:
        return ()
    notes = []
    layers, us = gpu_extra
    if layers:
        notes.append(("decode: recurrent kernels", kernel_words(model, layers), f"{us / 1e3:.2f} ms/token"))
    if scan_counted and bandwidth_gbs:
        notes.append(("prefill: recurrent scan", scan_words(model, bandwidth_gbs),
                      f"{scan_seconds(model, bandwidth_gbs) * 1e6:.1f} µs/token"))
    elif not ggml:
        notes.append(("prefill: recurrent layers", OTHER_RUNTIME_PREFILL, "not priced"))
    return tuple(notes)


OTHER_RUNTIME_PREFILL = (
    "a runtime other than llama.cpp / Ollama (vLLM, SGLang) runs a prompt's recurrent layers as chunked matmul kernels "
    "(vLLM's fla ops chunk_gated_delta_rule, mamba_chunk_scan_combined), not llama.cpp's token-by-token scan: their "
    "time beyond the projections' matmuls is not priced, nor measured here; the decode state step above is the "
    "kernel's own read and write of the state (fused_recurrent_gated_delta_rule, selective_state_update)")


# review15b #6: the plans' prompt path (b8301 and later: the fused delta-net prompt graph, GATED_DELTA_NET over a
# ubatch) has no scored held-out prompt row; round 2's scored ones (held_out/hybrid2_first_run.txt) all ran older graphs
PROMPT_PATH_STATUS = (
    "this prompt speed is unvalidated on current builds: no held-out prompt row of a llama.cpp build at or after "
    "b8301 (the fused delta-net prompt graph a plan assumes) has been scored (round 2's one such row is a mixture of "
    "experts on Vulkan, whose prompt is not predicted); the held-out prompt rows scored so far "
    "ran older graphs and read 97.7 % (median |error|) too fast (measurements/speed/held_out/hybrid2_first_run.txt), "
    "and a search of public threads for current-build rows of catalog hybrids found none scorable "
    "(held_out/hybrid4_queries.md)")


def scan_words(model: ModelSpec, bandwidth_gbs: float) -> str:
    """The --explain words for the prompt's scan term."""
    r = model.recurrent_layers[0]
    op, card, ref_gbs, _, _, _ = scan_timing(r.kind)
    elems = sum(x.state_elems for x in model.recurrent_layers)
    s = scan_seconds(model, bandwidth_gbs)
    return (f"{len(model.recurrent_layers)} recurrent layers, {elems:,} state elements × "
            f"{scan_rate(r.kind, ref_gbs) * 1e12:.3f} ps ({op} on an {card}, {ref_gbs:g} GB/s) × "
            f"{scan_scale(bandwidth_gbs, ref_gbs):.2f} (to {bandwidth_gbs:g} GB/s: {SCAN_LATENCY_US:.0f} µs + "
            f"{SCAN_BW_US_GBS:,.0f} µs·GB/s ÷ bandwidth, solved on one SSM_SCAN shape timed with Vulkan's pre-#18630 shader "
            f"on two NVIDIA cards, ±2× on other kernels) = "
            f"{s * 1e6:.1f} µs per prompt token, in the prefill time above (llama.cpp's token-by-token scan; op "
            f"timings from public PRs: hardware/recurrent_speed.py); {PROMPT_PATH_STATUS}")
