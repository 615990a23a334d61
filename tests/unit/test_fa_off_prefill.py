"""hardware/fa_off_prefill.py: llama.cpp's unfused prompt attention on CUDA (flash attention off) — hand computations
from the model's config.json and the card's datasheet, the micro-batches' cells in use, where it applies, the pairs it
is scored on (measured fa 0 / fa 1 ratios) and the term kept out of plans (it failed its held-out check:
measurements/llamacpp_h200)."""

import statistics

import pytest

from runlocal.hardware import fa_off_prefill as FO
from runlocal.hardware.catalog import find_device
from runlocal.model.catalog import lookup


def test_llama_2_7b_on_an_rtx_4090_by_hand():
    # Llama-2-7B config.json: 32 layers, 32 heads (no GQA), head_dim 128. A pp512 batch of 512 tokens from an empty
    # cache: the unfused products run over all 512 cells for every token (the causal mask's too).
    # Q·Kᵀ = softmax·V = 2 × 32 heads × 128 × 512 cells × 32 layers = 134,217,728 FLOPs; scores 32 × 512 × 32 = 524,288,
    # × (4 KQ + 4 + 4 softmax + 4 + 2 cast + 2 KQV) = 20 B = 10,485,760 B.
    # RTX 4090 (Ada whitepaper): FP16 tensor 165.2 TFLOPS with FP32 accumulate, 330.3 with FP16 accumulate; 1008 GB/s.
    term = FO.fa_off_attention(lookup("llama-2-7b"), find_device("rtx-4090"), 0.0, 512, 512, clock=1.0, bw_share=0.9)
    assert term.n_kv == 512
    assert term.kq_flops == term.vkq_flops == 2 * 32 * 128 * 512 * 32 == 134_217_728
    assert term.scores == 524_288 and term.score_bytes == 10_485_760
    assert term.vkq_tflops == pytest.approx(330.3, rel=0.01)
    gemm = 134_217_728 / 165.2e12 + 134_217_728 / 330.4e12          # 0.8125 + 0.4062 µs
    scores = 10_485_760 / (0.9 * 1008e9)                             # 11.558 µs
    assert term.gemm_seconds == pytest.approx(gemm, rel=0.002)
    assert term.score_seconds == pytest.approx(scores)
    assert term.seconds_per_token == pytest.approx(12.777e-6, rel=0.002)


def test_cells_in_use_per_micro_batch():
    # a batch ending at token t computes over depth + t cells for each of its tokens
    assert FO.unfused_n_kv(0, 512, 512) == 512
    assert FO.unfused_n_kv(0, 2048, 512) == (512 + 1024 + 1536 + 2048) / 4 == 1280
    assert FO.unfused_n_kv(4096, 2048, 512) == 4096 + 1280
    assert FO.unfused_n_kv(0, 512, 256) == (256 * 256 + 256 * 512) / 512 == 384
    assert FO.unfused_n_kv(0, 100, 512) == 100


def test_sliding_layers_run_over_their_cache():
    # Gemma-3-1B config.json: 4 query heads, 26 layers, 22 of them sliding with a 512-token window.
    # llama-kv-cache-iswa.cpp @0c1e57098: a sliding layer's cache holds pad(512 + n_ubatch 512, 256) = 1,024 cells
    assert FO.score_elements(lookup("gemma-3-1b"), 4096) == 4 * (22 * 1024 + 4 * 4096) == 155_648
    # with swa_full (the C API's default) nothing frees the cells outside the window: every cell in use
    assert FO.score_elements(lookup("gemma-3-1b"), 4096, swa_full=True) == 4 * 26 * 4096 == 425_984
    # fewer cells in use than the cache holds: those
    assert FO.layer_cells(512, 700, 512, False) == 700
    assert FO.layer_cells(4096, 40_000, 512, False) == 4608      # Gemma 2's window: 4,096 + 512, a multiple of 256
    assert FO.layer_cells(None, 40_000, 512, False) == 40_000


def test_where_it_applies():
    rtx = find_device("rtx-4090")
    assert FO.applies(rtx, "cuda", True, False)
    assert not FO.applies(rtx, "cuda", True, True)       # flash attention on: fa_prefill.py's kernel
    assert not FO.applies(rtx, "vulkan", True, False)
    assert not FO.applies(rtx, "cuda", False, False)     # vLLM / SGLang: not llama.cpp's graph
    assert not FO.applies(find_device("rx-7900-xtx"), "rocm", True, False)


def test_tuning_pairs_read_closer_to_their_measured_ratio():
    # each pair's measured fa 0 / fa 1 (the records cite their sources) against the prediction from its fa 1 row:
    # the plan's pricing (ATTN_FACTOR) leaves fa 0 within ~2 % of fa 1; the term prices the scores' traffic
    from runlocal.evidence import speed_fit_faoff as F
    from runlocal.hardware import speed as S

    pairs = F.tuning_pairs()
    assert len(pairs) == 8 and not F.held_out_pairs()
    got = [F.ratios(p, S.FIT, S.SPLIT_OVERHEAD_MS) for p in pairs]
    assert all(r is not None for r in got)
    before = [abs(r[1] / r[0] - 1) for r in got if r]
    after = [abs(r[2] / r[0] - 1) for r in got if r]
    assert statistics.median(after) < 0.06 < statistics.median(before)
    assert max(after) < max(before)
    # the scoreboard's RTX 3090 pair (5,174.69 / 5,560.06 t/s): within 2 %
    r3090 = next(r for p, r in zip(pairs, got) if p[0].rec["device"] == "rtx-3090" and r)
    assert r3090[0] == pytest.approx(5174.69 / 5560.06)
    assert r3090[2] == pytest.approx(r3090[0], rel=0.02)


def _explain(**kw):
    from runlocal.check import check
    from runlocal.request import CheckRequest

    plan, _ = check(CheckRequest(model="llama-2-7b", quant="Q4_0", parallel=1, **kw))
    return {s["label"]: s for s in plan.to_dict()["explain"]}


def test_explain_prices_the_prompt_attention_with_the_term():
    # applied since its second held-out check (measurements/llamacpp_h200/fa_depth2_first_run.txt): Llama-2-7B's
    # 32 heads × 512 cells × 32 layers = 524,288 scores a token, 20 B each, in the prefill step's formula
    assert FO.APPLIED
    words = "attention (flash attention off, the unfused graph)"
    step = _explain(gpu="rtx-4090", flash_attn="off")["prefill speed"]
    assert words in step["formula"] and "524,288 × 20 B" in step["formula"] and "over 512 cells" in step["formula"]
    assert words not in _explain(gpu="rtx-4090")["prefill speed"]["formula"]
    assert words not in _explain(gpu="rtx-4090", flash_attn="off", backend="vulkan")["prefill speed"]["formula"]
