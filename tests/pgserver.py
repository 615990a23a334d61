"""A real PostgreSQL for the store tests: Debian's `postgresql` package, a throw-away cluster on a Unix socket.

The server binaries come from /usr/lib/postgresql/<version>/bin; when they are missing and we are root
with apt-get (CI), the package is installed first. initdb refuses to run as root, so as root the
cluster belongs to the `postgres` user the package creates. Each test gets a fresh database.
Where none of this is possible the tests that need it are skipped with the reason printed.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PORT = 5432             # only names the socket file; nothing listens on TCP (listen_addresses='')


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _install() -> str | None:
    """apt-get install postgresql; None on success, else why not."""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "PostgreSQL is not installed and this user cannot apt-get install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "install", "-y", "-q", "postgresql"], ["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "postgresql"]):
        r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=900)
        if r.returncode == 0 and cmd[1] == "install":
            return None
    return f"apt-get install postgresql failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}"


def _as_owner(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    return [runuser, "-u", "postgres", "--", *cmd] if runuser else ["su", "postgres", "-c", " ".join(cmd)]


@contextmanager
def postgres_cluster() -> Iterator[str | None]:
    """Yields the socket directory of a running cluster, or None (with the reason printed) when there can be none."""
    bindir = _bin_dir()
    if bindir is None:
        reason = _install()
        bindir = _bin_dir()
        if bindir is None:
            print(f"\nSKIP PostgreSQL store tests: {reason}", file=sys.__stderr__)
            yield None
            return
    root = Path(tempfile.mkdtemp(prefix="runlocal-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    try:
        subprocess.run(_as_owner([str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
                                  "--no-sync", "-E", "UTF8"]), check=True, capture_output=True, timeout=120)
        opts = f"-k {sock} -c listen_addresses='' -p {PORT} -c fsync=off -c max_connections=200"
        subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"),
                                  "-w", "-t", "60", "start"]), check=True, capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
        log = (root / "log").read_text(errors="replace")[-500:] if (root / "log").exists() else ""
        print(f"\nSKIP PostgreSQL store tests: the cluster did not start: {e} {log}", file=sys.__stderr__)
        shutil.rmtree(root, ignore_errors=True)
        yield None
        return
    try:
        yield str(sock)
    finally:
        subprocess.run(_as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       check=False, capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


_numbers = itertools.count()


def _admin(sock: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(host=sock, port=PORT, user="postgres", dbname="postgres", autocommit=True) as conn:
        conn.execute(sql)


@contextmanager
def fresh_database(sock: str) -> Iterator[str]:
    """A new, empty database on the cluster, dropped afterwards; yields its SQLAlchemy URL (psycopg 3 over
    the Unix socket)."""
    name = f"t{os.getpid()}_{next(_numbers)}"
    _admin(sock, f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@/{name}?host={sock}&port={PORT}"
    finally:      # connections the test's engines still hold would keep the database (and a slot) alive
        _admin(sock, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
        _admin(sock, f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture(scope="session")
def postgres_socket():
    with postgres_cluster() as sock:
        yield sock


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """The URL of a fresh, empty store: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bench.sqlite3'}"
        return
    sock = request.getfixturevalue("postgres_socket")
    if sock is None:
        pytest.skip("PostgreSQL unavailable (reason printed above)")
    with fresh_database(sock) as url:
        yield url
