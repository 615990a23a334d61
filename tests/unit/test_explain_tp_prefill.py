"""--explain's prefill formula multiplies out to the figure it explains under tensor parallel too: every rank computes
1/tp of each layer at TP_EFFICIENCY of the ideal speed-up, as the decode step already showed (review14 finding 4)."""

from __future__ import annotations

import re

from runlocal.check import check
from runlocal.request import CheckRequest


def _prefill_step(tp: int):
    plan, _ = check(CheckRequest(model="llama-3.3-70b", runtime="vllm", quant="awq", gpu="2xa100-80gb", ctx="32768",
                                 tp=tp))
    step = next(s for s in plan.to_dict()["explain"] if s["label"] == "prefill speed")
    return step["formula"], float(step["value"].split()[0])


def _worked(formula: str) -> float:
    # "141.9 GFLOP/token ÷ (0.177 × 624 int8 TOPS[ × 2×0.85]) + 80 layers × 0.8 µs …"
    m = re.search(r"([\d.]+) GFLOP/token ÷ \(([\d.]+) × ([\d.]+) int8 TOPS(?: × (\d+)×([\d.]+))?\) "
                  r"\+ (\d+) layers × ([\d.]+) µs", formula)
    assert m, formula
    gflop, eff, tops, tp, tp_eff, layers, us = m.groups()
    speedup = int(tp) * float(tp_eff) if tp else 1.0
    seconds = float(gflop) * 1e9 / (float(eff) * float(tops) * 1e12 * speedup) + int(layers) * float(us) / 1e6
    return 1 / seconds


def test_the_prefill_formula_multiplies_out_with_and_without_tensor_parallel():
    for tp in (1, 2):
        formula, value = _prefill_step(tp)
        assert ("× 2×" in formula) == (tp == 2)
        # the formula's figures are rounded for display (0.177, 141.9): within 1 %
        assert abs(_worked(formula) - value) / value < 0.01, (tp, formula, value)
