r"""Rented compute: on-demand, committed (1y/3y) and spot accelerator-hours.

Rental cost is price x accelerator-hours held. Spot adds preemptions: each interruption loses
the work since the last checkpoint (half an interval on average) plus the restart time, which
:func:`aitco.cost.reliability.goodput_overheads` turns into extra held hours.

.. math:: C = p \cdot N \cdot W, \qquad I_\mathrm{spot} = \sigma\,n\,W
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.cost.reliability import require_checkpoint_interval


def rental_usd(gpu_hours: ArrayLike, usd_per_gpu_hour: ArrayLike) -> np.ndarray:
    """Rental cost of accelerator-hours.

    Parameters
    ----------
    gpu_hours : array_like
        Accelerator-hours held. [GPU h]
    usd_per_gpu_hour : array_like
        Price per accelerator-hour for the pricing mode. [USD/(GPU h)]

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> float(rental_usd(100.0, 2.5))
    250.0
    """
    h = checks.non_negative(gpu_hours, "gpu_hours")
    p = checks.non_negative(usd_per_gpu_hour, "usd_per_gpu_hour")
    return np.asarray(h * p, dtype=float)


def spot_interruptions(
    rate_per_instance_h: ArrayLike,
    instances: ArrayLike,
    wall_clock_h: ArrayLike,
    checkpoint_interval_h: ArrayLike,
) -> np.ndarray:
    r"""Return the expected spot preemptions of a job, :math:`\sigma n W`.

    Parameters
    ----------
    rate_per_instance_h : array_like
        Preemptions per instance-hour (catalog ``spot-interruption.per-hour.<provider>``). [1/h]
    instances : array_like
        Instances the job runs on. [count]
    wall_clock_h : array_like
        Wall-clock duration. [h]
    checkpoint_interval_h : array_like
        Checkpoint interval; required (> 0) whenever the rate is > 0. [h]

    Returns
    -------
    numpy.ndarray
        Expected preemptions. [count]

    Raises
    ------
    InputError
        A spot interruption rate without a checkpoint interval.

    Examples
    --------
    >>> float(spot_interruptions(0.01, 4, 100.0, 1.0))
    4.0
    """
    s = checks.non_negative(rate_per_instance_h, "spot-interruption.per-hour")
    n = checks.non_negative(instances, "instances")
    w = checks.non_negative(wall_clock_h, "wall_clock_h")
    require_checkpoint_interval(checkpoint_interval_h, s, "checkpoint_interval_h")
    return np.asarray(s * n * w, dtype=float)
