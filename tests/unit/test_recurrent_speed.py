"""The recurrent layers' decode and prefill terms (hardware/recurrent_speed.py), computed by hand for catalog hybrids."""

import json
from pathlib import Path

import pytest

from runlocal.hardware import recurrent_speed as RS
from runlocal.hardware import speed as S
from runlocal.hardware import token_work as TW
from runlocal.hardware.catalog import find_device
from runlocal.model.catalog import lookup
from runlocal.plan import estimate

# Qwen/Qwen3-Next-80B-A3B-Instruct config.json: 48 layers, full_attention_interval 4 → 36 gated delta-net layers;
# linear_num_value_heads 32, linear_key_head_dim 128, linear_value_head_dim 128 → the delta-rule state of a layer
# is 32 × 128 × 128 = 524,288 f32; the conv window is (linear_conv_kernel_dim 4 − 1) × the conv channels
# (q and k: 16 key heads × 128 each, v: 32 × 128) = 3 × (2048 + 2048 + 4096) = 24,576 f32.
LAYERS, STATE, CONV = 36, 32 * 128 * 128, 3 * (16 * 128 * 2 + 32 * 128)


def test_qwen3_next_state_traffic_by_hand_per_graph():
    # passes of the state a token makes (delta-net-base.cpp): fused on Vulkan = gather 2 + op 2 + cache copy 2;
    # CUDA fuses the copy into the op = 4, and Metal from PR #28164 (GGML_METAL_FUSION_GDN_CACHE, "GATED_DELTA_NET
    # + CPY", ggml-metal-fusion.cpp) = 4 at the modelled build;
    # the unfused autoregressive graph = gather 2 + mul 2 + mul 2 + sum_rows 1
    # + repeat 1 + mul 2 + add 3 + mul 2 + sum_rows 1 + copy 2 = 18. The conv window: gather 2 + concat 2 + ssm_conv 1
    # + copy back 2 = 7. Bytes: 4 a float.
    model = lookup("qwen3-next-80b-a3b")
    assert len(model.recurrent_layers) == LAYERS
    for backend, path, passes in (("vulkan", "fused", 6), ("metal", "fused", 2 + 2), ("cuda", "fused", 4),
                                  ("rocm", "fused", 4), ("vulkan", "unfused", 2 + 2 + 2 + 1 + 1 + 2 + 3 + 2 + 1 + 2)):
        by_hand = 4 * LAYERS * (passes * STATE + 7 * CONV)
        assert RS.recurrent_state_traffic(model, path, backend) == by_hand, (backend, path)
    assert RS.recurrent_state_traffic(model, "fused", "vulkan") == 4 * 36 * (6 * 524_288 + 7 * 24_576) == 477_757_440


def test_metal_fuses_the_cache_copy_from_pr_28164():
    # Ollama v0.33.0-rc2 builds llama-server at b10488 (its LLAMA_CPP_VERSION), before PR #28164 was opened
    # (2026-09-01): gather 2 + op 2 + copy 2 = 6; b10909 carries the PR: the copy fused, 4
    model = lookup("qwen3.5-35b-a3b")
    assert RS.state_passes("gated_deltanet", "fused", "metal", 10488) == 2 + 2 + 2
    assert RS.state_passes("gated_deltanet", "fused", "metal", 10909) == 2 + 2
    assert RS.state_passes("gated_deltanet", "fused", "metal") == 4               # the modelled build, b11312
    assert RS.state_passes("gated_deltanet", "fused", "vulkan", 10909) == 6       # Vulkan's fusion: PR #27973, open
    # Qwen3.5-35B-A3B: 30 delta-net layers of 32 × 128 × 128 state and 3 × 8,192 conv elements; the fusion takes
    # 30 × 2 × 524,288 × 4 B = 125.8 MB a token off the Metal plan
    diff = RS.recurrent_state_traffic(model, "fused", "metal", 10488) - RS.recurrent_state_traffic(model, "fused", "metal")
    assert diff == 30 * 2 * 524_288 * 4 == 125_829_120
    from asking import check_json

    llama = check_json("qwen3.5-35b-a3b", "--gpu", "m2-ultra", "--ctx", "4096")["explain"]
    ollama = check_json("qwen3.5-35b-a3b", "--gpu", "m2-ultra", "--runtime", "ollama", "--ctx", "4096")["explain"]
    assert "(4 passes × 524,288" in next(s["formula"] for s in llama if s["label"] == "decode: recurrent state")
    assert "(6 passes × 524,288" in next(s["formula"] for s in ollama if s["label"] == "decode: recurrent state")


