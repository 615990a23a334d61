"""Vision towers and multimodal projectors (role "vision" / "projector", counted apart by
ModelSpec.vision_params), as transformers 5.23 builds them."""

from __future__ import annotations

from .access import _Cfg
from .blocks import _Tensors

# ------------------------------------------------------------------------------------------------
# vision towers and projectors (role "vision" / "projector", counted apart by ModelSpec.vision_params)

def _vit_layer(t: _Tensors, q: str, h: int, ff: int, *, attn: str, out: str, fc: tuple[str, str],
               norms: tuple[str, str], qkv_bias: bool, norm_bias: bool = True) -> None:
    for x in ("q_proj", "k_proj", "v_proj"):
        t.linear(f"{q}{attn}.{x}", h, h, "vision", None, qkv_bias)
    t.linear(f"{q}{attn}.{out}", h, h, "vision", None, qkv_bias)
    t.linear(f"{q}mlp.{fc[0]}", ff, h, "vision", None, True)
    t.linear(f"{q}mlp.{fc[1]}", h, ff, "vision", None, True)
    for n in norms:
        t.norm(q + n, h, bias=norm_bias, role="vision")


def _siglip(v: _Cfg, t: _Tensors, p: str) -> int:
    h, ff, patch, ch = v.h, v.int("intermediate_size"), v.int("patch_size"), v.int("num_channels")
    t.add(p + "embeddings.patch_embedding.weight", (h, ch, patch, patch), "vision")
    t.add(p + "embeddings.patch_embedding.bias", (h,), "vision")
    t.add(p + "embeddings.position_embedding.weight", ((v.int("image_size") // patch) ** 2, h), "vision")
    for j in range(v.n_layers):
        _vit_layer(t, f"{p}encoder.layers.{j}.", h, ff, attn="self_attn", out="out_proj", fc=("fc1", "fc2"),
                   norms=("layer_norm1", "layer_norm2"), qkv_bias=True)
    t.norm(p + "post_layernorm", h, bias=True, role="vision")
    if v.flag("vision_use_head", True):
        t.add(p + "head.probe", (1, 1, h), "vision")
        t.add(p + "head.attention.in_proj_weight", (3 * h, h), "vision")
        t.add(p + "head.attention.in_proj_bias", (3 * h,), "vision")
        t.linear(p + "head.attention.out_proj", h, h, "vision", None, True)
        t.norm(p + "head.layernorm", h, bias=True, role="vision")
        t.linear(p + "head.mlp.fc1", ff, h, "vision", None, True)
        t.linear(p + "head.mlp.fc2", h, ff, "vision", None, True)
    return h


def _gemma3_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "siglip_vision_model")
    vh = _siglip(v, t, "model.vision_tower.")
    t.add("model.multi_modal_projector.mm_input_projection_weight", (vh, text.h), "projector")
    t.norm("model.multi_modal_projector.mm_soft_emb_norm", vh, role="projector")


def _pixtral_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "pixtral")
    p, h, ff, patch = "model.vision_tower.", v.h, v.int("intermediate_size"), v.int("patch_size")
    t.add(p + "patch_conv.weight", (h, v.int("num_channels"), patch, patch), "vision")
    t.norm(p + "ln_pre", h, role="vision")
    for j in range(v.n_layers):
        q = f"{p}transformer.layers.{j}."
        t.norm(q + "attention_norm", h, role="vision")
        for x in ("gate_proj", "up_proj"):
            t.linear(q + "feed_forward." + x, ff, h, "vision")
        t.linear(q + "feed_forward.down_proj", h, ff, "vision")
        for x in ("k_proj", "v_proj", "q_proj", "o_proj"):
            t.linear(q + "attention." + x, h, h, "vision")
        t.norm(q + "ffn_norm", h, role="vision")
    m, bias = top.int("spatial_merge_size"), top.flag("multimodal_projector_bias")
    feature_layers = top.get("vision_feature_layer", -1)
    n_feat = 1 if isinstance(feature_layers, int) else len(feature_layers)
    q = "model.multi_modal_projector."
    t.norm(q + "norm", h, role="projector")
    t.linear(q + "patch_merger.merging_layer", h, h * m * m, "projector")
    t.linear(q + "linear_1", text.h, h * n_feat, "projector", None, bias)
    t.linear(q + "linear_2", text.h, text.h, "projector", None, bias)


def _qwen25_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "qwen2_5_vl_vision")
    p, h, ff, patch = "model.visual.", v.h, v.int("intermediate_size"), v.int("patch_size")
    t.add(p + "patch_embed.proj.weight", (h, v.int("in_channels"), v.int("temporal_patch_size"), patch, patch),
          "vision")
    for j in range(v.int("depth")):
        q = f"{p}blocks.{j}."
        t.norm(q + "norm1", h, role="vision")
        t.norm(q + "norm2", h, role="vision")
        t.linear(q + "attn.qkv", 3 * h, h, "vision", None, True)
        t.linear(q + "attn.proj", h, h, "vision", None, True)
        for x in ("gate_proj", "up_proj"):
            t.linear(q + "mlp." + x, ff, h, "vision", None, True)
        t.linear(q + "mlp.down_proj", h, ff, "vision", None, True)
    merged = h * v.int("spatial_merge_size") ** 2
    t.norm(p + "merger.ln_q", h, role="projector")
    t.linear(p + "merger.mlp.0", merged, merged, "projector", None, True)
    t.linear(p + "merger.mlp.2", v.int("out_hidden_size"), merged, "projector", None, True)


