"""One default: ``aitco compare``, ``examples/default.yaml`` and the web page are one scenario.

The built-in default scenarios (:mod:`aitco.decide.defaults`), the example files generated from
them (``scripts/gen_doc_tables.py``) and the page's form (filled from them) must give the same
options and the same totals. The browser half of the check (the body the page really sends)
is in ``tests/web/test_browser.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import REPO

from aitco.decide.compare import compare
from aitco.decide.defaults import default_inference, default_training
from aitco.decide.scenario import Scenario
from aitco.web.app import form_defaults
from aitco.web.forms import options_from_rows

EXAMPLES = {"training": REPO / "examples" / "default.yaml"}
EXAMPLES["inference"] = REPO / "examples" / "inference-service-tco.yaml"
BUILTIN = {"training": default_training, "inference": default_inference}


def form_scenario(catalog: Any, kind: str) -> dict[str, Any]:
    """The scenario the page sends for ``kind`` before any edit (as app.js builds it)."""
    form = form_defaults(catalog)[kind]
    wl = {"kind": kind, **{k: v for k, v in form["workload"].items() if k != "kind"}}
    body: dict[str, Any] = {
        "name": form["name"],
        "workload": wl,
        "options": options_from_rows([r["row"] for r in form["rows"]]),
    }
    if kind == "inference":
        body["compliance"] = form["compliance"]
    return body


@pytest.mark.parametrize("kind", ["training", "inference"])
def test_example_file_is_the_builtin_default(kind: str) -> None:
    builtin = BUILTIN[kind]().to_dict()
    assert Scenario.from_yaml(EXAMPLES[kind]).to_dict() == builtin, (
        f"{EXAMPLES[kind].name} differs from the built-in default: "
        "run python scripts/gen_doc_tables.py"
    )


@pytest.mark.parametrize("kind", ["training", "inference"])
def test_web_form_holds_the_builtin_default(catalog: Any, kind: str) -> None:
    builtin = BUILTIN[kind]().to_dict()
    page = Scenario.from_dict(form_scenario(catalog, kind)).to_dict()
    builtin.pop("description", None)  # the page has no description field
    assert page == builtin


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["training", "inference"])
def test_three_defaults_one_answer(catalog: Any, kind: str) -> None:
    """Same options, same totals: built-in, example file, and the web API on the page's body."""
    from fastapi.testclient import TestClient

    from aitco.web.app import create_app

    def totals(options: Any) -> list[tuple[str, float, bool]]:
        return [(o.name, o.total_usd, o.values.get("feasible", True)) for o in options]

    builtin = totals(compare(BUILTIN[kind](), catalog).options)
    example = totals(compare(Scenario.from_yaml(EXAMPLES[kind]), catalog).options)
    with TestClient(create_app()) as c:
        r = c.post("/api/v1/compare", json=form_scenario(catalog, kind))
    assert r.status_code == 200, r.text
    web = [(o["name"], o["total_usd"], o.get("feasible", True)) for o in r.json()["options"]]
    assert example == builtin
    assert web == builtin


def test_tied_offers_break_one_way(catalog: Any) -> None:
    """48 L40S on AWS: 12 g6e.24xlarge or 6 g6e.48xlarge at one price; spot exists on one only.

    The home instance type is the one that also sells spot, so "l40s x48 spot" is priced (and
    feasible) whether or not the scenario names the offer.
    """
    from aitco.cost.offers import select_offer

    offers = catalog.offers_for("l40s")
    od = select_offer(offers, "on_demand", 48, provider="aws")
    spot = select_offer(offers, "spot", 48, provider="aws")
    assert od is not None
    assert spot is not None
    assert od.offer_id == spot.offer_id
    assert spot.eligible
    big = [o for o in offers if o.id == "aws-g6e.48xlarge"]
    if big:  # the tie this test is about is still in the catalog
        price = {
            o.id: next(p.usd_per_hour for p in o.prices if p.term == "on_demand") for o in offers
        }
        per_gpu = price["aws-g6e.48xlarge"] / 8
        assert per_gpu == pytest.approx(price[od.offer_id] / od.accelerators_per_instance)
