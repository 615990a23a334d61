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
    assert "--gpu-memory-utilization 0.83 passes the start-up check" in start_refusal(spark(102.2), 0.87, None)
    # 67.92 / 121.69 = 0.5581 → 0.55 (0.55 × 121.69 = 66.93 ≤ 67.92; 0.56 × 121.69 = 68.15 > 67.92)
    assert largest_share(spark(67.92)) == 0.55


def test_a_release_before_the_check_does_not_refuse_in_its_words():
    # the 0.8.5 wheel's gpu_worker.py has no start-up check; issue #20305 reports it on 0.9.1: before it, the budget
    # over the free memory runs out of memory allocating the KV cache, said as such, not as vLLM's check
    before = start_refusal(spark(85.92), 0.92, (0, 8, 5))
    assert before is not None and before.startswith("Out of memory allocating the KV cache")
    assert "on startup is less than desired" not in before
    assert start_refusal(spark(85.92), 0.92, (0, 9, 1)).startswith("Free memory on device cuda:0 (85.92/121.69 GiB)")


ONE_GRAPHS = "0.82 is the largest whose budget and CUDA graphs the free memory covers"


@pytest.mark.parametrize("runtime, first, share", [
    # by hand: before v0.21 the CUDA graphs (0.5 GiB) are captured after the KV cache, on top of the budget, so the
    # fraction that runs is ⌊(101.12 − 0.5) / 121.69⌋ = ⌊0.8268⌋ = 0.82 (0.83 × 121.69 + 0.5 = 101.50 > 101.12) — the
    # "0.82" MiaAI-Lab#47 gives as the workaround; from v0.21 they are inside it: ⌊101.12 / 121.69⌋ = 0.83
    ("vllm==0.9.0", "Out of memory allocating the KV cache", ONE_GRAPHS),      # no check before 0.9.1
    ("vllm==0.19.0", "Free memory on device cuda:0 (101.12/121.69 GiB)", ONE_GRAPHS),
    ("vllm", "Free memory on device cuda:0 (101.12/121.69 GiB)", "0.83 passes the start-up check"),
])
def test_one_fraction_rule_for_every_release(runtime, first, share):
    p = plan(model="llama-3.1-8b", gpu="dgx-spark", runtime=runtime)
    assert p.verdict == "does_not_fit" and p.allocation.refusal.startswith(first)
    assert f"--gpu-memory-utilization {share}" in p.allocation.refusal
    fraction = share.split()[0]
    assert p.fixes and p.fixes[0].title == f"Lower gpu_memory_utilization to {fraction}"
    if runtime == "vllm==0.9.0":
        # 0.9 × 121.69 = 109.52 GiB, + 0.50 GiB of graphs, over the 101.12 GiB free
        assert "0.9 × 121.69 = 109.52 GiB + 0.50 GiB of CUDA graphs" in p.allocation.refusal


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
    assert "--gpu-memory-utilization 0.83 passes the start-up check" in refused.allocation.refusal
    started = plan(model="gpt-oss-120b", gpu="dgx-spark", runtime="vllm", gpu_memory_utilization=0.83)
    assert started.allocation.refusal is None and started.verdict != "does_not_fit"
    budget = next(st for st in started.allocation.steps if st.label == "budget")
    assert budget.value == f"{int(int(121.69 * GiB) * 0.83):,} B"
    assert "--gpu-memory-utilization 0.83" in started.command
    assert "but the weights" not in refused.allocation.refusal     # gpt-oss-120b's MXFP4 (~61 GiB) fits 0.83's budget
    # the fix the plan offers is that fraction, and its KV pool is the started plan's
    fix = next(f for f in refused.fixes if "gpu_memory_utilization to 0.83" in f.title)
    assert f"KV pool {started.allocation.kv_cache_tokens:,} tokens" in fix.effect
    # check and diagnose agree: the same refusal pasted into diagnose gives the same fraction
    from runlocal.diagnose.fixes import with_computed_fixes
    from runlocal.diagnose.reading import diagnose_text

    pasted = "ValueError: " + refused.allocation.refusal.split(" (vLLM refuses")[0] + "."
    doc = with_computed_fixes(diagnose_text(pasted))
    assert doc["fixes"][0]["command"].endswith("--gpu-memory-utilization 0.83")


