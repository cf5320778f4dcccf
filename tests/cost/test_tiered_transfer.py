"""Internet egress priced by a provider's monthly volume tiers (issue 33 item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from aitco.cost.data import per_unit_usd, tiered_transfer_usd
from aitco.errors import InputError

AWS_BREAKS = [0, 100, 10240, 51200, 153600]
AWS_RATES = [0.0, 0.09, 0.085, 0.07, 0.05]


def test_each_tier_prices_its_band() -> None:
    gb = 200_000.0  # one month: 100 free, then every tier
    want = (10240 - 100) * 0.09 + (51200 - 10240) * 0.085 + (153600 - 51200) * 0.07
    want += (gb - 153600) * 0.05
    assert float(tiered_transfer_usd(gb, 1, AWS_BREAKS, AWS_RATES)) == pytest.approx(want)


def test_one_tier_is_the_flat_price() -> None:
    v = np.array([0.0, 5.0, 1e6])
    assert np.allclose(tiered_transfer_usd(v, 3, [0], [0.09]), per_unit_usd(v, 0.09, "x"))


def test_tiers_reset_each_month() -> None:
    """The same volume spread over more months pays the first tiers again each month."""
    one = float(tiered_transfer_usd(300_000, 1, AWS_BREAKS, AWS_RATES))
    six = float(tiered_transfer_usd(300_000, 6, AWS_BREAKS, AWS_RATES))
    assert six > one  # 50 TB/month pays the 0.09 and 0.085 tiers six times
    assert float(tiered_transfer_usd(50, 1, AWS_BREAKS, AWS_RATES)) == 0.0  # free allowance


def test_marginal_price_never_rises_past_the_free_allowance() -> None:
    v = np.linspace(100, 400_100, 401)
    c = tiered_transfer_usd(v, 1, AWS_BREAKS, AWS_RATES)
    marginal = np.diff(c) / np.diff(v)
    assert np.all(np.diff(marginal) <= 1e-12)


@pytest.mark.parametrize(
    ("breaks", "rates"),
    [([100, 200], [0.1, 0.05]), ([0, 100, 50], [0.1, 0.09, 0.08]), ([0, 100], [0.1])],
)
def test_bad_tiers_are_input_errors(breaks: list[float], rates: list[float]) -> None:
    with pytest.raises(InputError, match="tier"):
        tiered_transfer_usd(10.0, 1, breaks, rates)


def test_months_below_one_is_an_input_error() -> None:
    with pytest.raises(InputError, match="months"):
        tiered_transfer_usd(10.0, 0.5, AWS_BREAKS, AWS_RATES)
