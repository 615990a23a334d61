"""vLLM's V0 start-up profile of Mllama (Llama 3.2 Vision), 0.6.2 – 0.10.2: the vision encoder on max_num_seqs images.

Read in the sdists (0.6.2 and 0.10.2; measurements/vllm_gone/README.md, "Read beside it"):

* Every release that serves Mllama runs it on V0: the default engine up to 0.7.x, and 0.8 – 0.10.2 fall back to V0
  for a model that is not ``is_v1_compatible`` (an encoder-decoder; vllm/engine/arg_utils.py
  ``_is_v1_supported_oracle``, 0.10.2 :1480: "['MllamaForConditionalGeneration'] is not supported by the V1 Engine.
  Falling back to V0."), with --max-num-seqs 256 by default (0.6.2 arg_utils.py :115; 0.10.2 ``_set_default_args_v0``
  :1613). From 0.11.0 vLLM no longer serves it (runtimes/arch_support.py).
* V0's ``EncoderDecoderModelRunner.profile_run`` (vllm/worker/enc_dec_model_runner.py; 0.6.2 :300, 0.10.2 :316) builds
  max_num_seqs dummy sequences, each with its own encoder dummy data: one 1024 × 1024 image (mllama.py
  ``dummy_image``), which the processor tiles into the most tiles, max_num_tiles (4) of image_size (560) px; so the
  vision encoder runs on max_num_seqs images in one batch.
* Per image, in mllama.py's MllamaVisionModel (0.6.2 :165 / :495–:590, 0.10.2 :350 / :748–:773): the tokens per tile,
  (image_size / patch_size)² + 1 class token, padded to a multiple of 8 (``num_padding_patches``): 1,601 → 1,608, so
  R = max_num_tiles × 1,608 = 6,432 rows; the 4D mask ``_prepare_aspect_ratio_attention_mask`` of R² in the vision
  dtype (bf16) = 78.9 MiB, live through both encoders; the intermediate layers' outputs (len(intermediate_layers_indices)
  = 5 of R × hidden), kept as a list and then ``torch.stack``-ed beside it: 2 × 5 × 6,432 × 1,280 × 2 B = 157.0 MiB;
  and, in every global-encoder layer while those are held (``output`` keeps the list, the stacked copy and the mask
  are passed on), MllamaVisionMLP's fc1 output, R × intermediate_size (5,120) × 2 B = 62.8 MiB (fc1 is a
  ColumnParallelLinear: intermediate_size / TP columns a rank; review23 finding 3). Together at least 298.7 MiB per
  sequence — a lower bound (hidden states, the mask's build, the activation's output beside fc1's, the attention's
  buffers are left out): 74.7 GiB at 256 sequences, 9.3 at 32.
* The public outcomes agree: an A100 80 GB at --max-model-len 1024 on 0.6.3 ran out of memory and started with
  --max-num-seqs 32 (vllm-project/vllm#9445); the maintainer's advice max_num_seqs=16 after an OOM "in
  self.vision_model" (vllm-project/vllm#8879).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.spec import ModelSpec
from ..units import GiB, MiB
from .published import catalog_vision_config

MLLAMA = "MllamaForConditionalGeneration"
MASK_BYTES = 2                  # the vision dtype (layernorm_pre.weight.dtype: bf16)
ACT_BYTES = 2
PATCH_PAD = 8                   # num_padding_patches = (8 - (n % 8)) % 8
V0_FALLBACK_UNTIL = (0, 11)     # 0.8 – 0.10.2: V1 falls back to V0 for Mllama; 0.11.0 on: not served


@dataclass(frozen=True)
class MllamaProfile:
    rows: int                   # R = max_num_tiles × padded tokens per tile
    hidden: int
    layers_kept: int            # len(intermediate_layers_indices)
    num_seqs: int
    intermediate: int = 0       # vision_config intermediate_size: the MLP's fc1 output width
    tp: int = 1                 # fc1 is column-parallel: intermediate / TP columns on each rank

    @property
    def mlp_width(self) -> int:
        return self.intermediate // max(1, self.tp)

    @property
    def per_seq(self) -> int:
        """The mask (R² × 2 B), the intermediate layers as a list and stacked (2 × R × hidden × n × 2 B) and the
        global layers' fc1 output held beside them (R × intermediate / TP × 2 B)."""
        return (self.rows ** 2 * MASK_BYTES + 2 * self.rows * self.hidden * self.layers_kept * ACT_BYTES
                + self.rows * self.mlp_width * ACT_BYTES)

    @property
    def peak(self) -> int:
        return self.num_seqs * self.per_seq

    def formula(self) -> str:
        return (f"{self.num_seqs} dummy sequences × one image of {self.rows:,} rows (mask {self.rows:,}² × {MASK_BYTES} B "
                f"+ 2 × {self.layers_kept} intermediate layers × {self.rows:,} × {self.hidden} × {ACT_BYTES} B "
                f"+ MLP fc1 {self.rows:,} × {self.mlp_width:,} × {ACT_BYTES} B = {self.per_seq / MiB:.1f} MiB)")


def mllama_profile(model: ModelSpec, num_seqs: int, tp: int = 1) -> MllamaProfile | None:
    """The V0 profile's vision-encoder term for an Mllama model (the catalog's vision_config) on one of ``tp`` ranks,
    or None."""
    if model.architecture != MLLAMA:
        return None
    vc = catalog_vision_config(model)
    if vc is None:
        return None
    per_tile = (int(vc["image_size"]) // int(vc["patch_size"])) ** 2 + 1
    padded = per_tile + (PATCH_PAD - per_tile % PATCH_PAD) % PATCH_PAD
    return MllamaProfile(int(vc["max_num_tiles"]) * padded, int(vc["hidden_size"]),
                         len(vc["intermediate_layers_indices"]), num_seqs, int(vc["intermediate_size"]), tp)


def profile_words(p: MllamaProfile) -> str:
    return (f"vLLM V0 profiles Mllama's vision encoder on {p.num_seqs} dummy images of {p.rows:,} rows at once: at least "
            f"{p.peak / GiB:.2f} GiB ({p.per_seq / MiB:.1f} MiB a sequence; --max-num-seqs lowers it; vllm#9445)")


__all__ = ["MLLAMA", "V0_FALLBACK_UNTIL", "MllamaProfile", "mllama_profile", "profile_words"]
