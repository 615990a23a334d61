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
  log): K ≠ V only as K 576 / V 512 (the latent), with gqa_ratio % 16 == 0, on compute capability 8.0 or newer (PR
  #13435 later added Turing; not modelled past b5359). K 192 / V 128 (every head's K/V) has no CUDA kernel in any build
  read (``op->src[0]->ne[0] == 192`` → false at b5359; Ollama 0.32.13's log of deepseek-coder-v2:16b-lite: "Flash
  Attention is assigned to device CPU", github.com/bricelancasterwcp-sudo/assay
  docs/superpowers/evidence/mla-kv-2026-08-27/VERDICT.md at d25af189).

Between b5061 (known without PR #12801 / #13306) and b5359 (known with #13306) the older rule is assumed and said:
offering a fix that does not start is worse than withholding one. Pure computation: no I/O.
"""

from __future__ import annotations

FA_DEEPSEEK_CUDA_BUILDS = (5061, 5359)   # PR #13306: b5061 predates PR #12801 (issue #12817); b5359 = de4c07f9 has it
AMPERE = 8.0


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
        return (f"no CUDA flash-attention kernel for {sizes} in any build read (ggml-cuda.cu supports_op: K ≠ V only "
                "as 576 / 512, PR #13306); llama.cpp runs the op on the CPU (Ollama 0.32.13's log: \"Flash Attention "
                "is assigned to device CPU\")")
    if build is not None and build < FA_DEEPSEEK_CUDA_BUILDS[1]:
        return (f"llama.cpp b{build}: CUDA flash attention for {sizes} came with PR #13306 (2025-05; assumed absent "
                f"before b{FA_DEEPSEEK_CUDA_BUILDS[1]}, the first build known to have it: Ollama v0.7.0's vendored "
                "de4c07f9); the op runs on the CPU")
    old = [cc for cc in compute_capabilities if cc is not None and cc < AMPERE]
    if old and build is not None and build <= FA_DEEPSEEK_CUDA_BUILDS[1]:     # later builds: PR #13435, not read
        return (f"PR #13306's CUDA kernel for {sizes} needs compute capability {AMPERE} or newer (ggml-cuda.cu "
                f"supports_op: cc < GGML_CUDA_CC_AMPERE → false at b{FA_DEEPSEEK_CUDA_BUILDS[1]}); this card has "
                f"{min(old)}")
    return None


__all__ = ["FA_DEEPSEEK_CUDA_BUILDS", "mla_flash_blocked"]
