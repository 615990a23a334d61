"""vLLM's multimodal encoder profile (runtimes/vllm_mm.py), against vLLM's own log lines and hand computations.

Independent figures used: vllm PR #12604's log for Qwen2.5-VL at max_model_len 128,000 ("{'image': 16384, 'video':
114688} are reserved for multi-modal embeddings"); issue #27706's "Encoder cache will be initialized with a budget of
16384 tokens" (Qwen2.5-VL-3B); the checkpoints' config.json vision_config (catalog data, not the tensor shapes the
module reads); and the frame arithmetic of qwen2_vl.py worked out by hand below.
"""
from __future__ import annotations

import json
from importlib.resources import files

from runlocal.check import CheckRequest, check
from runlocal.model.catalog import lookup
from runlocal.runtimes.vllm_mm import (
    encoder_profile,
    image_tokens,
    per_patch_bytes,
    profiled_item,
    video_tokens,
    vision_tower,
)

QWEN25_VL_3B = lookup("qwen2.5-vl-3b")
QWEN3_VL_8B = lookup("qwen3-vl-8b")


def _vision_config(alias: str) -> dict:
    models = json.loads(files("runlocal.data").joinpath("models.json").read_text())["models"]
    return next(m for m in models if m["alias"] == alias)["config"]["vision_config"]


def test_tower_read_from_tensor_shapes_matches_config_json():
    cfg = _vision_config("qwen2.5-vl-3b")
    v = vision_tower(QWEN25_VL_3B)
    assert v is not None
    assert (v.depth, v.hidden, v.intermediate, v.patch, v.temporal_patch, v.merge, v.out_hidden) == (
        cfg["depth"], cfg["hidden_size"], cfg["intermediate_size"], cfg["patch_size"], cfg["temporal_patch_size"],
        cfg["spatial_merge_size"], cfg["out_hidden_size"])
    cfg3 = _vision_config("qwen3-vl-8b")
    v3 = vision_tower(QWEN3_VL_8B)
    assert v3 is not None and (v3.depth, v3.hidden, v3.patch, v3.merge) == (
        cfg3["depth"], cfg3["hidden_size"], cfg3["patch_size"], cfg3["spatial_merge_size"])


def test_text_only_model_has_no_encoder_profile():
    assert encoder_profile(lookup("llama-3.1-8b"), 8192, "v1-cudagraph", 8192, 1024) is None


def test_largest_image_is_16384_tokens_as_logged():
    # #27706 / #12604: 16,384 image tokens; by hand 12,845,056 px / (14 × 2)² = 16,384 and 16,777,216 / (16 × 2)² = 16,384
    v, v3 = vision_tower(QWEN25_VL_3B), vision_tower(QWEN3_VL_8B)
    assert v is not None and v3 is not None
    assert image_tokens(v) == 16_384 == image_tokens(v3)


def test_video_at_128k_matches_pr_12604_log():
    v = vision_tower(QWEN25_VL_3B)
    assert v is not None
    # 14 frames (the cap from 0.11) = 7 temporal pairs × 16,384 = 114,688 ≤ 128,000; the log's figure
    assert video_tokens(v, 128_000, (0, 11, 0)) == 114_688
    assert profiled_item(v, 128_000, 8192, (0, 33, 0)) == ("video", 114_688, 114_688)


def test_video_before_0_11_is_built_at_the_batch():
    v = vision_tower(QWEN25_VL_3B)
    assert v is not None
    # 0.8.5: counted at max_model_len less one image: 128,000 − 16,384 = 111,616 holds 12 frames (6 pairs = 98,304;
    # 13 frames pad to 14 = 114,688 > 111,616); built at max_num_batched_tokens 8192: no pair fits, so 1 frame,
    # padded to a pair = 16,384 tokens
    assert profiled_item(v, 128_000, 8192, (0, 8, 5)) == ("video", 16_384, 98_304)


def test_per_patch_bytes_by_hand():
    v = vision_tower(QWEN25_VL_3B)
    assert v is not None
    # pixels 3 × 2 × 14² × (4 + 2) B = 7,056; MLP (2 × 1280 + 3 × 3420) × 2 B = 25,640
    assert per_patch_bytes(v) == 7_056 + 25_640


def test_profile_item_count_and_cache():
    # current release, 128,000 context, batch 8192: one 114,688-token video = 458,752 patches; the outputs
    # 114,688 × 2048 × 2 B stay cached
    enc = encoder_profile(QWEN25_VL_3B, 128_000, "v1-cudagraph", 8192, 1024)
    assert enc is not None
    assert (enc.items, enc.patches, enc.cache, enc.budget) == (1, 458_752, 114_688 * 2048 * 2, 114_688)
    # a batch of 32,768 with images only (max_model_len 16,384: the video is one pair, no larger than the image):
    # ⌊32,768 / 16,384⌋ = 2 items
    two = encoder_profile(QWEN25_VL_3B, 16_384, "v1-cudagraph", 32_768, 1024)
    assert two is not None and two.items == 2 and two.modality == "image"


def test_issue_18124_refused_at_current_release_and_explained():
    # the posted outcome (vllm#18124): vllm serve Qwen/Qwen2.5-VL-3B-Instruct --gpu-memory-utilization 0.3 on an
    # A100 80GB was refused
    plan, _ = check(CheckRequest(model="qwen2.5-vl-3b", gpu="a100-sxm-80gb", runtime="vllm",
                                 gpu_memory_utilization=0.3, use_measurements=False))
    assert plan.allocation.refusal
    step = next(s for s in plan.allocation.steps if s.label == "multimodal encoder")
    assert "458,752 patches" in step.formula and "--limit-mm-per-prompt" in step.formula


def test_a100_serve_limits_by_release():
    from runlocal.runtimes.vllm import serve_limits
    from runlocal.units import GiB

    # vllm/engine/arg_utils.py: 0.8.5 gives every GPU of ≥ 70 GiB 8192 batched tokens and 1024 sequences;
    # 0.9.2 (PR #17885) leaves an A100 at 2048 / 256
    assert serve_limits(80 * GiB, "NVIDIA A100 SXM 80GB", (0, 8, 5)) == (8192, 1024)
    assert serve_limits(80 * GiB, "NVIDIA A100 SXM 80GB", (0, 9, 2)) == (2048, 256)
    assert serve_limits(80 * GiB, "NVIDIA A100 SXM 80GB") == (2048, 256)
    assert serve_limits(80 * GiB, "NVIDIA H100 80GB HBM3", (0, 8, 5)) == (8192, 1024)


def test_plain_mlp_tower_per_patch_by_hand():
    v = vision_tower(QWEN3_VL_8B)
    assert v is not None and not v.gated
    # Qwen3-VL: linear_fc1 → GELU → linear_fc2; pixels 3 × 2 × 16² × 6 B = 9,216; MLP (2 × 1152 + 2 × 4304) × 2 B
    assert per_patch_bytes(v) == 9_216 + (2 * 1152 + 2 * 4304) * 2


def test_tensor_parallel_splits_the_mlp_only():
    v = vision_tower(QWEN25_VL_3B)
    assert v is not None
    # TP 2: 7,056 B of pixels stay whole; (2 × 1280 + 3 × 3420 / 2) × 2 B = 5,120 + 10,260
    assert per_patch_bytes(v, 2) == 7_056 + 5_120 + 10_260
