"""Actual vs estimate: what the model predicted for the user's run against what the logs show.

:func:`actual_vs_estimate` runs :func:`aitco.perf.training.estimate_training` for the run's
model, hardware, GPU count, sequence length, batch and plan (with the default or a calibrated
efficiency set) and lines its values up with the measured ones, item by item: step time,
tokens/s/GPU, MFU, communication time, energy and dollars. Each row gives the actual value, the
estimate, their ratio (estimate / actual), the signed relative error as a fraction of the
actual (``error_fraction`` = ratio - 1; 0.24 = 24 % over) and where the actual value came
from. Items without a measurement show the estimate alone.
"""

from __future__ import annotations

from typing import Any

from aitco.calibrate import measurements as meas
from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.explain import Estimate, Term
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.training import estimate_training
from aitco.units import MS_PER_S, SECONDS_PER_HOUR, TERA

#: Time terms of the training estimate that are communication.
COMM_TERMS = ("tp_comm_s", "cp_comm_s", "ep_comm_s", "zero3_comm_s", "dp_comm_s", "pp_comm_s")


def _row(
    item: str, unit: str, actual: float | None, estimate: float | None, source: str
) -> dict[str, Any]:
    ratio = estimate / actual if actual and estimate is not None else None
    return {
        "item": item,
        "unit": unit,
        "actual": actual,
        "estimate": estimate,
        "ratio": ratio,
        "error_fraction": ratio - 1 if ratio is not None else None,
        "actual_source": source,
    }


def actual_vs_estimate(
    *,
    model: ModelArch,
    acc: Accelerator,
    system: System,
    gpus: int,
    seq_len: int,
    global_batch: int,
    trainlog: dict[str, Any] | None = None,
    kineto: dict[str, Any] | None = None,
    telemetry: dict[str, Any] | None = None,
    focus: dict[str, Any] | None = None,
    plan: dict[str, Any] | None = None,
    precision: str = "bf16",
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    n_steps: int | None = None,
    usd_per_accelerator_hour: float | None = None,
    power_fraction_of_tdp: float | None = None,
) -> Estimate:
    """Compare a training estimate with a run's logs.

    Parameters
    ----------
    model, acc, system : catalog entries
        What was trained, on what.
    gpus, seq_len, global_batch : int
        Run shape (global batch in sequences).
    trainlog, kineto, telemetry, focus : dict, optional
        ``ParseResult.summary`` of a training log, a Kineto trace, DCGM/nvidia-smi telemetry
        and a FOCUS export.
    plan : dict, optional
        Parallel plan the run used (``tp``, ``pp``, ``dp``, ...); searched when omitted.
    precision : str
        Training dtype.
    efficiency : EfficiencyParams
        Efficiency set for the estimate (default or from a calibration profile).
    n_steps : int, optional
        Steps the energy/cost items cover (default: the telemetry duration, else the steps
        logged).
    usd_per_accelerator_hour : float, optional
        Price for the estimated cost (default: the FOCUS billed rate). [USD/h]
    power_fraction_of_tdp : float, optional
        Average accelerator power as a fraction of TDP for the estimated energy (catalog factor
        ``utilization-power.training-fraction-of-tdp``). [0-1]

    Returns
    -------
    Estimate
        ``values`` has ``rows`` (one per item) and the headline ``estimate``/``actual``
        dicts; ``terms`` mirror the rows (value = estimate) so ``--explain`` prints them.
    """
    res = estimate_training(
        model,
        acc,
        system,
        gpus,
        seq_len=seq_len,
        global_batch=global_batch,
        precision=precision,
        plan=plan,
        efficiency=efficiency,
        speed_of_infeasible=True,  # set beside an actual run, which did run
    )
    ev = res.values
    rows: list[dict[str, Any]] = []
    act: dict[str, Any] = {}
    if trainlog:
        act = meas.training_throughput(
            trainlog,
            gpus=gpus,
            seq_len=seq_len,
            global_batch=global_batch,
            model=model,
            acc=acc,
            precision=precision,
        )
    step_a = act.get("step_time_s")
    src_log = "training log" if trainlog else "-"
    if step_a is None and kineto:
        step_a = kineto.get("step_time_s")
        src_log = "profiler trace"
    rows.append(_row("step_time_s", "s", step_a, ev["step_time_s"], src_log))
    rows.append(
        _row(
            "tokens_per_s_per_gpu",
            "tokens/s",
            act.get("tokens_per_s_per_gpu"),
            ev["tokens_per_s_per_gpu"],
            src_log,
        )
    )
    rows.append(
        _row("mfu", "fraction", act.get("mfu"), ev["mfu"], src_log + " (model FLOPs / peak)")
    )
    if act.get("mfu_from_log") is not None:
        rows.append(
            _row(
                "mfu_reported_by_framework",
                "fraction",
                act["mfu_from_log"],
                ev["mfu"],
                "framework's own TFLOP/s or MFU",
            )
        )
    comm_est = sum(res.time_terms_s.get(k, 0.0) for k in COMM_TERMS)
    comm_act = None
    comm_src = "-"
    if kineto and kineto.get("exposed_comm_s") is not None:
        comm_act = kineto["exposed_comm_s"]
        comm_src = "profiler trace (exposed communication)"
    elif trainlog and isinstance(trainlog.get("timers_ms"), dict):
        for group in trainlog["timers_ms"].values():
            v = group.get("backward_allreduce") or group.get("allreduce")
            if v:
                comm_act = v / MS_PER_S
                comm_src = "framework timers (backward all-reduce)"
                break
    rows.append(_row("comm_time_s", "s", comm_act, comm_est, comm_src))
    # energy and money over the steps covered
    duration_s = None
    if telemetry and telemetry.get("gpu_hours"):
        duration_s = (
            telemetry["gpu_hours"] * SECONDS_PER_HOUR / max(telemetry.get("n_devices") or 1, 1)
        )
    steps = n_steps or (duration_s / step_a if duration_s and step_a else act.get("n_steps"))
    est_hours = gpus * ev["step_time_s"] * steps / SECONDS_PER_HOUR if steps else None
    act_hours = gpus * step_a * steps / SECONDS_PER_HOUR if steps and step_a else None
    rows.append(_row("gpu_hours", "h", act_hours, est_hours, src_log))
    energy_a = meas.telemetry_energy_j(telemetry) if telemetry else None
    energy_e = None
    board_w = acc.board_power_w  # the TDP, or the lower power limit it is run at
    if power_fraction_of_tdp is not None and board_w and est_hours is not None:
        energy_e = est_hours * board_w * power_fraction_of_tdp * SECONDS_PER_HOUR
    if (
        energy_a is not None
        and telemetry
        and telemetry.get("n_devices")
        and telemetry["n_devices"] < gpus
    ):
        energy_a = energy_a * gpus / telemetry["n_devices"]  # scale a per-node capture to the run
    rows.append(
        _row(
            "energy_kwh",
            "kWh",
            energy_a / meas.J_PER_KWH if energy_a is not None else None,
            energy_e / meas.J_PER_KWH if energy_e is not None else None,
            "telemetry (" + str(telemetry.get("energy_source")) + ")" if telemetry else "-",
        )
    )
    rate = usd_per_accelerator_hour
    usd_a = None
    if focus and focus.get("gpu_hours"):
        rate = rate or focus.get("billed_cost_usd_per_gpu_h")
        usd_a = focus.get("accelerator_billed_usd")
    elif act_hours is not None and rate is not None:
        usd_a = act_hours * rate
    usd_e = est_hours * rate if est_hours is not None and rate is not None else None
    rows.append(
        _row("usd", "USD", usd_a, usd_e, "FOCUS billed cost" if focus else "measured hours x rate")
    )
    extra: dict[str, Any] = {}
    chain = _loss_chain(
        model, acc, gpus, seq_len, global_batch, precision, step_a, trainlog, kineto
    )
    if chain:
        extra["loss_chain"] = chain
    if telemetry and telemetry.get("idle_gpu_hours") is not None:
        extra["idle"] = meas.idle_accelerators(telemetry, usd_per_accelerator_hour=rate)
    if energy_a is not None and steps and step_a:
        extra["energy_per_token"] = meas.energy_per_token(energy_a, global_batch * seq_len * steps)
    if focus and focus.get("gpu_hours"):
        extra["billed_rate"] = meas.billed_rate(focus)
    terms = [
        Term(
            name=r["item"],
            value=r["estimate"] if r["estimate"] is not None else float("nan"),
            unit=r["unit"],
            formula="aitco estimate_training" if r["item"] != "usd" else "hours x rate",
            inputs={"actual": r["actual"], "error_fraction": r["error_fraction"]},
            sources=[r["actual_source"]],
        )
        for r in rows
    ]
    worst = max(
        (r for r in rows if r["error_fraction"] is not None),
        key=lambda r: abs(r["error_fraction"]),
        default=None,
    )
    return Estimate(
        kind="actual-vs-estimate",
        values={
            "rows": rows,
            "plan": ev.get("plan"),
            "time_split_s": res.time_terms_s,
            "efficiency": efficiency.model_dump(),
            **extra,
        },
        terms=terms,
        dominant=worst["item"] if worst else "",
        assumptions=[
            "estimate from aitco.perf.training.estimate_training with the given plan",
            "actual tokens/s/GPU = global_batch x seq_len / step time / GPUs (if the log has none)",
            "ratio = estimate / actual; error_fraction = ratio - 1 (signed fraction of the actual)",
        ],
    )


