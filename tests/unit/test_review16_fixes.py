"""review16 findings 4 and 11: the fixes' before → after read from the plan as it stands, and no 'more of the same
GPU' fix for a machine that is one chip."""

from __future__ import annotations

import pytest

from runlocal.check import CheckRequest, check
from runlocal.units import format_bytes


def plan(**kw):
    return check(CheckRequest(use_measurements=False, **kw))[0]


def plan_with(ask: dict, **changed):
    return plan(**{**ask, **changed})


JETSON = dict(model="llama-3.1-8b", gpu="jetson-orin-nano", runtime="llama.cpp")


def test_jetson_fix_is_not_the_slots():
    # the plan: --fit kept 4 of 33 layers in system memory. Pinned by hand (-c 4096 -ngl 33), the 4 auto slots and one
    # slot need the same GPU bytes (llama-3.1 has no sliding window: one cache of -c cells either way), so one slot
    # frees nothing and is not offered
    p = plan(**JETSON)
    auto = plan(**JETSON, ctx=4096, n_gpu_layers=33)
    one = plan(**JETSON, ctx=4096, n_gpu_layers=33, parallel=1)
    gpu = lambda q: q.allocation.devices[0].total          # noqa: E731
    assert gpu(auto) == gpu(one)
    assert p.settings.llamacpp.n_gpu_layers == 29 and not any("--parallel 1" in f.title for f in p.fixes)


def test_jetson_pinned_counts_the_cuda_context_as_fit_does():
    """session 16's "noticed and left": pinned, every layer seemed to leave 1.11 GiB (over --fit's 1 GiB margin), yet
    --fit moved 4 layers off. Why: --fit measured the GPU's use with the CUDA context (590 MiB, backends.CUDA_CONTEXT)
    but the plan's table left it out on a unified-memory device. llama.cpp's --fit compares a device's free memory,
    read after the CUDA context exists, with its buffers (common/fit.cpp at 08033df: projected_free = dmd.free −
    mb.total()); on a Jetson ggml-cuda reads that free memory from /proc/meminfo's MemAvailable (ggml-cuda.cu
    ggml_backend_cuda_device_get_memory, prop.integrated; llama.cpp PR #17368), which the context already took. So
    the context is not there for the model: 6 GiB (the 75 % share of 8 GiB) − buffers − 590 MiB < 1 GiB."""
    pinned = plan(**JETSON, ctx=4096, n_gpu_layers=33)
    gpu = pinned.allocation.devices[0]
    assert gpu.overhead == 590 * 2**20                      # the CUDA context, as on a discrete card
    buffers = gpu.weights + gpu.kv_cache + gpu.compute
    assert gpu.capacity == 6 * 2**30 and gpu.capacity - buffers - 590 * 2**20 < 2**30
    assert pinned.verdict == "tight"
    fitted = plan(**JETSON)
    left = fitted.allocation.devices[0]
    assert left.capacity - left.total >= 2**30                 # --fit's answer keeps its margin, as the table shows


def test_the_pin_fix_reads_the_plan_as_it_stands():
    # an RTX 4060 at -c 14336: --fit kept one layer in system memory; pinned, every layer fits (under 90 %) with
    # less than --fit's 1 GiB left. Before: the plan's own table (32 layers); after: the hand-pinned plan's
    ask = dict(model="llama-3.1-8b", gpu="rtx-4060", ctx=14336, runtime="llama.cpp")
    p = plan(**ask)
    pinned = plan(**ask, n_gpu_layers=33)
    gpu = lambda q: q.allocation.devices[0].total          # noqa: E731
    pin = next(f for f in p.fixes if f.title == "Keep every layer on the GPU (-ngl 33)")
    assert f"{format_bytes(gpu(p))} → {format_bytes(gpu(pinned))}" in pin.effect
    assert "GPU layers 32 → 33 of 33" in pin.effect and pin.command.endswith("-c 14336 -ngl 33")
    left = pinned.allocation.devices[0].capacity - gpu(pinned)
    assert left < 2**30 and f"{format_bytes(left)} left free" in pin.effect


def test_a_parallel_fix_starts_from_the_plans_own_gpu_bytes():
    # gemma-3-27b at 64k on a 3090: --fit kept a layer or two in system memory (61 of 63 since session 18's vision
    # tower fix put the tower's bytes where llama.cpp puts them); one slot drops the other slots' sliding windows, so
    # pinned by hand the single slot needs fewer GPU bytes than the four — the fix starts from the plan's own layers
    ask = dict(model="gemma-3-27b", gpu="rtx-3090", ctx=65536)
    p = plan(**ask)
    f = next(f for f in p.fixes if "--parallel 1" in f.title)
    gpu = next(d for d in p.allocation.devices if d.kind != "cpu")
    kept = p.allocation.settings.llamacpp.n_gpu_layers
    assert kept < 63
    one = plan(**ask, n_gpu_layers=63, parallel=1).allocation.devices[0].total
    assert f"{format_bytes(gpu.total)} → {format_bytes(one)}, GPU layers {kept} → 63 of 63" in f.effect
    four = plan(**ask, n_gpu_layers=63).allocation.devices[0].total
    assert one < four


