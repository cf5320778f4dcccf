r"""Finance: NPV, IRR, payback, ROI, annuity, depreciation schedules and residual value.

NPV (:func:`npv`), IRR (:func:`irr_result`), payback (:func:`payback_months`) and the ROI
ratio (:func:`roi_ratio`) are defined here once; :mod:`aitco.decide.roi`, the CLI, the report
and the ROI workbook all use them (formulas in ``docs/glossary.md``, "Finance definitions").

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

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.errors import InputError
from aitco.units import MONTHS_PER_YEAR

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
    r"""Net present value of cash flows at periods 0, 1, 2, ... (the one NPV of aitco).

    Parameters
    ----------
    cashflows_usd : array_like
        Cash flow of each period, the first at period 0 (not discounted). [USD]
    rate : float
        Discount rate per period (per year for yearly flows, per month for monthly flows);
        must be > -1. [1/period]

    Returns
    -------
    float
        Present value at period 0. [USD]

    Notes
    -----
    .. math:: \mathrm{NPV}(r) = \sum_{t=0}^{T} \frac{c_t}{(1+r)^t}

    Spreadsheet: ``=C0 + NPV(r, C1:CT)`` (the spreadsheet NPV starts discounting at period 1);
    the same value as ``numpy_financial.npv(r, c)``.

    Examples
    --------
    >>> round(npv([-100.0, 60.0, 60.0], 0.1), 2)
    4.13
    """
    c = np.atleast_1d(checks.finite(cashflows_usd, "finance.cashflows_usd"))
    r = float(checks.finite(rate, "finance.discount_rate"))
    if r <= -1.0:
        raise InputError("finance.discount_rate", r, "a rate per period > -1")
    t = np.arange(c.shape[-1], dtype=float)
    return float(np.sum(c / (1.0 + r) ** t))


def monthly_rate(annual_rate: float) -> float:
    r"""Monthly discount rate equivalent to an annual one (compound).

    Parameters
    ----------
    annual_rate : float
        Rate per year (> -1). [1/year]

    Returns
    -------
    float
        Rate per month. [1/month]

    Notes
    -----
    .. math:: r_m = (1 + r_a)^{1/12} - 1

    Spreadsheet: ``=(1+B1)^(1/12)-1``.

    Examples
    --------
    >>> round(monthly_rate(0.1), 8)
    0.00797414
    """
    if not np.isfinite(annual_rate) or annual_rate <= -1:
        raise InputError("discount_rate", annual_rate, "an annual rate > -1")
    return float((1.0 + annual_rate) ** (1.0 / MONTHS_PER_YEAR) - 1.0)


def annual_rate(rate_per_month: float) -> float:
    r"""Annual rate equivalent to a monthly one (compound): :math:`(1 + r_m)^{12} - 1`.

    Examples
    --------
    >>> round(annual_rate(0.01), 6)
    0.126825
    """
    return float((1.0 + rate_per_month) ** MONTHS_PER_YEAR - 1.0)


#: Lowest IRR searched per period (-99 %): below it the discount factors of long series
#: overflow and no business reads such a rate. [1/period]
IRR_LOWER_BOUND = -0.99

#: Highest IRR searched per period (1e6 = 100,000,000 % a period). [1/period]
IRR_UPPER_BOUND = 1e6

#: Points of the grid in :math:`\ln(1 + r)` scanned for sign changes of the NPV; two roots
#: closer than one grid step (about 0.4 % of :math:`1 + r`) can be missed.
IRR_GRID_POINTS = 4097


@dataclass(frozen=True)
class IrrResult:
    """The internal rate of return of a cash-flow series, every root, and why it may be None.

    Attributes
    ----------
    irr : float or None
        The selected IRR per period (see :func:`irr_result`). [1/period]
    roots : tuple of float
        Every rate in (``IRR_LOWER_BOUND``, ``IRR_UPPER_BOUND``) where the NPV changes sign,
        ascending. [1/period]
    reason : str or None
        Why ``irr`` is None (None when there is an IRR).
    """

    irr: float | None
    roots: tuple[float, ...]
    reason: str | None


def _scaled_npv(c: np.ndarray, u: np.ndarray) -> np.ndarray:
    """NPV at :math:`r = e^u - 1` over its largest discount factor (same sign, no overflow)."""
    t = np.arange(c.size, dtype=float)
    expo = -np.multiply.outer(np.atleast_1d(u), t)
    expo -= expo.max(axis=-1, keepdims=True)
    return np.asarray(np.exp(expo) @ c, dtype=float)


def irr_roots(cash_flows_usd: ArrayLike) -> np.ndarray:
    r"""Every internal rate of return of a cash-flow series (all sign changes of the NPV).

    Parameters
    ----------
    cash_flows_usd : array_like
        Cash flow of each period, the first at period 0. [USD]

    Returns
    -------
    numpy.ndarray
        The rates in (``IRR_LOWER_BOUND``, ``IRR_UPPER_BOUND``) where the NPV is zero, ascending
        (empty when there is none). [1/period]

    Notes
    -----
    With :math:`u = \ln(1 + r)` the NPV is :math:`\sum_t c_t e^{-tu}`; it is scaled by
    :math:`e^{\max_t(tu)}` (same sign, no overflow) and evaluated on ``IRR_GRID_POINTS``
    points from :math:`\ln(1.01)` ... :math:`\ln(1 + 10^6)`. Each sign change is refined
    with Brent's bracketing method (``scipy.optimize.brentq``) to floating-point resolution.
    A series has at most as many IRRs as its sign changes (Descartes' rule of signs), so
    every root of a series with two sign changes (an investment whose late flows turn
    negative) is found.

    Examples
    --------
    >>> [round(float(r), 6) for r in irr_roots([-100.0, 230.0, -132.0])]
    [0.1, 0.2]
    """
    from scipy.optimize import brentq

    c = np.atleast_1d(checks.finite(cash_flows_usd, "finance.cashflows_usd")).astype(float)
    if c.size < 2 or not (np.any(c > 0) and np.any(c < 0)):
        return np.empty(0)
    u = np.linspace(np.log1p(IRR_LOWER_BOUND), np.log1p(IRR_UPPER_BOUND), IRR_GRID_POINTS)
    f = _scaled_npv(c, u)
    s = np.sign(f)
    roots = list(u[s == 0])
    cross = np.flatnonzero(s[:-1] * s[1:] < 0)
    for i in cross:
        roots.append(
            brentq(lambda x: float(_scaled_npv(c, x)[0]), u[i], u[i + 1], xtol=1e-15, rtol=1e-15)
        )
    return np.expm1(np.sort(np.asarray(roots, dtype=float)))


def irr_result(cash_flows_usd: ArrayLike) -> IrrResult:
    r"""Find the internal rate of return per period, every root, and why there may be none.

    Parameters
    ----------
    cash_flows_usd : array_like
        Cash flow of each period, the first at period 0. [USD]

    Returns
    -------
    IrrResult
        ``irr``, ``roots`` (:func:`irr_roots`) and ``reason`` (None when there is an IRR).

    Notes
    -----
    The IRR is the rate :math:`r` with :math:`\mathrm{NPV}(r) = 0` (:func:`npv`). When a
    series has several (flows that change sign more than once), the IRR is the smallest
    non-negative root, else the negative root closest to zero: numpy-financial's default
    selection (``numpy_financial.irr``, ``_irr_default_selection``), the rate at which an
    investment's NPV first falls to zero. Every root is returned in ``roots``.

    Examples
    --------
    >>> round(irr_result([-100.0, 39.0, 59.0, 55.0, 20.0]).irr, 5)
    0.28095
    >>> irr_result([100.0, 10.0]).reason
    'the cash flows never change sign: no rate makes the NPV zero'
    """
    c = np.atleast_1d(checks.finite(cash_flows_usd, "finance.cashflows_usd"))
    if c.size < 2:
        return IrrResult(None, (), "fewer than two cash flows: an IRR needs two periods")
    if not (np.any(c > 0) and np.any(c < 0)):
        return IrrResult(None, (), "the cash flows never change sign: no rate makes the NPV zero")
    roots = irr_roots(c)
    if roots.size == 0:
        return IrrResult(
            None,
            (),
            f"the NPV is never zero for a rate in ({IRR_LOWER_BOUND:g}, {IRR_UPPER_BOUND:g}) "
            "per period",
        )
    non_neg = roots[roots >= 0]
    pick = float(non_neg.min()) if non_neg.size else float(roots.max())
    return IrrResult(pick, tuple(float(r) for r in roots), None)


def irr(cash_flows_usd: ArrayLike) -> float | None:
    """Return the internal rate of return per period, or None (:func:`irr_result` says why)."""
    return irr_result(cash_flows_usd).irr


def payback_months(upfront_usd: float, net_monthly_usd: ArrayLike) -> float | None:
    r"""Months until the cumulative net cash flow first recovers the up-front investment.

    Parameters
    ----------
    upfront_usd : float
        Investment at month 0. [USD]
    net_monthly_usd : array_like
        Net cash flow of months 1..T (benefit - spend). [USD]

    Returns
    -------
    float or None
        Fractional month of payback (linear within the month), or None if never within T.

    Notes
    -----
    With :math:`K_t = -U + \sum_{i\le t} n_i`, payback is the first *t* with
    :math:`K_t \ge 0`, refined to :math:`t - 1 + (-K_{t-1})/n_t`; 0 when nothing is invested
    and month 1 does not lose money. Spreadsheet: a cumulative column and the first month
    where it turns non-negative.

    Examples
    --------
    >>> payback_months(100.0, [40.0, 40.0, 40.0])
    2.5
    """
    n = np.atleast_1d(np.asarray(net_monthly_usd, dtype=float))
    if upfront_usd <= 0 and (n.size == 0 or n[0] >= 0):
        return 0.0
    cum = -float(upfront_usd) + np.cumsum(n)
    idx = np.flatnonzero(cum >= 0)
    if idx.size == 0:
        return None
    t = int(idx[0])
    prev = -float(upfront_usd) if t == 0 else float(cum[t - 1])
    if n[t] <= 0:
        return float(t + 1)
    return float(t + (-prev) / n[t])


@dataclass(frozen=True)
class PaybackResult:
    """When an investment is paid back, and whether it stays paid back.

    Attributes
    ----------
    months : float or None
        The payback: the month the cumulative net cash flow recovers the up-front investment
        (interpolated), reported only when it stays recovered to the horizon and the NPV is not
        negative; None otherwise, with ``reason``. [months]
    breaks_even_month : float or None
        The first month the cumulative net cash flow reaches 0 (interpolated), whatever
        follows; None if it never does within the horizon. [months]
    loses_again_month : int or None
        The first month after ``breaks_even_month`` whose cumulative net cash flow is negative
        again; None if it never turns negative again. [months]
    reason : str or None
        Why ``months`` is None (None when there is a payback).
    """

    months: float | None
    breaks_even_month: float | None
    loses_again_month: int | None
    reason: str | None


#: Why a payback is not reported, in the words every surface prints (the workbook's formula
#: builds the same text).
PAYBACK_NEVER = "not within horizon"
PAYBACK_LOSES_AGAIN = "none: breaks even, then loses money again in month {month}"
PAYBACK_NEGATIVE_NPV = "none: the NPV at the discount rate is negative"


def payback_result(
    upfront_usd: float, net_monthly_usd: ArrayLike, npv_usd: float | None = None
) -> PaybackResult:
    r"""Payback of an investment, or why there is none (the cash turns negative again, NPV < 0).

    Parameters
    ----------
    upfront_usd : float
        Investment at month 0. [USD]
    net_monthly_usd : array_like
        Net cash flow of months 1..T (benefit - spend). [USD]
    npv_usd : float, optional
        NPV of the flows at the discount rate; a negative NPV reports no payback. [USD]

    Returns
    -------
    PaybackResult
        ``months`` is :func:`payback_months` when the cumulative net cash flow
        :math:`K_t = -U + \sum_{i\le t} n_i` stays :math:`\ge 0` from then to the horizon and
        the NPV is not negative; else None with ``reason`` (the month it broke even and the
        month it lost money again are kept in ``breaks_even_month``, ``loses_again_month``).

    Examples
    --------
    >>> payback_result(100.0, [40.0, 40.0, 40.0]).months
    2.5
    >>> r = payback_result(100.0, [80.0, 40.0, -50.0, -10.0])
    >>> (r.months, r.breaks_even_month, r.loses_again_month, r.reason)
    (None, 1.5, 3, 'none: breaks even, then loses money again in month 3')
    """
    n = np.atleast_1d(np.asarray(net_monthly_usd, dtype=float))
    first = payback_months(upfront_usd, n)
    if first is None:
        return PaybackResult(None, None, None, PAYBACK_NEVER)
    cum = -float(upfront_usd) + np.cumsum(n)
    months = np.arange(1, n.size + 1)
    after = (months > first) & (cum < 0)
    lost = int(months[np.flatnonzero(after)[0]]) if np.any(after) else None
    if lost is not None:
        return PaybackResult(None, first, lost, PAYBACK_LOSES_AGAIN.format(month=lost))
    if npv_usd is not None and npv_usd < 0:
        return PaybackResult(None, first, None, PAYBACK_NEGATIVE_NPV)
    return PaybackResult(first, first, None, None)


def roi_ratio(benefit_usd: ArrayLike, spend_usd: ArrayLike) -> np.ndarray:
    r"""Return on investment: net benefit over spend (the one ROI ratio of aitco).

    Parameters
    ----------
    benefit_usd : array_like
        Savings or gross profit over the period. [USD]
    spend_usd : array_like
        Money spent over the same period, investment included (must be > 0). [USD]

    Returns
    -------
    numpy.ndarray
        ROI as a ratio (2.0 = 200 %). [-]

    Notes
    -----
    .. math:: \mathrm{ROI} = \frac{B - C}{C}

    ``roi_monthly`` applies it to one month, ``roi_horizon`` to the sums over the horizon
    (up-front investment in the spend). Spreadsheet: ``=(B1-B2)/B2``.

    Examples
    --------
    >>> round(float(roi_ratio(128000, 42000)), 6)
    2.047619
    """
    b = np.asarray(checks.finite(benefit_usd, "benefit_usd"), dtype=float)
    c = np.asarray(checks.finite(spend_usd, "spend_usd"), dtype=float)
    if np.any(c <= 0):
        bad = c.item() if c.size == 1 else c.tolist()
        raise InputError("monthly_cost_usd", bad, "a cost > 0 (ROI divides by it)")
    return np.asarray((b - c) / c, dtype=float)


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
