"""Lookup tables of a sweep: per-accelerator specs and prices, per-model shapes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import CloudOffer, ModelArch
from aitco.cost import pricing
from aitco.cost.factors import CostFactors
from aitco.decide.evaluators.base import PRICING_MODES
from aitco.perf.efficiency import (
    DEFAULT_EFFICIENCY,
    EfficiencyParams,
)
from aitco.perf.kvcache import kv_layout
from aitco.perf.params import param_counts
from aitco.perf.power import compute_clock_ratio
from aitco.units import DTYPES


# ----------------------------------------------------------------------------- hardware tables
@dataclass
class HardwareTable:
    """Per-accelerator arrays (index = position in ``ids``) and a price cube.

    ``price[h, p, r]`` is the price per accelerator-hour of hardware *h* under pricing mode *p*
    (``PRICING_MODES``) in region *r* (``regions``); NaN where none is known.
    """

    ids: list[str]
    peak_tflops: np.ndarray  # (H, len(DTYPES)), NaN where unsupported
    memory_gb: np.ndarray
    hbm_bandwidth_gb_s: np.ndarray
    intra_bw_gb_s: np.ndarray
    inter_bw_gb_s: np.ndarray
    intra_latency_us: np.ndarray
    inter_latency_us: np.ndarray
    devices_per_node: np.ndarray
    scale_up_domain: np.ndarray
    gemm_eff: np.ndarray
    tdp_w: np.ndarray
    regions: list[str | None]
    price: np.ndarray  # (H, P, R): owned and overridden prices; NaN for offers (see bill)
    price_source: dict[str, str] = field(default_factory=dict)
    #: Cloud offers of each accelerator (index = position in ``ids``).
    offers: list[list[CloudOffer]] = field(default_factory=list)
    #: Provider whose offers price rented plans (None: one home instance type; "any").
    provider: str | None = None
    #: Offer ids an ``offer_code`` metric indexes (every offer of ``offers``, in order).
    offer_ids: list[str] = field(default_factory=list)
    #: Spot preemptions per instance-hour by provider (``"default"`` for the others), as
    #: ``compare`` takes them (catalog ``spot-interruption.per-hour.<provider>``). [1/h]
    spot_rates: dict[str, float] = field(default_factory=dict)
    #: Measured idle draw of each accelerator (catalog ``idle_w``; NaN: not published). [W]
    idle_w: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __post_init__(self) -> None:
        self._bills: dict[tuple[int, int, int, int, int], tuple[float, ...]] = {}
        if not self.offer_ids:
            self.offer_ids = [o.id for lst in self.offers for o in lst]

    def _bill_one(self, h: int, p: int, r: int, g: int, unit: int) -> tuple[float, ...]:
        key = (h, p, r, g, unit)
        got = self._bills.get(key)
        if got is None:
            got = pricing.offer_bill(
                self.offers[h] if self.offers else [], PRICING_MODES[p], g, unit,
                given_price=float(self.price[h, p, r]),
                devices_per_node=float(self.devices_per_node[h]), offer_ids=self.offer_ids,
                rates=self.spot_rates, provider=self.provider, region=self.regions[r],
            ).as_tuple()  # fmt: skip
            self._bills[key] = got
        return got

    def bill(
        self,
        hw: np.ndarray,
        pricing: np.ndarray,
        region: np.ndarray,
        gpus: np.ndarray,
        unit_gpus: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """Price per accelerator-hour, accelerators billed, instances and offer of each plan.

        The offer is chosen by :func:`aitco.cost.offers.select_offer`, the function ``aitco
        compare`` uses: ``gpus`` accelerators in units of ``unit_gpus`` (a training job: all of
        them; a service: one replica) rent whole instances. Evaluated once per distinct
        (hardware, pricing, region, gpus, unit) of the chunk. NaN price: no eligible offer.
        ``spot_rate``: spot preemptions per instance-hour of the offer's provider (0 off spot).
        """
        unit = gpus if unit_gpus is None else unit_gpus
        arrs = np.broadcast_arrays(hw, pricing, region, gpus, unit)
        keys = np.stack([np.asarray(a).astype(np.int64) for a in arrs])
        if keys.shape[1] == 0:
            empty = np.zeros(0)
            return {k: empty for k in ("price", "gpus_billed", "instances", "offer", "spot_rate")}
        uniq, inv = _unique_columns(keys)
        vals = np.array([self._bill_one(*(int(x) for x in col)) for col in uniq.T], dtype=float)
        out = vals[inv.reshape(-1)]
        return {
            "price": out[:, 0],
            "gpus_billed": out[:, 1],
            "instances": out[:, 2],
            "offer": out[:, 3],
            "spot_rate": out[:, 4],
        }


_MIXED_RADIX_LIMIT = 2**62  # the largest packed key kept clear of int64 overflow


def _unique_columns(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct columns of a small non-negative integer matrix and the inverse index.

    The same answer as ``np.unique(keys, axis=1, return_inverse=True)``, several times faster on
    sweep chunks: the columns are packed into one int64 per column (mixed radix, each row's
    base its maximum + 1) and a 1-D unique sorts those. Falls back to the 2-D unique when the
    packed key could overflow or a value is negative.
    """
    if keys.size == 0 or keys.min() < 0:
        return np.unique(keys, axis=1, return_inverse=True)
    bases = keys.max(axis=1).astype(object) + 1
    span = 1
    for b in bases:
        span *= int(b)
    if span >= _MIXED_RADIX_LIMIT:
        return np.unique(keys, axis=1, return_inverse=True)
    packed = np.zeros(keys.shape[1], dtype=np.int64)
    for row, base in zip(keys, bases, strict=True):
        packed = packed * int(base) + row
    _, first, inv = np.unique(packed, return_index=True, return_inverse=True)
    return keys[:, first], inv.reshape(-1)


