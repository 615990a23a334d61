"""Speed rules of single llama.cpp backends that the shared formulas of hardware/speed.py do not carry.

MoE prefill on SYCL and Vulkan (and on ROCm where RDNA3/4 takes the per-expert fallback, below, and on CUDA where a card without
int8 tensor cores does: nvidia_mmq) is not modelled.
hardware/speed.py prices a prompt at 2 FLOPs per active weight and one fitted share of the device's peak per class and
backend — a dense matmul's rate. A prompt batch of a mixture of experts runs its expert matrices through MUL_MAT_ID
instead:

- ggml-sycl (ggml/src/ggml-sycl/ggml-sycl.cpp ggml_sycl_mul_mat_id, the prompt branch, ne12 > 1; read at 0c1e57098):
  it copies the routed expert ids to the host and waits on the queue, counting-sorts the rows by expert on the host
  (mmid_counting_sort_rows, PR #23142), then runs one gather kernel, one ggml_sycl_mul_mat per expert that received
  tokens (a separate dequantize-and-GEMM or MMQ launch per expert, up to n_experts of them a layer) and one scatter — a
  host round trip and n_experts small GEMMs per layer, so the cost is set by a per-expert launch cost the source does
  not state. The public records: an Arc Pro B60 ran Qwen3.6-35B-A3B at 373.5 prompt tokens/s where the dense formula
  gives 3,440 (9.2×; llama.cpp issue #22413, build 9159, before #23142; measurements/speed/held_out/round2.jsonl); the
  moeprefill round's rule (session 19, measurements/speed/held_out/moeprefill_queries.md) found no other SYCL record
  of a catalog card and model, so that cost has no tuning table and SYCL stays declined.
- ggml-vulkan: derived in session 19 from the source — its padded mul_mm_id tiles (vulkan_expert_factor, below) —
  and scored: the moeprefill round's tuning rows read 22.2 % median |error| with it against 50.0 % by the dense
  formula, its held-out rows 92.3 % against 144.5 % (FAIL): not applied (VULKAN_MOE_APPLIED), so Vulkan is declined too.
Declined on these three backends, a plan prints a range instead of a figure since session 20 (MOE_PREFILL_RANGES:
the figure the cost model prices × the measured spread of the tuning rows, or × the slowest row … 1.0 where the
source bounds the per-expert path by the dense rate); the rounds that were to check it (moeprefill2, and
moeprefill3 in session 22) found no held-out rows, so every range is unvalidated and says so.

MoE prefill on CUDA (NVIDIA, integer-quantized experts: MMQ) is priced by its tiles (``expert_tile_factor``), read
from ggml-cuda in build 0c1e57098 (the build of the own H100/H200 runs):

- mmq.cu ggml_cuda_mul_mat_q, the ``ids`` branch: ggml_cuda_launch_mm_ids_helper sorts the batch's (token, expert) slots
  by expert and writes ``expert_bounds``; one MMQ launch covers every expert (the grid's z dimension is ne02, the
  experts). ``ncols_opt`` — what the tile width is chosen against — is ne12, the whole micro-batch, except on RDNA3/RDNA4
  ("Each expert only sees ne12*n_expert_used/ne02 tokens on average. On RDNA3 and RDNA4 it is faster to pick the tile
  size against this value instead of ne12").
- mmq.cuh mul_mat_q_switch_J: the tile width J is the one of 8, 16, … 128 the config offers that needs the fewest
  column tiles for ``ncols_opt`` — 128 for a 512-token micro-batch (mmq-config-ampere.cuh / -blackwell.cuh: I = 128 rows,
  J up to 128, stream-k, for every integer type; Turing to Blackwell).
- mmq.cuh mul_mat_q: for expert ``zt`` a column tile ``jt`` with ``jt*J >= col_diff`` (past that expert's tokens) is
  skipped; any other tile runs whole — the weight tile is loaded and the J-column product computed whatever the number
  of real columns in it. So an expert with t tokens costs ceil(t / J) full tiles, where a dense matmul's tiles are full.

An expert matmul therefore costs its FLOPs × J·E[ceil(t/J)] / E[t], at the dense rate, t ~ Binomial(micro-batch,
n_used / n_experts) tokens per expert (uniform routing assumed). Qwen3-30B-A3B at 512 tokens: t ≈ 32 → 4×;
gpt-oss-20b: t ≈ 64 → 2×. No constant is fitted. What the rule leaves out: the ids helper and the (token, expert)
activation quantization (memory-bound kernels, one per matmul), stream-k's share of skipped tiles, routing that is not
uniform. An open NVIDIA PR that sizes J by the mean tokens per expert (ggml-org/llama.cpp#26977) measured only +3.5 to
+11 % at a 512 micro-batch on an RTX 3090 (Qwen3-30B-A3B): a narrower tile costs nearly as much as a padded one, as
this rule assumes (the weight tile's load and dequantization, not the product, sets a tile's time). Not applied:
Metal, float experts (cuBLAS / mmf paths), vLLM/SGLang (their own fused-MoE kernels), and ROCm. A HIP build compiles
these same files (ggml-hip/CMakeLists.txt globs ../ggml-cuda/*.cu), but ggml_cuda_mul_mat_id takes the one MMQ launch
only where ggml_cuda_should_use_mmq(type, cc, ne12 = the micro-batch's tokens, n_experts) says so.
On RDNA3 / RDNA3.5 (gfx1151, Strix Halo: GGML_CUDA_CC_RDNA3_5 is inside GGML_CUDA_CC_IS_RDNA3) and RDNA4 the answer
depends on the build (rocm_expert_mmq; every era read in the PR's own diff): before PR #17576 (WMMA-MMQ for RDNA3) RDNA3
took MMQ only below MMQ_DP4A_MAX_BATCH_SIZE (64) columns — RDNA4 too until PR #17156; from #17576 the amd_wmma_available
branch (RDNA3, RDNA4) returns true for every size and type; from PR #18537 ("add n_experts branch like the cdna path",
citing CDNA's PR #18202) RDNA3 takes it whenever n_experts >= 64 ("the synchronization overhead in the cuBLAS/hipBLAS
path"), else for every type but Q2_K, Q6_K, IQ2_XS and IQ2_S (ne11 <= 128), RDNA4 always; from PR #18666, Q6_K up to 256
and IQ2_XS / IQ2_S at any size on RDNA3.5. (The rule "ne11 <= 128, Q4_0/Q4_1/Q5_0/Q5_1 at any size, Q4_K/Q5_K up to 256"
is the CDNA branch's, amd_mfma_available: it never applied to RDNA — session 15 read it as the #17576 era's RDNA rule,
which declined every b7423 K-quant record.) Where the build says no, the prompt runs the synchronous fallback (unless
built with GGML_CUDA_FORCE_MMQ, which returns before the AMD tests) — the expert ids copied to the host, then per expert
a gather, one ggml_cuda_mul_mat over its ~t tokens (dense MMQ, tile sized to t, or hipBLAS) and a scatter: SYCL's
pattern, not padded tiles. Where the one launch is taken on RDNA3/4, mmq.cu picks the tile against ne12·n_used/n_experts
(newer builds: RDNA3.0 and RDNA4 only): little padding. CDNA (amd_mfma_available: CDNA3 always, else n_experts > 64 or
ne11 <= 128 …) and RDNA2 (dp4a, mmq_x up to 64) do take it; no public ROCm MoE prompt record of either is held. Tried on
the Radeon 8060S rows anyway (CUDA's factor on ROCm, soc/rocm refitted 0.087 → 0.195): dense 73.5 → 44.4 % but MoE 38.0
→ 48.2 % (in sample) — not applied. The 8060S MoE records span the eras (builds 6181 to 9193: before #17576 every
512-token type fell back; b7423 held-out rows in the bare-true era; from b7670 GLM-4.5-Air's 128 experts and gpt-oss
take MMQ). So on ROCm a MoE prompt is declined, like SYCL's and Vulkan's, only where the build's rule sends the experts
to the fallback on an RDNA3/3.5/4 GPU (``rocm_expert_mmq``, the GPU's gfx_target from data/devices.json; a plan counts
at the modelled, current build, an Ollama plan at its release's; each routed-expert tensor's own type decides, as
llama-quantize types the file — Q4_K_M's use_more_bits gives about half the layers' ffn_down_exps Q6_K, so Mixtral
Q4_K_M on gfx1151 is declined at 512 tokens at today's build: review15c #2), and the fit takes no such row (the
per-tensor types moved no 8060S row in or out: every MoE row there has >= 64 experts, predates #17576, or is
gpt-oss-20b's all-MXFP4 experts): soc/rocm 0.087 → 0.162 (8.7 µs a layer), fitted without the 32 GLM-4.5-Air rows of
builds 6181-7085. The rows left still spread (GLM-4.5-Air at b7816, MMQ era, 56-181 t/s by toolbox; llama-3-8b
1,011-1,127 read 482): the ROCm
stack, not the expert launch alone."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

MOE_PREFILL_UNMODELLED = {
    "sycl": ("ggml-sycl runs a prompt's expert matmuls (MUL_MAT_ID) as one dequantize-and-GEMM per expert after a host "
             "copy of the routing ids: launch- and sync-bound, not FLOP-bound (B60 Qwen3.6-35B-A3B: 373.5 measured vs "
             "3,440 by the dense formula, llama.cpp #22413)"),
}


def moe_prefill_gap(n_experts: int, backend: str | None, *, gfx_target: str | None = None, quant: str | None = None,
                    ubatch: int = 512, build: int | None = None, expert_types: dict[str, int] | None = None,
                    compute_capability: str | None = None, vendor: str | None = None) -> str | None:
    """Why the prefill of a mixture-of-experts model (``n_experts`` > 0) is not predicted on ``backend``; None when it
    is (a dense model, or a backend whose MoE prefill the dense formula covers). On ROCm it is declined where an
    RDNA3/3.5/4 GPU (``gfx_target``) sends the ``ubatch``-token expert matmul of any routed-expert tensor to the
    per-expert fallback at ``build`` (rocm_expert_mmq): ``expert_types`` (ggml type → how many expert tensors, as
    llama-quantize types the file: token_work.routed_expert_types) where known, else the type the quant's name says.
    One such type is enough: those layers' prompt runs the launch- and sync-bound fallback, which the dense formula
    does not price, so the figure is declined, not mixed. On CUDA the same fallback is taken where nvidia_mmq says no
    for the experts (ggml_cuda_mul_mat_id: no MMQ, and mmf takes float experts only): a Volta card at 64+ tokens.
    ``vendor``: the card's, for Vulkan's words on the range printed instead (moe_prefill_range), or why there is none."""
    if not n_experts:
        return None
    why = MOE_PREFILL_UNMODELLED.get(backend or "")
    if not why and backend == "vulkan" and not VULKAN_MOE_APPLIED:
        why = VULKAN_MOE_DECLINED + (": a range is (the prefill range step)" if moe_prefill_range(backend, vendor)
                                     else f"; nor a range: no {(vendor or 'such').title()} card's Vulkan MoE prompt is "
                                     "among the measured rows (the ranges rest on NVIDIA's and AMD's cards), so it is "
                                     "unmeasured here" + (INTEL_VULKAN_MOE_UNMEASURED if (vendor or "").lower() ==
                                                          "intel" else ""))
    if why:
        return f"not modelled for a mixture of experts on {backend}: {why}"
    if backend == "cuda":
        return cuda_expert_gap(compute_capability, expert_types or {expert_type(quant): 0}, ubatch)
    if backend != "rocm":
        return None
    types = expert_types or {expert_type(quant): 0}
    slow = [t for t in types if rocm_expert_mmq(gfx_target, t, ubatch, n_experts, build) is False]
    if slow:
        at = f"llama.cpp b{build}" if build else "the modelled llama.cpp build"
        part = ""
        if expert_types and len(slow) < len(types):
            mix = ", ".join(f"{n} {t}" for t, n in types.items())
            part = (f" — the file's {sum(types.values())} routed-expert tensors are {mix} as llama-quantize types "
                    f"them, so the layers holding {' or '.join(slow)} experts take it")
        return (f"not modelled for a mixture of experts on rocm: at {at} ggml-cuda's "
                f"ggml_cuda_should_use_mmq sends a {ubatch}-token batch of {', '.join(slow)} experts on "
                f"{gfx_target} ({amd_wmma_family(gfx_target)}) to the synchronous per-expert fallback{part} (routing ids "
                f"copied to the host, then a gather, one matmul and a scatter per expert): launch- and sync-bound, "
                f"SYCL's pattern, not the one MMQ launch the dense formula prices")
    return None


def cuda_expert_gap(compute_capability: str | None, types: dict[str, int], ubatch: int) -> str | None:
    """Why a MoE prompt on an NVIDIA card is not predicted: ggml_cuda_mul_mat_id asks ggml_cuda_should_use_mmq (its
    NVIDIA lines take no expert count: nvidia_mmq) and, on a no, ggml_cuda_should_use_mmf (float types only), then
    takes the synchronous per-expert fallback — the ROCm pattern above; None where every expert type takes MMQ."""
    slow = [t for t in types if nvidia_mmq(compute_capability, t, ubatch) is False]
    if not slow:
        return None
    return (f"not modelled for a mixture of experts on cuda: {MMQ_RULE_SOURCE} sends a {ubatch}-token batch of "
            f"{', '.join(slow)} experts away from MMQ ({_cublas_why(compute_capability, slow[0])}), so "
            "ggml_cuda_mul_mat_id takes its synchronous per-expert fallback (routing ids copied to the host, then a "
            "gather, one matmul and a scatter per expert): launch- and sync-bound, not the one MMQ launch the dense "
            "formula prices")


# ggml-cuda common.cuh: a HIP device's cc is GGML_CUDA_CC_OFFSET_AMD + its gfx name read as hex (gfx1151 → 0x1151);
# GGML_CUDA_CC_RDNA3 = 0x1100, GGML_CUDA_CC_RDNA3_5 = 0x1150, GGML_CUDA_CC_RDNA4 = 0x1200 above the offset, and
# IS_RDNA3 is [RDNA3, RDNA4), IS_RDNA3_0 [RDNA3, RDNA3_5), IS_RDNA3_5 [RDNA3_5, RDNA4), IS_RDNA4 from RDNA4 on —
# amd_wmma_available(cc) is IS_RDNA3 || IS_RDNA4.
def amd_wmma_family(gfx_target: str | None) -> str | None:
    """"rdna3", "rdna3.5" or "rdna4" for an AMD GPU's LLVM target (devices.json gfx_target), else None (RDNA2, CDNA,
    unknown: ggml-cuda's amd_wmma_available is false there)."""
    m = re.fullmatch(r"gfx([0-9a-f]{3,4})", (gfx_target or "").lower())
    if not m:
        return None
    cc = int(m.group(1), 16)
    if cc >= 0x1200:
        return "rdna4"
    if cc >= 0x1150:
        return "rdna3.5"
    return "rdna3" if cc >= 0x1100 else None


