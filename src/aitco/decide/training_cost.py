"""Price one training option: the run's goodput, then its items (the one-row TCO).

The training engine gives the productive hours (tokens over throughput);
:func:`training_goodput` adds the hours lost to failures, spot preemptions, checkpoints,
restarts and firmware (:func:`aitco.cost.reliability.training_goodput`), and
:func:`price_training` composes the items of :data:`aitco.cost.tco.TRAINING_LINES` over them.
The sweep prices its rows with the same two functions of :mod:`aitco.cost`.
"""

from __future__ import annotations

import math
from typing import Any

from numpy.typing import ArrayLike

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.cost.breakdown import Breakdown
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import RENTED, GpuHourPrice
from aitco.cost.reliability import TrainingGoodput
from aitco.cost.reliability import training_goodput as goodput_of
from aitco.decide.option_cost import (
    energy_values,
    instance_values,
    num,
    option_name,
    option_rows,
    per_token_j,
    priced_option,
    training_terms,
)
from aitco.decide.scenario import (
    DataCosts,
    HardwareOption,
    OpsAssumptions,
    Scenario,
    TrainingWorkload,
)
from aitco.perf.flops import model_shape
from aitco.perf.params import param_counts
from aitco.units import GIGA, HOURS_PER_DAY, HOURS_PER_MONTH, MEGA


def trainable_params(model: ModelArch, w: TrainingWorkload) -> float:
    """Parameters a checkpoint saves: the model's, or its LoRA adapters'. [count]."""
    if w.method == "full":
        return float(param_counts(model).total)
    # LoRA adapters: the one count of aitco.perf.flops (every linear projection, rank r)
    return float(model_shape(model, lora_rank=w.lora_rank).lora_params)


def training_goodput(
    model: ModelArch,
    w: TrainingWorkload,
    ops: OpsAssumptions,
    fac: CostFactors,
    gpus: ArrayLike,
    nodes: ArrayLike,
    productive_h: ArrayLike,
    *,
    spot_rate_per_instance_h: ArrayLike = 0.0,
    instances: ArrayLike = 0,
    where: str = "option",
) -> TrainingGoodput:
    """Goodput of training runs of ``model`` (:func:`aitco.cost.reliability.training_goodput`).

    The workload gives the parameters a checkpoint saves and a fixed interval; ``ops`` the
    checkpointing choices. Vectorised over ``gpus``, ``nodes``, ``productive_h``,
    ``spot_rate_per_instance_h`` and ``instances``.
    """
    return goodput_of(
        fac,
        trainable_params=trainable_params(model, w),
        gpus=gpus,
        nodes=nodes,
        productive_h=productive_h,
        spot_rate_per_instance_h=spot_rate_per_instance_h,
        instances=instances,
        checkpointing=ops.checkpointing,
        checkpoint_interval_h=w.checkpoint_interval_h,
        checkpoint_async=ops.checkpoint_async,
        where=where,
    )


def training_storage_gb(
    d: DataCosts, ops: OpsAssumptions, fac: CostFactors, tokens: Any, checkpoint_bytes: Any
) -> tuple[Any, Any]:
    """Return the dataset and kept-checkpoint volumes of a training run [GB].

    The dataset is ``data.stored_gb`` when given, else tokens x ``data.bytes-per-token``.
    """
    dataset_gb = d.stored_gb
    if dataset_gb is None:
        dataset_gb = tokens * fac.data_bytes_per_token / GIGA
    return dataset_gb, checkpoint_bytes * ops.checkpoints_kept / GIGA


