"""The factors a reconciliation writes into its catalog overlay: observed reliability and idle time.

:func:`aitco.decide.reconcile.feedback` writes what one run's evidence supports. Two kinds of
observation differ in how far one run can be trusted:

* **a rate of rare events**: one run's interruptions per GPU-hour rest on a handful of events.
  One restart in 290 GPU-hours is 3.4e-3 per GPU-hour, with an exact 95 % Poisson interval of
  8.7e-5 to 1.9e-2 (over two orders of magnitude), against the catalog's 1.97e-5 from 419
  interruptions in 21.2 million GPU-hours (Llama 3). Writing it as the rate would set a default
  175 times the catalog's from one event, so it is written only when asked
  (``--write-failure-rate``); otherwise the overlay lines name it with its interval.
* **measured durations and shares**: the downtime per restart, and the share of a pay-as-used
  instance's billed hours the telemetry saw idle outside the job
  (``utilization.rented-idle-fraction``, priced by ``compare``'s ``rented_idle`` item), are
  measured over the whole run and written.

Each function appends what it did, in words, to ``written`` (the ``calibration.overlay`` lines).
"""

from __future__ import annotations

from typing import Any

from aitco.cost.factors import FAILURE_RATE_ID, RENTED_IDLE_ID, RESTART_ID
from aitco.cost.pricing import PAY_AS_USED

#: Confidence of the interval named with an observed interruption rate.
RATE_CONFIDENCE = 0.95


def reliability_facts(
    *,
    restarts: int,
    exposure_gpu_h: float,
    interval: tuple[float, float],
    downtime_h: float | None,
    catalog_rate: float | None,
    write_rate: bool,
    source: str,
    written: list[str],
) -> list[dict[str, Any]]:
    """Return the overlay's reliability factors of one run, and say what was left out.

    Parameters
    ----------
    restarts : int
        Restarts in the run's training log. [count]
    exposure_gpu_h : float
        Accelerator-hours of the job they happened in. [GPU-h]
    interval : tuple of float
        The rate's exact Poisson interval at :data:`RATE_CONFIDENCE`. [1/GPU-h]
    downtime_h : float or None
        Mean downtime per restart (lost work excluded). [h]
    catalog_rate : float or None
        The catalog's interruption rate, to compare with. [1/GPU-h]
    write_rate : bool
        Write the observed rate as ``failure.interruptions-per-gpu-hour`` (``--write-failure-
        rate``); otherwise it is only named in ``written``.
    source : str
        Source id of the overlay's values.
    written : list of str
        The overlay lines (appended to).
    """
    rate = restarts / exposure_gpu_h
    lo, hi = interval
    about = (
        f"{restarts} restart(s) in {exposure_gpu_h:.4g} GPU-hours of one run: {rate:.2g} per "
        f"GPU-hour, {RATE_CONFIDENCE:.0%} interval {lo:.2g}-{hi:.2g} (exact Poisson)"
    )
    if catalog_rate:
        about += f", {rate / catalog_rate:,.0f}x the catalog's {catalog_rate:.3g}"
    facts: list[dict[str, Any]] = []
    if write_rate:
        facts.append(
            {"id": FAILURE_RATE_ID,
             "value": {"value": float(f"{rate:.4g}"), "source": source, "note": about}}
        )  # fmt: skip
        written.append(f"factors.{FAILURE_RATE_ID}: {rate:.4g} ({about})")
    else:
        written.append(
            f"factors.{FAILURE_RATE_ID} not written: {about}; one run's rate is too uncertain "
            "to replace the catalog's (--write-failure-rate writes it)"
        )
    if downtime_h is not None:
        facts.append(
            {"id": RESTART_ID,
             "value": {"value": float(f"{downtime_h:.4g}"), "source": source,
                       "note": "observed downtime per restart (lost work excluded)"}}
        )  # fmt: skip
        written.append(f"factors.{RESTART_ID}: {downtime_h:.4g}")
    return facts


def idle_facts(
    *,
    idle_share: float | None,
    pricing: str,
    kind: str,
    source: str,
    written: list[str],
) -> list[dict[str, Any]]:
    """Return the overlay's ``utilization.rented-idle-fraction``: the run's observed idle share.

    Written for a training run on pay-as-used capacity (on demand, spot) whose telemetry
    measured idle time outside the job: the share of the billed accelerator-hours it covers.
    Held capacity has its idle share in ``fragmentation.idle-fraction`` instead.
    """
    if idle_share is None or kind != "training" or pricing not in PAY_AS_USED:
        return []
    if not 0.0 <= idle_share < 1.0:
        written.append(f"factors.{RENTED_IDLE_ID} not written: idle share {idle_share:.3g}")
        return []
    note = (
        "observed share of the billed accelerator-hours idle outside the job (set-up, waiting, "
        "tear-down), from the run's telemetry and training log"
    )
    written.append(f"factors.{RENTED_IDLE_ID}: {idle_share:.4g}")
    return [
        {"id": RENTED_IDLE_ID,
         "value": {"value": float(f"{idle_share:.4g}"), "source": source, "note": note}}
    ]  # fmt: skip