def expert_type(quant: str | None) -> str:
    """The ggml type of a quantized file's expert tensors, read from its name: Q4_K_M / Q4_K_XL → Q4_K, Q8_K_XL → Q8_0
    (no Q8_K weight type exists), IQ2_M → IQ2_S (the type llama-quantize writes for it), else the name itself."""
    q = (quant or "").upper()
    if q == "IQ2_M":
        return "IQ2_S"
    m = re.match(r"(IQ\d_[A-Z]+?|Q\d_K|Q\d_\d|MXFP4|TQ\d_\d)(?:_[A-Z]+)?$", q)
    if not m:
        return q
    return "Q8_0" if m.group(1) == "Q8_K" else m.group(1)


# The changes to ggml_cuda_should_use_mmq's RDNA lines (ggml-cuda/mmq.cu; each PR's diff read in ggml-org/ggml's sync
# commit of it), with the last llama.cpp build known to lack it and the first known to hold it — the merge lies between:
# - PR #17156 ("HIP: WMMA-MMQ kernels for RDNA 4", ggml b3166ace): `if (amd_wmma_available(cc)) { if (IS_RDNA4(cc))
#   return true; }` (amd_wmma_available was RDNA4 only). Lacking in b6840, held by b7209: Ollama's vendored mmq.cu at
#   544b6739d ("ggml update to b6840") and 7f8ef50cc (v0.13.2, b7209: data/ollama_llama_cpp.json).
# - PR #17576 ("HIP: enable WMMA-MMQ INT kernels for RDNA 3", b96dffa0): amd_wmma_available names RDNA3 too and its
#   branch is a bare `return true;` — RDNA3/3.5/4 take MMQ at any size and type. Lacking in b7209 (v0.13.2); held by
#   b7349 (issue #17917's bisect; Ollama v0.13.3) and b7437 (v0.13.5, ec98e2002, still the bare `return true;`).
# - PR #18537 ("mmq.cu: tune mmq/rocblas switching for RDNA", 803885a3): inside that branch, `if (IS_RDNA3(cc))`:
#   n_experts >= 64 → true, else Q2_K / Q6_K / IQ2_XS / IQ2_S → ne11 <= 128, others true; RDNA4 true. Lacking in b7437;
#   held by b7645: PR #18666's 8060S table compares "t/s b7644" with "t/s b7645", two builds before its own change, one
#   commit apart — read as #18537's merge, which would put b7644 without it; b7645 holds it either way.
# - PR #18666 ("HIP: adjust RDNA3.5 MMQ kernel selction logic", 9ca3cfeb): Q6_K → ne11 <= (IS_RDNA3_0 ? 128 : 256),
#   IQ2_XS / IQ2_S → IS_RDNA3_5 || ne11 <= 128. Lacking in b7645 (its own baseline); held by b7847 (Ollama ef00199fb,
#   "Update vendor ggml code to a5bb8ba4", reverted as "Update vendored llama.cpp to b7847") and the stored llama.cpp
#   copy (027ef8769).
# ggml-cuda's CDNA branch (amd_mfma_available, from PR #14624) is the one with "ne11 <= 128 || Q4_0/Q4_1/Q5_0/Q5_1, Q4_K/
# Q5_K up to 256" (and since PR #18202 "n_experts > 64 ||"): it never applied to RDNA.
RDNA_MMQ_CHANGES = {"#17156": (6840, 7209), "#17576": (7209, 7349), "#18537": (7437, 7645), "#18666": (7645, 7847)}
MMQ_DP4A_MAX_BATCH_SIZE = 64
# ggml types that have an MMQ kernel (mmq.cu's switch), as expert_type names them; the rest of ggml's integer types
# (IQ1_M, TQ1_0, TQ2_0) go to cuBLAS / hipBLAS on every GPU (should_use_mmq returns false before any vendor line)
MMQ_TYPES = frozenset({"Q1_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "MXFP4", "NVFP4", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
                       "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ4_XS", "IQ4_NL"})
