"""The KQ mask of llama.cpp builds before PR #23764 ("llama: use f16 mask for FA to save VRAM", 031ddb2e0, b9410):
an f32 graph input in the host's compute buffer, cast to f16 for flash attention (src/llama-graph.cpp
self_kq_mask_cnv = ggml_cast(…)); since the PR the input itself is f16. Checked against issue #23527's A/B at b9272
(measurements/llamacpp_server_outputs/records.jsonl: CUDA_Host compute 2,408 MiB before the PR, 1,236 with it)."""

import json

import pytest
from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.evidence import MEASUREMENTS
from runlocal.model.catalog import lookup
from runlocal.plan import estimate
from runlocal.runtimes import Settings, Target, get_runtime
from runlocal.runtimes.llamacpp import LlamaCpp
from runlocal.runtimes.options import LlamaCppOptions

MiB = 1 << 20
RECORD = next(r for r in map(json.loads, (MEASUREMENTS / "llamacpp_server_outputs" / "records.jsonl")
                                          .read_text().splitlines()) if r["id"] == "issue23527-qwen3.6-35b-a3b")


def check_23527(runtime: str) -> dict:
    """`runlocal check` for the issue's command as the user ran it (--cpu-moe spelled --n-cpu-moe <every layer>)."""
    flags = [f for f in RECORD["command"].split()[3:] if f != "--cpu-moe"]
    out = CliRunner().invoke(app, ["check", RECORD["model"], "--gpu", RECORD["gpu"], "--runtime", runtime,
                                   "-q", RECORD["quant"], *flags, "--n-cpu-moe", str(lookup(RECORD["model"]).n_layers),
                                   "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def test_b9272_plans_the_host_compute_buffer_the_issue_logged():
    """"My llama-server b9272 logs CUDA_Host compute buffer size = 2408 MiB at -c 150000 -ub 4096 -fa on": runlocal
    with --runtime llama.cpp==b9272 plans it (the f32 mask, 150,016 × 4,096 × 4 B, is 2,344 MiB of it); the current
    build, with the f16 mask, the 1,236 MiB the patched build logged."""
    old = check_23527("llama.cpp==b9272")
    host = old["memory"]["devices"][-1]
    assert host["kind"] == "cpu"
    assert host["compute"] / MiB == pytest.approx(RECORD["measured"]["baseline"][1], abs=1.0)
    step = next(s for s in old["explain"] if s["label"] == "compute buffer")
    assert "f32 KQ mask" in step["formula"] and "PR #23764" in old["runtime_rules"]
    now = check_23527("llama.cpp")["memory"]["devices"][-1]
    assert now["compute"] / MiB == pytest.approx(RECORD["measured"]["cap_and_pr23764"][1], abs=1.0)


@pytest.mark.parametrize("runtime, f16", [
    ("llama.cpp==b5781", False), ("llama.cpp==b9272", False), ("llama.cpp==b9409", False),
    ("llama.cpp==b9410", True),       # "b9410 (031ddb2e0)": the PR's merge commit
    ("llama.cpp", True),
])
def test_each_build_says_which_mask_it_reserves(runtime, f16):
    rt = get_runtime(runtime)
    assert rt.kq_mask_f16 is f16                                   # type: ignore[attr-defined]
    if runtime != "llama.cpp":
        assert ("f16 KQ masks" if f16 else "f32 KQ masks") in rt.rules   # type: ignore[attr-defined]


def test_without_flash_attention_every_build_reserves_the_same_mask():
    """The f32 mask is what every build uses without flash attention: only the cast (FA) differs."""
    spec = lookup("qwen3-8b")
    targets = [Target("GPU0", "gpu", 24 << 30), Target("CPU", "cpu", 64 << 30)]
    w = estimate(spec, "Q4_K_M")
    old = LlamaCpp()
    old.kq_mask_f16 = False
    for fa in ("off", "on"):
        s = Settings(ctx=16384, parallel=1, quant="Q4_K_M", llamacpp=LlamaCppOptions(flash_attn=fa))
        a, b = old.buffers(spec, w, s, targets)[1], LlamaCpp().buffers(spec, w, s, targets)[1]
        if fa == "off":
            assert [d.compute for d in a] == [d.compute for d in b]
        else:
            # the host holds the f32 input: 16,384 cells × 512 tokens × 2 B more than the f16 one
            assert a[-1].compute - b[-1].compute == 16384 * 512 * 2


def test_ollama_releases_get_the_mask_of_the_build_they_run():
    """Ollama v0.30.0 builds llama-server at b9452 (after PR #23764): the f16 mask, as the current release. v0.24.0 ran
    its own runner over llama.cpp ec98e2002 (April 2026): an f32 mask and its cast, so its host buffer is larger."""
    assert get_runtime("ollama").kq_mask_f16 and get_runtime("ollama==0.30.0").kq_mask_f16  # type: ignore[attr-defined]
    old = get_runtime("ollama==0.24.0")
    assert not old.kq_mask_f16 and "PR #23764" in old.rules                          # type: ignore[attr-defined]

    def host_compute(runtime: str) -> int:
        # the same num_batch on both (v0.24.0's default is 512, v0.30.0's automaticGenerationBatch 1,024 here): the
        # mask alone differs
        out = CliRunner().invoke(app, ["check", "qwen3-8b", "--runtime", runtime, "--gpu", "rtx-3090", "-c", "8192",
                                       "-b", "512", "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)["memory"]["devices"][-1]["compute"]

    assert host_compute("ollama==0.24.0") > host_compute("ollama==0.30.0") == host_compute("ollama")
