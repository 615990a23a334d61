"""Stored measurements replace predictions for the device they were taken on, and the plan says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fastapi.testclient import TestClient

from runlocal.api.app import create_app
from runlocal.api.store import BenchmarkStore
from runlocal.check import CheckRequest, check

RECORD = {"device": "NVIDIA GeForce RTX 4090", "runtime": "llama.cpp", "model": "llama-3.1-8b", "quant": "Q4_K_M",
          "settings": {"api": "openai"}, "decode_tokens_per_s": 127.4, "prefill_tokens_per_s": 5210.0,
          "max_context": 65536, "max_concurrency": 4, "source": "probe", "verified": True}


def _plan(**kw):
    req = CheckRequest(model="llama-3.1-8b", gpu="rtx-4090", quant="Q4_K_M", ctx=8192, use_measurements=False, **kw)
    return check(req)[0]


def test_matching_record_replaces_the_speed_and_floors_the_ceilings():
    from runlocal.measured import apply_measurements

    plan = _plan()
    out = apply_measurements(plan, [{**RECORD, "id": 7}, {**RECORD, "id": 8, "decode_tokens_per_s": 131.0}])
    assert out.speed["source"] == "measured"
    assert out.speed["decode_tokens_per_s"] == round((127.4 + 131.0) / 2, 1)      # median of the two runs
    assert out.speed["prefill_tokens_per_s"] == 5210.0
    assert out.measured["records"] == 2 and out.measured["ids"] == [7, 8]
    assert out.measured["predicted"]["speed"]["decode_tokens_per_s"] == plan.speed["decode_tokens_per_s"]
    assert out.max_context >= 65536 and out.max_concurrency >= 4
    assert any(st.label == "measured on this device" for st in out.steps)
    assert out.to_dict()["measured"]["device"] == "NVIDIA GeForce RTX 4090"


def test_records_of_another_device_runtime_model_or_quant_are_ignored():
    from runlocal.measured import apply_measurements

    plan = _plan()
    others = [{**RECORD, "device": "NVIDIA GeForce RTX 3090"}, {**RECORD, "runtime": "vllm"},
              {**RECORD, "model": "qwen3-8b"}, {**RECORD, "quant": "Q8_0"}]
    assert apply_measurements(plan, others) is plan
    assert plan.to_dict()["measured"] is None and plan.speed.get("source") != "measured"


def _cli(*args, home):
    env = {**os.environ, "RUNLOCAL_HOME": str(home), "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    env.pop("RUNLOCAL_DB_URL", None)
    return subprocess.run([sys.executable, "-m", "runlocal.cli", *args], check=False, capture_output=True, text=True,
                          env=env,
                          timeout=120)


def test_cli_check_uses_the_local_store(tmp_path, monkeypatch):
    args = ("check", "llama-3.1-8b", "--gpu", "4090", "--quant", "Q4_K_M", "--ctx", "8192")
    before = json.loads(_cli(*args, "--json", home=tmp_path).stdout)
    assert before["measured"] is None
    assert not (tmp_path / "benchmarks.sqlite3").exists()        # checking never creates a store
    monkeypatch.setenv("RUNLOCAL_HOME", str(tmp_path))
    monkeypatch.delenv("RUNLOCAL_DB_URL", raising=False)
    BenchmarkStore().add(RECORD, verified_by="probe")               # what `runlocal probe` stores
    after = json.loads(_cli(*args, "--json", home=tmp_path).stdout)
    assert after["speed"]["decode_tokens_per_s"] == 127.4 and after["speed"]["source"] == "measured"
    assert after["measured"]["predicted"]["speed"]["decode_tokens_per_s"] == before["speed"]["decode_tokens_per_s"]
    text = " ".join(_cli(*args, home=tmp_path).stdout.split())       # the terminal's wrapping aside
    assert "speed: 127.4 tokens/s decode" in text and "5,210.0 tokens/s prefill" in text
    assert "(measured: 1 stored run(s) on NVIDIA GeForce RTX 4090 (id 1; latest 20" in text
    assert "ran at ctx 65,536" in text


def test_unverified_or_implausible_records_are_ignored():
    from runlocal.measured import apply_measurements

    plan = _plan()
    assert apply_measurements(plan, [{**RECORD, "verified": False}, {**RECORD, "verified": None}]) is plan
    # Llama 3.1 8B at Q4_K_M reads ~4.6 GB a token; an RTX 4090 moves 1008 GB/s: 10,000 tokens/s is not a measurement
    assert apply_measurements(plan, [{**RECORD, "decode_tokens_per_s": 10000.0}]) is plan
    assert apply_measurements(plan, [{**RECORD, "max_context": 1 << 20}]) is plan       # trained: 131072


def test_api_check_uses_verified_benchmarks(tmp_path):
    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="s3cret"))
    q = {"model": "llama-3.1-8b", "gpu": "rtx-4090", "quant": "Q4_K_M", "ctx": 8192}
    assert client.get("/api/v1/check", params=q).json()["measured"] is None
    body = {k: v for k, v in RECORD.items() if k != "verified"}
    bid = client.post("/api/v1/benchmarks", json=body).json()["id"]
    assert client.get("/api/v1/check", params=q).json()["measured"] is None       # not verified yet
    assert client.post(f"/api/v1/benchmarks/{bid}/verify", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    doc = client.get("/api/v1/check", params=q).json()              # the plan cache does not hide it
    assert doc["speed"]["source"] == "measured" and doc["measured"]["records"] == 1


def test_the_site_check_page_names_the_runs_as_the_cli_does(tmp_path):
    """fixes21a's leftover: the site said "measured (1 record; …)" where the CLI says which run, when and on what
    ("measured: 1 stored run(s) on NVIDIA GeForce RTX 4090 (id 1; latest 2026-…)"). The id, date and device are read
    back from the store's own answer for the record, not from the page's code."""
    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="s3cret"))
    body = {k: v for k, v in RECORD.items() if k != "verified"}
    bid = client.post("/api/v1/benchmarks", json=body).json()["id"]
    assert client.post(f"/api/v1/benchmarks/{bid}/verify", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    stored = client.get(f"/api/v1/benchmarks/{bid}").json()
    day = str(stored.get("measured_at") or stored["created_at"])[:10]
    page = client.get("/", params={"model": "llama-3.1-8b", "gpu": "rtx-4090", "quant": "Q4_K_M", "ctx": "8192"})
    text = " ".join(page.text.split())
    said = f"1 record on {stored['device']}: id {bid}, latest {day}"
    assert text.count(f"measured ({said}") == 2            # decode and prefill, each measured


def test_a_decode_measured_at_no_stated_depth_is_not_said_to_be_at_the_predictions_depth():
    """review16b #10: a record with no context replaced the decode 'with 65,536 tokens in the KV cache'. It still
    counts, but the plan now says its depth is unknown, and keeps the prediction's depth beside it."""
    from runlocal.measured import apply_measurements

    plan = _plan()                                           # ctx 8192: the prediction decodes at 4,096 cached
    assert plan.speed["decode_at_context"] == 8192 // 2
    out = apply_measurements(plan, [{**RECORD, "id": 1}])
    assert out.speed["decode_tokens_per_s"] == 127.4 and out.speed["decode_at_context"] is None
    assert out.measured["decode_context_stated"] is False and out.measured["decode_at_context"] is None
    assert out.measured["predicted"]["speed"]["decode_at_context"] == 4096
    step = next(st for st in out.steps if st.label == "measured on this device")
    assert "do not state" in step.formula and "4,096" in step.formula