@pytest.mark.parametrize("ask", [
    dict(model="llama-3.1-70b", gpu="m2-max-64gb"),
    JETSON,
    dict(model="qwen3-30b-a3b", gpu="m4-max-36gb", ctx=131072),
])
def test_no_second_gpu_for_a_one_chip_machine(ask):
    # a Mac or a Jetson is one GPU; a second is a second computer (llama.cpp RPC), which the command would not reach
    assert not any(f.title.startswith("Use ") and " GPUs (" in f.title for f in plan(**ask).fixes)


def test_discrete_cards_still_get_more_gpus():
    p = plan(model="llama-3.1-70b", gpu="rtx-4090", ctx=8192, n_gpu_layers=-2)
    assert any(f.title.startswith("Use 2 GPUs") or f.title.startswith("Use 4 GPUs") for f in p.fixes)


def _ctx_of(command: str) -> int:
    return int(command.split("--max-model-len ")[1].split()[0])


def test_swap_space_and_context_together_when_neither_alone_starts():
    # vLLM 0.17.1, the last with --swap-space (PR #36216). 2 × 16 GB, 8 GiB of RAM: vLLM refuses swap × TP above 70 %
    # of RAM (vllm/config/cache.py): 4 × 2 = 8 > 5.6, 3 × 2 = 6 > 5.6, 2 × 2 = 4 ≤ 5.6, so 2 GiB; and at 32,768
    # tokens the KV pool is too small either way
    ask = dict(model="qwen2.5-32b", quant="awq", runtime="vllm==0.17.1", gpu="2x4060-ti-16gb", ram="8G")
    p = plan(**ask)
    assert p.verdict == "does_not_fit" and p.fixes
    fix = next(f for f in p.fixes if ", with context " in f.title)
    assert fix.title.startswith("Lower the CPU swap space to 2 GiB per GPU (--swap-space 2), with context ")
    assert "--swap-space 2" in fix.command and "verdict does not fit → tight" in fix.effect
    ctx = _ctx_of(fix.command)
    assert plan(**ask, swap_space=2, ctx=ctx).verdict == "tight"             # the fix, applied, starts
    assert plan(**ask, swap_space=3, ctx=ctx).verdict == "does_not_fit"      # one GiB more: the swap check
    assert plan(**ask, swap_space=2).verdict == "does_not_fit"               # the context asked: the KV pool
    assert plan(**ask, swap_space=2, ctx=ctx + 256).verdict == "does_not_fit"
    fp8 = next(f for f in p.fixes if f.title.endswith(", with the KV cache in fp8"))   # or the context kept
    assert _ctx_of(fp8.command) == 32768 and plan(**ask, swap_space=2, kv_cache="fp8").verdict in ("fits", "tight")


def test_published_checkpoint_with_context_or_fp8_kv_before_no_fix():
    # review16: "No fix … a smaller model" for Llama-3.1-70B on 2 × 3090 at 8k, yet the AWQ-INT4 checkpoint named
    # two lines above fits with a shorter context or an fp8 KV cache
    ask = dict(model="llama-3.1-70b", gpu="2x3090", runtime="vllm", ctx=8192)
    p = plan(**ask)
    published = [f for f in p.fixes if f.title.startswith("Serve the published AWQ")]
    assert len(published) == 2, [f.title for f in p.fixes]
    by_kv, by_ctx = sorted(published, key=lambda f: "--kv-cache-dtype fp8" not in f.command)   # either order
    assert "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4" in by_ctx.command
    shorter = _ctx_of(by_ctx.command)
    assert shorter < 8192 and plan_with(ask, quant="awq", ctx=shorter).verdict in ("fits", "tight")
    assert plan_with(ask, quant="awq").verdict == "does_not_fit"                # the checkpoint alone does not
    assert "--kv-cache-dtype fp8" in by_kv.command and _ctx_of(by_kv.command) == 8192
    assert plan_with(ask, quant="awq", kv_cache="fp8").verdict in ("fits", "tight")


