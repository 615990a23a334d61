"""--cpu-moe, --n-cpu-moe and --no-host against a real CUDA llama.cpp (measurements/llamacpp_cpumoe/cuda_h200.jsonl).

llama.cpp 0c1e57098 built with CUDA loaded three MoE models on an H200 (Qwen3.6-35B-A3B Q4_K_M — issue #23527's
model —, Qwen3-30B-A3B Q4_K_M, gpt-oss-20b MXFP4), each as the zero-weight GGUF that runlocal's catalog view of the
quant describes, with every layer's experts overridden to the CPU (--cpu-moe), half of them (--n-cpu-moe), with
--no-host, and with none, over contexts up to issue #23527's own command (-c 150000 -b/-ub 4096, q8_0, unified KV).
runlocal reads the same file and plans each context; every buffer llama.cpp printed must be the plan's."""

import json
import re

import pytest

from runlocal.evidence import MEASUREMENTS
from runlocal.evidence.cpumoe_runs import DENSE, MODELS, write_models
from runlocal.model.gguf import read_gguf
from runlocal.plan import estimate
from runlocal.runtimes import Settings, Target
from runlocal.runtimes.llamacpp import LlamaCpp
from runlocal.runtimes.options import LlamaCppOptions
from runlocal.verdict import DEFAULT_RAM_BANDWIDTH_GBS

MiB = 1 << 20
HERE = MEASUREMENTS / "llamacpp_cpumoe"
RUN1 = [json.loads(line) for line in (HERE / "cuda_h200.jsonl").read_text().splitlines()]
RUN2 = [json.loads(line) for line in (HERE / "cuda_h200_run2.jsonl").read_text().splitlines()]
RECORDS = RUN1 + RUN2


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("cpumoe"), [m for m, _ in MODELS + DENSE], randomize=False)


@pytest.fixture(scope="module")
def specs(files):
    return {alias: read_gguf(f["path"]) for alias, f in files.items()}


def planned(spec, rec: dict):
    """The plan of the record's context as llama-cpp-python's C API ran it (n_outputs_max = n_batch: no output cap)."""
    s = Settings(ctx=rec["n_ctx_requested"] // rec["n_seq_max"], parallel=rec["n_seq_max"],
                 cache_type_k=rec["type_k"], cache_type_v=rec["type_v"],
                 llamacpp=LlamaCppOptions(batch=rec["n_batch"], ubatch=rec["n_ubatch"], flash_attn=rec["flash_attn"],
                                          kv_unified=rec["kv_unified"], swa_full=rec["swa_full"],
                                          n_gpu_layers=-2 if rec["n_gpu_layers"] == 999 else rec["n_gpu_layers"],
                                          n_cpu_moe=rec["cpu_moe_layers"], no_host=rec["no_host"],
                                          mmap=rec.get("use_mmap", True)))
    targets = [Target("CUDA0", "gpu", 140 << 30), Target("CPU", "cpu", 1 << 40)]
    _, bufs, _, _ = LlamaCpp(output_cap=False).buffers(spec, estimate(spec, None), s, targets)
    return bufs[0], bufs[1]


def test_the_run_covers_what_the_question_needs():
    """Every model in every mode, issue #23527's command among the contexts, every context created."""
    seen = {(r["model"], r["mode"]) for r in RUN1}
    assert seen == {(m, mode) for m, _ in MODELS for mode in ("cpumoe", "nohost", "ncpumoe_half", "gpu")}
    assert all(r["ok"] for r in RECORDS)
    assert any(r["job"].startswith("150000:4096:4096") and r["model"] == "qwen3.6-35b-a3b" and r["mode"] == "cpumoe"
               for r in RECORDS)