NO_MMQ_TYPES = frozenset({"IQ1_M", "TQ1_0", "TQ2_0"})


def rocm_expert_mmq(gfx_target: str | None, quant: str | None, ubatch: int, n_experts: int,
                    build: int | None = None) -> bool | None:
    """Whether ggml_cuda_mul_mat_id takes the one MMQ launch (True) or the per-expert fallback (False) for a
    ``ubatch``-token batch of ``quant`` experts on an RDNA3/3.5/4 GPU at llama.cpp ``build`` (None: the modelled,
    current build); None where the rule does not apply (not RDNA3/4, float experts) or where ``build`` lies between
    the last build known to lack a change and the first known to hold it and the two rules disagree. A type without an
    MMQ kernel (IQ1_M, TQ1_0, TQ2_0) is False in every era. By era (without GGML_CUDA_FORCE_MMQ, which returns true
    before these lines), from the changes in RDNA_MMQ_CHANGES:
    - before PR #17576: the last line, `(!IS_RDNA3(cc) && !IS_CDNA(cc)) || ne11 < MMQ_DP4A_MAX_BATCH_SIZE` (64) — and
      RDNA4 the same until PR #17156 made it `return true`;
    - PR #17576 to #18537: `if (amd_wmma_available(cc)) return true;` — every size and type on RDNA3/3.5/4;
    - PR #18537: RDNA4 always; RDNA3 when n_experts >= 64, else Q2_K / Q6_K / IQ2_XS / IQ2_S only up to 128 tokens;
    - PR #18666 (today): as #18537 but Q6_K up to 256 on RDNA3.5 and IQ2_XS / IQ2_S always on RDNA3.5."""
    family = amd_wmma_family(gfx_target)
    typ = expert_type(quant)
    if family is None or not quant or typ in ("F16", "BF16", "F32"):
        return None
    if typ in NO_MMQ_TYPES:
        return False
    held = {pr: True if build is None or build >= first else False if build <= last else None
            for pr, (last, first) in RDNA_MMQ_CHANGES.items()}
    unknown = [pr for pr, has in held.items() if has is None]
    answers = {_rdna_mmq_rule(family, typ, ubatch, n_experts, {**held, **dict.fromkeys(unknown, has)})
               for has in (True, False)}
    return answers.pop() if len(answers) == 1 else None


