import numpy as np
import pytest

from aitco.cost import finance
from aitco.errors import InputError


def test_annuity_hand_computed():
    # 0.1 / (1 - 1.1**-3) = 0.1 / (1 - 0.751315) = 0.402115
    assert float(finance.annuity_factor(0.1, 3)) == pytest.approx(0.402115, rel=1e-5)
    assert float(finance.annuity_factor(0.0, 5)) == pytest.approx(0.2)


def test_annuity_limit_r_to_zero():
    assert float(finance.annuity_factor(1e-9, 4)) == pytest.approx(0.25, rel=1e-6)


def test_npv_hand_computed():
    # -100 + 60/1.1 + 60/1.21 = -100 + 54.545 + 49.587 = 4.132
    assert finance.npv([-100, 60, 60], 0.1) == pytest.approx(4.1322, abs=1e-4)


def test_book_value_straight_line_and_declining():
    assert float(finance.book_value_fraction(2, 5)) == pytest.approx(0.6)
    assert float(finance.book_value_fraction(7, 5)) == pytest.approx(0.0)
    assert float(finance.book_value_fraction(5, 5, salvage_fraction=0.1)) == pytest.approx(0.1)
    # double declining over 5 years: 40 %/year -> 0.6**2 after two years
    assert float(finance.book_value_fraction(2, 5, method="declining")) == pytest.approx(0.36)
    with pytest.raises(InputError, match=r"depreciation.method"):
        finance.book_value_fraction(1, 5, method="sum_of_digits")


def test_residual_curve_interpolation_and_decay():
    curve = [1.0, 0.6, 0.4, 0.3]
    assert float(finance.residual_fraction(curve, 2.5)) == pytest.approx(0.35)
    # beyond the curve: geometric decay at 0.3/0.4 per year
    assert float(finance.residual_fraction(curve, 4)) == pytest.approx(0.225)


def test_eac_and_split_hand_computed():
    # capex 1000, r=10 %, 3 years, market 28 % at the end:
    # EAC = (1000 - 280/1.331) * 0.402115 = (1000 - 210.368) * 0.402115 = 317.52
    eac = float(finance.equivalent_annual_cost_usd(1000, 0.28, 0.1, 3))
    assert eac == pytest.approx(317.523, rel=1e-4)
    s = finance.ownership_split_usd(1000, 0.5, 0.28, 0.1, 3)
    assert float(s["depreciation_usd"]) == pytest.approx(500)
    assert float(s["tech_iteration_risk_usd"]) == pytest.approx(220)
    assert float(s["financing_usd"]) == pytest.approx(3 * eac - 720, rel=1e-6)
    total = s["depreciation_usd"] + s["tech_iteration_risk_usd"] + s["financing_usd"]
    assert float(total) == pytest.approx(float(s["total_usd"]))


def test_vectorised():
    out = finance.annuity_factor(np.array([0.0, 0.05, 0.1]), 4)
    assert out.shape == (3,)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: finance.annuity_factor(-0.1, 3), "finance.discount_rate"),
        (lambda: finance.residual_fraction([1.0, 1.2], 1), "residual_value.curve"),
        (lambda: finance.equivalent_annual_cost_usd(-5, 0.2, 0.1, 3), "capex_usd"),
        (lambda: finance.equivalent_annual_cost_usd(5, 1.5, 0.1, 3), "residual_value"),
    ],
)
def test_bad_input_names_field(call, field):
    with pytest.raises(InputError, match=field):
        call()
