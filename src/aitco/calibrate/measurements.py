r"""What a run really achieved, derived from parsed logs.

Pure functions over parser summaries (plain dicts) and catalog entries:

* :func:`training_throughput`: accelerator-hours, tokens/s/GPU, achieved TFLOP/s and MFU;
* :func:`loss_chain`: from the nominal peak to the achieved throughput, item by item;
* :func:`bus_bandwidth`: the nccl-tests plateau and the communication amplification against the
  model's ideal for that topology;
* :func:`idle_accelerators`: devices below a utilisation threshold and what their idle time cost;
* :func:`energy_per_token`: from energy counters or integrated power;
* :func:`billed_rate`: the effective $/accelerator-hour billed in FOCUS rows.

Notes
-----
MFU uses the model FLOPs per token :math:`F_{tok}` (``6N`` plus attention, from
:func:`aitco.perf.flops` when available) and the dense peak :math:`P` of the training dtype:

.. math:: \mathrm{MFU} = \frac{F_{tok}\,\tau_{gpu}}{P}, \qquad
          \tau_{gpu} = \frac{B\,L}{t_{step}\,G}

with global batch :math:`B` sequences of :math:`L` tokens, step time :math:`t_{step}` and
:math:`G` accelerators. Where the log prints achieved TFLOP/s per GPU, ``mfu_from_log`` is that
over the peak (the framework's own FLOP count, which may include recompute).

References
----------
.. [1] A. Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways", 2022, App. B (MFU).
.. [2] NVIDIA nccl-tests ``doc/PERFORMANCE.md`` (bus bandwidth).
"""

from __future__ import annotations

import math
from typing import Any

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InputError
from aitco.perf import comms
from aitco.perf.flops import model_shape, training_flops_per_token
from aitco.units import J_PER_KWH, MEGA, SECONDS_PER_HOUR, TERA, US_PER_S

#: Default utilisation threshold below which an accelerator counts as idle. [0-1]
DEFAULT_IDLE_THRESHOLD = 0.30


def model_flops_per_token(model: ModelArch, seq_len: int) -> float:
    """Return training FLOPs per token of ``model`` at ``seq_len`` (6N + causal attention).

    The same count [FLOP] the training engine's MFU uses
    (:func:`aitco.perf.flops.training_flops_per_token`).
    """
    return float(training_flops_per_token(model_shape(model), seq_len))


def training_throughput(
    summary: dict[str, Any],
    *,
    gpus: int,
    seq_len: int | None = None,
    global_batch: int | None = None,
    model: ModelArch | None = None,
    acc: Accelerator | None = None,
    precision: str = "bf16",
    n_steps: int | None = None,
) -> dict[str, Any]:
    """Achieved throughput of a training run from a parsed training log summary.

    Parameters
    ----------
    summary : dict
        ``ParseResult.summary`` of a training log (``step_time_s``, ``reported_tflops_per_gpu``,
        ``tokens_per_s_per_gpu``, ``global_batch``, ...).
    gpus : int
        Accelerators in the run.
    seq_len : int, optional
        Tokens per sequence (needed to turn samples into tokens).
    global_batch : int, optional
        Sequences per step (taken from the log when it prints it).
    model : ModelArch, optional
        The model, for MFU from first principles.
    acc : Accelerator, optional
        The accelerator, for its dense peak.
    precision : str
        Training dtype whose peak MFU is measured against.
    n_steps : int, optional
        Steps of the run, for accelerator-hours (default: the steps logged).

    Returns
    -------
    dict
        ``step_time_s``, ``tokens_per_step``, ``tokens_per_s``, ``tokens_per_s_per_gpu``,
        ``achieved_tflops_per_gpu``, ``mfu``, ``mfu_from_log``, ``peak_tflops``,
        ``gpu_hours`` (of the steps counted), ``n_steps``.
    """
    if gpus < 1:
        raise InputError("--gpus", gpus, "a positive number of accelerators")
    step = summary.get("step_time_s")
    gb = global_batch or summary.get("global_batch")
    tok_gpu = summary.get("tokens_per_s_per_gpu")
    tokens_per_step = gb * seq_len if gb and seq_len else None
    if tok_gpu is None and step and tokens_per_step:
        tok_gpu = tokens_per_step / step / gpus
    if tok_gpu is None and summary.get("samples_per_s") and seq_len:
        tok_gpu = summary["samples_per_s"] * seq_len / gpus
    if step is None and tok_gpu and tokens_per_step:
        step = tokens_per_step / (tok_gpu * gpus)
    peak = acc.peak_tflops.get(precision) if acc is not None else None
    achieved = None
    mfu = None
    if model is not None and seq_len and tok_gpu:
        achieved = model_flops_per_token(model, seq_len) * tok_gpu / TERA
        mfu = achieved / peak if peak else None
    log_tflops = summary.get("reported_tflops_per_gpu")
    mfu_log = summary.get("mfu")
    if mfu_log is None and log_tflops and peak:
        mfu_log = log_tflops / peak
    steps = n_steps or summary.get("n_steps") or 0
    return {
        "step_time_s": step,
        "tokens_per_step": tokens_per_step,
        "tokens_per_s": tok_gpu * gpus if tok_gpu else None,
        "tokens_per_s_per_gpu": tok_gpu,
        "achieved_tflops_per_gpu": achieved if achieved is not None else log_tflops,
        "mfu": mfu if mfu is not None else mfu_log,
        "mfu_from_log": mfu_log,
        "peak_tflops": peak,
        "n_steps": steps,
        "gpu_hours": gpus * step * steps / SECONDS_PER_HOUR if step and steps else None,
    }


