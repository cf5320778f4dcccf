"""Issue 37, part 0: a web request makes the server read no file, and every body is bounded.

Each hostile body of the issue is posted; the answer must be a 4xx naming the field, and no
file named by the request may be opened or even looked at (``open``, ``os.open``, ``os.stat``
are recorded while the request runs).
"""

from __future__ import annotations

import builtins
import copy
import io
import os
from pathlib import Path
from typing import Any

import pytest
from tests.web.conftest import BODY

INFERENCE = {
    "name": "serve",
    "workload": {"kind": "inference", "model": "gpt2-124m", "qps": 2.0},
    "options": [{"hardware": "l4", "gpus": 1, "pricing": "on_demand"}],
}
HOURLY = [1.0 + (h % 12) / 4 for h in range(24)]


def _with_profile(profile: Any) -> dict[str, Any]:
    body = copy.deepcopy(INFERENCE)
    body["workload"]["load_profile"] = profile
    return body


def _staged(profile: Any) -> dict[str, Any]:
    return {
        "name": "plan",
        "stages": [
            {
                "name": "serve",
                "workload": {**INFERENCE["workload"], "load_profile": profile},
                "option": INFERENCE["options"][0],
            }
        ],
    }


@pytest.fixture
def server_csv(tmp_path: Path) -> str:
    """A valid load-profile CSV on the server: a request must not get it priced."""
    p = tmp_path / "server_side_profile.csv"
    p.write_text("hour,qps\n" + "".join(f"{h},{q}\n" for h, q in enumerate(HOURLY)))
    return str(p)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every path opened or stat'ed while the test runs."""
    seen: list[str] = []
    real_open, real_os_open, real_stat = builtins.open, os.open, os.stat

    def rec(path: Any) -> None:
        if isinstance(path, str | bytes | os.PathLike):
            seen.append(os.fsdecode(path))

    def fake_open(file: Any, *a: Any, **k: Any) -> Any:
        rec(file)
        return real_open(file, *a, **k)

    def fake_os_open(path: Any, *a: Any, **k: Any) -> Any:
        rec(path)
        return real_os_open(path, *a, **k)

    def fake_stat(path: Any, *a: Any, **k: Any) -> Any:
        rec(path)
        return real_stat(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "stat", fake_stat)
    return seen


HOSTILE_PATHS = ["/etc/passwd", "../../../../etc/hostname", "/proc/self/environ", "/dev/zero"]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
@pytest.mark.parametrize(
    ("make", "field"),
    [
        (_with_profile, "workload.load_profile"),
        (_staged, "stages[0].workload.load_profile"),
    ],
)
def test_a_load_profile_path_is_refused_unread(
    client: Any, opened: list[str], path: str, make: Any, field: str
) -> None:
    r = client.post("/api/v1/compare", json=make(path))
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["field"] == field
    assert "reads no files" in err["expected"]
    said = f"{err['message']} {err['form_message']}"
    for leak in ("rows", "byte", "found"):  # nothing about the file leaks
        assert leak not in said
    assert not [p for p in opened if path in p or Path(p).name == Path(path).name]


def test_a_server_side_csv_is_not_priced(client: Any, opened: list[str], server_csv: str) -> None:
    opened.clear()  # what the fixture itself wrote
    for body in (_with_profile(server_csv), _staged(server_csv)):
        for url in ("/api/v1/compare", "/api/v1/report?format=json"):
            r = client.post(url, json=body)
            assert r.status_code == 422, r.text
    assert server_csv not in opened


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"calibration": "/etc/profile.yaml"}, "calibration"),
        ({"workload": {**BODY["workload"], "model": "/etc/hf/config.json"}}, "workload.model"),
        ({"workload": {**BODY["workload"], "model": "../../config.json"}}, "workload.model"),
    ],
)
def test_other_path_fields_are_refused_unread(
    client: Any, opened: list[str], patch: dict[str, Any], field: str
) -> None:
    r = client.post("/api/v1/compare", json={**BODY, **patch})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == field
    assert not [p for p in opened if "/etc/" in p or p.endswith("config.json")]


def test_a_load_profile_comes_inline_and_is_priced() -> None:
    """The 24 hourly rates in the request: priced by the real engine, like the CLI's CSV."""
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    body = _with_profile(HOURLY)
    body["workload"]["autoscale"] = "target-util=0.7,min=0,max=8"
    with TestClient(create_app()) as c:
        r = c.post("/api/v1/compare", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["options"][0]["total_usd"] > 0


@pytest.mark.parametrize(
    "profile",
    [
        HOURLY[:23],  # not 24 hours
        [*HOURLY, 1.0],
        [1e300] * 24,  # an absurd rate
        [-1.0] * 24,
        ["1"] * 23 + [[1]],
        "weekly",  # an unknown name is a path, and refused as one
    ],
)
def test_an_inline_load_profile_is_bounded(client: Any, profile: Any) -> None:
    r = client.post("/api/v1/compare", json=_with_profile(profile))
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"].startswith("workload.load_profile")


def test_openapi_offers_no_load_profile_path(client: Any) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    alts = schemas["InferenceWorkload"]["properties"]["load_profile"]["anyOf"]
    assert {"type": "string", "enum": ["diurnal"]} in alts


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 30_000 + b"]" * 30_000,  # under the body limit; the RecursionError
        b'{"name": ' + b"[" * 30_000,
        b'{"workload": ' + b'{"a": ' * 5_000 + b"1" + b"}" * 5_001,
    ],
)
def test_deeply_nested_json_is_a_4xx(client: Any, raw: bytes) -> None:
    r = client.post("/api/v1/compare", content=raw, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, r.text
    assert r.json()["error"]["field"] == "body"


def test_brackets_inside_strings_do_not_count_as_nesting(client: Any) -> None:
    body = {**BODY, "name": "[" * 1000}
    assert client.post("/api/v1/compare", json=body).status_code == 200


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        (
            {"options": [{"hardware": "l4", "gpus": 8, "usd_per_gpu_hour": 1e300}]},
            "usd_per_gpu_hour",
        ),
        ({"options": [{"hardware": "l4", "gpus": 8, "usd_per_gpu_hour": 1e5}]}, "usd_per_gpu_hour"),
        ({"data": {"acquisition_usd": 1e300}}, "data.acquisition_usd"),
        ({"data": {"egress_gb": 1e300}}, "data.egress_gb"),
        ({"options": [{"hardware": "l4", "gpus": True}]}, "gpus"),
        ({"options": [{"hardware": "l4", "gpus": 10**400}]}, "gpus"),
        ({"workload": {**BODY["workload"], "tokens": 1e19}}, "workload.tokens"),
        ({"assumptions": {"pue.air": 1e300}}, "assumptions.pue.air"),
    ],
)
def test_money_and_quantities_are_bounded_as_on_the_cli(
    client: Any, patch: dict[str, Any], field: str
) -> None:
    r = client.post("/api/v1/compare", json={**BODY, **patch})
    assert r.status_code == 422, r.text
    assert field in r.json()["error"]["field"]


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_finite_json_numbers_are_a_422(client: Any, token: bytes) -> None:
    raw = (
        b'{"name": "t", "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9},'
        b' "options": [{"hardware": "l4", "gpus": 8, "usd_per_gpu_hour": ' + token + b"}]}"
    )
    r = client.post("/api/v1/compare", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "usd_per_gpu_hour" in r.json()["error"]["field"]
