"""The store from the command line: `check` reads the local file with sqlite3 only (nothing heavy imported),
`probe`'s own rows count, and `serve --workers N` shares one store under concurrent writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from servers import runlocal_serve

from runlocal.api.store import BenchmarkStore

RECORD = {"device": "NVIDIA GeForce RTX 4090", "runtime": "llama.cpp", "model": "llama-3.1-8b", "quant": "Q4_K_M",
          "settings": {"api": "openai"}, "decode_tokens_per_s": 127.4, "prefill_tokens_per_s": 5210.0,
          "max_context": 65536, "max_concurrency": 4, "source": "probe"}
HEAVY = ("sqlalchemy", "fastapi", "pydantic", "starlette")


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "RUNLOCAL_HOME": str(home), "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    env.pop("RUNLOCAL_DB_URL", None)
    return env


def _check_modules(home: Path) -> tuple[dict, list[str]]:
    """`runlocal check llama-3.1-8b --json` run through the CLI's main in a fresh interpreter: (answer, modules)."""
    code = ("import sys, runlocal.cli as cli; sys.argv = ['runlocal', 'check', 'llama-3.1-8b', '--gpu', 'rtx-4090', "
            "'--quant', 'Q4_K_M', '--json']\ntry:\n    cli.main()\nexcept SystemExit:\n    pass\n"
            "print('\\nMODULES', sorted(sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                       env=_env(home), timeout=180)
    assert r.returncode == 0, r.stderr
    doc_text, _, modules = r.stdout.rpartition("\nMODULES ")
    return json.loads(doc_text), eval(modules)                      # our own printed list


def test_check_reads_the_store_with_sqlite3_and_imports_nothing_heavy(tmp_path):
    store = BenchmarkStore(f"sqlite:///{tmp_path / 'benchmarks.sqlite3'}")
    store.add(RECORD, verified_by="probe")
    store.add({**RECORD, "decode_tokens_per_s": 300.0})            # anonymous: must not count
    store.engine.dispose()
    doc, modules = _check_modules(tmp_path)
    assert doc["speed"]["decode_tokens_per_s"] == 127.4 and doc["measured"]["records"] == 1
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], heavy
    assert "sqlite3" in modules and not any(m.startswith("runlocal.api") for m in modules)


def test_check_without_a_store_file_creates_none(tmp_path):
    doc, modules = _check_modules(tmp_path)
    assert doc["measured"] is None and not (tmp_path / "benchmarks.sqlite3").exists()
    assert "sqlite3" not in modules                                   # not even opened


def test_an_older_store_file_is_read_as_having_nothing_verified(tmp_path):
    import sqlite3

    conn = sqlite3.connect(tmp_path / "benchmarks.sqlite3")
    conn.execute("CREATE TABLE benchmarks (id INTEGER PRIMARY KEY, device TEXT, runtime TEXT, model TEXT, quant TEXT, "
                 "decode_tokens_per_s FLOAT)")
    conn.execute("INSERT INTO benchmarks VALUES (1, 'RTX 4090', 'llama.cpp', 'llama-3.1-8b', 'Q4_K_M', 127.4)")
    conn.commit()
    conn.close()
    doc, _ = _check_modules(tmp_path)
    assert doc["measured"] is None


def test_a_server_database_url_is_not_read_by_the_cli(tmp_path, monkeypatch):
    from runlocal.measured import local_store_path

    monkeypatch.setenv("RUNLOCAL_DB_URL", "postgresql+psycopg://u@db.example/bench")
    assert local_store_path() is None
    monkeypatch.setenv("RUNLOCAL_DB_URL", f"sqlite:///{tmp_path / 'x.sqlite3'}")
    assert local_store_path() == tmp_path / "x.sqlite3"


# --- serve --------------------------------------------------------------------------------------------

BENCH = {**RECORD, "settings": {"ctx": 8192}}


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _submit_all(base: str, keys: list[str], codes: dict[str, int]) -> None:
    with httpx.Client(base_url=base, timeout=30) as c:
        for k in keys:
            r = c.post("/api/v1/benchmarks", json={**BENCH, "submitter": k},
                       headers={"Idempotency-Key": k, "Authorization": "Bearer lab"})
            codes[k] = r.status_code
            if k.endswith("-0"):        # a retry of the same submission: still one row
                codes[k + "/again"] = c.post("/api/v1/benchmarks", json={**BENCH, "submitter": k},
                                             headers={"Idempotency-Key": k}).status_code


