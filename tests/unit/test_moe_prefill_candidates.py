"""Round moeprefill3 (session 22) and the candidate MoE prompt figures written down before any later held-out round is
read (evidence/speed_fit_moe.CANDIDATE_SHARES): each is its group's tuning rows' median measured ÷ priced, scored
leave-one-source-out; a held-out round scores (a) the range and (b) that figure by the rule's criteria."""

import json
import math
import statistics
from pathlib import Path

from runlocal.evidence import speed_fit as F
from runlocal.evidence import speed_fit_moe as M
from runlocal.hardware import backend_speed as BS
from runlocal.hardware import speed as S

ROOT = Path(__file__).resolve().parents[2]
SPEED = ROOT / "measurements/speed"


def _pairs():
    return M.tuning_pairs(dict(S.FIT), S.SPLIT_OVERHEAD_MS)


def test_the_round_holds_what_its_log_says():
    # the log (held_out/moeprefill3_queries.md): one source, PR #15616's M2 Ultra table, 3 rows; no held-out source
    rows = [json.loads(line) for line in (SPEED / "moeprefill3_2026.jsonl").read_text().splitlines()]
    assert [(r["test"], r["tokens_per_s"]) for r in rows] == [("pp512", 2045.19), ("pp2048", 2272.56),
                                                               ("pp16384", 1022.81)]
    assert {r["source_url"] for r in rows} == {"https://github.com/ggml-org/llama.cpp/pull/15616"}
    assert all(r["fit_scope"] == "moe_prefill" and r["backend"] == "metal" and not r.get("holdout") for r in rows)
    assert not (SPEED / "held_out/moeprefill3.jsonl").read_text().strip()
    log = (SPEED / "held_out/moeprefill3_queries.md").read_text()
    assert "Every third source (3rd, 6th, 9th, …) is held out" in log and "#15616" in log
    # the fitted files and round 1's held-out loader leave the round out; its Metal rows join no Vulkan selection
    assert not any(r.get("round") == "moeprefill3" for r in F.load_records() + F.load_held_out())
    assert [r.rec["test"] for r in M.metal_rows()] == ["pp512", "pp2048", "pp16384"]
    assert not any(r.backend == "metal" for r in M.tuning_rows())


def test_each_candidate_share_is_its_groups_median_ratio():
    ratios = M.range_ratios(_pairs())
    assert set(ratios) == set(M.CANDIDATE_SHARES)
    for group, values in ratios.items():
        assert M.CANDIDATE_SHARES[group] == round(statistics.median(values), 2)
    # the direction the ranges show: NVIDIA's Vulkan rows run above the padded-tile price, AMD's below it; the
    # per-expert fallbacks far below the dense formula (SYCL: #22413's 373.5 / 3,440 = 0.109 → 0.11)
    assert M.CANDIDATE_SHARES[("vulkan", "nvidia")] > 1 > M.CANDIDATE_SHARES[("vulkan", "amd")]
    assert M.CANDIDATE_SHARES[("sycl", "")] == round(373.5 / 3440, 2)
    # every candidate lies inside its group's range: a figure the range already allows
    assert all(BS.MOE_PREFILL_RANGES[g].low <= k <= BS.MOE_PREFILL_RANGES[g].high for g, k in M.CANDIDATE_SHARES.items())


def test_leave_one_source_out_prices_each_source_from_the_others():
    # two sources by hand: ratios 0.5 (source a) and 2.0, 2.0 (source b) → a priced with b's median 2.0: |2/0.5-1|
    # = 300 %; b priced with a's 0.5: |0.5/2-1| = 75 % each
    class R:
        def __init__(self, url, measured):
            self.rec, self.measured, self.backend = {"source_url": url}, measured, "sycl"
            self.device = type("D", (), {"vendor": "intel"})()
    pairs = [(R("a", 50.0), 100.0), (R("b", 200.0), 100.0), (R("b", 400.0), 200.0)]
    assert sorted(M.leave_one_source_out(pairs, ("sycl", ""))) == [75.0, 75.0, 300.0]
    assert M.leave_one_source_out(pairs[:1], ("sycl", "")) == []      # one source: nothing to leave out


def test_the_verdicts_follow_the_rules_criteria():
    class R:
        def __init__(self, url, ratio):
            self.rec, self.measured, self.backend = {"source_url": url}, 100.0 * ratio, "rocm"
            self.device = type("D", (), {"vendor": "amd"})()
    rng, share = BS.MOE_PREFILL_RANGES[("rocm", "")], M.CANDIDATE_SHARES[("rocm", "")]
    # 3 rows from 2 sources: too few (the rule asks 4 from 2)
    few = [(R(u, share), 100.0) for u in ("a", "a", "b")]
    assert M.held_out_verdicts(few) == {("rocm", ""): ("too few to judge", "too few to judge")}
    # 4 rows at the candidate's own ratio, inside the range: the range holds, the figure passes with 0 % error
    good = [(R(u, share), 100.0) for u in ("a", "a", "b", "b")]
    (a, b), = M.held_out_verdicts(good).values()
    assert a.startswith("holds (100% inside") and b == "pass (MdAPE 0.0%)"
    # 4 rows at twice the range's top: outside it, and the figure off by |share / ratio - 1|
    far = 2 * rng.high
    bad = [(R(u, far), 100.0) for u in ("a", "a", "b", "b")]
    (a, b), = M.held_out_verdicts(bad).values()
    assert a.startswith("FAIL (0% inside") and b == f"FAIL (MdAPE {abs(share / far - 1) * 100:.1f}%)"
    assert math.isclose(abs(share / far - 1), 1 - share / far)


def test_the_report_prints_both_verdicts_for_the_latest_round(capsys):
    M.report_moe_prefill(dict(S.FIT), S.SPLIT_OVERHEAD_MS, quiet=True)
    out = capsys.readouterr().out
    assert "MoE prefill candidate figures" in out and "MoE prefill on Metal, tuning: 3 rows" in out
    assert "held out (held_out/moeprefill3.jsonl): 0 rows" in out and "every group too few to judge" in out
