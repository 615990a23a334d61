"""The benchmark store: measured results in SQLite (default) or any SQLAlchemy URL (PostgreSQL tested).

- Each submission is committed before it is acknowledged, so a crash after the reply loses nothing
  (SQLite: WAL + synchronous=FULL).
- An idempotency key makes a retried submission a no-op; the same key with a different body is a
  conflict (the body's SHA-256 is kept beside the key). A unique index decides, not a race.
- A row changes predictions only once ``verified`` (by an admin, or submitted with a submitter token).
- ``version()`` is a counter in ``store_meta`` bumped in the same transaction as every write, verify
  and delete: it only grows, so a cache keyed by it can never see an old value again (row ids can be
  reused after a delete; the counter cannot).
- The schema is created (and an older store's missing columns added) once, when the store is opened,
  under a lock: several workers opening a fresh store at once do not race.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    false,
    inspect,
    select,
    text,
    type_coerce,
)
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.pool import StaticPool

# SQLite keeps ids in its 64-bit rowid (INTEGER PRIMARY KEY); PostgreSQL gets a BIGINT identity.
ID = BigInteger().with_variant(Integer, "sqlite")
MAX_ID = (1 << 63) - 1
VERSION_KEY = "version"
SCHEMA_LOCK = 0x72756E6C   # pg_advisory_xact_lock key ("runl") held while the schema is created

metadata = MetaData()
benchmarks = Table(
    "benchmarks", metadata,
    Column("id", ID, primary_key=True, autoincrement=True),
    Column("idempotency_key", String(128), unique=True, nullable=True),
    Column("body_sha256", String(64)),
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
    Column("peak_memory_bytes", BigInteger),
    Column("max_context", BigInteger),
    Column("max_concurrency", BigInteger),
    Column("submitter", String(100)),
    Column("measured_at", DateTime(timezone=True)),
    Column("source", String(64)),
    Column("verified", Boolean, nullable=False, server_default=false()),
    Column("verified_by", String(80)),
    Column("verified_at", DateTime(timezone=True)),
)
store_meta = Table(
    "store_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", BigInteger, nullable=False),
)
# Columns added after the first release: an older store gets them on opening (rows before: unverified).
ADDED_COLUMNS = {"body_sha256": "VARCHAR(64)", "verified": "BOOLEAN NOT NULL DEFAULT FALSE",
                 "verified_by": "VARCHAR(80)", "verified_at": "TIMESTAMP WITH TIME ZONE"}
FLOATS = ("decode_tokens_per_s", "prefill_tokens_per_s", "ttft_s")
INTS = ("id", "peak_memory_bytes", "max_context", "max_concurrency")


class IdempotencyConflict(Exception):
    """The idempotency key was used before, with a different body."""


def default_url() -> str:
    from ..config import data_dir

    return f"sqlite:///{Path(data_dir()) / 'benchmarks.sqlite3'}"


def body_digest(record: dict[str, Any]) -> str:
    """SHA-256 of the submission as canonical JSON: what a replayed idempotency key is compared by."""
    canon = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str, allow_nan=False)
    return hashlib.sha256(canon.encode()).hexdigest()


class BenchmarkStore:
    def __init__(self, url: str | None = None):
        self.url = url or default_url()
        sqlite = self.url.startswith("sqlite")
        if self.url.startswith("sqlite:///"):
            Path(self.url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
        in_memory = sqlite and self.url.rstrip("/") in ("sqlite:", "sqlite:/:memory:") or ":memory:" in self.url
        # an in-memory SQLite database lives in its connection: one connection shared by every thread, or each
        # pooled connection would see an empty database without the schema
        pooling = {"poolclass": StaticPool} if in_memory else {}
        connect = ({"timeout": 30} | ({"check_same_thread": False} if in_memory else {})) if sqlite else {}
        self.engine = create_engine(self.url, future=True, json_serializer=_strict_json, **pooling,
                                    connect_args=connect)
        if self.engine.dialect.name == "sqlite":
            _sqlite_transactions(self.engine)
        self._create_schema()

    # --- schema ------------------------------------------------------------------------------------
    def _create_schema(self) -> None:
        for attempt in range(5):
            try:
                with self._writing() as conn:
                    if conn.dialect.name == "postgresql":     # one creator at a time across processes
                        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": SCHEMA_LOCK})
                    metadata.create_all(conn)
                    _add_missing_columns(conn)
                    if conn.execute(select(store_meta.c.value).where(store_meta.c.key == VERSION_KEY)).first() is None:
                        conn.execute(store_meta.insert().values(key=VERSION_KEY, value=0))
                return
            except (OperationalError, IntegrityError):
                # another process created the same table between our check and our CREATE (a database
                # without transactional DDL or locks): the next attempt finds it there
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """A write transaction (SQLite: BEGIN IMMEDIATE, so writers queue on the busy timeout instead of
        failing when a read lock would have to be upgraded)."""
        with self.engine.connect().execution_options(writes=True) as conn, conn.begin():
            yield conn

    @staticmethod
    def _bump(conn) -> None:
        conn.execute(store_meta.update().where(store_meta.c.key == VERSION_KEY)
                     .values(value=store_meta.c.value + 1))

    # --- writes ------------------------------------------------------------------------------------
    def add(self, record: dict[str, Any], idempotency_key: str | None = None, *,
            verified_by: str | None = None) -> tuple[dict[str, Any], bool]:
        """Insert; returns (stored row, created). ``verified_by`` (who vouches for it) makes it count at once.
        A repeated idempotency key returns the first row, or raises IdempotencyConflict if the body differs."""
        digest = body_digest(record)
        now = datetime.now(timezone.utc)
        row = {**record, "idempotency_key": idempotency_key, "body_sha256": digest, "created_at": now,
               "verified": verified_by is not None, "verified_by": verified_by,
               "verified_at": now if verified_by else None}
        try:
            with self._writing() as conn:
                new_id = conn.execute(benchmarks.insert().values(**row)).inserted_primary_key[0]
                self._bump(conn)
        except IntegrityError:
            if idempotency_key is None:
                raise
            with self.engine.connect() as conn:
                first = conn.execute(select(benchmarks.c.id, benchmarks.c.body_sha256)
                                     .where(benchmarks.c.idempotency_key == idempotency_key)).first()
            if first is None:           # not the key's unique index that refused it
                raise
            if first.body_sha256 != digest:
                raise IdempotencyConflict(idempotency_key) from None
            got = self.get(first.id)
            assert got is not None
            return got, False
        got = self.get(new_id)
        assert got is not None
        return got, True

    def verify(self, bench_id: int, by: str) -> dict[str, Any] | None:
        """Mark a row verified (it now changes predictions); None if there is no such row."""
        if not 0 < bench_id <= MAX_ID:
            return None
        with self._writing() as conn:
            hit = conn.execute(benchmarks.update().where(benchmarks.c.id == bench_id)
                               .values(verified=True, verified_by=by, verified_at=datetime.now(timezone.utc))).rowcount
            if hit:
                self._bump(conn)
        return self.get(bench_id) if hit else None

    def delete(self, bench_id: int) -> bool:
        if not 0 < bench_id <= MAX_ID:
            return False
        with self._writing() as conn:
            hit = conn.execute(benchmarks.delete().where(benchmarks.c.id == bench_id)).rowcount > 0
            if hit:
                self._bump(conn)
        return hit

    # --- reads -------------------------------------------------------------------------------------
    def get(self, bench_id: int) -> dict[str, Any] | None:
        if not 0 < bench_id <= MAX_ID:
            return None
        with self.engine.connect() as conn:
            r = conn.execute(_select().where(benchmarks.c.id == bench_id)).mappings().first()
        return sanitize_row(dict(r)) if r is not None else None

    def list(self, *, device: str | None = None, model: str | None = None, verified: bool | None = None,
             limit: int = 100) -> list[dict[str, Any]]:
        q = _select().order_by(benchmarks.c.id.desc()).limit(max(1, min(limit, 1000)))
        if device:
            q = q.where(benchmarks.c.device == device)
        if model:
            q = q.where(benchmarks.c.model == model)
        if verified is not None:
            q = q.where(benchmarks.c.verified == verified)
        with self.engine.connect() as conn:
            return [sanitize_row(dict(r)) for r in conn.execute(q).mappings()]

    def version(self) -> int:
        """A counter that grows with every add, verify and delete, for caches of derived answers."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(store_meta.c.value).where(store_meta.c.key == VERSION_KEY)).scalar_one())


