"""ROCm MoE prompts on RDNA3/3.5/4: predicted only where ggml-cuda takes the one MMQ launch (hardware/backend_speed.py).

ggml-cuda (which a HIP build compiles: ggml-hip/CMakeLists.txt globs ../ggml-cuda/*.cu) multiplies a prompt's expert
matrices in one MMQ launch only where ggml_cuda_should_use_mmq(type, cc, ne11 = the micro-batch's tokens, n_experts)
is true; otherwise ggml_cuda_mul_mat_id copies the routing ids to the host and runs a gather, one matmul and a scatter
per expert. Its RDNA lines as each PR's diff writes them (ggml-org/ggml's sync commits of llama.cpp PRs #17156 b3166ace,
#17576 b96dffa0, #18537 803885a3, #18666 9ca3cfeb), and, for the era in between, Ollama's vendored mmq.cu:

  before #17576:  return (!GGML_CUDA_CC_IS_RDNA3(cc) && !GGML_CUDA_CC_IS_CDNA(cc)) || ne11 < MMQ_DP4A_MAX_BATCH_SIZE;  (64)
  #17156 (RDNA4): if (amd_wmma_available(cc)) { if (GGML_CUDA_CC_IS_RDNA4(cc)) { return true; } }
  #17576:         if (amd_wmma_available(cc)) { return true; }      (amd_wmma_available: RDNA4 || RDNA3; so Ollama
                  v0.13.3 / v0.13.5, b7349 / b7437)
  #18537:         if (GGML_CUDA_CC_IS_RDNA3(cc)) { if (n_experts >= 64) return true;
                    switch (type) { case Q2_K: case Q6_K: case IQ2_XS: case IQ2_S: return ne11 <= 128;
                                    default: return true; } }
                  return true;   // RDNA4
  #18666:           ... case Q2_K: return ne11 <= 128;
                        case Q6_K: return ne11 <= (GGML_CUDA_CC_IS_RDNA3_0(cc) ? 128 : 256);
                        case IQ2_XS: case IQ2_S: return GGML_CUDA_CC_IS_RDNA3_5(cc) || ne11 <= 128; ...

The "ne11 <= 128 || Q4_0/Q4_1/Q5_0/Q5_1, Q4_K/Q5_K up to 256" lines sit in the amd_mfma_available (CDNA) branch above
these in every one of those versions: they never decide for RDNA. A type outside mmq.cu's first switch (IQ1_M, TQ1_0,
TQ2_0) returns false before any vendor line. common.cuh: cc = the gfx name read as hex; RDNA3 = 0x1100,
RDNA3_5 = 0x1150, RDNA4 = 0x1200.
"""

from __future__ import annotations

from asking import ask

from runlocal.hardware.backend_speed import amd_wmma_family, expert_type, moe_prefill_gap, rocm_expert_mmq
from runlocal.hardware.catalog import find_device


def test_the_gfx_target_read_as_ggml_cuda_reads_it():
    # gfx1151 → 0x1151: at or above RDNA3_5 (0x1150), below RDNA4 (0x1200); gfx1100 → 0x1100 < 0x1150; gfx1201 ≥ 0x1200;
    # gfx1030 (RDNA2) < 0x1100 and gfx942 (CDNA3, 0x942) are outside amd_wmma_available
    assert [amd_wmma_family(g) for g in ("gfx1151", "gfx1100", "gfx1102", "gfx1201", "gfx1030", "gfx942", None)] == [
        "rdna3.5", "rdna3", "rdna3", "rdna4", None, None, None]
    # the catalog names the target: Strix Halo is gfx1151 (AMD's product page: 40 RDNA 3.5 CUs, gfx1151)
    assert find_device("8060s").gfx_target == "gfx1151" and find_device("rx 7900 xtx").gfx_target == "gfx1100"


def test_expert_type_from_the_file_name():
    assert [expert_type(q) for q in ("Q4_K_M", "Q4_K_XL", "Q6_K_XL", "Q8_K_XL", "Q4_0", "MXFP4", "IQ2_XXS")] == [
        "Q4_K", "Q4_K", "Q6_K", "Q8_0", "Q4_0", "MXFP4", "IQ2_XXS"]