def hardware_table(
    cat: Catalog,
    hw_ids: list[str],
    regions: list[str | None],
    *,
    prices: dict[str, dict[str, float]] | None = None,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    field_name: str = "option.hardware",
    provider: str | None = None,
    factors: CostFactors | None = None,
) -> HardwareTable:
    """Build the per-accelerator arrays and the price cube for the swept hardware ids.

    Parameters
    ----------
    cat : Catalog
        Catalog (accelerators, systems, offers, factors).
    hw_ids : list of str
        Accelerator or system ids.
    regions : list of str or None
        Regions swept (``[None]`` = cheapest offer in any region).
    prices : dict, optional
        Overrides ``{hardware_id: {pricing_mode: usd_per_gpu_hour}}``.
    efficiency : EfficiencyParams
        GEMM efficiency per family.
    field_name : str
        Field named in errors.
    provider : str, optional
        Provider whose offers price rented plans (``"any"``: the cheapest eligible offer per
        pricing mode; None: one home instance type for every mode, as in ``aitco compare``).
    factors : CostFactors, optional
        Cost factors of the owned price and the spot rates (default: the catalog's).
    """
    n = len(hw_ids)
    peak = np.full((n, len(DTYPES)), np.nan)
    cols: dict[str, list[float]] = {
        k: []
        for k in (
            "memory_gb",
            "hbm",
            "intra",
            "inter",
            "intra_lat",
            "inter_lat",
            "dpn",
            "sud",
            "gemm",
            "tdp",
            "idle",
        )
    }
    price = np.full((n, len(PRICING_MODES), len(regions)), np.nan)
    src: dict[str, str] = {}
    offer_lists: list[list[CloudOffer]] = []
    fac = CostFactors(cat) if factors is None else factors
    for h, hw in enumerate(hw_ids):
        acc, sysm = cat.hardware(hw, field=field_name)
        for j, dt in enumerate(DTYPES):
            if dt in acc.peak_tflops:  # at the clock a power limit below the TDP leaves
                peak[h, j] = acc.peak_tflops[dt] * compute_clock_ratio(acc)
        cols["memory_gb"].append(acc.memory_gb)
        cols["hbm"].append(acc.hbm_bandwidth_gb_s)
        cols["intra"].append(sysm.intra_node_bandwidth_gb_s)
        # 0 on a system with no scale-out network: plans spanning its nodes are invalid (128)
        cols["inter"].append(sysm.scale_out_bandwidth_gb_s)
        cols["intra_lat"].append(sysm.intra_node_latency_us)
        cols["inter_lat"].append(sysm.scale_out_latency_us)
        cols["dpn"].append(sysm.devices_per_node)
        cols["sud"].append(max(sysm.scale_up_domain, sysm.devices_per_node))
        cols["gemm"].append(efficiency.gemm_for(acc.family, acc.matmul_ceiling("bf16")))
        cols["tdp"].append(math.nan if acc.board_power_w is None else acc.board_power_w)
        cols["idle"].append(math.nan if acc.idle_w is None else acc.idle_w)
        offer_lists.append(cat.offers_for(acc.id))
        for p, mode in enumerate(PRICING_MODES):
            for r in range(len(regions)):
                val: float | None = None
                if prices and hw in prices and mode in prices[hw]:
                    val = float(prices[hw][mode])
                    src[f"{hw}/{mode}"] = "sweep spec"
                elif mode == "owned":
                    # the capital per accelerator-hour compare prices; energy, staff and the
                    # other items are priced per plan by the evaluators (one cost model)
                    if acc.price is not None:
                        val = pricing.owned_price(acc, fac).usd_per_gpu_h
                        src[f"{hw}/{mode}"] = "catalog price + factors (capital, as compare)"
                else:
                    # rented: whole instances of one offer, chosen per plan by HardwareTable.bill
                    src[f"{hw}/{mode}"] = "catalog offers (aitco.cost.offers.select_offer)"
                if val is not None:
                    price[h, p, r] = val
    arr = {k: np.asarray(v, dtype=float) for k, v in cols.items()}
    return HardwareTable(
        ids=list(hw_ids),
        peak_tflops=peak,
        memory_gb=arr["memory_gb"],
        hbm_bandwidth_gb_s=arr["hbm"],
        intra_bw_gb_s=arr["intra"],
        inter_bw_gb_s=arr["inter"],
        intra_latency_us=arr["intra_lat"],
        inter_latency_us=arr["inter_lat"],
        devices_per_node=arr["dpn"],
        scale_up_domain=arr["sud"],
        gemm_eff=arr["gemm"],
        tdp_w=arr["tdp"],
        idle_w=arr["idle"],
        regions=list(regions),
        price=price,
        price_source=src,
        offers=offer_lists,
        provider=provider,
        # a missing default rate is an error naming the factor (no silent default)
        spot_rates=pricing.spot_rates(fac),
    )