def _stop(proc: subprocess.Popen, spawned: list[int]) -> None:
    """SIGTERM: uvicorn's supervisor stops its workers; any that outlive it are killed (SIGKILL on the
    supervisor alone, as runlocal_serve does, would leave them serving)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    for pid in spawned:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_two_workers_share_one_store_under_concurrent_writes(store_url, tmp_path):
    env = {**_env(tmp_path), "RUNLOCAL_ADMIN_TOKEN": "s3cret"}
    sent = [f"w-{c}-{i}" for c in range(8) for i in range(12)]
    codes: dict[str, int] = {}
    with runlocal_serve(env, "--db", store_url, "--workers", "2", "--submitter-token", "lab",
                        "--writes-per-minute", "100000") as (base, proc):
        spawned = _children(proc.pid)
        try:
            assert len(spawned) >= 2, "no worker processes"
            threads = [threading.Thread(target=_submit_all, args=(base, sent[c::8], codes)) for c in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rows = httpx.get(base + "/api/v1/benchmarks", params={"limit": 1000}).json()
            check = httpx.get(base + "/api/v1/check", params={"model": "llama-3.1-8b", "gpu": "rtx-4090",
                                                              "quant": "Q4_K_M", "ctx": 8192}).json()
        finally:
            _stop(proc, spawned)
    assert {k: v for k, v in codes.items() if "/" not in k} == dict.fromkeys(sent, 201)
    assert {v for k, v in codes.items() if "/" in k} == {200}
    submitters = [r["submitter"] for r in rows]
    assert sorted(submitters) == sorted(sent)                        # every row present, once
    assert all(r["verified"] for r in rows) and check["measured"]["records"] == len(sent)


def test_acknowledged_submissions_survive_a_killed_server(tmp_path):
    """SIGKILL `runlocal serve` while a client is submitting: every submission answered 201 is in the
    store afterwards (WAL + synchronous=FULL: the commit is on disk before the answer goes out)."""
    db = f"sqlite:///{tmp_path / 'crash.sqlite3'}"
    acked: list[int] = []
    with runlocal_serve(_env(tmp_path), "--db", db, "--writes-per-minute", "100000") as (base, proc):
        stop = threading.Event()

        def submit():
            with httpx.Client(base_url=base, timeout=5) as c:
                i = 0
                while not stop.is_set():
                    i += 1
                    try:
                        r = c.post("/api/v1/benchmarks", json={**BENCH, "decode_tokens_per_s": float(i % 200 + 1)})
                    except httpx.HTTPError:
                        return                              # the server is gone
                    if r.status_code == 201:
                        acked.append(r.json()["id"])

        t = threading.Thread(target=submit)
        t.start()
        deadline = time.time() + 30
        while len(acked) < 40 and time.time() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)                     # mid-stream: requests are in flight
        stop.set()
        t.join(timeout=10)
    assert len(acked) >= 40
    stored = {row["id"] for row in BenchmarkStore(db).list(limit=1000)}
    assert set(acked) <= stored


def test_submitter_tokens_file_for_serve(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("# lab machines\nalpha\n\nbeta\n")
    with runlocal_serve(_env(tmp_path), "--db", f"sqlite:///{tmp_path / 't.sqlite3'}",
                        "--submitter-tokens-file", str(tokens)) as (base, _):
        ok = httpx.post(base + "/api/v1/benchmarks", json=BENCH, headers={"Authorization": "Bearer beta"})
        no = httpx.post(base + "/api/v1/benchmarks", json=BENCH, headers={"Authorization": "Bearer # lab machines"})
    assert ok.status_code == 201 and ok.json()["verified"] is True
    assert no.status_code == 403


@pytest.mark.parametrize("missing", ["--submitter-tokens-file"])
def test_serve_refuses_a_missing_tokens_file(tmp_path, missing):
    r = subprocess.run([sys.executable, "-m", "runlocal.cli", "serve", missing, str(tmp_path / "nope")],
                       check=False, capture_output=True, text=True, env=_env(tmp_path), timeout=60)
    assert r.returncode == 2 and "nope" in r.stderr


def test_probe_submits_with_the_operators_token_and_counts(tmp_path):
    """`RUNLOCAL_SUBMITTER_TOKEN=… runlocal probe --submit URL`: the server verifies it on arrival."""
    from fake_llm_server import fake_server

    env = {**_env(tmp_path), "RUNLOCAL_SUBMITTER_TOKEN": ""}
    served = {**env, "RUNLOCAL_DB_URL": f"sqlite:///{tmp_path / 'server.sqlite3'}", "RUNLOCAL_SUBMITTER_TOKENS": "lab"}
    with runlocal_serve(served) as (base, _), fake_server(n_ctx=1024) as (url, _):
        for token in ("lab", None):
            probe_env = {**env, "RUNLOCAL_SUBMITTER_TOKEN": token} if token else env
            r = subprocess.run([sys.executable, "-m", "runlocal.cli", "probe", "--url", url, "--max-concurrency", "1",
                                "--max-tokens", "4", "--device", "rtx 4090", "--model", "someone/probe-model",
                                "--submit", base, "--no-store", "--json"],
                               check=False, capture_output=True, text=True, env=probe_env, timeout=60)
            assert r.returncode == 0 and json.loads(r.stdout)["submitted"] is True, r.stderr
        rows = httpx.get(base + "/api/v1/benchmarks").json()
    assert [row["verified"] for row in rows] == [False, True]          # newest first: the anonymous one
    # --model: a Hub repo id (a catalog model's figures would be checked against the card's bandwidth, and the fake
    # server's decode is as fast as a loop); the fake server's own model id ("fake") names no model: the server
    # keeps no such row, and probe says why
    with runlocal_serve(served) as (base, _), fake_server(n_ctx=1024) as (url, _):
        r = subprocess.run([sys.executable, "-m", "runlocal.cli", "probe", "--url", url, "--max-concurrency", "1",
                            "--max-tokens", "4", "--submit", base, "--no-store", "--json"],
                           check=False, capture_output=True, text=True, env=env, timeout=60)
    assert json.loads(r.stdout)["submitted"] is False
    assert "refused the result (422): model: expected a catalog alias or a Hugging Face repo id" in r.stderr


def test_probe_reads_a_gguf_file_name_as_the_catalog_model(tmp_path):
    """llama-server started with `-m /models/Qwen3-8B-Q4_K_M.gguf` and no --alias reports that path as its model id
    (/v1/models). The file is unsloth/Qwen3-8B-GGUF's Q4_K_M (huggingface.co/unsloth/Qwen3-8B-GGUF names its files
    Qwen3-8B-<type>.gguf), so the result is stored and submitted as qwen3-8b at Q4_K_M — before, the server refused
    the file name. A file name that names no catalog model is not sent: one line says to pass --model."""
    from fake_llm_server import fake_server

    env = _env(tmp_path)
    served = {**env, "RUNLOCAL_DB_URL": f"sqlite:///{tmp_path / 'server.sqlite3'}"}
    probe = [sys.executable, "-m", "runlocal.cli", "probe", "--max-concurrency", "1", "--max-tokens", "4",
             "--device", "CPU", "--json"]
    # ≤ 20 tokens/s (a token each 50 ms): below what qwen3-8b Q4_K_M can decode on a CPU (review21 #1: a record
    # faster than the catalog's fastest CPU memory allows, ~265 tokens/s, is neither stored nor submitted)
    with runlocal_serve(served) as (base, _):
        with fake_server(n_ctx=1024, model_id="/models/Qwen3-8B-Q4_K_M.gguf", token_delay=0.05) as (url, _):
            r = subprocess.run([*probe, "--url", url, "--submit", base], check=False, capture_output=True, text=True,
                               env=env, timeout=60)
        assert r.returncode == 0 and json.loads(r.stdout)["submitted"] is True, r.stderr
        rows = httpx.get(base + "/api/v1/benchmarks").json()
        assert [(row["model"], row["quant"]) for row in rows] == [("qwen3-8b", "Q4_K_M")]
        with fake_server(n_ctx=1024, model_id="/models/my-finetune-Q4_K_M.gguf") as (url, _):
            r = subprocess.run([*probe, "--url", url, "--submit", base], check=False, capture_output=True, text=True,
                               env=env, timeout=60)
        assert json.loads(r.stdout)["submitted"] is False
        assert "error: model: the server names its model by the file" in r.stderr and "pass --model" in r.stderr
        assert "refused the result" not in r.stderr                   # not sent: nothing for the server to refuse
        assert len(httpx.get(base + "/api/v1/benchmarks").json()) == 1
