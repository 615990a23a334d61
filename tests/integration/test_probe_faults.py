"""The probe's fault cases: each ends with a clear message and keeps the steps measured before it."""

import pytest
from fake_llm_server import fake_server

from runlocal.probe.run import run_probe


def test_ceiling_found_and_steps_kept():
    # the server refuses prompts over its 4,096-token context: the ladder stops at 8,192
    with fake_server(n_ctx=4096) as (url, _):
        r = run_probe(url, max_concurrency=4, max_tokens=8, time_budget=60)
    ctx_steps = [s for s in r.steps if s.phase == "context"]
    assert [s.prompt_tokens for s in ctx_steps if s.ok] == [128, 512, 1024, 2048]
    assert not ctx_steps[-1].ok and ctx_steps[-1].error_kind == "http" and "context" in ctx_steps[-1].error
    assert r.max_context_ok == 2048
    assert r.max_concurrency_ok == 4            # concurrency still measured at a prompt that fits


def test_concurrency_ceiling():
    # each request streams for ≥ 0.4 s so that the 4 requests of a step overlap even on a loaded machine
    with fake_server(max_parallel=3, token_delay=0.1) as (url, _):
        r = run_probe(url, max_context=512, max_concurrency=16, max_tokens=4, time_budget=60)
    assert r.max_concurrency_ok == 2 and "concurrency 4" in r.stopped_because


def test_nothing_listening():
    r = run_probe("http://127.0.0.1:9", max_context=512, time_budget=10)
    assert r.steps[0].error_kind == "refused" and "nothing answers" in r.stopped_because
    assert all(s.phase == "context" for s in r.steps)


def test_malformed_stream():
    with fake_server(mode="malformed") as (url, _):
        r = run_probe(url, max_context=512, time_budget=10)
    assert r.steps[0].error_kind in ("malformed", "empty")


def test_timeout():
    with fake_server(mode="stall") as (url, _):
        r = run_probe(url, max_context=512, step_timeout=0.5, time_budget=10)
    assert r.steps[0].error_kind in ("timeout", "malformed")


def test_server_killed_mid_probe_keeps_measured_steps():
    with fake_server(die_after=4) as (url, _):   # 1 token-count request + 3 steps
        r = run_probe(url, max_concurrency=2, max_tokens=4, step_timeout=10, time_budget=30)
    ok = [s for s in r.steps if s.ok]
    assert len(ok) == 3
    assert not r.steps[-1].ok and r.steps[-1].error_kind in ("disconnected", "refused", "malformed")


