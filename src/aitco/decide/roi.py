"""Return on investment: monthly ROI, break-even volume, payback, NPV, IRR and a tornado.

Everything here is plain arithmetic that a spreadsheet can reproduce cell by cell; each function's
docstring gives the formula in spreadsheet terms. The flat forms are the two worked examples
(the test suite checks both)::

    roi = (monthly_savings_usd - monthly_cost_usd) / monthly_cost_usd
    calls_per_month = fixed_cost_usd / (price_per_call_usd * gross_margin)

The time-series form (:func:`roi_series`) runs month by month over a horizon with a traffic curve
(growth or decay of the served volume), operations labour by role, a model iteration cycle
(re-training every *k* months) and an up-front investment, and reports payback, NPV and IRR.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from pydantic import ConfigDict, Field, ValidationError

from aitco.cost import finance
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario
from aitco.errors import InputError
from aitco.explain import Estimate, Term
from aitco.fileio import load_yaml
from aitco.limits import StrictNumbers, check_tree
from aitco.units import DAYS_PER_MONTH, MONTHS_PER_YEAR

#: Paid hours of one full-time employee per year (52 weeks x 40 h), the US convention
#: (U.S. OPM, "Computing hourly rates of pay using the 2,087-hour divisor" uses 2,087; 2,080 is
#: the common 52 x 40 planning figure). [h/FTE-year]
FTE_HOURS_PER_YEAR = 2080.0

#: Paid hours of one full-time employee per month. [h/FTE-month]
FTE_HOURS_PER_MONTH = FTE_HOURS_PER_YEAR / MONTHS_PER_YEAR

#: Default relative swing of each input in the tornado analysis (+/- 20 %).
TORNADO_DEFAULT_SWING = 0.2


# --------------------------------------------------------------------------- flat forms
def monthly_roi(monthly_savings_usd: ArrayLike, monthly_cost_usd: ArrayLike) -> np.ndarray:
    r"""Return on investment of one month, ``roi_monthly``: net benefit over spend.

    :func:`aitco.cost.finance.roi_ratio` applied to one month.

    Parameters
    ----------
    monthly_savings_usd : array_like
        Money saved (or earned) per month thanks to the AI system. [USD/month]
    monthly_cost_usd : array_like
        Money spent per month running it (must be > 0). [USD/month]

    Returns
    -------
    numpy.ndarray
        ROI as a ratio (2.0 = 200 %). [-]

    Notes
    -----
    .. math:: \mathrm{ROI} = \frac{S - C}{C}

    Spreadsheet: ``=(B1-B2)/B2``.

    Examples
    --------
    >>> round(float(monthly_roi(128000, 42000)), 6)
    2.047619
    """
    return finance.roi_ratio(monthly_savings_usd, monthly_cost_usd)


def breakeven_calls_per_month(
    fixed_cost_usd: ArrayLike, price_per_call_usd: ArrayLike, gross_margin: ArrayLike
) -> np.ndarray:
    r"""Compute the calls a month needed for the gross margin to cover a fixed cost.

    Parameters
    ----------
    fixed_cost_usd : array_like
        Fixed cost to recover per month. [USD/month]
    price_per_call_usd : array_like
        Price charged per call. [USD/call]
    gross_margin : array_like
        Gross margin per call as a fraction of its price. [0-1]

    Returns
    -------
    numpy.ndarray
        Break-even volume. [calls/month]

    Notes
    -----
    .. math:: N = \frac{F}{p \cdot m}

    Spreadsheet: ``=B1/(B2*B3)``.

    Examples
    --------
    >>> round(float(breakeven_calls_per_month(1_280_000, 0.85, 0.62)), 2)
    2428842.5
    """
    f = np.asarray(fixed_cost_usd, dtype=float)
    p = np.asarray(price_per_call_usd, dtype=float)
    m = np.asarray(gross_margin, dtype=float)
    if np.any(f < 0):
        raise InputError("fixed_cost_usd", _show(f), "a cost >= 0")
    if np.any(p <= 0):
        raise InputError("price_per_call_usd", _show(p), "a price > 0")
    if np.any((m <= 0) | (m > 1)):
        raise InputError("gross_margin", _show(m), "a fraction in (0, 1]")
    return f / (p * m)


def calls_per_day(calls_per_month: ArrayLike, days_per_month: float = DAYS_PER_MONTH) -> np.ndarray:
    r"""Spread a monthly volume over the days of an average month.

    Parameters
    ----------
    calls_per_month : array_like
        Volume. [calls/month]
    days_per_month : float
        Days in a month; default the Gregorian mean 365.25/12 = 30.4375. [d/month]

    Returns
    -------
    numpy.ndarray
        Volume. [calls/day]

    Notes
    -----
    Spreadsheet: ``=B1/30.4375``.
    """
    if days_per_month <= 0:
        raise InputError("days_per_month", days_per_month, "a number of days > 0")
    return np.asarray(calls_per_month, dtype=float) / days_per_month


def roi_estimate(monthly_savings_usd: float, monthly_cost_usd: float) -> Estimate:
    """Return the flat monthly ROI as an explainable :class:`~aitco.explain.Estimate`."""
    r = float(monthly_roi(monthly_savings_usd, monthly_cost_usd))
    net = monthly_savings_usd - monthly_cost_usd
    inputs = {"monthly_savings_usd": monthly_savings_usd, "monthly_cost_usd": monthly_cost_usd}
    return Estimate(
        kind="roi",
        values={
            "roi_monthly": r,
            "roi": r,
            "net_monthly_usd": net,
            "monthly_savings_usd": monthly_savings_usd,
            "monthly_cost_usd": monthly_cost_usd,
        },
        terms=[
            Term(
                name="net_monthly_usd", value=net, unit="USD/month", formula="S - C", inputs=inputs
            ),
            Term(name="roi_monthly", value=r, unit="ratio", formula="(S - C) / C", inputs=inputs),
        ],
        dominant="roi_monthly",
    )


def breakeven_estimate(
    fixed_cost_usd: float,
    price_per_call_usd: float,
    gross_margin: float,
    days_per_month: float = DAYS_PER_MONTH,
) -> Estimate:
    """Return the flat break-even volume as an explainable :class:`~aitco.explain.Estimate`."""
    n = float(breakeven_calls_per_month(fixed_cost_usd, price_per_call_usd, gross_margin))
    d = float(calls_per_day(n, days_per_month))
    margin_usd = price_per_call_usd * gross_margin
    inputs = {
        "fixed_cost_usd": fixed_cost_usd,
        "price_per_call_usd": price_per_call_usd,
        "gross_margin": gross_margin,
    }
    return Estimate(
        kind="breakeven",
        values={
            "calls_per_month": n,
            "calls_per_day": d,
            "margin_per_call_usd": margin_usd,
            "days_per_month": days_per_month,
            **inputs,
        },
        terms=[
            Term(
                name="margin_per_call_usd",
                value=margin_usd,
                unit="USD/call",
                formula="p * m",
                inputs=inputs,
            ),
            Term(
                name="calls_per_month",
                value=n,
                unit="calls/month",
                formula="F / (p * m)",
                inputs=inputs,
            ),
            Term(
                name="calls_per_day",
                value=d,
                unit="calls/day",
                formula="calls_per_month / days_per_month",
                inputs={"calls_per_month": n, "days_per_month": days_per_month},
            ),
        ],
        dominant="calls_per_month",
    )


# --------------------------------------------------------------------------- finance helpers
# NPV, IRR, payback, the ROI ratio and the monthly rate have one definition each, in
# aitco.cost.finance; they are re-exported here for the callers of this module.
npv = finance.npv
irr = finance.irr
irr_result = finance.irr_result
payback_months = finance.payback_months
payback_result = finance.payback_result
monthly_rate = finance.monthly_rate

#: The ratios and figures of a ROI time series, in the order every surface prints them:
#: (JSON key, label, unit). The CLI (``aitco roi FILE``), the HTML/Markdown report and the
#: ROI workbook print these names next to their values; ``docs/glossary.md`` gives formulas.
ROI_SUMMARY: tuple[tuple[str, str, str], ...] = (
    ("roi_horizon", "ROI over the horizon", "ratio"),
    ("roi_monthly_mean", "mean monthly ROI", "ratio"),
    ("npv_usd", "NPV at the discount rate", "USD"),
    ("irr_monthly", "IRR per month", "1/month"),
    ("irr_annual", "IRR per year", "1/year"),
    ("payback_months", "payback", "months"),
    ("total_savings_usd", "total savings", "USD"),
    ("total_spend_usd", "total spend incl. up-front", "USD"),
    ("net_usd", "net (savings - spend)", "USD"),
    ("breaks_even_month", "cumulative cash flow first reaches 0", "months"),
    ("loses_again_month", "cumulative cash flow negative again", "months"),
)


def roi_summary(res: dict[str, Any]) -> list[tuple[str, str, str, float | None]]:
    """Rows ``(key, label, unit, value)`` of :data:`ROI_SUMMARY` from a :func:`roi_series` result.

    The CLI, the report and the workbook print these rows, so the names and values agree.
    """
    return [(k, label, unit, res.get(k)) for k, label, unit in ROI_SUMMARY]


def summary_text_rows(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Rows ``(key, label, text)`` of :func:`roi_summary` as text; a missing payback says why.

    The CLI (``aitco roi FILE``), the HTML/Markdown report and the workbook show these texts.
    """
    rows = []
    for k, label, unit, v in roi_summary(res):
        text = format_summary_value(unit, v)
        if k == "payback_months" and v is None and res.get("payback_null_reason"):
            text = str(res["payback_null_reason"])
        rows.append((k, label, text))
    return rows


