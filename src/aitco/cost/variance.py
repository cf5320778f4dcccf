r"""Cost variances: a billed amount against a predicted one, split into causes that add up.

Standard-costing variances (price and quantity variance, e.g. Horngren, *Cost Accounting: A
Managerial Emphasis*, ch. 7): with predicted quantity :math:`Q_p` at price :math:`P_p` and
billed quantity :math:`Q_b` at the billed unit price :math:`P_b = C_b / Q_b`,

.. math::

    C_b - Q_p P_p = \underbrace{(P_b - P_p)\,Q_b}_{\text{price}}
                  + \underbrace{(Q_b - Q_p)\,P_p}_{\text{usage}}

exactly. The usage variance of accelerator hours is split further, in a stated order, by causes
measured in the run's logs (:func:`training_usage_split`); what the measured causes leave is the
*unexplained* part. :func:`close_identity` makes the final sum exact in floating point.

Every function is pure and takes scalars or NumPy arrays of one shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: Order of the usage causes of a training run's accelerator hours (the split is sequential).
TRAINING_CAUSES = (
    "slower_steps",
    "restarts_lost_work",
    "idle_waiting",
    "more_instances_longer_period",
)
#: Usage causes of a service month's accelerator hours, in table order (each is defined directly;
#: together they are the whole usage variance).
SERVING_CAUSES = (
    "higher_load",
    "slower_serving",
    "lower_utilization",
    "more_replicas",
    "longer_period",
)
#: Steps of ``math.nextafter`` tried to make the float sum exact (each moves one ulp).
MAX_ULP_STEPS = 64


def price_variance_usd(billed_usd: Any, billed_qty: Any, predicted_price: Any) -> np.ndarray:
    """Return the price variance ``(P_b - P_p) Q_b = C_b - P_p Q_b`` [USD]."""
    return np.asarray(
        np.asarray(billed_usd, dtype=float) - np.asarray(predicted_price) * billed_qty, dtype=float
    )


def usage_variance_usd(billed_qty: Any, predicted_qty: Any, predicted_price: Any) -> np.ndarray:
    """Return the usage (quantity) variance ``(Q_b - Q_p) P_p`` [USD]."""
    return np.asarray(
        (np.asarray(billed_qty, dtype=float) - predicted_qty) * predicted_price, dtype=float
    )


def unit_price(usd: Any, qty: Any) -> np.ndarray:
    """Return the average unit price ``usd / qty`` [USD/unit] (NaN where the quantity is 0)."""
    q = np.asarray(qty, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(q != 0, np.asarray(usd, dtype=float) / q, math.nan))


def training_usage_split(
    *,
    gpus: Any,
    predicted_productive_h: Any,
    predicted_overhead_gpu_h: Any,
    predicted_idle_gpu_h: Any,
    productive_plan_h: Any,
    extra_work_h: Any,
    lost_h: Any,
    idle_outside_h: Any,
    excess_gpu_h: Any,
) -> dict[str, np.ndarray]:
    r"""Split the accelerator-hour usage variance of a training run into measured causes.

    In this order, each in accelerator-hours (``G`` = the run's accelerators):

    1. ``slower_steps`` = :math:`G\,(S_{plan} - S_{pred})`: the planned work at the measured
       time per step against the predicted productive hours;
    2. ``restarts_lost_work`` = :math:`G\,L - O_{pred}`: steps redone after restarts and gaps
       in the job (downtime, hangs) against the predicted reliability overheads;
    3. ``idle_waiting`` = :math:`G\,I - I_{pred}`: accelerators billed and idle outside the job
       (telemetry idle time not already inside the job's gaps) against predicted idle items;
    4. ``more_instances_longer_period`` = :math:`E + G\,W`: accelerator-hours billed above
       ``G`` at once (more instances than planned) plus work beyond the plan.

    Parameters
    ----------
    gpus : int
        Accelerators of the run. [count]
    predicted_productive_h : float
        Predicted productive wall clock. [h]
    predicted_overhead_gpu_h : float
        Predicted reliability overheads (rework, restarts, stalls, downtime). [GPU-h]
    predicted_idle_gpu_h : float
        Predicted idle items (idle accelerators of whole instances, fragmentation). [GPU-h]
    productive_plan_h : float
        The planned work at the measured speed. [h]
    extra_work_h : float
        Time of the work done beyond the plan. [h]
    lost_h : float
        Redone steps and gaps within the job. [h]
    idle_outside_h : float
        Idle billed time outside the job, per accelerator. [h]
    excess_gpu_h : float
        Accelerator-hours billed above ``gpus`` at once. [GPU-h]

    Returns
    -------
    dict of str to numpy.ndarray
        One entry per cause of :data:`TRAINING_CAUSES`. [GPU-h]
    """
    g = np.asarray(gpus, dtype=float)
    return {
        "slower_steps": np.asarray(g * (np.asarray(productive_plan_h) - predicted_productive_h)),
        "restarts_lost_work": np.asarray(g * lost_h - np.asarray(predicted_overhead_gpu_h)),
        "idle_waiting": np.asarray(g * idle_outside_h - np.asarray(predicted_idle_gpu_h)),
        "more_instances_longer_period": np.asarray(np.asarray(excess_gpu_h) + g * extra_work_h),
    }


def load_gpu_h(
    predicted_gpus: float, covered_h: Any, load_per_s: Any, planned_load_per_s: float
) -> np.ndarray:
    r"""Return :math:`N_s = G\,\lambda_s c_s / \lambda_p`: the plan's sizing of an observed load.

    The accelerator-hours the plan's accelerators per unit of load (at its utilisation) give the
    load :math:`\lambda_s` over :math:`c_s` hours (0 without a planned rate). [GPU-h]
    """
    c = np.asarray(covered_h, dtype=float)
    if not planned_load_per_s > 0:
        return np.zeros_like(c)
    return np.asarray(predicted_gpus * np.asarray(load_per_s, dtype=float) * c / planned_load_per_s)


def covered_gpu_h(period_h: Any, period_gpu_h: Any, covered_h: Any) -> np.ndarray:
    """Return the accelerator-hours billed in the covered part of each charge period. [GPU-h]."""
    d = np.asarray(period_h, dtype=float)
    share = np.divide(np.asarray(covered_h, dtype=float), d, out=np.zeros_like(d), where=d > 0)
    return np.asarray(np.asarray(period_gpu_h, dtype=float) * share)


def serving_usage_split(
    *,
    predicted_gpus: float,
    predicted_h: float,
    billed_span_h: float,
    period_h: Any,
    period_gpu_h: Any,
    covered_h: Any,
    load_per_s: Any,
    planned_load_per_s: float,
    capacity_ratio: float = 1.0,
) -> dict[str, float]:
    r"""Split the accelerator-hour usage variance of a service month into measured causes.

    With :math:`G` the predicted accelerators (mean over the period), :math:`H_p` the predicted
    hours, :math:`\lambda_p` the planned arrival rate and, per charge period :math:`s` of the
    bill, its hours :math:`d_s`, accelerator-hours billed :math:`B_s`, hours covered by the load
    evidence :math:`c_s` and the observed arrival rate :math:`\lambda_s` over them; with
    :math:`r = \mu_p / \mu_m` the predicted over the measured capacity per accelerator
    (1 without a benchmark) and :math:`N_s = G\,\lambda_s c_s / \lambda_p` the
    accelerator-hours the plan's sizing (its accelerators per unit of load, at its utilisation)
    gives the observed load:

    * ``higher_load`` :math:`= \sum_s (N_s - G c_s)`: load above (below) the plan;
    * ``slower_serving`` :math:`= \sum_s N_s (r - 1)`: the same load at the measured capacity;
    * ``lower_utilization`` :math:`= \sum_s (B_s c_s / d_s - r N_s)`: accelerators billed
      beyond what the observed load needed at the plan's utilisation (idle capacity);
    * ``more_replicas`` :math:`= \sum_s B_s (1 - c_s/d_s) - G (T - \sum_s c_s)`: accelerators
      above the plan in the hours the load evidence does not cover (all of them without it);
    * ``longer_period`` :math:`= G (T - H_p)`: a billed span :math:`T` longer than planned.

    They add up to :math:`\sum_s B_s - G H_p`, the usage variance in accelerator-hours.

    Parameters
    ----------
    predicted_gpus, predicted_h : float
        :math:`G` [count] and :math:`H_p` [h].
    billed_span_h : float
        :math:`T`, from the first to the last charge period billed. [h]
    period_h, period_gpu_h, covered_h, load_per_s : array_like
        Per charge period: :math:`d_s` [h], :math:`B_s` [GPU-h], :math:`c_s` [h] and
        :math:`\lambda_s` [requests/s].
    planned_load_per_s : float
        :math:`\lambda_p` (0: no load split, everything is ``more_replicas``). [requests/s]
    capacity_ratio : float
        :math:`r`. [-]

    Returns
    -------
    dict of str to float
        One entry per cause of :data:`SERVING_CAUSES`. [GPU-h]
    """
    d = np.asarray(period_h, dtype=float)
    b = np.asarray(period_gpu_h, dtype=float)
    c = np.asarray(covered_h, dtype=float) if planned_load_per_s > 0 else np.zeros_like(d)
    g = float(predicted_gpus)
    need = load_gpu_h(g, c, load_per_s, planned_load_per_s)
    b_cov = covered_gpu_h(d, b, c)
    return {
        "higher_load": float(np.sum(need - g * c)),
        "slower_serving": float(np.sum(need) * (capacity_ratio - 1.0)),
        "lower_utilization": float(np.sum(b_cov - capacity_ratio * need)),
        "more_replicas": float(np.sum(b - b_cov) - g * (billed_span_h - np.sum(c))),
        "longer_period": g * (billed_span_h - predicted_h),
    }


def idle_outside_job_h(
    telemetry_idle_h: float,
    telemetry_busy_h: float,
    stepped_h: float,
    gaps_h: float,
) -> float:
    r"""Return the idle time per accelerator outside the job's gaps (counted as lost work).

    Telemetry has no timestamps to align with the log, so the idle time inside the gaps is
    estimated from the busy time: busy time beyond the logged steps fell inside the gaps (work
    done and lost before a crash), the rest of the gaps was idle:

    .. math:: I_{out} = I - \left(T_{gaps} - \mathrm{clip}(B - S, 0, T_{gaps})\right)

    with telemetry idle :math:`I` and busy :math:`B` time and logged step time :math:`S`
    (kept and redone), all per accelerator; floored at 0.
    """
    busy_in_gaps = min(max(telemetry_busy_h - stepped_h, 0.0), max(gaps_h, 0.0))
    idle_in_gaps = max(gaps_h, 0.0) - busy_in_gaps
    return max(telemetry_idle_h - idle_in_gaps, 0.0)


def excess_gpu_hours(slots: dict[tuple[str, str], float], slot_hours: Any, gpus: float) -> float:
    """Return the accelerator-hours billed above ``gpus`` at once [GPU-h], period by period.

    Parameters
    ----------
    slots : dict
        Accelerator-hours billed per ``(start, end)`` charge period. [GPU-h]
    slot_hours : callable
        ``(start, end) -> hours`` of a charge period (None when unreadable).
    gpus : float
        Accelerators planned. [count]
    """
    out = 0.0
    for (start, end), gh in slots.items():
        h = slot_hours(start, end)
        if h:
            out += max(gh - gpus * h, 0.0)
    return out


def exact_ledger(
    predicted: float, variances: Sequence[float], billed: float
) -> tuple[float, list[float], float, float]:
    """Put the amounts on one binary grid so that ``predicted + variances + unexplained == billed``.

    Floating-point addition is exact when every amount is a multiple of one power of two ``q``
    and every partial sum stays below ``2**53 q``: then the sum is the same in any order, naive,
    compensated (Python 3.12 ``sum``) or ``math.fsum``. The grid is the ulp of ``predicted``
    when ``billed`` lies on it and the partial sums fit (``predicted`` is then returned
    unchanged); otherwise the ulp of the largest possible partial sum (each amount moves by less
    than one part in 2**52 of the total).

    Returns
    -------
    tuple
        ``(predicted, variances, billed, unexplained)`` on the grid; ``unexplained`` is what
        the variances leave of ``billed - predicted``.
    """
    vs = [float(v) for v in variances]
    rest = billed - predicted - math.fsum(vs)
    amounts = [predicted, *vs, rest]
    bound = max(
        math.fsum(a for a in amounts if a > 0), -math.fsum(a for a in amounts if a < 0), 1e-300
    )
    q = math.ulp(predicted) if predicted else 0.0
    if not (q and bound < 2.0**53 * q and math.fmod(billed, q) == 0.0):
        q = 2.0 ** (math.frexp(bound * (1 + 2**-50))[1] - 52)

    def on_grid(x: float) -> float:
        return round(x / q) * q

    p, b = on_grid(predicted), on_grid(billed)
    gv = [on_grid(v) for v in vs]
    u = b - p
    for v in gv:
        u -= v  # exact: every term and partial sum is a multiple of q below 2**53 q
    return p, gv, b, u


def close_identity(predicted: float, variances: Sequence[float], billed: float) -> float:
    """Return ``u`` with ``predicted + v1 + ... + u == billed`` in a left-to-right float sum.

    Use :func:`exact_ledger` where the sum may be taken in any order.
    """
    s = predicted
    for v in variances:
        s += v
    u = billed - s
    for _ in range(MAX_ULP_STEPS):
        got = s + u
        if got == billed:
            return u
        u = math.nextafter(u, math.inf if got < billed else -math.inf)
    return u
