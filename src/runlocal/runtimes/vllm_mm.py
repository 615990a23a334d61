"""vLLM's start-up profile of a multimodal model's encoder: the Qwen-VL family (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).

What vLLM does (V1 engine; vllm/v1/worker/gpu_model_runner.py profile_run, vllm/v1/core/encoder_cache_manager.py):

* Before the text-only dummy forward, the encoder runs on dummy inputs of "the maximum feature size": the modality
  whose single item has the most tokens (get_mm_max_tokens_per_item), as many items as the encoder budget holds
  (one, for these models). The log says so: "Encoder cache will be initialized with a budget of 16384 tokens, and
  profiled with 1 image items of the maximum feature size" (Qwen2.5-VL-3B, issue #27706).
* The encoder budget and the encoder cache are max(max_num_batched_tokens, max tokens per item)
  (compute_mm_encoder_budget; encoder_cache_size defaults to it). The dummy outputs are kept in the encoder cache
  during the text dummy run and freed after it, so the profiled torch peak is
  max(encoder peak, encoder outputs + the text run's peak): the KV pool loses it.
* --limit-mm-per-prompt with every modality at 0: "Encoder cache will not be initialized" (the budget is 0, no
  encoder profile run). --mm-processor-kwargs '{"max_pixels": N}' shrinks the largest image, hence the item.
* The item: an image of the processor's max_pixels (Qwen2/2.5-VL preprocessor_config.json max_pixels 12,845,056 =
  16,384 tokens of 28×28 px; Qwen3-VL longest_edge 16,777,216 = 16,384 tokens of 32×32 px). Qwen2/2.5-VL also take
  video, whose dummy once filled the whole context: "{'image': 16384, 'video': 114688} are reserved for multi-modal
  embeddings" at max_model_len 128,000 (vllm PR #12604's log, Feb 2025: ⌊128,000 / 16,384⌋ = 7 frame pairs of
  max_pixels). Later releases cap the dummy video's frames (qwen2_vl.py get_num_frames_with_most_features,
  max_frames_per_video=_MAX_FRAMES_PER_VIDEO) and profile the image (#27706). Which release brought the cap was not
  read: this module assumes the uncapped video up to 0.9.x (the pre-hybrid V1 engine, which the refusal of
  issue #18124 — vLLM 0.8.5-era packages, Qwen2.5-VL-3B at 24 GiB on an A100 — falls in) and the image after.
* The encoder's peak, per patch (an estimate from the vision block's live tensors, not fitted: no log of the split
  was found): the dummy pixel values as the processor gives them (float32) plus their 16-bit copy, C × T × P² × 6 B,
  and the MLP of one block: the residual, its norm, the fused gate/up output and the activation,
  (2 × hidden + 3 × intermediate) × 2 B. Four patches (merge²) make one token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.spec import ModelSpec
from ..units import GiB

# preprocessor_config.json of the Hub checkpoints (Qwen/Qwen2.5-VL-*: "max_pixels": 12845056; Qwen/Qwen3-VL-*:
# "size": {"longest_edge": 16777216}); --mm-processor-kwargs max_pixels overrides it
QWEN2_VL_MAX_PIXELS = 12_845_056
QWEN3_VL_MAX_PIXELS = 16_777_216
PIXEL_BYTES = 4 + 2            # float32 pixel values from the processor + the 16-bit copy the patch embedding takes
ACT_BYTES = 2                  # 16-bit activations
VIDEO_FILLS_CONTEXT_ENGINES = ("v1-pre-hybrid",)   # assumed (see above): uncapped dummy video up to 0.9.x
ENCODER_ENGINES = ("v1-pre-hybrid", "v1", "v1-cudagraph")   # V1: the encoder runs in profile_run
# a smaller image a user can ask for: 1280 tokens, the Qwen2.5-VL model card's own example (max_pixels 1280 × 28 × 28)
SMALL_MAX_TOKENS = 1280


@dataclass(frozen=True)
class VisionTower:
    hidden: int
    intermediate: int
    depth: int
    patch: int
    temporal_patch: int
    merge: int
    out_hidden: int            # the text model's width: one encoder-cache token
    max_pixels: int
    video: bool                # takes video (its dummy may be the largest item)


@dataclass(frozen=True)
class EncoderProfile:
    modality: str
    tokens: int                # one item, in text-model tokens (the encoder budget when it exceeds the batch)
    patches: int
    activation: int            # the encoder's own peak
    cache: int                 # its outputs, held in the encoder cache through the text dummy run
    per_patch: int


def vision_tower(model: ModelSpec) -> VisionTower | None:
    """The Qwen-VL vision tower, read from the checkpoint's tensor shapes (patch_embed (hidden, C, T, P, P), the blocks'
    MLP, the merger's first layer hidden × merge²); None for a model without one."""
    by_name = {t.name: t for t in model.tensors if t.role in ("vision", "projector")}
    patch = next((t for n, t in by_name.items() if n.endswith("visual.patch_embed.proj.weight")), None)
    if patch is None or len(patch.shape) != 5:
        return None
    hidden, _, temporal, p, _ = patch.shape
    blocks = {n.split("blocks.")[1].split(".")[0] for n in by_name if ".visual.blocks." in n or n.startswith("visual.blocks.")}
    inter = next((t.shape[0] for n, t in by_name.items() if ".blocks.0.mlp." in n and n.endswith(("up_proj.weight",
                  "fc1.weight", "linear_fc1.weight")) and len(t.shape) == 2), 4 * hidden)
    merger = next((t for n, t in by_name.items() if n.endswith(("merger.mlp.0.weight", "merger.linear_fc1.weight"))
                   and "deepstack" not in n), None)
    merge = int(round((merger.shape[1] / hidden) ** 0.5)) if merger is not None else 2
    qwen3 = model.architecture.startswith("Qwen3")
    return VisionTower(hidden, inter, len(blocks), p, temporal, merge or 2, model.hidden_size,
                       QWEN3_VL_MAX_PIXELS if qwen3 else QWEN2_VL_MAX_PIXELS, video=not qwen3)


