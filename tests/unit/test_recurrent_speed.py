"""The recurrent layers' state traffic in decode (hardware/recurrent_speed.py), computed by hand for one catalog hybrid."""

from runlocal.hardware import speed as S
from runlocal.hardware import token_work as TW
from runlocal.hardware.catalog import find_device
from runlocal.hardware.recurrent_speed import recurrent_state_traffic
from runlocal.model.catalog import lookup
from runlocal.plan import estimate


def test_qwen3_next_state_traffic_by_hand():
    # Qwen/Qwen3-Next-80B-A3B-Instruct config.json: 48 layers, full_attention_interval 4 → 36 gated delta-net layers;
    # linear_num_value_heads 32, linear_key_head_dim 128, linear_value_head_dim 128 → the delta-rule state of a layer
    # is 32 × 128 × 128 = 524,288 f32; the conv state is (linear_conv_kernel_dim 4 − 1) × the conv channels
    # (q and k: 16 key heads × 128 each, v: 32 × 128) = 3 × (2048 + 2048 + 4096) = 24,576 f32.
    # A token reads and writes both (gated_delta_net.cu, the ssm_conv cache store): 2 × 4 B each.
    layers, state, conv = 36, 32 * 128 * 128, 3 * (16 * 128 * 2 + 32 * 128)
    by_hand = 2 * 4 * layers * (state + conv)
    assert by_hand == 158_072_832
    model = lookup("qwen3-next-80b-a3b")
    assert len(model.recurrent_layers) == layers
    assert recurrent_state_traffic(model) == by_hand


def test_a_transformer_moves_no_state():
    assert recurrent_state_traffic(lookup("llama-3.1-8b")) == 0.0


def test_decode_time_grows_by_the_state_bytes_at_the_weights_rate():
    # predict(): a token's time is (weight bytes + state bytes + kv_factor × KV) ÷ (decode_eff × bandwidth) + layers
    # × layer_us; with the KV left out (ctx 0) the state adds exactly its bytes at the weights' rate
    model, dev = lookup("qwen3-next-80b-a3b"), find_device("h200")
    weights = float(estimate(model, "Q4_K_M").total)
    fit = S.constants(S.device_class(dev), "cuda")
    t = 1 / S.predict(model, weights, dev, quant="Q4_K_M").decode_tokens_per_s
    without = (weights * TW.read_fraction(model)) / (fit.decode_eff * dev.bandwidth_gbs * 1e9) \
        + model.n_layers * fit.layer_us / 1e6
    state_s = 158_072_832 / (fit.decode_eff * dev.bandwidth_gbs * 1e9)
    assert abs(t - (without + state_s)) < 1e-9
