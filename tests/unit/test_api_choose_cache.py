"""/api/v1/best and /api/v1/compare answer a repeated question from the answer already made (a 70B's best takes
seconds); an error is answered again each time, never kept."""

from __future__ import annotations

from fastapi.testclient import TestClient

from runlocal import choose, compare
from runlocal.api.app import create_app


def test_a_repeated_best_or_compare_is_planned_once(tmp_path, monkeypatch):
    calls = {"best": 0, "compare": 0}
    real_best, real_compare = choose.best, compare.compare_devices

    def counted_best(*args, **kwargs):
        calls["best"] += 1
        return real_best(*args, **kwargs)

    def counted_compare(*args, **kwargs):
        calls["compare"] += 1
        return real_compare(*args, **kwargs)

    monkeypatch.setattr(choose, "best", counted_best)
    monkeypatch.setattr(compare, "compare_devices", counted_compare)
    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    best = {"model": "qwen2.5-0.5b", "runtime": "vllm", "ctx": 4096}
    pair = {"devices": "rtx-4090,h100", "model": "qwen2.5-0.5b"}
    first_best, first_compare = client.get("/api/v1/best", params=best), client.get("/api/v1/compare", params=pair)
    assert first_best.status_code == first_compare.status_code == 200
    assert client.get("/api/v1/best", params=best).content == first_best.content
    assert client.get("/api/v1/compare", params=pair).content == first_compare.content
    assert calls == {"best": 1, "compare": 1}
    assert client.get("/api/v1/best", params={**best, "ctx": 8192}).status_code == 200     # another question: planned
    assert calls["best"] == 2
    for _ in range(2):
        assert client.get("/api/v1/compare", params={"devices": "rtx-4090,no-such-card"}).status_code == 422
    assert calls["compare"] == 3
