"""Gemma 4's KV cache in llama.cpp, computed by hand from the catalog configs.

gemma-4-e2b (text_config: 35 layers, 4 sliding : 1 full, num_kv_shared_layers 20, 1 KV head, head_dim 256,
global_head_dim 512): the last 20 layers read earlier caches (transformers kv_sharing_modes "reuse", llama.cpp
hparams.has_kv false), so 15 layers cache — 3 full (layers 4, 9, 14) and 12 sliding.
gemma-4-31b (60 layers, 5 : 1, no sharing, attention_k_eq_v with 4 global KV heads × 512 on the 10 full layers,
16 KV heads × 256 on the 50 sliding ones).
With flash attention off llama.cpp stores V transposed and pads every layer's V row to the widest layer's
(src/llama-kv-cache.cpp [TAG_V_CACHE_VARIABLE], n_embd_v_gqa_max); tests/accuracy/test_llamacpp_catalog_real.py
checks the same against llama.cpp's own log.
"""

from runlocal.model.catalog import lookup
from runlocal.runtimes.llamacpp_layout import kv_per_token

F16 = 2


def test_e2b_shared_layers_keep_no_cache():
    spec = lookup("gemma-4-e2b")
    cached = [i for i, la in enumerate(spec.layers) if la.attention is not None]
    assert cached == list(range(15))
    full = [i for i in cached if spec.layers[i].attention.kind == "full"]
    assert full == [4, 9, 14]
    assert {(a.n_kv_heads, a.k_dim, a.window) for a in spec.attention_layers if a.kind == "sliding"} == {(1, 256, 512)}


def test_e2b_kv_bytes_per_token_flash_attention_on_and_off():
    spec = lookup("gemma-4-e2b")
    on = 3 * (512 + 512) * F16 + 12 * (256 + 256) * F16          # 6,144 + 12,288
    off = 3 * (512 + 512) * F16 + 12 * (256 + 512) * F16         # sliding V rows padded to 512
    assert kv_per_token(spec, "f16", "f16") == on == 18_432
    assert kv_per_token(spec, "f16", "f16", v_trans=True) == off == 24_576


def test_31b_full_layers_v_padded_without_flash_attention():
    spec = lookup("gemma-4-31b")
    full = 10 * (4 * 512 + 4 * 512) * F16                          # K = V width on the k_eq_v full layers
    sliding = 50 * (16 * 256 + 16 * 256) * F16
    assert kv_per_token(spec, "f16", "f16") == full + sliding == 901_120
    padded_full = 10 * (4 * 512 + 16 * 256) * F16                  # V rows as wide as the sliding layers' 4,096
    assert kv_per_token(spec, "f16", "f16", v_trans=True) == padded_full + sliding == 942_080
