"""benchmarks/cpu_decode_accuracy.py: the CPU-only decode records (measurements/speed/cpu_decode/) and how the script
prices and fits them — checked against hand computations written out here and against the catalog's RAM figures."""

from __future__ import annotations

import pytest

from runlocal.hardware.catalog import find_device


@pytest.fixture(scope="module")
def cda():
    from runlocal.evidence import cpu_decode
    return cpu_decode


def test_records_follow_the_collection_rule(cda):
    rows = cda.load("tuning.jsonl") + cda.load("held_out.jsonl")
    assert rows
    for r in rows:
        assert r["backend"] == "cpu" and r["runtime"] == "llama.cpp" and r["test"].startswith("tg")
        assert int(r["test"][2:]) <= 512 and r["tokens_per_s"] > 0 and r["source_url"]
        if r["device"] != "cpu":          # a catalog RAM entry: its bandwidth is the row's ram_gbs
            assert find_device(r["device"]).bandwidth_gbs == pytest.approx(r["ram_gbs"])
    # the rule's bandwidth: channels × MT/s × 8 bytes — #11744's 16 × DDR5-6400
    dual = next(r for r in rows if r["source_url"].endswith("/issues/11744"))
    assert dual["ram_gbs"] == pytest.approx(16 * 6400 * 8 / 1000)


def test_a_row_is_priced_as_one_cpu_part(cda):
    # Llama-3.1-70B F16 on 819.2 GB/s, by hand: 70.55e9 params × 2 B = 141.1 GB; a token reads all but the input
    # embedding (128,256 × 8,192 × 2 B = 2.10 GB) → 139.0 GB; its f16 KV at 64 tokens: 80 layers × 8 KV heads × 128 ×
    # 2 (K and V) × 2 B × 64 = 21 MB. 139.0 GB / (0.55 × 819.2 GB/s) + 80 × 20 µs = 0.3085 + 0.0016 s → 3.22 t/s.
    rec = {"model": "llama-3.1-70b", "quant": "F16", "test": "tg128", "ram_gbs": 819.2, "tokens_per_s": 4.31}
    assert cda.predict(rec, 0.55, 20.0) == pytest.approx(1 / (139.0e9 / (0.55 * 819.2e9) + 80 * 20e-6), rel=0.01)
    weights, kv, layers = cda.token_reads(rec)
    assert layers == 80 and kv == pytest.approx(80 * 8 * 128 * 2 * 2 * 64, rel=0.01)


def test_a_prompt_row_is_refused(cda):
    with pytest.raises(ValueError, match="pp512"):
        cda.token_reads({"model": "phi-4", "quant": "Q4_K_M", "test": "pp512"})


def test_summary_is_median_and_nearest_rank_p90(cda):
    # |errors| 0.01 … 0.10: median (0.05 + 0.06) / 2; p90 the 9th of 10
    errs = [0.01, -0.02, 0.03, -0.04, 0.05, 0.06, -0.07, 0.08, 0.09, -0.10]
    assert cda.summary(errs) == pytest.approx((0.055, 0.09))


def test_fit_recovers_constants_the_rows_were_made_with(cda):
    # rows of unlike size (a 70B and a 14B on two hosts) generated at eff 0.70, 40 µs: the grid finds them again
    recs = [{"model": m, "quant": q, "test": "tg128", "ram_gbs": bw, "tokens_per_s": 1.0}
            for m, q, bw in [("llama-3.1-70b", "F16", 819.2), ("phi-4", "Q4_K_M", 460.8), ("phi-4", "Q8_0", 460.8),
                             ("llama-3.2-1b", "Q4_K_M", 89.6)]]
    for r in recs:
        r["tokens_per_s"] = cda.predict(r, 0.70, 40.0)
    assert cda.fit(recs) == (0.70, 40.0, True)


def test_one_size_of_model_leaves_the_layer_time_unidentified(cda):
    # one model at one quant: eff and layer_us trade off exactly, so eff alone is fitted and layer_us kept at 20
    rec = {"model": "phi-4", "quant": "Q4_K_M", "test": "tg128", "ram_gbs": 460.8, "tokens_per_s": 1.0}
    rec["tokens_per_s"] = cda.predict(rec, 0.60, 20.0)
    eff, layer_us, identified = cda.fit([rec])
    assert (eff, layer_us, identified) == (0.60, 20.0, False)