def image_tokens(v: VisionTower, max_pixels: int | None = None) -> int:
    """Tokens of the largest image: max_pixels / (patch × merge)² (smart_resize keeps the area under max_pixels)."""
    return (max_pixels or v.max_pixels) // (v.patch * v.merge) ** 2


def profiled_item(v: VisionTower, max_model_len: int, engine: str, max_pixels: int | None = None,
                  video_off: bool = False) -> tuple[str, int]:
    """(modality, tokens) of the item profile_run feeds the encoder."""
    image = image_tokens(v, max_pixels)
    if v.video and not video_off and engine in VIDEO_FILLS_CONTEXT_ENGINES:
        video = max_model_len // image * image      # whole frame pairs of max_pixels that fit the context
        if video > image:
            return "video", video
    return "image", image


def per_patch_bytes(v: VisionTower) -> int:
    pixels = 3 * v.temporal_patch * v.patch ** 2 * PIXEL_BYTES
    return pixels + (2 * v.hidden + 3 * v.intermediate) * ACT_BYTES


def encoder_profile(model: ModelSpec, max_model_len: int, engine: str, max_pixels: int | None = None,
                    limit_zero: bool = False, video_off: bool = False) -> EncoderProfile | None:
    """The encoder's share of vLLM's profiled peak, or None (no Qwen-VL tower, a V0 engine, or every modality
    limited to 0 by --limit-mm-per-prompt)."""
    v = vision_tower(model)
    if v is None or engine not in ENCODER_ENGINES or limit_zero:
        return None
    modality, tokens = profiled_item(v, max_model_len, engine, max_pixels, video_off)
    patches = tokens * v.merge ** 2
    each = per_patch_bytes(v)
    return EncoderProfile(modality, tokens, patches, patches * each, tokens * v.out_hidden * ACT_BYTES, each)


def profiled_peak(text_peak: int, enc: EncoderProfile | None) -> int:
    """profile_run's torch peak: the encoder run, then the text dummy run with the encoder outputs still cached."""
    if enc is None:
        return text_peak
    return max(enc.activation, enc.cache + text_peak)


def encoder_levers(model: ModelSpec, enc: EncoderProfile, text_peak: int, engine: str) -> list[str]:
    """The options that cut the encoder's share, each with the memory it gives back to the KV pool."""
    v = vision_tower(model)
    if v is None:
        return []
    now = profiled_peak(text_peak, enc)
    off = '{"image": 0, "video": 0}' if v.video else '{"image": 0}'
    out = [f"--limit-mm-per-prompt '{off}' (text only): +{(now - text_peak) / GiB:.2f} GiB of KV pool"]
    px = SMALL_MAX_TOKENS * (v.patch * v.merge) ** 2
    small = encoder_profile(model, 0, engine, max_pixels=px, video_off=True)   # images only: the context plays no part
    if small is not None and small.tokens < enc.tokens:
        freed = now - profiled_peak(text_peak, small)
        video = " and --limit-mm-per-prompt '{\"video\": 0}'" if v.video and engine in VIDEO_FILLS_CONTEXT_ENGINES else ""
        out.append(f"--mm-processor-kwargs '{{\"max_pixels\": {px}}}'{video} (images up to {SMALL_MAX_TOKENS} "
                   f"tokens): +{freed / GiB:.2f} GiB of KV pool")
    return out


def encoder_step(model: ModelSpec, enc: EncoderProfile | None, text_peak: int, peak: int, engine: str) -> tuple:
    """The --explain step of the encoder's profile run, with the options that cut it and what each gives back."""
    from .base import Step

    if enc is None:
        return ()
    v = vision_tower(model)
    assert v is not None
    levers = "; ".join(encoder_levers(model, enc, text_peak, engine))
    return (Step("multimodal encoder",
                 f"1 {enc.modality} item of {enc.tokens:,} tokens = {enc.patches:,} patches × {enc.per_patch:,} B "
                 f"(pixels 3 × {v.temporal_patch} × {v.patch}² × {PIXEL_BYTES} B + (2 × {v.hidden} + 3 × "
                 f"{v.intermediate}) × {ACT_BYTES} B); its outputs {enc.tokens:,} × {v.out_hidden} × {ACT_BYTES} B = "
                 f"{enc.cache:,} B stay in the encoder cache through the text run. To cut it: {levers}",
                 f"{enc.activation:,} B", "vllm/v1/worker/gpu_model_runner.py profile_run, "
                 "vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget (runtimes/vllm_mm.py)"),)