# deepseek-r1 left this list when measurements/gguf_repos recorded unsloth/DeepSeek-R1-GGUF for it (catalog20),
# qwen3-235b-a22b and deepseek-v3 when query 3 recorded Qwen's own and bartowski's split repos (catalog22); two large
# MoE models still without a repo on record take their place
@pytest.mark.parametrize("model", ["qwen3.5-397b-a17b", "kimi-k2-0905"])
def test_no_invented_local_gguf_name_for_a_model_without_a_known_gguf_repo(model):
    # review16 finding 13: `-m qwen3-235b-a22b-Q4_K_M.gguf` named a file nobody has (these quants ship split,
    # …-00001-of-0000N.gguf): a placeholder path, never a bare file name that looks real
    p = plan(model=model, gpu="8xh100-sxm", runtime="llama.cpp", ctx=4096)
    assert p.command.startswith(f"llama-server -m PATH/TO/{model}-Q4_K_M.gguf ")
    for command in [p.command] + [f.command for f in p.fixes]:
        if " -m " in command:
            assert " -m PATH/TO/" in command, command


def test_a_split_gguf_repo_on_record_is_fetched_with_hf_not_named_as_a_local_file():
    # deepseek-r1's Q4_K_M ships as 9 shards in unsloth/DeepSeek-R1-GGUF (found.jsonl); llama.cpp's -hf takes shard 1
    # and fetches its siblings, so the command names the repo, never a single local file
    p = plan(model="deepseek-r1", gpu="8xh100-sxm", runtime="llama.cpp", ctx=4096)
    assert p.command.startswith("llama-server -hf unsloth/DeepSeek-R1-GGUF:Q4_K_M "), p.command
    assert " -m " not in p.command


@pytest.mark.parametrize("gpu", ["rtx-4090", "2x3090", "jetson-orin-nano"])
def test_mlx_on_a_gpu_that_is_not_apples_is_an_input_error(gpu):
    # review16 finding 14: "does not fit: the runtime refuses to start, or runs out of memory" was no memory answer
    from runlocal.errors import InputError

    with pytest.raises(InputError, match=r"^runtime: mlx runs only on Apple silicon"):
        plan(model="llama-3.1-8b", runtime="mlx", gpu=gpu)
    assert plan(model="llama-3.1-8b", runtime="mlx", gpu="m4-max-64gb").verdict == "fits"


def test_mlx_input_error_is_one_line_and_exit_2():
    from asking import run_cli

    r = run_cli("check", "llama-3.1-8b", "--runtime", "mlx", "--gpu", "rtx-4090")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Apple silicon" in r.stderr


def test_cost_says_why_its_quant_is_not_checks():
    from runlocal import choose
    from runlocal.hardware.catalog import find_device
    from runlocal.model.catalog import lookup

    model, dev = lookup("llama-3.1-8b"), find_device("rtx-4090")
    doc = choose.cost(model, dev)
    checked = plan(model="llama-3.1-8b", gpu="rtx-4090")
    assert doc["run"]["quant"] != checked.settings.quant          # Q8_0 priced, Q4_K_M planned by check
    note = next(n for n in doc["notes"] if n.startswith(f"priced at {doc['run']['quant']}"))
    assert f"`check` plans {checked.settings.quant}" in note and f"--quant {checked.settings.quant}" in note
    same = choose.cost(model, dev, quant=checked.settings.quant)
    assert same["run"]["quant"] == checked.settings.quant and not any("priced at" in n for n in same["notes"])


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_a_pooled_engines_bf16_weights_are_the_checkpoints_not_a_gguf_quantizers(runtime):
    # review16 finding 14: vLLM's --explain said "llama.cpp quantizer's per-tensor type mix … (src/llama-quant.cpp)"
    p = plan(model="llama-3.1-8b", runtime=runtime, gpu="h100-sxm")
    step = next(st for st in p.steps if st.label == "weights")
    assert "llama" not in step.formula.lower() and step.source == "meta-llama/Llama-3.1-8B-Instruct"
    # the same bytes llama.cpp's BF16 plan counts: 8,030,261,248 params (the catalog's Llama-3.1-8B) × 2 B, with the
    # 65 norm vectors (2 × 32 + 1, 4,096 each) at 4 B rather than 2: 16,060,522,496 + 532,480
    assert step.value == f"{8_030_261_248 * 2 + 65 * 4096 * 2:,} B"
    gguf = plan(model="llama-3.1-8b", gpu="h100-sxm", quant="bf16")
    assert next(st for st in gguf.steps if st.label == "weights").source == "src/llama-quant.cpp"


def test_no_pin_fix_where_fit_only_shortened_the_context():
    # --fit cut llama-3.1-8b's context on a 4060 and moved no layer (-ngl 33 of 33): nothing to put back
    p = plan(model="llama-3.1-8b", gpu="rtx-4060")
    assert "context shortened" in (p.allocation.compromise or "") and p.command.endswith("-ngl 33")
    assert not any(f.title.startswith("Keep every layer on the GPU") for f in p.fixes)
