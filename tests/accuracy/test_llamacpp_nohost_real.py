"""The repack rule --no-host plans with (runtimes/ggml/repack.py) against the real llama.cpp: a shrunk zero-weight
Qwen3-30B-A3B stored in each type, loaded by llama-cpp-python 0.3.36 on this machine's CPU, logs a CPU_REPACK model
buffer equal to the bytes the rule repacks for the CPU's features (a CPU-only model's list is "CPU extra -> CPU", the
same choice --no-host gives a GPU machine's CPU weights). measurements/llamacpp_nohost/records.jsonl holds the run."""

from __future__ import annotations

import json

import pytest

from runlocal.evidence import MEASUREMENTS

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
pytest.importorskip("gguf", reason="gguf-py is not installed")


def _avx512() -> bool:
    try:
        return " avx512f " in open("/proc/cpuinfo").read().replace("\n", " ")
    except OSError:
        return False


@pytest.mark.skipif(not _avx512(), reason="the rule is checked on an AVX-512 x86 CPU (the records' machine)")
def test_real_llamacpp_repacks_exactly_what_the_rule_says():
    from runlocal.evidence.repack_runs import measure_all

    rows = measure_all(("Q4_K", "Q2_K", "MXFP4", "Q6_K", "Q8_0"))
    for row in rows:
        assert row["logged_repack_mib"] == pytest.approx(row["planned_repack_mib"], abs=0.01), row
    repacked = {row["type"] for row in rows if row["logged_repack_mib"] > 0}
    assert repacked == {"Q4_K", "Q2_K", "MXFP4"}         # Q6_K and Q8_0 have no x86 layout


def test_the_recorded_run_agrees_type_by_type():
    rows = [json.loads(line) for line in (MEASUREMENTS / "llamacpp_nohost" / "records.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all("AVX512 = 1" in r["system_info"] for r in rows)
    for row in rows:
        assert row["logged_repack_mib"] == row["planned_repack_mib"], row
