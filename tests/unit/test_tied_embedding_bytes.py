"""Gemma 3 12B at Q4_K_M under llama.cpp / Ollama: the token embedding llama.cpp keeps in RAM, by its own type.

The independent figure, by hand: Gemma 3's tied token_embd is 262,144 rows (convert_hf_to_gguf.py trims the
checkpoint's 262,208 to the tokenizer's vocabulary) × 3,840; llama-quantize gives a tied embedding the output
tensor's type, Q6_K under Q4_K_M (src/llama-quant.cpp llama_tensor_get_type_impl, no output.weight), and a Q6_K
block holds 256 weights in 210 bytes (ggml-common.h block_q6_K: ql[128] + qh[64] + scales[16] + d, 2 B). The input
layer always stays on the CPU (src/llama-model.cpp load_tensors: "there is very little benefit to offloading the
input layer"), so with every layer on the GPU it is the whole of CPU RAM's weights. (Public llama-server logs of a
Gemma 4 GGUF with the same 3,840 × 262,144 Q6_K table print "CPU_Mapped model buffer size = 787.50 MiB": the same
825,753,600 B.)"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check

EMBEDDING = 262_144 * 3_840 // 256 * 210        # 825,753,600 B = 787.50 MiB
GiB = 1 << 30


def _plan(gpu: str, runtime: str):
    plan, _ = check(CheckRequest(model="gemma-3-12b", gpu=gpu, runtime=runtime, quant="Q4_K_M"))
    return plan


def _ram_weights(plan) -> int:
    return sum(d.weights for d in plan.allocation.devices if d.kind == "cpu")


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_all_on_the_gpu_ram_holds_the_q6_k_embedding(runtime):
    # was 624,185,968 B (0.58 GiB): the estimate spread evenly over the text tensors, 4.96 bits a weight for a
    # table llama-quantize stores at 6.56
    assert _ram_weights(_plan("rtx-4090", runtime)) == pytest.approx(EMBEDDING, abs=1024)


def test_an_untied_embedding_at_the_base_type():
    # llama-3.1-8b Q4_K_M, untied: token_embd takes the base type, Q4_K (144 B a 256-weight block: ggml-common.h
    # block_q4_K), output.weight Q6_K on the GPU. 128,256 × 4,096 / 256 × 144 = 295,501,824 B = 281.81 MiB, as
    # llama.cpp prints CPU_Mapped for Llama-3.1-8B-shaped Q4_K_M files (and, for Q4_0, 18 B a 32-weight block, the
    # same 281.81 MiB: measurements/llamacpp/data/cuda.jsonl). Was 321,399,884 B: the mean, 5.0 bits a weight.
    plan, _ = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", runtime="llama.cpp", quant="Q4_K_M", ctx="8k"))
    assert _ram_weights(plan) == pytest.approx(128_256 * 4_096 // 256 * 144, abs=1024)


@pytest.mark.parametrize("runtime", ["ollama", "llama.cpp"])
def test_what_a_token_reads_in_ram_is_ram_less_the_embedding(runtime):
    # layers moved to RAM on an 8 GB card: the output layer is the first -ngl offloads (src/llama-model.cpp
    # load_tensors: i_gpu_start = max(n_layer + 1 - ngl, 0), the output layer il = n_layer), so the tied head reads
    # its GPU copy and a token reads one row of the RAM table: the figure is RAM's weights less 825,753,600 B.
    # Was: Ollama 1.56 GiB of 2.39 (the share of the device total, which holds the table twice); llama.cpp (-ngl 36)
    # 2.43 of 2.43 (the output layer taken to be in RAM for any -ngl ≤ n_layer, the table read whole)
    from runlocal.render.text import offload_phrase

    plan = _plan("rtx-3060-ti", runtime)
    assert plan.settings.llamacpp.n_gpu_layers in (None, 36)      # Ollama: --fit's; llama.cpp: -ngl 36 ≤ 48
    phrase = offload_phrase(plan)
    read = float(phrase.split(" — ")[1].split(" GiB")[0])
    assert read == pytest.approx((_ram_weights(plan) - EMBEDDING) / GiB, abs=0.006)
