"""The probe against a real llama.cpp server (llama-cpp-python[server]) on loopback, on the CPU,
serving a zero-weight GGUF the test writes: the measured context ceiling is llama.cpp's own."""

import json
import os
import subprocess
import sys

import pytest
from factories import write_tiny_chat_gguf
from servers import free_port, wait_http

from runlocal.probe.run import run_probe

pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")

N_CTX = 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model = write_tiny_chat_gguf(tmp_path_factory.mktemp("m") / "tiny.gguf")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(N_CTX),
                             "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    if not wait_http(url + "/v1/models", 60):
        proc.kill()
        pytest.fail("llama-cpp-python server did not start")
    yield url, proc, model
    proc.terminate()
    proc.wait(timeout=20)


def test_probe_result_is_used_by_check(server, tmp_path):
    """#7: probe stores what it measured; `runlocal check` for that model and device then uses it."""
    url, proc, model = server
    env = {**os.environ, "RUNLOCAL_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    env.pop("RUNLOCAL_DB_URL", None)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "runlocal.cli", *args], capture_output=True, text=True,
                              env=env, timeout=300)

    p = cli("probe", "--url", url, "--predict", str(model), "--gpu", "none", "--device", "CPU", "--pid", str(proc.pid),
            "--max-context", "512", "--max-concurrency", "2", "--max-tokens", "8", "--time-budget", "120", "--json")
    assert p.returncode == 0, p.stderr
    probed = json.loads(p.stdout)
    assert probed["stored_id"] and probed["prediction"]["verdict"] in ("fits", "tight")
    doc = json.loads(cli("check", str(model), "--gpu", "none", "--json").stdout)
    assert doc["measured"]["ids"] == [probed["stored_id"]]
    assert doc["speed"]["source"] == "measured"
    assert doc["speed"]["decode_tokens_per_s"] == round(probed["decode_tokens_per_s"], 1)
    assert doc["measured"]["max_context_ok"] == probed["max_context_ok"]


def test_context_ceiling_is_the_servers(server):
    url, proc, _ = server
    r = run_probe(url, max_concurrency=2, max_tokens=8, pid=proc.pid, time_budget=120)
    ok_ctx = [s.prompt_tokens for s in r.steps if s.phase == "context" and s.ok]
    assert ok_ctx and max(ok_ctx) <= N_CTX
    failed = [s for s in r.steps if s.phase == "context" and not s.ok]
    # llama-cpp-python refuses a prompt over n_ctx after it has started the stream: nothing comes
    assert failed and failed[0].error_kind in ("http", "empty")
    # the step after the ceiling asked for more than n_ctx 1,024 (prompt + 8 new tokens)
    assert r.max_context_ok == 512 and 2 * 512 + 8 > N_CTX
    assert r.max_concurrency_ok and r.max_concurrency_ok >= 1
    assert r.peak_memory_bytes and r.memory_source in ("rss", "nvml")
    assert all(s.decode_tokens_per_s is None or s.decode_tokens_per_s > 0 for s in r.steps)


def test_server_killed_mid_probe(tmp_path):
    model = write_tiny_chat_gguf(tmp_path / "tiny.gguf")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", "4096",
                             "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    assert wait_http(url + "/v1/models", 60)
    steps = []

    def progress(step):
        steps.append(step)
        if len(steps) == 2:
            proc.kill()           # the server dies between steps

    r = run_probe(url, max_tokens=4, progress=progress, step_timeout=20, time_budget=60)
    proc.wait(timeout=10)
    assert [s.ok for s in r.steps[:2]] == [True, True]
    assert not r.steps[-1].ok and r.steps[-1].error_kind in ("refused", "disconnected")
    assert "nothing answers" in r.stopped_because or "closed" in r.stopped_because
