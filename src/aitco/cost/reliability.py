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

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.cost.factors import CostFactors
from aitco.errors import InputError
from aitco.perf.training import checkpoint_bytes, checkpoint_save_time_s
from aitco.units import HOURS_PER_YEAR, SECONDS_PER_HOUR


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


def checkpoint_save_h(
    trainable_params: ArrayLike, write_bandwidth_gb_s_per_node: ArrayLike, nodes: ArrayLike
) -> np.ndarray:
    r"""Time to write one checkpoint of a job, all its nodes writing their shards in parallel.

    Parameters
    ----------
    trainable_params : array_like
        Parameters whose weights and optimizer states are saved (the model, or the LoRA
        adapters). [count]
    write_bandwidth_gb_s_per_node : array_like
        Sustained write bandwidth of one node to the checkpoint store. [GB/s]
    nodes : array_like
        Nodes writing in parallel. [count]

    Returns
    -------
    numpy.ndarray
        :math:`\delta` = :func:`aitco.perf.training.checkpoint_save_time_s` of the parameters
        over the nodes' aggregate bandwidth. [h]

    Examples
    --------
    >>> round(float(checkpoint_save_h(1.02e9, 2.0, 8)) * 3600, 4)
    0.8925
    """
    bw = checks.positive(write_bandwidth_gb_s_per_node, "checkpoint.write-gb-s-per-node")
    n = checks.positive(nodes, "nodes")
    return np.asarray(checkpoint_save_time_s(trainable_params, bw * n), dtype=float) / (
        SECONDS_PER_HOUR
    )


#: Checkpointing choices of a training run (a scenario's ``ops.checkpointing``).
Checkpointing = Literal["optimal", "fixed", "none"]


@dataclass(frozen=True)
class TrainingGoodput:
    """Goodput of training runs: interruption rates, checkpoint interval and lost hours.

    Attributes
    ----------
    overheads : dict of str to numpy.ndarray
        :func:`goodput_overheads` (``wall_clock_h``, ``goodput``, ``interruptions``,
        ``rework_h``, ``restart_h``, ``checkpoint_stall_h``, ``firmware_h``). [h]
    rate_per_h, failure_rate_per_h : numpy.ndarray
        Interruptions per hour, all and failures only (the rest are spot preemptions). [1/h]
    tau_h : numpy.ndarray
        Checkpoint interval (NaN: no checkpoints). [h]
    tau_rule : str
        How the interval was set.
    save_h : numpy.ndarray
        Synchronous save time of one checkpoint. [h]
    checkpoint_bytes : float
        Size of one checkpoint. [B]
    async_fraction, restart_h : float
        Share of a save the job stalls, and restart time per interruption. [-], [h]
    """

    overheads: dict[str, np.ndarray]
    rate_per_h: np.ndarray
    failure_rate_per_h: np.ndarray
    tau_h: np.ndarray
    tau_rule: str
    save_h: np.ndarray
    checkpoint_bytes: float
    async_fraction: float
    restart_h: float

    @property
    def failure_share(self) -> np.ndarray:
        """Share of the interruptions that are failures (1 when there are none). [fraction]."""
        rate = self.rate_per_h
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(rate > 0, self.failure_rate_per_h / np.where(rate > 0, rate, 1.0), 1.0)

    def explain_inputs(self) -> dict[str, Any]:
        """Return the checkpointing inputs every reliability item of a run shows (``--explain``)."""
        return {
            "checkpoint_interval_h": self.tau_h,
            "checkpoint_interval_rule": self.tau_rule,
            "checkpoint_save_s": self.save_h * SECONDS_PER_HOUR,
            "checkpoint_bytes": self.checkpoint_bytes,
            "interruptions_per_h": self.rate_per_h,
            "async_stall_fraction": self.async_fraction,
        }


def _checkpoint_interval(
    rate: np.ndarray,
    rate_spot: np.ndarray,
    save_h: np.ndarray,
    checkpointing: str,
    checkpoint_interval_h: float | None,
    where: str,
) -> tuple[np.ndarray, str]:
    """Return the checkpoint interval of each row and the rule that set it."""
    if checkpoint_interval_h is not None and checkpointing != "none":
        return np.full_like(rate, checkpoint_interval_h), "workload.checkpoint_interval_h"
    if checkpointing == "fixed":
        raise InputError(
            "workload.checkpoint_interval_h",
            None,
            "an interval in hours when ops.checkpointing is 'fixed'",
        )
    if checkpointing == "none":
        tau = np.full_like(rate, math.nan)
        fld = (
            f"{where}.pricing (spot) with ops.checkpointing"
            if np.any(rate_spot > 0)
            else "ops.checkpointing"
        )
        require_checkpoint_interval(tau, rate, fld)
        return tau, "no checkpoints"
    with np.errstate(divide="ignore", over="ignore"):  # a subnormal rate: MTBF inf
        mtbf = np.where(rate > 0, 1.0 / np.where(rate > 0, rate, 1.0), math.inf)
    tau = np.asarray(optimal_checkpoint_interval_h(save_h, mtbf), dtype=float)
    return tau, "Young/Daly optimum sqrt(2 delta M) - delta"


