r"""Data and compliance: acquisition, cleaning, labelling, storage, transfer, retention.

Each item is a price times a quantity, so every one is linear in its price. Retention integrates
the stored volume over the period: with :math:`g` GB/day kept :math:`R` days over a period of
:math:`D` days, the stored volume ramps up to :math:`gR` and then stays there:

.. math::

    \mathrm{GB\cdot days} = g\left(\tfrac{1}{2}\min(D,R)^2 + R\max(D-R, 0)\right)

That is the storage paid *within* the period. What a run commits to is more: every day's volume
is kept the whole retention period, also after the run ends, so the committed cost is

.. math::

    C_\mathrm{ret} = g\,D\,\frac{R}{30.44}\,p,\qquad C_\mathrm{audit} = h_\mathrm{audit}\,w

(GB produced x retention months x $/GB-month), plus the audit hours at the loaded labour rate.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.errors import InputError
from aitco.units import DAYS_PER_MONTH


def per_unit_usd(quantity: ArrayLike, usd_per_unit: ArrayLike, field: str) -> np.ndarray:
    """Return a quantity times its unit price (cleaning/TB, labelling/item, transfer/GB).

    Parameters
    ----------
    quantity : array_like
        Quantity (TB, items, GB). [unit]
    usd_per_unit : array_like
        Price per unit. [USD/unit]
    field : str
        Name of the price, used in errors.

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> float(per_unit_usd(10.0, 0.5, "transfer.usd-per-gb"))
    5.0
    """
    q = checks.non_negative(quantity, f"{field}.quantity")
    p = checks.non_negative(usd_per_unit, field)
    return np.asarray(q * p, dtype=float)


def storage_usd(gb: ArrayLike, months: ArrayLike, usd_per_gb_month: ArrayLike) -> np.ndarray:
    """Storage of a constant volume for a period.

    Parameters
    ----------
    gb : array_like
        Volume stored. [GB]
    months : array_like
        Period. [months]
    usd_per_gb_month : array_like
        Storage price. [USD/(GB month)]

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> float(storage_usd(1000.0, 2.0, 0.023))
    46.0
    """
    v = checks.non_negative(gb, "storage_gb")
    m = checks.non_negative(months, "months")
    p = checks.non_negative(usd_per_gb_month, "storage.usd-per-gb-month")
    return np.asarray(v * m * p, dtype=float)


def retention_usd(
    gb_per_day: ArrayLike,
    retention_days: ArrayLike,
    period_days: ArrayLike,
    usd_per_gb_month: ArrayLike,
) -> np.ndarray:
    """Cost of keeping logs/data ``retention_days`` while producing ``gb_per_day`` for a period.

    Parameters
    ----------
    gb_per_day : array_like
        Volume produced per day. [GB/day]
    retention_days : array_like
        How long each day's volume is kept. [days]
    period_days : array_like
        Period priced. [days]
    usd_per_gb_month : array_like
        Storage price. [USD/(GB month)]

    Returns
    -------
    numpy.ndarray
        Cost over the period (module equation). [USD]

    Examples
    --------
    >>> round(float(retention_usd(1.0, 30.0, 60.0, 30.4375)), 6)  # 1,350 GB-days
    1350.0
    """
    g = checks.non_negative(gb_per_day, "compliance.gb_per_day")
    r = checks.non_negative(retention_days, "compliance.retention_days")
    d = checks.non_negative(period_days, "period_days")
    p = checks.non_negative(usd_per_gb_month, "storage.usd-per-gb-month")
    gb_days = g * (0.5 * np.minimum(d, r) ** 2 + r * np.maximum(d - r, 0.0))
    return np.asarray(gb_days / DAYS_PER_MONTH * p, dtype=float)


def retention_committed_usd(
    gb_per_day: ArrayLike,
    retention_days: ArrayLike,
    period_days: ArrayLike,
    usd_per_gb_month: ArrayLike,
) -> np.ndarray:
    """Cost of keeping every day's volume of a period for its whole retention period.

    Parameters
    ----------
    gb_per_day : array_like
        Volume produced per day. [GB/day]
    retention_days : array_like
        How long each day's volume is kept. [days]
    period_days : array_like
        Days the run produces the volume. [days]
    usd_per_gb_month : array_like
        Storage price. [USD/(GB month)]

    Returns
    -------
    numpy.ndarray
        GB produced x retention months x price (module equation). [USD]

    Examples
    --------
    >>> # 1 GB/day for 10 days kept 7 years (2,556.75 days): 840 GB-months
    >>> round(float(retention_committed_usd(1.0, 7 * 365.25, 10.0, 1.0)), 6)
    840.0
    """
    g = checks.non_negative(gb_per_day, "compliance.gb_per_day")
    r = checks.non_negative(retention_days, "compliance.retention_days")
    d = checks.non_negative(period_days, "period_days")
    p = checks.non_negative(usd_per_gb_month, "storage.usd-per-gb-month")
    return np.asarray(g * d * (r / DAYS_PER_MONTH) * p, dtype=float)


def audit_labour_usd(audit_hours: ArrayLike, usd_per_hour: ArrayLike) -> np.ndarray:
    """Staff time of audits and evidence requests over the records' retention.

    Parameters
    ----------
    audit_hours : array_like
        Staff hours of audit work the run's records require. [h]
    usd_per_hour : array_like
        Loaded hourly labour rate. [USD/h]

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> float(audit_labour_usd(40.0, 100.0))
    4000.0
    """
    h = checks.non_negative(audit_hours, "compliance.audit_hours")
    w = checks.non_negative(usd_per_hour, "labour.usd-per-hour")
    return np.asarray(h * w, dtype=float)


def tiered_transfer_usd(
    gb: ArrayLike,
    months: ArrayLike,
    breaks_gb: ArrayLike,
    usd_per_gb: ArrayLike,
) -> np.ndarray:
    r"""Transfer priced by a provider's monthly volume tiers (internet egress), spread over months.

    Each month's volume :math:`V/M` pays rate :math:`p_j` on the part between breaks :math:`b_j`
    and :math:`b_{j+1}` (like tax brackets: a free allowance is a first tier at 0 USD/GB), so

    .. math::

        C = M \sum_j p_j \,\mathrm{clip}\!\left(\frac{V}{M} - b_j,\ 0,\ b_{j+1} - b_j\right)

    Parameters
    ----------
    gb : array_like, shape (...)
        Volume transferred over the whole period. [GB]
    months : array_like, shape (...)
        Billed months the volume is spread over (>= 1: tiers reset each month). [months]
    breaks_gb : array_like, shape (K,)
        Lower bound of each tier of the monthly volume, increasing, first 0. [GB/month]
    usd_per_gb : array_like, shape (K,)
        Price of each tier. [USD/GB]

    Returns
    -------
    numpy.ndarray
        Cost over the period. [USD]

    Examples
    --------
    >>> b, p = [0, 100, 10240, 51200, 153600], [0.0, 0.09, 0.085, 0.07, 0.05]
    >>> [round(float(tiered_transfer_usd(v, 1, b, p)), 2) for v in (50, 1100, 20480)]
    [0.0, 90.0, 1783.0]
    """
    v = checks.non_negative(gb, "transfer.gb")
    m = checks.finite(months, "months")
    if np.any(m < 1.0):
        raise InputError("months", float(np.min(m)), "billed months >= 1")
    b = checks.non_negative(breaks_gb, "transfer.tier-breaks-gb")
    p = checks.non_negative(usd_per_gb, "transfer.tier-usd-per-gb")
    if b.ndim != 1 or b.shape != p.shape or b.size == 0:
        raise InputError("transfer.tier-breaks-gb", b.tolist(), "one break per tier price")
    if np.any(np.diff(b) <= 0) or b[0] != 0:
        raise InputError("transfer.tier-breaks-gb", b.tolist(), "increasing breaks from 0")
    monthly = (v / m)[..., None]
    upper = np.append(b[1:], np.inf)
    in_tier = np.clip(monthly - b, 0.0, upper - b)
    return np.asarray(m * np.sum(in_tier * p, axis=-1), dtype=float)
