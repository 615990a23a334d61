"""What a generated token costs in a model's recurrent layers beyond their weights: the state they read and write.

An attention layer reads its KV cache; a recurrent layer (Mamba, Mamba-2, the gated delta net of Qwen3-Next /
Qwen3.5) reads its whole constant-size state and writes it back, every token. In llama.cpp, per recurrent layer and
decoded token:

- the SSM / delta-rule state, f32: ggml-cuda gated_delta_net.cu (gated_delta_net_cuda: each warp loads its column of
  ``curr_state`` into registers, ``s_shard[r] = curr_state[i]``, updates it over the tokens and stores it,
  ``state[col * S_v + i] = s_shard[r]``) and ssm-scan.cu (ssm_scan_f32_group for Mamba-2, ssm_scan_f32 for Mamba-1:
  ``state[j] = s0_warp[…]`` … ``s_warp[…] = state[j]``) — H × S_k × S_v (delta net) or d_inner × d_state (Mamba)
  elements read once and written once;
- the convolution state, f32: ssm_conv takes the (d_conv − 1) × channels previous columns concatenated with the token's
  (src/models/*: ggml_concat of conv_states and the input, then ggml_ssm_conv) and the last d_conv − 1 columns are
  stored back into the cache (ggml_cpy into conv_states_all) — read once, written once.

Both are kept in f32 by llama.cpp's recurrent memory (src/llama-model.cpp create_memory: r and s types GGML_TYPE_F32),
which is ``kv.recurrent_state_bytes`` per sequence. So a token moves 2 × that many bytes; they are streamed like the
weights, at the decode share of bandwidth, and no constant is fitted. Not counted: the graph's own copies of the state
(build_rs gathers the layer's rows with ggml_get_rows before the op and ggml_cpy stores the op's output after it; the
CUDA and SYCL backends fuse that store into the delta-net op, ggml_cuda_try_gdn_cache_fusion) — they differ by build
and backend, so this is the least a token moves. Pure computation, no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..kv import recurrent_state_bytes

if TYPE_CHECKING:   # pragma: no cover
    from ..model.spec import ModelSpec

STATE_PASSES = 2    # the state is read once and written once per token (the kernels above)


def recurrent_state_traffic(model: ModelSpec) -> float:
    """Bytes one decoded token moves through the recurrent layers' f32 states (read + write); 0 without them."""
    return float(STATE_PASSES * recurrent_state_bytes(model))


def state_traffic_words(model: ModelSpec, traffic: float) -> str:
    """The --explain words for the term: layers, elements per layer, bytes."""
    layers = model.recurrent_layers
    if not layers or not traffic:
        return ""
    per_layer = {(r.state_elems, r.conv_elems) for r in layers}
    elems = (f"{layers[0].state_elems:,} state + {layers[0].conv_elems:,} conv elements"
             if len(per_layer) == 1 else "their state and conv elements")
    return (f"{len(layers)} layers × ({elems}) × 4 B f32 × {STATE_PASSES} (read + write) = "
            f"{traffic / 1e6:.1f} MB/token, in the decode GB above: streamed like the weights (hardware/recurrent_speed.py)")