def test_written_out_case_between_17576_and_18537():
    # gfx1151, 512-token micro-batch, GLM-4.5-Air's 128 experts, at b7423 (the strixhalo round's held-out 2025-12 rows:
    # after #17576, held by b7349; before #18537, which b7437's vendored copy lacks): amd_wmma_available → return true,
    # whatever the type or size → the one MMQ launch → predicted
    assert rocm_expert_mmq("gfx1151", "Q4_K_XL", 512, 128, 7423) is True
    assert moe_prefill_gap(128, "rocm", gfx_target="gfx1151", quant="Q4_K_XL", ubatch=512, build=7423) is None
    # 8 experts and Q6_K / Q2_K / IQ2_XS at 2048 tokens, on RDNA3.0, 3.5 and 4: still true in this era
    for gfx in ("gfx1100", "gfx1151", "gfx1201"):
        assert all(rocm_expert_mmq(gfx, q, 2048, 8, 7437) for q in ("Q6_K", "Q2_K", "IQ2_XS", "Q8_0"))
    # the kyuz0 b7423 rows ran 246-336 t/s, above every one of the 44 GLM-4.5-Air Q4_K_XL / Q6_K_XL rows of builds
    # 6181-7085 (69-173 t/s), which the pre-#17576 line (512 >= 64) sent to the fallback
    assert rocm_expert_mmq("gfx1151", "Q4_K_XL", 512, 128, 7085) is False


def test_rdna4_took_mmq_from_17156_before_rdna3():
    # b7209 (Ollama v0.13.2): #17156's RDNA4 branch, not #17576's; b6840 (v0.12.11) neither: RDNA4 at 512 tokens fell
    # back there like RDNA3; between the two builds the answer is unknown (None, not declined)
    assert rocm_expert_mmq("gfx1201", "Q4_K", 512, 8, 7209) is True and rocm_expert_mmq("gfx1100", "Q4_K", 512, 8, 7209) is False
    assert rocm_expert_mmq("gfx1201", "Q4_K", 512, 8, 6840) is False
    assert rocm_expert_mmq("gfx1201", "Q4_K", 512, 8, 7000) is None and rocm_expert_mmq("gfx1201", "Q4_K", 32, 8, 7000)


def test_18537_before_18666():
    # b7645 holds #18537 (PR #18666's table measures it against b7644) but not #18666: on RDNA3.5 Q6_K and IQ2_XS are
    # <= 128 there, like RDNA3.0; #18666 (held by b7847) raised Q6_K to 256 and freed IQ2_XS on RDNA3.5
    assert rocm_expert_mmq("gfx1151", "Q6_K", 256, 8, 7645) is False and rocm_expert_mmq("gfx1151", "Q6_K", 256, 8, 7847)
    assert rocm_expert_mmq("gfx1151", "IQ2_XS", 512, 8, 7645) is False and rocm_expert_mmq("gfx1151", "IQ2_XS", 512, 8, 7847)
    # RDNA3.0 reads the same under both; 64+ experts take MMQ under both
    assert rocm_expert_mmq("gfx1100", "Q6_K", 256, 8, 7645) is False and rocm_expert_mmq("gfx1100", "Q6_K", 256, 8, 7847) is False
    assert rocm_expert_mmq("gfx1151", "Q6_K", 512, 64, 7645) is True
    # b7700 lies between b7645 (without #18666) and b7847 (with it): where the two rules disagree, None (not declined);
    # where they agree, their answer. b7500 lies between b7437 (without #18537) and b7645: the same
    assert rocm_expert_mmq("gfx1151", "Q6_K", 256, 8, 7700) is None and rocm_expert_mmq("gfx1151", "Q2_K", 512, 8, 7700) is False
    assert rocm_expert_mmq("gfx1151", "Q6_K", 512, 8, 7500) is None and rocm_expert_mmq("gfx1151", "Q4_K", 512, 8, 7500) is True


def test_types_without_an_mmq_kernel_fall_back_in_every_era():
    # IQ1_M is not in mmq.cu's first switch: false before the vendor lines, even with 128 experts today
    assert rocm_expert_mmq("gfx1151", "IQ1_M", 512, 128) is False and rocm_expert_mmq("gfx1151", "IQ1_M", 512, 128, 7423) is False


def test_before_17576_every_type_falls_back_at_512():
    # b7034 (kyuz0's 2025-11 GLM-4.5-Air rows): ne11 = 512 >= 64 → false for every type, Q4_0 too; 32 tokens: true
    assert moe_prefill_gap(128, "rocm", gfx_target="gfx1151", quant="Q4_0", ubatch=512, build=7034)
    assert moe_prefill_gap(128, "rocm", gfx_target="gfx1151", quant="Q4_0", ubatch=32, build=7034) is None


