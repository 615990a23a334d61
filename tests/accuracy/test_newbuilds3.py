"""Held-out round newbuilds3 (session 16): current-build CUDA rows of Turing and HBM cards, collected and split by the
rule committed before any query (measurements/speed/held_out/newbuilds3_queries.md), scored once
(newbuilds3_first_run.txt)."""

import json
import re
import statistics
from pathlib import Path

from runlocal.evidence import speed_fit as SF
from runlocal.evidence.speed_fit import LATER_ROUNDS, build_rows, load_held_out, load_records, predict_row
from runlocal.hardware import speed as S
from runlocal.hardware.build_era import ARCH_SUFFIX
from runlocal.hardware.catalog import find_device

ROOT = Path(__file__).resolve().parents[2]
HELD = ROOT / "measurements/speed/held_out/newbuilds3.jsonl"
FIRST = ROOT / "measurements/speed/held_out/newbuilds3_first_run.txt"


def _recs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_split_follows_the_rule():
    # two units (the scoreboard's new card, then one non-GitHub file): neither is 3rd, so the fifth top-up moves the
    # first tuning unit in order (the V100) to held out — 4 of the 5 records
    held = _recs(HELD)
    assert {r["device"] for r in held} == {"v100-sxm2-32gb"} and len(held) == 4
    assert {r["source_url"] for r in held} == {"https://github.com/ggml-org/llama.cpp/discussions/15013"}
    tuning = [r for r in _recs(ROOT / "measurements/speed/cuda_2025.jsonl") if r["device"] == "rtx-2060"]
    assert len(tuning) == 1 and len(held) / (len(held) + len(tuning)) >= 1 / 5


def test_held_out_part_is_never_fitted():
    assert "newbuilds3" in LATER_ROUNDS
    assert not [r for r in load_records(include_outliers=True, holdout=None) if r["_file"] == HELD.name]
    assert not [r for r in load_held_out() if r["_file"].endswith("newbuilds3.jsonl")]
    assert len(load_held_out("newbuilds3")) == 4


def test_the_v100_is_the_catalogs_reading_of_the_quoted_name():
    # the quoting file says "Tesla V100 32 GB", form not disclosed; the catalog resolves that name to the SXM2 card, and
    # both 32 GB forms have 900 GB/s (the rule leaves out only forms of different bandwidth)
    assert find_device("Tesla V100 32GB").id == "v100-sxm2-32gb"
    assert find_device("v100-sxm2-32gb").bandwidth_gbs == find_device("v100-pcie-32gb").bandwidth_gbs == 900


def test_first_run_is_what_the_committed_fit_gives(monkeypatch):
    # scored once (newbuilds3_first_run.txt); no constant changed after it: the 'before' medians the file recorded are
    # the committed fit's, and 'after' equals 'before' (the candidate cc 9.0 prompt rate moves no cc 7.0 row). Session
    # 16's kernel-path rule (backend_speed.nvidia_mmq, after the scoring: not a held-out check) moves the prompt rows
    # only: with the rule undone they read as the file recorded. Session 22's refit (a token's weight bytes counted at each
    # tensor's type, review22 #10: the HBM entry's bandwidth share 0.531 → 0.529, per-layer cost 47.5 → 46.3 µs) moves
    # the decode median 21.6 → 21.5 % (the two V100 rows, Q4_0: dense, their bytes' share unchanged), not the prompt's
    today = {"tg": 21.5}
    text = FIRST.read_text()
    recorded = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in
                re.finditer(r"^(tg|pp) +n +\d+ +before \|error\| median +([\d.]+)%.*after median +([\d.]+)%", text, re.M)}
    monkeypatch.setattr(SF, "prompt_matmul_type", lambda quant, *a: quant)
    rows = build_rows(load_held_out("newbuilds3"))
    for kind in ("tg", "pp"):
        errors = [abs(predict_row(r, S.FIT, S.SPLIT_OVERHEAD_MS) / r.measured - 1) for r in rows if r.kind == kind]
        assert recorded[kind][0] == recorded[kind][1], kind
        assert round(100 * statistics.median(errors), 1) == today.get(kind, recorded[kind][0]), kind
    assert recorded["tg"][0] == 21.6


def test_the_kernel_path_rule_reads_the_v100_prompts():
    # Q4_0 at a 512-token batch on cc 7.0: ggml-cuda dequantizes to F16 for cuBLAS (mmq.cu: no int8 tensor cores,
    # FP16 ones, ne11 >= MMQ_DP4A_MAX_BATCH_SIZE), priced as F16: the scoreboard's 3,042.6 (fa 0) and 2,973.8 (fa 1)
    # tokens/s, which the int8-relative rate read -49.0 / -45.9 %, now read within 10 % (after the one scoring)
    rows = [r for r in build_rows(load_held_out("newbuilds3")) if r.kind == "pp"]
    assert {r.quant for r in rows} == {"F16"} and {r.rec["quant"] for r in rows} == {"Q4_0"}
    measured = sorted(r.measured for r in rows)
    assert measured == [2973.78, 3042.64]
    for r in rows:
        assert abs(predict_row(r, S.FIT, S.SPLIT_OVERHEAD_MS) / r.measured - 1) < 0.10


def test_the_refit_is_not_applied():
    # the rule applies the refit only if the held-out prefill median improves; it did not (47.5 % both ways), so no
    # HBM entry of its own per architecture exists, and the GDDR entry's (Ampere, Blackwell) are session 15's
    assert not [k for k in S.FIT if k.startswith("nvidia-hbm/cuda" + ARCH_SUFFIX)]
    assert sorted(k for k in S.FIT if ARCH_SUFFIX in k) == ["nvidia-gddr/cuda@cc12.0", "nvidia-gddr/cuda@cc8.6"]