def test_mamba2_moves_its_state_four_times():
    # ssm_scan reads the state through its row ids and writes the new one (2), the graph's cpy stores it (2);
    # granite-4.0-h-tiny: 36 Mamba-2 layers, d_state 128 × d_inner 3072 (48 heads × 64) = 393,216 state elements,
    # conv window 3 × (3072 + 2 × 1 group × 128) = 9,984
    model = lookup("granite-4.0-h-tiny")
    assert {(r.state_elems, r.conv_elems) for r in model.recurrent_layers} == {(128 * 3072, 3 * (3072 + 256))}
    assert RS.recurrent_state_traffic(model, None, "cuda") == 4 * 36 * (4 * 393_216 + 7 * 9_984)


def test_a_transformer_has_no_recurrent_terms():
    model = lookup("llama-3.1-8b")
    assert RS.recurrent_state_traffic(model) == 0.0
    assert RS.extra_layers(model) == 0.0
    assert RS.scan_seconds(model, 1000.0) == 0.0


def test_extra_kernels_as_layers_by_hand():
    # qwen3next: a fused delta-net layer launches 74 kernels where an attention layer of the model launches 51 (23 more),
    # 33 more unfused; a llama layer launches 19; KERNEL_SCALE prices an extra kernel at that share of a layer's cost
    model = lookup("qwen3-next-80b-a3b")
    assert RS.extra_kernels(model) == 74 - 51
    assert RS.extra_kernels(model, "unfused") == 84 - 51
    assert RS.extra_kernels(model, "chunked") == 23        # b8100–b8250 fuse the one-token graph
    assert RS.extra_layers(model) == pytest.approx(36 * 23 * RS.KERNEL_SCALE / 19)
    # an architecture the graph mirror lacks takes the Mamba-2 stand-in (granitehybrid's 17)
    assert RS.extra_kernels(lookup("nemotron-3-nano-30b-a3b")) == 17


def test_scan_rate_by_hand_from_the_op_timings():
    # each op its own timing at 512 tokens: PR #22587, GATED_DELTA_NET 524,288 state elements, 279.6 µs on an
    # RTX 5090; PR #18630 (after), SSM_SCAN 128 × 64 × 48 = 393,216, 495.45 µs on an RTX 4070
    gdn = 279.6e-6 / 512 / 524_288         # 1.0416 ps per element per token
    ssm = 495.45e-6 / 512 / 393_216        # 2.4609 ps
    assert round(gdn * 1e12, 4) == 1.0416 and round(ssm * 1e12, 4) == 2.4609
    assert RS.scan_rate("gated_deltanet", 1792.0) == pytest.approx(gdn, rel=1e-12)
    assert RS.scan_rate("mamba2", 504.0) == pytest.approx(ssm, rel=1e-12)
    # qwen3next on an RTX PRO 6000 (1,792 GB/s, the 5090's bandwidth): 36 × 524,288 × 1.0416 ps = 19.66 µs a token
    assert round(RS.scan_seconds(lookup("qwen3-next-80b-a3b"), 1792.0) * 1e6, 2) == 19.66
    # 1000 tokens/s with 16.32 µs more a token: 1 / (1 ms + 16.32 µs) = 983.9
    assert round(RS.with_scan(1000.0, 16.32e-6), 1) == 983.9


