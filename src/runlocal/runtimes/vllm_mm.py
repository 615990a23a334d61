"""vLLM's start-up profile of a multimodal model's encoder: the Qwen-VL family (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).

Read in the released wheels (vllm/v1/worker/gpu_model_runner.py profile_run, vllm/v1/core/encoder_cache_manager.py,
vllm/model_executor/models/qwen2_vl.py; 0.8.5, 0.9.2, 0.10.1.1, 0.10.2, 0.11.0, 0.12.0, 0.33.0):

* Before the text-only dummy forward, every V1 release runs the encoder on dummy items of "the maximum feature
  size" and keeps the outputs in the encoder cache through the text dummy run (freed after it), so the profiled
  torch peak is max(encoder peak, encoder outputs + the text run's peak): the KV pool loses it. The log says so:
  "Encoder cache will be initialized with a budget of N tokens, and profiled with K <modality> items of the maximum
  feature size."
* The modality profiled is the one whose item has the most tokens at max_model_len (get_mm_max_tokens_per_item with
  seq_len = max_model_len). Encoder budget = encoder cache = max(max_num_batched_tokens, those tokens)
  (compute_encoder_budget; --limit-mm-per-prompt with every modality 0: "Encoder cache will not be initialized", no
  encoder run). Items: ⌈budget / tokens⌉ up to 0.9.x, ⌊budget / tokens⌋ from 0.10 (MultiModalBudget.get_max_items),
  at least one, at most max_num_seqs — one whenever the item is larger than the batch.
* The item is built (get_decoder_dummy_data / get_dummy_mm_inputs) at seq_len = max_num_batched_tokens up to 0.10.x
  and at seq_len = max_model_len from 0.11.0 (0.11.0, 0.12.0, 0.33.0). An image is always the largest the processor
  allows (max_pixels: Qwen2/2.5-VL preprocessor_config.json 12,845,056 = 16,384 tokens of 28×28 px; Qwen3-VL
  longest_edge 16,777,216 = 16,384 tokens of 32×32 px); a Qwen2/2.5-VL video is as many frames of that size as seq_len
  holds (two frames make one temporal patch: ⌈frames / 2⌉ × 16,384 tokens), at least 1, at most
  _MAX_FRAMES_PER_VIDEO (16 up to 0.10.x, 14 from 0.11.0). So at max_model_len 128,000 a Qwen2.5-VL video of 14 frames,
  114,688 tokens, is encoded from 0.11.0 on; up to 0.10.x one frame pair (16,384 tokens) with the default batch.
  Qwen3-VL's dummy video is 2 frames of the video processor's longest_edge / 2 (0.33.0 qwen3_vl.py): assumed below the
  image (the video processor's size was not read), so the image is profiled.
* --skip-mm-profiling (MultiModalConfig.skip_mm_profiling) skips the encoder run: in 0.10.1.1, not in 0.9.2.
  --mm-processor-kwargs '{"max_pixels": N}' shrinks the largest image (and video frame), hence the item.
* The encoder's peak, per patch (an estimate from the vision block's live tensors, not fitted: no log of the split
  was found): the dummy pixel values as the processor gives them (float32) plus their 16-bit copy, C × T × P² × 6 B,
  and the MLP of one block: the residual, its norm, the fused gate/up output and the activation,
  (2 × hidden + 3 × intermediate) × 2 B (a plain fc1 / GELU MLP, Qwen3-VL's: 2 × intermediate). merge² patches make one
  token. Qwen3.5 / 3.6 take Qwen3-VL's processing (vLLM 0.33.0 qwen3_5.py: Qwen3_5ProcessingInfo(Qwen3VLProcessingInfo));
  their image processor's longest_edge is assumed to be Qwen3-VL's (not read).
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
ENCODER_ENGINES = ("v1-pre-hybrid", "v1", "v1-cudagraph")   # V1: the encoder runs in profile_run
ITEM_AT_MAX_MODEL_LEN_FROM = (0, 11)     # the dummy item is built at max_model_len (before: max_num_batched_tokens)
FLOOR_ITEMS_FROM = (0, 10)               # ⌊budget / tokens⌋ items (before: ⌈budget / tokens⌉)
VIDEO_LESS_IMAGE_UNTIL = (0, 10, 2)      # up to 0.10.1.1 the video's frames fit seq_len less one image (0.10.2: not)
SKIP_MM_PROFILING_FROM = (0, 10, 1)      # --skip-mm-profiling: in the 0.10.1.1 wheel, not in 0.9.2 (0.10.0 not read)
CURRENT = (99,)                          # the current release (runtimes/versions.py plans it when none is named)


def max_frames(release: tuple[int, ...]) -> int:
    """qwen2_vl.py _MAX_FRAMES_PER_VIDEO: 16 in 0.8.5–0.10.2, 14 in 0.11.0–0.33.0."""
    return 14 if release >= ITEM_AT_MAX_MODEL_LEN_FROM else 16
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
    gated: bool = True         # a gated MLP (Qwen2.5-VL: gate/up then SiLU × up) or a plain one (fc1, GELU: Qwen3-VL)


@dataclass(frozen=True)
class EncoderProfile:
    modality: str
    tokens: int                # one item as built, in text-model tokens
    patches: int
    activation: int            # the encoder's own peak
    cache: int                 # its outputs, held in the encoder cache through the text dummy run
    per_patch: int
    items: int = 1
    budget: int = 0            # the encoder budget / cache size, in tokens


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
    gated = any(".blocks.0.mlp.gate" in n for n in by_name)
    return VisionTower(hidden, inter, len(blocks), p, temporal, merge or 2, model.hidden_size,
                       QWEN3_VL_MAX_PIXELS if qwen3 else QWEN2_VL_MAX_PIXELS, video=not qwen3, gated=gated)


def image_tokens(v: VisionTower, max_pixels: int | None = None) -> int:
    """Tokens of the largest image: max_pixels / (patch × merge)² (smart_resize keeps the area under max_pixels)."""
    return (max_pixels or v.max_pixels) // (v.patch * v.merge) ** 2


def video_tokens(v: VisionTower, seq_len: int, release: tuple[int, ...], max_pixels: int | None = None) -> int:
    """A Qwen2/2.5-VL dummy video: the most frames of the largest size whose tokens fit seq_len (_get_max_video_frames),
    at least 1, at most max_frames; frames are padded to whole temporal patches of two."""
    per_pair = image_tokens(v, max_pixels)
    frames = 0
    while -(-(frames + 1) // v.temporal_patch) * per_pair <= seq_len:
        frames += 1
    frames = max(1, min(frames, max_frames(release)))
    return -(-frames // v.temporal_patch) * per_pair


def profiled_item(v: VisionTower, max_model_len: int, batched: int, release: tuple[int, ...],
                  max_pixels: int | None = None, video_off: bool = False) -> tuple[str, int, int]:
    """(modality, tokens of the item built, tokens it counts for at max_model_len) that profile_run encodes."""
    image = image_tokens(v, max_pixels)
    if not v.video or video_off:
        return "image", image, image
    # the count at max_model_len: with images allowed too, up to 0.10.1.1 one image's tokens are taken off first
    room = max_model_len - image if release < VIDEO_LESS_IMAGE_UNTIL else max_model_len
    largest = video_tokens(v, room, release, max_pixels)
    if largest <= image:
        return "image", image, image
    built_at = max_model_len if release >= ITEM_AT_MAX_MODEL_LEN_FROM else batched
    return "video", video_tokens(v, built_at, release, max_pixels), largest


def per_patch_bytes(v: VisionTower, tp: int = 1) -> int:
    """One patch's share of the encoder peak on one rank: the MLP's intermediate is split over TP
    (mm_encoder_tp_mode "weights", the default: MergedColumnParallelLinear / RowParallelLinear in qwen2_5_vl.py)."""
    pixels = 3 * v.temporal_patch * v.patch ** 2 * PIXEL_BYTES
    return pixels + (2 * v.hidden + (3 if v.gated else 2) * v.intermediate // max(1, tp)) * ACT_BYTES


def encoder_profile(model: ModelSpec, max_model_len: int, engine: str, batched: int, num_seqs: int,
                    release: tuple[int, ...] | None = None, max_pixels: int | None = None,
                    video_off: bool = False, tp: int = 1) -> EncoderProfile | None:
    """The encoder's share of vLLM's profiled peak, or None (no Qwen-VL tower, or a V0 engine)."""
    v = vision_tower(model)
    if v is None or engine not in ENCODER_ENGINES:
        return None
    rel = release or CURRENT
    modality, tokens, counted = profiled_item(v, max_model_len, batched, rel, max_pixels, video_off)
    budget = max(batched, counted)
    items = budget // counted if rel >= FLOOR_ITEMS_FROM else -(-budget // counted)
    items = max(1, min(items, num_seqs))
    patches = items * tokens * v.merge ** 2
    each = per_patch_bytes(v, tp)
    return EncoderProfile(modality, tokens, patches, patches * each, items * tokens * v.out_hidden * ACT_BYTES, each,
                          items, budget)


def profiled_peak(text_peak: int, enc: EncoderProfile | None) -> int:
    """profile_run's torch peak: the encoder run, then the text dummy run with the encoder outputs still cached."""
    if enc is None:
        return text_peak
    return max(enc.activation, enc.cache + text_peak)


