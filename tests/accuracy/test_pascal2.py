"""Held-out round pascal2 (session 17): CUDA rows of cards older than Volta or without tensor cores, collected by the
rule committed before any query (measurements/speed/pascal2_queries.md), every other source unit held out, scored once
(held_out/pascal2_first_run.txt) before the decode question was looked at on the tuning part."""

import json
import re
from pathlib import Path

from runlocal.evidence.speed_fit import LATER_ROUNDS, build_rows, load_held_out, load_records, predict_row
from runlocal.hardware import speed as S

ROOT = Path(__file__).resolve().parents[2]
HELD = ROOT / "measurements/speed/held_out/pascal2.jsonl"
TUNING = ROOT / "measurements/speed/pascal_2026.jsonl"
FIRST = ROOT / "measurements/speed/held_out/pascal2_first_run.txt"


def _recs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_round_is_held_out_and_never_fitted():
    assert "pascal2" in LATER_ROUNDS
    assert not [r for r in load_records(include_outliers=True, holdout=None) if r["_file"] == HELD.name]
    assert not [r for r in load_held_out() if r["_file"].endswith("pascal2.jsonl")]
    assert len(load_held_out("pascal2")) == len(_recs(HELD)) == 2


def test_the_split_is_every_other_unit():
    # units in the order their first record was taken: 1 (GTX 1060 6GB) tuning, 2 (GTX 1660 Ti) held out, 3 (the
    # #15013 card gtx-1080-ti) tuning
    assert {r["device"] for r in _recs(HELD)} == {"gtx-1660-ti"}
    assert {r["device"] for r in _recs(TUNING)} == {"gtx-1060-6gb", "gtx-1080-ti"}


def test_the_records_are_the_source_figures():
    # GTX 1660 Ti warm run: 996 prompt tokens in 867 ms, 512 generated in 3,610 ms
    held = {r["test"]: r["tokens_per_s"] for r in _recs(HELD)}
    assert held == {"pp996": round(996 / 0.867, 2), "tg512": round(512 / 3.610, 2)}
    tuning = {(r["device"], r["test"], r.get("fa")): r["tokens_per_s"] for r in _recs(TUNING)}
    assert tuning == {("gtx-1060-6gb", "tg404", None): 103.63, ("gtx-1080-ti", "pp512", 0): 1084.4,
                      ("gtx-1080-ti", "tg128", 0): 62.5, ("gtx-1080-ti", "pp512", 1): 1138.1,
                      ("gtx-1080-ti", "tg128", 1): 61.4}


def test_first_run_is_what_the_committed_constants_give():
    # scored once; the GDDR5X share fitted after it does not reach a Turing card: today's figure is the first run's
    text = FIRST.read_text()
    m = re.search(r"^gtx-1660-ti\s+7\.5\s+tg512\s+\S+\s+([\d.]+)\s+([\d.]+)", text, re.M)
    assert m is not None
    assert re.search(r"^gtx-1660-ti\s+7\.5\s+pp996\s+\S+\s+[\d.]+\s+-", text, re.M)
    rows = {r.rec["test"]: r for r in build_rows(load_held_out("pascal2"))}
    assert rows["tg512"].measured == float(m.group(1))
    # session 22 (fixes22c): a token's weight bytes counted at each tensor's type and the decode constants refit
    # moved today's figure from the first run's (228.83, read from the file) to 231.59 tokens/s
    assert float(m.group(2)) == 228.83
    assert round(predict_row(rows["tg512"], S.FIT, S.SPLIT_OVERHEAD_MS), 2) == 231.59
    assert predict_row(rows["pp996"], S.FIT, S.SPLIT_OVERHEAD_MS) is None      # a GTX 16xx prompt: declined
