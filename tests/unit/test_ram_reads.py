"""What a decoded token reads from system RAM, per placement kind, against hand computations from the GGUF types.

Bytes per tensor: llama-quantize's type under Q4_K_M (src/llama-quant.cpp; the plan's --explain "weights: type per
tensor" step), Q4_K 144 B and Q6_K 210 B a 256-weight block (ggml-common.h block_q4_K, block_q6_K), F32 4 B.
Placement: src/llama-model.cpp load_tensors — i_gpu_start = max(n_layer + 1 − ngl, 0), so -ngl N < all leaves the
FIRST layers in RAM, and the output layer (il = n_layer) is the first one offloaded; the input embedding stays in RAM
(a token reads one row of it); a tied table is loaded a second time for the output layer (TENSOR_DUPLICATED), read
whole where that layer runs.
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.hardware.catalog import find_device
from runlocal.hardware.speed import speed_plan, weight_reads
from runlocal.model.catalog import lookup
from runlocal.plan import make_plan
from runlocal.runtimes import Settings, Target
from runlocal.runtimes.options import LlamaCppOptions

Q4K, Q6K = 144 / 256, 210 / 256


def _parts(model_name: str, gpu: str | None, **settings):
    model = lookup(model_name)
    targets = []
    if gpu:
        dev = find_device(gpu)
        targets.append(Target(dev.name, "gpu", dev.memory_bytes, dev.bandwidth_gbs, dev.memory_bytes))
    targets.append(Target("CPU RAM", "cpu", 64 << 30, 89.6, 64 << 30))
    plan = make_plan(model, Settings(quant="Q4_K_M", **settings), targets, with_fixes=False)
    sp = speed_plan(model, "Q4_K_M", plan.allocation, targets, 89.6)
    kinds = [plan.allocation.devices[p.device].kind for p in sp.parts]
    return plan, sp, dict(zip(kinds, sp.parts, strict=True))


def test_a_dense_layer_left_in_ram_is_read_beside_the_one_row_embedding():
    # gemma-3-12b -ngl 48 of 48 + output: block 0 stays in RAM. Its tensors (hidden 3,840; 16 heads × 256 = 4,096
    # for q, 8 kv heads × 256 = 2,048; FFN 15,360; use_more_bits gives block 0's attn_v and ffn_down Q6_K):
    block0 = (3840 * 4096 * Q4K          # attn_q
              + 3840 * 2048 * Q4K        # attn_k
              + 3840 * 2048 * Q6K        # attn_v
              + 4096 * 3840 * Q4K        # attn_output
              + 2 * 3840 * 15360 * Q4K   # ffn_gate, ffn_up
              + 15360 * 3840 * Q6K       # ffn_down
              + (4 * 3840 + 2 * 256) * 4)  # attn/post-attn/ffn/post-ffw norms, q_norm, k_norm (F32)
    assert block0 == 143_372_288
    plan, sp, parts = _parts("gemma-3-12b", "rtx-4070", ctx=32768, llamacpp=LlamaCppOptions(n_gpu_layers=48))
    # was 0: a remainder under 2 % of all the weights (162 MB) was taken for the embedding estimate's error
    assert parts["cpu"].weight_bytes == pytest.approx(block0, rel=1e-6)
    # the RAM term of the decode time: 143.4 MB ÷ (0.55 × 89.6 GB/s) = 2.91 ms a token
    assert parts["cpu"].weight_bytes / (parts["cpu"].fit.decode_eff * 89.6e9) == pytest.approx(2.909e-3, rel=1e-3)


def test_every_layer_on_the_gpu_reads_no_weights_from_ram():
    # only the tied table's input copy is in RAM (one row a token); the output layer reads the GPU's copy
    _, _, parts = _parts("gemma-3-12b", "rtx-4070", ctx=8192)
    assert parts["cpu"].weight_bytes == 0.0


# gemma-3-12b's whole file at Q4_K_M (the --explain step's type sums): Q4_K 9,154,068,480 params, Q6_K 2,610,954,240
# (the tied token_embd among them), F32 765,696
GEMMA_12B_FILE = 9_154_068_480 * Q4K + 2_610_954_240 * Q6K + 765_696 * 4


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_cpu_only_reads_the_tied_table_whole_under_either_runtime(runtime):
    # no GPU: the output layer runs in RAM and multiplies by the whole tied table each token. Ollama's plan used to
    # take one row of it (6.47 GB a token, 6.9 tok/s) where llama.cpp's -ngl 0 read 7.29 (6.2 tok/s)
    assert GEMMA_12B_FILE == 7_294_024_704
    _, _, parts = _parts("gemma-3-12b", None, ctx=8192, runtime=runtime)
    assert parts["cpu"].weight_bytes == pytest.approx(GEMMA_12B_FILE, rel=1e-3)


def test_tensors_an_ot_rule_sends_to_ram_are_read():
    # -ot "blk\.(0|1)\.ffn_(up|gate|down)=CPU", every layer on the GPU: blocks 0 and 1's FFN in RAM (use_more_bits:
    # ffn_down Q6_K in the first eighth of the layers), read whole each token beside the table's one row
    ffn = 2 * 3840 * 15360 * Q4K + 15360 * 3840 * Q6K
    _, _, parts = _parts("gemma-3-12b", "rtx-4070", ctx=8192,
                         llamacpp=LlamaCppOptions(override_tensor=((r"blk\.(0|1)\.ffn_(up|gate|down)", "CPU"),)))
    assert parts["cpu"].weight_bytes == pytest.approx(2 * ffn, rel=1e-6)


def test_layers_fit_moves_to_ram_over_two_gpus_are_read():
    # gemma-3-27b on two 8 GB RTX 3070s: --fit leaves the first layers in RAM (the weights step names them); a token
    # reads all of RAM's weights but the table's one row: 262,144 × 5,376 at Q6_K
    plan, _ = check(CheckRequest(model="gemma-3-27b", gpu="2xrtx-3070", ram="64G", ctx=16384, quant="Q4_K_M"))
    assert plan.settings.llamacpp.n_gpu_layers < 63
    reads = weight_reads(plan.model, plan.allocation, "Q4_K_M")
    cpu = next(d for d in plan.allocation.devices if d.kind == "cpu")
    table = 262_144 * 5_376 * Q6K
    assert reads.matmul_bytes(cpu) == pytest.approx(cpu.weights - table, rel=1e-3)
