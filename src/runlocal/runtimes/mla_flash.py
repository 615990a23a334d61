"""Whether a llama.cpp build can run flash attention on the GPU for an MLA model's cache, whose K and V rows differ
(review17c finding 5): where it cannot, "turn on flash attention" and a quantized V cache (which needs it) are not
offered as fixes, and --explain says why.

What each build does with K ≠ V, read in the llama.cpp trees Ollama vendored (ollama/ollama at the tags named):

* up to Ollama v0.6.5's d7cfe1ff (and in v0.5.8's 46e3556e): llama_init_from_model forces it off — "flash_attn
  requires n_embd_head_k == n_embd_head_v - forcing off" — then refuses a quantized V cache ("V cache quantization
  requires flash_attn"); no backend had a kernel for differing sizes before PR #12801 ("ggml : FA with different K, V
  head sizes (CPU)", "metal : add FA vector kernels for heads K 192 and V 128"). Such a build plans MLA as every head
  (K 192, V 128: runtimes/versions.py llamacpp_mla_cache), so every build before PR #12801 is taken as without.
* CUDA until PR #13306 ("CUDA: FA support for Deepseek (Ampere or newer)", 2025-05): ggml-cuda.cu supports_op answers
  false for K ≠ V (Ollama v0.6.7's vendored 2016f07bd, which has PR #12801), so the op runs on the CPU.
* CUDA from PR #13306 (Ollama v0.7.0's vendored de4c07f9 = b5359, "version: 5359 (de4c07f9)" in a llama.cpp issue
  log): K ≠ V only as K 576 / V 512 (the latent), with gqa_ratio % 16 == 0, on compute capability 8.0 or newer
  (supports_op: ``!new_mma_available(cc) || cc < GGML_CUDA_CC_AMPERE`` → false; the same line in Ollama v0.7.0 –
  v0.11.4's trees and in ggml's sync of llama.cpp cf0a43bb = b5361, 2025-05-13).
* PR #13435 ("CUDA: faster Deepseek FA, add Turing support", merged 2025-05-14; ggml c91952e7): the Ampere bound
  dropped, ``!new_mma_available(cc)`` alone — Turing (7.5) on, Volta and older still without (PR #13306: "Volta or older
  is not supported due to a lack of necessary tensor core instructions"). First read with it: ggml's sync of
  llama.cpp d30cb5a7 = b5421 (2025-05-19; "b5421 (d30cb5a7f, 2025-05-19)" in a public upgrade note); then Ollama
  v0.11.5's vendored e54d41be (``!turing_mma_available(cc)``) and v0.12.4's b6646 (fattn.cu
  ggml_cuda_get_best_fattn_kernel: ``!turing_mma_available(cc) || gqa_ratio % 16 != 0``).
* PR #16492 ("CUDA: faster tile FA, add oob checks, more HSs", 2025-10-11; ggml 0b56d427): the tile kernel takes
  576 / 512 on any CUDA card (``!gqa_opt_applies || gqa_ratio % 16 != 0`` only). Read in Ollama v0.12.6's vendored
  df1b612 and v0.12.11's b6840, and in ggml's tree of 2026-08 (Volta also gets MMA kernels, PR #17505).
* K 192 / V 128 (every head's K/V): no CUDA kernel before llama.cpp PR #22812 (2026-05), and that one needs ≥ 8 query
  heads per KV head (``gqa_ratio % 8``) — an every-head MLA cache has one per head, so none in any build
  (``op->src[0]->ne[0] == 192`` → false at b5359; Ollama 0.32.13's log of deepseek-coder-v2:16b-lite: "Flash
  Attention is assigned to device CPU", github.com/bricelancasterwcp-sudo/assay
  docs/superpowers/evidence/mla-kv-2026-08-27/VERDICT.md at d25af189).

A build between the last read without a kernel and the first read with it is taken as without, and said: offering a
fix that does not start is worse than withholding one (b5062–b5358 for PR #13306, b5362–b5420 for PR #13435 on
Turing, b6647–b6839 for PR #16492 below Turing). Pure computation: no I/O.
"""

