"""review18 finding 7, read against the transformers 5.23.0 wheel the planner models (runtimes/transformers.py):
- AWQ, GPTQ and bitsandbytes load on a CPU-only machine (AWQ / GPTQ through gptqmodel, whose torch kernels run on any
  device; bitsandbytes 0.50.2 lists "cpu" in supported_torch_devices): no refusal. The "GPU is required to run AWQ
  quantized model" RuntimeError is transformers 4.x's (≤ 4.45 always; 4.46–4.53 unless the config asks for IPEX).
- a pre-quantized fine-grained FP8 checkpoint is dequantized to bf16 at load with no CUDA GPU / XPU and on a CUDA GPU
  below compute capability 8.9 (quantizers/quantizer_finegrained_fp8.py validate_environment), so its weights take
  2 B a parameter there: Qwen3-8B has 8,190,735,360 parameters (config.json / the safetensors index) → 16,381,470,720 B.
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check

QWEN3_8B_PARAMS = 8_190_735_360


def _plan(gpu, quant):
    return check(CheckRequest(model="qwen3-8b", runtime="transformers", quant=quant, gpu=gpu, ram="32G",
                              use_measurements=False))[0]


@pytest.mark.parametrize("gpu", ["none", "rtx-3090", "a100-80gb"])        # CPU; compute capability 8.6 and 8.0
def test_fp8_checkpoint_is_planned_in_bf16_where_transformers_dequantizes_it(gpu):
    plan = _plan(gpu, "fp8")
    assert plan.allocation.devices[0].weights == 2 * QWEN3_8B_PARAMS == 16_381_470_720
    assert any(a.startswith("FP8 checkpoint dequantized to bf16 at load") for a in plan.allocation.assumptions)


@pytest.mark.parametrize("gpu", ["rtx-4090", "h100"])                     # compute capability 8.9 and 9.0
def test_fp8_checkpoint_stays_fp8_on_an_fp8_gpu(gpu):
    plan = _plan(gpu, "fp8")
    # one byte per linear weight plus 16-bit embeddings / norms / lm_head: well under 2 B a parameter
    assert plan.allocation.devices[0].weights < 1.2 * QWEN3_8B_PARAMS
    assert not any("dequantized" in a for a in plan.allocation.assumptions)


@pytest.mark.parametrize("quant", ["awq", "nf4", "int8"])
def test_awq_and_bitsandbytes_are_not_refused_on_a_cpu(quant):
    plan = _plan("none", quant)
    assert plan.allocation.refusal is None and plan.verdict != "does_not_fit"


# RedHatAI's compressed-tensors FP8 checkpoints (fp8-channel, llm-compressor's FP8_DYNAMIC), read in the transformers
# 5.23.0 wheel (quantizer_compressed_tensors.py; 5.24.0's is the same file) and compressed-tensors 0.20.0: from_pretrained
# with no quantization_config argument (the printed command) keeps CompressedTensorsConfig's defaults dequantize=False,
# use_optimized_inference=False — "the regular compressed-tensors route": _process_model_before_weight_loading runs
# compress_model (each quantized Linear given its FP8 weight) before _get_device_map (modeling_utils.py: preprocess_model
# comes first), whose compute_module_sizes counts each param at its own element size (1 B an FP8 weight); compress_model
# ends with add_decompress_hook, a forward pre-hook that runs decompress_model at the first forward — every quantized
# module's weight dequantized in place to its scale's dtype (lifecycle/forward.py dequantize: dtype = scale.dtype, 16
# bit). Only use_optimized_inference=True on a CUDA GPU of compute capability ≥ 8.9 keeps FP8, and the command does not
# pass it. So on every device the model runs with 16-bit weights placed where the FP8 sizes put them.
# Llama-3.1-8B: 8,030,261,248 parameters; 2 B each = 16,060,522,496 B (meta-llama/Llama-3.1-8B-Instruct's
# model.safetensors.index.json total_size, its bf16 checkpoint).
LLAMA31_8B_BF16_BYTES = 2 * 8_030_261_248


def _llama(gpu, quant="fp8"):
    return check(CheckRequest(model="llama-3.1-8b", runtime="transformers", quant=quant, gpu=gpu, ram="32G",
                              use_measurements=False))[0]


@pytest.mark.parametrize("gpu", ["none", "rtx-3090", "rtx-4090", "h100"])   # CPU; cc 8.6, 8.9, 9.0: every device
def test_compressed_tensors_fp8_runs_in_bf16_on_every_device(gpu):
    plan = _llama(gpu)
    assert plan.settings.quant == "fp8-channel" and plan.weights.total < 0.6 * LLAMA31_8B_BF16_BYTES   # stored FP8
    assert sum(d.weights for d in plan.allocation.devices) == LLAMA31_8B_BF16_BYTES == 16_060_522_496
    note = next(a for a in plan.allocation.assumptions if a.startswith("compressed-tensors FP8 checkpoint"))
    assert f"{plan.weights.total:,} B stored → {LLAMA31_8B_BF16_BYTES:,} B" in note
    # the speed reads the bf16 weights a token multiplies: at most what 16 GB over the device's bandwidth allows
    decode = plan.speed["decode_tokens_per_s"]
    assert decode is not None
    bandwidth = {"none": 89.6, "rtx-3090": 936.0, "rtx-4090": 1008.0, "h100": 3350.0}[gpu]   # GB/s, datasheets
    assert decode < bandwidth / (LLAMA31_8B_BF16_BYTES / 1e9 - 1.05)   # the input embedding (1.05 GB) is read a row


def test_compressed_tensors_fp8_is_placed_at_its_fp8_size_then_outgrows_the_gpu():
    """RTX 3060 (11.75 GiB as CUDA reports it): accelerate sizes the stored FP8 layout (~8.5 GiB), which fits, so every
    module goes to the GPU; decompressed there it is 16,060,522,496 B = 14.96 GiB > 11.75 GiB — an out-of-memory at the
    first forward. A model sized in bf16 from the start (-q bf16) would have been split with RAM instead."""
    plan = _llama("rtx-3060")
    gpu = plan.allocation.devices[0]
    assert gpu.kind != "cpu" and gpu.weights == LLAMA31_8B_BF16_BYTES and plan.verdict == "does_not_fit"
    assert LLAMA31_8B_BF16_BYTES / 2**30 > gpu.capacity / 2**30 == pytest.approx(11.75, abs=0.01)
    bf16 = _llama("rtx-3060", "bf16")
    assert bf16.allocation.devices[-1].kind == "cpu" and bf16.allocation.devices[-1].weights > 0


def test_the_checkpoint_line_no_longer_says_loads_as_stored_before_the_dequantization():
    """The CPU plan of `-q fp8` (fixes18a's noticed-and-left): its first assumption said "loads as stored" and the
    second "dequantized to bf16"; the first now leaves which to the second, which gives the bytes (qwen3-8b:
    9,437,399,040 B stored — its FP8 checkpoint — → 2 × 8,190,735,360 = 16,381,470,720 B)."""
    plan = _plan("none", "fp8")
    first, second = plan.to_dict()["assumptions"][:2]
    assert "loads as stored" not in first and "as stored where it runs FP8, else dequantized to bf16" in first
    assert second.startswith("FP8 checkpoint dequantized to bf16 at load (no CUDA GPU or XPU): 9,437,399,040 B stored → "
                             f"{2 * QWEN3_8B_PARAMS:,} B")
    kept = _plan("rtx-4090", "fp8").to_dict()["assumptions"][1]
    assert kept.startswith("FP8 checkpoint kept as stored, FP8Linear (NVIDIA GeForce RTX 4090: compute capability 8.9")


def test_a_dequantized_fp8_plan_is_priced_as_bf16_matmuls():
    """The prefill of a checkpoint run in bf16 is measured against the card's fp16/bf16 tensor peak, not its int8 TOPS
    (RTX 3090: 71 dense fp16 TFLOPS vs 284.7 int8 TOPS): the same figure as the bf16 checkpoint's plan."""
    fp8, bf16 = _plan("rtx-3090", "fp8"), _plan("rtx-3090", "bf16")
    assert fp8.allocation.weights_as_run == "bf16"
    assert fp8.speed["prefill_tokens_per_s"] == bf16.speed["prefill_tokens_per_s"]
    steps = [st.formula for st in fp8.steps if st.label == "prefill speed"]
    assert steps and "int8 TOPS" not in steps[0]


def test_a_smaller_format_is_measured_against_the_weights_as_held():
    """The RTX 3060 plan above holds 16,060,522,496 B (14.96 GiB) of bf16 weights; bitsandbytes int8 (1 B a linear
    weight, embeddings and lm_head in 16 bit) is about the stored FP8 size — smaller than what the plan holds, so it
    is offered first (it was skipped as 'not smaller than 8.46 GiB', and nf4 offered instead) and it fits."""
    plan = _llama("rtx-3060")
    first = plan.fixes[0]
    assert first.title == "Quantize the weights to int8"
    assert first.effect.startswith(f"weights {LLAMA31_8B_BF16_BYTES / 2**30:.0f} GiB → ") and "→ fits" in first.effect


def test_a_dequantized_plan_says_so_in_the_header_and_the_site_gives_the_bytes_held(tmp_path):
    """mends19's leftover: the header read 'fp8-channel weights' and the site's Weights fact the stored size
    (Llama-3.1-8B-Instruct-FP8-dynamic: 9,086,705,664 B = 8.46 GiB) where the plan holds the bf16 bytes,
    2 × 8,030,261,248 = 16,060,522,496 B = 14.957… GiB (/ 2^30)."""
    import io

    from fastapi.testclient import TestClient
    from rich.console import Console

    from runlocal.render.text import render_plan
    from runlocal.testing.browser import served_app

    plan = _llama("rtx-3090")
    out = io.StringIO()
    render_plan(plan, Console(file=out, width=200, color_system=None))
    header = out.getvalue().splitlines()[0]
    assert "· fp8-channel checkpoint, run as bf16 · KV" in header and "fp8-channel weights" not in header
    app = served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="x")
    html = TestClient(app, base_url="http://127.0.0.1").get("/", params={
        "model": "llama-3.1-8b", "runtime": "transformers", "quant": "fp8", "gpu": "rtx-3090"}).text
    # format_bytes keeps three figures: 14.957… GiB prints "15 GiB" (the stored 8.46 GiB before)
    assert "<dt>Weights</dt><dd>15 GiB <small>fp8-channel checkpoint, run as bf16</small>" in html
    kept = _plan("rtx-4090", "fp8")                     # FP8 kept (cc 8.9): the type and the stored bytes, as before
    assert kept.allocation.weights_as_run is None


