"""What pricing one option of a scenario shares between a training run and a service.

An option is the one-row case of the TCO of :mod:`aitco.cost.tco`: :func:`option_rows` fills
the :class:`~aitco.cost.runs.CostRows` of one option (its price, hardware, region and the
scenario's data and compliance costs) around the hours a run or a service needs, and
:func:`priced_option` composes its items into a :class:`~aitco.cost.breakdown.Breakdown`.
"""

from __future__ import annotations

import math
from typing import Any

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import Accelerator, System
from aitco.cost import carbon, power
from aitco.cost.breakdown import Breakdown
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import (
    DEFAULT_REGION,
    RENTED,
    GpuHourPrice,
    offer_system,
    owned_price,
    rental_price,
)
from aitco.cost.runs import CostRows
from aitco.cost.tco import ItemTable, add_to_breakdown, compose
from aitco.decide.scenario import HardwareOption, Scenario
from aitco.errors import CatalogError
from aitco.explain import Term


def option_name(opt: HardwareOption) -> str:
    """Return the name of an option: its own, else ``<hardware> x<gpus> <pricing>``."""
    return opt.label  # the one naming rule (HardwareOption.label: "x1" left out)


def option_price(
    cat: Catalog,
    opt: HardwareOption,
    acc: Accelerator,
    sysm: System,
    fac: CostFactors,
    *,
    depreciation: str = "straight_line",
    unit_gpus: int | None = None,
    where: str = "option",
) -> tuple[GpuHourPrice, System]:
    """Price an option's accelerator-hour, and return the system its offer runs on.

    Rented: the offer :func:`aitco.cost.pricing.rental_price` selects for ``opt.gpus``
    accelerators in units of ``unit_gpus`` (a training job: all; a service: one replica), with
    a ``reprice`` for another size; a rented offer that names a system of the accelerator runs
    on it (its NICs and fabric). Owned: :func:`aitco.cost.pricing.owned_price` and the nodes.
    """

    def rent(gpus: int, unit: int | None) -> GpuHourPrice:
        return rental_price(
            cat, acc, opt.pricing, gpus, unit_gpus=unit, usd_per_gpu_hour=opt.usd_per_gpu_hour,
            offer=opt.offer, provider=opt.provider, region=opt.region, where=where,
        )  # fmt: skip

    if opt.pricing in RENTED:
        price = rent(opt.gpus, unit_gpus)
        price.reprice = rent
    else:
        price = owned_price(acc, fac, depreciation, opt.gpus)
        price.instances = math.ceil(opt.gpus / sysm.devices_per_node)
        price.gpus_billed = opt.gpus
    if price.offer and opt.hardware not in cat.systems:
        osys = offer_system(cat, acc, sysm, price.offer)
        if osys is not None:
            if osys.node_power_w != cat.systems[osys.id].node_power_w:
                price.inputs["node_power_w_from"] = sysm.id
            sysm = osys
            price.inputs["system"] = osys.id
    return price, sysm


def quoted_price(
    cat: Catalog,
    opt: HardwareOption,
    acc: Accelerator,
    sysm: System,
    fac: CostFactors,
    *,
    unit_gpus: int,
    where: str = "--hardware",
) -> tuple[GpuHourPrice | None, System, str]:
    """Price an option as ``compare`` does (:func:`option_price`), or say why it has no price.

    For the commands that estimate one plan and price it (``aitco train``, ``aitco infer``):
    the price, the system its offer runs on, and a note naming where the price came from
    (None and the catalog's reason when the option cannot be priced: no offer for the pricing
    mode, no purchase price; a price with ``reasons`` when compare finds the option infeasible:
    no eligible offer).
    """
    try:
        price, sysm = option_price(cat, opt, acc, sysm, fac, unit_gpus=unit_gpus, where=where)
    except CatalogError as exc:
        return None, sysm, f"price: none ({exc})"
    if price.reasons:  # compare's verdict: the option cannot run as priced
        return price, sysm, f"price: none, infeasible ({'; '.join(price.reasons)})"
    if opt.usd_per_gpu_hour is not None and opt.pricing in RENTED:
        return price, sysm, "price: --usd-per-gpu-hour"
    if opt.pricing in RENTED:
        return (
            price,
            sysm,
            (f"price: {opt.pricing} offer {price.offer} (whole instances, as aitco compare)"),
        )
    return price, sysm, f"price: {opt.pricing} (capital and running costs, as aitco compare)"


def num(x: Any) -> float | None:
    """Return ``x`` as a float, None when it is not a number."""
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def per_token_j(kwh: float, tokens: float) -> float | None:
    """Return the energy per token at the meter (None: no tokens, or energy unknown). [J]."""
    if not tokens or not math.isfinite(kwh):
        return None
    return float(carbon.energy_per_token_j(kwh, tokens))


