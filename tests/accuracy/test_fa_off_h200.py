"""The flash-attention-off term's held-out check (measurements/llamacpp_h200/fa_depth_rule.md, committed before the
H200 run): the committed first score is what the rule computes from the committed records and predictions, and the
term is applied to plans exactly when that score passes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from runlocal.evidence import MEASUREMENTS
from runlocal.hardware import fa_off_prefill as FO

DIR = MEASUREMENTS / "llamacpp_h200"


def _printed(name: str) -> str:
    """What a scorer prints, run as its README says (`python measurements/llamacpp_h200/<name>.py`): the scripts are
    records of the runs, not modules, so they are run, not imported."""
    done = subprocess.run([sys.executable, str(DIR / f"{name}.py")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_run_scores_as_first_committed_and_the_verdict_decides_applied():
    out = _printed("score_fa_depth")
    first = (DIR / "fa_depth_first_run.txt").read_text()
    line = next(x for x in out.splitlines() if "median before" in x)
    assert line.strip() in first
    before, after = (float(v) for v in re.findall(r"([\d.]+)%", line.split("median before")[1])[:2])
    assert after >= before      # run 1 failed the term as it then was (fa_depth_first_run.txt); its records are tuning now


def test_run_2_scores_as_first_committed_and_its_verdicts_decide_applied():
    """Run 2 (fa_depth2_rule.md, committed before it): its scorer prints what fa_depth2_first_run.txt holds, and each
    term is applied exactly when its verdict passed."""
    from runlocal.hardware import fa_off_decode as FD

    out = _printed("score_fa_depth2")
    assert out == (DIR / "fa_depth2_first_run.txt").read_text()
    assert FO.APPLIED == ("prompt term" in out and "PASS — after 6.0% < before 10.1% over 15 pairs" in out)
    assert FD.APPLIED == ("PASS — after 2.5% < before 13.7% over 15 pairs" in out)


def test_measured_ratios_fall_with_depth():
    """Flash attention off costs more the deeper the cache (the unfused products run over every cell): on every model
    the measured fa 0 / fa 1 prompt ratio falls from depth 0 to 32K (llama-3.1-8b 0.871 → 0.367)."""
    recs = [json.loads(x) for x in (DIR / "h200_fa_depth.jsonl").read_text().splitlines() if x.strip()]
    pp = {(r["model"], r["depth"], r["fa"]): r["tokens_per_s"] for r in recs if r["test"].startswith("pp")}
    for model in {m for m, _, _ in pp}:
        ratios = [pp[(model, d, 0)] / pp[(model, d, 1)] for d in (0, 4096, 16384, 32768)]
        assert ratios == sorted(ratios, reverse=True), (model, ratios)