def _rdna_mmq_rule(family: str, typ: str, ubatch: int, n_experts: int, held: dict[str, bool | None]) -> bool:
    """ggml_cuda_should_use_mmq's answer on an RDNA3/3.5/4 GPU for a build holding the PRs ``held`` marks True."""
    if held["#18537"]:
        if family == "rdna4" or n_experts >= 64:
            return True
        if typ == "Q2_K" or (typ in ("Q6_K", "IQ2_XS", "IQ2_S") and not held["#18666"]):
            return ubatch <= 128
        if typ == "Q6_K":
            return ubatch <= (128 if family == "rdna3" else 256)
        if typ in ("IQ2_XS", "IQ2_S"):
            return family == "rdna3.5" or ubatch <= 128
        return True
    if held["#17576"] or (family == "rdna4" and held["#17156"]):
        return True
    return ubatch < MMQ_DP4A_MAX_BATCH_SIZE


# ggml_cuda_should_use_mmq's NVIDIA lines (mmq.cu), read at the stored copy of ggml-org/llama.cpp (027ef8769) and
# unchanged for NVIDIA since PR #8075 ("CUDA: use MMQ instead of cuBLAS by default", 2024-06: MMQ "unless there is no
# int8 tensor core MMQ implementation available but FP16 tensor cores are (V100, RDNA3) or the __dp4a instruction is
# unavailable (P100 or older)"; its form then: int8_mma_available(cc) / cc < GGML_CUDA_CC_DP4A / cc < GGML_CUDA_CC_VOLTA
# || ne11 < MMQ_DP4A_MAX_BATCH_SIZE): a type MMQ has no kernel for → false; turing_mma_available (cc >= 7.5) → true;
# below GGML_CUDA_CC_DP4A (6.1: P100 6.0, Maxwell) → false; GGML_CUDA_FORCE_MMQ → true (a build option, off by
# default: docs/build.md); NVIDIA → !fp16_mma_hardware_available(cc) (cc < 7.0: Pascal 6.1/6.2 — P40, GTX 10xx — take
# dp4a MMQ at any batch) || ne11 < MMQ_DP4A_MAX_BATCH_SIZE (Volta 7.0/7.2 only below 64 columns). False sends the batch
# to ggml_cuda_mul_mat_cublas (ggml-cuda.cu ggml_cuda_mul_mat's last line): the weights dequantized to F16 where
# fast_fp16_hardware_available (NVIDIA cc >= 6.0 but not 6.1), a cuBLAS GEMM (on Volta with FP32 output:
# prefer_f32_output, CUBLAS_COMPUTE_32F). GGML_CUDA_FORCE_CUBLAS (off by default) makes every batch false. Before #8075
# (PR #3776, 2023-10, to 2024-06) every card with FP16 tensor cores — Turing to Ada too — took cuBLAS above 32 columns;
# the 2024 records that ran it are scored by the @2024 entries (build_era.py), whose fitted rate absorbs it.
MMQ_RULE_SOURCE = "llama.cpp ggml-cuda/mmq.cu ggml_cuda_should_use_mmq, NVIDIA lines unchanged since PR #8075"


