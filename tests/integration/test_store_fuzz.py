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


@schemathesis.check
def positive_data_accepted_but_by_the_catalog(ctx, response, case):
    """schemathesis' positive_data_acceptance, but for the refusals the schema states only in words: a model name
    in the pattern's characters that is neither a catalog alias nor a Hub repo id (say "0"), a device that is no
    catalog device, a runtime no planner takes. The catalogs decide them (api/benchmarks.names_a_model,
    names_a_device, runtime_problem), and the fields' descriptions say so."""
    detail = response.json().get("detail") if response.status_code == 422 else None
    by_the_catalog = {(("body", "model"), "model_name"), (("body", "device"), "device_name"),
                      (("body", "runtime"), "runtime_name")}
    if isinstance(detail, list) and detail and all((tuple(d.get("loc") or ()), d.get("type")) in by_the_catalog
                                                   for d in detail):
        return None
    return schemathesis.checks.positive_data_acceptance(ctx, response, case)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_benchmark_endpoints_hold_their_contract(case):
    # Allow on a 405 is left out: Starlette lists only the methods of the first route matching the path
    case.call_and_validate(excluded_checks=[schemathesis.checks.allow_header_conformance,
                                            schemathesis.checks.positive_data_acceptance],
                           additional_checks=[positive_data_accepted_but_by_the_catalog])
