"""--quant nvfp4 on vLLM and SGLang: the published NVFP4 checkpoint of a catalog model (data/published_checkpoints.json),
its weights by hand (4 bits a weight + an fp8 scale per 16 = 4.5 bits, plus two f32 scales per Linear; the modules
the checkpoint keeps unquantized at 16 bits), and which GPUs and releases run it."""

from __future__ import annotations

from runlocal.model import catalog
from runlocal.runtimes import Settings
from runlocal.runtimes.published import kernel_check
from runlocal.weights import estimate, with_default_quant


def _nvfp4_linear(out: int, inp: int, experts: int = 1) -> int:
    # two e2m1 values a byte + one e4m3 byte per 16 inputs + f32 global and input scales (8 bytes) per matrix
    return experts * (out * inp // 2 + out * inp // 16 + 8)


def test_llama_3_3_70b_nvidia_fp4_by_hand() -> None:
    # config.json (meta-llama/Llama-3.3-70B-Instruct): hidden 8192, 80 layers, 64 heads / 8 KV heads of 128,
    # intermediate 28672, vocab 128256, untied lm_head. ModelOpt's default keeps lm_head 16-bit.
    h, layers, kv, inter, vocab = 8192, 80, 1024, 28672, 128256
    per_layer = (_nvfp4_linear(h, h) * 2 + _nvfp4_linear(kv, h) * 2            # q, o; k, v
                 + _nvfp4_linear(inter, h) * 2 + _nvfp4_linear(h, inter))      # gate, up; down
    kept = 2 * (vocab * h * 2 + (2 * h * layers + h))                          # embed + lm_head + norms, bf16
    want = per_layer * layers + kept
    assert want == 42_709_045_632             # 39.8 GiB: 68.45B Linear params × 4.5 / 8 + 4.2 GB in 16 bit
    model = catalog.lookup("llama-3.3-70b")
    settings, steps = with_default_quant(model, Settings(runtime="vllm", quant="nvfp4"))
    assert settings.quant == "modelopt-nvfp4"
    assert "nvidia/Llama-3.3-70B-Instruct-FP4" in steps[0].formula
    assert estimate(model, settings.quant).total == want


def test_minimax_m2_redhat_nvfp4_keeps_router_and_head() -> None:
    # config.json (MiniMaxAI/MiniMax-M2): hidden 3072, 62 layers, 48 heads / 8 KV heads of 128, 256 experts of
    # intermediate 1536, vocab 200064. llm-compressor's MoE default ignore ["lm_head", "re:.*mlp.gate$"]: the router
    # and lm_head stay bf16, every other Linear (attention, experts) NVFP4.
    h, layers, q, kv, e, inter, vocab = 3072, 62, 6144, 1024, 256, 1536, 200064
    per_layer = (_nvfp4_linear(q, h) + _nvfp4_linear(kv, h) * 2 + _nvfp4_linear(h, q)
                 + _nvfp4_linear(2 * inter, h, e) + _nvfp4_linear(h, inter, e)
                 + e * h * 2                                                   # router, bf16
                 + (2 * h + q + kv) * 2)                                       # layer norms, q/k norms
    want = per_layer * layers + vocab * h * 2 * 2 + h * 2
    model = catalog.lookup("minimax-m2")
    settings, steps = with_default_quant(model, Settings(runtime="sglang", quant="NVFP4"))
    assert settings.quant == "ct-nvfp4" and "RedHatAI/MiniMax-M2-NVFP4" in steps[0].formula
    assert estimate(model, settings.quant).total == want
    # the vLLM recipe (recipes.vllm.ai/MiniMaxAI/MiniMax-M2) lists 138 GB minimum VRAM for this repo; weights 130.5 GB
    assert 125e9 < want < 138e9


def test_nvfp4_without_a_published_checkpoint_is_a_folder_to_make() -> None:
    model = catalog.lookup("qwen2.5-7b")
    settings, steps = with_default_quant(model, Settings(runtime="vllm", quant="nvfp4"))
    assert settings.quant == "ct-nvfp4"
    assert "ModelOpt or llm-compressor" in steps[0].formula


def test_nvfp4_gpus_by_engine_and_release() -> None:
    blackwell, hopper, turing = "NVIDIA GeForce RTX 5090", "NVIDIA H100 SXM 80GB", "NVIDIA T4"
    assert kernel_check("modelopt-nvfp4", blackwell) == (None, None)           # FP4 tensor cores, cc 12.0
    refusal, note = kernel_check("ct-nvfp4", hopper)
    assert refusal is None and note is not None and "Marlin" in note           # vLLM ≥ 0.9.0: weight-only FP4 Marlin
    assert kernel_check("ct-nvfp4", hopper, "vllm", "0.8.5")[0] is not None       # before PR #17687
    assert kernel_check("ct-nvfp4", turing)[0] is not None                        # Marlin FP4 needs cc ≥ 8.0
    assert kernel_check("modelopt-nvfp4", hopper, "sglang", "0.5.11")[0] is not None     # SGLang ≤ 0.5.11: min 100
    assert kernel_check("modelopt-nvfp4", hopper, "sglang")[0] is None                    # 0.5.13 on: FP4 Marlin
    assert kernel_check("modelopt-nvfp4", blackwell, "sglang") == (None, None)


def test_qwen3_6_27b_nvidia_mixed_precision_by_hand() -> None:
    # nvidia/Qwen3.6-27B-NVFP4 is a ModelOpt MIXED_PRECISION export: MLP Linears NVFP4, the attention projections FP8
    # per tensor (vllm-project/vllm#47215, recipes PR #663). config.json (Qwen/Qwen3.6-27B): hidden 5120, 64 layers of
    # which 16 full attention (q+gate 12288, k / v 1024, o from 6144) and 48 Gated DeltaNet (in_proj_qkv 10240,
    # in_proj_z 6144, in_proj_a / _b 48, out_proj from 6144), MLP intermediate 17408.
    h = 5120
    full_attn = 12288 * h + 1024 * h * 2 + h * 6144
    delta_attn = 10240 * h + 6144 * h + h * 6144
    fp8 = 16 * (full_attn + 4 * 8) + 48 * (delta_attn + 3 * 8)          # a byte a weight + two f32 scales each
    nvfp4 = 64 * 3 * _nvfp4_linear(17408, h) + 48 * 2 * _nvfp4_linear(48, h)
    linear_params = 16 * full_attn + 48 * delta_attn + 64 * 3 * 17408 * h + 48 * 2 * 48 * h
    model = catalog.lookup("qwen3.6-27b")
    kept = (model.params - linear_params) * 2       # embeddings, lm_head, vision tower, norms, conv1d: bf16
    assert estimate(model, "modelopt-nvfp4").total == fp8 + nvfp4 + kept


def test_qwen3_6_35b_a3b_nvidia_against_a_public_load() -> None:
    # vllm-project/vllm#44881 (vLLM 0.22.1rc1, RTX 5090): "Weight loading (3 shards, 21.82 GiB)" for
    # nvidia/Qwen3.6-35B-A3B-NVFP4. Planned without the checkpoint's MTP layer, which vLLM loads only for speculative
    # decoding — so the plan may be below it, not above.
    model = catalog.lookup("qwen3.6-35b-a3b")
    settings, _ = with_default_quant(model, Settings(runtime="vllm", quant="nvfp4"))
    planned = estimate(model, settings.quant).total / 2**30
    assert settings.quant == "modelopt-nvfp4"
    assert 0.9 * 21.82 < planned <= 21.82
