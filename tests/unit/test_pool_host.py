"""vLLM and SGLang plans list the host too (memory.devices: one entry per device the engine uses). vLLM's host
holds its CPU swap space (V0: pinned KV blocks, 4 GiB per GPU by default) and every version refuses a swap space
above 70 % of the host's RAM (config cache.py verify_with_parallel_config)."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.model import catalog
from runlocal.runtimes import Settings
from runlocal.runtimes.vllm import VLLM

GiB = 1 << 30


def _plan(runtime, ram, gpu="2xh100"):
    return check(CheckRequest(model="llama-3.1-8b", runtime=runtime, gpu=gpu, ram=ram, ctx=8192,
                              use_measurements=False))[0]


def test_host_is_a_device_of_vllm_and_sglang_plans():
    for runtime in ("vllm", "sglang"):
        devs = _plan(runtime, "64G").to_dict()["memory"]["devices"]
        assert [d["kind"] for d in devs] == ["gpu", "gpu", "cpu"]
        assert devs[-1]["capacity"] == 64 * GiB


def test_vllm_refuses_a_swap_space_over_70_percent_of_ram():
    # TP 2 × 4 GiB = 8 GiB of swap: refused at 11 GiB of RAM (8 > 7.7), started at 12 GiB (8 < 8.4)
    small = _plan("vllm", "11G")
    assert small.allocation.refusal.startswith("Too large swap space. 8.00 GiB out of the 11.00 GiB")
    assert small.verdict == "does_not_fit"
    assert _plan("vllm", "12G").allocation.refusal is None


def test_v0_holds_the_swap_space_as_cpu_kv_blocks():
    # issue #10517 (V0): "# CPU blocks: 2048" for Llama 3.1 8B: 2,048 × 16 tokens × 128 KiB = 4 GiB
    from runlocal.hardware.targets import targets_from_options
    from runlocal.quant.formats import estimate_weights

    model = catalog.lookup("llama-3.1-8b")
    weights = estimate_weights(model, "bf16")
    targets, _ = targets_from_options("rtx-3090", None, "64G")
    settings = Settings(runtime="vllm", ctx=8192)
    v0 = VLLM("v0.6").allocate(model, weights, settings, targets).devices[-1]
    assert v0.kind == "cpu" and v0.kv_cache == 2048 * 16 * 128 * 1024
    v1 = VLLM().allocate(model, weights, settings, targets).devices[-1]
    assert v1.kind == "cpu" and v1.kv_cache == 0


def test_the_swap_refusal_is_fixed_by_the_swap_space_vllm_accepts():
    # A 32B AWQ on 2 × 16 GB with 8 GB of RAM: 4 GiB × TP 2 = 8 GiB > 0.7 × 8 = 5.6 GiB, refused; vLLM's own error
    # says to lower --swap-space. 2 GiB × 2 = 4 GiB passes, 3 GiB × 2 = 6 GiB does not: the fix is 2.
    req = dict(model="qwen2.5-32b", runtime="vllm", gpu="2x4060ti-16gb", ram="8G", ctx=4096, quant="awq",
               use_measurements=False)
    plan = check(CheckRequest(**req))[0]
    assert plan.verdict == "does_not_fit" and "Too large swap space" in plan.allocation.refusal
    first = plan.fixes[0]
    assert first.command.endswith("--swap-space 2") and "does not fit → fits" in first.effect
    assert check(CheckRequest(**req, swap_space=3))[0].verdict == "does_not_fit"
    after = check(CheckRequest(**req, swap_space=2))[0]
    assert after.verdict != "does_not_fit" and after.command.endswith("--swap-space 2")
    assert check(CheckRequest(**{**req, "ram": "64G"}))[0].command.count("--swap-space") == 0   # default 4: unsaid