def test_cli_probe_json_and_exit_codes(tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    env = {"RUNLOCAL_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    with fake_server(n_ctx=1024) as (url, _):
        r = subprocess.run([sys.executable, "-m", "runlocal.cli", "probe", "--url", url, "--max-concurrency", "2",
                            "--max-tokens", "4", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["max_context_ok"] == 512 and doc["stored_id"] == 1
    assert "[ok ]" in r.stderr                                   # progress shown while it runs
    # stored: the local benchmark store has the result
    from runlocal.api.store import BenchmarkStore

    rows = BenchmarkStore(f"sqlite:///{tmp_path / 'benchmarks.sqlite3'}").list()
    assert rows[0]["max_context"] == 512 and rows[0]["source"] == "probe"
    bad = subprocess.run([sys.executable, "-m", "runlocal.cli", "probe", "--url", "http://127.0.0.1:9", "--no-store"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 1 and "nothing answers" in bad.stdout + bad.stderr


def test_ollama_api_and_its_silent_truncation():
    # Ollama answers /api/generate in NDJSON and cuts a prompt over num_ctx instead of refusing it:
    # the ladder stops where the server's prompt_eval_count falls short of what was sent
    with fake_server(n_ctx=2048) as (url, _):
        r = run_probe(url, api="ollama", model="fake", max_concurrency=2, max_tokens=4, time_budget=60)
    ctx = [s for s in r.steps if s.phase == "context"]
    assert [s.prompt_tokens for s in ctx if s.ok] == [128, 512, 1024, 2048]
    assert ctx[-1].error_kind == "truncated" and "num_ctx" in ctx[-1].error
    assert r.max_context_ok == 2048 and r.max_concurrency_ok == 2
    assert all(s.decode_tokens_per_s and s.decode_tokens_per_s > 0 for s in ctx if s.ok)


def test_submit_sends_the_result_to_a_runlocal_server(tmp_path):
    """--submit posts the record to a real `runlocal serve` (uvicorn on loopback)."""
    import json
    import subprocess
    import sys

    import httpx
    from servers import runlocal_serve

    env = {"RUNLOCAL_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    with runlocal_serve({**env, "RUNLOCAL_DB_URL": f"sqlite:///{tmp_path / 'server.sqlite3'}"}) as (base, _):
        with fake_server(n_ctx=1024) as (url, _):
            r = subprocess.run([sys.executable, "-m", "runlocal.cli", "probe", "--url", url, "--max-concurrency", "2",
                                "--max-tokens", "4", "--device", "rtx 4090", "--submit", base, "--json",
                                # a stored row must name a model (the fake server's id names none); a Hub repo id,
                                # not a catalog model, whose figures would be checked against the card's bandwidth
                                # (the fake server decodes as fast as a loop): as test_store_cli's probe test does
                                "--model", "someone/probe-model"],
                               capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["submitted"] is True
        rows = httpx.get(base + "/api/v1/benchmarks").json()
        assert len(rows) == 1 and rows[0]["max_context"] == 512 and rows[0]["device"] == "rtx 4090"


# --- a hostile or broken server: deadlines inside the stream, capped bytes, partial results kept ----------

def _timed(fn):
    import time

    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0


def test_endless_valid_stream_ends_at_the_step_timeout():
    # prompts of 1,024 tokens and more stream valid chunks forever: the read timeout never fires
    with fake_server(mode="endless", hostile_from=1024, token_delay=0.01) as (url, _):
        r, took = _timed(lambda: run_probe(url, max_concurrency=1, max_tokens=4, step_timeout=1.5, time_budget=60))
    ctx = [s for s in r.steps if s.phase == "context"]
    assert [s.prompt_tokens for s in ctx if s.ok] == [128, 512]
    assert ctx[2].error_kind == "timeout" and r.max_context_ok == 512
    assert took < 20


def test_endless_valid_stream_ends_at_the_time_budget():
    with fake_server(mode="endless", hostile_from=1024, token_delay=0.01) as (url, _):
        r, took = _timed(lambda: run_probe(url, max_concurrency=1, max_tokens=4, step_timeout=600, time_budget=3))
    assert r.max_context_ok == 512 and "time budget" in r.stopped_because
    assert all(s.ok for s in r.steps)           # the cut step is not a server failure
    assert took < 20


@pytest.mark.parametrize("mode", ["endless_line", "flood"])
def test_endless_line_and_flood_are_capped(mode, monkeypatch):
    import tracemalloc

    from runlocal.probe import client

    monkeypatch.setattr(client, "MAX_RESPONSE", 2 << 20)     # the cap itself, made quick to reach
    tracemalloc.start()
    try:
        with fake_server(mode=mode, hostile_from=1024) as (url, _):
            r, took = _timed(lambda: run_probe(url, max_concurrency=1, max_tokens=4, step_timeout=60,
                                               time_budget=120))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r.max_context_ok == 512 and r.steps[2].error_kind == "malformed"
    assert ("line" in r.steps[2].error) == (mode == "endless_line")
    assert peak < 64 << 20 and took < 30


def _probe_cli(args, env, **kw):
    import signal
    import subprocess
    import sys

    # Ctrl-C as a terminal sends it: a suite started in the background by a non-interactive shell ignores SIGINT,
    # and a child would inherit that (bash: asynchronous commands get SIGINT ignored), so the child takes the default
    return subprocess.Popen([sys.executable, "-m", "runlocal.cli", "probe", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def _cli_env(tmp_path):
    import os
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[2] / "src")
    return {"RUNLOCAL_HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}


def test_probe_of_nothing_stores_nothing(tmp_path):
    # issue 20: no step succeeded, so there is no "decode 0.0 tok/s" run to keep
    p = _probe_cli(["--url", "http://127.0.0.1:9", "--max-context", "512"], _cli_env(tmp_path))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1 and "nothing stored" in out and "0.0 tok/s" not in out
    db = tmp_path / "benchmarks.sqlite3"
    if db.exists():
        from runlocal.api.store import BenchmarkStore

        assert BenchmarkStore(f"sqlite:///{db}").list() == []


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signal_mid_probe_stores_the_steps_measured(tmp_path, sig):
    import signal
    import time

    from runlocal.api.store import BenchmarkStore

    with fake_server(mode="endless", hostile_from=2048, token_delay=0.01) as (url, _):
        p = _probe_cli(["--url", url, "--max-tokens", "4", "--step-timeout", "300", "--json"], _cli_env(tmp_path))
        seen = []
        while len(seen) < 3:            # 128, 512 and 1,024 measured; 2,048 streams forever
            line = p.stderr.readline()
            assert line, "probe ended early"
            seen += ["ok"] if "[ok ]" in line else []
        time.sleep(0.5)
        p.send_signal(getattr(signal, sig))
        out, err = p.communicate(timeout=30)
    doc = __import__("json").loads(out)
    assert doc["max_context_ok"] == 1024 and sig in doc["stopped_because"]
    rows = BenchmarkStore(f"sqlite:///{tmp_path / 'benchmarks.sqlite3'}").list()
    assert len(rows) == 1 and rows[0]["max_context"] == 1024


@pytest.mark.parametrize("token_delay, stored", [(0.0002, False), (0.05, True)])
def test_probe_stores_only_what_the_device_can_produce_and_says_under_what(tmp_path, token_delay, stored):
    """review21 #1: a server named Qwen3-8B-Q4_K_M.gguf is read as qwen3-8b at Q4_K_M. On a CPU that model decodes
    at most 2 × 614.4 GB/s (12-channel DDR5-6400, the fastest CPU memory in the catalog) / 5.02 GB ≈ 245 tokens/s:
    a server decoding ~1,000+ tokens/s is not that model on a CPU and is not stored; one at ≤ 20 tokens/s is, and
    the output says under which model, quant and device, with its id."""
    import json
    import os
    import subprocess
    import sys

    env = {"RUNLOCAL_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    with fake_server(n_ctx=1024, token_delay=token_delay, model_id="/models/Qwen3-8B-Q4_K_M.gguf") as (url, _):
        args = [sys.executable, "-m", "runlocal.cli", "probe", "--url", url, "--max-concurrency", "1",
                "--max-context", "512", "--max-tokens", "8", "--device", "CPU"]
        doc = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True, env=env, timeout=60).stdout)
        text = subprocess.run([*args, "--no-store"], capture_output=True, text=True, env=env, timeout=60).stdout
    assert doc["stored_as"] == {"model": "qwen3-8b", "quant": "Q4_K_M", "device": "CPU", "runtime": "llama.cpp"}
    if stored:
        assert doc["stored_id"] == 1 and "not_stored" not in doc
        assert "read as qwen3-8b Q4_K_M on CPU" in text
    else:
        assert "stored_id" not in doc and doc["not_stored"].startswith("decode_tokens_per_s:")
        assert "not stored as qwen3-8b Q4_K_M on CPU" in text and "--model" in text