def _loss_chain(
    model: ModelArch,
    acc: Accelerator,
    gpus: int,
    seq_len: int,
    global_batch: int,
    precision: str,
    step_s: float | None,
    trainlog: dict[str, Any] | None,
    kineto: dict[str, Any] | None,
) -> list[dict[str, Any]] | None:
    """Return the loss chain of the step from profiler splits or framework timers (or None)."""
    peak = acc.peak_tflops.get(precision)
    if not step_s or not peak:
        return None
    ideal = (
        meas.model_flops_per_token(model, seq_len) * global_batch * seq_len / (gpus * peak * TERA)
    )
    parts: dict[str, float] = {}
    if kineto and kineto.get("step_time_s"):
        scale = step_s / kineto["step_time_s"]  # the trace's split applied to the logged step
        parts = {
            "exposed_communication": kineto["exposed_comm_s"] * scale,
            "memory_copies": kineto["exposed_memcpy_s"] * scale,
            "idle": kineto["idle_s"] * scale,
        }
    elif trainlog and isinstance(trainlog.get("timers_ms"), dict):
        t: dict[str, float] = {}
        for group in trainlog["timers_ms"].values():
            for k, v in group.items():
                t.setdefault(k, v)
        if t.get("backward_allreduce"):
            parts["exposed_communication"] = t["backward_allreduce"] / MS_PER_S
        if t.get("batch_generator") is not None:
            parts["data_loading"] = t["batch_generator"] / MS_PER_S
        opt = t.get("optimizer", t.get("step"))
        if opt is not None:
            parts["optimizer"] = opt / MS_PER_S
    if not parts:
        return None
    return meas.loss_chain(step_s, min(ideal, step_s), parts)
