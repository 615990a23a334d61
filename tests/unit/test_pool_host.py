"""vLLM and SGLang plans list the host too (memory.devices: one entry per device the engine uses). vLLM's host
holds its CPU swap space (V0: pinned KV blocks, 4 GiB per GPU by default) and every release up to v0.17.1 refuses a
swap space above 70 % of the host's RAM (config cache.py verify_with_parallel_config); v0.18.0 removed the flag and
the check (PR #36216), so from it — and in the current release — neither is planned."""

from __future__ import annotations

from runlocal.check import CheckRequest, check
from runlocal.model import catalog
from runlocal.runtimes import Settings
from runlocal.runtimes.vllm import VLLM

GiB = 1 << 30


def _plan(runtime, ram, gpu="2xh100", **extra):
    return check(CheckRequest(model="llama-3.1-8b", runtime=runtime, gpu=gpu, ram=ram, ctx=8192,
                              use_measurements=False, **extra))[0]


def test_host_is_a_device_of_vllm_and_sglang_plans():
    for runtime in ("vllm", "sglang"):
        devs = _plan(runtime, "64G").to_dict()["memory"]["devices"]
        assert [d["kind"] for d in devs] == ["gpu", "gpu", "cpu"]
        assert devs[-1]["capacity"] == 64 * GiB


def test_vllm_up_to_0_17_refuses_a_swap_space_over_70_percent_of_ram():
    # TP 2 × 4 GiB = 8 GiB of swap: refused at 11 GiB of RAM (8 > 0.7 × 11 = 7.7), started at 12 GiB (8 < 8.4)
    small = _plan("vllm==0.17.1", "11G")
    assert small.allocation.refusal.startswith("Too large swap space. 8.00 GiB out of the 11.00 GiB")
    assert small.verdict == "does_not_fit"
    assert _plan("vllm==0.17.1", "12G").allocation.refusal is None


def test_vllm_from_0_18_has_no_swap_space_check():
    # PR #36216: v0.18.0 and the current release start at 11 GiB of RAM; the plan has no swap step and no RAM condition
    for runtime in ("vllm==0.18.0", "vllm"):
        plan = _plan(runtime, "11G")
        assert plan.allocation.refusal is None and plan.verdict != "does_not_fit"
        assert not any(st.label == "host swap space" for st in plan.allocation.steps)
        assert plan.allocation.devices[-1].kind == "cpu" and plan.allocation.devices[-1].kv_cache == 0
    assert any(st.label == "host swap space" for st in _plan("vllm==0.17.1", "64G").allocation.steps)


def test_swap_space_is_refused_by_name_where_vllm_has_none():
    import pytest

    from runlocal.errors import InputError

    for runtime in ("vllm==0.18.0", "vllm"):
        with pytest.raises(InputError, match=r"^swap-space: vLLM .* has no --swap-space \(removed in v0\.18\.0"):
            _plan(runtime, "64G", swap_space=2)
    assert _plan("vllm==0.17.1", "64G", swap_space=2).command.endswith("--swap-space 2")


def test_v0_holds_the_swap_space_as_cpu_kv_blocks():
    # issue #10517 (V0): "# CPU blocks: 2048" for Llama 3.1 8B: 2,048 × 16 tokens × 128 KiB = 4 GiB
    from runlocal.hardware.targets import targets_from_options
    from runlocal.quant.formats import estimate_weights

    model = catalog.lookup("llama-3.1-8b")
    weights = estimate_weights(model, "bf16")
    targets, _ = targets_from_options("rtx-3090", None, "64G")
    settings = Settings(runtime="vllm", ctx=8192)
    v0 = VLLM("v0.6").allocate(model, weights, settings, targets).devices[-1]
    # held as the host's overhead: swap blocks are no KV a decoded token reads (test_vllm_swap_not_read.py)
    assert v0.kind == "cpu" and v0.kv_cache == 0 and v0.overhead == 2048 * 16 * 128 * 1024
    v1 = VLLM("v1").allocate(model, weights, settings, targets)      # V1 up to v0.17.1: checked, not allocated
    assert v1.devices[-1].kind == "cpu" and v1.devices[-1].kv_cache == 0
    assert any(st.label == "host swap space" for st in v1.steps)


def test_the_swap_refusal_is_fixed_by_the_swap_space_vllm_accepts():
    # vLLM 0.17.1 (the last with --swap-space).
    # A 32B AWQ on 2 × 16 GB with 8 GB of RAM: 4 GiB × TP 2 = 8 GiB > 0.7 × 8 = 5.6 GiB, refused; vLLM's own error
    # says to lower --swap-space. 2 GiB × 2 = 4 GiB passes, 3 GiB × 2 = 6 GiB does not: the fix is 2.
    req = dict(model="qwen2.5-32b", runtime="vllm==0.17.1", gpu="2x4060ti-16gb", ram="8G", ctx=4096, quant="awq",
               use_measurements=False)
    plan = check(CheckRequest(**req))[0]
    assert plan.verdict == "does_not_fit" and "Too large swap space" in plan.allocation.refusal
    first = plan.fixes[0]
    assert first.command.endswith("--swap-space 2") and "does not fit → tight" in first.effect
    assert check(CheckRequest(**req, swap_space=3))[0].verdict == "does_not_fit"
    after = check(CheckRequest(**req, swap_space=2))[0]
    assert after.verdict != "does_not_fit" and after.command.endswith("--swap-space 2")
    assert check(CheckRequest(**{**req, "ram": "64G"}))[0].command.count("--swap-space") == 0   # default 4: unsaid


def test_no_swap_fix_or_flag_from_0_18():
    # the same 32B AWQ on 2 × 16 GB with 8 GB of RAM starts on v0.18.0 and the current release (no check to fail):
    # no fix or command names --swap-space
    for runtime in ("vllm==0.18.0", "vllm"):
        plan = check(CheckRequest(model="qwen2.5-32b", runtime=runtime, gpu="2x4060ti-16gb", ram="8G", ctx=16384,
                                  quant="awq", use_measurements=False))[0]
        assert plan.verdict != "does_not_fit" and "swap" not in (plan.allocation.refusal or "")
        assert "--swap-space" not in plan.command
        assert not any("--swap-space" in (f.command or "") for f in plan.fixes)
