"""Property-based tests of the whole HTTP API from its own OpenAPI document (schemathesis, in-process over ASGI).

Every operation gets ``EXAMPLES`` generated requests, valid and invalid: none may answer 5xx, and every answer
must have a declared status code, a declared content type and a body matching the declared schema. The Hub is
offline (a repo id answers 502 from the cache miss, as it would on a server without network).
"""

from __future__ import annotations

import os
import tempfile

import pytest

schemathesis = pytest.importorskip("schemathesis")
# imported once importorskip has found schemathesis (hypothesis comes with it)
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from runlocal.api.app import create_app  # noqa: E402

EXAMPLES = 15          # per operation; 16 operations → about 240 requests, ~30 s of CPU

_app = create_app(store_url=f"sqlite:///{os.path.join(tempfile.mkdtemp(prefix='runlocal-st-'), 'b.sqlite3')}",
                  admin_token="s3cret", cors_origins=[], writes_per_minute=1e6,
                  plan_deadline_s=3.0)    # a slow plan answers 503 Retry-After (declared) instead of hanging
schema = schemathesis.openapi.from_asgi("/openapi.json", _app)


@schemathesis.check
def no_5xx_but_busy(ctx, response, case):
    """No 5xx, except 503 with Retry-After: the planning pool's answer to a plan over its deadline, by design."""
    busy = response.status_code == 503 and any(k.lower() == "retry-after" for k in response.headers)
    if response.status_code >= 500 and not busy:
        raise AssertionError(f"server error {response.status_code}: {response.text[:300]}")


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_5xx_and_answers_match_their_schema(case):
    case.call_and_validate(checks=[no_5xx_but_busy, status_code_conformance, content_type_conformance,
                                   response_schema_conformance], excluded_checks=[not_a_server_error])