def nvidia_mmq(compute_capability: str | None, quant: str | None, ncols: int) -> bool | None:
    """Whether ggml-cuda multiplies an ``ncols``-token batch of ``quant`` weights on an NVIDIA card of this compute
    capability with MMQ (True) or dequantizes them for cuBLAS (False): ggml_cuda_should_use_mmq as above, without
    GGML_CUDA_FORCE_MMQ / FORCE_CUBLAS. None where the rule says nothing the plan uses: float weights (cuBLAS / mmf
    already), a name that is not a ggml integer type, or an unknown compute capability (taken as MMQ, the default
    path the fit entries price)."""
    typ = expert_type(quant)
    if typ in NO_MMQ_TYPES:
        return False
    cc = _cc(compute_capability)
    if typ not in MMQ_TYPES or cc is None:
        return None
    if cc >= (7, 5):
        return True
    if cc < (6, 1):
        return False
    return cc < (7, 0) or ncols < MMQ_DP4A_MAX_BATCH_SIZE


def nvidia_cublas_words(compute_capability: str | None, quant: str | None, ncols: int) -> str:
    """--explain's words for a prompt batch nvidia_mmq sends to cuBLAS ("" where it takes MMQ or the rule is silent)."""
    if nvidia_mmq(compute_capability, quant, ncols) is not False:
        return ""
    typ = expert_type(quant)
    return (f"; kernel path: {MMQ_RULE_SOURCE} sends this {ncols}-token batch of {typ} to dequantize + cuBLAS "
            f"({_cublas_why(compute_capability, typ)}), so it is priced as {cublas_type(compute_capability)} weights "
            "are (ggml-cuda.cu ggml_cuda_mul_mat → ggml_cuda_mul_mat_cublas)")


def nvidia_kernel_words(compute_capability: str | None, quant: str | None, ncols: int) -> str:
    """--explain's words for the kernel an ``ncols``-token prompt batch of ``quant`` takes on an NVIDIA card without
    int8 tensor cores: dequantize + cuBLAS (nvidia_cublas_words), MMQ with __dp4a on Pascal 6.1 / 6.2 (nvidia_mmq says
    MMQ below compute capability 7.0: mmq.cu's !fp16_mma_hardware_available line), or cuBLAS in F32 for F16 weights
    where fast_fp16_hardware_available is false (cublas_type); "" elsewhere (the fitted entries' own path)."""
    cublas = nvidia_cublas_words(compute_capability, quant, ncols)
    if cublas:
        return cublas
    cc = _cc(compute_capability)
    if cc is not None and cc < (7, 0) and nvidia_mmq(compute_capability, quant, ncols):
        return (f"; kernel path: {MMQ_RULE_SOURCE} sends this {ncols}-token batch of {expert_type(quant)} to MMQ on "
                f"compute capability {compute_capability} at any batch size (no FP16 tensor cores), whose dot products "
                "are __dp4a (ggml_cuda_dp4a, GGML_CUDA_CC_DP4A 6.1): priced against the int8 (dp4a) peak")
    if cc is not None and (quant or "").upper() in ("F16", "FP16") and cublas_type(compute_capability) == "F32":
        return (f"; kernel path: F16 weights go to cuBLAS, which ggml-cuda runs in F32 on compute capability "
                f"{compute_capability} (common.cuh fast_fp16_hardware_available: NVIDIA cc >= 6.0 but not 6.1), so "
                "they are priced at the fp32 rate")
    return ""


def _cublas_why(compute_capability: str | None, typ: str) -> str:
    if typ in NO_MMQ_TYPES:
        return f"{typ} has no MMQ kernel"
    volta = (_cc(compute_capability) or (0, 0)) >= (7, 0)
    return (f"compute capability {compute_capability} has no int8 tensor cores (turing_mma_available needs 7.5) and "
            + (f"its FP16 ones take batches of {MMQ_DP4A_MAX_BATCH_SIZE}+ columns" if volta
               else "no __dp4a (GGML_CUDA_CC_DP4A is 6.1)"))


