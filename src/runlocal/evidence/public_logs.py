"""Load the public llama.cpp / Ollama log records (stdlib only).

    from runlocal.evidence.public_logs import load_llamacpp, load_ollama
    records = load_llamacpp()        # list[dict], validated

Each record is one real log posted in a public GitHub issue/PR/discussion.
MiB figures are copied as logged. See measurements/public_logs/README.md.
"""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlparse

from . import MEASUREMENTS

HERE = MEASUREMENTS / "public_logs"
PUBLIC_HOSTS = {"github.com", "gist.github.com", "huggingface.co", "www.reddit.com", "reddit.com"}

LLAMACPP_REQUIRED = ("source_url", "backend", "gpu", "model_file", "arch", "settings", "logged", "excerpt")
OLLAMA_REQUIRED = ("source_url", "ollama_version", "gpu", "model", "settings", "logged", "excerpt")
BACKENDS = {"cuda", "metal", "rocm", "vulkan", "sycl", "cpu"}


class RecordError(ValueError):
    pass


def _mib_values(obj, path=""):
    """Yield (path, value) for every numeric MiB figure in a logged dict.

    Keys holding MiB figures: any dict under a key ending in 'buffers', and any key
    ending in '_mib'. Other numbers (graph nodes, layer counts) are not MiB.
    """
    if isinstance(obj, dict):
        for k, v in obj.items():
            p = f"{path}.{k}" if path else k
            if isinstance(v, dict) and k.endswith("buffers"):
                for bk, bv in v.items():
                    yield f"{p}.{bk}", bv
            elif k.endswith("_mib"):
                if isinstance(v, dict):
                    for bk, bv in v.items():
                        yield f"{p}.{bk}", bv
                else:
                    yield p, v
            elif isinstance(v, dict):
                yield from _mib_values(v, p)


def validate(rec: dict, kind: str) -> None:
    required = LLAMACPP_REQUIRED if kind == "llamacpp" else OLLAMA_REQUIRED
    missing = [k for k in required if k not in rec]
    if missing:
        raise RecordError(f"missing {missing}")
    url = urlparse(rec["source_url"])
    if url.scheme != "https" or url.netloc not in PUBLIC_HOSTS:
        raise RecordError(f"source_url not on a public host: {rec['source_url']}")
    if kind == "llamacpp" and rec["backend"] not in BACKENDS:
        raise RecordError(f"backend {rec['backend']!r}")
    if not isinstance(rec["settings"], dict) or not isinstance(rec["logged"], dict):
        raise RecordError("settings/logged must be objects")
    if not rec["logged"]:
        raise RecordError("logged is empty")
    if not isinstance(rec.get("round", 1), int) or isinstance(rec.get("round"), bool):
        raise RecordError(f"round must be a whole number (the collection round: 2 for backends_round2.jsonl), "
                          f"got {rec['round']!r}")
    if not isinstance(rec["excerpt"], str) or not rec["excerpt"].strip():
        raise RecordError("excerpt empty")
    for p, v in _mib_values(rec["logged"]):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise RecordError(f"{p}: MiB figure must be a positive number, got {v!r}")


def _load(name: str, kind: str) -> list[dict]:
    out = []
    with open(HERE / name, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            try:
                validate(rec, kind)
            except RecordError as e:
                raise RecordError(f"{name}:{i}: {e}") from None
            out.append(rec)
    return out


def load_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    """The records of one JSON-lines file, each checked for the ``required`` keys (vLLM and SGLang logs)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                rec = json.loads(line)
                missing = [k for k in required if k not in rec]
                if missing:
                    raise RecordError(f"{Path(path).name}:{i}: missing {', '.join(missing)}")
                out.append(rec)
    return out


def load_llamacpp() -> list[dict]:
    return _load("llamacpp.jsonl", "llamacpp")


def load_sycl() -> list[dict]:
    """llama.cpp's SYCL backend (Intel GPUs): kept apart from llamacpp.jsonl, scored per backend by
    benchmarks/backend_logs.py (measurements/public_logs/README.md)."""
    return _load("sycl.jsonl", "llamacpp")


def load_backends_round2() -> list[dict]:
    """Round 2 of the per-backend logs (Vulkan, Metal, ROCm, CPU; measurements/public_logs/round_backends_queries.md):
    scored by benchmarks/backend_logs.py, tuning and held-out parts apart; not read by benchmarks/accuracy.py."""
    return _load("backends_round2.jsonl", "llamacpp")


def held_out_sources(records: list[dict]) -> set[str]:
    """The held-out sources by round 2's rules (round_backends_queries.md), in the file's (collection) order: batch 2a,
    the second source of each backend; batch 2b, every second new source (2nd, 4th, ...) whatever its backend."""
    per_backend: dict[str, list[str]] = {}
    batch_2b: list[str] = []
    for rec in records:
        sources = batch_2b if rec.get("batch") == "2b" else per_backend.setdefault(rec["backend"], [])
        if rec["source_url"] not in sources:
            sources.append(rec["source_url"])
    held = {sources[1] for sources in per_backend.values() if len(sources) > 1}
    return held | set(batch_2b[1::2])


def load_ollama() -> list[dict]:
    return _load("ollama.jsonl", "ollama")


if __name__ == "__main__":
    from collections import Counter

    ll, ol = load_llamacpp(), load_ollama()
    print(f"llama.cpp: {len(ll)} records")
    print("  backend:", dict(Counter(r["backend"] for r in ll)))
    print("  arch:   ", dict(Counter(r["arch"] for r in ll)))
    print(f"ollama: {len(ol)} records")
