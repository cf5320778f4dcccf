"""Unit costs: the whole cost per million tokens, and its split between input and output."""

from __future__ import annotations

import pytest

from aitco.cost.unit_costs import token_split_usd_per_million, usd_per_million


def test_split_recovers_the_cost() -> None:
    c = token_split_usd_per_million(36.0, 2000.0, 500.0, 0.25, utilization=0.5)
    per_h = (
        c["usd_per_million_input_tokens"] * 2000 + c["split_usd_per_million_output_tokens"] * 500
    )
    assert per_h * 3600 / 1e6 == pytest.approx(36.0)
    assert c["usage_usd_per_million_output_tokens"] == pytest.approx(
        0.5 * c["split_usd_per_million_output_tokens"]
    )


def test_whole_cost_per_million() -> None:
    assert usd_per_million(10.0, 4e6) == pytest.approx(2.5)
    assert usd_per_million(10.0, 0.0) is None
