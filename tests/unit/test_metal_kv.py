"""hardware/metal_kv.py: the KV read of ggml-metal's FA vec kernel — hand computations from the models' config.json,
the fitted share against a refit on its tuning rows, and the term kept out of plans (its held-out round had no records)."""

from pathlib import Path

import pytest

from runlocal.hardware import metal_kv as MK
from runlocal.hardware import speed as S
from runlocal.kv import kv_bytes
from runlocal.model.catalog import lookup

ROOT = Path(__file__).resolve().parents[2]


def test_qwen3_0_6b_by_hand():
    # Qwen3-0.6B config.json: 28 layers, 16 query heads, 8 KV heads × head_dim 128; F16 cache: K + V = 2 × 8 × 128 × 2 B
    # = 4,096 B a layer a token, 114,688 B over 28 layers. Each KV head is shared by 16 / 8 = 2 query heads: the kernel's
    # grid has one threadgroup per query head, so each row is read once by the first and again by the second, a share
    # ABSORBED of which the GPU cache serves: 1 + 1 × (1 − 0.52) = 1.48 reads (0.53 until session 22's refit). At 2,048
    # cached tokens:
    per_token = 28 * 2 * 8 * 128 * 2
    assert per_token == 114_688
    expected = 2048 * per_token * (1 + (2 - 1) * (1 - 0.52))
    assert MK.ABSORBED == 0.52
    assert MK.metal_kv_read(lookup("qwen3-0.6b"), 2048) == pytest.approx(expected)      # 347,623,916 B
    assert expected == pytest.approx(347_623_915.52)


def test_gemma_3_1b_sliding_layers_by_hand():
    # Gemma-3-1B config.json: 26 layers, 4 query heads, 1 KV head × head_dim 256, sliding window 512 on 5 layers of
    # every 6 (22 sliding, 4 global); F16: (256 + 256) × 2 B = 1,024 B a layer a token. At 4,096 cached tokens the
    # sliding layers hold 512 of them: 22 × 512 × 1,024 + 4 × 4,096 × 1,024 = 28,311,552 B, every row shared by 4 query
    # heads: × (1 + 3 × 0.48) = 2.44
    held = 22 * 512 * 1024 + 4 * 4096 * 1024
    assert held == 28_311_552
    groups = MK.metal_kv_groups(lookup("gemma-3-1b"), 4096)
    assert sorted((g.layers, g.window, g.group) for g in groups) == [(4, None, 4.0), (22, 512, 4.0)]
    assert MK.metal_kv_read(lookup("gemma-3-1b"), 4096) == pytest.approx(held * 2.44)


def test_bounds_one_read_when_nothing_is_shared_or_the_cache_serves_every_re_read():
    # a KV head read by one query head (MHA, g = 1) is read once whatever the cache does; a cache serving every re-read
    # leaves the one read CUDA's and Vulkan's kernels make (build_era.FA_KV_FACTOR); serving none, g reads
    q = lookup("qwen3-0.6b")
    assert MK.metal_kv_read(q, 1000, absorbed=1.0) == pytest.approx(kv_bytes(q, 1000))
    assert MK.metal_kv_read(q, 1000, absorbed=0.0) == pytest.approx(2 * kv_bytes(q, 1000))
    ds = lookup("deepseek-v2-lite")     # MLA: one latent KV head for 16 query heads
    assert MK.metal_kv_read(ds, 1000, absorbed=0.0) == pytest.approx(16 * kv_bytes(ds, 1000))
    mha = next(a for a in ("llama-2-7b", "tinyllama-1.1b") if lookup(a).n_heads == lookup(a).attention_layers[0].n_kv_heads)
    assert MK.metal_kv_read(lookup(mha), 1000, absorbed=0.0) == pytest.approx(kv_bytes(lookup(mha), 1000))