def test_current_builds():
    # n_experts >= 64 → true on RDNA3 whatever the type; RDNA4 → true
    assert moe_prefill_gap(128, "rocm", gfx_target="gfx1151", quant="Q6_K", ubatch=512) is None
    assert moe_prefill_gap(8, "rocm", gfx_target="gfx1201", quant="Q6_K", ubatch=512) is None
    # 8 experts (Mixtral): Q6_K at 512 > 256 → false on RDNA3.5; 256 → true on 3.5, false on RDNA3.0 (gfx1100: <= 128)
    assert moe_prefill_gap(8, "rocm", gfx_target="gfx1151", quant="Q6_K", ubatch=512)
    assert rocm_expert_mmq("gfx1151", "Q6_K", 256, 8) is True and rocm_expert_mmq("gfx1100", "Q6_K", 256, 8) is False
    # IQ2_XS: RDNA3.5 always, RDNA3.0 only <= 128; Q4_K_M with 8 experts: default → true
    assert rocm_expert_mmq("gfx1151", "IQ2_XS", 512, 8) and not rocm_expert_mmq("gfx1100", "IQ2_XS", 512, 8)
    assert moe_prefill_gap(8, "rocm", gfx_target="gfx1151", quant="Q4_K_M", ubatch=512) is None


def test_outside_the_rule():
    # RDNA2 and CDNA (no amd_wmma), float experts, a dense model, and Vulkan's own reason stay as they were
    assert moe_prefill_gap(8, "rocm", gfx_target="gfx1030", quant="Q6_K", ubatch=512, build=7034) is None
    assert moe_prefill_gap(8, "rocm", gfx_target="gfx942", quant="Q6_K", ubatch=512, build=7034) is None
    assert moe_prefill_gap(128, "rocm", gfx_target="gfx1151", quant="BF16", ubatch=512, build=7034) is None
    assert moe_prefill_gap(0, "rocm", gfx_target="gfx1151", quant="Q6_K", ubatch=512, build=7034) is None
    assert "mul_mm_id" in (moe_prefill_gap(8, "vulkan", gfx_target="gfx1151", quant="Q4_0") or "")


def test_a_plan_declines_with_its_reason():
    # Mixtral 8x7B (8 experts) Q6_K on a Radeon 8060S under ROCm at the modelled build: no prefill figure, the reason in
    # the JSON; Qwen3-30B-A3B (128 experts) keeps its figure; a dense model too
    plan, _ = ask("runlocal check mixtral-8x7b --gpu 8060s --quant Q6_K --backend rocm")
    assert plan.speed["prefill_tokens_per_s"] is None
    assert "Q6_K experts on gfx1151" in plan.speed["prefill_not_predicted"]
    plan, _ = ask("runlocal check qwen3-30b-a3b --gpu 8060s --quant Q4_K_M --backend rocm")
    assert plan.speed["prefill_tokens_per_s"] and "prefill_not_predicted" not in plan.speed


def test_an_older_ollama_release_is_planned_at_its_own_build():
    # ollama/ollama v0.12.0 vendors llama.cpp e54d41bef (data/ollama_llama_cpp.json), older than 364a7a6d4, which
    # Ollama's commit c68f367ef titles "Update GGML to b6646": so at most b6646, before b7349, PR #17576's first build.
    # Its rule sends a 512-token batch (512 ≥ 64) of Mixtral's 8 Q4_K experts to the fallback, so no prefill figure; the
    # same file under v0.30.0 (llama-server at b9452, after #18537: 8 < 64 experts, Q4_K is the default case → MMQ)
    # keeps its figure.
    plan, _ = ask("runlocal check mixtral-8x7b --quant Q4_K_M --runtime ollama==0.12.0 --gpu 8060s --backend rocm")
    assert plan.speed["prefill_tokens_per_s"] is None
    assert "at llama.cpp b6646" in plan.speed["prefill_not_predicted"]
    build = next(s for s in plan.steps if s.label == "llama.cpp build")
    assert build.value == "b6646" and "e54d41bef" in build.formula and "Update GGML to b6646" in build.formula
    plan, _ = ask("runlocal check mixtral-8x7b --quant Q4_K_M --runtime ollama==0.30.0 --gpu 8060s --backend rocm")
    assert next(s for s in plan.steps if s.label == "llama.cpp build").value == "b9452"


