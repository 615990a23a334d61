"""What a probe stores (review21 #7): the depth its decode figure stands for, the median prefill, no 0.0 decode."""

from __future__ import annotations

from runlocal.probe.report import to_record
from runlocal.probe.run import ProbeResult, Step


def _result() -> ProbeResult:
    r = ProbeResult("http://127.0.0.1:1", "openai", "qwen3-8b")
    r.steps = [Step("context", 128, 1, True, 0.1, 50.0, 1000.0),
               Step("context", 512, 1, True, 0.2, 45.0, 3000.0),
               Step("context", 1024, 1, True, 0.4, 40.0, 2000.0),
               Step("concurrency", 512, 1, True, 0.2, 44.0, None, 44.0),
               Step("concurrency", 512, 4, True, 0.5, None, None, 90.0)]      # no request returned a decode timing
    return r


def test_the_record_states_the_depth_of_its_decode_and_the_median_prefill():
    """By hand: the single-request steps decode at 50, 45, 40, 44 tokens/s with 128, 512, 1,024, 512 prompt tokens
    in the cache: median decode (44 + 45) / 2 = 44.5, median depth (512 + 512) / 2 = 512. Prefill over the three
    steps that time it: 1,000, 3,000, 2,000 → median 2,000 (not the best step's 3,000)."""
    rec = to_record(_result(), device="CPU", runtime="llama.cpp", model=None)
    assert rec["decode_tokens_per_s"] == 44.5
    assert rec["settings"]["decode_at_context"] == 512
    assert rec["prefill_tokens_per_s"] == 2000.0
    assert [s["prompt_tokens"] for s in rec["settings"]["steps"]] == [128, 512, 1024, 512, 512]


def test_a_step_without_a_decode_timing_prints_a_dash_not_zero(capsys, monkeypatch):
    """review21 #7: `[ok ] concurrency prompt 512 × 4 … decode 0.0 tok/s` for a step that timed no decode."""
    import runlocal.probe.report as report

    def fake_probe(url, *, progress, **kw):
        r = _result()
        for s in r.steps:
            progress(s)
        return r

    monkeypatch.setattr(report, "run_probe", fake_probe)
    report.probe_command(url="http://127.0.0.1:1", api="openai", model="someone/model", max_context=None,
                         max_concurrency=4, max_tokens=8, step_timeout=1, time_budget=1, token_ids=False, pid=None,
                         predict=None, runtime="llama.cpp", gpu=None, device="CPU", store=False, submit=None,
                         as_json=False)
    out = capsys.readouterr()
    line = next(x for x in out.err.splitlines() if "× 4" in x)
    assert "decode — tok/s" in line and "0.0" not in line
    assert "decode 44.5 tok/s (median, at 512 tokens in the KV cache)" in out.out


def test_a_probe_record_counts_for_decode_only_near_its_depth():
    """The stored depth (512) is within 25 % of a plan at ctx 1,024 (decode predicted at 512 cached: |512 − 512| = 0)
    and not of one at ctx 8,192 (4,096 cached: 3,584 > 1,024): there only its prefill counts ("mixed")."""
    from runlocal.check import CheckRequest, check
    from runlocal.measured import apply_measurements

    rec = {**to_record(_result(), device="NVIDIA GeForce RTX 4090", runtime="llama.cpp", model="llama-3.1-8b"),
           "quant": "Q4_K_M", "id": 1, "verified": True}
    for ctx, source in ((1024, "measured"), (8192, "mixed")):
        plan = check(CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", quant="Q4_K_M", ctx=ctx,
                                  use_measurements=False))[0]
        out = apply_measurements(plan, [rec])
        assert out.speed["source"] == source, ctx
        assert out.speed["prefill_tokens_per_s"] == 2000.0