def format_summary_value(unit: str, value: float | None) -> str:
    """Format one :func:`roi_summary` value for text: ratios and rates in %, USD, months.

    Examples
    --------
    >>> format_summary_value("ratio", 0.4318)
    '43.18 %'
    >>> format_summary_value("USD", -1234.6)
    '-$1,235'
    >>> format_summary_value("months", None)
    'none'
    """
    if value is None or not math.isfinite(value):
        return "none"
    if unit in ("ratio", "1/month", "1/year"):
        return f"{100.0 * value:,.2f} %"
    if unit == "USD":
        return f"-${-value:,.0f}" if value < 0 else f"${value:,.0f}"
    if unit == "months":
        return f"{value:,.2f} months"
    return f"{value:,.4g}"


# --------------------------------------------------------------------------- time series
class LabourRole(StrictNumbers):
    """Operations labour of one role: how many full-time people, at what hourly rate."""

    model_config = ConfigDict(extra="forbid")

    fte: float = Field(ge=0, description="Full-time equivalents. [FTE]")
    usd_per_hour: float = Field(ge=0, description="Loaded hourly cost. [USD/h]")

    @property
    def monthly_usd(self) -> float:
        """Monthly cost ``fte x FTE_HOURS_PER_MONTH x usd_per_hour``, in [USD/month]."""
        return self.fte * FTE_HOURS_PER_MONTH * self.usd_per_hour


