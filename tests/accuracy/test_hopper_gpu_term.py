"""The H200 runs of session 11 (measurements/llamacpp_cpumoe/cuda_h200_run2.jsonl) against prefill's GPU term after
the Hopper rules (hardware/nvidia_peak.py MMA_SYNC_SHARE: llama.cpp's MMQ issues mma.sync, ~65 % of Hopper's datasheet;
Fit.prefill_layer_us: a fixed cost per layer per token). A dense model half offloaded by -ngl was 30–83 % slower
than planned (the committed predictions_run2.json); session 11 traced most of that to the GPU term, 1.7× fast
against the same build's own all-GPU H100 runs. These runs were seen before the rules were written (they motivated
them), and the H100 runs the GPU term is fitted on are in-sample: this is a check, not a held-out figure."""

import json

import pytest
from typer.testing import CliRunner

from runlocal.cli import app
from runlocal.evidence import MEASUREMENTS
from runlocal.evidence.cpumoe_runs import DENSE, write_models

HERE = MEASUREMENTS / "llamacpp_cpumoe"
RUN2 = [json.loads(line) for line in (HERE / "cuda_h200_run2.jsonl").read_text().splitlines()]
COMMITTED = json.loads((HERE / "predictions_run2.json").read_text())["predictions"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("hopper"), [m for m, _ in DENSE], randomize=False)


def measured(model: str, mode: str) -> float:
    rec = next(r for r in RUN2 if r["model"] == model and r["mode"] == mode and r["speed"])
    return sum(rec["speed"]["pp_tokens_per_s"]) / len(rec["speed"]["pp_tokens_per_s"])


def test_ngl_half_prompt_speed_with_the_hopper_gpu_term(files):
    # `runlocal check <file> --gpu h200 --ngl <half> [--no-mmap]`, as predict_run2.py asked it before the run
    for model, _ in DENSE:
        f = files[model]
        for mode in ("ngl_half", "ngl_half_nommap"):
            args = ["check", f["path"], "--gpu", "h200", "--ctx", "4096", "--batch", "512", "--ubatch", "512",
                    "--flash-attn", "on", "--ngl", str(f["n_layer"] // 2), "--json"]
            args += ["--no-mmap"] if mode.endswith("nommap") else []
            out = CliRunner().invoke(app, args)
            assert out.exit_code == 0, out.output
            speed = json.loads(out.output)["speed"]     # mmap'd: a range, its low end this H200 host's measured rate
            now = (speed["prefill_tokens_per_s"] or speed["prefill_range_tokens_per_s"][0]) / measured(model, mode) - 1
            before = next(p for p in COMMITTED if (p["model"], p["mode"]) == (model, mode))["prefill_tokens_per_s"] \
                / measured(model, mode) - 1
            if mode == "ngl_half":
                # mmap'd dense layers copied at PAGEABLE_H2D_GBS = 7.0 GB/s (session 13: the MoE runs' used experts
                # only, used_experts.py) — these dense runs were not fitted and land within 5 % (+2.6 / −2.2 %)
                assert abs(now) < 0.05, (model, mode, now, before)
                continue
            # pinned: closer than the committed plan (+30..83 %), still too fast: what is left is the CPU layers'
            # round trips (measurements/llamacpp_cpumoe/README.md), not modelled
            assert 0.1 < now < before, (model, mode, now, before)
            assert now < 0.45, (model, mode, now)