def test_scan_across_cards_solves_the_form_on_the_two_cards():
    # A two-point solve: it cannot fail to pass through both points, so this checks the arithmetic only, not the form.
    # PR #18630 (before: ggml-vulkan's ssm_scan shader before the PR's rewrite, two NVIDIA cards): SSM_SCAN d_state
    # 128, head_dim 64, 48 heads, 512 tokens: RTX 4070 (504 GB/s) 910.72 µs,
    # RTX 5090 (1,792 GB/s) 467.55 µs. Bandwidth alone would predict the 5090 at 910.72 × 504 / 1792 = 256.1 µs (−45 %);
    # a latency + 1/bandwidth form through both: b = (910.72 − 467.55) / (1/504 − 1/1792) = 310,758.5 µs·GB/s,
    # a = 467.55 − b / 1792 = 294.14 µs
    assert 910.72 * 504 / 1792 / 467.55 - 1 == pytest.approx(-0.452, abs=1e-3)
    b = (910.72 - 467.55) / (1 / 504 - 1 / 1792)
    a = 467.55 - b / 1792
    assert round(b, 1) == 310_758.5 and round(a, 2) == 294.14
    assert RS.SCAN_BW_US_GBS == pytest.approx(b) and RS.SCAN_LATENCY_US == pytest.approx(a)
    # it carries the 4070's time to the 5090 (the pair it was solved on: exact) and the delta net's 5090 rate to
    # the 4070: × (294.14 + 310,758.5 / 504) / 467.55 = × 1.948
    assert 910.72 / RS.scan_scale(504.0, 1792.0) == pytest.approx(467.55)
    assert RS.scan_rate("gated_deltanet", 504.0) == pytest.approx(279.6e-6 / 512 / 524_288 * (a + b / 504) / 467.55)
    assert round(RS.scan_scale(504.0, 1792.0), 3) == 1.948


def test_decode_time_adds_the_state_bytes_and_the_extra_kernels():
    # predict(): a token's time is (weight bytes + state bytes + kv_factor × KV) ÷ (decode_eff × bandwidth)
    # + (layers + the recurrent kernels' layers) × layer_us; with the KV left out (ctx 0) each term adds by hand
    model, dev = lookup("qwen3-next-80b-a3b"), find_device("h200")
    weights = float(estimate(model, "Q4_K_M").total)
    fit = S.constants(S.device_class(dev), "cuda")
    t = 1 / S.predict(model, weights, dev, quant="Q4_K_M").decode_tokens_per_s
    rate = fit.decode_eff * dev.bandwidth_gbs * 1e9
    # the share a token reads, in the bytes of each tensor's Q4_K_M type (token_work.read_fraction, review22 #10)
    without = weights * TW.read_fraction(model, "Q4_K_M") / rate + model.n_layers * fit.layer_us / 1e6
    state_s = 4 * LAYERS * (4 * STATE + 7 * CONV) / rate                      # CUDA: the cache copy fused
    kernels_s = 36 * 23 * RS.KERNEL_SCALE / 19 * fit.layer_us / 1e6
    assert t == pytest.approx(without + state_s + kernels_s, rel=1e-12)


def test_a_cpu_part_pays_no_gpu_kernel_latency():
    model = lookup("qwen3-next-80b-a3b")
    cpu = find_device("cpu-ddr5-4800-12ch")
    weights = float(estimate(model, "Q4_K_M").total)
    t = 1 / S.predict(model, weights, cpu, quant="Q4_K_M").decode_tokens_per_s
    rate = S.CPU.decode_eff * cpu.bandwidth_gbs * 1e9
    by_hand = (weights * TW.read_fraction(model, "Q4_K_M") + RS.recurrent_state_traffic(model, backend="cpu")) / rate \
        + model.n_layers * S.CPU.layer_us / 1e6
    assert t == pytest.approx(by_hand, rel=1e-12)


def test_another_runtime_moves_the_state_once_each_way_and_pays_no_ggml_kernels():
    # vLLM's kernels are not llama.cpp's graph: the state's read and write (2 passes of state and window) and no extra
    # kernels; falcon-h1-7b: 44 Mamba-2 layers of 786,432 state + 10,752 window elements → 280.6 MB a token
    from asking import check_json

    model = lookup("falcon-h1-7b")
    assert RS.recurrent_state_traffic(model, backend=None) == 4 * 44 * 2 * (786_432 + 10_752) == 280_608_768
    steps = check_json("falcon-h1-7b", "--gpu", "rtx-a5000", "--runtime", "vllm", "--ctx", "4096")["explain"]
    assert next(s for s in steps if s["label"] == "decode: recurrent state")["value"] == "280.6 MB/token"
    assert not any(s["label"] == "decode: recurrent kernels" for s in steps)
    # llama.cpp on the same card: 4 passes of the state, 7 of the window, and the kernels
    steps = check_json("falcon-h1-7b", "--gpu", "rtx-a5000", "--ctx", "4096")["explain"]
    assert next(s for s in steps if s["label"] == "decode: recurrent state")["value"] == \
        f"{4 * 44 * (4 * 786_432 + 7 * 10_752) / 1e6:.1f} MB/token"
    assert any(s["label"] == "decode: recurrent kernels" for s in steps)


