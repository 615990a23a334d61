"""Prefill on Apple M3 and later, which have no published TFLOPS: GPU cores × a per-core rate measured on the tuning
part of the llama-bench records (measurements/speed/apple_cores/), checked against chips held out before the fit
(measurements/speed/held_out/apple_m3plus.jsonl)."""

import json
from pathlib import Path

from asking import check_json, run_cli

from runlocal.evidence import speed_fit
from runlocal.hardware import speed as S
from runlocal.hardware.catalog import find_device

ROOT = Path(__file__).resolve().parents[2]
HELD_OUT = ROOT / "measurements" / "speed" / "held_out" / "apple_m3plus.jsonl"


def held_out(device: str, model: str, quant: str, test: str = "pp512") -> float:
    for line in HELD_OUT.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if (r["device"], r["model"], r["quant"], r["test"]) == (device, model, quant, test):
            return r["tokens_per_s"]
    raise AssertionError(f"no held-out record {device} {model} {quant} {test}")


def test_m4_pro_prompt_speed_is_predicted_and_near_the_posted_run():
    # "How fast will my M4 Pro read a prompt with Llama 2 7B Q4_0?" — runlocal had no figure (no fp16 peak);
    # llama.cpp discussion #4167's M4 Pro 20-core row (held out, never fitted) posted 439.78 tokens/s at pp512
    plan = check_json("llama-2-7b", "--gpu", "m4 pro", "--quant", "Q4_0", "--ctx", "4096")
    prefill = plan["speed"]["prefill_tokens_per_s"]
    posted = held_out("m4-pro-24gb", "llama-2-7b", "Q4_0")
    assert prefill is not None
    assert abs(prefill / posted - 1) < 0.15, (prefill, posted)


def test_m3_ultra_70b_prompt_speed_against_a_held_out_run():
    # geerlingguy/beowulf-ai-cluster#17: an 80-core M3 Ultra, Llama 3.3 70B Q4_K_M, pp512 162.30 tokens/s
    plan = check_json("llama-3.3-70b", "--gpu", "m3 ultra 512gb", "--quant", "Q4_K_M", "--ctx", "4096")
    posted = held_out("m3-ultra-512gb", "llama-3.3-70b", "Q4_K_M")
    assert abs(plan["speed"]["prefill_tokens_per_s"] / posted - 1) < 0.2


def test_explain_says_the_peak_is_cores_times_a_measured_rate_not_a_datasheet_figure():
    r = run_cli("check", "llama-3.1-8b", "--gpu", "m4 max 128gb", "--quant", "Q4_K_M", "--ctx", "8192", "--explain")
    assert r.returncode in (0, 1), r.stderr
    text = " ".join(r.stdout.split())
    assert "40 GPU cores ×" in text and "TFLOPS/core" in text
    assert "Apple publishes no TFLOPS" in text


def test_the_smaller_gpu_bin_reads_prompts_slower_in_proportion_to_its_cores():
    # M3 Max 30-core (300 GB/s) vs 40-core (400 GB/s): prefill follows the cores Apple lists
    small = check_json("llama-3.1-8b", "--gpu", "m3 max 36gb", "--quant", "Q4_K_M", "--ctx", "4096")["speed"]
    large = check_json("llama-3.1-8b", "--gpu", "m3 max 64gb", "--quant", "Q4_K_M", "--ctx", "4096")["speed"]
    assert abs(small["prefill_tokens_per_s"] / large["prefill_tokens_per_s"] - 30 / 40) < 0.01


def test_m1_m2_keep_their_published_peak():
    m2 = find_device("m2-max-64gb")
    assert m2.gpu_cores is None and S.prefill_peak(m2, "Q4_0") == m2.fp16_tflops


def test_no_held_out_chip_prefill_feeds_the_per_core_fit():
    held = {json.loads(line)["device"] for line in HELD_OUT.read_text(encoding="utf-8").splitlines()}
    fitted = speed_fit.build_rows(speed_fit.load_records()) + speed_fit.load_core_tuning()
    feeding = {r.rec["device"] for r in fitted if r.kind == "pp" and r.gen and r.cores}
    assert feeding and not feeding & held, feeding & held


def test_committed_rates_are_the_fit_of_the_tuning_part():
    rows = speed_fit.build_rows(speed_fit.load_records())
    _, _, _, rates, _, _, _ = speed_fit.refit(rows, speed_fit.load_core_tuning())
    assert rates == S.APPLE_CORE_TFLOPS
    assert set(rates) == {"m3", "m4", "m5"}