class RoiInputs(StrictNumbers):
    """Inputs of the monthly ROI time series (the ``roi:`` section of a ROI YAML).

    Attributes
    ----------
    horizon_months : int
        Months simulated.
    monthly_savings_usd : float
        Benefit in month 1 at the base traffic (savings or gross profit). [USD/month]
    monthly_cost_usd : float
        Fixed running cost per month (infrastructure that does not scale with traffic). [USD/month]
    variable_cost_usd : float
        Running cost per month that scales with traffic, at month-1 traffic. [USD/month]
    traffic_growth_per_month : float
        Compound monthly change of traffic (0.05 = +5 %/month, -0.03 = 3 % decay). [1/month]
    savings_scale_with_traffic : bool
        Whether the benefit scales with traffic (True) or is fixed.
    labour : dict of str to LabourRole
        Operations staff by role (``sre``, ``ml-engineer``...).
    upfront_usd : float
        Investment at month 0 (build, integration, initial training). [USD]
    iteration_cost_usd : float
        Cost of one model iteration (re-training / fine-tuning / evaluation). [USD]
    iteration_months : int
        Months between iterations (0 = none); iterations are paid in months 1, 1+k, 1+2k... [month]
    discount_rate : float
        Annual discount rate for NPV. [1/year]
    price_per_call_usd, gross_margin : float, optional
        When given, the break-even call volume of each month is reported too.
    serving_scenario, training_scenario : str, optional
        Scenario YAML files priced with :func:`aitco.decide.compare.compare` by
        :func:`with_scenario_costs` (serving: monthly cost; training: cost per iteration).
    """

    model_config = ConfigDict(extra="forbid")

    horizon_months: int = Field(default=36, ge=1, le=600)
    monthly_savings_usd: float = Field(ge=0)
    monthly_cost_usd: float = Field(default=0.0, ge=0)
    variable_cost_usd: float = Field(default=0.0, ge=0)
    traffic_growth_per_month: float = Field(default=0.0, gt=-1)
    savings_scale_with_traffic: bool = True
    labour: dict[str, LabourRole] = Field(default_factory=dict)
    upfront_usd: float = Field(default=0.0, ge=0)
    iteration_cost_usd: float = Field(default=0.0, ge=0)
    iteration_months: int = Field(default=0, ge=0)
    discount_rate: float = Field(default=0.10, gt=-1)
    price_per_call_usd: float | None = Field(default=None, gt=0)
    gross_margin: float | None = Field(default=None, gt=0, le=1)
    serving_scenario: str | None = Field(
        default=None,
        description="Inference scenario YAML; its cheapest option's monthly TCO "
        "becomes variable_cost_usd (serving scales with traffic).",
    )
    training_scenario: str | None = Field(
        default=None,
        description="Training scenario YAML; its cheapest option's TCO becomes "
        "iteration_cost_usd (one run per model iteration).",
    )

    @classmethod
    def from_yaml(cls, path: str) -> RoiInputs:
        """Read a ROI YAML (the inputs at top level or under ``roi:``); errors name the field."""
        data = load_yaml(path, field="ROI_FILE")
        if isinstance(data, dict) and isinstance(data.get("roi"), dict):
            data = data["roi"]
        return cls.from_dict(data, file=path)

    @classmethod
    def from_dict(cls, data: Any, *, file: str | None = None) -> RoiInputs:
        """Validate a mapping; errors name the field, the value and what was expected."""
        if not isinstance(data, dict):
            raise InputError("roi", type(data).__name__, "a mapping of ROI inputs", file=file)
        try:
            roi = cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            hint = None
            if err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(err["loc"][-1]), list(cls.model_fields), n=3)
                hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else None
            expected = "a known key" if err["type"] == "extra_forbidden" else err["msg"]
            raise InputError(loc, err.get("input"), expected, file=file, hint=hint) from exc
        check_tree(data, file=file)  # the ranges of the flags of the same name (limits.py)
        return roi


