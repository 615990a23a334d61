"""llama-server --no-host (issue 18 point 2): with the GPU's host buffer type left out of the CPU's list, weights held
on the host that the CPU repacks (Q4_0, Q4_K, IQ4_NL, MXFP4 on the AVX2 CPU a plan assumes) go to CPU_REPACK, which is
not a host buffer, so ggml-backend never offloads their matmuls: no copy of them in the GPU's compute buffer, and the
CPU computes them (its compute buffer holds their activations). Each test is the command a user types and the plan
they read."""

from __future__ import annotations

from asking import check_json, run_cli

MiB = 1 << 20
QWEN3_MOE_CPU = ("qwen3-30b-a3b", "--gpu", "rtx-4090", "-c", "32768", "--n-cpu-moe", "48")


def compute_mib(plan: dict) -> tuple[float, float]:
    gpu, host = plan["memory"]["devices"][:2]
    return gpu["compute"] / MiB, host["compute"] / MiB


def test_q4_0_experts_in_ram_stay_on_the_cpu_with_no_host():
    """"llama-server -hf unsloth/Qwen3-30B-A3B-GGUF:Q4_0 -c 32768 --n-cpu-moe 48 --no-host on a 4090": every expert
    tensor is Q4_0, so none is copied to the GPU for a prompt batch (without the flag each one is, one at a time: the
    largest sets the GPU's compute buffer), and the CPU's compute buffer grows with the expert activations it now
    computes."""
    offloaded = check_json(*QWEN3_MOE_CPU, "-q", "Q4_0")
    kept = check_json(*QWEN3_MOE_CPU, "-q", "Q4_0", "--no-host")
    gpu_off, host_off = compute_mib(offloaded)
    gpu_kept, host_kept = compute_mib(kept)
    expert_mib = 2048 * 768 * 128 * 18 / 32 / MiB         # one Q4_0 expert stack, [2048, 768, 128]: 108 MiB
    # without the flag the GPU's buffer holds a copy of an expert stack; with it, none: the peak falls by most of one
    # (what else is live at the peak differs between the two graphs)
    assert gpu_off > expert_mib and gpu_off - gpu_kept > 0.5 * expert_mib, (gpu_off, gpu_kept)
    assert host_kept > host_off
    assert kept["command"].endswith("--no-host") and "--no-host" not in offloaded["command"]
    step = next(s for s in kept["explain"] if s["label"] == "--no-host")
    assert "avx2" in step["formula"] and "CPU_REPACK" in step["value"]
    # the host's weights are the same bytes either way (CPU_REPACK instead of CPU_Mapped)
    assert [d["weights"] for d in kept["memory"]["devices"]] == [d["weights"] for d in offloaded["memory"]["devices"]]


def test_q8_0_experts_are_not_repacked_on_x86_so_no_host_changes_nothing():
    """The same with Q8_0 experts: an x86 CPU has no Q8_0 repack layout (ggml-cpu/repack.cpp), so --no-host leaves them
    in a plain CPU buffer, still a host buffer whose big matmuls the GPU runs: the same compute buffers."""
    assert compute_mib(check_json(*QWEN3_MOE_CPU, "-q", "Q8_0", "--no-host")) == \
        compute_mib(check_json(*QWEN3_MOE_CPU, "-q", "Q8_0"))


def test_partial_offload_cpu_layers_are_repacked_too():
    """"-ngl 17 --no-host" on a 6 GB card (a public plan note measured Qwen3.6-27B this way: 7,036.88 MiB of
    CPU_REPACK): not only overridden experts but every Q4_K matrix of the CPU layers is repacked, so the step names
    gigabytes, and the GPU no longer runs those layers' prompt matmuls."""
    plan = check_json("qwen3.6-27b", "--vram", "6G", "-c", "4096", "--ngl", "17", "-q", "Q4_K_M", "--no-host")
    step = next(s for s in plan["explain"] if s["label"] == "--no-host")
    repacked = int(step["value"].split()[0].replace(",", ""))
    assert 6 << 30 < repacked < 9 << 30, step["value"]
    plain = check_json("qwen3.6-27b", "--vram", "6G", "-c", "4096", "--ngl", "17", "-q", "Q4_K_M")
    assert compute_mib(plan)[1] > compute_mib(plain)[1]


def test_no_host_is_refused_for_an_engine_without_it():
    r = run_cli("check", "qwen3-8b", "--gpu", "rtx-4090", "--runtime", "vllm", "--no-host")
    assert r.returncode == 2 and r.stderr.strip() == \
        "error: no-host: an option of llama.cpp (--no-host); vllm has no such setting"


def test_the_api_takes_no_host_as_the_cli_does():
    from fastapi.testclient import TestClient

    from runlocal.api.app import create_app

    with TestClient(create_app()) as client:
        body = {"model": "qwen3-30b-a3b", "gpu": "rtx-4090", "ctx": "32768", "n_cpu_moe": 48, "quant": "Q4_0",
                "no_host": True}
        r = client.post("/api/v1/check", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["command"].endswith("--no-host")


def test_the_cpus_expert_products_are_counted_apart_from_its_other_weights():
    # `--no-host -ngl 25` on Qwen3-30B-A3B: blocks 0–23 stay on the host (-ngl k puts the last k − 1 blocks on the GPU),
    # so the CPU multiplies their attention and their routed experts; the speed model takes the expert tiles' padding
    # off the GPU in proportion to the experts alone — 24 layers × gate/up/down (2,048 × 768) × 8 experts a token
    from runlocal.check import CheckRequest, check

    plan = check(CheckRequest(model="qwen3-30b-a3b", gpu="rtx-4090", quant="Q4_0", n_gpu_layers=25, no_host=True,
                              ctx="4096", use_measurements=False))[0]
    repacked = plan.allocation.host_repacked
    assert repacked is not None
    assert repacked.cpu_expert_params == 24 * 3 * 2048 * 768 * 8
    assert repacked.cpu_matmul_params > repacked.cpu_expert_params      # attention's products too
