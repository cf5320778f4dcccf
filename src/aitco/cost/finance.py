r"""Finance: annuity, NPV, depreciation schedules and residual (market) value.

The owned-hardware cost of a job is the *equivalent annual cost* of the capital (capex less the
discounted market value at the end of the holding period, spread by the capital-recovery
factor), charged per hour of use. It splits into three explainable parts:

* **depreciation** — the fall of the book value over the holding period (straight-line or
  declining balance over the accounting life);
* **technology-iteration risk** — the gap between the book value and the market (resale) value at
  the end of the holding period; newer hardware makes old hardware lose market value faster than
  the books say (it can be negative when the market value holds up better than the books);
* **financing** — the interest of paying for the capital over time at the discount rate.

The three parts add up to the equivalent annual cost times the holding period.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks

#: Below this rate the annuity uses its series expansion (the closed form loses all precision).
SMALL_RATE = 1e-9


def annuity_factor(rate: ArrayLike, years: ArrayLike) -> np.ndarray:
    r"""Capital-recovery factor: the annual payment that repays 1 USD over ``years``.

    Parameters
    ----------
    rate : array_like
        Discount (interest) rate per year. [fraction]
    years : array_like
        Repayment period. [years]

    Returns
    -------
    numpy.ndarray
        Annual payment per unit of capital. [1/year]

    Notes
    -----
    .. math:: a(r, n) = \frac{r}{1 - (1 + r)^{-n}}, \qquad a(0, n) = 1/n

    References
    ----------
    .. [1] PyPSA, ``pypsa/costs.py::annuity`` (same formula, r -> 0 limit 1/n).

    Examples
    --------
    >>> float(annuity_factor(0.0, 4))
    0.25
    >>> round(float(annuity_factor(0.1, 3)), 4)
    0.4021
    """
    r = checks.non_negative(rate, "finance.discount_rate")
    n = checks.positive(years, "finance.years")
    r, n = np.broadcast_arrays(r, n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exact = r / -np.expm1(-n * np.log1p(r))
        # first-order series near r = 0, where the exact form is 0/0 in floating point
        series = 1.0 / n + r * (n + 1.0) / (2.0 * n)
        out = np.where(r > SMALL_RATE, exact, series)
    return np.asarray(out, dtype=float)


def npv(cashflows_usd: ArrayLike, rate: float) -> float:
    r"""Net present value of yearly cash flows, the first at year 0.

    Parameters
    ----------
    cashflows_usd : array_like
        Cash flow at the end of year 0, 1, 2, ... [USD]
    rate : float
        Discount rate per year. [fraction]

    Returns
    -------
    float
        Present value. [USD]

    Notes
    -----
    .. math:: \mathrm{NPV} = \sum_t \frac{C_t}{(1+r)^t}

    Examples
    --------
    >>> round(npv([-100.0, 60.0, 60.0], 0.1), 2)
    4.13
    """
    c = checks.finite(cashflows_usd, "finance.cashflows_usd")
    r = float(checks.non_negative(rate, "finance.discount_rate"))
    t = np.arange(c.shape[-1] if c.ndim else 1)
    return float(np.sum(np.atleast_1d(c) / (1.0 + r) ** t))


def book_value_fraction(
    age_years: ArrayLike,
    life_years: ArrayLike,
    *,
    method: str = "straight_line",
    salvage_fraction: ArrayLike = 0.0,
    declining_factor: float = 2.0,
) -> np.ndarray:
    r"""Book value left after ``age_years``, as a fraction of the purchase price.

    Parameters
    ----------
    age_years : array_like
        Age of the asset. [years]
    life_years : array_like
        Accounting (useful) life. [years]
    method : {"straight_line", "declining"}
        Depreciation schedule. "declining" is declining balance at ``declining_factor / life``
        per year (2 = double-declining).
    salvage_fraction : array_like
        Book value at the end of the life (straight-line only). [fraction]
    declining_factor : float
        Multiple of the straight-line rate for the declining balance.

    Returns
    -------
    numpy.ndarray
        Book value over purchase price. [fraction]

    Notes
    -----
    Straight line: :math:`B(t) = 1 - (1 - s)\min(t/L, 1)`.
    Declining balance: :math:`B(t) = (1 - k/L)^t`, never below zero.

    Examples
    --------
    >>> float(book_value_fraction(3, 6))
    0.5
    >>> float(book_value_fraction(1, 5, method="declining"))
    0.6
    """
    t = checks.non_negative(age_years, "finance.age_years")
    life = checks.positive(life_years, "depreciation.useful_life_years")
    s = checks.fraction(salvage_fraction, "depreciation.salvage_fraction")
    if method == "straight_line":
        return np.asarray(1.0 - (1.0 - s) * np.minimum(t / life, 1.0), dtype=float)
    if method == "declining":
        rate = np.minimum(declining_factor / life, 1.0)
        return np.asarray((1.0 - rate) ** t, dtype=float)
    from aitco.errors import InputError

    raise InputError("depreciation.method", method, "'straight_line' or 'declining'")


def residual_fraction(curve: ArrayLike, age_years: ArrayLike) -> np.ndarray:
    r"""Market (resale) value after ``age_years`` from a residual-value curve.

    Parameters
    ----------
    curve : array_like
        Market value as a fraction of the purchase price at the end of year 0, 1, ..., N
        (``curve[0]`` is normally 1). Beyond year N the value keeps decaying at the curve's
        last yearly ratio (market decay). [fraction]
    age_years : array_like
        Age of the asset. [years]

    Returns
    -------
    numpy.ndarray
        Market value over purchase price. [fraction]

    Notes
    -----
    Linear interpolation between the yearly points; extrapolation beyond the last point is
    geometric, :math:`v(t) = v_N (v_N / v_{N-1})^{t-N}`.

    Examples
    --------
    >>> float(residual_fraction([1.0, 0.6, 0.4, 0.28], 3))
    0.28
    >>> float(residual_fraction([1.0, 0.6, 0.4, 0.28], 1.5))
    0.5
    """
    c = checks.fraction(curve, "residual_value.curve")
    t = checks.non_negative(age_years, "finance.age_years")
    c = np.atleast_1d(c)
    years = np.arange(c.size, dtype=float)
    inside = np.interp(np.minimum(t, years[-1]), years, c)
    if c.size >= 2 and c[-2] > 0:
        decay = c[-1] / c[-2]
        beyond = c[-1] * decay ** np.maximum(t - years[-1], 0.0)
        return np.asarray(np.where(t > years[-1], beyond, inside), dtype=float)
    return np.asarray(inside, dtype=float)


def equivalent_annual_cost_usd(
    capex_usd: ArrayLike, market_fraction_end: ArrayLike, rate: ArrayLike, years: ArrayLike
) -> np.ndarray:
    r"""Equivalent annual cost of holding capital for ``years`` and selling it at market value.

    Parameters
    ----------
    capex_usd : array_like
        Purchase price of the capital. [USD]
    market_fraction_end : array_like
        Market value at the end of the holding period over the purchase price. [fraction]
    rate : array_like
        Discount rate per year. [fraction]
    years : array_like
        Holding period. [years]

    Returns
    -------
    numpy.ndarray
        Annual cost. [USD/year]

    Notes
    -----
    .. math:: \mathrm{EAC} = \left(C - \frac{S}{(1+r)^n}\right) a(r, n)

    with :math:`S = C\,v(n)` the market value at the end. With :math:`S = 0` this is the plain
    annuity; residual value can only lower the cost.

    Examples
    --------
    >>> float(equivalent_annual_cost_usd(1000.0, 0.0, 0.0, 4))
    250.0
    >>> float(equivalent_annual_cost_usd(1000.0, 0.2, 0.0, 4))
    200.0
    """
    c = checks.non_negative(capex_usd, "capex_usd")
    v = checks.fraction(market_fraction_end, "residual_value")
    r = checks.non_negative(rate, "finance.discount_rate")
    n = checks.positive(years, "ownership.horizon_years")
    return np.asarray((c - c * v / (1.0 + r) ** n) * annuity_factor(r, n), dtype=float)


def ownership_split_usd(
    capex_usd: ArrayLike,
    book_fraction_end: ArrayLike,
    market_fraction_end: ArrayLike,
    rate: ArrayLike,
    years: ArrayLike,
) -> dict[str, np.ndarray]:
    r"""Split the cost of holding capital over ``years`` into depreciation, risk and financing.

    Parameters
    ----------
    capex_usd : array_like
        Purchase price. [USD]
    book_fraction_end : array_like
        Book value at the end of the holding period over the purchase price. [fraction]
    market_fraction_end : array_like
        Market value at the end of the holding period over the purchase price. [fraction]
    rate : array_like
        Discount rate per year. [fraction]
    years : array_like
        Holding period. [years]

    Returns
    -------
    dict of numpy.ndarray
        ``depreciation_usd`` = C (1 - B), ``tech_iteration_risk_usd`` = C (B - V),
        ``financing_usd`` = EAC n - C (1 - V), and ``total_usd`` = EAC n, each over the whole
        holding period. [USD]

    Notes
    -----
    depreciation + risk + financing = EAC · n exactly, so the split never changes the total.

    Examples
    --------
    >>> s = ownership_split_usd(1000.0, 0.5, 0.28, 0.0, 3)
    >>> keys = ("depreciation_usd", "tech_iteration_risk_usd", "financing_usd")
    >>> [round(float(s[k]), 6) for k in keys]
    [500.0, 220.0, 0.0]
    """
    c = checks.non_negative(capex_usd, "capex_usd")
    b = checks.fraction(book_fraction_end, "book_value_fraction")
    v = checks.fraction(market_fraction_end, "residual_value")
    n = checks.positive(years, "ownership.horizon_years")
    total = equivalent_annual_cost_usd(c, v, rate, n) * n
    dep = c * (1.0 - b)
    risk = c * np.where(np.isclose(b, v, rtol=0.0, atol=1e-12), 0.0, b - v)
    fin = total - c * (1.0 - v)
    return {
        "depreciation_usd": np.asarray(dep, dtype=float),
        "tech_iteration_risk_usd": np.asarray(risk, dtype=float),
        "financing_usd": np.asarray(fin, dtype=float),
        "total_usd": np.asarray(total, dtype=float),
    }