def with_scenario_costs(
    inp: RoiInputs, catalog: Any, *, file: str | None = None
) -> tuple[RoiInputs, dict[str, Any]]:
    """Fill costs from the scenarios named in the inputs (the full TCO of their cheapest option).

    Parameters
    ----------
    inp : RoiInputs
        Inputs, possibly naming ``serving_scenario`` / ``training_scenario`` (paths relative to
        the ROI file's folder when ``file`` is given).
    catalog : Catalog
        Catalog to price the scenarios with.
    file : str, optional
        The ROI file (to resolve relative scenario paths).

    Returns
    -------
    (RoiInputs, dict)
        Inputs with ``variable_cost_usd`` = serving TCO per month (total / months) and
        ``iteration_cost_usd`` = training TCO, and a dict saying which option priced each.
    """
    from pathlib import Path

    base = Path(file).parent if file else Path(".")
    upd: dict[str, Any] = {}
    used: dict[str, Any] = {}
    for key, target in (
        ("serving_scenario", "variable_cost_usd"),
        ("training_scenario", "iteration_cost_usd"),
    ):
        path = getattr(inp, key)
        if path is None:
            continue
        p = Path(path)
        if not p.is_absolute():
            p = base / p
        scn = Scenario.from_yaml(p)
        if scn.workload is None:
            raise InputError(key, path, "a scenario with a workload and options")
        want = "inference" if key == "serving_scenario" else "training"
        if scn.workload.kind != want:
            raise InputError(key, path, f"an {want} scenario", file=file)
        comp = compare(scn, catalog)
        best = min(comp.options, key=lambda b: b.total_usd)
        cost = best.total_usd
        if want == "inference":
            cost = cost / float(getattr(scn.workload, "months", 1.0))
        upd[target] = cost
        used[key] = {"file": str(p), "option": best.name, target: cost, "total_usd": best.total_usd}
    if not upd:
        return inp, used
    return inp.model_copy(update=upd), used