from __future__ import annotations

FA_DEEPSEEK_CUDA_BUILDS = (5061, 5359)   # PR #13306: b5061 predates PR #12801 (issue #12817); b5359 = de4c07f9 has it
AMPERE, TURING = 8.0, 7.5
# (compute capability from, last build read without, first build read with): where the 576 / 512 kernel reaches
FA_LATENT_CC_BUILDS = ((AMPERE, 5061, 5359),      # PR #13306
                       (TURING, 5361, 5421),      # PR #13435
                       (0.0, 6646, 6840))         # PR #16492: the tile kernel, any CUDA card
FA_LATENT_PRS = {AMPERE: "PR #13306", TURING: "PR #13435", 0.0: "PR #16492"}


def _latent_first_build(cc: float) -> tuple[int, int, str]:
    """(last build read without, first build read with, the PR) for the 576 / 512 kernel on compute capability cc."""
    for floor, without, with_ in FA_LATENT_CC_BUILDS:
        if cc >= floor:
            return without, with_, FA_LATENT_PRS[floor]
    raise AssertionError("the last row's floor is 0")


def mla_flash_blocked(cached: tuple[int, int] | None, build: int | None, backend: str,
                      compute_capabilities: list[float | None]) -> str | None:
    """Why this build cannot run flash attention on its GPUs for an MLA cache of K ``cached[0]`` / V ``cached[1]``
    values per head, as the build caches it (None: the model has no MLA layer), or None where it can (or nothing is
    known against it). ``build``: None for the current build."""
    if cached is None or cached[0] == cached[1]:
        return None
    k, v = cached
    sizes = f"K {k} ≠ V {v} per head"
    if build is not None and build <= FA_DEEPSEEK_CUDA_BUILDS[0]:
        return (f"llama.cpp b{build} has no flash attention for {sizes}: no backend had a kernel for differing "
                "head sizes before PR #12801 (\"ggml : FA with different K, V head sizes (CPU)\"), and builds up to "
                "Ollama v0.6.5's vendored d7cfe1ff force it off (\"flash_attn requires n_embd_head_k == "
                "n_embd_head_v - forcing off\") and then refuse a quantized V cache")
    if backend != "cuda":
        return None
    if (k, v) != (576, 512):
        return (f"no CUDA flash-attention kernel for {sizes} with one query head per KV head in any build read "
                "(ggml-cuda: K ≠ V as 576 / 512, PR #13306; 192 / 128 from PR #22812 only at ≥ 8 query heads per KV "
                "head); llama.cpp runs the op on the CPU (Ollama 0.32.13's log: \"Flash Attention is assigned to device "
                "CPU\")")
    if build is None:
        return None
    if build < FA_DEEPSEEK_CUDA_BUILDS[1]:
        return (f"llama.cpp b{build}: CUDA flash attention for {sizes} came with PR #13306 (2025-05; assumed absent "
                f"before b{FA_DEEPSEEK_CUDA_BUILDS[1]}, the first build known to have it: Ollama v0.7.0's vendored "
                "de4c07f9); the op runs on the CPU")
    for cc in sorted({c for c in compute_capabilities if c is not None}):
        without, with_, pr = _latent_first_build(cc)
        if build < with_:
            assumed = "" if build <= without else (f" — assumed: b{without} is read without it, b{with_} with, the "
                                                   "builds between are not pinned")
            return (f"llama.cpp b{build}: the CUDA kernel for {sizes} on compute capability {cc} came with {pr}"
                    f"{assumed} (ggml-cuda supports_op / get_best_fattn_kernel: Ampere from PR #13306, Turing from "
                    "PR #13435, any card from PR #16492's tile kernel); the op runs on the CPU")
    return None


__all__ = ["FA_DEEPSEEK_CUDA_BUILDS", "FA_LATENT_CC_BUILDS", "mla_flash_blocked"]