def test_a_fraction_that_only_clears_the_check_says_what_else_overflows():
    """review23 finding 5: the 0.83 that passes the Spark's check is no fix for Llama-3.1-70B in BF16: 70,553,706,496
    parameters × 2 B = 131.42 GiB of weights, over the 101.12 GiB free whatever the fraction."""
    refused = plan(model="llama-3.1-70b", gpu="dgx-spark", runtime="vllm")
    assert ("--gpu-memory-utilization 0.83 passes the start-up check: 0.83 × 121.69 = 101.00 GiB ≤ 101.12 GiB, but the "
            "weights alone (131.42 GiB) exceed the 101.12 GiB free: see the fixes") in refused.allocation.refusal
    # weights under the free memory but, with activations and non-torch memory, over 0.83's budget (by hand:
    # ⌈0.83 × 121.69 GiB⌉ = 101.00 GiB < 101.5 GiB held): the check passes, the KV cache gets nothing
    said = start_refusal(spark(102.2), 0.87, None, weights=90 * GiB, held=int(101.5 * GiB))
    assert "0.83 passes the start-up check" in said
    assert "but the weights, activations and non-torch memory (101.50 GiB) leave that budget no KV cache" in said
    assert "but" not in start_refusal(spark(102.2), 0.87, None, weights=90 * GiB, held=100 * GiB).split("0.83 passes")[1]


def test_the_spark_refusal_says_what_its_source_is_and_explain_gives_the_address():
    """review23 #10c / #17: the refusal named its figures' source by a bare address of an unrelated-looking project's
    issue; it now says what that thread is — MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47, a DGX Spark owner's report
    of vLLM's start-up check over many fresh boots, "Free memory on cuda:0 at boot caps at 101.3–102.2 GiB of 121.69"
    (read in the issues corpus) — and --explain's budget step carries the address."""
    url = "https://github.com/MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks/issues/47"
    refused = plan(model="gpt-oss-120b", gpu="dgx-spark", runtime="vllm")
    why = refused.allocation.refusal
    assert "both from a DGX Spark owner's report of vLLM's start-up memory check" in why
    assert "101.3-102.2 GiB of CUDA's 121.69 (its address: --explain)" in why and "https://" not in why
    budget = next(st for st in refused.steps if st.label == "budget")
    assert budget.source.endswith(f"; CUDA's total: {url}; the free figure: the same")


def test_the_jetson_totals_are_the_posted_device_lines():
    from runlocal.hardware.catalog import find_device

    # ggml_cuda_init on an Orin AGX 64GB: "Total VRAM: 62827 MiB" = 62827 / 1024 = 61.35 GiB;
    # on an Orin Nano Super: "Total VRAM: 7607 MiB" = 7.43 GiB
    assert find_device("jetson-agx-orin-64gb").cuda_total_bytes == int(round(62827 / 1024, 2) * GiB)
    assert find_device("jetson-orin-nano-super-8gb").cuda_total_bytes == int(round(7607 / 1024, 2) * GiB)
    # runlocal's own free figure there is an assumption (0.75 × 64 = 48 GiB); stated with --vram, it refuses as vLLM
    # does: 47 / 61.35 = 0.7661 → 0.76 (0.76 × 61.35 = 46.63 ≤ 47; 0.77 × 61.35 = 47.24 > 47)
    orin = plan(model="qwen3-0.6b", gpu="jetson-agx-orin-64gb", runtime="vllm", vram="47G")
    assert "(47.0/61.35 GiB)" in orin.allocation.refusal and "as --vram gives it" in orin.allocation.refusal
    assert "--gpu-memory-utilization 0.76 passes the start-up check" in orin.allocation.refusal


