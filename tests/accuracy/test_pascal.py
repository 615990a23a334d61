"""Held-out round pascal (session 16): CUDA rows of cards older than Volta or without tensor cores, collected by the
rule committed before any query (measurements/speed/held_out/pascal_queries.md), all held out (nothing is fitted),
scored once (pascal_first_run.txt)."""

import dataclasses
import json
import re
from pathlib import Path

from runlocal.evidence.speed_fit import LATER_ROUNDS, build_rows, load_held_out, load_records, predict_row
from runlocal.hardware import speed as S

ROOT = Path(__file__).resolve().parents[2]
HELD = ROOT / "measurements/speed/held_out/pascal.jsonl"
FIRST = ROOT / "measurements/speed/held_out/pascal_first_run.txt"


def _recs() -> list[dict]:
    return [json.loads(line) for line in HELD.read_text().splitlines() if line.strip()]


def test_the_round_is_held_out_whole_and_never_fitted():
    assert "pascal" in LATER_ROUNDS
    assert not [r for r in load_records(include_outliers=True, holdout=None) if r["_file"] == HELD.name]
    assert not [r for r in load_held_out() if r["_file"].endswith("pascal.jsonl")]
    assert len(load_held_out("pascal")) == len(_recs()) == 2


def test_the_records_are_the_quoted_run():
    # the captured llama-bench table (build 1e333d5b (5293), one Tesla P40): pp512 212.25 +- 0.47, tg128 9.48 +- 0.00
    recs = {r["test"]: r for r in _recs()}
    assert (recs["pp512"]["tokens_per_s"], recs["tg128"]["tokens_per_s"]) == (212.25, 9.48)
    assert {r["device"] for r in recs.values()} == {"tesla-p40"} and {r["build"] for r in recs.values()} == {
        "b5293 (1e333d5b)"}


def test_the_prompt_row_takes_the_dp4a_mmq_path():
    # cc 6.1, Q4_K at 512 columns: ggml_cuda_should_use_mmq says MMQ (no FP16 tensor cores), so the row is priced
    # against the int8 (dp4a) peak of the datasheet, 47 TOPS, not a float rate
    pp = next(r for r in build_rows(load_held_out("pascal")) if r.kind == "pp")
    assert pp.quant == "Q4_K_M" and pp.peak == 47.0


def test_first_run_is_what_the_committed_constants_give():
    # scored once; the prompt's constants have not changed since, so its recorded figure is today's prediction. The
    # decode was scored on the GDDR entry; since session 17 a P40 decodes at the GDDR5X class's share
    # (speed.PRE_VOLTA_SIBLING): the recorded figure is that of the entry the first run used, the row's variant cleared
    text = FIRST.read_text()
    recorded = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in
                re.finditer(r"^tesla-p40\s+6\.1\s+(pp512|tg128)\s+\S+\s+([\d.]+)\s+([\d.]+)", text, re.M)}
    assert set(recorded) == {"pp512", "tg128"}
    for r in build_rows(load_held_out("pascal")):
        measured, predicted = recorded[r.rec["test"]]
        assert r.measured == measured
        as_scored = dataclasses.replace(r, variant=None) if r.kind == "tg" else r
        # session 22 (fixes22c): a token's weight bytes counted at each tensor's type and the decode constants refit
        # moved the decode's figure from the first run's 15.58 to 15.26 tokens/s; the prompt's is unchanged
        today = {"tg": 15.26}.get(r.kind, predicted)
        assert round(predict_row(as_scored, S.FIT, S.SPLIT_OVERHEAD_MS), 2) == today
