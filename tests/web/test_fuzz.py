"""Property-based fuzzing of the API from its OpenAPI schema (schemathesis): no 5xx on any input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402
from tests.web.conftest import explicit_compare  # noqa: E402

from aitco.web.app import create_app  # noqa: E402

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(compare=explicit_compare))


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error(case: Any) -> None:
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code < 500, response.text


real_schema = schemathesis.openapi.from_asgi("/openapi.json", create_app()).include(
    path="/api/v1/compare"
)


@real_schema.parametrize()
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_with_the_real_engine(case: Any) -> None:
    pytest.importorskip("aitco.decide.compare")
    response = case.call()
    assert response.status_code < 500, response.text
