"""Vectorised evaluators of sweep configurations: hardware/price tables and array models.

A sweep turns every configuration into integer *codes* (one per swept key) and hands whole
chunks of codes to an evaluator. The evaluator gathers per-configuration inputs from small lookup
tables (hardware specs per accelerator, prices per accelerator x pricing mode x region, model
shapes per model) with numpy fancy indexing and evaluates the performance and cost formulas on
the arrays at once: there is no Python loop per configuration.

Two evaluators are built in: :class:`TrainingEvaluator` (step time, MFU, memory fit, wall clock,
GPU-hours, total cost) and :class:`ServingEvaluator` (TTFT, TPOT, throughput, $/Mtok). They are
deliberately compact analytic models (roofline + alpha-beta collectives, from
:mod:`aitco.perf.roofline` and :mod:`aitco.perf.comms`) for ranking millions of plans; the
winning plans can be re-estimated with the full engines (``aitco train`` / ``aitco infer``).
Any object with ``keys``, ``metrics`` and ``evaluate(codes) -> dict`` can be plugged in instead
(see :class:`Evaluator`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import CloudOffer, ModelArch
from aitco.cost import reliability
from aitco.cost.offers import select_offer
from aitco.decide.compare import (
    COMMITTED_TERM_YEARS,
    DEFAULT_REGION,
    HELD,
    PAY_AS_USED,
    POWER_ITEMS,
    SERVING_RUN_VALUES,
    Factors,
    carbon_price_usd,
    idle_fraction_of_board,
    owned_price,
    power_items_usd,
    serving_run_items_usd,
    storage_items_usd,
    training_goodput,
    training_run_items_usd,
    training_storage_gb,
)
from aitco.decide.scenario import DataCosts, InferenceWorkload, OpsAssumptions, TrainingWorkload
from aitco.errors import CatalogError, InputError, PlanError
from aitco.perf import service
from aitco.perf.efficiency import (
    DEFAULT_EFFICIENCY,
    ELEMENTWISE_KERNELS,
    GEMM_LEVELS,
    EfficiencyParams,
)
from aitco.perf.flops import model_shape
from aitco.perf.inference import (
    busy_share,
    chunked_ttft_terms,
    continuous_batching_step,
    continuous_batching_terms,
    estimate_inference,
    iteration_model,
    memory_plan,
    scheduler_wait_s,
    validate_serving_inputs,
)
from aitco.perf.kvcache import kv_capacity
from aitco.perf.memory import OFFLOAD_MODES
from aitco.perf.params import param_counts
from aitco.perf.plan_search import dualpipe_allowed, ep_overlap_allowed
from aitco.perf.power import compute_clock_ratio
from aitco.perf.serving import busy_time_share
from aitco.perf.training import (
    TRAIN_PRECISIONS,
    evaluate_plans,
    hardware_shape,
    offload_min_zero,
    offload_missing,
)
from aitco.perf.training_model import HOST_LOOPS, LOSS_KERNELS
from aitco.units import (
    BYTES_PER_DTYPE,
    DTYPES,
    GIGA,
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    SECONDS_PER_HOUR,
    TERA,
)

# ----------------------------------------------------------------------------- named constants
#: Bytes of model state per parameter for mixed-precision Adam: bf16 weights (2) + bf16
#: gradients (2) + fp32 master weights, momentum and variance (12). Rajbhandari et al., "ZeRO:
#: memory optimizations toward training trillion parameter models", SC20, sec. 3.1 (16 psi).
ADAM_STATE_BYTES_PER_PARAM = 12.0
WEIGHT_BYTES_TRAINING = 2.0
GRAD_BYTES_TRAINING = 2.0
#: Activation bytes per token per layer per unit of d_model without recomputation, with tensor
#: and sequence parallelism: 34 (Korthikanti et al., arXiv:2205.05198, eq. 2, sbh(34 + 5as/h)).
ACT_BYTES_COEFF = 34.0
#: Attention-score term of the same equation (5 a s / h), dropped by selective recomputation.
ACT_ATTN_COEFF = 5.0
#: Full recomputation keeps only the layer input: 2 bytes per token per d_model (ibid., sec. 5).
ACT_FULL_RECOMPUTE_COEFF = 2.0
#: Share of a step's compute in the backward pass (2 of 3 matmul passes): the window the
#: data-parallel gradient all-reduce can overlap with.
BACKWARD_SHARE = 2.0 / 3.0
#: Training FLOPs per parameter per token (forward 2 + backward 4); Kaplan et al. 2020.
TRAIN_FLOPS_PER_PARAM = 6.0
#: Attention FLOPs per token per layer per (seq_len x d_model), forward+backward (PaLM App. B:
#: 6 * n_layers * seq * d_attn * 2, halved for causal masking -> 6).
ATTN_FLOPS_COEFF = 6.0
#: Extra forward pass under full recomputation: 2 of the 6 FLOPs per parameter again.
FULL_RECOMPUTE_EXTRA = 2.0 / 6.0
#: Tensor-parallel all-reduces per layer per micro-batch (2 forward + 2 backward), Megatron-LM
#: (Shoeybi et al., arXiv:1909.08053, fig. 4).
TP_ALLREDUCES_PER_LAYER = 4.0
#: Fraction of device memory usable by the model (framework, CUDA context and fragmentation take
#: the rest); PyTorch/NCCL reserve a few GB on an 80 GB device.
USABLE_MEMORY_FRACTION = 0.9
#: Inference FLOPs per active parameter per token (one forward pass).
INFER_FLOPS_PER_PARAM = 2.0
#: KV tensors per layer (keys and values).
KV_TENSORS = 2.0

#: Catalog factor family of spot preemptions per instance-hour, by provider (as in compare).
SPOT_RATE_PREFIX = "spot-interruption.per-hour."

PRICING_MODES: tuple[str, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y", "owned")

#: Invalid-configuration reasons (bit flags), reported by the sweep with counts.
REASONS: dict[int, str] = {
    1: "plan: gpus not divisible by tp x pp",
    2: "plan: tp larger than the scale-up domain",
    4: "plan: pp larger than n_layers",
    8: "plan: global batch not divisible by dp x micro_batch",
    16: "memory: does not fit in device memory",
    32: "price: no eligible offer for this hardware / pricing mode / region / size",
    64: "precision: not supported by the accelerator",
    128: "plan: spans nodes of a system without a scale-out network",
    256: "mig: the accelerator has no such MIG slice",
    512: "service: the disaggregated layout does not carry the load within the objectives",
    1024: "offload: the system gives no host memory figures (host_memory_gb, "
    "host_memory_bandwidth_gb_s; NVMe modes: nvme_capacity_gb, nvme_read_gb_s, nvme_write_gb_s) "
    "or the accelerator no PCIe generation",
    2048: "offload: ZeRO stage below the offload mode's (optimizer: >= 1, params and NVMe: 3)",
    4096: "time_slice: the accelerator is not a GPU the device plugin time-slices",
    8192: "plan: cp must divide seq_len; ep must divide the model's experts and dp "
    "(ep > 1 needs an MoE model)",
    16384: "plan: dualpipe needs an even pp >= 2, vp 1 and at least pp micro-batches; "
    "ep_comm_overlap needs ep > 1, no full recompute and, with pp > 1, vp > 1",
}


class Evaluator(Protocol):
    """What a sweep needs from an evaluator.

    Attributes
    ----------
    keys : dict of str to list
        Canonical dotted keys the evaluator understands, with their default value lists.
    metrics : tuple of str
        Names of the float metric arrays :meth:`evaluate` returns.
    """

    keys: dict[str, list[Any]]
    metrics: tuple[str, ...]

    def evaluate(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of configurations.

        ``values`` maps each key to per-configuration values (codes for categorical keys).
        Returns the metrics plus ``reason`` (int bit flags, 0 = valid).
        """
        ...


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
        if got is not None:
            return got
        mode = PRICING_MODES[p]
        val = float(self.price[h, p, r])
        default_spot = self.spot_rates.get("default", math.nan) if mode == "spot" else 0.0
        out: tuple[float, ...]
        if not np.isnan(val) or mode == "owned" or not self.offers:
            # owned hardware and a given price: the accelerators used, by the node
            nodes = float(math.ceil(g / self.devices_per_node[h]))
            out = (val, float(g), nodes, -1.0, default_spot)
        else:
            c = select_offer(
                self.offers[h], mode, g, unit_gpus=unit, provider=self.provider,
                region=self.regions[r],
            )  # fmt: skip
            if c is None or not c.eligible:
                out = (math.nan, float(g), math.nan, -1.0, 0.0)
            else:
                code = float(self.offer_ids.index(c.offer_id))
                spot = self.spot_rates.get(c.provider, default_spot) if mode == "spot" else 0.0
                out = (c.usd_per_gpu_hour, float(c.gpus_billed), float(c.instances), code, spot)
        self._bills[key] = out
        return out

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
        uniq, inv = np.unique(keys, axis=1, return_inverse=True)
        vals = np.array([self._bill_one(*(int(x) for x in col)) for col in uniq.T], dtype=float)
        out = vals[inv.reshape(-1)]
        return {
            "price": out[:, 0],
            "gpus_billed": out[:, 1],
            "instances": out[:, 2],
            "offer": out[:, 3],
            "spot_rate": out[:, 4],
        }


