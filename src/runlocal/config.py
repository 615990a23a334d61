"""Where runlocal keeps its files, from the environment, read in one place."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """RUNLOCAL_HOME, else $XDG_DATA_HOME/runlocal, else ~/.local/share/runlocal."""
    if os.environ.get("RUNLOCAL_HOME"):
        return Path(os.environ["RUNLOCAL_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "runlocal"


def store_url() -> str | None:
    return os.environ.get("RUNLOCAL_DB_URL")


def admin_token() -> str | None:
    return os.environ.get("RUNLOCAL_ADMIN_TOKEN")


def submitter_tokens() -> list[str]:
    """Tokens whose benchmark submissions are verified on arrival: RUNLOCAL_SUBMITTER_TOKENS (comma-separated)
    and the lines of the file RUNLOCAL_SUBMITTER_TOKENS_FILE (blank lines and # comments skipped)."""
    tokens = [t.strip() for t in os.environ.get("RUNLOCAL_SUBMITTER_TOKENS", "").split(",")]
    path = os.environ.get("RUNLOCAL_SUBMITTER_TOKENS_FILE")
    if path:
        tokens += [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()
                   if not line.lstrip().startswith("#")]
    return [t for t in tokens if t]


def submitter_token() -> str | None:
    """The token `runlocal probe --submit` sends (RUNLOCAL_SUBMITTER_TOKEN): one a server's operator issued."""
    return os.environ.get("RUNLOCAL_SUBMITTER_TOKEN") or None


def cors_origins() -> list[str]:
    raw = os.environ.get("RUNLOCAL_CORS_ORIGINS", "")
    return [o.strip() for o in raw.split(",") if o.strip()]


def default_allowed_hosts(bind: str) -> list[str] | None:
    """`runlocal serve`'s Host check by default: loopback names, plus the address served on; a server on every
    interface checks no Host by default (it is behind a proxy or the operator names its hosts with --allowed-host)."""
    if bind in ("0.0.0.0", "::", ""):
        return None
    return sorted({"localhost", "127.0.0.1", "::1", "[::1]", bind})