@dataclass
class ModelTable:
    """Per-model arrays (index = position in ``ids``).

    ``kv_elements``, ``n_layers``, ``kv_window_layers`` and ``kv_window`` are the model's
    arguments of the one KV-bytes formula, :func:`aitco.perf.kvcache.kv_cache_bytes`
    (:func:`aitco.perf.kvcache.kv_layout`): MLA latents and sliding windows included.
    """

    ids: list[str]
    total_params: np.ndarray
    active_params: np.ndarray
    n_layers: np.ndarray
    d_model: np.ndarray
    n_heads: np.ndarray
    kv_elements: np.ndarray  # cached elements per token per layer
    kv_window_layers: np.ndarray  # layers attending to a sliding window only
    kv_window: np.ndarray  # their window (0: none) [tokens]


def model_table(models: list[ModelArch]) -> ModelTable:
    """Per-model arrays from architectures."""
    pcs = [param_counts(m) for m in models]
    kv = np.array([kv_layout(m) for m in models], dtype=float).reshape(-1, 4)
    return ModelTable(
        ids=[m.id for m in models],
        total_params=np.array([p.total for p in pcs], dtype=float),
        active_params=np.array([p.active for p in pcs], dtype=float),
        n_layers=np.array([m.n_layers for m in models], dtype=float),
        d_model=np.array([m.d_model for m in models], dtype=float),
        n_heads=np.array([m.n_heads for m in models], dtype=float),
        kv_elements=kv[:, 0],
        kv_window_layers=kv[:, 2],
        kv_window=kv[:, 3],
    )