def test_absorbed_is_the_refit_on_its_tuning_rows():
    # the one fitted constant: least squares of log error over the Metal decode rows of 2025-2026 builds (backends_2026's
    # scored-apart 13, backends2's 20 — that round scored once before they became tuning)
    from runlocal.evidence import speed_fit_metalkv as F

    rows = F.tuning_rows()
    assert len(rows) == 33 and {F.head_ratio(r) for r in rows} == {"GQA 2:1", "GQA 4:1", "GQA 8:1", "MLA 16:1"}
    assert F.fit_absorbed(rows, S.FIT, S.SPLIT_OVERHEAD_MS) == MK.ABSORBED
    assert 0.0 <= MK.ABSORBED <= 1.0
    # in-sample it beats the apple entry's one factor where the cache holds tokens: median |error| at depth > 0
    before = F.errors(rows, lambda r: F.predict_row(r, S.FIT, S.SPLIT_OVERHEAD_MS))["all, depth > 0"]
    after = F.errors(rows, lambda r: F.predict_with_term(r, S.FIT, S.SPLIT_OVERHEAD_MS))["all, depth > 0"]
    med = lambda v: sorted(map(abs, v))[len(v) // 2]  # noqa: E731
    assert med(after) < med(before)


def test_not_applied_its_held_out_rounds_had_too_few_records():
    # held_out/backends3_queries.md's rule found no record; backends4's wider rule found 16, all from one repository's
    # committed llama-bench runs: 8 fa-on decode rows at 512 cached tokens and 8 pp512 rows. Its pass, fixed before any
    # record, needs >= 8 fa-on decode rows at depth from >= 2 sources: counted here from the file, one source, so the
    # round cannot pass and the term stays out of plans (the apple entry's factor prices Metal's KV: test_build_era)
    from runlocal.evidence.speed_fit import load_held_out

    assert not MK.APPLIED
    assert not load_held_out("backends3")
    assert "0 records" in (ROOT / "measurements/speed/held_out/backends3_queries.md").read_text()
    recs = load_held_out("backends4")
    assert len(recs) == 16
    deep = [r for r in recs if "@d" in r["test"] and r["test"].startswith("tg") and r.get("fa") == 1]
    assert len(deep) == 8 and {r["test"] for r in deep} == {"tg128@d512"}
    assert len({r["source_url"].split("/blob/")[0] for r in deep}) == 1
    assert all(r["backend"] == "metal" and r["build_era"] == "current" for r in recs)
    first = (ROOT / "measurements/speed/held_out/backends4_first_run.txt").read_text()
    assert "8 from 1: NOT met" in first and "Verdict: TOO FEW TO JUDGE; the term is not applied" in first
    # the round is its own: round 1's loader leaves it out
    assert not [r for r in load_held_out() if "ax-engine" in r["source_url"]]


def test_pass_gate_follows_the_rule():
    # the same rows counted as from two sources meet condition 1; the verdict then follows the MdAPE at depth, which
    # the test works out apart from the gate (speed_fit_metalkv.errors over the rows, medians by hand)
    from dataclasses import replace as dc_replace

    from runlocal.evidence import speed_fit_metalkv as F
    from runlocal.evidence.speed_fit import build_rows, load_held_out

    rows = [r for r in F.metal_decode(build_rows(load_held_out("backends4"))) if F.fa_on(r)]
    assert "Verdict: TOO FEW TO JUDGE" in F.pass_lines(rows, S.FIT, S.SPLIT_OVERHEAD_MS)[-1]
    twin = [dc_replace(r, rec={**r.rec, "source_url": "https://example.org/other/blob/x"}) for r in rows]
    both = rows + twin
    before = F.errors(both, lambda r: F.predict_row(r, S.FIT, S.SPLIT_OVERHEAD_MS))["all, depth > 0"]
    after = F.errors(both, lambda r: F.predict_with_term(r, S.FIT, S.SPLIT_OVERHEAD_MS))["all, depth > 0"]
    med = lambda v: sorted(map(abs, v))[len(v) // 2 - 1: len(v) // 2 + 1]  # noqa: E731 (even n: the two middle values)
    lower = sum(med(after)) < sum(med(before))
    verdict = F.pass_lines(both, S.FIT, S.SPLIT_OVERHEAD_MS)[-1]
    assert ("Verdict: PASS" in verdict) == lower and "TOO FEW" not in verdict


def _explain(*args):
    from runlocal.check import check
    from runlocal.request import CheckRequest

    plan, _ = check(CheckRequest(model="qwen3-0.6b", ctx=65536, quant="Q8_0", parallel=1, **dict(args)))
    return {s["label"]: s for s in plan.to_dict()["explain"]}


def test_explain_shows_the_terms_inputs_on_metal_with_flash_attention():
    steps = _explain(("gpu", "m2-ultra-192gb"))
    step = steps["decode: Metal FA-vec KV read (not applied)"]
    # 32,768 cached tokens × 114,688 B = 3.758 GB held; × 1.48 reads = 5.562 GB; the figure prices the apple entry's factor
    assert "28 layers 3.758 GB × (1 + (2 − 1) × (1 − 0.52))" in step["formula"]
    assert step["value"] == "5.562 GB/token"
    assert f"{S.FIT['apple'].kv_factor:g} × 3.758 GB" in step["formula"]
    assert "not applied" in step["formula"] and "kernel_flash_attn_ext_vec" in step["source"]
    assert "decode: Metal FA-vec KV read (not applied)" not in _explain(("gpu", "m2-ultra-192gb"), ("flash_attn", "off"))
    assert "decode: Metal FA-vec KV read (not applied)" not in _explain(("gpu", "rtx-4090"))
