"""llama-server's output cap since ggml-org/llama.cpp PR #23861: the prompt graph is reserved with n_parallel rows of
logits, not n_ubatch, from the builds that have it; the C API (llama-cpp-python) and older builds keep every ubatch
token an output. Checked against the public A/B measurements in measurements/llamacpp_server_outputs/records.jsonl."""

import json

import pytest
from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.evidence import MEASUREMENTS
from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.runtimes import Settings, Target, get_runtime
from runlocal.runtimes.llamacpp import LlamaCpp

MiB = 1 << 20
RECORDS = {r["id"]: r for r in map(json.loads, (MEASUREMENTS / "llamacpp_server_outputs" / "records.jsonl")
                                                 .read_text().splitlines())}


def gpu_compute_mib(record: dict, runtime: str, *extra: str) -> float:
    """The GPU's compute buffer `runlocal check` plans for the record's command, as a user types it."""
    flags = record["command"].split()[3:]           # after 'llama-server -m FILE'
    flags = [f for f in flags if f != "--cpu-moe"]  # spelled --n-cpu-moe N on runlocal's command line
    out = CliRunner().invoke(app, ["check", record["model"], "--gpu", record["gpu"], "--runtime", runtime,
                                   "-q", record["quant"], *flags, *extra, "--json"])
    assert out.exit_code == 0, out.output
    gpu = json.loads(out.output)["memory"]["devices"][0]
    return gpu["compute"] / MiB


def test_the_one_slot_server_saves_what_pr_23543_measured():
    """Qwen2.5-0.5B at -ub 4096: all 4,096 rows of 151,936 f32 logits against one row; the posted VRAM at start-up
    fell by 1,974 MiB. runlocal's plans for a build before the cap and the current build differ by that much."""
    rec = RECORDS["pr23543-qwen2.5-0.5b"]
    before, now = gpu_compute_mib(rec, "llama.cpp==b9272"), gpu_compute_mib(rec, "llama.cpp")
    assert before - now == pytest.approx(rec["measured"]["saved"], rel=0.03)


def test_issue_23527_qwen36_before_and_after_the_cap():
    """Qwen3.6-35B-A3B, -c 150000 -ub 4096, experts on the CPU, RTX 3080. The build before the cap logged 3,976 MiB
    of CUDA0 compute; a build with the cap (and PR #23764's f16 mask, merged three days before it) 1,982 MiB.
    qwen35moe's graph is traced (runtimes/ggml/arch_hybrid.py, exact on 60 real CPU contexts): both plans come out
    above the measured buffers, 13.6 % and 11.0 % (the fitted phases it replaced were 2 % low and 16 % low). The same
    graph with every expert on the GPU plans 1,984.7 MiB after the cap: the excess is the expert-weight copies of
    --n-cpu-moe in the scheduler model (the user's UD-Q4_K_XL file also has other expert types than the catalog's
    Q4_K_M), not checked against a measured CUDA --n-cpu-moe run."""
    rec = RECORDS["issue23527-qwen3.6-35b-a3b"]
    n_layers = str(lookup(rec["model"]).n_layers)
    before = gpu_compute_mib(rec, "llama.cpp==b9272", "--n-cpu-moe", n_layers)
    now = gpu_compute_mib(rec, "llama.cpp", "--n-cpu-moe", n_layers)
    assert rec["measured"]["baseline"][0] <= before <= 1.15 * rec["measured"]["baseline"][0]
    assert rec["measured"]["cap_and_pr23764"][0] <= now <= 1.12 * rec["measured"]["cap_and_pr23764"][0]
    assert now < before


@pytest.mark.parametrize("build, capped, assumed", [
    ("b6451", False, False), ("b9272", False, False),   # issue #23527's build: the report PR #23861 closed
    ("b9500", True, True),                               # between the pinned builds: the newer rule, said so
    ("b9776", True, False),                              # issue #24967: the PR's assert fires in this build
])
def test_each_build_says_whether_the_server_caps_outputs(build, capped, assumed):
    rt = get_runtime(f"llama.cpp=={build}")
    assert rt.output_cap is capped                      # type: ignore[attr-defined]
    assert "PR #23861" in rt.rules                      # type: ignore[attr-defined]
    assert ("the output cap assumed" in rt.rules) is assumed   # type: ignore[attr-defined]


def test_unversioned_plan_names_the_cap_in_its_rules_and_compute_step():
    out = CliRunner().invoke(app, ["check", "qwen3-8b", "--gpu", "rtx-3090", "-c", "8192", "--json"])
    plan = json.loads(out.output)
    assert "PR #23861" in plan["runtime_rules"]
    step = next(s for s in plan["explain"] if s["label"] == "compute buffer")
    assert "4 rows of logits" in step["formula"]        # -np auto: 4 slots


def test_the_c_api_keeps_every_output_and_the_output_buffer_is_unchanged():
    """llama-cpp-python (the C API: n_outputs_max = n_batch) reserves n_ubatch rows; the server n_parallel. Both
    reserve the same output buffer at start-up, n_seq_max rows of f32 logits (src/llama-context.cpp output_reserve):
    the cap bounds how far it may grow later, which for llama-server (no draft model) is where it starts."""
    spec = lookup("qwen3-8b")
    s = Settings(ctx=8192, parallel=2, quant="Q4_K_M")
    targets = [Target("GPU0", "gpu", 24 << 30), Target("CPU", "cpu", 64 << 30)]
    c_api = LlamaCpp(output_cap=False).buffers(spec, estimate(spec, "Q4_K_M"), s, targets)[1]
    server = LlamaCpp().buffers(spec, estimate(spec, "Q4_K_M"), s, targets)[1]
    # 512 − 2 rows of 151,936 f32 logits leave the prompt graph; the allocator reuses part of that room
    assert c_api[0].compute - server[0].compute > 100 * MiB
    assert c_api[-1].output == server[-1].output == 2 * spec.vocab_size * 4


def test_ollama_releases_get_the_cap_by_the_llama_cpp_build_they_bundle():
    """Ollama builds llama-server from upstream llama.cpp at its LLAMA_CPP_VERSION since v0.30.0 (v0.31.0: b9840,
    after PR #23861; data/ollama_llama_cpp.json): the cap, as the current release. v0.24.0 ran its own runner over a
    llama.cpp vendored before the PR (2026-05-14): planned without it."""
    def gpu_compute(runtime: str) -> int:
        out = CliRunner().invoke(app, ["check", "qwen3-8b", "--runtime", runtime, "--gpu", "rtx-3090", "-c", "8192",
                                       "--json"])
        plan = json.loads(out.output)
        assert ("PR #23861" in plan["runtime_rules"]) and out.exit_code == 0
        return plan["memory"]["devices"][0]["compute"]

    assert get_runtime("ollama").output_cap and get_runtime("ollama==0.31.0").output_cap  # type: ignore[attr-defined]
    assert not get_runtime("ollama==0.24.0").output_cap  # type: ignore[attr-defined]
    assert gpu_compute("ollama") == gpu_compute("ollama==0.31.0") < gpu_compute("ollama==0.24.0")
