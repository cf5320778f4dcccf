"""Property-based fuzzing of the API from its OpenAPI schema (schemathesis): no 5xx on any input.

Bounded so the module runs in well under a minute: the coverage phase (boundary and invalid
values, about a thousand cases per operation) runs on the cheap operations with the explicit
test pricing; report downloads (which render every plot) and the real engine get random fuzzing
only, with few examples.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402
from tests.web.conftest import explicit_compare  # noqa: E402

from aitco.web.app import create_app  # noqa: E402

SUPPRESS = list(HealthCheck)

schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(compare=explicit_compare)
).exclude(path="/api/v1/report")

report_schema = schemathesis.openapi.from_asgi(
    "/openapi.json", create_app(compare=explicit_compare)
).include(path="/api/v1/report")
report_schema.config.phases.coverage.enabled = False

real_schema = schemathesis.openapi.from_asgi("/openapi.json", create_app()).include(
    path="/api/v1/compare"
)
real_schema.config.phases.coverage.enabled = False


def _check(case: Any) -> None:
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code < 500, response.text


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=SUPPRESS)
def test_no_server_error(case: Any) -> None:
    _check(case)


@report_schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=SUPPRESS)
def test_no_server_error_on_downloads(case: Any) -> None:
    _check(case)


@real_schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=SUPPRESS)
def test_no_server_error_with_the_real_engine(case: Any) -> None:
    pytest.importorskip("aitco.decide.compare")
    _check(case)
