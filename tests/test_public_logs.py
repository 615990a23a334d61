"""The public llama.cpp / Ollama log dataset (measurements/public_logs) stays well-formed."""
from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("public_logs_load", ROOT / "measurements/public_logs/load.py")
load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(load)

LLAMACPP = load.load_llamacpp()
OLLAMA = load.load_ollama()


def _ids(recs):
    return [f"{i}:{r['source_url'].rsplit('/', 3)[-3:]}" for i, r in enumerate(recs)]


@pytest.mark.parametrize("rec", LLAMACPP, ids=_ids(LLAMACPP))
def test_llamacpp_record(rec):
    for k in load.LLAMACPP_REQUIRED:
        assert k in rec, k
    assert urlparse(rec["source_url"]).netloc in load.PUBLIC_HOSTS
    assert rec["backend"] in load.BACKENDS
    assert rec["arch"] and rec["model_file"]
    # a record is only useful if it logs at least one buffer we can predict
    logged = rec["logged"]
    assert any(k in logged for k in ("model_buffers", "kv_buffers", "compute_buffers", "kv_self_size_mib"))
    for path, v in load._mib_values(logged):
        assert isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0, path


@pytest.mark.parametrize("rec", OLLAMA, ids=_ids(OLLAMA))
def test_ollama_record(rec):
    for k in load.OLLAMA_REQUIRED:
        assert k in rec, k
    assert urlparse(rec["source_url"]).netloc in load.PUBLIC_HOSTS
    for path, v in load._mib_values(rec["logged"]):
        assert isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0, path


def test_urls_unique_per_record():
    seen = set()
    for r in LLAMACPP + OLLAMA:
        key = (r["source_url"], r["excerpt"][:200])
        assert key not in seen, r["source_url"]
        seen.add(key)


def test_validator_rejects_bad_records():
    good = {"source_url": "https://github.com/x/y/issues/1", "backend": "cuda", "gpu": "?", "model_file": "m.gguf",
            "arch": "llama", "settings": {}, "logged": {"model_buffers": {"CUDA0": 1.0}}, "excerpt": "x"}
    load.validate(good, "llamacpp")
    with pytest.raises(load.RecordError):
        load.validate({**good, "source_url": "file:///tmp/x"}, "llamacpp")
    with pytest.raises(load.RecordError):
        load.validate({**good, "logged": {"model_buffers": {"CUDA0": -1}}}, "llamacpp")
    with pytest.raises(load.RecordError):
        load.validate({k: v for k, v in good.items() if k != "arch"}, "llamacpp")