def hardware_table(
    cat: Catalog,
    hw_ids: list[str],
    regions: list[str | None],
    *,
    prices: dict[str, dict[str, float]] | None = None,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    field_name: str = "option.hardware",
    provider: str | None = None,
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
    fac = Factors(cat)
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
                        val = owned_price(acc, sysm, fac).usd_per_gpu_h
                        src[f"{hw}/{mode}"] = "catalog price + factors (capital, as compare)"
                else:
                    # rented: whole instances of one offer, chosen per plan by HardwareTable.bill
                    src[f"{hw}/{mode}"] = "catalog offers (aitco.cost.offers.select_offer)"
                if val is not None:
                    price[h, p, r] = val
    arr = {k: np.asarray(v, dtype=float) for k, v in cols.items()}
    # a missing default rate is an error naming the factor (no silent default)
    spot_rates = {"default": cat.factor_value(f"{SPOT_RATE_PREFIX}default")}
    spot_rates.update(
        (f.removeprefix(SPOT_RATE_PREFIX), cat.factor_value(f))
        for f in cat.factors
        if f.startswith(SPOT_RATE_PREFIX)
    )
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
        spot_rates=spot_rates,
    )


@dataclass
class ModelTable:
    """Per-model arrays (index = position in ``ids``)."""

    ids: list[str]
    total_params: np.ndarray
    active_params: np.ndarray
    n_layers: np.ndarray
    d_model: np.ndarray
    n_heads: np.ndarray
    kv_width: np.ndarray  # n_kv_heads * head_dim (per K or V tensor)


def model_table(models: list[ModelArch]) -> ModelTable:
    """Per-model arrays from architectures."""
    pcs = [param_counts(m) for m in models]
    return ModelTable(
        ids=[m.id for m in models],
        total_params=np.array([p.total for p in pcs], dtype=float),
        active_params=np.array([p.active for p in pcs], dtype=float),
        n_layers=np.array([m.n_layers for m in models], dtype=float),
        d_model=np.array([m.d_model for m in models], dtype=float),
        n_heads=np.array([m.n_heads for m in models], dtype=float),
        kv_width=np.array(
            [
                (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) / KV_TENSORS
                if m.mla is not None
                else m.kv_heads * m.dim_head
                for m in models
            ],
            dtype=float,
        ),
    )


_DTYPE_BYTES = np.array([BYTES_PER_DTYPE[d] for d in DTYPES])


def _ring_allreduce_s(
    msg_bytes: np.ndarray, n: np.ndarray, bw_gb_s: np.ndarray, lat_us: np.ndarray, eff: float
) -> np.ndarray:
    r"""Ring all-reduce time, :math:`2\frac{n-1}{n}\frac{M}{\eta B} + 2(n-1)\alpha`.

    Same formula as :func:`aitco.perf.comms.allreduce_time_s` (ring); inlined so that the sweep
    needs no per-call argument validation on million-element arrays.
    """
    frac = np.where(n > 1, (n - 1.0) / n, 0.0)
    return (
        2.0 * frac * msg_bytes / (eff * bw_gb_s * GIGA)
        + 2.0 * np.maximum(n - 1.0, 0.0) * lat_us * 1e-6
    )


