"""The JSON API and the page, through FastAPI's TestClient."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from tests.web.conftest import BODY, explicit_compare

from aitco.decide.scenario import Scenario
from aitco.errors import InputError


def test_page_is_served_without_cdn(client: Any) -> None:
    r = client.get("/")
    assert r.status_code == 200
    html = r.text
    assert 'src="/static/htmx.min.js"' in html
    assert "https://" not in html.split("<body>")[0], "no CDN in the head"
    assert 'hx-post="/api/v1/compare"' in html, "the page uses the JSON API"
    js = client.get("/static/htmx.min.js")
    assert js.status_code == 200
    assert js.text.startswith("/*! htmx.org 2.0.11 | Zero-Clause BSD")
    assert "content-security-policy" in r.headers


def test_compare_json_matches_the_engine(client: Any, catalog: Any) -> None:
    r = client.post("/api/v1/compare", json=BODY)
    assert r.status_code == 200, r.text
    j = r.json()
    comp = explicit_compare(Scenario.from_dict(copy.deepcopy(BODY)), catalog)
    assert [o["name"] for o in j["options"]] == [o.name for o in comp.options]
    assert [o["total_usd"] for o in j["options"]] == [o.total_usd for o in comp.options]
    assert j["options"][0]["items"][0] == {
        "name": "rental",
        "usd": 8000.0,
        "category": "compute",
        "share": pytest.approx(8000 / 13400),
        "formula": "gpus x 1000",
        "inputs": {},
        "sources": [],
    }
    assert j["cheapest"] == "h100-sxm5-80gb x16 spot"  # 6400 + 5000 + 800 < 8000 + 5000 + 400
    assert j["fastest"] == "h100-sxm5-80gb x16 spot"


def test_compare_htmx_fragment(client: Any) -> None:
    r = client.post("/api/v1/compare", json=BODY, headers={"HX-Request": "true"})
    assert r.status_code == 200
    assert 'id="comparison-table"' in r.text
    assert "$13,400" in r.text
    assert "$12,200" in r.text
    assert r.text.count("data:image/png;base64,") >= 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**BODY, "workload": {**BODY["workload"], "tokens": -1}}, "workload.tokens"),
        ({**BODY, "options": [{"hardware": "h100", "gpus": 8}]}, "options[0].hardware"),
        ({**BODY, "options": [{"hardware": "l4", "gpus": 0}]}, "options.0.gpus"),
        ({**BODY, "bogus": 1}, "bogus"),
        ([1, 2], "scenario"),
    ],
)
def test_errors_are_the_cli_errors(client: Any, catalog: Any, body: Any, field: str) -> None:
    r = client.post("/api/v1/compare", json=body)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["field"] == field
    # the same message the CLI prints (Scenario.from_dict / the catalog raise it)
    with pytest.raises(InputError) as exc:
        explicit_compare(Scenario.from_dict(copy.deepcopy(body)), catalog)
    assert err["message"] == str(exc.value)
    assert {"value", "expected"} <= set(err)


def test_invalid_json_and_oversized_bodies(client: Any) -> None:
    r = client.post(
        "/api/v1/compare", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    assert r.json()["error"]["field"] == "body"
    r = client.post("/api/v1/compare", content=b"x" * (70 * 1024))
    assert r.status_code == 413


def test_downloads(client: Any) -> None:
    r = client.post("/api/v1/report?format=json", json=BODY)
    assert r.status_code == 200
    assert r.headers["content-disposition"] == 'attachment; filename="web_test.json"'
    assert r.json()["options"][1]["total_usd"] == 12200.0
    r = client.post("/api/v1/report?format=xlsx", json=BODY)
    assert r.status_code == 200
    assert r.content[:2] == b"PK"
    r = client.post("/api/v1/report?format=html", json=BODY)
    assert r.status_code == 200
    assert "<script" not in r.text
    assert "data:image/png;base64," in r.text
    assert client.post("/api/v1/report?format=exe", json=BODY).status_code == 422


def test_openapi_documents_the_scenario(client: Any) -> None:
    spec = client.get("/openapi.json").json()
    body = spec["paths"]["/api/v1/compare"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/Scenario"}
    assert {"Scenario", "HardwareOption", "TrainingWorkload"} <= set(spec["components"]["schemas"])
    lists = client.get("/api/v1/catalog").json()
    assert "h100-sxm5-80gb" in [h["id"] for h in lists["hardware"]]
    assert "owned" in lists["pricing"]


def test_real_engine_api_equals_compare(catalog: Any) -> None:
    """Interfaces are thin: the API's totals are ``compare()``'s, item by item."""
    compare_mod = pytest.importorskip("aitco.decide.compare")
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    body = {
        "name": "agree",
        "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 2e9, "seq_len": 1024},
        "options": [
            {"hardware": "a100-sxm4-80gb", "gpus": 8, "pricing": "on_demand"},
            {"hardware": "l40s", "gpus": 8, "pricing": "owned"},
        ],
    }
    with TestClient(create_app()) as c:
        r = c.post("/api/v1/compare", json=body)
    assert r.status_code == 200, r.text
    comp = compare_mod.compare(Scenario.from_dict(copy.deepcopy(body)), catalog)
    got = r.json()
    assert got["cheapest"] == comp.cheapest
    for o_api, o_eng in zip(got["options"], comp.options, strict=True):
        assert o_api["name"] == o_eng.name
        assert o_api["total_usd"] == o_eng.total_usd
        assert [(i["name"], i["usd"]) for i in o_api["items"]] == [
            (i.name, i.usd) for i in o_eng.items
        ]


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"calibration": "/etc/profile.yaml"}, "calibration"),
        ({"workload": {**BODY["workload"], "model": "/etc/hf/config.json"}}, "workload.model"),
    ],
)
def test_web_requests_cannot_make_the_server_read_files(
    client: Any, patch: dict, field: str
) -> None:
    r = client.post("/api/v1/compare", json={**BODY, **patch})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == field


def test_openapi_lists_catalog_ids(client: Any, catalog: Any) -> None:
    comps = client.get("/openapi.json").json()["components"]["schemas"]
    assert set(comps["HardwareOption"]["properties"]["hardware"]["enum"]) == {
        *catalog.accelerators,
        *catalog.systems,
    }
    assert "calibration" not in comps["Scenario"]["properties"]


@pytest.mark.parametrize(
    ("patch", "field", "value"),
    [
        # inside the CLI's ranges (limits.py), outside the form's narrower ones
        ({"workload": {**BODY["workload"], "tokens": 1e17}}, "workload.tokens", 1e17),
        ({"options": [{"hardware": "l4", "gpus": 1_500_000}]}, "options[0].gpus", 1_500_000),
        (
            {"workload": {"kind": "inference", "model": "gpt2-124m", "months": 360}},
            "workload.months",
            360,
        ),
    ],
)
def test_implausible_inputs_are_422_naming_the_range(
    client: Any, patch: dict, field: str, value: float
) -> None:
    r = client.post("/api/v1/compare", json={**BODY, **patch})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["field"] == field
    assert err["value"] == value
    assert err["expected"].startswith("between ")
    assert err["form_message"].endswith(f"(got {value:g}).") or str(value) in err["form_message"]


def test_nan_is_a_422_with_strict_json(client: Any) -> None:
    raw = (
        b'{"name": "t", "workload": {"kind": "training", "model": "gpt2-124m", "tokens": NaN},'
        b' "options": [{"hardware": "l4", "gpus": 8}]}'
    )
    r = client.post("/api/v1/compare", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    err = json.loads(r.text)  # strict: no NaN token in the answer
    assert err["error"]["field"] == "workload.tokens"
    assert "NaN" not in r.text


def test_errors_say_where_the_field_is_on_the_form(client: Any) -> None:
    body = {**BODY, "options": [BODY["options"][0], {"hardware": "l4", "gpus": None}]}
    err = client.post("/api/v1/compare", json=body).json()["error"]
    assert err["form"] == {"input": "gpus", "row": 1, "label": "GPUs (option 2)"}
    assert err["form_message"] == "GPUs (option 2) must be a whole number (empty)."


def test_one_option_that_cannot_be_priced_does_not_wipe_the_others() -> None:
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    body = {
        "name": "drop",
        "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e9, "seq_len": 1024},
        "options": [
            {"hardware": "l4", "gpus": 8, "pricing": "on_demand"},
            {"hardware": "a10g", "gpus": 8, "pricing": "spot"},  # no spot offer for a10g
        ],
    }
    with TestClient(create_app()) as c:
        r = c.post("/api/v1/compare", json=body)
        assert r.status_code == 200, r.text
        j = r.json()
        assert [o["name"] for o in j["options"]] == ["l4 x8 on_demand"]
        (d,) = j["dropped_options"]
        assert d["option"] == 2
        assert d["field"] == "options[1]"
        assert "a10g" in d["message"]
        assert "spot" in d["message"]
        html = c.post("/api/v1/compare", json=body, headers={"HX-Request": "true"}).text
        assert "Option 2 (a10g x8 spot) cannot be priced" in html


def test_catalog_lists_priceable_pricing(client: Any) -> None:
    hw = {h["id"]: h for h in client.get("/api/v1/catalog").json()["hardware"]}
    assert "spot" not in hw["a10g"]["pricing"]
    assert "on_demand" in hw["a10g"]["pricing"]


def test_pricing_endpoint_says_what_a_row_can_price(client: Any) -> None:
    r = client.get("/api/v1/pricing", params={"hardware": "l40s", "gpus": 48, "provider": "aws"})
    assert r.status_code == 200, r.text
    j = r.json()
    assert "aws" in j["providers"]
    assert j["pricing"]["on_demand"] == ""
    assert j["pricing"]["spot"] == ""  # the tie goes to the instance type that sells spot too
    assert "reserved" in j["pricing"]["reserved_1y"]
    assert j["pricing"]["owned"] == ""
    # a10g: no spot offer anywhere; the reason says so
    j = client.get("/api/v1/pricing", params={"hardware": "a10g", "gpus": 1}).json()
    assert j["pricing"]["spot"].startswith("no spot price")
    bad = client.get("/api/v1/pricing", params={"hardware": "h100-sxm5", "gpus": 1})
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "hardware"
    bad = client.get("/api/v1/pricing", params={"hardware": "l40s", "provider": "nowhere"})
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "provider"


def test_form_offers_only_what_compare_can_price(catalog: Any) -> None:
    """Every mode the form leaves enabled is priced by compare; every one it disables fails."""
    from aitco.cost.pricing import OWNED
    from aitco.decide.compare import compare
    from aitco.web.forms import pricing_check

    modes = ["on_demand", "spot", "reserved_1y", "owned"]
    for hw, gpus, provider in [("l40s", 48, "aws"), ("a100-sxm4-80gb", 64, ""), ("l4", 1, "")]:
        check = pricing_check(catalog, hw, gpus, provider, modes)
        for mode, why in check.items():
            opt = {"hardware": hw, "gpus": gpus, "pricing": mode}
            if provider and mode not in OWNED:
                opt["provider"] = provider
            scen = Scenario.from_dict(
                {
                    "name": "p",
                    "workload": {"kind": "training", "model": "gpt2-124m", "tokens": 1e8},
                    "options": [opt],
                }
            )
            try:
                (o,) = compare(scen, catalog).options
                priced = o.values.get("feasible", True) or not any(
                    "offer" in r for r in o.values.get("infeasible_reasons", [])
                )
            except InputError:
                priced = False
            assert priced == (why == ""), (hw, gpus, provider, mode, why)


def _openapi_examples(spec: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    out = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            for name, ex in body.get("examples", {}).items():
                out.append((method, path, name, ex["value"]))
            params = {
                p["name"]: next(iter(p["examples"].values()))["value"]
                for p in op.get("parameters", [])
                if p.get("in") == "query" and "examples" in p
            }
            if params and method == "get":
                out.append((method, path, "query", params))
    return out


@pytest.mark.integration
def test_every_openapi_example_is_accepted() -> None:
    """What Swagger's "Try it out" sends (the first example) and every other one: 200."""
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    with TestClient(create_app()) as c:
        spec = c.get("/openapi.json").json()
        examples = _openapi_examples(spec)
        posted = {(m, p) for m, p, _n, _v in examples}
        assert {("post", "/api/v1/compare"), ("post", "/api/v1/report")} <= posted
        assert ("get", "/api/v1/pricing") in posted
        for method, path, name, value in examples:
            if method == "post":
                r = c.post(path + ("?format=json" if path.endswith("report") else ""), json=value)
            else:
                r = c.get(path, params=value)
            assert r.status_code == 200, f"{method} {path} example {name}: {r.text[:300]}"