def encoder_note(enc: EncoderProfile | None, text_peak: int, peak: int) -> str:
    """The words a refusal adds where the encoder's profile run raised the peak: how much, and the options."""
    if enc is None or peak <= text_peak:
        return ""
    return (f"; the multimodal encoder's start-up profile ({enc.items} dummy {enc.modality} of {enc.tokens:,} tokens) "
            f"holds {(peak - text_peak) / GiB:.2f} GiB of it: --limit-mm-per-prompt, --mm-processor-kwargs max_pixels "
            "or a shorter --max-model-len give it back (--explain)")


@dataclass(frozen=True)
class ProfileInputs:
    """What the encoder's profile run depends on besides the model."""

    max_model_len: int
    engine: str
    batched: int
    num_seqs: int
    release: tuple[int, ...] | None = None
    tp: int = 1


def encoder_levers(model: ModelSpec, enc: EncoderProfile, text_peak: int, p: ProfileInputs) -> list[str]:
    """The options that cut the encoder's share, each with the memory it gives back to the KV pool."""
    v = vision_tower(model)
    if v is None:
        return []
    now = profiled_peak(text_peak, enc)
    off = '{"image": 0, "video": 0}' if v.video else '{"image": 0}'
    whole = f"+{(now - text_peak) / GiB:.2f} GiB of KV pool"
    out = [f"--limit-mm-per-prompt '{off}' (text only): {whole}"]
    if (p.release or CURRENT) >= SKIP_MM_PROFILING_FROM:
        out.append(f"--skip-mm-profiling (images still served; their encoder memory is then not reserved): {whole}")

    def gain(max_pixels: int | None = None, video_off: bool = False) -> EncoderProfile | None:
        return encoder_profile(model, p.max_model_len, p.engine, p.batched, p.num_seqs, p.release, max_pixels,
                               video_off, p.tp)

    if enc.modality == "video" and (images := gain(video_off=True)) is not None and \
            profiled_peak(text_peak, images) < now:
        out.append(f"--limit-mm-per-prompt '{{\"video\": 0}}' (images only, {images.tokens:,} tokens each): "
                   f"+{(now - profiled_peak(text_peak, images)) / GiB:.2f} GiB of KV pool")
    px = SMALL_MAX_TOKENS * (v.patch * v.merge) ** 2
    small = gain(max_pixels=px, video_off=True)
    if small is not None and small.tokens < enc.tokens:
        video = " and --limit-mm-per-prompt '{\"video\": 0}'" if enc.modality == "video" else ""
        out.append(f"--mm-processor-kwargs '{{\"max_pixels\": {px}}}'{video} (images up to {SMALL_MAX_TOKENS:,} "
                   f"tokens): +{(now - profiled_peak(text_peak, small)) / GiB:.2f} GiB of KV pool")
    return out