def loss_chain(
    step_time_s: float,
    ideal_compute_s: float,
    parts_s: dict[str, float],
) -> list[dict[str, Any]]:
    """Loss chain from the nominal peak to the achieved step, item by item.

    Parameters
    ----------
    step_time_s : float
        Measured step time. [s]
    ideal_compute_s : float
        Step time at 100 % of the dense peak (model FLOPs / (GPUs x peak)). [s]
    parts_s : dict of str to float
        Measured non-compute parts of the step (e.g. ``exposed_communication``,
        ``data_loading``, ``optimizer``, ``memory_copies``, ``idle``). [s]

    Returns
    -------
    list of dict
        Rows ``{item, time_s, share_of_step, throughput_fraction_after}``: first the ideal,
        then ``compute_below_peak`` (measured compute minus ideal), each part, and
        ``other`` (whatever the parts do not explain). ``throughput_fraction_after`` is the
        fraction of peak throughput left after that item (the last one is the MFU).
    """
    if step_time_s <= 0 or ideal_compute_s <= 0:
        raise InputError("step_time_s", step_time_s, "positive step and ideal times")
    known = sum(max(v, 0.0) for v in parts_s.values())
    compute_s = max(step_time_s - known, ideal_compute_s)
    rows: list[dict[str, Any]] = [
        {"item": "ideal_at_peak", "time_s": ideal_compute_s},
        {"item": "compute_below_peak", "time_s": compute_s - ideal_compute_s},
    ]
    rows += [{"item": k, "time_s": max(v, 0.0)} for k, v in parts_s.items()]
    other = step_time_s - compute_s - known
    rows.append({"item": "other", "time_s": other})
    cum = 0.0
    for r in rows:
        cum += r["time_s"]
        r["share_of_step"] = r["time_s"] / step_time_s
        r["throughput_fraction_after"] = ideal_compute_s / cum if cum > 0 else 1.0
    return rows


def bus_bandwidth(nccl_summary: dict[str, Any], system: System) -> dict[str, Any]:
    """Bus-bandwidth plateau and communication amplification against the modelled ideal.

    The ideal is the model's own collective time at 100 % link efficiency for that topology
    (:func:`aitco.perf.comms.group_link`: scale-up fabric when the group fits in the scale-up
    domain, scale-out NIC otherwise), at the plateau message size. The amplification factor is
    measured time / ideal time: above 1 the collective is slower than the model's ideal; below 1
    the real library beats the modelled algorithm (e.g. NCCL trees/NVLS across nodes, which the
    flat ring does not capture).

    Returns
    -------
    dict
        ``bus_bandwidth_plateau_gb_s``, ``ideal_bus_bandwidth_gb_s``, ``link_bandwidth_gb_s``,
        ``busbw_to_link_ratio`` (plateau / link bandwidth; above 1 when the library beats the
        modelled link), ``measured_time_s``, ``ideal_time_s``, ``comm_amplification``, ``scope``
        (intra-node or scale-out).
    """
    n = nccl_summary.get("n_ranks")
    plateau = nccl_summary.get("bus_bandwidth_plateau_gb_s")
    size = nccl_summary.get("plateau_size_bytes")
    t_us = nccl_summary.get("time_at_plateau_us")
    if not n or n < 2 or not plateau or not size:
        raise InputError("nccl", n, "an nccl-tests result with rank lines and bandwidth rows")
    bw, lat, _ = comms.group_link(system, n, 1, 1.0, 1.0)
    coll = nccl_summary.get("collective") or "all_reduce"
    fn = {
        "all_reduce": comms.allreduce_time_s,
        "all_gather": comms.allgather_time_s,
        "reduce_scatter": comms.reduce_scatter_time_s,
        "alltoall": comms.alltoall_time_s,
    }.get(coll, comms.allreduce_time_s)
    ideal_t = float(fn(size, n, bw, lat, 1.0))
    measured_t = t_us / US_PER_S if t_us else None
    ideal_bus = plateau * measured_t / ideal_t if measured_t else None
    scope = "intra-node" if n <= comms.scale_up_size(system) else "scale-out"
    return {
        "collective": coll,
        "n_ranks": n,
        "scope": scope,
        "bus_bandwidth_plateau_gb_s": plateau,
        "avg_bus_bandwidth_gb_s": nccl_summary.get("avg_bus_bandwidth_gb_s"),
        "link_bandwidth_gb_s": float(bw),
        "busbw_to_link_ratio": plateau / float(bw),
        "ideal_bus_bandwidth_gb_s": ideal_bus,
        "measured_time_s": measured_t,
        "ideal_time_s": ideal_t,
        "comm_amplification": measured_t / ideal_t if measured_t else None,
    }