def price_training(
    scn: Scenario,
    w: TrainingWorkload,
    opt: HardwareOption,
    hardware: tuple[Accelerator, System, ModelArch],
    price: GpuHourPrice,
    fac: CostFactors,
    res: Any,
    *,
    where: str = "option",
    one_off: bool = True,
) -> Breakdown:
    """Price one training option from the engine's estimate ``res`` (a one-row TCO).

    Parameters
    ----------
    scn, w, opt : Scenario, TrainingWorkload, HardwareOption
        The scenario (ops, data, compliance), its workload and the option.
    hardware : tuple
        The accelerator, the system the run uses and the model.
    price : GpuHourPrice
        The accelerator-hour price (:mod:`aitco.cost.pricing`).
    fac : CostFactors
        Cost factors.
    res : TrainingResult
        :func:`aitco.perf.training.estimate_training` of the option (its ``wall_clock_h`` are
        the productive hours).
    where : str
        Field prefix named in errors.
    one_off : bool
        Whether the one-off data costs go to this option (the first stage of a plan).

    Returns
    -------
    Breakdown
        The items and the headline values (``wall_clock_days``, ``goodput``, ``gpu_hours``...).
    """
    acc, sysm, model = hardware
    v = res.values
    productive_h = float(v["wall_clock_h"])
    n = opt.gpus
    nodes = math.ceil(n / sysm.devices_per_node)
    instances = price.instances if opt.pricing in RENTED and price.offer else nodes
    spot_id, sigma = "", 0.0
    if opt.pricing == "spot":
        # the rate of the offer's instance family, else its provider's, else the default
        offer = fac.catalog.offers.get(price.offer) if price.offer else None
        spot_id, sigma = fac.spot_rate_per_instance_h(
            price.provider or opt.provider, f"{where}.pricing", offer.instance if offer else None
        )
    g = training_goodput(
        model, w, scn.ops, fac, n, nodes, productive_h,
        spot_rate_per_instance_h=sigma, instances=instances, where=where,
    )  # fmt: skip
    o = {k: float(x) for k, x in g.overheads.items()}
    wall_h = o["wall_clock_h"]
    tokens = float(w.tokens)
    dataset_gb, ckpt_gb = training_storage_gb(scn.data, scn.ops, fac, tokens, g.checkpoint_bytes)
    rows = option_rows(
        "training", scn, opt, acc, sysm, price, gpus=n, host_gpus=n,
        productive_h=productive_h, wall_h=wall_h, busy_h=productive_h, rework_h=o["rework_h"],
        restart_h=o["restart_h"], checkpoint_stall_h=o["checkpoint_stall_h"],
        firmware_h=o["firmware_h"], interruptions=o["interruptions"],
        failure_share=float(g.failure_share), storage_months=wall_h / HOURS_PER_MONTH,
        dataset_gb=dataset_gb, checkpoint_gb=ckpt_gb, period_days=wall_h / HOURS_PER_DAY,
        one_off=one_off, spot_rate_id=spot_id,
        explain={k: num(x) if k != "checkpoint_interval_rule" else x
                 for k, x in g.explain_inputs().items()},
    )  # fmt: skip
    kids = {"compute": training_terms(res, n, productive_h, tokens)}
    b, table = priced_option(
        rows, fac, price, kids, name=option_name(opt), kind="training", hardware=opt.hardware,
        pricing=opt.pricing, gpus=n,
    )  # fmt: skip
    kwh, kg = energy_values(table)
    gpu_hours = n * wall_h
    b.values = {
        "fits": bool(v.get("fits", True)),
        "wall_clock_h": wall_h,
        "wall_clock_days": wall_h / HOURS_PER_DAY,
        "productive_h": productive_h,
        "goodput": o["goodput"],
        "gpu_hours": gpu_hours,
        "tokens": tokens,
        "tokens_per_s": num(v.get("tokens_per_s")),
        "tokens_per_s_per_gpu": num(v.get("tokens_per_s_per_gpu")),
        "mfu": num(v.get("mfu")),
        "interruptions": o["interruptions"],
        "checkpoint_interval_h": float(g.tau_h),
        "price_usd_per_gpu_h": price.usd_per_gpu_h,
        "effective_usd_per_gpu_h": b.total_usd / gpu_hours if gpu_hours else math.nan,
        "usd_per_million_tokens": b.total_usd / tokens * MEGA,
        "energy_kwh": kwh,
        "kg_co2e": kg,
        "energy_per_token_j": per_token_j(kwh, tokens),
        "offer": price.offer,
        **price.capex,
    }
    b.values.update(instance_values(price, b))
    b.assumptions = [f"throughput from aitco.perf.training ({res.__class__.__name__})"]
    return b
