r"""Optimise: the cheapest plan meeting constraints, and the Pareto fronts.

``optimize`` is a constrained sweep (:mod:`aitco.decide.sweep`): the constraints (deadline,
budget, P99 TTFT/TPOT, max GPUs, allowed clouds/regions/pricing modes) mask the evaluated
configurations chunk by chunk, the objective ranks what is left, and the Pareto front is cost vs
time for training and cost vs latency for serving. When no plan meets every constraint, the
result says which constraint binds (the one that alone rules out the most otherwise-valid plans)
and which plan comes closest (least total relative violation
:math:`\sum_c \max(0, x_c / \ell_c - 1)`).
"""

from __future__ import annotations

from typing import Any

from aitco.catalog.loader import Catalog
from aitco.decide.api_vs_self_host import poisson_check
from aitco.decide.service_cost import price_service_plan
from aitco.decide.sweep import Constraints, SweepResult, SweepSpec, sweep
from aitco.errors import InputError
from aitco.units import HOURS_PER_MONTH


def with_constraints(spec: SweepSpec, **limits: Any) -> SweepSpec:
    """Return ``spec`` with constraint fields replaced where a limit is given (not None)."""
    given = {k: v for k, v in limits.items() if v is not None}
    if not given:
        return spec
    unknown = set(given) - set(Constraints.model_fields)
    if unknown:
        raise InputError(
            "constraints", sorted(unknown), f"one of {', '.join(Constraints.model_fields)}"
        )
    cons = Constraints.model_validate({**spec.constraints.model_dump(), **given})
    return spec.model_copy(update={"constraints": cons})


def optimize(
    spec: SweepSpec, catalog: Catalog, *, p99_check: bool = True, **kwargs: Any
) -> dict[str, Any]:
    """Find the cheapest feasible plan and the Pareto front under ``spec.constraints``.

    Parameters
    ----------
    spec : SweepSpec
        The search space, objective and constraints.
    catalog : Catalog
        Hardware, prices, models.
    p99_check : bool
        Serving with an arrival rate and latency bounds: the sweep ranks plans at steady-state
        mean latency; the top-K are then simulated under Poisson arrivals by the inference
        engine, each scaled to the replicas it needs to meet the bounds at P99
        (``replicas_for_slo``), and ``best`` is the cheapest after scaling (``p99_checks``).
    **kwargs
        Passed to :func:`aitco.decide.sweep.sweep` (backend, scheduler, workers, progress).

    Returns
    -------
    dict
        ``status`` ("optimal" or "infeasible"), ``best`` (the cheapest feasible plan or None),
        ``pareto`` (the front), ``binding`` (constraints ranked by the plans they alone exclude),
        ``closest`` (the least-violating valid plan when infeasible), and the sweep counters.
    """
    res: SweepResult = sweep(spec, catalog, **kwargs)
    out = res.to_json()
    top = out["top"]
    out["constraints"] = {k: v for k, v in spec.constraints.model_dump().items() if v is not None}
    if res.partial.feasible > 0:
        out["status"] = "optimal"
        out["best"] = top[0]
        out["closest"] = []
        if spec.kind == "serving" and p99_check:
            _verify_p99(spec, catalog, out)
    else:
        out["status"] = "infeasible"
        out["best"] = None
        closest = out.get("closest") or []
        if closest:
            c = closest[0]
            out["closest_violations"] = {
                name: {"metric": metric, "limit": lim, "value": c.get(metric)}
                for name, (metric, lim) in res.plan.bounds.items()
                if c.get(metric) is not None and c[metric] > lim
            }
        if res.partial.valid == 0:
            out["binding"] = [
                {"constraint": reason, "plans_failing": n}
                for reason, n in out["invalid_reasons"].items()
            ]
    return out


#: Sweep service fields the P99 check passes to the inference engine.
P99_ENGINE_FIELDS: dict[str, Any] = {
    "prefix_cache_hit_rate": float,
    "scheduler_steps": int,
    "max_batched_tokens": int,
}
#: Service layouts the P99 check does not simulate (their rows keep the steady-state figures).
P99_UNSIMULATED = ("disaggregate", "load_profile", "autoscale", "mig")