def test_a_decode_counts_only_at_the_depth_it_was_measured_at():
    """A record stating its depth (llama-bench -d, n_depth) counts for decode within 25 % of the plan's depth; one
    measured with an empty cache does not stand for a cache of 4,096 tokens (its prefill still counts)."""
    from runlocal.measured import apply_measurements

    plan = _plan()
    near = apply_measurements(plan, [{**RECORD, "id": 1, "settings": {"n_depth": 4000}}])     # |4000-4096| ≤ 1024
    assert near.speed["decode_tokens_per_s"] == 127.4 and near.speed["decode_at_context"] == 4000
    assert near.measured["decode_context_stated"] is True
    empty = apply_measurements(plan, [{**RECORD, "id": 2, "settings": {"n_depth": 0}}])
    assert empty.speed["decode_tokens_per_s"] == plan.speed["decode_tokens_per_s"]     # the prediction stays
    assert empty.speed["decode_at_context"] == 4096 and empty.measured["decode_tokens_per_s"] is None
    assert empty.speed["prefill_tokens_per_s"] == 5210.0 and empty.speed["source"] == "mixed"
    far = apply_measurements(plan, [{**RECORD, "id": 3, "settings": {"decode_at_context": 6000}}])  # 1,904 > 1,024
    assert far.speed["decode_tokens_per_s"] == plan.speed["decode_tokens_per_s"]