# AutoFP8's per-tensor checkpoints (neuralmagic/AutoFP8 auto_fp8/quantize.py save_quantized_model: quantization_config
# {"quant_method": "fp8", "activation_scheme": ..., "ignored_layers": [...]}, each Linear's `weight` in fp8 e4m3 beside
# scalar `weight_scale` and `input_scale`). transformers 5.24.0 maps "fp8" to FineGrainedFP8Config (quantizers/auto.py),
# whose quantizer reads `weight`, `weight_scale_inv`, `activation_scale` only (quantizer_finegrained_fp8.py
# serialized_names) and dequantizes below cc 8.9 / without CUDA (validate_environment). So: held in bf16 on a CPU or a
# 3090 (2 × 8,030,261,248 B for Llama-3-8B, the same parameter count as 3.1), FP8 on a 4090 / H100 — and the scales are
# never read, on any device (test_autofp8_scales_are_not_read_by_the_installed_transformers loads one).
@pytest.mark.parametrize("gpu, held", [("none", LLAMA31_8B_BF16_BYTES), ("rtx-3090", LLAMA31_8B_BF16_BYTES),
                                       ("rtx-4090", None), ("h100", None)])
def test_autofp8_checkpoints_are_planned_as_transformers_loads_them(gpu, held):
    plan = check(CheckRequest(model="llama-3-8b", runtime="transformers", quant="fp8", gpu=gpu, ram="32G",
                              use_measurements=False))[0]
    assert plan.settings.quant == "fp8"
    weights = sum(d.weights for d in plan.allocation.devices)
    assert weights == (held or plan.weights.total) and plan.weights.total < 0.6 * LLAMA31_8B_BF16_BYTES
    assert plan.allocation.weights_as_run == ("bf16" if held else None)
    assert plan.verdict == "does_not_fit" and "weight_scale" in (plan.allocation.refusal or "")