def cublas_type(compute_capability: str | None) -> str:
    """The type ggml_cuda_mul_mat_cublas dequantizes integer weights to: F16 where fast_fp16_hardware_available
    (NVIDIA cc >= 6.0 but not 6.1), else F32."""
    cc = _cc(compute_capability)
    return "F16" if cc is None or (cc >= (6, 0) and cc != (6, 1)) else "F32"


# Decode on NVIDIA cards older than Volta (compute capability < 7.0: Pascal, Maxwell) on CUDA (session 17,
# measurements/speed/pascal2_queries.md). The GDDR entry's share of bandwidth (0.92, at 51 µs a layer) is fitted on
# Turing, Ampere, Ada and Blackwell cards; a Pascal card reads well under it, for reasons ggml-cuda's source and a
# published measurement name but do not size: its graph is never replayed as a CUDA graph (ggml-cuda.cu
# graph_set_enabled: cc < GGML_CUDA_CC_AMPERE before PR #25749, cc < GGML_CUDA_CC_VOLTA since), so every kernel of
# every layer is a host launch; mmvq.cu gives NVIDIA cards one parameter table (MMVQ_PARAMETERS_GENERIC: one row a
# 128-thread block, each block reading the token's q8_1 activations again; PR #25479's Pascal table, open, measured
# +2.5 to +5.4 % on a GTX 1060); and the memory streams below the datasheet (a GTX 1080 Ti's element-wise streaming
# kernel: 355-359 GB/s of 484, 0.74). So each memory class of these cards has a decode entry of its own
# ("nvidia-gddr/cuda:cc6-gddr5x"), one constant fitted on its tuning rows (the share of bandwidth; per-layer cost and KV
# factor the GDDR entry's: speed_fit.fit_all's variant rule); a class without such rows falls back to the GDDR entry.
def pre_volta_decode_variant(compute_capability: str | None, memory_type: str | None,
                             backend: str | None) -> str | None:
    """The fit variant of a CUDA decode on an NVIDIA card older than Volta: "cc<major>-<memory type>"
    ("cc6-gddr5x": GTX 1080 Ti / 1080; "cc6-gddr5": Tesla P40, GTX 1070 / 1060; "cc6-hbm2": P100; "cc5-gddr5":
    Maxwell); None for any other card or backend."""
    cc = _cc(compute_capability)
    if backend != "cuda" or cc is None or cc >= (7, 0) or not memory_type:
        return None
    return f"cc{cc[0]}-{memory_type.lower()}"


def fits_parent(variant: str | None) -> bool:
    """Whether a variant's rows also fit its backend entry (an Intel architecture's do: the SYCL entry is theirs); a
    pre-Volta memory class's do not — they read unlike the cards the GDDR CUDA entry is fitted on."""
    return not (variant or "").startswith("cc")


def _cc(compute_capability: str | None) -> tuple[int, int] | None:
    major, _, minor = (compute_capability or "").partition(".")
    try:
        return int(major), int(minor or 0)
    except ValueError:
        return None


# mmq.cuh mul_mat_q_switch_J walks J = 8, 16, … 128 in steps of 8 and keeps the first J with the fewest column tiles; the
# Ampere/Blackwell configs (mmq-config-ampere.cuh, the non-fallback cases) offer these widths for every integer type.
MMQ_TILE_WIDTHS = (8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128)


def mmq_tile_width(ncols: int) -> int:
    """The MMQ tile width J ggml-cuda picks for ``ncols`` columns (mul_mat_q_switch_J): fewest tiles, narrowest first."""
    return min(MMQ_TILE_WIDTHS, key=lambda j: (math.ceil(ncols / j), j))


@lru_cache(maxsize=256)
def expected_tiles(ubatch: int, share: float, width: int) -> float:
    """E[ceil(t / width)] for t ~ Binomial(ubatch, share): the column tiles one expert runs (an empty expert runs none)."""
    if share >= 1.0:
        return float(math.ceil(ubatch / width))
    log_p, log_q = math.log(share), math.log1p(-share)
    pmf = [math.exp(math.lgamma(ubatch + 1) - math.lgamma(t + 1) - math.lgamma(ubatch - t + 1) + t * log_p
                    + (ubatch - t) * log_q) for t in range(ubatch + 1)]
    return sum(p * math.ceil(t / width) for t, p in enumerate(pmf))


def expert_tile_factor(n_experts: int, n_used: int, ubatch: int, backend: str | None, vendor: str | None,
                       quantized: bool, compute_capability: str | None = None, coopmat2: bool | None = None) -> float:
    """How many times its FLOPs a routed expert matmul of a ``ubatch``-token micro-batch costs at the dense rate: on
    CUDA (NVIDIA, integer-quantized experts — MMQ) J·E[ceil(t/J)] / E[t], t the tokens routed to one expert (the module
    docstring has the source); on Vulkan the same padding at mul_mm_id's tile width (vulkan_expert_factor); 1.0
    elsewhere (a dense model, other backends and vendors, float experts on CUDA, and NVIDIA cards before Turing:
    mmq.cu ggml_cuda_should_use_mmq takes MMQ for a large batch only where turing_mma_available, compute capability
    7.5 and later — a V100's 512-token expert batch takes the per-expert fallback, cuda_expert_gap, and below 64
    tokens dp4a MMQ, whose tiles this factor does not describe)."""
    if not n_experts or not n_used:
        return 1.0
    if backend == "vulkan":
        nvidia = (vendor or "").lower() == "nvidia"
        return vulkan_expert_factor(n_experts, n_used, ubatch,
                                    coopmat2 if coopmat2 is not None else nvidia and _turing_or_later(compute_capability))
    if backend != "cuda" or (vendor or "").lower() != "nvidia" or not quantized:
        return 1.0
    if not _turing_or_later(compute_capability):
        return 1.0
    share = min(1.0, n_used / n_experts)
    width = mmq_tile_width(ubatch)
    return max(1.0, width * expected_tiles(ubatch, share, width) / (ubatch * share))