def _qwen3_vl_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    # Qwen3-VL (Qwen3VLVisionModel): Qwen3.5's ViT plus one DeepStack merger per deepstack_visual_indexes entry,
    # each normalising the 2×2-merged features (use_postshuffle_norm) before its two linears
    _qwen3_5_vision(top, text, t)
    d = top.d.get("vision_config")
    v = _Cfg(d if isinstance(d, dict) else {}, "qwen3_vl_vision", f"{top.where} vision_config")
    merged = v.h * v.int("spatial_merge_size") ** 2
    for j in range(len(v.get("deepstack_visual_indexes") or [])):
        q = f"model.visual.deepstack_merger_list.{j}."
        t.norm(q + "norm", merged, bias=True, role="projector")
        t.linear(q + "linear_fc1", merged, merged, "projector", None, True)
        t.linear(q + "linear_fc2", v.int("out_hidden_size"), merged, "projector", None, True)


def _qwen3_5_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    # Qwen3-VL's ViT without DeepStack mergers (Qwen3_5VisionModel): learned position table, LayerNorm blocks
    d = top.d.get("vision_config")
    v = _Cfg(d if isinstance(d, dict) else {}, "qwen3_5_vision", f"{top.where} vision_config")
    p, h, ff, patch = "model.visual.", v.h, v.int("intermediate_size"), v.int("patch_size")
    t.add(p + "patch_embed.proj.weight", (h, v.int("in_channels"), v.int("temporal_patch_size"), patch, patch),
          "vision")
    t.add(p + "patch_embed.proj.bias", (h,), "vision")
    t.add(p + "pos_embed.weight", (v.int("num_position_embeddings"), h), "vision")
    for j in range(v.int("depth")):
        q = f"{p}blocks.{j}."
        t.norm(q + "norm1", h, bias=True, role="vision")
        t.norm(q + "norm2", h, bias=True, role="vision")
        t.linear(q + "attn.qkv", 3 * h, h, "vision", None, True)
        t.linear(q + "attn.proj", h, h, "vision", None, True)
        t.linear(q + "mlp.linear_fc1", ff, h, "vision", None, True)
        t.linear(q + "mlp.linear_fc2", h, ff, "vision", None, True)
    merged = h * v.int("spatial_merge_size") ** 2
    t.norm(p + "merger.norm", h, bias=True, role="projector")
    t.linear(p + "merger.linear_fc1", merged, merged, "projector", None, True)
    t.linear(p + "merger.linear_fc2", v.int("out_hidden_size"), merged, "projector", None, True)