# ----------------------------------------------------------------------------- pricing
#: Carbon price factor (compare's ``carbon_price`` item; 0 = emissions reported, not priced).
CARBON_PRICE_ID = "carbon.usd-per-tonne"
#: Draw while computing, as a fraction of TDP (compare's power items, training and services).
ACTIVE_POWER_ID = "utilization-power.training-fraction-of-tdp"
#: Service period of a serving sweep when the workload gives none (``InferenceWorkload``).
DEFAULT_SERVICE_MONTHS = float(InferenceWorkload.model_fields["months"].default)


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
    factors: Factors | None
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

    def _fac(self) -> Factors:
        if self.factors is None:
            raise InputError(
                "factors", None, "catalog factors to price the sweep's items (compare.Factors)"
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

        ``active``: draw while busy over TDP per row (a service's: 1, the board power over its
        busy hours); None: the catalog's training draw factor, as compare. The idle draw is the
        accelerator's measured ``idle_w`` where published, else the catalog's idle factor
        (:func:`aitco.decide.compare.idle_fraction_of_board`).
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
            idle_fraction=idle_fraction_of_board(self.hw.idle_w[hw], self.hw.tdp_w[hw], fac),
            nodes=nodes, node_power_w=node_w,
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
        ``active``: the service's busy share of the hours (:func:`aitco.perf.serving.
        energy_per_token`'s ``busy_fraction``: board power over that share of the hours, idle
        power over the rest, as compare takes the engine's power); None: the catalog's draw
        factor over the ``busy`` hours. ``slices``: MIG
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
        share = np.asarray(busy if active is None else active, dtype=float)
        busy_h = hours * share
        idle_h = hours - busy_h + frag_h
        draw = None if active is None else np.ones(n.shape)
        items.update(
            self._power_items(
                hw, pricing, region, n, n / slices / dpn, node_w, busy_h, idle_h, draw, slices
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


# ----------------------------------------------------------------------------- training
#: Keys of a training sweep, outermost first. The keys the step time depends on come first and
#: the price-only keys (pricing, region) last, so that a grid chunk holds long runs of equal
#: (hardware, model, precision, gpus, seq_len, global_batch) -- one engine call per run.
TRAINING_KEYS: dict[str, list[Any]] = {
    "option.hardware": [],
    "workload.model": [],
    "workload.precision": ["bf16"],
    "option.gpus": [],
    "workload.seq_len": [],
    "workload.global_batch": [],
    "workload.plan.tp": [1],
    "workload.plan.pp": [1],
    "workload.plan.vp": [1],
    "workload.plan.micro_batch": [1],
    "workload.plan.zero": [1],
    "workload.plan.recompute": ["selective"],
    "option.pricing": ["on_demand"],
    "option.region": [None],
}
#: Plan fields of the engine training evaluator beyond :data:`TRAINING_KEYS` (the same fields as
#: ``aitco train --cp/--ep``): optional, a sweep adds one only when the spec names it, and a
#: missing one takes the value listed here. The fast screen does not model them.
TRAINING_ENGINE_PLAN_KEYS: dict[str, list[Any]] = {
    "workload.plan.cp": [1],
    "workload.plan.ep": [1],
    "workload.plan.pipeline_schedule": ["1f1b"],
    "workload.plan.ep_comm_overlap": [False],
}
#: Stack options a training sweep takes as base values (one per sweep, as ``aitco train
#: --elementwise-kernels/--loss-kernel/--host-loop/--gemm-level``) and their allowed values.
TRAINING_STACK_OPTIONS: dict[str, tuple[str, ...]] = {
    "elementwise_kernels": ELEMENTWISE_KERNELS,
    "loss_kernel": LOSS_KERNELS,
    "host_loop": HOST_LOOPS,
    "gemm_level": GEMM_LEVELS,
}
#: Pipeline schedules of a training sweep, coded by index (as ``aitco train
#: --pipeline-schedule``).
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")
TRAINING_METRICS: tuple[str, ...] = (
    "step_time_s",
    "tokens_per_s",
    "mfu",
    "memory_per_gpu_gb",
    "wall_clock_h",
    "gpu_hours",
    "price_usd_per_gpu_h",
    "total_usd",
    "dp",
    "total_gpus",
    "gpus_billed",
    "instances",
    "offer_code",
)
RECOMPUTE = ("none", "selective", "full")


@dataclass
class TrainingEvaluator(ItemPricing):
    r"""Vectorised training plan model: step time, memory, wall clock and cost per configuration.

    Parameters
    ----------
    hw : HardwareTable
        Hardware arrays and price cube.
    models : ModelTable
        Model arrays.
    tokens : float
        Tokens to train on. [tokens]
    efficiency : EfficiencyParams
        Link and overlap efficiencies.
    accelerators, systems, model_archs : list
        Catalog records of the swept hardware and models (power items, checkpoint sizes).
    factors, ops, data, offer_systems, committed_reuse_fraction
        The cost inputs of :class:`ItemPricing` (compare's items).

    Notes
    -----
    Per configuration (arrays), with :math:`d = g/(t p)` data-parallel replicas,
    :math:`m = B/(d\,b)` micro-batches per step and :math:`T = B s` tokens per step:

    .. math::

        F &= T\,(6 N_a + 6 L s d_{model}) (1 + \rho) \\
        t_{comp} &= F / (g\, \eta_{gemm} P) \\
        t_{tp} &= m \frac{L}{p}\, 4\, AR_{ring}(b s d_{model} \beta, t) \\
        t_{step} &= (t_{comp} + t_{tp})(1 + (p-1)/m)
                    + t_{dp} - \eta_{ov} \min(t_{dp}, \tfrac{2}{3}(t_{comp} + t_{tp})) \\
        t_{dp} &= AR_{ring}(2 N / (t p), d) \\
        M &= \frac{N}{t p}(2 + 2 [z<2 \to 1, /d] + 12 [z<1 \to 1, /d])
             + \frac{L}{p} p\, s\, b\, d_{model} \frac{c_{act}}{t}

    with :math:`\rho` = 1/3 under full recomputation, ZeRO stage *z* sharding optimizer states
    (z>=1), gradients (z>=2) and weights (z=3) over *d*, and the activation coefficient
    :math:`c_{act}` = 34 + 5 a s / d_model (none), 34 (selective) or 2 (full). The dollars
    are not modelled here: productive hours = tokens / tokens/s go to
    :meth:`ItemPricing.run_items`, the goodput and items ``aitco compare`` prices a run with
    (wall clock with failures, spot preemptions and checkpoints; ``total_usd`` = sum of items).
    """

    hw: HardwareTable
    models: ModelTable
    tokens: float
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(TRAINING_KEYS))
    metrics: tuple[str, ...] = TRAINING_METRICS
    accelerators: list[Any] = field(default_factory=list)
    systems: list[Any] = field(default_factory=list)
    model_archs: list[Any] = field(default_factory=list)
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: Factors | None = None
    #: Operations choices (checkpointing) as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (storage tier, stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (:func:`aitco.decide.compare.offer_system`; None: the
    #: hardware's own system), as compare runs the engine on a rented offer's fabric.
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of training configurations (see the class Notes).

        The cheap plan checks (divisibility, scale-up domain, precision, price) run on the whole
        chunk; the model runs only on the configurations that pass them, whose positions are
        returned as ``rows`` (the metrics have one value per row).
        """
        n = _chunk_len(v)
        h, m = self.hw, self.models
        hw, mdl, prec = v["option.hardware"], v["workload.model"], v["workload.precision"]
        g, tp, pp = v["option.gpus"], v["workload.plan.tp"], v["workload.plan.pp"]
        b, gb = v["workload.plan.micro_batch"], v["workload.global_batch"]
        pricing, region = v["option.pricing"], v["option.region"]
        peak = h.peak_tflops[hw, prec]
        bl = h.bill(hw, pricing, region, g)
        price = bl["price"]
        mp = tp * pp
        dpb = (g // mp) * b
        reason = np.zeros(n, dtype=np.int64)
        reason |= np.where(np.isnan(peak), 64, 0)
        reason |= np.where(np.mod(g, mp) != 0, 1, 0)
        reason |= np.where(tp > h.scale_up_domain[hw], 2, 0)
        reason |= np.where(pp * v["workload.plan.vp"] > m.n_layers[mdl], 4, 0)
        reason |= np.where((g > h.devices_per_node[hw]) & (h.inter_bw_gb_s[hw] <= 0), 128, 0)
        reason |= np.where((dpb < 1) | (np.mod(gb, np.maximum(dpb, 1)) != 0), 8, 0)
        reason |= np.where(np.isnan(price), 32, 0)
        rows = np.flatnonzero(reason == 0)
        sub = {k: _gather(a, rows) for k, a in v.items()}
        billing = {k: _gather(a, rows) for k, a in bl.items()}
        met = self._model(sub, _gather(peak, rows), _gather(price, rows), billing)
        reason[rows] |= np.where(met.pop("fits") > 0, 0, 16)
        if rows.size:
            productive_h = self.tokens / met["tokens_per_s"] / SECONDS_PER_HOUR
            items = self.run_items(
                rows, np.broadcast_to(hw, (n,)), np.broadcast_to(mdl, (n,)),
                np.broadcast_to(pricing, (n,)), np.broadcast_to(g, (n,)), productive_h,
                np.broadcast_to(price, (n,)), {k: np.broadcast_to(a, (n,)) for k, a in bl.items()},
                np.broadcast_to(region, (n,)),
            )  # fmt: skip
            wall_h = items.pop("wall_clock_h")
            met["wall_clock_h"] = wall_h
            met["gpu_hours"] = met["total_gpus"] * wall_h
            # the sum of compare's items (compute, instance, reliability, people, power, data)
            met["total_usd"] = sum(items.values(), np.zeros(rows.size))
        met["rows"] = rows
        met["reason"] = reason
        return met

    def _model(
        self,
        v: dict[str, np.ndarray],
        peak: np.ndarray,
        price: np.ndarray,
        billing: dict[str, np.ndarray],
    ) -> dict[str, np.ndarray]:
        """Apply the step-time, memory and cost formulas to configurations that passed."""
        h, m = self.hw, self.models
        hw, mdl = v["option.hardware"], v["workload.model"]
        g = v["option.gpus"].astype(float)
        tp = v["workload.plan.tp"].astype(float)
        pp = v["workload.plan.pp"].astype(float)
        b = v["workload.plan.micro_batch"].astype(float)
        zero = v["workload.plan.zero"]
        rec = v["workload.plan.recompute"]
        s = v["workload.seq_len"].astype(float)
        gb = v["workload.global_batch"].astype(float)
        n_tot = m.total_params[mdl]
        n_act = m.active_params[mdl]
        layers = m.n_layers[mdl]
        dm = m.d_model[mdl]
        mp = tp * pp
        dp = g / mp
        mb_per_step = gb / (dp * b)
        # compute
        tokens_step = gb * s
        flops_tok = TRAIN_FLOPS_PER_PARAM * n_act + ATTN_FLOPS_COEFF * layers * s * dm
        rho = np.where(rec == 2, FULL_RECOMPUTE_EXTRA, 0.0)
        t_comp = tokens_step * flops_tok * (1.0 + rho) / (g * h.gemm_eff[hw] * peak * TERA)
        # tensor-parallel all-reduces over the scale-up fabric
        ar_tp = _ring_allreduce_s(
            b * s * dm * WEIGHT_BYTES_TRAINING,
            tp,
            h.intra_bw_gb_s[hw],
            h.intra_latency_us[hw],
            self.efficiency.intra_node_link,
        )
        t_tp = mb_per_step * (layers / pp) * TP_ALLREDUCES_PER_LAYER * ar_tp
        bubble = (pp - 1.0) / (v["workload.plan.vp"] * mb_per_step)
        # data-parallel gradient all-reduce: inter-node when the replicas span nodes
        dpn = h.devices_per_node[hw]
        spans = g > dpn
        bw_dp = np.where(spans, h.inter_bw_gb_s[hw], h.intra_bw_gb_s[hw])
        lat_dp = np.where(spans, h.inter_latency_us[hw], h.intra_latency_us[hw])
        eff_dp = np.where(spans, self.efficiency.scale_out_link, self.efficiency.intra_node_link)
        shard = n_tot / mp
        t_dp = _ring_allreduce_s(shard * GRAD_BYTES_TRAINING, dp, bw_dp, lat_dp, 1.0) / eff_dp
        # the gradient all-reduce hides behind the backward pass only (2/3 of the compute)
        window = BACKWARD_SHARE * (t_comp + t_tp)
        exposed = t_dp - self.efficiency.dp_overlap * np.minimum(t_dp, window)
        step = (t_comp + t_tp) * (1.0 + bubble) + exposed
        # memory per GPU: model states sharded by TP x PP and (ZeRO stage) by DP
        inv_dp = 1.0 / dp
        w = shard * WEIGHT_BYTES_TRAINING * np.where(zero >= 3, inv_dp, 1.0)
        gr = shard * GRAD_BYTES_TRAINING * np.where(zero >= 2, inv_dp, 1.0)
        opt = shard * ADAM_STATE_BYTES_PER_PARAM * np.where(zero >= 1, inv_dp, 1.0)
        coeff = np.where(
            rec == 0,
            ACT_BYTES_COEFF + ACT_ATTN_COEFF * m.n_heads[mdl] * s / dm,
            np.where(rec == 1, ACT_BYTES_COEFF, ACT_FULL_RECOMPUTE_COEFF),
        )
        # 1F1B: the first stage holds pp micro-batches of its L/pp layers
        mem_gb = (w + gr + opt + layers * s * b * dm * coeff / tp) / GIGA
        # throughput; the wall clock and the money are compare's items (evaluate)
        tps = tokens_step / step
        wall_h = self.tokens / tps / SECONDS_PER_HOUR
        gpu_h = g * wall_h
        instances = billing["instances"]
        billed = billing["gpus_billed"]
        return {
            "step_time_s": step,
            "tokens_per_s": tps,
            "mfu": TRAIN_FLOPS_PER_PARAM * n_act * tps / (g * peak * TERA),
            "memory_per_gpu_gb": mem_gb,
            "wall_clock_h": wall_h,
            "gpu_hours": gpu_h,
            "price_usd_per_gpu_h": price,
            "total_usd": np.full_like(wall_h, math.nan),  # set by evaluate (compare's items)
            "dp": dp,
            "total_gpus": g,
            "gpus_billed": billed * np.ones_like(g),
            "instances": instances * np.ones_like(g),
            "offer_code": billing["offer"] * np.ones_like(g),
            "fits": (mem_gb <= h.memory_gb[hw] * USABLE_MEMORY_FRACTION).astype(np.int8),
        }


def _chunk_len(v: dict[str, np.ndarray]) -> int:
    """Count the configurations of a chunk (constant keys may be length-1 arrays)."""
    return max(int(np.shape(a)[0]) if np.ndim(a) else 1 for a in v.values())


def _gather(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows of a per-configuration array; length-1 (constant) arrays are kept as they are."""
    a = np.asarray(a)
    return a if a.ndim == 0 or a.shape[0] == 1 else a[rows]


# ----------------------------------------------------------------------------- serving
SERVING_KEYS: dict[str, list[Any]] = {
    "option.hardware": [],
    "option.gpus": [1],
    "option.pricing": ["on_demand"],
    "option.region": [None],
    "workload.model": [],
    "workload.precision": ["bf16"],
    "workload.kv_precision": [None],
    "workload.batch": [1, 8, 32, 128],
    "workload.input_tokens": [],
    "workload.output_tokens": [],
}
#: Service fields of the engine serving evaluator (the same fields as ``aitco infer`` and a
#: scenario's inference workload). Optional: a sweep adds one only when the spec names it, and
#: a missing one takes the value listed here (the service as it was).
SERVICE_KEYS: dict[str, Any] = {
    "workload.prefix_cache_hit_rate": 0.0,
    "workload.scheduler_steps": 1,
    "workload.max_batched_tokens": None,
    "workload.ep": 1,
    "workload.mig": None,
    "workload.time_slice": 1,
    "workload.disaggregate": None,
    "workload.load_profile": None,
    "workload.autoscale": None,
}
#: Service keys whose values are text: coded by their index in the sweep's list of values.
SERVICE_TEXT_KEYS = (
    "workload.mig",
    "workload.disaggregate",
    "workload.load_profile",
    "workload.autoscale",
)
SERVING_METRICS: tuple[str, ...] = (
    "ttft_s",
    "tpot_s",
    "e2e_latency_s",
    "output_tokens_per_s",
    "requests_per_s",
    "replicas",
    "total_gpus",
    "usd_per_h",
    "usd_per_million_output_tokens",
    "total_usd",
    "price_usd_per_gpu_h",
    "memory_per_gpu_gb",
    "gpus_billed",
    "instances",
    "offer_code",
)


@dataclass
class ServingEvaluator(ItemPricing):
    r"""Vectorised serving model: a replica of ``gpus`` accelerators (tensor parallel) at a batch.

    Parameters
    ----------
    hw, models : HardwareTable, ModelTable
        Lookup tables.
    qps : float, optional
        Arrival rate to serve; sets the replica count. [requests/s]
    efficiency : EfficiencyParams
        GEMM (per family), HBM and link efficiencies.

    Notes
    -----
    With *W* weight bytes, :math:`k` KV bytes per token, batch *B*, mean context
    :math:`c = i + o/2`, *g* devices of peak *P* and bandwidth *H* per replica:

    .. math::

        t_{pre} &= \max(2 N_a i / (g \eta P),\; W / (g \eta_H H)) \\
        \mathrm{TPOT} &= \max(2 N_a B / (g \eta P),\; (W + B c k)/(g \eta_H H))
                        + 2 L\, AR(B d \beta, g) \\
        \mathrm{TTFT} &= t_{pre} + \mathrm{TPOT} \\
        \text{tokens/s} &= B o / (B t_{pre} + o\,\mathrm{TPOT})

    (continuous batching: each admitted request's prefill stalls the batch once). Replicas,
    ``total_usd`` (compare's items for ``months``), ``usd_per_h`` and $/Mtok as in
    :meth:`ItemPricing._serving_outputs`. Memory must hold
    :math:`W/g + B (i+o) k / g` within the usable fraction. Latencies are unloaded (no queueing);
    use ``aitco infer`` for percentiles under load.
    """

    hw: HardwareTable
    models: ModelTable
    qps: float | None = None
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(SERVING_KEYS))
    metrics: tuple[str, ...] = SERVING_METRICS
    accelerators: list[Any] = field(default_factory=list)
    systems: list[Any] = field(default_factory=list)
    #: Service period priced. [months]
    months: float = DEFAULT_SERVICE_MONTHS
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: Factors | None = None
    #: Operations choices (checkpointing) as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (storage tier, stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (:func:`aitco.decide.compare.offer_system`; None: the
    #: hardware's own system), as compare runs the engine on a rented offer's fabric.
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of serving configurations (see the class Notes)."""
        hw = v["option.hardware"]
        mdl = v["workload.model"]
        prec = v["workload.precision"]
        kvp = v["workload.kv_precision"]
        kvp = np.where(kvp < 0, prec, kvp)
        g = v["option.gpus"].astype(float)
        bsz = v["workload.batch"].astype(float)
        i = v["workload.input_tokens"].astype(float)
        o = v["workload.output_tokens"].astype(float)
        h, m = self.hw, self.models
        peak = h.peak_tflops[hw, prec]
        n = _chunk_len(v)  # constant keys may be length-1 arrays
        reason = np.zeros(n, dtype=np.int64) | np.where(np.isnan(peak), 64, 0)
        peak = np.where(np.isnan(peak), 1.0, peak)
        reason |= np.where(g > h.scale_up_domain[hw], 2, 0)
        eff = h.gemm_eff[hw]
        hbm = h.hbm_bandwidth_gb_s[hw] * GIGA * self.efficiency.hbm
        w_bytes = m.total_params[mdl] * _DTYPE_BYTES[prec]
        kv_tok = KV_TENSORS * m.n_layers[mdl] * m.kv_width[mdl] * _DTYPE_BYTES[kvp]
        flops_tok = INFER_FLOPS_PER_PARAM * m.active_params[mdl]
        t_pre = np.maximum(flops_tok * i / (g * eff * peak * TERA), w_bytes / (g * hbm))
        ctx = i + o / 2.0
        ar = _ring_allreduce_s(
            bsz * m.d_model[mdl] * _DTYPE_BYTES[prec],
            g,
            h.intra_bw_gb_s[hw],
            h.intra_latency_us[hw],
            self.efficiency.intra_node_link,
        )
        busy_s = np.maximum(
            flops_tok * bsz / (g * eff * peak * TERA), (w_bytes + bsz * ctx * kv_tok) / (g * hbm)
        )
        tpot = busy_s + 2.0 * m.n_layers[mdl] * ar
        ttft = t_pre + tpot
        tok_s = bsz * o / (bsz * t_pre + o * tpot)
        mem_gb = (w_bytes + bsz * (i + o) * kv_tok) / g / GIGA
        reason |= np.where(mem_gb > h.memory_gb[hw] * USABLE_MEMORY_FRACTION, 16, 0)
        full = [
            np.broadcast_to(np.asarray(a), (n,))
            for a in (
                hw,
                v["option.pricing"],
                v["option.region"],
                ttft,
                tpot,
                tok_s,
                o,
                g,
                busy_s / tpot,
            )
        ]
        rows = np.flatnonzero(reason == 0)
        out = self._serving_outputs(*(a[rows] for a in full))
        # no eligible offer for the replicas (or one replica): invalid, price
        reason[rows] |= np.where(np.isnan(out["total_usd"]), 32, 0)
        return {
            **out,
            "memory_per_gpu_gb": (mem_gb * np.ones(n))[rows],
            "rows": rows,
            "reason": reason,
        }


def describe_reasons(counts: dict[int, int]) -> dict[str, int]:
    """Turn per-bit counts into ``{reason text: count}``."""
    return {REASONS[k]: int(c) for k, c in sorted(counts.items()) if c}


# ----------------------------------------------------------------------------- engine-backed


@dataclass
class EngineTrainingEvaluator(ItemPricing):
    r"""Training configurations priced with the training engine's vectorised plan model.

    The step time, MFU and memory come from :func:`aitco.perf.training.evaluate_plans` (the
    model ``aitco train`` uses, with its globally fitted efficiencies); the cost from compare's
    item functions (:class:`ItemPricing`).
    ``evaluate_plans`` takes the model, the accelerator, the GPU count, the sequence length and
    the global batch as scalars and the parallel plans as arrays, so a chunk is split into groups
    of equal (hardware, model, precision, gpus, seq_len, global_batch) and each group's plans
    are evaluated in one call: the Python loop runs over groups (tens per chunk), never over
    configurations.

    Notes
    -----
    Productive hours :math:`D / \text{tokens/s}`; the wall clock and the cost are those of
    ``aitco compare``: goodput from :func:`aitco.decide.compare.training_goodput` (failures,
    spot preemptions, Young/Daly checkpoints, restarts, firmware) and ``total_usd`` the sum of
    :func:`aitco.decide.compare.training_run_items_usd` (compute, idle instance GPUs, committed
    term, reliability and people items), with the storage, power and carbon items of
    :class:`ItemPricing`: the same model for every pricing mode, owned included.
    """

    hw: HardwareTable
    models: ModelTable
    tokens: float
    accelerators: list[Any]
    systems: list[Any]
    model_archs: list[Any]
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(TRAINING_KEYS))
    metrics: tuple[str, ...] = TRAINING_METRICS
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: Factors | None = None
    #: Operations choices (checkpointing) as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (storage tier, stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (:func:`aitco.decide.compare.offer_system`; None: the
    #: hardware's own system), as compare runs the engine on a rented offer's fabric.
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0
    #: ZeRO-Offload mode of every configuration (the sweep's base ``workload.plan.offload``).
    offload: str = "none"
    #: Stack options of every configuration (the sweep's base ``workload.plan.<key>`` for the
    #: keys of :data:`TRAINING_STACK_OPTIONS`; absent: the engine's default).
    stack: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._shapes: dict[Any, Any] = {}
        if self.offload not in OFFLOAD_MODES:
            raise InputError(
                "workload.plan.offload", self.offload, f"one of {', '.join(OFFLOAD_MODES)}"
            )
        for key, v in self.stack.items():
            allowed = TRAINING_STACK_OPTIONS.get(key)
            if allowed is None:
                raise InputError(
                    f"workload.plan.{key}", v, f"one of {', '.join(TRAINING_STACK_OPTIONS)}"
                )
            if v not in allowed:
                raise InputError(f"workload.plan.{key}", v, f"one of {', '.join(allowed)}")

    def _model_shape(self, i: int) -> Any:
        key = ("m", i)
        if key not in self._shapes:
            self._shapes[key] = model_shape(self.model_archs[i])
        return self._shapes[key]

    def _hw_shape(self, h: int, prec: str) -> Any:
        key = ("h", h, prec)
        if key not in self._shapes:
            self._shapes[key] = hardware_shape(self.accelerators[h], prec, self.efficiency)
        return self._shapes[key]

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk (cheap checks on all; the engine on the plausible rows, by group)."""
        n = _chunk_len(v)
        h, m = self.hw, self.models
        full = {k: np.broadcast_to(np.asarray(a), (n,)) for k, a in v.items()}
        hw, mdl, prec = full["option.hardware"], full["workload.model"], full["workload.precision"]
        g, tp, pp = full["option.gpus"], full["workload.plan.tp"], full["workload.plan.pp"]
        b, gb = full["workload.plan.micro_batch"], full["workload.global_batch"]
        one = np.ones(n, dtype=np.int64)
        cp = full.get("workload.plan.cp", one)
        ep = full.get("workload.plan.ep", one)
        peak = h.peak_tflops[hw, prec]
        bl = h.bill(hw, full["option.pricing"], full["option.region"], g)
        price = bl["price"]
        train_ok = np.isin(prec, [DTYPES.index(p) for p in TRAIN_PRECISIONS])
        mp = tp * pp * cp
        dp = g // mp
        dpb = dp * b
        reason = np.zeros(n, dtype=np.int64)
        reason |= np.where(np.isnan(peak) | ~train_ok, 64, 0)
        reason |= np.where(np.mod(g, mp) != 0, 1, 0)
        # the checks `aitco train --cp/--ep` makes (cp splits the sequence; EP ranks come from DP)
        n_exp = np.array([float(self._model_shape(i).n_experts) for i in range(len(m.ids))])
        moe = np.array([self._model_shape(i).moe_layers > 0 for i in range(len(m.ids))])
        bad_ep = (ep > 1) & ~moe[mdl] | (np.mod(n_exp[mdl], ep) != 0)
        bad_ep |= np.mod(np.maximum(dp, 1), ep) != 0
        reason |= np.where(bad_ep | (np.mod(full["workload.seq_len"], cp) != 0), 8192, 0)
        # the schedule options `aitco train --pipeline-schedule/--ep-overlap` accept
        zero_i = np.zeros(n, dtype=np.int64)
        dual = full.get("workload.plan.pipeline_schedule", zero_i) == 1
        epo = full.get("workload.plan.ep_comm_overlap", zero_i) == 1
        vp_all = full["workload.plan.vp"]
        n_micro = gb // np.maximum(dpb, 1)
        bad_sched = dual & ~dualpipe_allowed(pp, vp_all, n_micro)
        bad_sched |= epo & ~ep_overlap_allowed(ep, pp, vp_all, full["workload.plan.recompute"])
        reason |= np.where(bad_sched, 16384, 0)
        reason |= np.where(tp > h.scale_up_domain[hw], 2, 0)
        vp = full["workload.plan.vp"]
        reason |= np.where(pp * vp > m.n_layers[mdl], 4, 0)
        reason |= np.where((dpb < 1) | (np.mod(gb, np.maximum(dpb, 1)) != 0), 8, 0)
        reason |= np.where(np.isnan(price), 32, 0)
        osys = np.full(n, -1, dtype=np.int64)  # offer code whose own system runs the plan
        if self.offer_systems:
            has = np.array([x is not None for x in self.offer_systems] + [False])
            code = bl["offer"].astype(np.int64)
            rented = full["option.pricing"] < PRICING_MODES.index("owned")
            osys = np.where(rented & has[code], code, -1)
        if self.offload != "none":  # the checks `aitco train --offload` makes, as reasons
            reason |= self._offload_reasons(hw, prec, osys, full["workload.plan.zero"])
        rows = np.flatnonzero(reason == 0)
        out = {k: np.zeros(rows.size) for k in self.metrics}
        fits = np.zeros(rows.size, dtype=bool)
        if rows.size:
            seq = full["workload.seq_len"][rows]
            outer = np.stack(
                [hw[rows], mdl[rows], prec[rows], g[rows], seq, gb[rows], osys[rows]]
            ).astype(float)
            cut = np.flatnonzero(np.any(np.diff(outer, axis=1) != 0, axis=0)) + 1
            order = np.arange(rows.size)
            if cut.size > rows.size // 64:  # not in runs (a random sample): sort into groups
                order = np.lexsort(outer[::-1])
                cut = np.flatnonzero(np.any(np.diff(outer[:, order], axis=1) != 0, axis=0)) + 1
            for grp in np.split(order, cut):
                r_all = rows[grp]
                # rows differing only in pricing/region share a step time: evaluate each plan once
                code = (
                    (
                        (tp[r_all].astype(np.int64) * 256 + pp[r_all].astype(np.int64)) * 65536
                        + b[r_all].astype(np.int64)
                    )
                    * 4
                    + full["workload.plan.zero"][r_all].astype(np.int64)
                ) * 3 + full["workload.plan.recompute"][r_all].astype(np.int64)
                code = code * 64 + vp[r_all].astype(np.int64)
                code = (code * 1024 + cp[r_all].astype(np.int64)) * 1024 + ep[r_all].astype(
                    np.int64
                )
                code = (code * 2 + dual[r_all]) * 2 + epo[r_all]
                _, first, inv = np.unique(code, return_index=True, return_inverse=True)
                inv = inv.reshape(-1)
                r = r_all[first]
                hi, mi, pi = int(hw[r[0]]), int(mdl[r[0]]), int(prec[r[0]])
                gpus, s_len, gbatch = float(g[r[0]]), float(seq[grp[0]]), float(gb[r[0]])
                t, p_ = tp[r].astype(float), pp[r].astype(float)
                c_, e_ = cp[r].astype(float), ep[r].astype(float)
                oc = int(osys[r[0]])
                st = self.stack
                res = evaluate_plans(
                    self._model_shape(mi),
                    self._hw_shape(hi, DTYPES[pi]),
                    self.systems[hi] if oc < 0 else self.offer_systems[oc],
                    seq_len=s_len,
                    global_batch=gbatch,
                    gpus=gpus,
                    precision=DTYPES[pi],
                    method="full",
                    eff=self.efficiency,
                    tp=t,
                    pp=p_,
                    cp=c_,
                    ep=e_,
                    dp=gpus / (t * p_ * c_),
                    zero=full["workload.plan.zero"][r],
                    micro_batch=b[r].astype(float),
                    recompute=full["workload.plan.recompute"][r],
                    vp=vp[r].astype(float),
                    offload=self.offload,
                    elementwise_kernels=st.get("elementwise_kernels", ELEMENTWISE_KERNELS[0]),
                    loss_kernel=st.get("loss_kernel", LOSS_KERNELS[0]),
                    host_loop=st.get("host_loop", HOST_LOOPS[0]),
                    gemm_level=st.get("gemm_level", GEMM_LEVELS[0]),
                    ep_comm_overlap=epo[r].astype(float),
                    dualpipe=dual[r].astype(float),
                )
                out["step_time_s"][grp] = res["step_time_s"][inv]
                out["tokens_per_s"][grp] = res["tokens_per_s"][inv]
                out["mfu"][grp] = res["mfu"][inv]
                out["memory_per_gpu_gb"][grp] = res["memory_per_gpu_bytes"][inv] / GIGA
                out["dp"][grp] = (gpus / (t * p_ * c_))[inv]
                fits[grp] = res["fits"][inv]
            gr = g[rows].astype(float)
            productive_h = self.tokens / out["tokens_per_s"] / SECONDS_PER_HOUR
            items = self.run_items(
                rows, hw, mdl, full["option.pricing"], g, productive_h, price, bl,
                full["option.region"],
            )  # fmt: skip
            wall_h = items.pop("wall_clock_h")
            instances = bl["instances"][rows]
            out["wall_clock_h"] = wall_h
            out["gpu_hours"] = gr * wall_h
            out["price_usd_per_gpu_h"] = price[rows]
            # the sum of compare's items (compute, instance, reliability, people, power, data)
            out["total_usd"] = sum(items.values(), np.zeros(rows.size))
            out["total_gpus"] = gr
            out["gpus_billed"] = bl["gpus_billed"][rows]
            out["instances"] = instances
            out["offer_code"] = bl["offer"][rows]
        reason[rows] |= np.where(fits, 0, 16)
        out_any: dict[str, np.ndarray] = dict(out)
        out_any["rows"] = rows
        out_any["reason"] = reason
        return out_any

    def _offload_reasons(
        self, hw: np.ndarray, prec: np.ndarray, osys: np.ndarray, zero: np.ndarray
    ) -> np.ndarray:
        """Reason bits of configurations the offload cannot run on (host figures, ZeRO stage)."""
        bits = np.where(zero < offload_min_zero(self.offload), 2048, 0)
        # one check per distinct (hardware, precision, system): a loop over groups, not rows
        for h, p_, oc in np.unique(np.stack([hw, prec, osys], axis=1).astype(np.int64), axis=0):
            dtype = DTYPES[int(p_)]
            if dtype not in TRAIN_PRECISIONS or not self.accelerators[h].supports(dtype):
                continue  # already excluded (reason 64)
            system = self.systems[h] if oc < 0 else self.offer_systems[oc]
            if offload_missing(system, self._hw_shape(int(h), dtype), self.offload):
                bits = bits | np.where((hw == h) & (prec == p_) & (osys == oc), 1024, 0)
        return bits


@dataclass
@dataclass
class _ServiceGroup:
    """What :class:`EngineServingEvaluator` builds once per group of equal service settings."""

    it: Any
    max_seqs: int
    fixed_gb: float
    usable_gb: float
    cached_tokens: float
    max_num_tokens: int
    chunked_prefill: bool
    mixed_batching: bool
    separate_prefill_tokens: float | None
    scheduler_steps: int
    mig_slices: int
    plans: dict[str, Any]
    layout_fixed: bool


@dataclass
class EngineServingEvaluator(ItemPricing):
    r"""Serving configurations priced with the inference engine's iteration model.

    For each group of equal (hardware, model, precision, KV precision, gpus = accelerators of one
    replica, input and output lengths, service fields) the engine's inputs are validated by
    :func:`aitco.perf.inference.validate_serving_inputs` (as ``aitco infer`` does), and
    :func:`aitco.perf.inference.iteration_model`, :func:`~aitco.perf.inference.memory_plan` and
    :func:`aitco.perf.kvcache.kv_capacity` are built once; the batch sizes of the group are
    evaluated together with :func:`aitco.perf.inference.continuous_batching_step` and
    :func:`~aitco.perf.inference.chunked_ttft_terms` -- the steady-state continuous-batching
    model ``aitco infer --concurrency B`` uses.

    Service fields (:data:`SERVICE_KEYS`): ``prefix_cache_hit_rate`` (cached prompt tokens in
    the step and TTFT), ``scheduler_steps`` (admission wait), ``max_batched_tokens`` (prefill
    chunks), ``ep`` (expert parallel replica of ``gpus = ep`` accelerators), ``mig`` (a slice of
    one GPU, priced per slice), ``time_slice`` (one of N time-slicing replicas of a GPU or MIG
    slice, priced per replica: :func:`aitco.perf.service.fractional_accelerator`), and
    ``disaggregate`` / ``load_profile`` / ``autoscale``, planned
    by :func:`aitco.perf.service.service_plans` on the engine's estimate (the function ``aitco
    infer`` and ``aitco compare`` call): a disaggregated row reports the chosen layout's
    latencies, replicas and price; an autoscaled row is billed for the mean running replicas
    (pay-as-used pricing) and reports the peak as ``replicas``. Both ignore the row's batch.

    Notes
    -----
    TPOT = the mean iteration time at running batch *B*; output tokens/s = B / TPOT; TTFT =
    TPOT = the mean iteration time at running batch *B*; output tokens/s = B / TPOT; TTFT =
    the prompt's chunks beside the *B* decodes (in prefill-only iterations on a prefill-first
    engine) plus the multi-step admission wait; replicas for the arrival rate
    :math:`\lceil q\,o / \text{tokens/s} \rceil`; ``total_usd``, ``usd_per_h`` and $/Mtok from
    compare's items (:meth:`ItemPricing._serving_outputs`). A batch above the KV capacity or the
    engine's ``max_num_seqs`` is invalid (memory). Latencies are steady-state means, not
    percentiles under Poisson load.
    """

    hw: HardwareTable
    models: ModelTable
    accelerators: list[Any]
    systems: list[Any]
    model_archs: list[Any]
    qps: float | None = None
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    engine: str = "vllm"
    keys: dict[str, list[Any]] = field(default_factory=lambda: dict(SERVING_KEYS))
    metrics: tuple[str, ...] = SERVING_METRICS
    #: Service period priced. [months]
    months: float = DEFAULT_SERVICE_MONTHS
    #: Catalog factors of compare's items; required to evaluate (a missing one is an error).
    factors: Factors | None = None
    #: Operations choices as in a scenario's ``ops``.
    ops: OpsAssumptions = field(default_factory=OpsAssumptions)
    #: Data costs as in a scenario's ``data`` (stored dataset volume).
    data: DataCosts = field(default_factory=DataCosts)
    #: System each offer code runs on (None: the hardware's own system).
    offer_systems: list[Any] = field(default_factory=list)
    #: Share of an unused committed term reused elsewhere (compare's option field).
    committed_reuse_fraction: float = 0.0
    #: Values of the text service keys, by key (their codes index these lists).
    text_values: dict[str, list[Any]] = field(default_factory=dict)
    #: Pricing modes billed per running hour (autoscaled rows); others hold the peak.
    pay_as_used: tuple[str, ...] = PAY_AS_USED

    def __post_init__(self) -> None:
        self._cache: dict[Any, Any] = {}

    def _text(self, key: str, code: int) -> Any:
        vals = self.text_values.get(key)
        return None if vals is None or code < 0 else vals[code]

    def _group(self, k: tuple[int, ...], svc: tuple[Any, ...] = ()) -> Any:
        """Return a :class:`_ServiceGroup`, or an int reason code.

        ``k`` = (hardware, model, precision, KV precision, gpus, input, output tokens) codes;
        ``svc`` = the :data:`SERVICE_KEYS` values (empty: their defaults).
        """
        key = (k, svc)
        if key not in self._cache:
            self._cache[key] = self._build_group(k, svc)
        return self._cache[key]

    def _build_group(self, k: tuple[int, ...], svc: tuple[Any, ...]) -> Any:
        hi, mi, pi, ki, g, i, o = k
        d = dict(SERVICE_KEYS)
        if svc:
            d.update(zip(SERVICE_KEYS, svc, strict=True))
        hit = float(d["workload.prefix_cache_hit_rate"])
        steps, ep = int(d["workload.scheduler_steps"]), int(d["workload.ep"])
        m = d["workload.max_batched_tokens"]
        mbt = None if m is None or m <= 0 else int(m)
        text = {k: None if d[k] is None else self._text(k, int(d[k])) for k in SERVICE_TEXT_KEYS}
        acc, sysm, model = self.accelerators[hi], self.systems[hi], self.model_archs[mi]
        slices = 1
        ts = int(d["workload.time_slice"])
        if text["workload.mig"] is not None or ts > 1:
            if g != 1:
                return 1
            try:
                acc, slices = service.fractional_accelerator(
                    acc, text["workload.mig"], None, "workload."
                )
            except InputError:
                return 256
            try:
                acc, ts_shares = service.fractional_accelerator(acc, None, ts, "workload.")
            except InputError:
                return 4096
            slices *= ts_shares
        kw: dict[str, Any] = {
            "precision": DTYPES[pi], "kv_precision": None if ki < 0 else DTYPES[ki],
            "input_tokens": i, "output_tokens": o, "batch": None, "concurrency": None,
            "qps": None, "mode": "offline", "tp": 1 if ep > 1 else g, "pp": 1,
            "slo_ttft_ms": None, "slo_tpot_ms": None, "engine": self.engine,
            "allocation": "paged", "input_cv": 0.0, "output_cv": 0.0, "num_requests": 1,
            "seed": 0, "max_batch": None, "scheduler_steps": steps, "trace": None,
            "prefix_cache_hit_rate": hit, "max_batched_tokens": mbt, "ep": ep,
        }  # fmt: skip
        try:
            if ep > 1 and g != ep:
                raise PlanError("workload.ep", ep, f"option.gpus = ep ({g} given)")
            inp = validate_serving_inputs(model, acc, sysm, g, **kw)
        except PlanError:
            return 1
        except InputError as exc:
            if exc.field in ("--precision", "--kv-precision"):
                return 64
            if exc.field == "--ep":  # expert parallelism of a dense model: no such plan
                return 1
            raise
        prec, eng = inp.precisions, inp.engine
        mp = memory_plan(model, acc, tp=inp.tp, pp=1, precisions=prec, engine=eng, ep=ep)
        if not mp.fits:
            return 16
        cap = kv_capacity(
            model, mp.kv_gb, input_tokens=i, output_tokens=o, kv_precision=prec.kv, tp=inp.tp, pp=1
        )
        it = iteration_model(
            model, acc, sysm, tp=inp.tp, pp=1, precisions=prec, efficiency=self.efficiency,
            engine=eng.name, ep=ep,
        )  # fmt: skip
        plans: dict[str, Any] = {}
        dis, prof, auto = (text[k] for k in SERVICE_TEXT_KEYS[1:])
        if dis is not None and (prof is not None or auto is not None):
            raise InputError(
                "workload.disaggregate", dis, "no load_profile/autoscale with it (one layout)"
            )
        if dis is not None or prof is not None or auto is not None:
            est = estimate_inference(
                model, acc, sysm, g, efficiency=self.efficiency,
                **{k: x for k, x in kw.items() if k not in ("input_cv", "output_cv", "trace")},
            )  # fmt: skip
            assert est.iteration is not None  # set by every estimate_inference
            plans = service.service_plans(
                est.values, est.iteration, sysm, None, input_tokens=float(i),
                output_tokens=float(o), qps=self.qps, disaggregate=dis, load_profile=prof,
                autoscale=auto, prefix_cache_hit_rate=hit, efficiency=self.efficiency,
                field_prefix="workload.",
            )  # fmt: skip
        return _ServiceGroup(
            it, min(cap.max_sequences * ep, eng.max_num_seqs * ep),
            mp.weights_gb + mp.activations_gb, mp.usable_gb, inp.cached_tokens,
            eng.max_num_tokens, eng.chunked_prefill, eng.mixed_batching,
            eng.separate_prefill_tokens, steps, slices, plans, dis not in (None, "auto"),
        )  # fmt: skip

    def evaluate(self, v: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of serving configurations, one engine model per group."""
        n = _chunk_len(v)
        h = self.hw
        full = {k: np.broadcast_to(np.asarray(a), (n,)) for k, a in v.items()}
        hw, mdl, prec = full["option.hardware"], full["workload.model"], full["workload.precision"]
        kvp, g, bsz = full["workload.kv_precision"], full["option.gpus"], full["workload.batch"]
        i_tok, o_tok = full["workload.input_tokens"], full["workload.output_tokens"]
        svc_keys = [k for k in SERVICE_KEYS if k in full]
        price = h.bill(hw, full["option.pricing"], full["option.region"], g)["price"]
        reason = np.zeros(n, dtype=np.int64)
        # precision support is the engine's call (int4/fp4 weights may run on 16-bit compute)
        reason |= np.where(g > h.scale_up_domain[hw], 2, 0)
        reason |= np.where(np.isnan(price), 32, 0)
        rows = np.flatnonzero(reason == 0)
        tpot = np.zeros(rows.size)
        ttft = np.zeros(rows.size)
        mem = np.zeros(rows.size)
        busy = np.zeros(rows.size)
        slices = np.ones(rows.size)
        groups: list[tuple[np.ndarray, _ServiceGroup]] = []
        if rows.size:
            cols = [hw, mdl, prec, kvp, g, i_tok, o_tok] + [full[k] for k in svc_keys]
            outer = np.stack([np.asarray(c, dtype=float)[rows] for c in cols])
            order = np.lexsort(outer[::-1])
            cut = np.flatnonzero(np.any(np.diff(outer[:, order], axis=1) != 0, axis=0)) + 1
            for grp in np.split(order, cut):
                r = rows[grp]
                k = tuple(int(c[r[0]]) for c in cols[:7])
                svc = {key: float(full[key][r[0]]) for key in svc_keys}
                svc_t = tuple(svc.get(key, dv) for key, dv in SERVICE_KEYS.items()) if svc else ()
                got = self._group(k, svc_t)
                if isinstance(got, int):
                    reason[r] |= got
                    continue
                b = bsz[r].astype(float)
                reason[r] |= np.where(b > got.max_seqs, 16, 0)
                i, o, c = float(k[5]), float(k[6]), got.cached_tokens
                # prefill-first engines run prompts in their own iterations (decodes stall)
                sep = got.separate_prefill_tokens
                step_terms = continuous_batching_terms(got.it, b, i, o, c, sep)
                step = continuous_batching_step(got.it, b, i, o, c, sep)
                terms = chunked_ttft_terms(
                    got.it, b, i, o, c, got.max_num_tokens, got.chunked_prefill,
                    got.mixed_batching,
                )  # fmt: skip
                tpot[grp] = step
                busy[grp] = busy_share(step_terms, step)
                ttft[grp] = (
                    sum(terms.values())
                    + got.it.request_path_s
                    + scheduler_wait_s(got.scheduler_steps, step)
                )
                frac = np.minimum(b / max(got.max_seqs, 1), 1.0)
                mem[grp] = got.fixed_gb + (got.usable_gb - got.fixed_gb) * frac
                slices[grp] = got.mig_slices
                if got.plans:
                    groups.append((grp, got))
        keep = reason[rows] == 0
        pos = np.full(rows.size, -1)
        pos[np.flatnonzero(keep)] = np.arange(int(keep.sum()))
        rows, tpot, ttft, mem = rows[keep], tpot[keep], ttft[keep], mem[keep]
        busy, slices = busy[keep], slices[keep]
        b = bsz[rows].astype(float)
        o = o_tok[rows].astype(float)
        tok_s = b / tpot
        gr = g[rows].astype(float)
        pricing = full["option.pricing"][rows]
        region = full["option.region"][rows]
        out = self._serving_outputs(
            hw[rows], pricing, region, ttft, tpot, tok_s, o, gr, busy, slices=slices
        )
        for grp, got in groups:
            at = pos[grp]
            at = at[at >= 0]
            if at.size and not self._plan_rows(
                out, at, got, hw[rows], pricing, region, o, gr, busy, slices
            ):
                reason[rows[at]] |= 512
        # no eligible offer for the replicas: invalid, price
        reason[rows] |= np.where(np.isnan(out["total_usd"]), 32, 0)
        return {**out, "memory_per_gpu_gb": mem, "rows": rows, "reason": reason}

    def _plan_rows(
        self, out: dict[str, np.ndarray], at: np.ndarray, got: _ServiceGroup, hw: np.ndarray,
        pricing: np.ndarray, region: np.ndarray, o: np.ndarray, g: np.ndarray,
        busy_share: np.ndarray, slices: np.ndarray,
    ) -> bool:  # fmt: skip
        """Replace the outputs of disaggregated or autoscaled rows ``at`` by their plan's.

        The plan's replicas (and, autoscaled on a pay-as-used offer, its running share of the
        hours) are priced with the same items as every service
        (:meth:`ItemPricing._serving_outputs`). Returns whether the plan carries the load (a
        disaggregated layout meeting its objectives; an autoscaled day always does, its
        unserved share aside).
        """
        pool, day = got.plans.get("disaggregation"), got.plans.get("autoscale")
        hours_share = np.ones(at.size)
        if pool is not None:
            mode = "disaggregated" if got.layout_fixed else pool["chosen"]
            p = pool[mode] or pool["disaggregated"]
            replicas = float(p["prefill_replicas"] + p["decode_replicas"])
            rps = float(p["requests_per_s"])
            qps = self.qps if self.qps is not None else rps
            ttft, tpot = float(p["ttft_s"]), float(p["tpot_s"])
            out["ttft_s"][at] = ttft
            out["tpot_s"][at] = tpot
            out["e2e_latency_s"][at] = ttft + (o[at] - 1.0) * tpot
        else:
            assert day is not None  # a group has plans only with one of the two
            replicas = float(max(int(day["peak_replicas"]), 1))
            rps = replicas * float(day["requests_per_s_per_replica"])
            qps = float(np.mean(day["qps_by_hour"]))
            payg = np.isin(pricing[at], [PRICING_MODES.index(m) for m in self.pay_as_used])
            hours_share = np.where(payg, float(day["mean_replicas"]) / replicas, 1.0)
        tok_s = np.full(at.size, rps * 1.0) * o[at] / replicas
        plan = self._serving_outputs(
            hw[at], pricing[at], region[at], out["ttft_s"][at], out["tpot_s"][at], tok_s, o[at],
            g[at], busy_share[at], slices=slices[at], replicas=np.full(at.size, replicas),
            qps=qps, hours_share=hours_share,
        )  # fmt: skip
        for k in ("replicas", "total_gpus", "requests_per_s", "output_tokens_per_s", "total_usd",
                  "usd_per_h", "usd_per_million_output_tokens", "price_usd_per_gpu_h",
                  "gpus_billed", "instances", "offer_code"):  # fmt: skip
            out[k][at] = plan[k]
        return bool(p["meets_slo"]) if pool is not None else True
