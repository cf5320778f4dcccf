"""A service scaled beyond the accelerators given says so, and is priced for what it gets.

Issue 12 item 4: when ``aitco compare`` scales a service past the option's ``gpus`` (the arrival
rate exceeds the capacity of what was given), the option's label shows the count priced
(``(priced xN)``), ``scaled`` says from what to what, the JSON carries ``total_gpus`` and
``gpus_billed`` for the scaled count, owned capex is the capital of the accelerators priced,
and the report (HTML and web read the same model) shows that label.
"""

from __future__ import annotations

import pytest

from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario
from aitco.report.model import build_report


def _scenario(qps: float) -> Scenario:
    return Scenario.from_dict(
        {
            "name": "scaled",
            "workload": {
                "kind": "inference",
                "model": "llama-3-8b",
                "input_tokens": 512,
                "output_tokens": 256,
                "qps": qps,
            },
            "options": [
                {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"},
                {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "owned"},
            ],
        }
    )


def test_scaled_service_label_shows_the_count_priced(catalog):
    comp = compare(_scenario(60.0), catalog)
    small = compare(_scenario(1.0), catalog)
    for o, one in zip(comp.options, small.options, strict=True):
        n = o.values["total_gpus"]
        assert n > 1  # 60 req/s needs more than the one accelerator given
        assert o.gpus == n
        assert f"(priced x{n})" in o.name
        assert "scaled from 1 to" in o.values["scaled"]
        assert o.values["gpus_billed"] >= n
        assert o.values["feasible"], o.values["infeasible_reasons"]
        # a service that fits what was given keeps the plain label
        assert one.values["total_gpus"] == 1
        assert "priced" not in one.name
        assert one.values["scaled"] is None
    owned, owned_one = comp.options[1], small.options[1]
    assert owned.values["capex_usd"] == pytest.approx(
        owned_one.values["capex_usd"] * owned.values["total_gpus"], rel=1e-12
    )
    data = build_report(_scenario(60.0), catalog, compare=lambda s, c: comp)
    assert [o.name for o in data.options] == [o.name for o in comp.options]
