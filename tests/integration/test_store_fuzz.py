"""Schemathesis against the benchmark endpoints, from their OpenAPI document: no 5xx, every answer matching
its declared schema and status codes, on SQLite and PostgreSQL. A bounded number of examples here; the README
records a longer run."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from runlocal.api.app import create_app

EXAMPLES = 40


@pytest.fixture
def benchmark_api(store_url):
    app = create_app(store_url=store_url, admin_token="s3cret", submitter_tokens=["lab"], cors_origins=[],
                     writes_per_minute=1e6)     # the rate limit has its own test (test_api.py)
    return schemathesis.openapi.from_asgi("/openapi.json", app)


schema = schemathesis.pytest.from_fixture("benchmark_api").include(path_regex="^/api/v1/benchmarks")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_benchmark_endpoints_hold_their_contract(case):
    # Allow on a 405 is left out: Starlette lists only the methods of the first route matching the path
    case.call_and_validate(excluded_checks=[schemathesis.checks.allow_header_conformance])