def test_ollama_0_13_3_runs_the_rdna3_wmma_mmq_of_pr_17576():
    # v0.13.3 vendors 17f7f4baa. Its ml/backend/ggml/ggml/src/ggml-cuda/common.cuh reads
    #     static bool amd_wmma_available(const int cc) { return (GGML_CUDA_CC_IS_RDNA4(cc) || GGML_CUDA_CC_IS_RDNA3(cc)); }
    # where v0.13.2's (7f8ef50cc, "update to b7209") reads { return GGML_CUDA_CC_IS_RDNA4(cc); }: PR #17576 ("HIP:
    # enable WMMA-MMQ INT kernels for RDNA 3", first in b7349) is in it, so it is planned at b7349 at least, not at b7209.
    # Mixtral's Q4_0 experts on gfx1151 at 512 tokens: before #17576 the fallback (512 ≥ 64), after it MMQ (Q4_0 at any
    # size): v0.13.2 declines the prompt, v0.13.3 predicts it.
    old, _ = ask("runlocal check mixtral-8x7b --quant Q4_0 --runtime ollama==0.13.2 --gpu 8060s --backend rocm")
    new, _ = ask("runlocal check mixtral-8x7b --quant Q4_0 --runtime ollama==0.13.3 --gpu 8060s --backend rocm")
    assert old.speed["prefill_tokens_per_s"] is None and "at llama.cpp b7209" in old.speed["prefill_not_predicted"]
    assert new.speed["prefill_tokens_per_s"] and "prefill_not_predicted" not in new.speed
    step = next(s for s in new.steps if s.label == "llama.cpp build")
    assert step.value == "b7349" and "17f7f4baa" in step.formula and "#17576" in step.formula


def test_ollama_0_13_5_predicts_mixtral_q4_k_m():
    # v0.13.5 vendors ec98e2002 (b7437). Its ml/backend/ggml/ggml/src/ggml-cuda/mmq.cu reads, after the CDNA branch,
    #     if (amd_wmma_available(cc)) {
    #         return true;
    #     }
    # so Mixtral's 80 Q4_K and 16 Q6_K expert tensors on gfx1151 take MMQ at 512 tokens: the prompt is predicted. The
    # same file at today's build (#18666: Q6_K only up to 256 on RDNA3.5, 8 < 64 experts) is declined.
    plan, _ = ask("runlocal check mixtral-8x7b --quant Q4_K_M --runtime ollama==0.13.5 --gpu 8060s --backend rocm")
    assert next(s for s in plan.steps if s.label == "llama.cpp build").value == "b7437"
    assert plan.speed["prefill_tokens_per_s"] and "prefill_not_predicted" not in plan.speed
    plan, _ = ask("runlocal check mixtral-8x7b --quant Q4_K_M --gpu 8060s --backend rocm")
    assert plan.speed["prefill_tokens_per_s"] is None


def test_the_expert_tensors_own_types_decide():
    # llama-quantize's Q4_K_M gives ffn_down_exps Q6_K where use_more_bits(i, n) holds: i < n/8, i >= 7n/8, or
    # (i - n/8) % 3 == 2. Mixtral has n = 32 layers: 0-3 (4), 28-31 (4) and 6, 9, 12, 15, 18, 21, 24, 27 (8) = 16 layers'
    # down experts Q6_K; the other 16 down and all 32 gate and 32 up are Q4_K: 80 Q4_K and 16 Q6_K expert tensors.
    from runlocal.hardware.token_work import routed_expert_types
    from runlocal.model.catalog import lookup

    by_hand = [i for i in range(32) if i < 4 or i >= 28 or (i - 4) % 3 == 2]
    assert len(by_hand) == 16
    assert routed_expert_types(lookup("mixtral-8x7b"), "Q4_K_M") == {"Q4_K": 32 + 32 + 16, "Q6_K": 16}
    # at the current build on gfx1151 (RDNA3.5), 8 < 64 experts: Q4_K is the default case (MMQ), Q6_K only up to 256
    # tokens, so a 512-token batch of those 16 layers' down experts takes the fallback: the prompt is declined, and says
    # which type and how many tensors
    why = moe_prefill_gap(8, "rocm", gfx_target="gfx1151", quant="Q4_K_M", ubatch=512,
                          expert_types={"Q4_K": 80, "Q6_K": 16})
    assert why and "batch of Q6_K experts" in why and "80 Q4_K, 16 Q6_K" in why
    plan, _ = ask("runlocal check mixtral-8x7b --gpu 8060s --quant Q4_K_M --backend rocm")
    assert plan.speed["prefill_tokens_per_s"] is None and "16 Q6_K" in plan.speed["prefill_not_predicted"]
    # at 256 tokens (-ub 256) Q6_K is within RDNA3.5's limit: every expert type takes MMQ
    assert moe_prefill_gap(8, "rocm", gfx_target="gfx1151", quant="Q4_K_M", ubatch=256,
                           expert_types={"Q4_K": 80, "Q6_K": 16}) is None
    # Q4_0 types every expert Q4_0 (no use_more_bits for legacy types): predicted
    assert routed_expert_types(lookup("mixtral-8x7b"), "Q4_0") == {"Q4_0": 96}
    plan, _ = ask("runlocal check mixtral-8x7b --gpu 8060s --quant Q4_0 --backend rocm")
    assert plan.speed["prefill_tokens_per_s"]
