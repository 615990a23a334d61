"""The benchmark store: measured results in SQLite (default) or any SQLAlchemy URL.

Each submission is committed before it is acknowledged, so a crash after the reply loses nothing;
an idempotency key makes a retried submission a no-op (a unique index decides, not a race).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Float, Integer, MetaData, String, Table, create_engine, event, select
from sqlalchemy.exc import IntegrityError

metadata = MetaData()
benchmarks = Table(
    "benchmarks", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("idempotency_key", String(128), unique=True, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("device", String(200), nullable=False),
    Column("runtime", String(64), nullable=False),
    Column("runtime_version", String(64)),
    Column("model", String(300), nullable=False),
    Column("quant", String(64)),
    Column("settings", JSON, nullable=False),
    Column("decode_tokens_per_s", Float),
    Column("prefill_tokens_per_s", Float),
    Column("ttft_s", Float),
    Column("peak_memory_bytes", Integer),
    Column("max_context", Integer),
    Column("max_concurrency", Integer),
    Column("submitter", String(100)),
    Column("measured_at", DateTime(timezone=True)),
    Column("source", String(64)),
)


def default_url() -> str:
    from ..config import data_dir

    return f"sqlite:///{Path(data_dir()) / 'benchmarks.sqlite3'}"


class BenchmarkStore:
    def __init__(self, url: str | None = None):
        self.url = url or default_url()
        if self.url.startswith("sqlite:///"):
            Path(self.url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(self.url, future=True)
        if self.engine.dialect.name == "sqlite":
            @event.listens_for(self.engine, "connect")
            def _pragmas(conn, _record):  # WAL + full sync: an acknowledged commit survives a crash
                cur = conn.cursor()
                cur.execute("PRAGMA journal_mode=WAL")
                cur.execute("PRAGMA synchronous=FULL")
                cur.close()
        metadata.create_all(self.engine)

    def add(self, record: dict[str, Any], idempotency_key: str | None = None) -> tuple[dict[str, Any], bool]:
        """Insert; returns (stored row, created). A repeated idempotency key returns the first row."""
        row = {**record, "idempotency_key": idempotency_key, "created_at": datetime.now(timezone.utc)}
        try:
            with self.engine.begin() as conn:
                new_id = conn.execute(benchmarks.insert().values(**row)).inserted_primary_key[0]
        except IntegrityError:
            if idempotency_key is None:
                raise
            existing = self.by_key(idempotency_key)
            assert existing is not None
            return existing, False
        got = self.get(new_id)
        assert got is not None
        return got, True

    def by_key(self, key: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            r = conn.execute(select(benchmarks).where(benchmarks.c.idempotency_key == key)).mappings().first()
        return _row(r)

    def get(self, bench_id: int) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            r = conn.execute(select(benchmarks).where(benchmarks.c.id == bench_id)).mappings().first()
        return _row(r)

    def list(self, *, device: str | None = None, model: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        q = select(benchmarks).order_by(benchmarks.c.id.desc()).limit(max(1, min(limit, 1000)))
        if device:
            q = q.where(benchmarks.c.device == device)
        if model:
            q = q.where(benchmarks.c.model == model)
        with self.engine.connect() as conn:
            return [_row(r) for r in conn.execute(q).mappings()]  # type: ignore[misc]

    def delete(self, bench_id: int) -> bool:
        with self.engine.begin() as conn:
            return conn.execute(benchmarks.delete().where(benchmarks.c.id == bench_id)).rowcount > 0

    def version(self) -> tuple[int, int | None]:
        """(row count, highest id): changes with every add and delete, for caches of derived answers."""
        from sqlalchemy import func

        with self.engine.connect() as conn:
            count, top = conn.execute(select(func.count(), func.max(benchmarks.c.id))).one()
        return int(count), top


def _row(r) -> dict[str, Any] | None:
    if r is None:
        return None
    d = dict(r)
    d.pop("idempotency_key", None)
    for k in ("created_at", "measured_at"):
        if d.get(k) is not None:
            d[k] = d[k].isoformat()
    if isinstance(d.get("settings"), str):
        d["settings"] = json.loads(d["settings"])
    return d
