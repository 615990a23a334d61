"""The benchmark store itself, on SQLite and on a real PostgreSQL: schema at opening, a version counter
that only grows, idempotency with body comparison, verification, and rows that cannot break a read."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from sqlalchemy import text

from runlocal.api.store import BenchmarkStore, IdempotencyConflict

RECORD = {"device": "NVIDIA GeForce RTX 4090", "runtime": "llama.cpp", "runtime_version": "b6500",
          "model": "llama-3.1-8b", "quant": "Q4_K_M", "settings": {"ctx": 8192}, "decode_tokens_per_s": 127.5,
          "peak_memory_bytes": 6 << 30, "max_context": 8192}


def test_backend_is_the_one_asked_for(store_url):
    store = BenchmarkStore(store_url)
    assert store.engine.dialect.name == store_url.split(":")[0].split("+")[0]


def test_sixteen_first_openers_of_a_fresh_store_all_succeed(store_url):
    # 16 workers opening a store nobody created yet, then submitting at once: one schema, 16 rows
    errors: list[BaseException] = []
    ids: list[int] = []
    barrier = threading.Barrier(16)

    def first_submission(i: int):
        try:
            barrier.wait()
            row, created = BenchmarkStore(store_url).add({**RECORD, "decode_tokens_per_s": float(i + 1)})
            assert created
            ids.append(row["id"])
        except BaseException as e:   # noqa: BLE001 — reported below
            errors.append(e)

    threads = [threading.Thread(target=first_submission, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = BenchmarkStore(store_url).list(limit=100)
    assert sorted(r["id"] for r in rows) == sorted(ids) and len(set(ids)) == 16
    assert sorted(r["decode_tokens_per_s"] for r in rows) == [float(i + 1) for i in range(16)]


def test_version_only_grows_even_when_an_id_comes_back(store_url):
    store = BenchmarkStore(store_url)
    seen = [store.version()]
    first, _ = store.add(RECORD)
    seen.append(store.version())
    assert store.delete(first["id"])
    seen.append(store.version())
    again, _ = store.add({**RECORD, "decode_tokens_per_s": 1.0})
    seen.append(store.version())
    assert store.verify(again["id"], "admin") is not None
    seen.append(store.version())
    assert seen == sorted(set(seen)), seen          # strictly increasing
    # the old cache key (row count, highest id) would have been equal before the delete and after the re-add
    if store.engine.dialect.name == "sqlite":
        assert again["id"] == first["id"]            # SQLite reuses the freed rowid: why ids cannot be the version


def test_reads_and_misses_do_not_move_the_version(store_url):
    store = BenchmarkStore(store_url)
    store.add(RECORD)
    v = store.version()
    store.list()
    assert store.delete(10 ** 30) is False and store.verify(-1, "admin") is None and store.get(1 << 63) is None
    assert store.version() == v


def test_idempotency_same_body_returns_the_first_row_other_body_conflicts(store_url):
    store = BenchmarkStore(store_url)
    a, created_a = store.add(RECORD, "key-1")
    b, created_b = store.add(dict(RECORD), "key-1")
    assert created_a and not created_b and a["id"] == b["id"]
    with pytest.raises(IdempotencyConflict):
        store.add({**RECORD, "decode_tokens_per_s": 999.0}, "key-1")
    assert len(store.list()) == 1


def test_concurrent_retries_store_one_row(store_url):
    store = BenchmarkStore(store_url)
    results = []

    def submit():
        results.append(store.add(dict(RECORD), "same-key"))

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(created for _, created in results) == 1
    assert len(store.list()) == 1


def test_rows_are_unverified_until_someone_vouches(store_url):
    store = BenchmarkStore(store_url)
    anon, _ = store.add(RECORD)
    vouched, _ = store.add({**RECORD, "decode_tokens_per_s": 120.0}, verified_by="submitter:abc")
    assert anon["verified"] is False and anon["verified_by"] is None
    assert vouched["verified"] is True and vouched["verified_by"] == "submitter:abc" and vouched["verified_at"]
    assert [r["id"] for r in store.list(verified=True)] == [vouched["id"]]
    after = store.verify(anon["id"], "admin")
    assert after["verified"] is True and after["verified_by"] == "admin"
    assert {r["id"] for r in store.list(verified=True)} == {anon["id"], vouched["id"]}


def test_big_numbers_fit_their_columns(store_url):
    # PostgreSQL's INTEGER is 32-bit: the byte counts and contexts the API admits need BIGINT
    store = BenchmarkStore(store_url)
    row, _ = store.add({**RECORD, "peak_memory_bytes": 1 << 50, "max_context": 1 << 31, "max_concurrency": 1 << 20})
    assert (row["peak_memory_bytes"], row["max_context"], row["max_concurrency"]) == (1 << 50, 1 << 31, 1 << 20)


def test_bad_rows_of_older_versions_are_sanitised_not_fatal(store_url):
    store = BenchmarkStore(store_url)
    good, _ = store.add(RECORD)
    bad, _ = store.add(RECORD)
    with store.engine.begin() as conn:
        if store.engine.dialect.name == "sqlite":    # what the previous version could store: NaN in settings
            conn.execute(text("UPDATE benchmarks SET settings = '{\"temp\": NaN, \"x\": [Infinity]}', "
                              "decode_tokens_per_s = 'fast', created_at = 'yesterday' WHERE id = :i"), {"i": bad["id"]})
        else:                                         # PostgreSQL refuses NaN in JSON, not in a float column
            conn.execute(text("UPDATE benchmarks SET decode_tokens_per_s = 'NaN', ttft_s = 'Infinity' WHERE id = :i"),
                         {"i": bad["id"]})
    rows = {r["id"]: r for r in store.list()}
    assert rows[good["id"]]["decode_tokens_per_s"] == 127.5
    assert rows[bad["id"]]["decode_tokens_per_s"] is None and rows[bad["id"]]["ttft_s"] is None
    if store.engine.dialect.name == "sqlite":
        assert rows[bad["id"]]["settings"] == {"temp": None, "x": [None]}
        assert rows[bad["id"]]["created_at"] is None


def test_an_older_store_gains_the_new_columns_and_its_rows_count_for_nothing(tmp_path):
    # the previous schema (no verification, no meta table), with a row in it
    path = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE benchmarks (id INTEGER PRIMARY KEY, idempotency_key VARCHAR(128) UNIQUE, "
                 "created_at DATETIME NOT NULL, device VARCHAR(200) NOT NULL, runtime VARCHAR(64) NOT NULL, "
                 "runtime_version VARCHAR(64), model VARCHAR(300) NOT NULL, quant VARCHAR(64), settings JSON NOT NULL, "
                 "decode_tokens_per_s FLOAT, prefill_tokens_per_s FLOAT, ttft_s FLOAT, peak_memory_bytes INTEGER, "
                 "max_context INTEGER, max_concurrency INTEGER, submitter VARCHAR(100), measured_at DATETIME, "
                 "source VARCHAR(64))")
    conn.execute("INSERT INTO benchmarks (created_at, device, runtime, model, settings, decode_tokens_per_s) "
                 "VALUES ('2025-01-02 03:04:05.000000', 'RTX 4090', 'llama.cpp', 'llama-3.1-8b', '{}', 99.0)")
    conn.commit()
    conn.close()
    store = BenchmarkStore(f"sqlite:///{path}")
    [row] = store.list()
    assert row["verified"] is False and row["decode_tokens_per_s"] == 99.0
    assert row["created_at"] == "2025-01-02T03:04:05"
    assert store.version() == 0
    store.add(RECORD)
    assert store.version() == 1 and len(store.list()) == 2