def _verify_p99(spec: SweepSpec, catalog: Catalog, out: dict[str, Any]) -> None:
    """Re-check the top serving plans at P99 under Poisson load; keep the cheapest that passes."""
    qps = spec.workload.get("qps")
    c = spec.constraints
    if qps is None or (c.max_ttft_s is None and c.max_tpot_s is None):
        return
    checks = []
    chosen = None
    best_cost = float("inf")
    for row in out["top"]:
        plan = {
            "hardware": row["hardware"],
            "gpus_per_replica": int(row["gpus"]),
            "replicas": int(row["replicas"]),
            "precision": row["precision"],
            "batch": int(row["batch"]),
            "requests_per_s_needed": float(qps),
        }
        layout = [k for k in P99_UNSIMULATED if row.get(k) not in (None, "none")]
        if int(row.get("ep", 1) or 1) > 1:
            layout.append("ep")
        if int(row.get("time_slice", 1) or 1) > 1:
            layout.append("time_slice")
        if layout:
            # the Poisson simulation runs one aggregated replica shape: these rows keep the
            # sweep's steady-state figures
            checks.append({"config": row["config"], "available": False,
                           "error": f"not simulated for {', '.join(layout)}"})  # fmt: skip
            continue
        extra = {k: cast(row[k]) for k, cast in P99_ENGINE_FIELDS.items() if row.get(k) is not None}
        if extra.get("max_batched_tokens", 0) < 0:  # -1: the engine's default
            extra.pop("max_batched_tokens")
        chk = poisson_check(
            catalog,
            str(row["model"]),
            plan,
            int(row["input_tokens"]),
            int(row["output_tokens"]),
            c.max_ttft_s,
            c.max_tpot_s,
            **extra,
        )
        checks.append({"config": row["config"], **chk})
        need_r = chk.get("replicas_for_slo")
        if not need_r:
            continue
        priced = _priced_at_p99(spec, catalog, row, int(need_r), extra)
        if priced is None:
            continue
        if priced["usd_per_h_at_p99"] < best_cost:
            best_cost = priced["usd_per_h_at_p99"]
            chosen = {
                **row,
                **priced,
                "p99_ttft_s_at_sweep_replicas": chk.get("p99_ttft_s"),
                "p99_tpot_s_at_sweep_replicas": chk.get("p99_tpot_s"),
            }
    out["p99_checks"] = checks
    if chosen is None:
        out["status"] = "infeasible_at_p99"
        out["best_steady_state"] = out["best"]
        out["best"] = None
    else:
        out["best"] = chosen


def _priced_at_p99(
    spec: SweepSpec, catalog: Catalog, row: dict[str, Any], replicas: int, extra: dict[str, Any]
) -> dict[str, Any] | None:
    """Price the plan the P99 check scales to, as compare prices a service (one total).

    :func:`aitco.decide.service_cost.price_service_plan` on the row's replica (tensor parallel,
    batch cap, offer) at ``replicas``. The row becomes that plan: ``replicas``, ``total_gpus``,
    ``total_usd``, ``usd_per_h`` and the costs per token are the scaled plan's; the sweep's
    steady-state figures stay as ``sweep_replicas`` and ``sweep_total_usd``. None when it
    cannot be priced.
    """
    months = float(spec.workload.get("months", 1.0))
    gpr = int(row["gpus"])
    plan = {
        **{k: row[k] for k in ("model", "hardware", "precision", "batch", "pricing")},
        **{k: row[k] for k in ("input_tokens", "output_tokens")},
        "gpus_per_replica": gpr, "replicas": replicas, "offer_id": row.get("offer_id"),
        "requests_per_s_needed": float(spec.workload["qps"]),
    }  # fmt: skip
    got = price_service_plan(catalog, plan, months=months, engine_fields=extra)
    if got is None:
        return None
    b, _res = got
    v = b.values
    usd_h = b.total_usd / (months * HOURS_PER_MONTH)
    return {
        "sweep_replicas": row["replicas"],
        "sweep_total_usd": row["total_usd"],
        "replicas": replicas,
        "total_gpus": replicas * gpr,
        "total_usd": b.total_usd,
        "usd_per_h": usd_h,
        "usd_per_million_output_tokens": v["usd_per_million_output_tokens"],
        "gpus_billed": v["gpus_billed"],
        "instances": v["instances"],
        "offer_id": v["offer_id"],
        "replicas_at_p99": replicas,
        "total_gpus_at_p99": replicas * gpr,
        "usd_per_h_at_p99": usd_h,
        "usd_per_million_output_tokens_at_p99": v["usd_per_million_output_tokens"],
    }


def infeasible_message(out: dict[str, Any]) -> str:
    """One line saying which constraint binds and what the closest plan reaches."""
    if out.get("valid", 0) == 0:
        reasons = ", ".join(f"{k} ({v})" for k, v in out.get("invalid_reasons", {}).items())
        return f"no valid plan in the search space: {reasons or 'empty'}"
    b = out["binding"][0] if out.get("binding") else None
    msg = "no plan meets every constraint"
    if b:
        msg += (
            f"; binding: {b['constraint']} <= {b['limit']:g} ({b['metric']}) rules out "
            f"{b['plans_failing']:,} of {out['valid']:,} valid plans"
        )
    if out.get("closest"):
        c = out["closest"][0]
        parts = [f"{k}={c[k]}" for k in ("hardware", "gpus", "pricing") if k in c]
        viol = out.get("closest_violations", {})
        vtxt = ", ".join(f"{v['metric']}={v['value']:.4g} > {v['limit']:g}" for v in viol.values())
        msg += f"; closest plan: {' '.join(parts)} ({vtxt})"
    return msg
