"""Dollars of a sweep's rows: the items of ``aitco compare``, over arrays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aitco.cost import reliability
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import COMMITTED_TERM_YEARS, DEFAULT_REGION, HELD
from aitco.decide.compare import (
    POWER_ITEMS,
    SERVING_RUN_VALUES,
    carbon_price_usd,
    power_items_usd,
    serving_run_items_usd,
    storage_items_usd,
    training_goodput,
    training_run_items_usd,
    training_storage_gb,
)
from aitco.decide.evaluators.base import PRICING_MODES
from aitco.decide.evaluators.tables import HardwareTable
from aitco.decide.scenario import DataCosts, OpsAssumptions, TrainingWorkload
from aitco.errors import CatalogError, InputError
from aitco.perf.serving import idle_power_fraction, power_w
from aitco.units import (
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    SECONDS_PER_HOUR,
)

# ----------------------------------------------------------------------------- pricing
#: Carbon price factor (compare's ``carbon_price`` item; 0 = emissions reported, not priced).
CARBON_PRICE_ID = "carbon.usd-per-tonne"
#: Draw while computing, as a fraction of TDP (compare's power items, training and services).
ACTIVE_POWER_ID = "utilization-power.training-fraction-of-tdp"
#: Service period of a serving sweep when the workload gives none (``InferenceWorkload``).


class ItemPricing:
    """The items of ``aitco compare`` over a sweep's rows: one cost model for every evaluator.

    Mixed into the evaluators, which provide the attributes below. Every dollar amount comes
    from the vectorised item functions of :mod:`aitco.decide.compare` (which build on
    :mod:`aitco.cost`): :func:`~aitco.decide.compare.training_run_items_usd`,
    :func:`~aitco.decide.compare.serving_run_items_usd`,
    :func:`~aitco.decide.compare.power_items_usd`,
    :func:`~aitco.decide.compare.storage_items_usd` and
    :func:`~aitco.decide.compare.carbon_price_usd`, the functions ``aitco compare`` prices one
    option with. A factor the catalog lacks is an error naming it.
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

    def _power_items(
        self,
        hw: np.ndarray,
        mode: np.ndarray,
        region: np.ndarray,
        gpus: np.ndarray,
        nodes: np.ndarray,
        node_w: np.ndarray,
        busy_h: np.ndarray,
        idle_h: np.ndarray,
        active: np.ndarray | None = None,
        slices: np.ndarray | float = 1.0,
    ) -> dict[str, np.ndarray]:
        """Return compare's power items (owned) and carbon price (every mode), per row.

        ``active``: draw while busy over TDP per row (a service's, from its busy share); None:
        the catalog's training draw factor, as compare.
        """
        fac = self._fac()
        owned = mode == PRICING_MODES.index("owned")
        tdp = self.hw.tdp_w[hw] / slices  # a MIG slice / time-slicing share draws its share
        no_tdp = np.isnan(tdp)
        if np.any(owned & no_tdp):
            h = int(hw[np.flatnonzero(owned & no_tdp)[0]])
            raise CatalogError(
                f"accelerators.{self.hw.ids[h]}.tdp_w", None, "a TDP to compute power"
            )
        pue_owned = np.array([fac.value(f"pue.{s.cooling}") for s in self.systems])[hw]
        pue = np.where(owned, pue_owned, fac.value("pue.hyperscale"))
        names = [r or DEFAULT_REGION for r in self.hw.regions]
        ci = np.array([fac.region_value("carbon.kg-per-kwh", r, "carbon region")[1] for r in names])
        usd_kwh = np.zeros(len(names))
        if np.any(owned):
            for r in np.unique(region[owned]):
                usd_kwh[int(r)] = fac.region_value(
                    "electricity.usd-per-kwh", names[int(r)], "owned region"
                )[1]
        amt = power_items_usd(
            gpus=gpus, tdp_w=np.where(no_tdp, 0.0, tdp),
            active_fraction=fac.value(ACTIVE_POWER_ID) if active is None else active,
            idle_fraction=fac.value("idle-power.fraction-of-tdp"), nodes=nodes, node_power_w=node_w,
            switch_w_per_gpu=fac.value("network.switch-power-w-per-gpu"), busy_h=busy_h,
            idle_h=idle_h, loss=fac.value("power-conversion.loss"), pue=pue,
            usd_per_kwh=np.where(owned, usd_kwh[region], 0.0), kg_per_kwh=ci[region],
        )  # fmt: skip
        out = {k: np.where(owned, amt[k], 0.0) for k in POWER_ITEMS}
        if fac.has(CARBON_PRICE_ID):
            p = fac.value(CARBON_PRICE_ID)
            if p < 0:
                raise InputError(CARBON_PRICE_ID, p, "a carbon price >= 0")
            if p > 0:  # energy unknown without a TDP (rented): not priced, as in compare
                out["carbon_price"] = np.where(no_tdp, 0.0, carbon_price_usd(amt["kg_co2e"], p))
        return out

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

        Goodput from :func:`aitco.decide.compare.training_goodput`, the run items from
        :func:`aitco.decide.compare.training_run_items_usd`, storage from
        :func:`~aitco.decide.compare.storage_items_usd` and power and carbon from
        :func:`~aitco.decide.compare.power_items_usd`: the functions ``aitco compare`` prices
        one option with, evaluated once per model over that model's rows.
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
        term_h = np.full(rows.size, math.nan)
        for m, years in COMMITTED_TERM_YEARS.items():
            term_h[mode == PRICING_MODES.index(m)] = years * HOURS_PER_YEAR
        held = np.isin(mode, [PRICING_MODES.index(m) for m in HELD if m in PRICING_MODES])
        owned = ~rented
        provider = self._providers()[np.where(offered, codes, -1)]
        wall_h = np.zeros(rows.size)
        total: dict[str, np.ndarray] = {}
        w = TrainingWorkload(model="sweep", tokens=self.tokens)
        archs: list[Any] = self.model_archs
        frag_f = fac.value("fragmentation.idle-fraction")
        for mi in np.unique(mdl[rows]):
            sel = np.flatnonzero(mdl[rows] == mi)
            g = training_goodput(
                archs[int(mi)], w, self.ops, fac, n[sel], nodes[sel],
                productive_h[sel], spot_rate_per_instance_h=rate[sel],
                instances=instances[sel], where="option",
            )  # fmt: skip
            o = g["overheads"]
            with np.errstate(invalid="ignore", divide="ignore"):
                fs = np.where(g["rate_per_h"] > 0, g["failure_rate_per_h"] / g["rate_per_h"], 1.0)
            items = training_run_items_usd(
                gpus=n[sel],
                productive_h=productive_h[sel],
                overheads=o,
                failure_share=fs,
                usd_per_gpu_h=price[rows][sel],
                gpus_billed=bl["gpus_billed"][rows][sel],
                rented=rented[sel],
                spot=spot[sel],
                held=held[sel],
                owned=owned[sel],
                term_h=term_h[sel],
                fac=fac,
                reuse_fraction=self.committed_reuse_fraction,
                support_provider=np.where(rented[sel], provider[sel], ""),
                nodes=nodes[sel],
                repair_model=self.ops.repair_model,
            )
            wh = np.asarray(o["wall_clock_h"], dtype=float)
            wall_h[sel] = wh
            ds_gb, ck_gb = training_storage_gb(
                self.data, self.ops, fac, self.tokens, g["ckpt_bytes"]
            )
            store = storage_items_usd(self.data, fac, wh / HOURS_PER_MONTH, ds_gb, ck_gb)
            store.pop("usd_per_gb_month")
            items.update(store)
            frag_gpu_h = np.where(
                held[sel], reliability.fragmentation_idle_h(n[sel] * wh, frag_f), 0.0
            )
            busy = np.asarray(productive_h[sel], dtype=float)
            items.update(
                self._power_items(
                    hw[rows][sel], mode[sel], reg[sel], n[sel], n[sel] / dpn[sel], node_w[sel],
                    busy, wh - busy + frag_gpu_h / n[sel],
                )
            )  # fmt: skip
            for k, a in items.items():
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

        :func:`aitco.decide.compare.serving_run_items_usd` (compute, restarts, firmware,
        spares, fragmentation, idle instance accelerators, committed term, people), power and
        carbon from :func:`~aitco.decide.compare.power_items_usd` (the replicas' share of their
        nodes' host power) and the stored dataset, as ``aitco compare`` prices a service.
        ``active``: the service's draw over TDP (every hour at that draw, as compare takes the
        engine's power); None: the catalog's draw factor over the busy hours. ``slices``: MIG
        slices per GPU (``gpus`` then counts slices, priced and powered per slice).
        ``hours`` may be an array (an autoscaled service billed for its running hours).
        """
        fac = self._fac()
        n = np.asarray(gpus, dtype=float)
        rented = pricing < PRICING_MODES.index("owned")
        codes = bl["offer"].astype(np.int64)
        offered = codes >= 0
        term_h = np.full(n.shape, math.nan)
        for m, years in COMMITTED_TERM_YEARS.items():
            term_h[pricing == PRICING_MODES.index(m)] = years * HOURS_PER_YEAR
        held = np.isin(pricing, [PRICING_MODES.index(m) for m in HELD if m in PRICING_MODES])
        provider = self._providers()[np.where(offered, codes, -1)]
        dpn, node_w = self._row_systems(hw, codes, rented & offered)
        amt = serving_run_items_usd(
            gpus=n,
            gpus_per_replica=gpus_per_replica,
            hours=hours,
            usd_per_gpu_h=bl["price"],
            gpus_billed=bl["gpus_billed"],
            rented=rented,
            held=held,
            owned=~rented,
            term_h=term_h,
            fac=fac,
            reuse_fraction=self.committed_reuse_fraction,
            support_provider=np.where(rented, provider, ""),
            nodes=np.ceil(n / dpn),
            repair_model=self.ops.repair_model,
        )
        items = {k: a for k, a in amt.items() if k not in SERVING_RUN_VALUES}
        frag_h = amt["fragmentation_idle_gpu_h"] / n
        if active is None:
            busy_h = hours * np.asarray(busy, dtype=float)
        else:
            busy_h = np.full(n.shape, hours)
        idle_h = hours - busy_h + frag_h
        items.update(
            self._power_items(
                hw, pricing, region, n, n / slices / dpn, node_w, busy_h, idle_h, active, slices
            )
        )
        if self.data.stored_gb:
            # the dataset is stored the whole period, however many hours the replicas run
            store = storage_items_usd(self.data, fac, self.months, self.data.stored_gb, 0.0)
            items["dataset_storage"] = store["dataset_storage"] * np.ones_like(n)
        return items

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
            idle = np.array([idle_power_fraction(a) for a in self.accelerators])
            active = power_w(1.0, busy_share, idle[hw])
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