def test_vllm_pays_no_llamacpp_scan_and_ollama_does():
    # vLLM's prefill runs fla's chunk_gated_delta_rule / mamba_chunk_scan_combined, matmul kernels, not llama.cpp's
    # token-by-token scan: no scan step, and the explain says the recurrent prompt time is not priced. Ollama from
    # v0.30.0 runs llama-server (ollama/ollama 9db4bdbad "use llama-server exclusively for GGML models"; at v0.33.0-rc2
    # OllamaEngineRequired in fs/ggml/ggml.go has no caller left), so it pays the same scan as llama.cpp
    from asking import check_json

    for alias in ("qwen3-next-80b-a3b", "falcon-h1-7b"):
        vllm = check_json(alias, "--gpu", "h100-sxm", "--runtime", "vllm", "--ctx", "4096")
        labels = {s["label"] for s in vllm["explain"]}
        assert "prefill: recurrent scan" not in labels, alias
        assert "prefill: recurrent layers" in labels, alias
        llama = check_json(alias, "--gpu", "h100-sxm", "--ctx", "4096")
        scan = next(s for s in llama["explain"] if s["label"] == "prefill: recurrent scan")
        us = float(scan["value"].split()[0])
        by_hand = RS.scan_seconds(lookup(alias), find_device("h100-sxm").bandwidth_gbs) * 1e6
        assert us == pytest.approx(by_hand, abs=0.05)
    ollama = check_json("qwen3.5-35b-a3b", "--gpu", "rtx-5090", "--runtime", "ollama", "--ctx", "4096")
    assert any(s["label"] == "prefill: recurrent scan" for s in ollama["explain"])


def test_a_metal_record_counts_its_own_builds_passes():
    # a speed record's "build" ("b10488", "137435ff (8192)") sets Metal's cache fusion: a fused-path Qwen3.5-35B-A3B
    # row at b10488 moves 2 state passes a layer more than one at b10909 (PR #28164): 30 × 2 × 524,288 × 4 B
    from runlocal.evidence.speed_fit import build_rows

    rec = {"n_devices": 1, "runtime": "llama.cpp", "device": "m2-ultra-192gb", "backend": "metal",
           "model": "qwen3.5-35b-a3b", "quant": "Q4_K_M", "test": "tg128", "tokens_per_s": 50.0,
           "gdn_path": "fused", "recurrent": "gated_deltanet"}
    old, new = build_rows([{**rec, "build": "b10488"}, {**rec, "build": "abcdef012 (10909)"}])
    assert old.w_read - new.w_read == 30 * 2 * 524_288 * 4


def test_cuda_and_hip_fuse_the_cache_copy_from_pr_23940():
    # PR #23940 (merge commit 5a460de, 2026-07-03) follows c8ae9a750 on master; `llama-cli --version` prints that
    # commit as "9861 (c8ae9a750)", so b9861 is the last build without the fusion and b9862 the first with it.
    # Before: gather 2 + op 2 + copy 2 = 6 state passes; from b9862: the copy fused, 2 + 2 = 4
    for backend in ("cuda", "rocm"):
        assert RS.state_passes("gated_deltanet", "fused", backend, 9861) == 2 + 2 + 2
        assert RS.state_passes("gated_deltanet", "fused", backend, 9862) == 2 + 2
        assert RS.state_passes("gated_deltanet", "fused", backend) == 4           # the modelled build
    # Ollama v0.31.0 builds llama-server at b9840 (before), v0.31.2 at b9888 (after: data/ollama_llama_cpp.json)
    from asking import check_json

    def passes(release: str) -> str:
        steps = check_json("qwen3.5-35b-a3b", "--gpu", "rtx-5090", "--runtime", release, "--ctx", "4096")["explain"]
        return next(s["formula"] for s in steps if "passes" in s["formula"] and "state" in s["formula"])

    assert passes("ollama==0.31.0").count("(6 passes ×") == 1 and "at b9840" in passes("ollama==0.31.0")
    assert passes("ollama==0.31.2").count("(4 passes ×") == 1