@pytest.mark.parametrize("gpu, asked", [
    # by hand: 0.92 × 61.35 = 56.44 GiB (AGX Orin 64GB, CUDA's total from its posted device line);
    # 0.92 × 128 = 117.76 GiB (Thor: no CUDA total cited, the marketed size); 0.92 × 7.43 = 6.84 GiB (Orin Nano Super)
    ("jetson-agx-orin-64gb", "56.44 GiB"), ("jetson-agx-thor-128gb", "117.76 GiB"),
    ("jetson-orin-nano-super-8gb", "6.84 GiB"),
])
def test_an_assumed_free_figure_is_a_condition_not_a_refusal(gpu, asked):
    # review22b finding 3: the 0.75 × RAM free on a Jetson is runlocal's guess, so vLLM's start-up check becomes the
    # plan's condition, and no --gpu-memory-utilization is written from the guess
    p = plan(model="qwen2.5-0.5b", gpu=gpu, runtime="vllm")
    assert p.verdict != "does_not_fit" and not p.allocation.refusal
    said = next(c for c in p.conditions if c.startswith("runs if at least"))
    assert f"at least {asked} is free" in said and "not measured on this device" in said and "--vram" in said
    assert "--gpu-memory-utilization" not in p.command
    if gpu == "jetson-agx-thor-128gb":
        assert "marketed 128 GiB" in said


def test_best_writes_no_fraction_from_an_assumed_free_figure():
    from runlocal.choose import device_targets, plan_fit
    from runlocal.hardware.catalog import find_device
    from runlocal.model.catalog import lookup
    from runlocal.runtimes import get_runtime
    from runlocal.runtimes.vllm_unified import assumed_free_note

    fit = plan_fit(lookup("llama-3.1-8b"), device_targets(find_device("jetson-agx-thor-128gb")), runtime="vllm",
                   ctx=8192, quant=None)
    assert fit.verdict != "does_not_fit" and "--gpu-memory-utilization" not in fit.command
    note = assumed_free_note(get_runtime("vllm"), ["jetson-agx-thor-128gb", "dgx-spark"])
    assert note is not None and "jetson-agx-thor-128gb" in note and "dgx-spark" not in note


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


def test_every_fix_on_a_spark_is_planned_at_the_fraction_that_starts():
    # review22b finding 2: the default 0.92 refuses on a Spark (by hand above: 111.95 GiB asked, 101.12 free), so a
    # checkpoint or context fix alone still refuses; each is planned at 0.83 and its command carries the flag.
    refused = plan(model="llama-3.1-70b", gpu="dgx-spark", runtime="vllm")
    assert refused.verdict == "does_not_fit" and refused.allocation.refusal.startswith("Free memory on device")
    others = [f for f in refused.fixes if "AWQ" in f.title or "FP8" in f.title]
    assert others, [f.title for f in refused.fixes]
    for fix in others:
        assert fix.title.startswith("Lower gpu_memory_utilization to 0.83 and ")
        assert "--gpu-memory-utilization 0.83" in fix.command and "0.92 → 0.83" in fix.effect
    # the AWQ one by hand: 0.83 × 121.69 = 101.00 GiB of budget; Llama-3.1-70B AWQ ≈ 37–40 GiB of weights, and
    # 131,072 tokens × 80 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 40.0 GiB of KV: about 80 GiB, under the budget
    awq = next(f for f in others if "AWQ" in f.title)
    assert "--max-model-len 131072" in awq.command