#: Inputs the tornado analysis varies (the numeric levers of :class:`RoiInputs`).
TORNADO_FIELDS: tuple[str, ...] = (
    "monthly_savings_usd",
    "monthly_cost_usd",
    "variable_cost_usd",
    "traffic_growth_per_month",
    "upfront_usd",
    "iteration_cost_usd",
    "discount_rate",
    "labour",
)


def roi_series(inp: RoiInputs) -> dict[str, Any]:
    r"""Monthly ROI time series with payback, NPV and IRR.

    Parameters
    ----------
    inp : RoiInputs
        The inputs.

    Returns
    -------
    dict
        ``months`` (list of per-month rows: month, traffic_factor, savings_usd, infra_usd,
        labour_usd, iteration_usd, spend_usd, net_usd, cumulative_usd, roi, and the
        break-even volume calls_per_month when a price and margin are given) and the summary
        values of :data:`ROI_SUMMARY` (``roi_horizon``, ``roi_monthly_mean``, ``npv_usd``,
        ``irr_monthly``, ``irr_annual``, ``payback_months``, totals, ``breaks_even_month``,
        ``loses_again_month``), ``payback_null_reason`` (why ``payback_months`` is None: never
        within the horizon, the cumulative cash flow turns negative again, or a negative NPV;
        :func:`aitco.cost.finance.payback_result`), ``loses_money`` (NPV or net < 0),
        ``warnings`` (:func:`loss_warnings`: what every surface prints first when the project
        loses money), ``irr_roots_monthly``, ``irr_null_reason``, and ``roi``: the ROI of
        month 1 (:math:`\mathrm{ROI}_1`, the flat form's one meaning); ``cumulative_roi`` and
        ``mean_monthly_roi`` are deprecated aliases of ``roi_horizon`` and
        ``roi_monthly_mean``.

    Notes
    -----
    For months :math:`t = 1..T` (one spreadsheet row each):

    .. math::

        g_t &= (1 + g)^{t-1} \\
        S_t &= S \, g_t \;(\text{or } S \text{ if savings do not scale}) \\
        C_t &= C_{fixed} + C_{var} g_t + \sum_{roles} \mathrm{FTE} \cdot 2080/12 \cdot w
               + I \cdot [k > 0 \wedge (t-1) \bmod k = 0] \\
        \mathrm{ROI}_t &= (S_t - C_t) / C_t \\
        K_t &= -U + \sum_{i \le t} (S_i - C_i)

    NPV discounts month *t* by :math:`(1+r_m)^t` with :math:`r_m = (1+r)^{1/12} - 1`, the
    up-front *U* at month 0 undiscounted (:func:`aitco.cost.finance.npv`). IRR solves NPV = 0
    on the monthly flows :math:`[-U, S_1 - C_1, ...]` (:func:`aitco.cost.finance.irr_result`:
    every root, the smallest non-negative one reported); ``irr_annual`` =
    :math:`(1+\mathrm{IRR}_m)^{12} - 1`. ``roi_horizon`` is
    :math:`(\sum S_t - \sum C_t - U) / (\sum C_t + U)`; ``roi_monthly_mean`` is the mean of
    :math:`\mathrm{ROI}_t` over the months with spend.
    """
    t = np.arange(1, inp.horizon_months + 1, dtype=float)
    g = (1.0 + inp.traffic_growth_per_month) ** (t - 1.0)
    savings = inp.monthly_savings_usd * (g if inp.savings_scale_with_traffic else np.ones_like(g))
    infra = inp.monthly_cost_usd + inp.variable_cost_usd * g
    labour_m = sum(r.monthly_usd for r in inp.labour.values())
    labour = np.full_like(t, labour_m)
    if inp.iteration_months > 0:
        iteration = np.where((t - 1) % inp.iteration_months == 0, inp.iteration_cost_usd, 0.0)
    else:
        iteration = np.zeros_like(t)
    spend = infra + labour + iteration
    net = savings - spend
    cum = -inp.upfront_usd + np.cumsum(net)
    roi_t = np.full_like(t, np.nan)
    paid = spend > 0
    roi_t[paid] = monthly_roi(savings[paid], spend[paid])
    flows = np.concatenate([[-inp.upfront_usd], net])
    rm = monthly_rate(inp.discount_rate)
    irr_res = irr_result(flows)
    irr_m = irr_res.irr
    total_spend = float(spend.sum()) + inp.upfront_usd
    rows = []
    be = None
    if inp.price_per_call_usd is not None and inp.gross_margin is not None:
        be = breakeven_calls_per_month(spend, inp.price_per_call_usd, inp.gross_margin)
    for i in range(t.size):
        row = {
            "month": int(t[i]),
            "traffic_factor": float(g[i]),
            "savings_usd": float(savings[i]),
            "infra_usd": float(infra[i]),
            "labour_usd": float(labour[i]),
            "iteration_usd": float(iteration[i]),
            "spend_usd": float(spend[i]),
            "net_usd": float(net[i]),
            "cumulative_usd": float(cum[i]),
            "roi": float(roi_t[i]),
        }
        if be is not None:
            row["calls_per_month"] = float(be[i])
        rows.append(row)
    total_savings = float(savings.sum())
    roi_h = float(finance.roi_ratio(total_savings, total_spend)) if total_spend > 0 else None
    roi_mean = float(np.nanmean(roi_t)) if np.isfinite(roi_t).any() else None
    npv_usd = npv(flows, rm)
    net_usd = total_savings - total_spend
    pb = payback_result(inp.upfront_usd, net, npv_usd)
    warnings = loss_warnings(npv_usd, net_usd, pb, irr_m, irr_res.roots, inp)
    return {
        "horizon_months": inp.horizon_months,
        "total_savings_usd": total_savings,
        "total_spend_usd": total_spend,
        "net_usd": net_usd,
        "roi_horizon": roi_h,
        "roi_monthly_mean": roi_mean,
        # `roi` has one meaning everywhere: the ROI of one month, (S - C) / C; here month 1
        "roi": None if not math.isfinite(roi_t[0]) else float(roi_t[0]),
        # deprecated aliases (same values), kept so that existing readers keep working
        "cumulative_roi": roi_h,
        "mean_monthly_roi": roi_mean,
        "payback_months": pb.months,
        "payback_null_reason": pb.reason,
        "breaks_even_month": pb.breaks_even_month,
        "loses_again_month": pb.loses_again_month,
        "loses_money": bool(npv_usd < 0 or net_usd < 0),
        "warnings": warnings,
        "npv_usd": npv_usd,
        "discount_rate": inp.discount_rate,
        "discount_rate_monthly": rm,
        "irr_monthly": irr_m,
        "irr_annual": None if irr_m is None else finance.annual_rate(irr_m),
        "irr_roots_monthly": list(irr_res.roots),
        "irr_null_reason": irr_res.reason,
        "labour_usd_per_month": labour_m,
        "labour_by_role_usd": {k: r.monthly_usd for k, r in inp.labour.items()},
        "months": rows,
    }