# MoE prefill on Vulkan, read in ggml-vulkan at 0c1e57098 (the stored llama.cpp copy, the modelled build):
# - ggml-vulkan.cpp ggml_vk_mul_mat_id_q_f16: a count_experts dispatch writes each expert's token count, then ONE
#   mul_mm_id dispatch (ggml_vk_matmul_id: workgroups {rows, nei1 = the micro-batch's tokens, n_as = the experts})
#   covers every expert; the tile is chosen once, against n_per_expert = CEIL_DIV(nei0 * nei1, n_as) — the micro-batch
#   × n_used / n_experts, the mean tokens an expert receives (matmul_id_tile_selector).
# - the selector's tile widths BN: with NV_coopmat2 (NVIDIA, Turing and later on a driver exposing it) the quant
#   mul_mat_id tiles are 128 × 64 (s, m) and 128 × 128 (l), l taken when n > 64, else 64 wide; without it (coopmat1
#   — AMD RDNA3+, Intel, an NVIDIA card run with KHR_coopmat — and the scalar shaders) 32 × 32 when n <= 32, 64 × 64
#   when n <= 64, else 128 × 128 (s/m/l_mmq_wg_denoms; the integer-dot K-quant l tile is 64 × 128, the same BN).
# - vulkan-shaders/mul_mm.comp: a workgroup whose column tile starts past its expert's count returns at once
#   ("if (ic * BN >= data_expert_count[expert_idx]) return;"); any other loads its whole BM × BK weight tile for every
#   K step and multiplies BN columns (coopmat1 skips the warps past the last real column, the weight tile is loaded
#   and dequantized whole): an expert with t tokens costs ceil(t / BN) full tiles, as ggml-cuda's MMQ tiles do.
# So the routed experts cost their FLOPs × BN·E[ceil(t/BN)] / E[t] at the dense rate, t ~ Binomial(micro-batch,
# n_used / n_experts). What the source shows beyond that and this leaves to one fitted share — the gather of each
# tile's row ids (mul_mm_id_funcs.glsl: a scan of the routing table per workgroup, or one hoisted table), the
# count_experts pass, the early-exit workgroups (micro-batch / BN per expert per row tile, most of them empty), the
# B rows read through row_ids instead of contiguously — is VULKAN_EXPERT_SHARE: the share of the dense rate the
# padded expert tiles run at, one constant for the backend, fitted on the moeprefill round's tuning tables
# (measurements/speed/held_out/moeprefill_queries.md; evidence/speed_fit_moe.py).
VULKAN_ID_TILE_SOURCE = "ggml-vulkan.cpp ggml_vk_mul_mat_id_q_f16 / matmul_id_tile_selector, mul_mm.comp (0c1e57098)"
VULKAN_EXPERT_SHARE = 1.0
# Not applied to plans: the moeprefill round's held-out tables (scored once, held_out/moeprefill_first_run.txt) read
# 92.3 % median |error| with the term (3 rows, 2 sources, +64 … +115 %: too fast) against 144.5 % by the dense formula
# — FAIL against the round's pass (<= 25 % on >= 4 rows from >= 2 sources), and too few rows to judge. The tuning rows
# read 22.2 % against 50.0 % but split by vendor: AMD's mostly too fast, the RTX 5090's too slow (the dense Vulkan rate
# already is there). evidence/speed_fit_moe.py scores the term as if applied; True prints the figure.
VULKAN_MOE_APPLIED = False
# why an Intel card on Vulkan gets neither a figure nor a range (session 22): the three collection rounds
# (measurements/speed/held_out/moeprefill_queries.md, moeprefill2_queries.md, moeprefill3_queries.md) found no MoE
# prompt table of a catalog Intel card that met their rule
INTEL_VULKAN_MOE_UNMEASURED = (" (three collection rounds found no public MoE prompt table of a catalog Intel card: "
                               "those held are of the Arc Pro B70, Arc B390 and Arc 140T, which the catalog lacks, of "
                               "two A770s at once, or with the experts on the CPU)")
VULKAN_MOE_DECLINED = (
    "ggml-vulkan multiplies each expert only by the tokens routed to it (mul_mm_id, one dispatch over every expert, "
    f"tiles padded to a width picked against the mean tokens an expert receives: {VULKAN_ID_TILE_SOURCE}); that padding "
    "priced from the source read 22.2 % median error on the tuning tables but 92.3 % on the held-out ones (+64 … +115 %, "
    "too fast; measurements/speed/held_out/moeprefill_first_run.txt), so no single figure is printed")


@dataclass(frozen=True)
class MoePrefillRange:
    """Where no MoE prompt figure passed its held-out round, the range a plan prints instead: ``low`` … ``high`` × the
    figure its cost model prices (``priced``), each end named by ``basis``; ``rows`` / ``sources``: the tuning rows
    (single GPU, no depth) whose measured ÷ priced ratios set the measured ends (evidence/speed_fit_moe.py)."""
    low: float
    high: float
    priced: str
    basis: str
    rows: int
    sources: int


