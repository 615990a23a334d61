"""vLLM on an NVIDIA unified-memory device takes --gpu-memory-utilization of CUDA's total and stops at start-up when
less than that is free (review22 finding 1; runtimes/vllm_unified.py). The figures below are the public logs' own:

- NVIDIA-AI-Blueprints/video-search-and-summarization#1743 (GB10): "Free memory on device cuda:0 (67.92/121.69 GiB)
  on startup is less than desired GPU memory utilization (0.7, 85.18 GiB)."
- a GB10 crash loop quoted in a public test fixture (review22 E8): "(85.92/121.69 GiB) … (0.92, 111.95 GiB)".
- MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47: free "caps at 101.3–102.2 GiB of 121.69", 0.87 wants 105.87 GiB and
  "never passes"; the thread runs at 0.82–0.83.
"""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.runtimes import Target
from runlocal.runtimes.vllm_unified import budget_base, largest_share, start_refusal
from runlocal.units import GiB

SPARK = "NVIDIA DGX Spark (GB10)"


def spark(free_gib: float) -> Target:
    return Target(SPARK, "unified", int(free_gib * GiB), 273, 128 * GiB)


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


@pytest.mark.parametrize("free, util, logged", [
    (67.92, 0.7, "Free memory on device cuda:0 (67.92/121.69 GiB) on startup is less than desired GPU memory "
                 "utilization (0.7, 85.18 GiB)"),
    (85.92, 0.92, "Free memory on device cuda:0 (85.92/121.69 GiB) on startup is less than desired GPU memory "
                  "utilization (0.92, 111.95 GiB)"),
    (102.2, 0.87, "(102.2/121.69 GiB) on startup is less than desired GPU memory utilization (0.87, 105.87 GiB)"),
])
def test_the_refusal_reads_as_the_public_gb10_logs_print_it(free, util, logged):
    refusal = start_refusal(spark(free), util, None)
    assert refusal is not None and logged in refusal


def test_the_largest_share_that_starts_is_free_over_total_rounded_down():
    # by hand: 102.2 / 121.69 = 0.8398 → 0.83, the 0.82–0.83 MiaAI-Lab#47 runs at; 0.83 × 121.69 = 101.00 ≤ 102.2
    assert largest_share(spark(102.2)) == 0.83
    assert start_refusal(spark(102.2), 0.83, None) is None
    assert "--gpu-memory-utilization 0.83 starts" in start_refusal(spark(102.2), 0.87, None)
    # 67.92 / 121.69 = 0.5581 → 0.55 (0.55 × 121.69 = 66.93 ≤ 67.92; 0.56 × 121.69 = 68.15 > 67.92)
    assert largest_share(spark(67.92)) == 0.55


def test_a_release_before_the_check_does_not_refuse():
    # the 0.8.5 wheel's gpu_worker.py has no start-up check; issue #20305 reports it on 0.9.1
    assert start_refusal(spark(85.92), 0.92, (0, 8, 5)) is None
    assert start_refusal(spark(85.92), 0.92, (0, 9, 1)) is not None


def test_a_discrete_card_keeps_its_capacity_as_the_base():
    card = Target("NVIDIA GeForce RTX 4090", "gpu", int(23.64 * GiB), 1008, 24 * GiB)
    assert budget_base(card) == card.capacity and start_refusal(card, 0.92, None) is None


def test_the_catalog_spark_refuses_the_default_and_starts_at_083():
    refused = plan(model="gpt-oss-120b", gpu="dgx-spark", runtime="vllm")
    assert refused.verdict == "does_not_fit"
    # by hand: devices.json plans 0.79 × 128 = 101.12 GiB free (at most MiaAI-Lab#47's lowest, 101.3);
    # 0.92 × 121.69 = 111.95 GiB > 101.12
    assert "(101.12/121.69 GiB)" in refused.allocation.refusal and "(0.92, 111.95 GiB)" in refused.allocation.refusal
    # 101.12 / 121.69 = 0.8310 → 0.83, the 0.82–0.83 the thread runs at; 0.83 × 121.69 = 101.00 GiB ≤ 101.12
    assert "--gpu-memory-utilization 0.83 starts" in refused.allocation.refusal
    started = plan(model="gpt-oss-120b", gpu="dgx-spark", runtime="vllm", gpu_memory_utilization=0.83)
    assert started.allocation.refusal is None and started.verdict != "does_not_fit"
    budget = next(st for st in started.allocation.steps if st.label == "budget")
    assert budget.value == f"{int(int(121.69 * GiB) * 0.83):,} B"
    assert "--gpu-memory-utilization 0.83" in started.command
    # the fix the plan offers is that fraction, and its KV pool is the started plan's
    fix = next(f for f in refused.fixes if "gpu_memory_utilization to 0.83" in f.title)
    assert f"KV pool {started.allocation.kv_cache_tokens:,} tokens" in fix.effect
    # check and diagnose agree: the same refusal pasted into diagnose gives the same fraction
    from runlocal.diagnose.fixes import with_computed_fixes
    from runlocal.diagnose.reading import diagnose_text

    pasted = "ValueError: " + refused.allocation.refusal.split(" (vLLM refuses")[0] + "."
    doc = with_computed_fixes(diagnose_text(pasted))
    assert doc["fixes"][0]["command"].endswith("--gpu-memory-utilization 0.83")


def test_the_jetson_totals_are_the_posted_device_lines():
    from runlocal.hardware.catalog import find_device

    # ggml_cuda_init on an Orin AGX 64GB: "Total VRAM: 62827 MiB" = 62827 / 1024 = 61.35 GiB;
    # on an Orin Nano Super: "Total VRAM: 7607 MiB" = 7.43 GiB
    assert find_device("jetson-agx-orin-64gb").cuda_total_bytes == int(round(62827 / 1024, 2) * GiB)
    assert find_device("jetson-orin-nano-super-8gb").cuda_total_bytes == int(round(7607 / 1024, 2) * GiB)
    orin = plan(model="qwen3-0.6b", gpu="jetson-agx-orin-64gb", runtime="vllm")
    # the free figure there is runlocal's assumption (0.75 × 64 = 48 GiB), and the refusal says so;
    # 48 / 61.35 = 0.7824 → 0.78
    assert "not measured on this device" in orin.allocation.refusal
    assert "--gpu-memory-utilization 0.78 starts" in orin.allocation.refusal


def test_best_plans_a_spark_at_the_fraction_that_starts():
    # `best` ranks a device as it would run: at the default vLLM stops on a Spark, at 0.83 (by hand above) it starts
    from runlocal.choose import device_targets, plan_fit
    from runlocal.hardware.catalog import find_device
    from runlocal.model.catalog import lookup

    model = lookup("gpt-oss-120b")
    fit = plan_fit(model, device_targets(find_device("dgx-spark")), runtime="vllm", ctx=8192, quant=None)
    assert fit.verdict != "does_not_fit" and "--gpu-memory-utilization 0.83" in fit.command
    four090 = plan_fit(lookup("qwen3-8b"), device_targets(find_device("rtx-4090")), runtime="vllm", ctx=8192,
                       quant=None)
    assert "--gpu-memory-utilization" not in four090.command     # a discrete card keeps vLLM's default


def test_compare_shows_a_spark_at_the_fraction_that_starts():
    from runlocal.compare import compare_devices

    row = compare_devices(["dgx-spark"], model="gpt-oss-120b", runtime="vllm")[0]
    assert row["verdict"] != "does_not_fit" and "--gpu-memory-utilization 0.83" in row["command"]
