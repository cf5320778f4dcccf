r"""People: operations staff, incident response, and cloud support fees.

.. math::

    C_\mathrm{ops} = \frac{N}{1000}\,s\,\frac{t}{8766}\,h_\mathrm{FTE}\,w,\qquad
    C_\mathrm{inc} = I\,\mathrm{MTTR}\,w,\qquad
    C_\mathrm{sup} = \varphi\,C_\mathrm{compute}

with :math:`s` operations staff (FTE) per 1,000 accelerators, :math:`t` the hours the cluster is
held, :math:`h_\mathrm{FTE}` working hours of one FTE per year, :math:`w` the loaded hourly rate,
:math:`I` the incidents and :math:`\varphi` the support fee as a share of the cloud bill.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.units import HOURS_PER_YEAR

#: Working hours of one full-time employee per year (40 h x 52 weeks), the US convention used
#: by the US Office of Personnel Management for annual-to-hourly pay (5 U.S.C. 5504).
WORK_HOURS_PER_FTE_YEAR = 2080.0

#: Accelerators per "unit" of the staffing ratio (staff are given per 1,000 accelerators).
GPUS_PER_STAFFING_UNIT = 1000.0


def ops_staff_usd(
    gpus: ArrayLike, hours: ArrayLike, fte_per_1000_gpus: ArrayLike, usd_per_hour: ArrayLike
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

    Returns
    -------
    numpy.ndarray
        Staff cost. [USD]

    Examples
    --------
    >>> round(float(ops_staff_usd(1000, 8766.0, 1.0, 100.0)), 6)
    208000.0
    """
    n = checks.non_negative(gpus, "gpus")
    h = checks.non_negative(hours, "hours")
    s = checks.non_negative(fte_per_1000_gpus, "ops.fte-per-1000-gpus")
    w = checks.non_negative(usd_per_hour, "labour.usd-per-hour")
    fte = n / GPUS_PER_STAFFING_UNIT * s
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