def option_rows(
    kind: str,
    scn: Scenario,
    opt: HardwareOption,
    acc: Accelerator,
    sysm: System,
    price: GpuHourPrice,
    *,
    gpus: float,
    host_gpus: float,
    **hours: Any,
) -> CostRows:
    """Return the :class:`~aitco.cost.runs.CostRows` of one option (one row).

    Parameters
    ----------
    kind : str
        ``"training"`` or ``"inference"``.
    scn, opt : Scenario, HardwareOption
        The scenario (ops, data, compliance) and the option (pricing, region, cooling).
    acc, sysm : Accelerator, System
        The accelerator (its board power) and the system it runs on.
    price : GpuHourPrice
        The accelerator-hour price and the instances it bills.
    gpus : float
        Accelerators priced (a MIG slice or a time-sliced share counts as one). [count]
    host_gpus : float
        Whole accelerators whose share of their servers' host power the option draws. [count]
    **hours
        The hour fields of :class:`~aitco.cost.runs.CostRows` (``productive_h``, ``wall_h``,
        ``busy_h``, the overheads) and any other field to set.
    """
    rented = opt.pricing in RENTED
    board_w = acc.board_power_w  # the TDP, or the lower power limit the device is run at
    idle_prov = acc.provenance.get("idle_w")
    idle_src = (
        f"accelerators.{acc.id}.idle_w: {idle_prov.source.cite()}"
        if acc.idle_w is not None and idle_prov is not None
        else ""
    )
    return CostRows(
        kind=kind,
        modes=opt.pricing,
        hardware=acc.id,
        gpus=gpus,
        usd_per_gpu_h=price.usd_per_gpu_h,
        gpus_billed=price.gpus_billed,
        instances=price.instances,
        providers=(price.provider or "") if rented else "",
        job_nodes=math.ceil(gpus / sysm.devices_per_node),
        # host power: the job's share of its servers' slots (1 GPU of 8 draws 1/8 of the host)
        host_nodes=float(power.host_share_nodes(host_gpus, sysm.devices_per_node)),
        tdp_w=math.nan if board_w is None else board_w,
        node_power_w=sysm.node_power_w,
        cooling=opt.cooling or sysm.cooling,
        regions=opt.region or DEFAULT_REGION,
        data=scn.data,
        compliance=scn.compliance,
        reuse_fraction=opt.committed_reuse_fraction,
        repair_model=scn.ops.repair_model,
        power_limit_w=acc.power_limit_w,
        idle_w=math.nan if acc.idle_w is None else acc.idle_w,
        idle_w_source=idle_src,
        **hours,
    )


def priced_option(
    rows: CostRows,
    fac: CostFactors,
    price: GpuHourPrice,
    children: dict[str, list[Term]] | None = None,
    **breakdown: Any,
) -> tuple[Breakdown, ItemTable]:
    """Compose the items of one option into a breakdown (totalled) and return both.

    ``children``: the explain terms behind items' hours, by item line (``compute``).
    ``breakdown``: the :class:`~aitco.cost.breakdown.Breakdown` fields (name, kind, hardware,
    pricing, gpus).
    """
    table = compose(rows, fac)
    b = add_to_breakdown(Breakdown(**breakdown), table, 0, price, children)
    return b.finalize(), table


def training_terms(res: Any, gpus: float, productive_h: float, tokens: float) -> list[Term]:
    """Return the explain chain of a run's compute: GPU-hours, tokens/s, step, kernel terms.

    ``res``: :func:`aitco.perf.training.estimate_training` of the run; its step-time terms
    (compute, communication, bubble, optimizer...) are the leaves and add up to ``step_time_s``.
    """
    v = res.values
    below: list[Term] = []
    if num(v.get("step_time_s")) is not None and hasattr(res, "to_estimate"):
        kernels = [t for t in res.to_estimate().terms if t.unit == "s"]
        below = [
            Term(
                name="step_time_s",
                value=float(v["step_time_s"]),
                unit="s",
                formula="sum of the step-time terms (aitco.perf.training)",
                children=kernels,
            )
        ]
    tps = Term(
        name="tokens_per_s",
        value=float(v["tokens_per_s"]),
        unit="tokens/s",
        formula="tokens per step (global batch x sequence length) / step_time_s",
        children=below,
    )
    prod = Term(
        name="productive_h",
        value=productive_h,
        unit="h",
        formula="tokens / tokens_per_s / 3600",
        inputs={"tokens": tokens},
        children=[tps],
    )
    return [
        Term(
            name="productive_gpu_hours",
            value=gpus * productive_h,
            unit="GPU h",
            formula="gpus x productive_h",
            inputs={"gpus": gpus},
            children=[prod],
        )
    ]


def energy_note(acc: Accelerator, table: ItemTable) -> str:
    """Return the assumption line on an option's energy: at the meter, or why it is unknown."""
    e = table.costs.energy
    kwh = float(e["meter_kwh"][0])
    if not math.isfinite(kwh):
        return f"{acc.id} has no published TDP: energy and emissions not estimated"
    ci_id, ci = table.costs.carbon_intensity
    return f"energy at the meter {kwh:,.0f} kWh; carbon intensity {ci[0]} kg/kWh ({ci_id[0]})"


def energy_values(table: ItemTable) -> tuple[float, float]:
    """Energy at the meter and emissions of the option (NaN when unknown). [kWh], [kg]."""
    e = table.costs.energy
    return float(e["meter_kwh"][0]), float(e["kg_co2e"][0])


def feasibility(values: dict[str, Any], price: GpuHourPrice) -> tuple[bool, list[str]]:
    """Whether the option can run as priced, and why not (the reasons, in words)."""
    reasons: list[str] = []
    if values.get("fits") is False:
        reasons.append("does not fit in memory")
    if values.get("meets_slo") is False:
        reasons.append("misses the SLO")
    reasons.extend(values.get("_extra_reasons", []))
    reasons.extend(price.reasons)
    return not reasons, reasons


def instance_values(price: GpuHourPrice, b: Breakdown) -> dict[str, Any]:
    """Return the feasibility and billing values every option reports."""
    feasible, reasons = feasibility(b.values, price)
    b.values.pop("_extra_reasons", None)
    unused = b.usd("committed_term_unused")
    return {
        "feasible": feasible,
        "infeasible_reasons": reasons,
        "offer_id": price.offer,
        "provider": price.provider,
        "instances": price.instances,
        "gpus_billed": price.gpus_billed,
        # a committed term: the share used (every item but the unused rest of the term) and the
        # unused commitment, apart (0 without a committed term); they add up to total_usd
        "used_usd": b.total_usd - unused,
        "committed_term_unused_usd": unused,
    }
