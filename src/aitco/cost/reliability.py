r"""Reliability and goodput: failures, checkpoints, restarts, downtime.

A synchronous training job on :math:`N` accelerators is interrupted at the rate
:math:`\Lambda = \lambda N + \sigma n` per wall-clock hour (hardware/software failures at
:math:`\lambda` per accelerator-hour, spot preemptions at :math:`\sigma` per instance-hour on
:math:`n` instances). Each interruption loses on average half a checkpoint interval of work,
:math:`\tau/2` (capped at :math:`P/2`: no more than the work done), plus the restart and
re-queue time :math:`R`. Checkpoints stall the job for
:math:`\delta` each (sync) or a fraction of it (async), and firmware/driver updates take the
cluster down :math:`\phi` of the time. The wall-clock time :math:`W` to finish :math:`P` hours of
productive compute solves

.. math::

    W = P + \frac{P}{\tau}\delta_\mathrm{eff} + \Lambda W\left(\frac{\tau}{2} + R\right) + \phi W
    \;\Rightarrow\;
    W = \frac{P\,(1 + \delta_\mathrm{eff}/\tau)}{1 - \Lambda(\tau/2 + R) - \phi}

and the goodput is :math:`P/W`. The optimal interval is Young's :math:`\sqrt{2\delta M}` with
Daly's correction, :math:`M = 1/\Lambda` the job's mean time between interruptions.

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval",
   Commun. ACM 17(9), 1974, doi:10.1145/361147.361115.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", Future Gener. Comput. Syst. 22(3), 2006, doi:10.1016/j.future.2004.11.016.
.. [3] Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, Table 5.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.errors import InputError
from aitco.units import GIGA, HOURS_PER_YEAR, SECONDS_PER_HOUR

#: Bytes per parameter of a full mixed-precision Adam checkpoint: bf16 weights (2) + fp32 master
#: weights (4) + Adam first and second moments (4 + 4). Gradients are not saved. Rajbhandari et
#: al., "ZeRO", SC20, doi:10.1109/SC41405.2020.00024 (16 B/param of model states incl. 2 B grads).
CHECKPOINT_BYTES_PER_PARAM_ADAM = 14.0


def job_interruption_rate_per_h(
    failure_rate_per_gpu_h: ArrayLike,
    gpus: ArrayLike,
    spot_rate_per_instance_h: ArrayLike = 0.0,
    instances: ArrayLike = 0.0,
) -> np.ndarray:
    r"""Interruptions per wall-clock hour of a synchronous job.

    Parameters
    ----------
    failure_rate_per_gpu_h : array_like
        Job-interrupting failures per accelerator-hour. [1/(GPU h)]
    gpus : array_like
        Accelerators in the job. [count]
    spot_rate_per_instance_h : array_like
        Spot preemptions per instance-hour. [1/h]
    instances : array_like
        Instances (nodes) in the job. [count]

    Returns
    -------
    numpy.ndarray
        :math:`\Lambda = \lambda N + \sigma n`. [1/h]

    Examples
    --------
    >>> float(job_interruption_rate_per_h(1e-4, 1000))
    0.1
    """
    lam = checks.non_negative(failure_rate_per_gpu_h, "failure.interruptions-per-gpu-hour")
    n = checks.non_negative(gpus, "gpus")
    sig = checks.non_negative(spot_rate_per_instance_h, "spot-interruption.per-hour")
    k = checks.non_negative(instances, "instances")
    return np.asarray(lam * n + sig * k, dtype=float)


def optimal_checkpoint_interval_h(save_time_h: ArrayLike, mtbf_h: ArrayLike) -> np.ndarray:
    r"""Optimal checkpoint interval (Young 1974 with Daly 2006's correction).

    Parameters
    ----------
    save_time_h : array_like
        Time to write one checkpoint, :math:`\delta`. [h]
    mtbf_h : array_like
        Mean time between interruptions of the job, :math:`M` (inf when none). [h]

    Returns
    -------
    numpy.ndarray
        :math:`\tau = \sqrt{2\delta M} - \delta` for :math:`\delta < 2M`, else :math:`M`. [h]
        Infinite when the job is never interrupted.

    Examples
    --------
    >>> round(float(optimal_checkpoint_interval_h(0.01, 50.0)), 4)
    0.99
    """
    d = checks.non_negative(save_time_h, "checkpoint.save_time_h")
    m = np.asarray(mtbf_h, dtype=float)
    if np.any(np.isnan(m)) or np.any(m <= 0):
        raise InputError(
            "mtbf_h", m.tolist(), "a positive mean time between interruptions (inf allowed)"
        )
    with np.errstate(invalid="ignore", over="ignore"):
        young = np.sqrt(2.0 * d * m) - d
    out = np.where(d < 2.0 * m, young, m)
    out = np.where(np.isinf(m), np.inf, out)
    return np.asarray(out, dtype=float)


def checkpoint_save_time_h(
    checkpoint_bytes: ArrayLike, write_bandwidth_gb_s_per_node: ArrayLike, nodes: ArrayLike
) -> np.ndarray:
    r"""Time to write a sharded checkpoint, all nodes writing in parallel.

    Used until the training engine provides ``aitco.perf.training.checkpoint_save_time_s``.

    Parameters
    ----------
    checkpoint_bytes : array_like
        Size of one checkpoint. [B]
    write_bandwidth_gb_s_per_node : array_like
        Sustained write bandwidth of one node to the checkpoint store. [GB/s]
    nodes : array_like
        Nodes writing their shards in parallel. [count]

    Returns
    -------
    numpy.ndarray
        :math:`\delta = B / (n\,b)`. [h]

    Examples
    --------
    >>> float(checkpoint_save_time_h(36e9, 1.0, 10))
    0.001
    """
    b = checks.non_negative(checkpoint_bytes, "checkpoint_bytes")
    bw = checks.positive(write_bandwidth_gb_s_per_node, "checkpoint.write-gb-s-per-node")
    n = checks.positive(nodes, "nodes")
    return np.asarray(b / (bw * GIGA * n) / SECONDS_PER_HOUR, dtype=float)


def require_checkpoint_interval(
    interval_h: ArrayLike, interruption_rate_per_h: ArrayLike, field: str
) -> np.ndarray:
    """Check that a job with interruptions has a checkpoint interval.

    Parameters
    ----------
    interval_h : array_like
        Checkpoint interval; NaN or <= 0 means "no checkpoints". [h]
    interruption_rate_per_h : array_like
        Interruptions per hour of the job (spot preemptions or failures). [1/h]
    field : str
        Field named in the error.

    Returns
    -------
    numpy.ndarray
        The interval. [h]

    Raises
    ------
    InputError
        When an interruption rate is given without a checkpoint interval: every interruption
        would restart the job from the beginning.
    """
    tau = np.asarray(interval_h, dtype=float)
    rate = np.asarray(interruption_rate_per_h, dtype=float)
    missing = np.isnan(tau) | (tau <= 0)
    if np.any(missing & (rate > 0)):
        raise InputError(
            field,
            None,
            "a checkpoint interval (hours > 0) when an interruption rate is given",
            hint="set ops.checkpointing: optimal, or workload.checkpoint_interval_h",
        )
    return tau


def goodput_overheads(
    productive_h: ArrayLike,
    interruption_rate_per_h: ArrayLike,
    checkpoint_interval_h: ArrayLike,
    checkpoint_save_time_h: ArrayLike,
    restart_h: ArrayLike,
    firmware_downtime_fraction: ArrayLike = 0.0,
    async_stall_fraction: ArrayLike = 1.0,
) -> dict[str, np.ndarray]:
    r"""Wall-clock time of a job and its overheads (module equation).

    Parameters
    ----------
    productive_h : array_like
        Wall-clock hours of useful compute at the modelled throughput, :math:`P`. [h]
    interruption_rate_per_h : array_like
        :math:`\Lambda`, interruptions per wall-clock hour. [1/h]
    checkpoint_interval_h : array_like
        :math:`\tau` (inf: no interruptions, no checkpoints needed). [h]
    checkpoint_save_time_h : array_like
        :math:`\delta` for a synchronous save. [h]
    restart_h : array_like
        :math:`R`, restart and re-queue time per interruption. [h]
    firmware_downtime_fraction : array_like
        :math:`\phi`, share of the time the cluster is down for firmware/driver updates. [fraction]
    async_stall_fraction : array_like
        Share of :math:`\delta` the job stalls per checkpoint (1 = synchronous). [fraction]

    Returns
    -------
    dict of numpy.ndarray
        ``wall_clock_h`` (:math:`W`), ``goodput`` (:math:`P/W`), ``interruptions``
        (:math:`\Lambda W`), and the lost hours ``rework_h`` (:math:`\Lambda W \tau/2`),
        ``restart_h`` (:math:`\Lambda W R`), ``checkpoint_stall_h`` (:math:`P\delta_e/\tau`),
        ``firmware_h`` (:math:`\phi W`). [h]

    Raises
    ------
    InputError
        When the overheads take all the time (the job would never finish).

    Examples
    --------
    >>> o = goodput_overheads(100.0, 0.0, np.inf, 0.0, 0.5)
    >>> float(o["wall_clock_h"]), float(o["goodput"])
    (100.0, 1.0)
    >>> o = goodput_overheads(100.0, 0.01, 2.0, 0.02, 0.5)
    >>> round(float(o["wall_clock_h"]), 3)
    102.538
    """
    p = checks.non_negative(productive_h, "productive_h")
    lam = checks.non_negative(interruption_rate_per_h, "interruption_rate_per_h")
    tau = np.asarray(checkpoint_interval_h, dtype=float)
    require_checkpoint_interval(tau, lam, "checkpoint_interval_h")
    d = checks.non_negative(checkpoint_save_time_h, "checkpoint.save_time_h")
    r = checks.non_negative(restart_h, "restart.hours")
    phi = checks.fraction(firmware_downtime_fraction, "firmware.downtime_fraction", open_high=True)
    a = checks.fraction(async_stall_fraction, "checkpoint.async-stall-fraction")
    with np.errstate(invalid="ignore", divide="ignore"):
        # an interruption cannot lose more than the work done: at most half the job on average
        half_tau = np.where(lam > 0, np.minimum(tau, p) / 2.0, 0.0)
        stall_per_h = np.where(np.isfinite(tau) & (tau > 0), d * a / tau, 0.0)
    lost_share = lam * (half_tau + r) + phi
    if np.any(lost_share >= 1.0):
        raise InputError(
            "interruption_rate_per_h",
            float(np.max(lam)),
            "a rate at which the job can progress (lost share of time < 1)",
            hint="interrupted faster than it can recover; lower the rate or the restart time",
        )
    stall = p * stall_per_h
    w = (p + stall) / (1.0 - lost_share)
    n_int = lam * w
    with np.errstate(invalid="ignore", divide="ignore"):
        goodput = np.where(w > 0, p / w, 1.0)
    return {
        "wall_clock_h": np.asarray(w, dtype=float),
        "goodput": np.asarray(goodput, dtype=float),
        "interruptions": np.asarray(n_int, dtype=float),
        "rework_h": np.asarray(n_int * half_tau, dtype=float),
        "restart_h": np.asarray(n_int * r, dtype=float),
        "checkpoint_stall_h": np.asarray(stall, dtype=float),
        "firmware_h": np.asarray(phi * w, dtype=float),
    }


def firmware_downtime_fraction(hours_per_year: ArrayLike) -> np.ndarray:
    """Share of the time a cluster is down for firmware/driver updates.

    Parameters
    ----------
    hours_per_year : array_like
        Planned downtime per year. [h/year]

    Returns
    -------
    numpy.ndarray
        Downtime share. [fraction]

    Examples
    --------
    >>> round(float(firmware_downtime_fraction(87.66)), 6)
    0.01
    """
    h = checks.non_negative(hours_per_year, "firmware.downtime-hours-per-year")
    return np.asarray(np.minimum(h / HOURS_PER_YEAR, 1.0), dtype=float)


def fragmentation_idle_h(allocated_busy_h: ArrayLike, idle_fraction: ArrayLike) -> np.ndarray:
    r"""Idle allocated hours from scheduling fragmentation.

    Parameters
    ----------
    allocated_busy_h : array_like
        Accelerator-hours the job holds. [GPU h]
    idle_fraction : array_like
        Share of allocated capacity left idle by fragmentation, :math:`f`. [fraction, < 1]

    Returns
    -------
    numpy.ndarray
        Extra paid idle accelerator-hours, :math:`H f/(1-f)`. [GPU h]

    Examples
    --------
    >>> float(fragmentation_idle_h(80.0, 0.2))
    20.0
    """
    h = checks.non_negative(allocated_busy_h, "gpu_hours")
    f = checks.fraction(idle_fraction, "fragmentation.idle-fraction", open_high=True)
    return np.asarray(h * f / (1.0 - f), dtype=float)
