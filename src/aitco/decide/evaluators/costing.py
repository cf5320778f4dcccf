"""Dollars of a sweep's rows: the TCO composition of ``aitco compare``, over arrays.

Every evaluator prices its rows with :class:`ItemPricing`: the sweep's bills (offers, whole
instances, spot rates) and hours become :class:`~aitco.cost.runs.CostRows`, and
:func:`aitco.cost.tco.items_usd` prices them with the item lines ``aitco compare`` prices one
option with (:data:`~aitco.cost.tco.TRAINING_LINES`, :data:`~aitco.cost.tco.SERVING_LINES`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aitco.cost.factors import CostFactors
from aitco.cost.pricing import DEFAULT_REGION
from aitco.cost.reliability import service_downtime
from aitco.cost.runs import CostRows
from aitco.cost.tco import items_usd
from aitco.decide.evaluators.base import PRICING_MODES
from aitco.decide.evaluators.tables import HardwareTable
from aitco.decide.scenario import ComplianceCosts, DataCosts, OpsAssumptions, TrainingWorkload
from aitco.decide.training_cost import training_goodput, training_storage_gb
from aitco.errors import InputError
from aitco.perf.serving import busy_time_share
from aitco.units import HOURS_PER_DAY, HOURS_PER_MONTH, SECONDS_PER_HOUR


class ItemPricing:
    """The items of ``aitco compare`` over a sweep's rows: one cost model for every evaluator.

    Mixed into the evaluators, which provide the attributes below. Every dollar amount comes
    from :func:`aitco.cost.tco.items_usd`, the composition ``aitco compare`` prices one option
    with; the goodput of training rows from :func:`aitco.decide.training_cost.training_goodput`
    and the downtime of services from :func:`aitco.cost.reliability.service_downtime`. A factor
    the catalog lacks is an error naming it.
    """

    hw: HardwareTable
    factors: CostFactors | None
    ops: OpsAssumptions
    data: DataCosts
    accelerators: list[Any]
    systems: list[Any]
    offer_systems: list[Any]
    committed_reuse_fraction: float
    #: Training evaluators: tokens to train on and the model records; serving evaluators: the
    #: arrival rate (None: one saturated replica) and the service period in months.
    tokens: float
    model_archs: list[Any]
    qps: float | None
    months: float

    def _fac(self) -> CostFactors:
        if self.factors is None:
            raise InputError(
                "factors",
                None,
                "catalog factors to price the sweep's items (aitco.cost.factors.CostFactors)",
            )
        return self.factors

    def _providers(self) -> np.ndarray:
        """Return the provider id of each offer code (last element: no offer, "")."""
        provs: list[str | None] = [o.provider for lst in self.hw.offers for o in lst]
        if len(provs) != len(self.hw.offer_ids):
            provs = [None] * len(self.hw.offer_ids)
        return np.array([p or "" for p in [*provs, None]], dtype=object)

    def _row_systems(
        self, hw: np.ndarray, codes: np.ndarray, rented: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Devices per node and host power per node of each row's system.

        A rented row runs on its offer's system where the catalog names one (as compare does);
        the others on the hardware's own system.
        """
        if len(self.systems) != len(self.hw.ids):
            raise InputError(
                "systems", len(self.systems), f"one catalog system per hardware id ({self.hw.ids})"
            )
        dpn = self.hw.devices_per_node[hw].astype(float)
        node_w = np.array([float(s.node_power_w) for s in self.systems])[hw]
        if self.offer_systems and np.any(rented):
            osys = [*self.offer_systems, None]
            o_dpn = np.array([math.nan if x is None else x.devices_per_node for x in osys])
            o_w = np.array([math.nan if x is None else x.node_power_w for x in osys])
            c = np.where(rented & (codes >= 0), codes, -1)
            use = np.isfinite(o_dpn[c])
            dpn = np.where(use, o_dpn[c], dpn)
            node_w = np.where(use, o_w[c], node_w)
        return dpn, node_w

    def _idle_w(self, hw: np.ndarray) -> np.ndarray:
        """Return the measured idle draw of each row's accelerator (NaN: not published). [W]."""
        idle = getattr(self.hw, "idle_w", np.empty(0))
        if len(idle) != len(self.hw.ids):
            return np.full(np.shape(hw), np.nan)
        return np.asarray(idle, dtype=float)[hw]

    def _row_names(self, hw: np.ndarray, mode: np.ndarray, region: np.ndarray) -> dict[str, Any]:
        """Hardware ids, pricing modes, regions and owned cooling of rows, as text."""
        regions = [r or DEFAULT_REGION for r in self.hw.regions]
        return {
            "hardware": np.array(self.hw.ids, dtype=object)[hw],
            "modes": np.array(PRICING_MODES, dtype=object)[mode],
            "regions": np.array(regions, dtype=object)[region],
            "cooling": np.array([s.cooling for s in self.systems], dtype=object)[hw],
        }

    def run_items(
        self,
        rows: np.ndarray,
        hw: np.ndarray,
        mdl: np.ndarray,
        pricing: np.ndarray,
        gpus: np.ndarray,
        productive_h: np.ndarray,
        price: np.ndarray,
        bl: dict[str, np.ndarray],
        region: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Return the wall clock and compare's items of training runs, as arrays.

        Goodput from :func:`aitco.decide.training_cost.training_goodput` and the items from
        :func:`aitco.cost.tco.items_usd` -- the functions ``aitco compare`` prices one option
        with -- evaluated once per model over that model's rows.
        """
        fac = self._fac()
        mode = pricing[rows]
        n = gpus[rows].astype(float)
        reg = np.zeros(rows.size, dtype=np.int64) if region is None else region[rows]
        offered = bl["offer"][rows] >= 0
        rented = mode < PRICING_MODES.index("owned")
        codes = bl["offer"][rows].astype(np.int64)
        dpn, node_w = self._row_systems(hw[rows], codes, rented & offered)
        nodes = np.ceil(n / dpn)
        instances = np.where(rented & offered, bl["instances"][rows], nodes)
        spot = mode == PRICING_MODES.index("spot")
        rate = np.where(spot, bl["spot_rate"][rows], 0.0)
        provider = np.where(rented, self._providers()[np.where(offered, codes, -1)], "")
        names = self._row_names(hw[rows], mode, reg)
        wall_h = np.zeros(rows.size)
        total: dict[str, np.ndarray] = {}
        w = TrainingWorkload(model="sweep", tokens=self.tokens)
        for mi in np.unique(mdl[rows]):
            sel = np.flatnonzero(mdl[rows] == mi)
            g = training_goodput(
                self.model_archs[int(mi)], w, self.ops, fac, n[sel], nodes[sel],
                productive_h[sel], spot_rate_per_instance_h=rate[sel],
                instances=instances[sel], where="option",
            )  # fmt: skip
            o = g.overheads
            wh = np.asarray(o["wall_clock_h"], dtype=float)
            wall_h[sel] = wh
            ds_gb, ck_gb = training_storage_gb(
                self.data, self.ops, fac, self.tokens, g.checkpoint_bytes
            )
            cost_rows = CostRows(
                kind="training", gpus=n[sel], usd_per_gpu_h=price[rows][sel],
                gpus_billed=bl["gpus_billed"][rows][sel], instances=bl["instances"][rows][sel],
                providers=provider[sel], job_nodes=nodes[sel], host_nodes=n[sel] / dpn[sel],
                productive_h=productive_h[sel], wall_h=wh, busy_h=productive_h[sel],
                tdp_w=self.hw.tdp_w[hw[rows][sel]], idle_w=self._idle_w(hw[rows][sel]),
                node_power_w=node_w[sel],
                data=self.data, compliance=ComplianceCosts(), rework_h=o["rework_h"],
                restart_h=o["restart_h"], checkpoint_stall_h=o["checkpoint_stall_h"],
                firmware_h=o["firmware_h"], interruptions=o["interruptions"],
                failure_share=g.failure_share, reuse_fraction=self.committed_reuse_fraction,
                storage_months=wh / HOURS_PER_MONTH, dataset_gb=ds_gb, checkpoint_gb=ck_gb,
                period_days=wh / HOURS_PER_DAY, repair_model=self.ops.repair_model,
                **{k: v[sel] for k, v in names.items()},
            )  # fmt: skip
            for k, a in items_usd(cost_rows, fac).items():
                total.setdefault(k, np.zeros(rows.size))[sel] = a
        total["wall_clock_h"] = wall_h
        return total

    def serving_items(
        self,
        hw: np.ndarray,
        pricing: np.ndarray,
        region: np.ndarray,
        gpus_per_replica: np.ndarray,
        gpus: np.ndarray,
        hours: float,
        busy: np.ndarray,
        bl: dict[str, np.ndarray],
        active: np.ndarray | None = None,
        slices: np.ndarray | float = 1.0,
    ) -> dict[str, np.ndarray]:
        """Return compare's items of services of ``gpus`` accelerators for ``hours``, as arrays.

        :func:`aitco.cost.tco.items_usd` of the services (compute, restarts, firmware,
        spares, fragmentation, idle instance accelerators, committed term, power, people, the
        stored dataset, carbon), as ``aitco compare`` prices a service; downtime from
        :func:`aitco.cost.reliability.service_downtime`. ``active``: the service's busy share
        of the hours (:func:`aitco.perf.serving.energy_per_token`'s ``busy_fraction``: board
        power over that share of the hours, idle power over the rest, as compare takes the
        engine's power); None: the catalog's draw factor over the ``busy`` hours. ``slices``: MIG
        slices per GPU (``gpus`` then counts slices, priced and powered per slice). ``hours``
        may be an array (an autoscaled service billed for its running hours).
        """
        fac = self._fac()
        n = np.asarray(gpus, dtype=float)
        hrs = np.asarray(hours, dtype=float) * np.ones_like(n)
        rented = pricing < PRICING_MODES.index("owned")
        codes = bl["offer"].astype(np.int64)
        offered = codes >= 0
        provider = np.where(rented, self._providers()[np.where(offered, codes, -1)], "")
        dpn, node_w = self._row_systems(hw, codes, rented & offered)
        down = service_downtime(fac, n, gpus_per_replica, hrs)
        share = np.asarray(busy if active is None else active, dtype=float)
        busy_h = hrs * share
        cost_rows = CostRows(
            kind="inference", gpus=n, usd_per_gpu_h=bl["price"], gpus_billed=bl["gpus_billed"],
            instances=bl["instances"], providers=provider, job_nodes=np.ceil(n / dpn),
            host_nodes=n / slices / dpn, productive_h=hrs - down.lost_h, wall_h=hrs,
            busy_h=busy_h, tdp_w=self.hw.tdp_w[hw] / slices,
            idle_w=self._idle_w(hw) / slices, node_power_w=node_w,
            data=self.data, compliance=ComplianceCosts(), restart_h=down.restart_h,
            firmware_h=down.firmware_h, interruptions=down.interruptions,
            active_fraction=None if active is None else np.ones(n.shape),
            reuse_fraction=self.committed_reuse_fraction, storage_months=self.months,
            dataset_gb=self.data.stored_gb or 0.0,
            period_days=self.months * HOURS_PER_MONTH / HOURS_PER_DAY,
            repair_model=self.ops.repair_model, **self._row_names(hw, pricing, region),
        )  # fmt: skip
        return items_usd(cost_rows, fac)

    def _serving_outputs(
        self,
        hw: np.ndarray,
        pricing: np.ndarray,
        region: np.ndarray,
        ttft: np.ndarray,
        tpot: np.ndarray,
        tok_s: np.ndarray,
        o: np.ndarray,
        gpus: np.ndarray,
        busy_share: np.ndarray,
        *,
        slices: np.ndarray | float = 1.0,
        replicas: np.ndarray | None = None,
        qps: float | None = None,
        hours_share: np.ndarray | float = 1.0,
    ) -> dict[str, np.ndarray]:
        """Latency, replica and cost outputs shared by the serving evaluators.

        Notes
        -----
        replicas = ceil(qps x o / tokens/s) (1 without a QPS), busy share = qps / (replicas x
        requests/s) (1 without a QPS: a saturated replica); ``total_usd`` = the sum of compare's
        items for the service period (``months``), billed for whole instances
        (:meth:`HardwareTable.bill` of replicas x ``gpus`` accelerators in units of one
        replica); ``usd_per_h`` = total / hours; $/Mtok = total / (served tokens/s x 3600 x
        hours) x 1e6, served = qps x o or tokens/s. ``busy_share``: the share of an iteration
        the accelerators compute or stream memory; the draw over TDP is
        :func:`aitco.perf.serving.power_w` of it (as the inference engine's ``power_w``). A row
        whose scaled-out service has no eligible offer gets NaN costs (invalid, price).

        A service plan (:meth:`EngineServingEvaluator._plan_rows`) gives its own ``replicas``,
        offered ``qps`` and ``hours_share`` (the share of the period its accelerators are billed:
        an autoscaled pay-as-used service's mean over peak replicas). ``slices``: MIG slices per
        GPU (``gpus`` counts slices): whole GPUs are billed, priced per slice, as compare bills
        them.
        """
        q: float | None = self.qps if qps is None else qps
        rps = tok_s / o
        if replicas is not None:
            served_tok_s = (q if q is not None else rps * replicas) * o
            busy = np.minimum(1.0, served_tok_s / (replicas * tok_s))
        elif q is not None:
            replicas = np.ceil(q * o / tok_s)
            served_tok_s = q * o
            busy = np.minimum(1.0, q / (replicas * rps))
        else:
            replicas = np.ones_like(tok_s)
            served_tok_s = tok_s
            busy = np.ones_like(tok_s)
        g = np.asarray(gpus, dtype=float) * np.ones_like(tok_s)
        k = np.asarray(slices, dtype=float) * np.ones_like(tok_s)
        n = g * replicas
        bl = self.hw.bill(hw, pricing, region, np.ceil(n / k), np.maximum(np.ceil(g / k), 1.0))
        bl = {**bl, "price": bl["price"] / k, "gpus_billed": bl["gpus_billed"] * k}
        period_h = float(self.months) * HOURS_PER_MONTH
        hours = period_h * np.asarray(hours_share, dtype=float) * np.ones_like(tok_s)
        ok = np.isfinite(bl["price"])
        total = np.full(tok_s.shape, math.nan)
        if np.any(ok):
            sub = {key: a[ok] for key, a in bl.items()}
            # the busy share of the hours: of an iteration x of the time (perf.serving)
            in_flight = (
                np.inf if q is None else served_tok_s / o / replicas * (ttft + (o - 1) * tpot)
            )
            active = busy_share * busy_time_share(in_flight)
            items = self.serving_items(
                hw[ok], pricing[ok], region[ok], g[ok], n[ok], hours[ok], busy[ok], sub,
                active[ok], slices=k[ok],
            )  # fmt: skip
            total[ok] = sum(items.values(), np.zeros(int(np.count_nonzero(ok))))
        return {
            "ttft_s": ttft,
            "tpot_s": tpot,
            "e2e_latency_s": ttft + (o - 1.0) * tpot,
            "output_tokens_per_s": tok_s,
            "requests_per_s": rps,
            "replicas": replicas,
            "total_gpus": n,
            "total_usd": total,
            "usd_per_h": total / period_h,
            "usd_per_million_output_tokens": total
            / (SECONDS_PER_HOUR * period_h * served_tok_s)
            * 1e6,
            "price_usd_per_gpu_h": bl["price"],
            "gpus_billed": bl["gpus_billed"] * np.ones_like(tok_s),
            "instances": bl["instances"] * np.ones_like(tok_s),
            "offer_code": bl["offer"] * np.ones_like(tok_s),
        }