def test_a_record_dated_before_pr_23940_counts_six_passes():
    # lemonade-sdk/llamacpp-rocm PR #88's rows (2026-04-23) name no build number; dated before PR #23940's merge
    # (2026-07-03), their build has no fusion: a Qwen3-Next tg row (36 delta-net layers of 32 × 128 × 128 = 524,288
    # state elements) moves 36 × 2 × 524,288 × 4 B more than the same row dated after it
    from runlocal.evidence.speed_fit import build_rows

    rec = {"n_devices": 1, "runtime": "llama.cpp", "device": "ryzen-ai-max-395-128gb", "backend": "rocm",
           "model": "qwen3-next-80b-a3b", "quant": "Q5_K_M", "model_gib": 55.45, "test": "tg128", "tokens_per_s": 39.0,
           "gdn_path": "fused", "recurrent": "gated_deltanet", "build": "no number shown"}
    old, new = build_rows([{**rec, "date": "2026-04-23"}, {**rec, "date": "2026-08-01"}])
    assert old.w_read - new.w_read == 36 * 2 * 524_288 * 4


def _gdn_cache_fusion_matches(S_v: int, H: int, n_tokens: int, n_seqs: int, K: int,
                              src_offs: int, dst_ne: tuple[int, int, int, int], dst_nb1: int) -> bool:
    """The shape conditions of ggml_cuda_try_gdn_cache_fusion (ggml-org/llama.cpp ggml/src/ggml-cuda/ggml-cuda.cu at
    00108827d87949b538ad1821f81a6b111827fcda; Metal's ggml_metal_fusion_check_gdn_cache in ggml-metal-fusion.cpp at
    4516952034ceb0825bbf70db6bb061061b077d6d checks the same), as written there:

        const int64_t K         = ggml_get_op_params_i32(gdn, 0); // snapshot slot count
        const int64_t n_written = std::min<int64_t>(n_tokens, K);
        const size_t  tail_off  = ggml_row_size(GGML_TYPE_F32, S_v * H * n_tokens * n_seqs);
        if (src->op != GGML_OP_VIEW || src->view_src != gdn || src->view_offs != tail_off || ...) return 0;
        const std::array<int64_t, GGML_MAX_DIMS> expected_ne = { D, n_seqs, n_written, 1 };
        if (... !std::equal(expected_ne..., dst->ne) || ... dst->nb[1] != ggml_row_size(GGML_TYPE_F32, D)) return 0;
        fused_state_cpy.slot_stride = K > 1 ? (int64_t) (dst->nb[2] / sizeof(float)) : 0;

    There is no ``if (K <= 1) return 0;`` in either function: K == 1 is handled (slot_stride 0), not refused."""
    D = S_v * S_v * H
    n_written = min(n_tokens, K)
    tail_off = 4 * S_v * H * n_tokens * n_seqs
    return src_offs == tail_off and dst_ne == (D, n_seqs, n_written, 1) and dst_nb1 == 4 * D


def test_one_token_decode_passes_the_cuda_and_metal_gdn_cache_fusion_check():
    # Plain decode (no draft model: cparams.n_rs_seq == 0) builds, in build_recurrent_attn's `!keep` branch,
    #   build_delta_net → build_delta_net_fused → ggml_gated_delta_net(..., K = 1)   (K an op param since PR #24086)
    #   new_state = ggml_view_4d(result, S_v, S_v, H_v, n_seqs, ..., offset = row_size(S_v * H_v * n_tokens * n_seqs))
    #   ggml_cpy(new_state, ggml_view_2d(ssm_states_all, n_embd_s, n_seqs, ssm_states_all->nb[1], kv_head * row))
    # ssm_states_all is f32 [n_embd_s, mem_size], n_embd_s = S_v * S_v * H_v, so the destination view is
    # ne = (n_embd_s, n_seqs, 1, 1) with nb[1] = 4 × n_embd_s bytes. Qwen3.5 / Qwen3-Next: S_v 128, H_v 32.
    S_v, H = 128, 32
    D = S_v * S_v * H                       # 524,288 = STATE
    assert D == STATE
    for n_seqs in (1, 4):                   # -np 1, and four sequences decoded in one ubatch (-np 4)
        tail = 4 * S_v * H * 1 * n_seqs     # the new_state view's offset: past the one token's attention output
        assert _gdn_cache_fusion_matches(S_v, H, n_tokens=1, n_seqs=n_seqs, K=1,
                                         src_offs=tail, dst_ne=(D, n_seqs, 1, 1), dst_nb1=4 * D)
    # so the copy is fused at one-token decode: gather 2 + op 2 = 4 passes on CUDA / HIP (from b9862) and Metal
    for backend in ("cuda", "rocm", "metal"):
        assert RS.state_passes("gated_deltanet", "fused", backend) == 2 + 2
    # the check is shape-exact: a destination with the wrong per-sequence stride (one not D apart) is refused
    assert not _gdn_cache_fusion_matches(S_v, H, 1, 4, 1, 4 * S_v * H * 4, (D, 4, 1, 1), 4 * 2 * D)