def training_goodput(
    fac: CostFactors,
    *,
    trainable_params: float,
    gpus: ArrayLike,
    nodes: ArrayLike,
    productive_h: ArrayLike,
    spot_rate_per_instance_h: ArrayLike = 0.0,
    instances: ArrayLike = 0,
    checkpointing: str = "optimal",
    checkpoint_interval_h: float | None = None,
    checkpoint_async: bool = False,
    where: str = "option",
) -> TrainingGoodput:
    """Goodput of training runs: interruption rates, checkpoint interval and lost hours.

    Vectorised: ``gpus``, ``nodes``, ``productive_h``, ``spot_rate_per_instance_h`` and
    ``instances`` may be arrays of equal shape (a sweep's rows); a single option is the 0-d case.

    Parameters
    ----------
    fac : CostFactors
        Failure rate, restart time, checkpoint bandwidth and stall, firmware downtime.
    trainable_params : float
        Parameters saved in a checkpoint (the model, or the LoRA adapters). [count]
    gpus, nodes : array_like
        Accelerators and nodes of the job. [count]
    productive_h : array_like
        Wall-clock hours at the modelled throughput. [h]
    spot_rate_per_instance_h : array_like
        Spot preemptions per instance-hour (0 when not on spot). [1/h]
    instances : array_like
        Instances the job runs on. [count]
    checkpointing : {"optimal", "fixed", "none"}
        Young/Daly interval, ``checkpoint_interval_h``, or no checkpoints.
    checkpoint_interval_h : float, optional
        A fixed interval. [h]
    checkpoint_async : bool
        Asynchronous saves stall for ``checkpoint.async-stall-fraction`` of a save.
    where : str
        Field prefix for errors.

    Returns
    -------
    TrainingGoodput
        Rates, interval, save time and :func:`goodput_overheads`.
    """
    rate_fail = np.asarray(job_interruption_rate_per_h(fac.failure_rate_per_gpu_h, gpus), float)
    rate_spot = np.asarray(
        job_interruption_rate_per_h(0.0, 0, spot_rate_per_instance_h, instances), dtype=float
    )
    rate = rate_fail + rate_spot
    save_h = checkpoint_save_h(trainable_params, fac.checkpoint_write_gb_s_per_node, nodes)
    tau, rule = _checkpoint_interval(
        rate, rate_spot, save_h, checkpointing, checkpoint_interval_h, where
    )
    async_frac = fac.async_stall_fraction if checkpoint_async else 1.0
    restart_h = fac.restart_h
    phi = float(firmware_downtime_fraction(fac.firmware_downtime_h_per_year))
    o = goodput_overheads(productive_h, rate, tau, save_h, restart_h, phi, async_frac)
    return TrainingGoodput(
        overheads=o,
        rate_per_h=rate,
        failure_rate_per_h=rate_fail,
        tau_h=np.asarray(tau, dtype=float),
        tau_rule=rule,
        save_h=save_h,
        checkpoint_bytes=float(checkpoint_bytes(trainable_params)),
        async_fraction=async_frac,
        restart_h=restart_h,
    )


@dataclass(frozen=True)
class ServiceDowntime:
    """Hours a service's held accelerators serve nothing: replica restarts and firmware.

    Attributes
    ----------
    interruptions : numpy.ndarray
        Failures over the period (rate x GPU-hours). [count]
    restart_h : numpy.ndarray
        Restart hours per accelerator (a failed replica restarts all its accelerators). [h]
    firmware_h : numpy.ndarray
        Firmware downtime per accelerator. [h]
    lost_h : numpy.ndarray
        Their sum, per accelerator. [h]
    downtime_fraction, restart_h_each : float
        Firmware downtime share and restart time per failure. [fraction], [h]
    """

    interruptions: np.ndarray
    restart_h: np.ndarray
    firmware_h: np.ndarray
    lost_h: np.ndarray
    downtime_fraction: float
    restart_h_each: float


def service_downtime(
    fac: CostFactors, gpus: ArrayLike, gpus_per_replica: ArrayLike, hours: ArrayLike
) -> ServiceDowntime:
    r"""Downtime of services of ``gpus`` accelerators in replicas of ``gpus_per_replica``.

    Failures :math:`I = \lambda\, g\, H`; each takes its replica down for the restart time
    :math:`R`, so :math:`I\, r\, R` accelerator-hours serve nothing, plus the firmware share
    :math:`\phi H` of every accelerator.
    """
    n = np.asarray(gpus, dtype=float)
    hrs = np.asarray(hours, dtype=float)
    restart_h = fac.restart_h
    phi = float(firmware_downtime_fraction(fac.firmware_downtime_h_per_year))
    interruptions = fac.failure_rate_per_gpu_h * n * hrs
    restart_gpu_h = interruptions * np.asarray(gpus_per_replica, dtype=float) * restart_h
    restart_per_gpu = restart_gpu_h / np.where(n > 0, n, 1.0)
    firmware_h = phi * hrs * np.ones_like(n)
    return ServiceDowntime(
        interruptions=np.asarray(interruptions, dtype=float),
        restart_h=np.asarray(restart_per_gpu, dtype=float),
        firmware_h=np.asarray(firmware_h, dtype=float),
        lost_h=np.asarray(restart_per_gpu + phi * hrs, dtype=float),
        downtime_fraction=phi,
        restart_h_each=restart_h,
    )
