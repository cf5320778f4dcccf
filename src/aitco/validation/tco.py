"""Full-run GPU-hours of published pre-training runs, predicted from throughput x goodput.

For every ``full_pretraining_run`` row of the training ground truth, the training engine predicts
the throughput from specs and the global efficiency parameters only, the TCO goodput model adds
failures, restarts, checkpoint stalls and firmware downtime at the catalog's reliability factors,
and the GPU-hours ``gpus x wall_clock_h`` are compared with the published figure. Nothing of the
row's outcome (GPU-hours, wall clock, throughput) enters the prediction.

Rows often leave out the cluster size, batch or sequence length; those are then filled with the
stated defaults below (and the row says so), or the row is skipped with the reason. Energy and
emissions are compared against the model cards' *stated basis* (GPU-hours x their nominal
per-GPU power, location-based emissions), not as metered truth.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.cost import carbon, power
from aitco.cost.factors import CostFactors
from aitco.decide.scenario import OpsAssumptions, TrainingWorkload
from aitco.decide.training_cost import training_goodput
from aitco.errors import AitcoError
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.units import KG_PER_TONNE, KWH_PER_MWH, WH_PER_MWH
from aitco.validation.training import SkipRow, _num, estimate_case, load_rows, run_case

#: Cluster size used when a row does not state it (LLaMA-1 65B's 2,048 A100s, Touvron et al.
#: 2023, the one size the Meta cards' family states). Per-GPU throughput barely depends on it;
#: the goodput does, weakly (failures scale with the cluster).
ASSUMED_GPUS = 2048


def predict_full_run(
    row: Any, catalog: Catalog, eff: EfficiencyParams, fac: CostFactors
) -> dict[str, Any]:
    """Predict one full-run row's GPU-hours (and energy on the card's basis).

    The throughput part is ``aitco validate training``'s own prediction of the row
    (:func:`~aitco.validation.training.run_case`, :func:`~aitco.validation.training.estimate_case`:
    the architecture, precision, default batch rule, stack options and the plan `aitco train`
    reports), so the two commands give one ideal figure; here a row without its cluster size is
    predicted on :data:`ASSUMED_GPUS` devices, and the goodput model adds the losses.
    """
    rid, label = str(row["id"]), str(row["model"])
    observed = _num(row.get("gpu_hours"))
    wall_obs = _num(row.get("wall_clock_hours"))
    if not observed and not (wall_obs and _num(row.get("num_accelerators"))):
        raise SkipRow("no published gpu_hours (nor wall_clock_hours with num_accelerators)")
    case = run_case(row, catalog, assumed_gpus=ASSUMED_GPUS)
    out: dict[str, Any] = {"id": rid, "model": label, "notes": list(case.notes)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = estimate_case(case, catalog, eff)
    for wmsg in {str(c.message) for c in caught}:
        out["notes"].append(f"training-engine warning: {wmsg}")
    acc, sysm = catalog.hardware(case.accelerator)
    n, tokens, seq, gb = case.gpus, float(case.tokens or 0.0), case.seq_len, case.global_batch
    productive_h = float(res.values["wall_clock_h"])
    nodes = math.ceil(n / sysm.devices_per_node)
    w = TrainingWorkload(model="validation", tokens=tokens, seq_len=int(seq), global_batch=gb)
    g = training_goodput(case.model, w, OpsAssumptions(), fac, n, nodes, productive_h)
    wall_h = float(g.overheads["wall_clock_h"])
    pred = n * wall_h
    target = "gpu_hours"
    if not observed:  # wall clock published with the cluster size: compare wall-clock hours
        target, observed, pred = "wall_clock_h", float(wall_obs or 0.0), wall_h
        out["notes"].append("target: wall-clock hours (no GPU-hours published)")
    out.update(
        target=target,
        hardware=acc.id,
        gpus=n,
        fits=bool(res.values["fits"]),
        mfu=float(res.values["mfu"]),
        goodput=float(g.overheads["goodput"]),
        gpu_hours_observed=observed,
        gpu_hours_throughput_only=n * productive_h if target == "gpu_hours" else productive_h,
        gpu_hours_predicted=pred,
        ape=abs(pred - observed) / observed,
        log_ratio=math.log(observed / pred),
    )
    # energy on the card's stated basis: GPU-hours x nominal per-GPU power (PUE-adjusted peak)
    p_card = _num(row.get("power_w_per_gpu"))
    e_card = _num(row.get("energy_mwh"))
    if p_card and e_card:
        # aitco's per-GPU power at the meter, applied to the card's own GPU-hours
        node_share = sysm.node_power_w / sysm.devices_per_node
        it_w = float(
            power.it_power_w(
                1,
                acc.board_power_w or 0.0,
                1.0,
                fac.value("utilization-power.training-fraction-of-tdp"),
                fac.value("idle-power.fraction-of-tdp"),
                1,
                node_share,
                fac.value("network.switch-power-w-per-gpu"),
            )
        )
        meter_w = float(
            power.facility_power_w(
                it_w, fac.value("power-conversion.loss"), fac.value("pue.hyperscale")
            )
        )
        e_aitco = observed * meter_w / WH_PER_MWH  # GPU-h x W -> MWh
        out.update(
            energy_mwh_card=e_card,
            energy_mwh_card_basis_from_prediction=pred * p_card / WH_PER_MWH,
            energy_mwh_aitco_power_model=e_aitco,
            energy_ratio_aitco_to_card=e_aitco / e_card,
            meter_w_per_gpu_aitco=meter_w,
            power_w_per_gpu_card=p_card,
        )
        t_card = _num(row.get("emissions_tco2eq"))
        if t_card:
            _, ci = fac.region_value("carbon.kg-per-kwh", "us", "carbon region")
            t_aitco = float(carbon.emissions_kg_co2e(e_card * KWH_PER_MWH, ci)) / KG_PER_TONNE
            out.update(
                tco2e_card=t_card,
                tco2e_aitco_from_card_energy=t_aitco,
                implied_card_kg_per_kwh=t_card * KG_PER_TONNE / (e_card * KWH_PER_MWH),
                grid_kg_per_kwh_aitco=ci,
            )
    return out


def validate_full_runs(
    catalog: Catalog,
    *,
    efficiency: EfficiencyParams | None = None,
    path: str | None = None,
    preset: str | None = None,
) -> dict[str, Any]:
    """Predict every full-run row; return rows, skipped rows and the error summary.

    Parameters
    ----------
    catalog : Catalog
        Catalog (hardware specs and reliability factors).
    efficiency : EfficiencyParams, optional
        Efficiency parameters (default: the globally fitted ones).
    path : str, optional
        Ground-truth CSV (default: the copy shipped in :mod:`aitco.validation`).
    preset : str, optional
        Assumption preset for the goodput and power factors.

    Returns
    -------
    dict
        ``rows`` (predicted), ``skipped`` (id, model, reason) and ``summary`` (median and worst
        APE of GPU-hours with and without the goodput model, count).
    """
    eff = efficiency or DEFAULT_EFFICIENCY
    fac = CostFactors(catalog, preset)
    df = load_rows(path)
    rows, skipped = [], []
    for _, row in df.iterrows():
        if str(row["run_scope"]) != "full_pretraining_run":
            continue
        try:
            rows.append(predict_full_run(row, catalog, eff, fac))
        except SkipRow as exc:
            skipped.append({"id": str(row["id"]), "model": str(row["model"]), "reason": str(exc)})
        except AitcoError as exc:
            skipped.append(
                {"id": str(row["id"]), "model": str(row["model"]), "reason": f"model error: {exc}"}
            )
    summary: dict[str, Any] = {"n_predicted": len(rows), "n_skipped": len(skipped)}
    if rows:
        ape = np.array([r["ape"] for r in rows])
        thr = np.array(
            [
                abs(r["gpu_hours_throughput_only"] - r["gpu_hours_observed"])
                / r["gpu_hours_observed"]
                for r in rows
            ]
        )
        lr = np.array([r["log_ratio"] for r in rows])
        summary.update(
            median_ape=float(np.median(ape)),
            worst_ape=float(np.max(ape)),
            worst_id=rows[int(np.argmax(ape))]["id"],
            median_ape_throughput_only=float(np.median(thr)),
            median_log_ratio=float(np.median(lr)),
            median_goodput=float(np.median([r["goodput"] for r in rows])),
        )
    return {"rows": rows, "skipped": skipped, "summary": summary}