def idle_accelerators(
    telemetry_summary: dict[str, Any],
    *,
    usd_per_accelerator_hour: float | None = None,
) -> dict[str, Any]:
    """Idle accelerators (below the parser's utilisation threshold) and their cost.

    Parameters
    ----------
    telemetry_summary : dict
        Summary of a DCGM or nvidia-smi parse (with a utilisation field).
    usd_per_accelerator_hour : float, optional
        Price of an accelerator-hour (e.g. :func:`billed_rate`). [USD/h]

    Returns
    -------
    dict
        ``idle_threshold``, ``gpu_hours``, ``idle_gpu_hours``, ``idle_fraction``,
        ``idle_devices`` (mean utilisation below the threshold), ``idle_cost_usd``.
    """
    idle_h = telemetry_summary.get("idle_gpu_hours")
    if idle_h is None:
        raise InputError(
            "telemetry", "no utilisation", "DCGM GPUTL/GRACT or nvidia-smi utilization.gpu samples"
        )
    return {
        "idle_threshold": telemetry_summary.get("idle_threshold"),
        "gpu_hours": telemetry_summary.get("gpu_hours"),
        "idle_gpu_hours": idle_h,
        "idle_fraction": telemetry_summary.get("idle_fraction"),
        "idle_devices": telemetry_summary.get("idle_devices", []),
        "idle_cost_usd": idle_h * usd_per_accelerator_hour if usd_per_accelerator_hour else None,
        "price_usd_per_gpu_h": usd_per_accelerator_hour,
    }


def energy_per_token(energy_j: float | None, tokens: float | None) -> dict[str, Any]:
    """Return energy per token [J/token] from a measured energy (counter or integrated power)."""
    if not energy_j or not tokens or tokens <= 0:
        return {
            "energy_j": energy_j,
            "tokens": tokens,
            "j_per_token": None,
            "kwh_per_million_tokens": None,
        }
    jpt = energy_j / tokens
    return {
        "energy_j": energy_j,
        "energy_kwh": energy_j / J_PER_KWH,
        "tokens": tokens,
        "j_per_token": jpt,
        "kwh_per_million_tokens": jpt * MEGA / J_PER_KWH,
    }


def telemetry_energy_j(summary: dict[str, Any]) -> float | None:
    """Energy of a telemetry, serving or CodeCarbon summary, in joules (None if absent)."""
    if summary.get("energy_j") is not None:
        return float(summary["energy_j"])
    if summary.get("gpu_energy_j") is not None:
        return float(summary["gpu_energy_j"])
    kwh = summary.get("gpu_energy_kwh") or summary.get("energy_kwh")
    return float(kwh) * J_PER_KWH if kwh is not None else None


def billed_rate(focus_summary: dict[str, Any]) -> dict[str, Any]:
    """Effective $/accelerator-hour actually billed, from a FOCUS parse summary."""
    h = focus_summary.get("gpu_hours") or 0.0
    if h <= 0:
        raise InputError(
            "focus", "no accelerator rows", "FOCUS usage rows of GPU instances measured in hours"
        )
    return {
        "gpu_hours": h,
        "billed_usd": focus_summary.get("accelerator_billed_usd"),
        "effective_usd": focus_summary.get("accelerator_effective_usd"),
        "billed_cost_usd_per_gpu_h": focus_summary.get("billed_cost_usd_per_gpu_h"),
        "effective_cost_usd_per_gpu_h": focus_summary.get("effective_cost_usd_per_gpu_h"),
        "list_cost_usd_per_gpu_h": focus_summary.get("list_cost_usd_per_gpu_h"),
        "discount_vs_list": (
            1
            - focus_summary["effective_cost_usd_per_gpu_h"]
            / focus_summary["list_cost_usd_per_gpu_h"]
            if focus_summary.get("list_cost_usd_per_gpu_h")
            and focus_summary.get("effective_cost_usd_per_gpu_h") is not None
            else None
        ),
    }


def is_finite(x: Any) -> bool:
    """Whether ``x`` is a finite number."""
    return isinstance(x, int | float) and math.isfinite(x)
