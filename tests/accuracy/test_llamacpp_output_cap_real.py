"""llama-server's output cap against the real llama.cpp: measurements/llamacpp_server_outputs/measured_cpu.jsonl holds
the buffers llama-cpp-python 0.3.36 (whose llama.cpp has PR #23861's n_outputs_max) logged for 7 architectures with
n_outputs_max = n_parallel, as llama-server sets it, and with the C API's default (measure_cap.py). runlocal's
llama.cpp planner — the current build's rule, or LlamaCpp(output_cap=False) for the C API — must print the same
compute and output buffers."""

import json

import pytest

from runlocal.evidence import MEASUREMENTS
from runlocal.evidence import llamacpp_runs as A
from runlocal.plan import estimate
from runlocal.runtimes.llamacpp import LlamaCpp

MiB = 1 << 20
RECORDS = [json.loads(line) for line in (MEASUREMENTS / "llamacpp_server_outputs" / "measured_cpu.jsonl")
           .read_text().splitlines()]


@pytest.fixture(scope="module")
def specs():
    return A.model_specs({(r["model"], r["weight_type"]) for r in RECORDS}, catalog=False)


def test_every_context_is_planned_to_the_printed_digit(specs):
    missed = []
    for rec in RECORDS:
        spec = specs[(rec["model"], rec["weight_type"])]
        capped = rec["n_outputs_max"] > 0
        assert rec["n_outputs_max_logged"] == str(rec["n_outputs_max"] if capped else rec["n_batch"])
        _, bufs, _, _ = LlamaCpp(output_cap=capped).buffers(spec, estimate(spec, None), A.settings_of(rec),
                                                             A.targets_of(rec))
        host = bufs[-1]
        want_compute, want_output = rec["buffers"]["CPU compute"], rec["buffers"]["CPU output"]
        if abs(host.compute / MiB - want_compute) >= 0.01 or round(host.output / MiB, 2) != want_output:
            missed.append((rec["model"], rec["n_seq_max"], rec["n_ubatch"], rec["flash_attn"], rec["n_outputs_max"]))
    assert not missed
    assert len(RECORDS) == 70 and sum(r["n_outputs_max"] > 0 for r in RECORDS) == 35
    # the cap is real: with flash attention at -ub 2048 every architecture's buffer shrinks by more than half
    big_ub = [r for r in RECORDS if r["n_ubatch"] == 2048]
    for model in {r["model"] for r in big_ub}:
        cap, c_api = (next(r["buffers"]["CPU compute"] for r in big_ub if r["model"] == model
                           and (r["n_outputs_max"] > 0) is on) for on in (True, False))
        assert cap < c_api * (0.8 if model == "phi-3-mini-4k" else 0.5), model