def _select():
    """Every column but the idempotency key and digest, read raw: a row an older version stored badly
    (NaN in settings, text in a number column) is repaired by sanitize_row instead of failing the read."""
    hidden = {"idempotency_key", "body_sha256"}
    cols = [type_coerce(c, Text).label(c.name) if isinstance(c.type, (JSON, DateTime)) else c
            for c in benchmarks.c if c.name not in hidden]
    return select(*cols)


def sanitize_row(d: dict[str, Any]) -> dict[str, Any]:
    """A stored row as the API shows it: finite numbers or None, settings a JSON object, times as ISO text."""
    for k in FLOATS:
        d[k] = _finite(d.get(k))
    for k in INTS:
        v = _finite(d.get(k))
        d[k] = int(v) if v is not None and v == int(v) else None
    for k in ("created_at", "measured_at", "verified_at"):
        d[k] = _iso(d.get(k))
    settings = d.get("settings")
    if isinstance(settings, (str, bytes)):
        try:
            settings = json.loads(settings)
        except (ValueError, RecursionError):
            settings = None
    d["settings"] = _finite_json(settings) if isinstance(settings, dict) else {}
    d["verified"] = bool(d.get("verified"))
    return d


def _iso(v: Any) -> str | None:
    if isinstance(v, str):          # SQLite keeps text ("2026-01-02 03:04:05.000006")
        try:
            v = datetime.fromisoformat(v)
        except ValueError:
            return None
    return v.isoformat() if isinstance(v, datetime) else None


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return v if math.isfinite(v) else None


def _finite_json(v: Any, depth: int = 0) -> Any:
    if depth > 32:
        return None
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _finite_json(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite_json(x, depth + 1) for x in v]
    return v


def _strict_json(value: Any) -> str:
    return json.dumps(value, allow_nan=False)     # NaN is not JSON: PostgreSQL refuses it, readers choke on it


def _add_missing_columns(conn) -> None:
    have = {c["name"] for c in inspect(conn).get_columns("benchmarks")}
    for name, ddl in ADDED_COLUMNS.items():
        if name not in have:
            conn.execute(text(f"ALTER TABLE benchmarks ADD COLUMN {name} {ddl}"))


def _sqlite_transactions(engine) -> None:
    """pysqlite's own transaction handling defers BEGIN and cannot BEGIN IMMEDIATE; SQLAlchemy's recipe
    (docs: "Serializable isolation / Savepoints / Transactional DDL") takes it over."""

    @event.listens_for(engine, "connect")
    def _connect(conn, _record):
        conn.isolation_level = None            # the driver's autocommit: we emit BEGIN ourselves
        cur = conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")     # WAL + full sync: an acknowledged commit survives a crash
        cur.execute("PRAGMA synchronous=FULL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("writes") else "BEGIN")