def test_every_compute_buffer_is_the_plan(specs):
    """CUDA0 and CUDA_Host compute buffers, printed to 0.0001 MiB when the context is freed, equal the plan's."""
    checked = 0
    for rec in RECORDS:
        gpu, host = planned(specs[rec["model"]], rec)
        logged = rec["compute_exact_mib"]
        assert gpu.compute / MiB == pytest.approx(logged["CUDA0"], abs=1e-4), (rec["model"], rec["mode"], rec["job"])
        if "CUDA_Host" in logged:
            assert host.compute / MiB == pytest.approx(logged["CUDA_Host"], abs=1e-4), (rec["model"], rec["mode"],
                                                                                         rec["job"])
            checked += 1
    assert checked >= len(RECORDS) - 1      # one speed run's host line was not captured


def test_weights_and_kv_on_the_gpu_are_the_plan(specs):
    """The CUDA0 model buffer (experts kept on the host leave it; ggml-cuda pads each quantized weight whose rows are
    not a multiple of 512 by one padded row: gpt-oss's 2,880-wide matrices, Qwen3-30B-A3B's 768-wide expert rows) and
    the CUDA0 KV buffers, printed to 0.01 MiB."""
    for rec in RECORDS:
        gpu, _ = planned(specs[rec["model"]], rec)
        assert gpu.model / MiB == pytest.approx(rec["model_buffers"]["CUDA0 model"], abs=0.005 + 1e-9), (rec["model"],
                                                                                                           rec["mode"])
        kv = [v for k, v in rec["buffers"].items() if k.startswith("CUDA0 KV")]
        assert gpu.kv / MiB == pytest.approx(sum(kv), abs=0.005 * len(kv) + 1e-9), (rec["model"], rec["mode"], rec["job"])


def test_cpu_moe_moves_the_experts_biases_too(specs):
    """gpt-oss keeps a bias per expert (ffn_*_exps.bias); --cpu-moe's pattern (common/common.h LLM_FFN_EXPS_REGEX)
    matches them as it matches the matrices, so their 25.3 MiB leave CUDA0 with the experts: 1,242.03 MiB logged
    (with every layer's experts on the CPU) against 10,949.38 with none."""
    rec = next(r for r in RECORDS if r["model"] == "gpt-oss-20b" and r["mode"] == "cpumoe")
    biases = sum(t.nbytes for t in specs["gpt-oss-20b"].tensors if "_exps.bias" in t.name) / MiB
    assert biases == pytest.approx(25.3, abs=0.05)
    gpu, host = planned(specs["gpt-oss-20b"], rec)
    assert gpu.model / MiB == pytest.approx(1242.03, abs=0.005)
    assert host.model > biases * MiB


USED = json.loads((HERE / "used_experts.json").read_text())


def h200_prompt_speed(speed: dict) -> float:
    """The plan's prompt speed on these runs' machine: with mmap'd host weights a plan prints a range (host_link.py
    pageable_range) whose low end is the pageable rate measured on this very H200 server; pinned (--no-mmap), one
    figure."""
    return speed["prefill_tokens_per_s"] or speed["prefill_range_tokens_per_s"][0]


def with_used_experts(predicted: float, alias: str, pageable: bool, copied: float | None = None) -> float:
    """The plan's prompt speed with only the experts the run's batch used crossing the link: the plan copies every
    routed expert it keeps in host memory (``copied`` bytes; all of them by default — a trained router's 512-token batch
    uses them all), the runs' random routers used 67–86 % of them (used_experts.json, recomputed from the files), and
    ggml-backend copies only those (hardware/speed.py PAGEABLE_H2D_GBS says where)."""
    from runlocal.hardware import speed as S
    from runlocal.hardware import token_work as TW

    copied = USED[alias]["expert_bytes"] if copied is None else copied
    unused = copied * (1 - USED[alias]["used_share"])
    return 1 / (1 / predicted - unused / (S.host_link_gbs("5.0 x16", pageable) * 1e9 * TW.UBATCH))


