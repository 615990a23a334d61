"""--vram names several GPUs by memory alone ("2 x 24 GB", as posts do: measurements/outcomes' unresolved records)."""

import pytest
from fastapi.testclient import TestClient

from runlocal.check import CheckRequest, check
from runlocal.errors import InputError
from runlocal.units import parse_sizes

GIB = 2**30


@pytest.mark.parametrize(("text", "gib"), [
    ("24G", [24]), ("2x24G", [24, 24]), ("2 × 24GiB", [24, 24]), ("24G,16G", [24, 16]),
    ("2x24G, 8G", [24, 24, 8]), ("3*16G", [16, 16, 16]),
])
def test_sizes_one_per_gpu(text, gib):
    assert parse_sizes(text) == [g * GIB for g in gib]


@pytest.mark.parametrize(("text", "words"), [
    ("0x24G", "at most 64 GPUs"), ("65x1G", "at most 64 GPUs"), ("40x1G,40x1G", "at most 64 GPUs"),
    ("2x", "cannot read size"), ("24G,", "cannot read size"), ("lots", "cannot read size"),
])
def test_bad_sizes_name_the_field(text, words):
    with pytest.raises(InputError, match="^vram: .*" + words):
        parse_sizes(text, field="vram")


def test_two_unnamed_gpus_hold_what_one_cannot():
    # llama-3.1-70b at Q4_K_M is ~40 GiB of weights (70.6e9 params × ~4.85 bits): no single 24 GiB card holds it,
    # two do; each planned device is one of the sizes asked
    one, _ = check(CheckRequest(model="llama-3.1-70b", vram="24G", ram="16G", ctx=4096, n_gpu_layers=-2))
    two, _ = check(CheckRequest(model="llama-3.1-70b", vram="2x24G", ram="16G", ctx=4096, n_gpu_layers=-2))
    gpus = [d for d in two.to_dict()["memory"]["devices"] if d["kind"] == "gpu"]
    assert [d["capacity"] for d in gpus] == [24 * GIB, 24 * GIB]
    assert one.verdict == "does_not_fit" and two.verdict in ("fits", "tight")


def test_the_api_takes_the_same_text(tmp_path):
    from runlocal.api.app import create_app

    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", cors_origins=[]))
    ok = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "vram": "2x12G", "ram": "32G", "ctx": 4096})
    assert ok.status_code == 200
    assert sum(d["kind"] == "gpu" for d in ok.json()["memory"]["devices"]) == 2
    bad = client.post("/api/v1/check", json={"model": "llama-3.1-8b", "vram": "2x", "ctx": 4096})
    assert bad.status_code == 422 and "vram" in bad.text