# The ranges (session 20, rule measurements/speed/held_out/moeprefill2_queries.md), ratios measured ÷ priced read off
# the tuning rows by evidence/speed_fit_moe.range_ratios and rounded outward to 0.01 (test_moe_prefill_range checks
# them against the records):
# - Vulkan: priced with the padded mul_mm_id tiles (vulkan_expert_factor). The source picks the tile path by driver
#   (NV_coopmat2 on NVIDIA, coopmat1 / scalar elsewhere) and the rows split the same way: NVIDIA's all above the priced
#   figure (1.12 … 2.69, all on one card, the RTX 5090, whose dense Vulkan rate is already under-priced), AMD's
#   mostly below (0.46 … 1.27).
#   Both ends are measured. Intel on Vulkan has no MoE prompt row among the tuning records, so it gets no range: the
#   plan says the prompt is not predicted, unmeasured there (review20b: it took AMD's spread, worded as AMD's).
# - ROCm (the per-expert fallback, rocm_expert_mmq) and SYCL (one dequantize-and-GEMM per expert): priced by the dense
#   formula. The upper end is the source's: the per-expert GEMMs at the dense rate, nothing launch- or sync-bound
#   (1.0); the lower end is the slowest tuning row (ROCm 0.22: GLM-4.5-Air on the Radeon 8060S, the only declined
#   ROCm rows — one card, one model; SYCL 0.10: the one public run, an Arc Pro B60's Qwen3.6-35B-A3B, #22413).
MOE_PREFILL_RANGES = {
    ("vulkan", "nvidia"): MoePrefillRange(1.12, 2.69, "the padded mul_mm_id tiles (vulkan_expert_factor)",
                                          "measured spread of NVIDIA's Vulkan MoE prompt rows (one card, the RTX 5090)",
                                          13, 3),
    ("vulkan", "amd"): MoePrefillRange(0.46, 1.27, "the padded mul_mm_id tiles (vulkan_expert_factor)",
                                    "measured spread of AMD's Vulkan MoE prompt rows", 20, 9),
    ("rocm", ""): MoePrefillRange(0.22, 1.0, "the dense formula",
                                  "slowest tuning row (one card, one model) … the per-expert GEMMs at the dense rate",
                                  44, 4),
    ("sycl", ""): MoePrefillRange(0.10, 1.0, "the dense formula",
                                  "the one public run … the per-expert GEMMs at the dense rate", 1, 1),
}


def moe_prefill_range(backend: str | None, vendor: str | None) -> MoePrefillRange | None:
    """The range a plan prints for a MoE prompt on ``backend`` where it prints no figure (MOE_PREFILL_RANGES); None on
    a backend with none (CUDA's Volta fallback, Metal) and on Vulkan for a vendor with no MoE prompt row of its own
    (Intel's Arc / Iris Xe: each vendor's driver picks its own mul_mm_id path, so AMD's spread is not Intel's)."""
    return MOE_PREFILL_RANGES.get(moe_range_key(backend, vendor))


def moe_range_key(backend: str | None, vendor: str | None) -> tuple[str, str]:
    """A range's key: Vulkan's by the card's vendor, the other backends' by the backend alone."""
    return (backend or "", (vendor or "").lower() if backend == "vulkan" else "")


def moe_range_words(rng: MoePrefillRange, figure: float, backend: str) -> tuple[str, str]:
    """--explain's formula and value for a MoE prompt's range around its unvalidated ``figure`` (tokens/s)."""
    rows = f"{rng.rows} tuning row{'s' if rng.rows != 1 else ''} from {rng.sources} source{'s' if rng.sources != 1 else ''}"
    return (f"MoE prompt on {backend}, no figure validated: {figure:,.0f} tokens/s priced by {rng.priced} × "
            f"{rng.low:g} … {rng.high:g} ({rng.basis}; {rows}; unvalidated: the moeprefill2 and moeprefill3 rounds "
            "found no held-out rows)",
            f"{figure * rng.low:,.0f}–{figure * rng.high:,.0f} tokens/s (range)")


def expert_tile_words(backend: str | None) -> str:
    """--explain's words for the routed experts' tile factor on ``backend``, naming the source it is read from."""
    if backend == "vulkan":
        return (f"each expert's mul_mm_id tiles run whole for the few tokens routed to it, the tile width picked "
                f"against the mean tokens an expert receives ({VULKAN_ID_TILE_SOURCE}); no fitted constant")
    return "each expert's MMQ tiles run whole for the few tokens routed to it (ggml-cuda mmq.cuh mul_mat_q, 0c1e57098)"


def vulkan_id_tile_width(n_per_expert: int, coopmat2: bool) -> int:
    """The column tile BN ggml-vulkan's matmul_id_tile_selector picks for ``n_per_expert`` (the mean tokens an expert
    receives): coopmat2 64 / 128, otherwise 32 / 64 / 128 (the comment above has the lines)."""
    if coopmat2:
        return 128 if n_per_expert > 64 else 64
    return 32 if n_per_expert <= 32 else 64 if n_per_expert <= 64 else 128


def vulkan_expert_factor(n_experts: int, n_used: int, ubatch: int, coopmat2: bool,
                         share: float | None = None) -> float:
    """A routed expert matmul's cost on Vulkan as a multiple of its FLOPs at the dense rate: its padded tiles
    (BN·E[ceil(t/BN)] / E[t]) at VULKAN_EXPERT_SHARE (or ``share``) of that rate."""
    p = min(1.0, n_used / n_experts)
    width = vulkan_id_tile_width(math.ceil(ubatch * n_used / n_experts), coopmat2)
    padding = max(1.0, width * expected_tiles(ubatch, p, width) / (ubatch * p))
    return padding / (VULKAN_EXPERT_SHARE if share is None else share)


def _turing_or_later(compute_capability: str | None) -> bool:
    """Compute capability ≥ 7.5 (ggml-cuda's turing_mma_available); unknown counts as later (the catalog names a
    compute capability for every NVIDIA card it holds)."""
    if not compute_capability:
        return True
    major, _, minor = compute_capability.partition(".")
    try:
        return (int(major), int(minor or 0)) >= (7, 5)
    except ValueError:
        return True
