"""--cpu-moe / --n-cpu-moe on CUDA against public evidence (measurements/llamacpp_cpumoe/records.jsonl).

llama.cpp puts a CPU-overridden expert tensor in the first GPU's host buffer type (CUDA_Host; CPU_Mapped under
mmap), not in CPU_REPACK (src/llama-model.cpp make_cpu_buft_list: "ACCEL -> GPU host -> CPU extra -> CPU"), so the
scheduler offloads a large batch's expert matmuls to CUDA0 with a copy of the weights (ggml-backend.cpp
ggml_backend_sched_backend_id_from_cur: offload only from host buffers). runlocal's scheduler model does the same;
the host compute buffer of issue #23527 is what tells the two rules apart."""

import json

import pytest
from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.evidence import MEASUREMENTS
from runlocal.model.catalog import lookup

MiB = 1 << 20
RECORDS = {r["id"]: r for r in map(json.loads, (MEASUREMENTS / "llamacpp_cpumoe" / "records.jsonl")
                                                 .read_text().splitlines())}


def planned_compute_mib(record: dict) -> tuple[float, float]:
    """The GPU's and the host's compute buffers `runlocal check` plans for the record's command, as typed
    (--cpu-moe spelled --n-cpu-moe <every layer> on runlocal's command line)."""
    flags = [f for f in record["command"].split()[3:] if f != "--cpu-moe"]
    n_layers = str(lookup(record["model"]).n_layers)
    out = CliRunner().invoke(app, ["check", record["model"], "--gpu", record["gpu"], "-q", record["quant"], *flags,
                                   "--n-cpu-moe", n_layers, "--json"])
    assert out.exit_code == 0, out.output
    gpu, host = json.loads(out.output)["memory"]["devices"][:2]
    return gpu["compute"] / MiB, host["compute"] / MiB


def test_issue_23527_host_compute_is_the_plan_with_the_experts_offloaded():
    """Qwen3.6-35B-A3B, -c 150000 -ub 4096, --cpu-moe, RTX 3080, a build with the output cap and the f16 mask: the
    log's CUDA_Host compute is 1,236 MiB. Had the experts been repacked (no offload), their matmuls would run on
    the CPU and the host buffer would hold their activations too (1,688 MiB planned that way)."""
    rec = RECORDS["issue23527-qwen3.6-35b-a3b-host-compute"]
    gpu, host = planned_compute_mib(rec)
    assert host == pytest.approx(rec["logged"]["CUDA_Host compute (cap + PR #23764)"], abs=1.0)
    # the GPU side stays high (open: the expert copy's placement depends on the file's expert types)
    assert rec["logged"]["CUDA0 compute (cap + PR #23764)"] <= gpu <= 1.12 * rec["logged"]["CUDA0 compute (cap + PR #23764)"]


def test_public_cuda_logs_put_cpu_overridden_experts_in_host_memory():
    """Every log record of a CUDA --cpu-moe run shows the experts overridden to CUDA_Host and no CPU_REPACK
    buffer; the source record says which flag would change that (--no-host) and which types would then repack."""
    logs = [r for r in RECORDS.values() if r["kind"] == "log excerpt"]
    assert logs
    for rec in logs:
        assert "overridden to CUDA_Host" in rec["logged"]["expert override"], rec["id"]
        assert rec["logged"]["CPU_REPACK model"] is None and rec["logged"]["CPU_Mapped model"] > 0, rec["id"]
        assert rec["source_url"].startswith("https://github.com/"), rec["id"]
    src = RECORDS["source-cpu-override-buffer-choice"]
    assert any("--no-host" in step for step in src["steps"])
    assert {"Q4_0", "Q4_K", "IQ4_NL"} <= set(src["repacked_types_at_ec98e2002"])
