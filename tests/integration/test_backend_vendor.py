"""--backend names a ggml build; a build that cannot drive the GPU given is refused in one line naming --backend, the
GPU and the backends that can (exit 2; 422 from the API, which reads the same request contract). The vendors each
build drives, from llama.cpp's docs: docs/build.md (CUDA: NVIDIA GPUs; HIP: AMD GPUs, built for their gfx targets;
Metal: Apple silicon; Vulkan: any GPU with a Vulkan driver) and docs/backend/SYCL.md (Intel GPUs; NVIDIA and AMD
through oneAPI's plugins)."""

from __future__ import annotations

from asking import run_cli
from fastapi.testclient import TestClient

from runlocal.api.app import create_app


def test_rocm_on_an_nvidia_card_is_refused_in_one_line():
    r = run_cli("check", "qwen3-8b", "--gpu", "rtx 4090", "--backend", "rocm")
    assert r.returncode == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "--backend rocm" in err and "RTX 4090" in err
    assert "cuda" in err and "vulkan" in err and "backends that can" in err


def test_each_vendor_keeps_its_own_builds():
    assert run_cli("check", "qwen3-8b", "--gpu", "8060s", "--backend", "cuda").returncode == 2
    assert run_cli("check", "qwen3-8b", "--gpu", "m2 max", "--backend", "rocm").returncode == 2
    # builds that do drive the card still plan it
    for gpu, backend in (("rtx 4090", "vulkan"), ("rtx 4090", "cuda"), ("8060s", "rocm"), ("m2 max", "metal"),
                         ("rtx 4090", "cpu")):
        r = run_cli("check", "qwen3-8b", "--gpu", gpu, "--backend", backend, "--json")
        assert r.returncode == 0, (gpu, backend, r.stderr)


def test_the_api_answers_422_on_the_backend_field(tmp_path):
    client = TestClient(create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", admin_token="s3cret",
                                   cors_origins=[]))
    r = client.post("/api/v1/check", json={"model": "qwen3-8b", "gpu": "rtx 4090", "backend": "rocm"})
    assert r.status_code == 422, r.text
    assert any("backend" in d["loc"] for d in r.json()["detail"]), r.text
    assert "RTX 4090" in r.text
    assert client.post("/api/v1/check", json={"model": "qwen3-8b", "gpu": "rtx 4090", "backend": "cuda"}).status_code \
        == 200