def test_a_named_build_before_b8100_decodes_through_the_unfused_delta_net_graph():
    # review15d: `-r llama.cpp==b7437` planned its delta nets' memory with the unfused graph (runtimes/versions.py
    # llamacpp_gdn: b8099 and older) but priced decode with the fused one. Qwen3-Next-80B-A3B (config.json): 36 of its
    # 48 layers are gated delta nets, each with a 32 heads × 128 × 128 f32 state (524,288 elements); the unfused
    # one-token graph moves it 18 times (gather 2 + the autoregressive graph's 14 + cache copy 2), the fused one 4 on
    # CUDA from b9862 — so the named old build moves 36 × 524,288 × 4 B × (18 − 4) = 1.057 GB more a token
    from runlocal.hardware.catalog import find_device
    from runlocal.hardware.speed import speed_plan
    from runlocal.model.catalog import lookup
    from runlocal.plan import make_plan
    from runlocal.runtimes import Settings, Target, get_runtime

    dev = find_device("rtx-4090")
    gpu = Target(dev.name, "gpu", dev.memory_bytes, dev.bandwidth_gbs, dev.memory_bytes)
    model = lookup("qwen3-next-80b-a3b")
    traffic, decode = {}, {}
    for rt in ("llama.cpp==b7437", "llama.cpp"):
        plan = make_plan(model, Settings(ctx=4096), [gpu], with_fixes=False, runtime=get_runtime(rt))
        traffic[rt] = speed_plan(model, plan.settings.quant, plan.allocation, [gpu], 50.0).state_traffic
        decode[rt] = plan.speed["decode_tokens_per_s"]
    assert traffic["llama.cpp==b7437"] - traffic["llama.cpp"] == pytest.approx(36 * 524288 * 4 * (18 - 4), rel=1e-9)
    assert decode["llama.cpp==b7437"] < decode["llama.cpp"]


def test_the_scan_step_says_its_prompt_path_is_unvalidated_on_current_builds():
    # review15b #6: every scored held-out hybrid prompt row of round 2 ran a build before b8301 (hybrid2.jsonl's
    # builds: b7946 and the PR #19375 branch on an M2 Ultra, a December 2025 build on an RTX PRO 6000), so the fused
    # prompt graph a plan assumes is not checked by any scored held-out row; --explain's scan step must say so
    from asking import check_json

    held = Path(__file__).resolve().parents[2] / "measurements/speed/held_out/hybrid2.jsonl"
    prompts = [json.loads(line) for line in held.read_text().splitlines() if line.strip()]
    prompts = [r for r in prompts if r["test"].startswith("pp") and r.get("recurrent") == "gated_deltanet"]
    # the older graphs (scored), and the one fused-path row: a mixture of experts on Vulkan, whose prompt the speed
    # model declines (backend_speed.moe_prefill_gap), so not scored
    fused = [r for r in prompts if r.get("gdn_path") != "unfused"]
    assert len(prompts) - len(fused) >= 9
    assert all(r["backend"] == "vulkan" and lookup(r["model"]).n_experts for r in fused)
    steps = check_json("qwen3.5-35b-a3b", "--gpu", "rtx-5090", "--ctx", "4096")["explain"]
    scan = next(s for s in steps if s["label"] == "prefill: recurrent scan")
    assert "unvalidated on current builds" in scan["formula"]
    assert "b8301" in scan["formula"]
    # round 4's rule and log (held_out/hybrid4_queries.md) are what the words cite for "found none scorable"
    rule = held.parent / "hybrid4_queries.md"
    assert "**Result: 0 records.**" in rule.read_text() and "hybrid4_queries.md" in scan["formula"]
