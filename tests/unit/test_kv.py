import pytest

from runlocal.errors import InputError
from runlocal.kv import kv_bytes, kv_bytes_per_token, normalize_cache_type, recurrent_state_bytes, row_bytes
from runlocal.model.spec import AttentionSpec, LayerSpec, ModelSpec, RecurrentSpec


def model(layers, **kw):
    return ModelSpec(id="t", architecture="T", family="t", hidden_size=4096, n_layers=len(layers), n_heads=32,
                     vocab_size=1000, layers=tuple(layers), **kw)


LLAMA31_8B = model([LayerSpec(AttentionSpec("full", 8, 128, 128))] * 32)


def test_llama31_8b_is_128_kib_per_token_not_512():
    # the seed article's 32 KV heads would give 512 KiB; GQA's 8 heads give 128 KiB
    assert kv_bytes_per_token(LLAMA31_8B) == 128 * 1024


@pytest.mark.parametrize("ct, per_row_1024", [
    ("f32", 4096), ("f16", 2048), ("bf16", 2048), ("fp8", 1024),
    ("q8_0", 1024 // 32 * 34),     # 32-element blocks of 34 bytes: 8.5 bits/element
    ("q4_0", 1024 // 32 * 18), ("q4_1", 1024 // 32 * 20), ("q5_0", 1024 // 32 * 22),
    ("q5_1", 1024 // 32 * 24), ("iq4_nl", 1024 // 32 * 18),
])
def test_cache_type_block_overhead(ct, per_row_1024):
    assert row_bytes(ct, 1024) == per_row_1024


def test_k_and_v_typed_separately():
    kq = kv_bytes_per_token(LLAMA31_8B, "q8_0", "f16")
    assert kq == 32 * (8 * 128 // 32 * 34 + 8 * 128 * 2)


def test_linear_in_context():
    assert kv_bytes(LLAMA31_8B, 65536) == 2 * kv_bytes(LLAMA31_8B, 32768) == 4 * kv_bytes(LLAMA31_8B, 16384)


def test_sliding_layers_capped_at_window():
    # Gemma-3 style: 5 sliding (window 1024) : 1 global
    layers = [LayerSpec(AttentionSpec("sliding", 4, 256, 256, 1024))] * 5 + [LayerSpec(AttentionSpec("full", 4, 256, 256))]
    m = model(layers)
    per_layer = 4 * 256 * 2 * 2
    assert kv_bytes(m, 32768) == 5 * per_layer * 1024 + per_layer * 32768
    assert kv_bytes(m, 512) == 6 * per_layer * 512


def test_mla_latent():
    # DeepSeek-V3: one latent of 512 + 64 rope dims for K, 512 for V (as llama.cpp stores it)
    m = model([LayerSpec(AttentionSpec("mla", 1, 576, 512))] * 61)
    assert kv_bytes_per_token(m) == 61 * (576 + 512) * 2


def test_recurrent_state_is_constant():
    m = model([LayerSpec(recurrent=RecurrentSpec(3 * 8192, 128 * 8192))] * 4)
    assert recurrent_state_bytes(m) == 4 * (3 * 8192 + 128 * 8192) * 4
    assert kv_bytes(m, 100000) == 0


def test_rows_not_whole_blocks_refused():
    with pytest.raises(InputError, match="multiples of 32"):
        row_bytes("q8_0", 80)


def test_unknown_cache_type_named():
    with pytest.raises(InputError, match="cache-type-k"):
        normalize_cache_type("q3_z", field="cache-type-k")