def test_cpu_moe_prefill_pays_a_pageable_copy_of_the_experts(files):
    """With --cpu-moe and mmap (the default) every prompt batch copies the used experts from pageable memory to the
    GPU: measured pp512 on the H200 was 24–42× below the all-GPU run. `runlocal check --n-cpu-moe` on the same file,
    with the run's used experts only (with_used_experts), must come within 15 % of the measured prompt speed
    (hardware/speed.py PAGEABLE_H2D_GBS — fitted on these three runs, so this is the tuning error, not a held-out
    one), and --no-mmap (pinned) must predict faster."""
    from typer.testing import CliRunner

    from runlocal.cli import app

    for alias, f in files.items():
        if alias not in dict(MODELS):
            continue
        rec = next(r for r in RECORDS if r["model"] == alias and r["mode"] == "cpumoe" and r["speed"])
        measured = sum(rec["speed"]["pp_tokens_per_s"]) / len(rec["speed"]["pp_tokens_per_s"])
        args = ["check", f["path"], "--gpu", "h200", "--ctx", "4096", "--batch", "512", "--ubatch", "512",
                "--flash-attn", "on", "--n-cpu-moe", str(f["n_layer"]), "--json"]
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 0, out.output
        predicted = h200_prompt_speed(json.loads(out.output)["speed"])
        assert abs(with_used_experts(predicted, alias, True) / measured - 1) < 0.15, (alias, predicted, measured)
        pinned = json.loads(CliRunner().invoke(app, [*args, "--no-mmap"]).output)["speed"]["prefill_tokens_per_s"]
        assert pinned > 2 * predicted


def test_cpu_moe_no_mmap_prompt_speed_with_the_used_experts(files):
    """Run 2's --cpu-moe --no-mmap prompts (pinned experts, CUDA_Host): the current plan reads −22 / −13 % against them
    (Qwen3.6-35B-A3B, Qwen3-30B-A3B), down from −12 / −2 % at run 2's predictions. What moved it is session 12's GPU term
    (the experts' MMQ tiles, Hopper's mma.sync share, the fixed per-layer cost: 19 → 121 µs a token for Qwen3.6), right
    for the all-GPU runs; the copy term was already too large — the plan moves all 19.5 / 17.6 GB of experts, the
    runs moved the 13.0 / 15.1 GB their random routers used, at 49.5 / 53.6 GB/s, the link's modelled 50.4. With the
    used experts the current plan is within 10 % of both (no constant fitted on these two runs)."""
    from typer.testing import CliRunner

    from runlocal.cli import app

    for alias in ("qwen3.6-35b-a3b", "qwen3-30b-a3b"):
        f = files[alias]
        rec = next(r for r in RUN2 if r["model"] == alias and r["mode"] == "cpumoe_nommap" and r["speed"])
        measured = sum(rec["speed"]["pp_tokens_per_s"]) / len(rec["speed"]["pp_tokens_per_s"])
        out = CliRunner().invoke(app, ["check", f["path"], "--gpu", "h200", "--ctx", "4096", "--batch", "512",
                                       "--ubatch", "512", "--flash-attn", "on", "--n-cpu-moe", str(f["n_layer"]),
                                       "--no-mmap", "--json"])
        predicted = json.loads(out.output)["speed"]["prefill_tokens_per_s"]
        assert predicted / measured - 1 < -0.10, (alias, predicted, measured)     # all experts: too slow
        assert abs(with_used_experts(predicted, alias, False) / measured - 1) < 0.10, (alias, predicted, measured)