def _llama4_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "llama4_vision_model")
    p, h, ff, patch, ch = "vision_model.", v.h, v.int("intermediate_size"), v.int("patch_size"), v.int("num_channels")
    t.add(p + "class_embedding", (h,), "vision")
    t.add(p + "positional_embedding_vlm", ((v.int("image_size") // patch) ** 2 + 1, h), "vision")
    t.linear(p + "patch_embedding.linear", h, ch * patch * patch, "vision")
    t.norm(p + "layernorm_pre", h, bias=True, role="vision")
    t.norm(p + "layernorm_post", h, bias=True, role="vision")
    for j in range(v.n_layers):
        _vit_layer(t, f"{p}model.layers.{j}.", h, ff, attn="self_attn", out="o_proj", fc=("fc1", "fc2"),
                   norms=("input_layernorm", "post_attention_layernorm"), qkv_bias=True)
    t.linear(p + "vision_adapter.mlp.fc1", v.int("projector_input_dim"), ff, "vision")
    t.linear(p + "vision_adapter.mlp.fc2", v.int("projector_output_dim"), v.int("projector_output_dim"), "vision")
    t.linear("multi_modal_projector.linear_1", text.h, v.int("vision_output_dim"), "projector")


def _mllama_vision(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    v = top.sub("vision_config", "mllama_vision_model")
    p, h, ff, patch = "model.vision_model.", v.h, v.int("intermediate_size"), v.int("patch_size")
    tiles, ratios = v.int("max_num_tiles"), len(v.get("supported_aspect_ratios") or []) + 1
    n_patches = (v.int("image_size") // patch) ** 2 + 1
    t.add(p + "class_embedding", (h,), "vision")
    t.add(p + "patch_embedding.weight", (h, v.int("num_channels"), patch, patch), "vision")
    t.add(p + "gated_positional_embedding.gate", (1,), "vision")
    t.add(p + "gated_positional_embedding.embedding", (n_patches, h), "vision")
    t.add(p + "gated_positional_embedding.tile_embedding.weight", (ratios, tiles * n_patches * h), "vision")
    for x in ("pre_tile_positional_embedding", "post_tile_positional_embedding"):
        t.add(f"{p}{x}.gate", (1,), "vision")
        t.add(f"{p}{x}.embedding.weight", (ratios, tiles * h), "vision")
    t.norm(p + "layernorm_pre", h, bias=True, role="vision")
    t.norm(p + "layernorm_post", h, bias=True, role="vision")
    for stack, n, gated in (("transformer", v.n_layers, False), ("global_transformer", v.int("num_global_layers"), True)):
        for j in range(n):
            q = f"{p}{stack}.layers.{j}."
            if gated:
                t.add(q + "gate_attn", (1,), "vision")
                t.add(q + "gate_ffn", (1,), "vision")
            _vit_layer(t, q, h, ff, attn="self_attn", out="o_proj", fc=("fc1", "fc2"),
                       norms=("input_layernorm", "post_attention_layernorm"), qkv_bias=False)
    t.linear("model.multi_modal_projector", text.h, v.int("vision_output_dim"), "projector", None, True)




def _gemma4_towers(top: _Cfg, text: _Cfg, t: _Tensors) -> None:
    """Gemma 4's optional towers (transformers 5.24 models/gemma4: Gemma4Model builds each only when its sub-config is
    not null) and their embedders (Gemma4MultimodalEmbedder: one projection to the text width; its pre-projection
    norm has no weight). Vision (Gemma4VisionModel): a patch embedder (input_proj 3·patch² → h, a 2 × position_
    embedding_size × h table) and pre/post-norm encoder layers with q/k norms, weights in Gemma4ClippableLinear
    (``….linear.weight``). Audio (Gemma4AudioModel): two conv + norm subsampling layers, input_proj_linear from
    channels[0] / 4 · channels[1], conformer layers (two macaron feed-forwards 4h wide, attention with a per-head-dim
    scale and a relative-position K projection, a light depthwise conv of conv_kernel_size) and a biased output_proj
    to output_proj_dims. Clipping bounds and std_bias / std_scale are buffers, not counted."""
    if isinstance(top.d.get("vision_config"), dict):
        v = top.sub("vision_config", "gemma4_vision")
        p, h, ff, patch = "model.vision_tower.", v.h, v.int("intermediate_size"), v.int("patch_size")
        hd, nh, nkv = v.head_dim, v.heads, v.kv_heads
        t.add(p + "patch_embedder.position_embedding_table", (2, v.int("position_embedding_size"), h), "vision")
        t.linear(p + "patch_embedder.input_proj", h, 3 * patch * patch, "vision")
        for j in range(v.n_layers):
            q = f"{p}encoder.layers.{j}."
            for x, out in (("q_proj", nh * hd), ("k_proj", nkv * hd), ("v_proj", nkv * hd)):
                t.linear(f"{q}self_attn.{x}.linear", out, h, "vision")
            t.linear(q + "self_attn.o_proj.linear", h, nh * hd, "vision")
            t.norm(q + "self_attn.q_norm", hd, role="vision")
            t.norm(q + "self_attn.k_norm", hd, role="vision")
            for x in ("gate_proj", "up_proj"):
                t.linear(f"{q}mlp.{x}.linear", ff, h, "vision")
            t.linear(q + "mlp.down_proj.linear", h, ff, "vision")
            for x in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                      "post_feedforward_layernorm"):
                t.norm(q + x, h, role="vision")
        t.linear("model.embed_vision.embedding_projection", text.h, h, "projector")
    if isinstance(top.d.get("audio_config"), dict):
        a = top.sub("audio_config", "gemma4_audio")
        p, h, k = "model.audio_tower.", a.h, a.int("conv_kernel_size")
        ch = a.get("subsampling_conv_channels")
        c0, c1 = (int(ch[0]), int(ch[1])) if isinstance(ch, list) and len(ch) == 2 else (128, 32)
        s = p + "subsample_conv_projection."
        t.add(s + "layer0.conv.weight", (c0, 1, 3, 3), "audio")
        t.norm(s + "layer0.norm", c0, role="audio")
        t.add(s + "layer1.conv.weight", (c1, c0, 3, 3), "audio")
        t.norm(s + "layer1.norm", c1, role="audio")
        t.linear(s + "input_proj_linear", h, c0 // 4 * c1, "audio")
        for j in range(a.n_layers):
            q = f"{p}layers.{j}."
            for f in ("feed_forward1.", "feed_forward2."):
                t.linear(q + f + "ffw_layer_1.linear", 4 * h, h, "audio")
                t.linear(q + f + "ffw_layer_2.linear", h, 4 * h, "audio")
                t.norm(q + f + "pre_layer_norm", h, role="audio")
                t.norm(q + f + "post_layer_norm", h, role="audio")
            t.add(q + "self_attn.per_dim_scale", (h // a.heads,), "audio")
            for x in ("q_proj", "k_proj", "v_proj", "post"):
                t.linear(f"{q}self_attn.{x}.linear", h, h, "audio")
            t.linear(q + "self_attn.relative_k_proj", h, h, "audio")
            t.linear(q + "lconv1d.linear_start.linear", 2 * h, h, "audio")
            t.linear(q + "lconv1d.linear_end.linear", h, h, "audio")
            t.add(q + "lconv1d.depthwise_conv1d.weight", (h, 1, k), "audio")
            for x in ("lconv1d.pre_layer_norm", "lconv1d.conv_norm", "norm_pre_attn", "norm_post_attn", "norm_out"):
                t.norm(q + x, h, role="audio")
        out = a.int("output_proj_dims")
        t.linear(p + "output_proj", out, h, "audio")
        t.add(p + "output_proj.bias", (out,), "audio")
        t.linear("model.embed_audio.embedding_projection", text.h, out, "projector")