def loss_warnings(
    npv_usd: float,
    net_usd: float,
    pb: finance.PaybackResult,
    irr_monthly: float | None,
    irr_roots: Sequence[float],
    inp: RoiInputs,
) -> list[str]:
    """Sentences every surface prints first when a project loses money (empty when it does not).

    A project loses money when its NPV at the discount rate or its net over the horizon is
    negative; the payback it does not have and an IRR that reads as a gain are said too.
    """
    if npv_usd >= 0 and net_usd >= 0:
        return []
    out = [
        f"the project loses money: NPV {format_summary_value('USD', npv_usd)} at "
        f"{inp.discount_rate:.1%}/yr, net {format_summary_value('USD', net_usd)} over "
        f"{inp.horizon_months} months"
    ]
    if pb.loses_again_month is not None and pb.breaks_even_month is not None:
        out.append(
            f"no payback: the cumulative cash flow breaks even in month "
            f"{pb.breaks_even_month:.2f} and is negative again from month {pb.loses_again_month}"
        )
    elif pb.months is None and pb.breaks_even_month is not None:
        out.append(
            f"no payback: the cumulative cash flow breaks even in month "
            f"{pb.breaks_even_month:.2f} but the NPV is negative"
        )
    if irr_monthly is not None and irr_monthly > monthly_rate(inp.discount_rate):
        roots = ", ".join(f"{100.0 * r:.2f} %" for r in irr_roots)
        out.append(
            f"the IRR ({format_summary_value('1/month', irr_monthly)} a month) is not a return "
            f"here: the NPV is negative at the discount rate (the NPV is zero at {roots} a month)"
        )
    return out