def test_run_two_prompt_speed_against_the_predictions_made_before_it():
    """Run 2 is the held-out check of the host-copy rates run 1 fitted: its predictions were committed before it ran
    (predictions_run2.json). Found: experts pinned by --no-mmap cross at the link's rate as predicted (within 15 %);
    a dense model half offloaded by -ngl runs its prompt 30–83 % slower than predicted, pageable or pinned, about
    0.06–0.35 s a batch more than the copy and the GPU's work — not the CPU layers' attention, which runs on the GPU
    (test_partial_offload_leaves_only_the_kv_stores_on_the_cpu); mostly the fit's GPU term, then 1.7× fast against the
    same build's own all-GPU H100 runs (session 12's Hopper rules took that out: test_hopper_gpu_term.py), then whole
    dense tensors copied at ~7 GB/s pageable
    (measurements/llamacpp_cpumoe/README.md: the decomposition, not modelled).
    The test holds those figures to the committed predictions so that a change to either side is seen."""
    predictions = json.loads((HERE / "predictions_run2.json").read_text())
    assert predictions["written_before_run"]
    errors = {}
    for p in predictions["predictions"]:
        rec = next((r for r in RUN2 if r["model"] == p["model"] and r["mode"] == p["mode"] and r["speed"]), None)
        if rec is None:
            continue                     # gpt-oss-20b's --no-mmap run did not start before the run's deadline
        measured = sum(rec["speed"]["pp_tokens_per_s"]) / len(rec["speed"]["pp_tokens_per_s"])
        errors[(p["model"], p["mode"])] = p["prefill_tokens_per_s"] / measured - 1
    assert len(errors) == 6
    for (model, mode), err in errors.items():
        if mode == "cpumoe_nommap":
            assert abs(err) < 0.15, (model, err)
        else:
            assert 0.2 < err < 1.0, (model, mode, err)     # the known miss: predicted too fast


def _measured_pp(rec: dict) -> float:
    return sum(rec["speed"]["pp_tokens_per_s"]) / len(rec["speed"]["pp_tokens_per_s"])


def _host_ops(spec, n_ubatch: int, n_gpu_layers: int, n_cpu_moe: int = 0, no_host: bool = False):
    """The nodes ggml-backend's scheduler runs on the CPU in a prompt batch (runtimes/ggml/sched.py, whose compute
    buffers equal every logged one above), as (op, FLOPs or bytes) pairs."""
    from runlocal.runtimes.ggml import repack, sched
    from runlocal.runtimes.ggml.arch import GraphParams, build_graph
    from runlocal.runtimes.ggml.types import VIEW_OPS
    from runlocal.runtimes.ggml_scope import n_cpu_moe_overrides

    g = build_graph(spec, GraphParams(n_kv=n_ubatch, flash_attn=True), n_ubatch, 1, 1).g
    layer_dev = sched._layer_devices(spec.n_layers, n_gpu_layers)
    nodes, ids, *_ = sched._sched_split(g, layer_dev, False, n_backends=2,
                                        weight_dev=sched.weight_devices(layer_dev, n_cpu_moe_overrides(n_cpu_moe),
                                                                        sched.HOST),
                                        host_buffer=repack.host_buffer() if no_host else None)
    return [n for n, b in zip(nodes, ids) if b == sched.HOST and n.op not in VIEW_OPS and n.op != "NONE"]


