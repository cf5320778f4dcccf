r"""People: operations staff, incident and repair labour, and cloud support fees.

.. math::

    w = k_\mathrm{emp}\,w_\mathrm{wage},\qquad
    F = \max\!\left(\frac{N}{1000}\,s,\;
        F_\mathrm{rota}\min\!\left(1, \frac{N}{N_\mathrm{rota}}\right)\right),
    \qquad F_\mathrm{rota} = S\,\frac{8766}{h_\mathrm{prod}}

    C_\mathrm{ops} = F\,\frac{t}{8766}\,h_\mathrm{FTE}\,w,\qquad
    C_\mathrm{inc} = I\,\mathrm{MTTR}\,w,\qquad
    C_\mathrm{repair} = I\,\mathrm{MTTR}\,w\,(1 + \alpha\log_2 n)

    A = \frac{C}{M} + A_\mathrm{other},\qquad
    f(A) = \max\!\left(\sum_j r_j\,\mathrm{clip}(A - b_j,\,0,\,b_{j+1}-b_j),\;
        c_\mathrm{min}\right),\qquad C_\mathrm{sup} = C\,\frac{f(A)}{A}

with :math:`k_\mathrm{emp}` the employer cost of compensation over wages (benefits, payroll
taxes), :math:`s` operations staff (FTE) per 1,000 accelerators, :math:`S` on-call seats a rota
staffs around the clock, :math:`h_\mathrm{prod}` hours one FTE works per year (paid hours less
paid leave), :math:`N_\mathrm{rota}` the fleet that keeps a rota of its own busy (a smaller fleet
shares a rota and pays its share :math:`N/N_\mathrm{rota}`), :math:`t` the hours the cluster is
held, :math:`h_\mathrm{FTE}` paid hours of one FTE per year, :math:`I` the interruptions,
:math:`n` the nodes, :math:`\alpha` the cluster-scale coefficient. The staffing takes the larger
of the per-GPU ratio and the on-call share (the on-call engineers also do the per-GPU work), not
their sum.

Cloud support is billed per account and month (a tiered share of the account's monthly bill
with a monthly minimum): a job of spend :math:`C` held :math:`M` months (a fraction for a short
job) runs at :math:`C/M` a month; the account's bill :math:`A` is that rate plus the account's
other spend :math:`A_\mathrm{other}`, and the job pays the account's average support rate
:math:`f(A)/A` on its spend, so a 17-minute job pays its share of the month, not a whole
monthly minimum.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.errors import InputError
from aitco.units import HOURS_PER_YEAR

#: Working hours of one full-time employee per year (40 h x 52 weeks), the US convention used
#: by the US Office of Personnel Management for annual-to-hourly pay (5 U.S.C. 5504).
WORK_HOURS_PER_FTE_YEAR = 2080.0

#: Accelerators per "unit" of the staffing ratio (staff are given per 1,000 accelerators).
GPUS_PER_STAFFING_UNIT = 1000.0


def loaded_rate_usd_per_h(wage_usd_per_h: ArrayLike, employer_cost_factor: ArrayLike) -> np.ndarray:
    """Return the employer's hourly cost of labour: the wage times the employer-cost factor.

    Parameters
    ----------
    wage_usd_per_h : array_like
        Wage (salary over paid hours). [USD/h]
    employer_cost_factor : array_like
        Total compensation cost over wages and salaries (>= 1). [ratio]

    Returns
    -------
    numpy.ndarray
        Loaded rate. [USD/h]

    Examples
    --------
    >>> round(float(loaded_rate_usd_per_h(70.0, 1.4234)), 3)
    99.638
    """
    w = checks.non_negative(wage_usd_per_h, "labour.usd-per-hour")
    k = checks.finite(employer_cost_factor, "labour.employer-cost-factor")
    if np.any(k < 1.0):
        raise InputError(
            "labour.employer-cost-factor",
            float(np.min(k)),
            "a ratio >= 1 (total compensation over wages)",
        )
    return np.asarray(w * k, dtype=float)


def on_call_fte(seats: ArrayLike, productive_h_per_fte_year: ArrayLike) -> np.ndarray:
    r"""Return the FTE that staff ``seats`` around the clock, all year.

    Parameters
    ----------
    seats : array_like
        Seats (on-call positions) covered 24x7. [count]
    productive_h_per_fte_year : array_like
        Hours one FTE works in a year (paid hours less paid leave). [h]

    Returns
    -------
    numpy.ndarray
        :math:`S \cdot 8766 / h_\mathrm{prod}`. [FTE]

    Examples
    --------
    >>> round(float(on_call_fte(1, 1878.5)), 3)
    4.666
    """
    s = checks.non_negative(seats, "ops.on-call-seats.owned")
    h = checks.positive(productive_h_per_fte_year, "labour.productive-hours-per-fte-year")
    return np.asarray(s * HOURS_PER_YEAR / h, dtype=float)


def on_call_share_fte(gpus: ArrayLike, rota_fte: ArrayLike, rota_gpus: ArrayLike) -> np.ndarray:
    r"""Return the on-call staff a fleet of ``gpus`` pays: its share of a 24x7 rota.

    A fleet of at least ``rota_gpus`` accelerators keeps a rota of its own busy and pays all of
    it; a smaller fleet is covered by a rota shared with other fleets (the organisation's
    operations on-call) and pays the share ``gpus / rota_gpus``.

    Parameters
    ----------
    gpus : array_like
        Accelerators of the fleet. [count]
    rota_fte : array_like
        FTE of one rota staffed around the clock (:func:`on_call_fte`). [FTE]
    rota_gpus : array_like
        Fleet size that needs a rota of its own (> 0). [count]

    Returns
    -------
    numpy.ndarray
        :math:`F_\mathrm{rota} \min(1, N / N_\mathrm{rota})`. [FTE]

    Examples
    --------
    >>> round(float(on_call_share_fte(1, 4.666, 4000)), 6)  # one GPU: 1/4000 of the rota
    0.001167
    >>> float(on_call_share_fte(10_000, 4.666, 4000))  # a large fleet: one whole rota
    4.666
    """
    n = checks.non_negative(gpus, "gpus")
    f = checks.non_negative(rota_fte, "ops.on-call-seats.owned")
    g = checks.positive(rota_gpus, "ops.on-call-rota-gpus")
    return np.asarray(f * np.minimum(1.0, n / g), dtype=float)


def ops_staff_usd(
    gpus: ArrayLike,
    hours: ArrayLike,
    fte_per_1000_gpus: ArrayLike,
    usd_per_hour: ArrayLike,
    min_fte: ArrayLike = 0.0,
) -> np.ndarray:
    """Operations staff time attributed to a cluster held for ``hours``.

    Parameters
    ----------
    gpus : array_like
        Accelerators held. [count]
    hours : array_like
        Calendar hours they are held. [h]
    fte_per_1000_gpus : array_like
        Operations staff per 1,000 accelerators. [FTE]
    usd_per_hour : array_like
        Loaded hourly labour rate. [USD/h]
    min_fte : array_like
        On-call staff of the fleet (its share of a 24x7 rota, :func:`on_call_share_fte`);
        the staff is the larger of the two. [FTE]

    Returns
    -------
    numpy.ndarray
        Staff cost. [USD]

    Examples
    --------
    >>> round(float(ops_staff_usd(1000, 8766.0, 1.0, 100.0)), 6)
    208000.0
    >>> round(float(ops_staff_usd(4, 8766.0, 2.0, 100.0, min_fte=4.0)), 6)  # a dedicated rota
    832000.0
    """
    n = checks.non_negative(gpus, "gpus")
    h = checks.non_negative(hours, "hours")
    s = checks.non_negative(fte_per_1000_gpus, "ops.fte-per-1000-gpus")
    w = checks.non_negative(usd_per_hour, "labour.usd-per-hour")
    m = checks.non_negative(min_fte, "ops.min_fte")
    fte = np.maximum(n / GPUS_PER_STAFFING_UNIT * s, m)
    return np.asarray(fte * (h / HOURS_PER_YEAR) * WORK_HOURS_PER_FTE_YEAR * w, dtype=float)


def incident_usd(
    incidents: ArrayLike, mttr_staff_h: ArrayLike, usd_per_hour: ArrayLike
) -> np.ndarray:
    """Staff time spent on incidents.

    Parameters
    ----------
    incidents : array_like
        Incidents (interruptions) handled. [count]
    mttr_staff_h : array_like
        Staff hours per incident (mean time to repair x people on it). [h]
    usd_per_hour : array_like
        Loaded hourly labour rate. [USD/h]

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> float(incident_usd(10, 2.0, 100.0))
    2000.0
    """
    i = checks.non_negative(incidents, "incidents")
    m = checks.non_negative(mttr_staff_h, "ops.mttr-staff-hours")
    w = checks.non_negative(usd_per_hour, "labour.usd-per-hour")
    return np.asarray(i * m * w, dtype=float)


def cluster_scale_coefficient(nodes: ArrayLike, per_doubling: ArrayLike) -> np.ndarray:
    r"""Return the repair-effort multiplier of a cluster of ``nodes``: 1 + alpha log2(nodes).

    Parameters
    ----------
    nodes : array_like
        Nodes (servers) in the job; below one node counts as one. [count]
    per_doubling : array_like
        Extra repair effort per doubling of the node count, :math:`\alpha`. [fraction]

    Returns
    -------
    numpy.ndarray
        Coefficient (1 for a single node). [ratio]

    Examples
    --------
    >>> float(cluster_scale_coefficient(16, 0.1))
    1.4
    """
    n = checks.non_negative(nodes, "nodes")
    a = checks.non_negative(per_doubling, "ops.repair-scale-per-node-doubling")
    return np.asarray(1.0 + a * np.log2(np.maximum(n, 1.0)), dtype=float)


def repair_labour_usd(
    incidents: ArrayLike,
    mttr_staff_h: ArrayLike,
    usd_per_hour: ArrayLike,
    nodes: ArrayLike,
    per_doubling: ArrayLike,
) -> np.ndarray:
    """Failure/repair labour of the cluster-scale model: rate x MTTR x a coefficient of nodes.

    Parameters
    ----------
    incidents : array_like
        Interruptions handled. [count]
    mttr_staff_h : array_like
        Staff hours per interruption on a single node. [h]
    usd_per_hour : array_like
        Loaded hourly labour rate. [USD/h]
    nodes : array_like
        Nodes in the job. [count]
    per_doubling : array_like
        Cluster-scale coefficient per doubling of the nodes. [fraction]

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> round(float(repair_labour_usd(10, 2.0, 100.0, 16, 0.1)), 6)
    2800.0
    """
    base = incident_usd(incidents, mttr_staff_h, usd_per_hour)
    return np.asarray(base * cluster_scale_coefficient(nodes, per_doubling), dtype=float)


def monthly_fee_usd(
    monthly_spend_usd: ArrayLike,
    breaks_usd: ArrayLike,
    rates: ArrayLike,
    minimum_usd_per_month: ArrayLike = 0.0,
) -> np.ndarray:
    r"""Support fee of one month's bill on a provider's tiered schedule, at least the minimum.

    The month's spend is charged rate :math:`r_j` on the part between breaks :math:`b_j` and
    :math:`b_{j+1}` (like tax brackets), and at least the monthly minimum.

    Parameters
    ----------
    monthly_spend_usd : array_like, shape (...)
        The account's bill of the month. [USD/month]
    breaks_usd : array_like, shape (..., K)
        Lower bound of each bracket of the monthly spend, increasing, first 0. [USD/month]
    rates : array_like, shape (..., K)
        Marginal rate of each bracket. [fraction]
    minimum_usd_per_month : array_like, shape (...)
        Minimum monthly fee. [USD/month]

    Returns
    -------
    numpy.ndarray
        Fee of the month. [USD/month]

    Examples
    --------
    >>> b, r = [0, 10e3, 80e3, 250e3], [0.10, 0.07, 0.05, 0.03]
    >>> [round(float(monthly_fee_usd(s, b, r, 100.0)), 2) for s in (500, 5e3, 50e3, 500e3)]
    [100.0, 500.0, 3800.0, 21900.0]
    """
    c = checks.non_negative(monthly_spend_usd, "monthly_spend_usd")
    b = checks.non_negative(breaks_usd, "support.tier-breaks-usd")
    r = checks.fraction(rates, "support.tier-rates")
    lo = checks.non_negative(minimum_usd_per_month, "support.minimum-usd-per-month")
    if b.shape[-1:] != r.shape[-1:] or b.shape[-1] == 0:
        raise InputError(
            "support.tier-breaks-usd", b.tolist(), "one break per rate (as many as the rates)"
        )
    if np.any(np.diff(b, axis=-1) <= 0) or np.any(b[..., 0] != 0):
        raise InputError("support.tier-breaks-usd", b.tolist(), "increasing breaks from 0")
    monthly = c[..., None]
    upper = np.concatenate([b[..., 1:], np.full((*b.shape[:-1], 1), np.inf)], axis=-1)
    in_bracket = np.clip(monthly - b, 0.0, upper - b)
    return np.asarray(np.maximum(np.sum(in_bracket * r, axis=-1), lo), dtype=float)


def tiered_fee_usd(
    spend_usd: ArrayLike,
    months: ArrayLike,
    breaks_usd: ArrayLike,
    rates: ArrayLike,
    minimum_usd_per_month: ArrayLike = 0.0,
) -> np.ndarray:
    r"""Support fee of an account whose whole bill is ``spend_usd`` over ``months`` whole months.

    Each month's spend :math:`C/M` is charged :func:`monthly_fee_usd` (brackets and minimum).
    A job's share of an account's fee is :func:`support_share_usd`.

    Parameters
    ----------
    spend_usd : array_like, shape (...)
        Spend the fee applies to over the whole period. [USD]
    months : array_like, shape (...)
        Billed months the spend is spread over (>= 1: a plan is billed by the month). [months]
    breaks_usd : array_like, shape (..., K)
        Lower bound of each bracket of the monthly spend, increasing, first 0. [USD/month]
    rates : array_like, shape (..., K)
        Marginal rate of each bracket. [fraction]
    minimum_usd_per_month : array_like, shape (...)
        Minimum monthly fee. [USD/month]

    Returns
    -------
    numpy.ndarray
        Fee over the period. [USD]

    Examples
    --------
    >>> b, r = [0, 10e3, 80e3, 250e3], [0.10, 0.07, 0.05, 0.03]
    >>> [round(float(tiered_fee_usd(s, 1, b, r, 100.0)), 2) for s in (500, 5e3, 50e3, 500e3)]
    [100.0, 500.0, 3800.0, 21900.0]
    """
    c = checks.non_negative(spend_usd, "spend_usd")
    m = checks.finite(months, "months")
    if np.any(m < 1.0):
        raise InputError("months", float(np.min(m)), "billed months >= 1")
    fee = monthly_fee_usd(c / m, breaks_usd, rates, minimum_usd_per_month)
    return np.asarray(m * fee, dtype=float)


def support_share_usd(
    spend_usd: ArrayLike,
    months: ArrayLike,
    breaks_usd: ArrayLike,
    rates: ArrayLike,
    minimum_usd_per_month: ArrayLike = 0.0,
    account_other_usd_per_month: ArrayLike = 0.0,
) -> np.ndarray:
    r"""Return a job's share of its account's support fee: its spend at the account's rate.

    Support is billed per account and month (AWS: each member account separately, on the
    month's usage, subject to a monthly minimum). The job runs at :math:`C/M` a month while it
    is held; the account's bill is :math:`A = C/M + A_\mathrm{other}`; the job pays
    :math:`C\,f(A)/A` with :math:`f` the monthly fee (:func:`monthly_fee_usd`). A job held for
    whole months with no other spend pays :func:`tiered_fee_usd`; a short job pays its share of
    the month (at most the account's rate on its spend), not a whole monthly minimum.

    Parameters
    ----------
    spend_usd : array_like, shape (...)
        The job's spend the fee applies to. [USD]
    months : array_like, shape (...)
        Months the job is held (> 0; a fraction for a job shorter than a month). [months]
    breaks_usd, rates, minimum_usd_per_month : array_like
        The provider's schedule, as in :func:`monthly_fee_usd`.
    account_other_usd_per_month : array_like, shape (...)
        The account's other monthly spend, beside this job (0: the account runs this job's
        rate all month). [USD/month]

    Returns
    -------
    numpy.ndarray
        The job's support fee. [USD]

    Examples
    --------
    >>> b, r = [0, 10e3, 80e3, 250e3], [0.10, 0.07, 0.05, 0.03]
    >>> round(float(support_share_usd(50e3, 1.0, b, r, 100.0)), 2)  # a whole month
    3800.0
    >>> round(float(support_share_usd(50.0, 17 / 60 / 730.5, b, r, 100.0)), 2)  # 17 minutes
    3.24
    >>> round(float(support_share_usd(250.0, 0.5, b, r, 100.0)), 2)  # half a month at $500/mo
    50.0
    """
    c = checks.non_negative(spend_usd, "spend_usd")
    m = checks.positive(months, "months")
    other = checks.non_negative(account_other_usd_per_month, "support.account-other-usd-per-month")
    account = c / m + other
    fee = monthly_fee_usd(account, breaks_usd, rates, minimum_usd_per_month)
    rate = np.divide(
        fee, account, out=np.zeros(np.broadcast(fee, account).shape), where=account > 0
    )
    return np.asarray(c * rate, dtype=float)


def support_usd(spend_usd: ArrayLike, fraction_of_spend: ArrayLike) -> np.ndarray:
    """Cloud support plan fee as a share of the spend.

    Parameters
    ----------
    spend_usd : array_like
        Cloud spend the fee applies to. [USD]
    fraction_of_spend : array_like
        Fee as a share of spend. [fraction]

    Returns
    -------
    numpy.ndarray
        Fee. [USD]

    Examples
    --------
    >>> float(support_usd(1000.0, 0.03))
    30.0
    """
    s = checks.non_negative(spend_usd, "spend_usd")
    f = checks.fraction(fraction_of_spend, "support.fraction-of-spend")
    return np.asarray(s * f, dtype=float)