def _scaled(inp: RoiInputs, name: str, factor: float) -> RoiInputs:
    """Return ``inp`` with one input multiplied by ``factor`` (labour: every role's FTE)."""
    if name == "labour":
        roles = {k: r.model_copy(update={"fte": r.fte * factor}) for k, r in inp.labour.items()}
        return inp.model_copy(update={"labour": roles})
    return inp.model_copy(update={name: getattr(inp, name) * factor})


def tornado(
    inp: RoiInputs,
    *,
    metric: str = "npv_usd",
    swing: float = TORNADO_DEFAULT_SWING,
    fields: Sequence[str] = TORNADO_FIELDS,
) -> list[dict[str, Any]]:
    r"""One-at-a-time sensitivity of a ROI metric to each input (a tornado chart's bars).

    Parameters
    ----------
    inp : RoiInputs
        The base case.
    metric : str
        Summary value of :func:`roi_series` to watch (``npv_usd``, ``cumulative_roi``,
        ``payback_months``...).
    swing : float
        Relative change applied to each input, down and up (0.2 = -20 % and +20 %). [0-1]
    fields : sequence of str
        Inputs to vary; inputs that are zero in the base case are skipped (a relative swing of
        zero moves nothing).

    Returns
    -------
    list of dict
        One bar per input, largest ``range`` first: ``input``, ``base_value``, ``low_value``,
        ``high_value``, ``metric_low``, ``metric_high``, ``range`` = \|high - low\|.

    Notes
    -----
    Each bar sets one input to :math:`x(1 \mp s)` with every other input at its base value and
    re-runs :func:`roi_series` (for ``labour`` every role's FTE is scaled). Bars are sorted by
    :math:`|M(x(1+s)) - M(x(1-s))|`.
    """
    if not 0 < swing < 1:
        raise InputError("swing", swing, "a relative swing in (0, 1)")
    base = roi_series(inp)

    def numeric(v: Any) -> bool:
        return v is None or (isinstance(v, int | float) and not isinstance(v, bool))

    if metric not in base or not numeric(base[metric]):
        valid = [k for k, v in base.items() if numeric(v)]
        raise InputError("metric", metric, f"one of {', '.join(valid)}")
    bars = []
    for name in fields:
        if name not in TORNADO_FIELDS:
            raise InputError("fields", name, f"one of {', '.join(TORNADO_FIELDS)}")
        base_val = (
            sum(r.fte for r in inp.labour.values())
            if name == "labour"
            else float(getattr(inp, name))
        )
        if base_val == 0:
            continue
        lo_in, hi_in = _scaled(inp, name, 1 - swing), _scaled(inp, name, 1 + swing)
        lo_m = roi_series(lo_in)[metric]
        hi_m = roi_series(hi_in)[metric]
        rng = abs(hi_m - lo_m) if lo_m is not None and hi_m is not None else math.inf
        bars.append(
            {
                "input": name,
                "base_value": base_val,
                "low_value": base_val * (1 - swing),
                "high_value": base_val * (1 + swing),
                "metric": metric,
                "metric_base": base[metric],
                "metric_low": lo_m,
                "metric_high": hi_m,
                "range": rng,
            }
        )
    bars.sort(key=lambda b: -b["range"])
    return bars


def breakeven_series(
    spend_usd: ArrayLike, price_per_call_usd: float, gross_margin: float
) -> np.ndarray:
    """Break-even calls of each month of a spend series (:func:`breakeven_calls_per_month`)."""
    return breakeven_calls_per_month(spend_usd, price_per_call_usd, gross_margin)


def _show(a: np.ndarray) -> Any:
    return a.item() if a.size == 1 else a.tolist()