def test_autofp8_scales_are_not_read_by_the_installed_transformers(tmp_path):
    """The independent check: a one-layer Llama saved in AutoFP8's layout, loaded by the transformers on this machine
    (CPU only, so the dequantizing path): every Linear comes back bf16 without its scale — max |W| is e4m3's 448, not
    the original's — and the checkpoint's weight_scale / input_scale are reported as unexpected keys."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip("the planner models transformers 5.x")
    import json

    from safetensors.torch import save_file

    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=1, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=512)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    tensors, original = {}, model.model.layers[0].self_attn.q_proj.weight.float().abs().max().item()
    for name, value in model.state_dict().items():
        module = name.rsplit(".", 1)[0]
        if name.endswith(".weight") and "lm_head" not in name and isinstance(model.get_submodule(module), torch.nn.Linear):
            scale = value.float().abs().max() / 448.0                 # AutoFP8 per_tensor_quantize: amax / e4m3 max
            tensors[name] = (value.float() / scale).clamp(-448, 448).to(torch.float8_e4m3fn)
            tensors[f"{module}.weight_scale"], tensors[f"{module}.input_scale"] = scale, torch.tensor(0.01)
        else:
            tensors[name] = value.contiguous()
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    config = cfg.to_dict() | {"torch_dtype": "bfloat16", "quantization_config": {
        "quant_method": "fp8", "activation_scheme": "static", "ignored_layers": ["lm_head"]}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, dtype="auto", output_loading_info=True)
    q_proj = loaded.model.layers[0].self_attn.q_proj
    assert q_proj.weight.dtype == torch.bfloat16                       # held in bf16: 2 B a weight
    assert q_proj.weight.float().abs().max().item() == 448.0 != pytest.approx(original, rel=0.1)
    assert {"model.layers.0.self_attn.q_proj.weight_scale", "model.layers.0.self_attn.q_proj.input_scale"} <= set(
        info["unexpected_keys"])
