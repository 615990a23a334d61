"""vLLM V0's start-up profile of Mllama (0.6.2 – 0.10.2, runtimes/vllm_mllama.py): the vision encoder runs on
max_num_seqs dummy 4-tile images at once. Figures worked by hand from mllama.py (0.6.2 / 0.10.2) and checked against
vllm-project/vllm#9445: an A100 80 GB at --max-model-len 1024 on 0.6.3 ran out of memory with the default
--max-num-seqs (256) and started with --max-num-seqs 32."""

from __future__ import annotations

from runlocal.check import check
from runlocal.model.catalog import lookup
from runlocal.request import CheckRequest
from runlocal.runtimes.vllm_mllama import mllama_profile

# Llama-3.2-11B-Vision vision_config: image_size 560, patch_size 14, max_num_tiles 4, hidden_size 1280,
# intermediate_layers_indices [3, 7, 15, 23, 30]. Tokens per tile (560 / 14)² + 1 = 1,601, padded to a multiple of 8
# (num_padding_patches = (8 − 1,601 % 8) % 8 = 7) = 1,608; R = 4 × 1,608 = 6,432.
ROWS = 6432
# mask R² × 2 B = 82,741,248; intermediate layers as a list and stacked: 2 × 5 × 6,432 × 1,280 × 2 B = 164,659,200;
# MllamaVisionMLP's fc1 output in a global layer, held beside them: R × intermediate_size 5,120 × 2 B = 65,863,680
# (review23 finding 3; at TP 2 fc1, a ColumnParallelLinear, gives each rank 2,560 columns: 32,931,840)
PER_SEQ = 82_741_248 + 164_659_200 + 65_863_680          # 313,264,128 B = 298.8 MiB
REQUEST = dict(model="llama-3.2-11b-vision", gpu="a100-80gb", ctx=1024, use_measurements=False)


def test_the_vision_term_by_hand():
    p = mllama_profile(lookup("llama-3.2-11b-vision"), 256)
    assert p is not None and p.rows == ROWS and p.per_seq == PER_SEQ
    assert round(p.peak / 2**30, 1) == 74.7 and round(32 * PER_SEQ / 2**30, 1) == 9.3     # the module's figures
    assert mllama_profile(lookup("llama-3.2-11b-vision"), 256, tp=2).per_seq == 82_741_248 + 164_659_200 + 32_931_840
    assert mllama_profile(lookup("llama-3.1-8b"), 256) is None


def test_vllm_9445_default_seqs_do_not_start_32_do():
    """A100 80 GB, 0.6.3: budget 0.9 × 80 GiB = 72 GiB; weights 18.2 GiB + 256 × 298.8 MiB (74.7 GiB) leave nothing
    for the KV cache (vLLM V0: "No available memory for the cache blocks"); at 32 the term is 9.3 GiB.
    The fix offers the most sequences the lower bound allows, by hand: budget 0.9 × 85,899,345,920 = 77,309,411,328 B,
    less the BF16 checkpoint's 19,551,051,840 B, V0's 350 MiB non-torch (367,001,600 B) and one request's KV blocks
    (V0 needs max_model_len in blocks: 1,024 / 16 = 64 blocks × 16 × 131,072 B = 134,217,728 B) leaves 57,257,140,160 B,
    // 313,264,128 = 182 (the review's "about 181"). A lower bound's largest n is the least safe one: tight, not fits."""
    default = check(CheckRequest(runtime="vllm==0.6.3", **REQUEST))[0]
    assert default.verdict == "does_not_fit" and default.allocation.refusal
    assert default.allocation.devices[0].compute == 256 * PER_SEQ
    step = next(s for s in default.allocation.steps if s.label == "Mllama vision profile")
    assert step.value == f"{256 * PER_SEQ:,} B"
    fix = next(f for f in default.fixes if f.title.startswith("Lower --max-num-seqs to "))
    n = int(fix.title.rsplit(" ", 1)[1])
    assert n == 182 and f"--max-num-seqs {n}" in fix.command          # #9445's 32 lies within what is offered
    assert "verdict does not fit → tight" in fix.effect and "lower bound" in fix.effect
    started = check(CheckRequest(runtime="vllm==0.6.3", parallel=32, **REQUEST))[0]
    assert started.verdict == "fits" and started.allocation.devices[0].compute == 32 * PER_SEQ
    assert "--max-num-seqs 32" in started.command


def test_v1_releases_before_0_11_fall_back_to_v0_for_mllama():
    """0.8 – 0.10.2: arg_utils.py _is_v1_supported_oracle falls back to V0 (not is_v1_compatible), so the V0 profile
    and --max-num-seqs 256 apply there too; a text model stays on V1."""
    for release in ("vllm==0.8.5", "vllm==0.9.2", "vllm==0.10.2"):
        plan = check(CheckRequest(runtime=release, **REQUEST))[0]
        assert plan.allocation.devices[0].compute == 256 * PER_SEQ, release
        assert any("falls back to V0 for Mllama" in a for a in plan.allocation.assumptions), release
    text = check(CheckRequest(model="llama-3.1-8b", gpu="a100-80gb", ctx=1024, runtime="vllm==0.9.2",
                              use_measurements=False))[0]
    assert not any("falls back to V0" in a for a in text.allocation.assumptions)