def test_no_host_prefill_runs_the_repacked_experts_on_the_cpu(files, specs):
    """`runlocal check --n-cpu-moe N --no-host` on the measured files: the repacked experts' matmuls stay on the CPU
    (CPU_REPACK is not a host buffer, so the scheduler never offloads them), and the plan counts exactly the FLOPs of
    the expert products the scheduler leaves there. Measured pp512 on the H200: 160 / 96 / 33 tokens/s. The CPU's rate
    (hardware/speed.py HOST_REPACKED_GEMM_GFLOPS, 317 GFLOPS) was fitted on the two Q4_K_M runs — one rate serves both
    models within 0.2 % (313 / 322 GFLOPS once the unrepacked experts cross as the used ones only, at 7.0 GB/s),
    but that is the tuning error, not a held-out one; gpt-oss's MXFP4 experts ran at about half
    that rate per FLOP (156 GFLOPS; not modelled: predicted 66 against 33 — before this term the plan said 440, 13×
    too fast). The --explain step names the CPU's term."""
    from typer.testing import CliRunner

    from runlocal.cli import app

    errors = {}
    for alias, _ in MODELS:
        f = files[alias]
        rec = next(r for r in RECORDS if r["model"] == alias and r["mode"] == "nohost" and r["speed"])
        args = ["check", f["path"], "--gpu", "h200", "--ctx", "4096", "--batch", "512", "--ubatch", "512",
                "--flash-attn", "on", "--n-cpu-moe", str(f["n_layer"]), "--no-host"]
        out = CliRunner().invoke(app, [*args, "--json"])
        assert out.exit_code == 0, out.output
        predicted = h200_prompt_speed(json.loads(out.output)["speed"])
        # the CPU's share: the FLOPs of the MUL_MAT_IDs the scheduler leaves on the host, per prompt token
        n_ub = 512
        ops = _host_ops(specs[alias], n_ub, -1, n_cpu_moe=f["n_layer"], no_host=True)
        expert_flops = sum(2 * n.src[0].ne[0] * n.ne[0] * n.ne[1] * n.ne[2] for n in ops if n.op == "MUL_MAT_ID")
        assert {n.op for n in ops} <= {"MUL_MAT_ID", "GLU", "GET_ROWS"}
        explained = CliRunner().invoke(app, [*args, "--explain"]).output.replace("\n", " ")
        per_token = f"{expert_flops / n_ub / 1e9:.1f} GFLOP/token on the CPU (--no-host"
        assert per_token in " ".join(explained.split()), (alias, per_token)
        # the experts the CPU does not repack (Q6_K down_exps on this AVX2 build) still cross, the used ones only
        copied = re.search(r"\+ ([\d.]+) GB over PCIe", " ".join(explained.split()))
        copied_bytes = float(copied.group(1)) * 1e9 if copied else 0.0
        errors[alias] = with_used_experts(predicted, alias, True, copied_bytes) / _measured_pp(rec) - 1
    assert abs(errors["qwen3.6-35b-a3b"]) < 0.05 and abs(errors["qwen3-30b-a3b"]) < 0.05, errors
    assert 0.5 < errors["gpt-oss-20b"] < 1.5, errors      # the MXFP4 miss, held so that a change is seen


def test_partial_offload_leaves_only_the_kv_stores_on_the_cpu(specs):
    """Why a dense model half offloaded by -ngl is slower than planned is not CPU-side attention: with a prompt batch
    (≥ 32 tokens) the scheduler offloads every op on a host weight (ggml-cuda offload_op), FLASH_ATTN_EXT is left out of
    pass 1 (ggml_backend_sched_backend_id_from_cur: 'skip FLASH_ATTN_EXT') and the GPU's expansion upward from the
    offloaded output projection takes it, so the CPU layers' attention runs on the GPU with their K and V copied in.
    What stays on the CPU is each CPU layer's two KV stores (SET_ROWS into the host cache) and the token embedding's
    GET_ROWS: 0.1–0.2 GB read and written a batch, a few milliseconds at a desktop's RAM speed (runlocal's default,
    dual-channel DDR5), against the 0.06–0.35 s a batch measured beyond the plan. (Had
    the CPU layers' attention run on the CPU, the host compute buffer would be 32.01 / 50.01 MiB, not the logged
    20.01 / 24.01: measurements/llamacpp_cpumoe/cpu_side_ops.py.)"""
    for alias, ngl in (("llama-3.1-8b", 16), ("qwen3-32b", 32)):
        spec = specs[alias]
        ops = _host_ops(spec, 512, ngl)
        cpu_layers = spec.n_layers + 1 - ngl
        assert sorted({n.op for n in ops}) == ["GET_ROWS", "SET_ROWS"], alias
        assert sum(n.op == "SET_ROWS" for n in ops) == 2 * cpu_layers
        # f32 rows read, f16 rows written
        kv_store_bytes = sum(n.src[0].nbytes() + n.src[0].nelements() * 2 for n in ops if n.op == "SET_ROWS")
        assert kv_store_bytes / (DEFAULT_RAM_BANDWIDTH_GBS * 1e9) < 0.005, (alias, kv_store_bytes)