def encoder_step(model: ModelSpec, enc: EncoderProfile | None, text_peak: int, p: ProfileInputs | None) -> tuple:
    """The --explain step of the encoder's profile run, with the options that cut it and what each gives back."""
    from .base import Step

    v = vision_tower(model)
    if enc is None or v is None or p is None:
        return ()
    levers = "; ".join(encoder_levers(model, enc, text_peak, p))
    built = ("max_model_len" if (p.release or CURRENT) >= ITEM_AT_MAX_MODEL_LEN_FROM else "max_num_batched_tokens")
    return (Step("multimodal encoder",
                 f"{enc.items} {enc.modality} item(s) of {enc.tokens:,} tokens (built at {built}; encoder budget "
                 f"{enc.budget:,}) = {enc.patches:,} patches × {enc.per_patch:,} B (pixels 3 × {v.temporal_patch} × "
                 f"{v.patch}² × {PIXEL_BYTES} B + (2 × {v.hidden} + {3 if v.gated else 2} × {v.intermediate}"
                 + (f" / TP {p.tp}" if p.tp > 1 else "") + ") × "
                 f"{ACT_BYTES} B); the "
                 f"outputs, {enc.items} × {enc.tokens:,} × {v.out_hidden} × {ACT_BYTES} B = {enc.cache:,} B, stay in "
                 f"the encoder cache through the text run. To cut it: {levers}",
                 f"{enc.activation:,} B", "vllm/v1/worker/gpu_model_runner.py profile_run, "
                 "vllm/v1/core/encoder_cache_manager.py compute_encoder_budget (runtimes/vllm_mm.py)"),)