# --- review21 #1: a CPU record is bounded by a CPU's memory bandwidth too ---------------------------------------

# qwen3-8b at Q4_K_M: the catalog's weights_bytes, 5,021,827,072 (the README's roofline divides by them)
QWEN3_8B_Q4_K_M_BYTES = 5_021_827_072
CPU_RECORD = {"device": "CPU", "runtime": "llama.cpp", "model": "qwen3-8b", "quant": "Q4_K_M",
              "decode_tokens_per_s": 2419.3, "prefill_tokens_per_s": 44420.0, "max_context": 1024,
              "max_concurrency": 4, "source": "probe", "verified": True}


def _cpu_plan(gpu):
    return check(CheckRequest(model="qwen3-8b", gpu=gpu, quant="Q4_K_M", use_measurements=False))[0]


def test_a_cpu_record_faster_than_any_cpu_memory_is_ignored():
    """review21 #1: a probe of a 107K-parameter file named Qwen3-8B-Q4_K_M.gguf stored 2,419 tokens/s "on CPU", and
    every CPU check then reported it as measured. By hand, the fastest CPU memory in the catalog, 12-channel
    DDR5-6400 (12 × 8 B × 6,400 MT/s = 614.4 GB/s), reads 5.02 GB of weights at most 2 × 614.4 / 5.02 = 245 times
    a second (the 2× margin of DECODE_MARGIN): 2,419 is ten times that, on any CPU."""
    from runlocal.measured import apply_measurements

    assert 2 * 12 * 8 * 6400e6 / QWEN3_8B_Q4_K_M_BYTES < 2419.3 / 9
    for gpu in ("none", "cpu-32gb"):
        plan = _cpu_plan(gpu)
        assert apply_measurements(plan, [{**CPU_RECORD, "id": 1}]) is plan, gpu


def test_a_cpu_record_is_bounded_by_the_ram_the_plan_names():
    """--gpu ddr4-3200 names 2-channel DDR4-3200 (`cpu-32gb` names only a size since fixes21b's CPU-size rule, its
    memory the DDR5-5600 --gpu none assumes): 2 × 8 B × 3,200 MT/s = 51.2 GB/s, so 2 × 51.2 / 5.02 = 20.4 tokens/s
    at most (a little more where part of the weights is not read each token): 30 tokens/s is no run of that
    machine; with the memory unnamed (--gpu none assumes DDR5-5600, a guess) the bound is any CPU's, and 30 counts.
    10 tokens/s counts on both."""
    from runlocal.measured import apply_measurements

    hand_bound = 2 * 2 * 8 * 3200e6 / QWEN3_8B_Q4_K_M_BYTES
    assert 20 < hand_bound < 21
    named, unnamed = _cpu_plan("ddr4-3200"), _cpu_plan("none")
    fast = {**CPU_RECORD, "id": 2, "decode_tokens_per_s": 30.0, "prefill_tokens_per_s": 60.0}
    assert apply_measurements(named, [fast]) is named
    assert apply_measurements(unnamed, [fast]).measured["ids"] == [2]
    slow = {**fast, "decode_tokens_per_s": 10.0}
    for plan in (named, unnamed):
        assert apply_measurements(plan, [slow]).measured["ids"] == [2]


def test_a_plan_using_a_record_says_which_record_when_and_where():
    """The speed line names the record's id, its date and its device, not only "measured"."""
    from runlocal.measured import apply_measurements
    from runlocal.render.text import speed_phrase

    out = apply_measurements(_plan(), [{**RECORD, "id": 7, "measured_at": "2026-11-27T12:00:00"}])
    line = speed_phrase(out)
    assert "id 7" in line and "2026-11-27" in line and "NVIDIA GeForce RTX 4090" in line
