"""review21 #11: `speed.source` is in every plan's JSON ("predicted" where no stored run replaced a figure), and the
OpenAPI document types `speed` (it was `{"type": "object", "additionalProperties": true}`)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from runlocal.api.app import create_app
from runlocal.api.schemas import SpeedDoc
from runlocal.check import CheckRequest, check


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(cors_origins=[]), base_url="http://127.0.0.1")


def test_a_predicted_plan_says_so(client):
    """The review's request: GET /api/v1/check?model=qwen3-8b&gpu=rtx-4060 had no speed.source at all."""
    doc = client.get("/api/v1/check", params={"model": "qwen3-8b", "gpu": "rtx-4060"}).json()
    assert doc["speed"]["source"] == "predicted"
    assert doc["measured"] is None


@pytest.mark.parametrize("model, gpu, runtime", [
    ("qwen3-8b", "rtx-4060", None), ("qwen3-8b", "rtx-4090", "vllm"), ("qwen3-8b", "none", None),
    ("llama-3.1-70b", "rtx-4090", "transformers"),        # weights on disk: weights_on_disk_bytes, no decode
    ("qwen3-8b", "m3-max-64gb", "mlx"),
])
def test_every_key_a_plan_writes_is_a_typed_field(model, gpu, runtime):
    speed = check(CheckRequest(model=model, gpu=gpu, runtime=runtime, use_measurements=False))[0].to_dict()["speed"]
    assert set(speed) <= set(SpeedDoc.model_fields), set(speed) - set(SpeedDoc.model_fields)
    SpeedDoc.model_validate(speed)


def test_the_openapi_document_types_speed(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["PlanDoc"]["properties"]["speed"] == {"$ref": "#/components/schemas/SpeedDoc"}
    source = schemas["SpeedDoc"]["properties"]["source"]
    assert source["enum"] == ["predicted", "measured", "mixed"] and "source" in schemas["SpeedDoc"]["required"]
    assert all(p.get("description") for p in schemas["SpeedDoc"]["properties"].values())