def test_a_jetson_plan_of_an_older_release_counts_its_graphs_in_the_condition():
    # thehighnotes/vllm-jetson-orin (outcomes record vllm-077): Qwen3.5-35B-A3B GPTQ-Int4 served by vLLM 0.17.0 on an
    # AGX Orin 64GB, fraction unstated — it ran. runlocal's free figure there is assumed, so the plan may not refuse;
    # by hand its condition: 0.9 × 61.35 = 55.215 GiB, + 0.5 GiB of CUDA graphs captured after the KV cache before
    # v0.21 = 55.715 GiB free needed (printed to two decimals)
    import re

    p = plan(model="qwen3.5-35b-a3b", gpu="jetson-agx-orin-64gb", runtime="vllm==0.17.0", quant="gptq")
    assert p.verdict != "does_not_fit" and not p.allocation.refusal
    said = next(c for c in p.conditions if c.startswith("runs if at least"))
    assert re.search(r"at least 55\.7[12] GiB is free", said) and "0.50 GiB of CUDA graphs" in said


def test_an_assumed_jetson_plan_says_which_free_figure_its_table_shows():
    """review23 finding 6: the Jetson's table shows the plan at the free memory vLLM's start needs (by hand: 0.92 ×
    61.35 = 56.44 GiB), the hardware note assumed 0.75 × 64 = 48 GiB; the condition names the table's figure and the
    note no longer says the GPU "may use" 48.0 for this plan."""
    request = CheckRequest(model="llama-3.1-8b", gpu="jetson-agx-orin-64gb", runtime="vllm", use_measurements=False)
    p, notes = check(request)
    row = next(d for d in p.allocation.devices if d.kind == "unified")
    assert round(row.capacity / GiB, 2) == 56.44
    said = next(c for c in p.conditions if c.startswith("runs if at least"))
    assert "runs if at least 56.44 GiB is free when vLLM starts" in said and "the capacity the table shows" in said
    assert "runlocal's own figure, 48.00 GiB free (0.75 × 64 GiB, not measured on this device), refuses nothing" in said
    assert not any("GPU may use 48.0 of 64 GiB" in n for n in notes)
    assert any("runlocal's assumed GPU share (48.0 of 64 GiB, not measured) is not what this vLLM plan is shown at"
               in n for n in notes)
    # another runtime plans at the share: its note stays
    _, other = check(CheckRequest(model="llama-3.1-8b", gpu="jetson-agx-orin-64gb", runtime="llama.cpp",
                                  use_measurements=False))
    assert any("GPU may use 48.0 of 64 GiB (runlocal's assumed 75%" in n for n in other)
    # --vram states the share: the note no longer calls it runlocal's assumed 75 %
    _, stated = check(CheckRequest(model="llama-3.1-8b", gpu="jetson-agx-orin-64gb", runtime="vllm", vram="58G",
                                   use_measurements=False))
    assert any("GPU may use 58.0 of 64 GiB (as --vram gives it)" in n for n in stated)
    assert not any("58.0 of 64 GiB (runlocal's assumed" in n for n in stated)


@pytest.mark.parametrize("runtime, column", [
    # v0.20.0 on: MemorySnapshot.measure reads psutil.virtual_memory().available on an integrated GPU (vllm#35356,
    # is_integrated; vllm#48140 confirms the figure in the refusal is MemAvailable on a GB10) — free's "available"
    ("vllm", "check `free -g`'s available column (MemAvailable, what vLLM reads as free on an integrated GPU)"),
    # before: the compute-capability list (Orin 8.7 / Thor 11.0 / Spark 12.1) from a release not read, else
    # torch.cuda.mem_get_info = MemFree on a unified device (ollama#12283) — free's "free" column
    ("vllm==0.10.2", "else its free column (MemFree, what torch.cuda.mem_get_info reads there)"),
])
def test_the_condition_names_the_free_column_the_release_compares(runtime, column):
    """review23 finding 7: `free -g` prints both free and available; which one the check compares depends on the
    release."""
    p = plan(model="llama-3.1-8b", gpu="jetson-agx-orin-64gb", runtime=runtime)
    said = next(c for c in p.conditions if c.startswith("runs if at least"))
    assert column in said
