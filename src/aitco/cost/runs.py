"""What the cost items of runs and services need, resolved against the cost factors once.

:class:`CostRows` holds the inputs of *n* rows (a sweep's configurations, or one option as
``n = 1``): the accelerators and their price, the hours (productive, held, lost by cause), the
power figures and the workload's data and compliance costs. :class:`RunCosts` resolves them
against the :class:`~aitco.cost.factors.CostFactors` lazily (each factor is read the first time
an item needs it), so the item lines of :mod:`aitco.cost.tco` are plain functions of arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from aitco.cost import items
from aitco.cost.factors import HYPERSCALE_PUE, CostFactors
from aitco.cost.pricing import HELD, OWNED, PAY_AS_USED, RENTED, committed_term_h
from aitco.errors import CatalogError


class DataSpec(Protocol):
    """The data costs of a workload (a scenario's ``data``)."""

    @property
    def acquisition_usd(self) -> float: ...  # noqa: D102
    @property
    def raw_tb(self) -> float: ...  # noqa: D102
    @property
    def cleaning_usd_per_tb(self) -> float: ...  # noqa: D102
    @property
    def labeled_items(self) -> float: ...  # noqa: D102
    @property
    def labeling_usd_per_item(self) -> float: ...  # noqa: D102
    @property
    def storage_tier(self) -> str: ...  # noqa: D102
    @property
    def egress_gb(self) -> float: ...  # noqa: D102
    @property
    def egress_kind(self) -> str: ...  # noqa: D102
    @property
    def cross_zone_gb(self) -> float: ...  # noqa: D102
    @property
    def cross_zone_kind(self) -> str: ...  # noqa: D102


class ComplianceSpec(Protocol):
    """The compliance costs of a workload (a scenario's ``compliance``)."""

    @property
    def gb_per_day(self) -> float: ...  # noqa: D102
    @property
    def retention_days(self) -> float: ...  # noqa: D102
    @property
    def storage_tier(self) -> str: ...  # noqa: D102
    @property
    def audit_hours(self) -> float: ...  # noqa: D102


@dataclass
class CostRows:
    """What the items of runs or services need, over *n* rows (one option: ``n = 1``).

    Every array has one value per row (scalars broadcast). Hours are wall-clock hours of the
    run or of the service period billed; the ``*_h`` overheads are per accelerator.

    Attributes
    ----------
    kind : str
        ``"training"`` (a run to completion) or ``"inference"`` (a service held for a period).
    modes : numpy.ndarray of str
        Pricing mode of each row (:data:`aitco.cost.pricing.RENTED`, ``owned``, ``colocation``).
    hardware : numpy.ndarray of str
        Accelerator id of each row (named in errors).
    gpus, usd_per_gpu_h, gpus_billed, instances : numpy.ndarray
        Accelerators used, price per accelerator-hour, accelerators and instances billed.
    providers : numpy.ndarray of str
        Provider of each rented row's offer ("" none): its support plan.
    job_nodes, host_nodes : numpy.ndarray
        Nodes of the job (repair labour), and the share of servers whose host power it draws.
    productive_h, wall_h, busy_h : numpy.ndarray
        Hours of useful work, hours held, and hours at the busy power draw. [h]
    rework_h, restart_h, checkpoint_stall_h, firmware_h : numpy.ndarray
        Lost hours per accelerator by cause (:mod:`aitco.cost.reliability`). [h]
    interruptions, failure_share : numpy.ndarray
        Interruptions of the run, and the share that are failures (the rest: spot). [-]
    tdp_w, node_power_w : numpy.ndarray
        Board power (NaN: unpublished) and host power per node. [W]
    active_fraction : numpy.ndarray or None
        Draw while busy over TDP (None: the catalog's training draw factor).
    cooling, regions : numpy.ndarray of str
        Cooling of owned rows (their PUE) and the region of each row (electricity, carbon).
    storage_months, dataset_gb, checkpoint_gb, period_days : numpy.ndarray
        Months data is stored, the volumes stored, and the days records are produced.
    data, compliance : DataSpec, ComplianceSpec
        The workload's data and compliance costs.
    """

    kind: str
    modes: Any
    hardware: Any
    gpus: Any
    usd_per_gpu_h: Any
    gpus_billed: Any
    instances: Any
    providers: Any
    job_nodes: Any
    host_nodes: Any
    productive_h: Any
    wall_h: Any
    busy_h: Any
    tdp_w: Any
    node_power_w: Any
    cooling: Any
    regions: Any
    data: DataSpec
    compliance: ComplianceSpec
    rework_h: Any = 0.0
    restart_h: Any = 0.0
    checkpoint_stall_h: Any = 0.0
    firmware_h: Any = 0.0
    interruptions: Any = 0.0
    failure_share: Any = 1.0
    active_fraction: Any = None
    reuse_fraction: Any = 0.0
    storage_months: Any = 0.0
    dataset_gb: Any = 0.0
    checkpoint_gb: Any = 0.0
    period_days: Any = 0.0
    one_off: bool = True
    repair_model: str = "per_incident"
    #: Spot-rate factor id of spot rows (their preemption items cite it).
    spot_rate_id: str = ""
    #: Power limit the accelerators run at (shown by the power items; None: the TDP). [W]
    power_limit_w: float | None = None
    #: Measured idle draw of each row's accelerator (NaN: not published, the idle factor). [W]
    idle_w: Any = math.nan
    #: Citation of a measured ``idle_w`` (the power items cite it; "" when none).
    idle_w_source: str = ""
    #: Inputs every row's reliability items show in ``--explain`` (checkpoint interval...).
    explain: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = np.broadcast(*(np.asarray(self.gpus), np.asarray(self.modes, dtype=object))).shape
        self.n = int(np.prod(n)) if n else 1
        shape = (self.n,)
        for name in _ROW_ARRAYS:
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, np.broadcast_to(np.asarray(v, dtype=float), shape).copy())
        for name in ("modes", "hardware", "providers", "cooling", "regions"):
            v = np.asarray(getattr(self, name), dtype=object)
            setattr(self, name, np.broadcast_to(v, shape).copy())


_ROW_ARRAYS = (
    "gpus", "usd_per_gpu_h", "gpus_billed", "instances", "job_nodes", "host_nodes",
    "productive_h", "wall_h", "busy_h", "tdp_w", "node_power_w", "rework_h", "restart_h",
    "checkpoint_stall_h", "firmware_h", "interruptions", "failure_share", "active_fraction",
    "reuse_fraction", "storage_months", "dataset_gb", "checkpoint_gb", "period_days", "idle_w",
)  # fmt: skip


class RunCosts:
    """The cost inputs of :class:`CostRows` resolved against the factors, once, lazily.

    Each property reads the factors it needs the first time an item needs it, so an answer's
    ``assumptions`` list the factors its items used. The item lines of :data:`TRAINING_LINES`
    and :data:`SERVING_LINES` read these properties and call :mod:`aitco.cost.items`.
    """

    def __init__(self, rows: CostRows, fac: CostFactors) -> None:
        self.r = rows
        self.fac = fac
        self.n = rows.n
        #: The items priced so far, by name (set by :func:`aitco.cost.tco.compose`). [USD]
        self.done: dict[str, np.ndarray] = {}

    # --------------------------------------------------------------------- modes
    @cached_property
    def rented(self) -> np.ndarray:
        """Rows rented from an offer."""
        return np.isin(self.r.modes, RENTED)

    @cached_property
    def owned(self) -> np.ndarray:
        """Rows of owned hardware (owned or colocated)."""
        return np.isin(self.r.modes, OWNED)

    @cached_property
    def held(self) -> np.ndarray:
        """Rows holding capacity whether busy or not (owned, committed)."""
        return np.isin(self.r.modes, HELD)

    @cached_property
    def pay_as_used(self) -> np.ndarray:
        """Rows rented by the hour (on demand, spot): billed while the instance is up."""
        return np.isin(self.r.modes, PAY_AS_USED)

    @cached_property
    def spot(self) -> np.ndarray:
        """Rows on spot capacity."""
        return np.asarray(self.r.modes == "spot", dtype=bool)

    @cached_property
    def colocation(self) -> np.ndarray:
        """Rows of owned hardware in rented space."""
        return np.asarray(self.r.modes == "colocation", dtype=bool)

    @cached_property
    def term_h(self) -> np.ndarray:
        """Hours of one committed term of each row (NaN: none). [h]."""
        modes = self.r.modes.tolist()
        got = {m: committed_term_h(str(m)) for m in dict.fromkeys(modes)}
        return np.array([got[m] for m in modes], dtype=float)

    @cached_property
    def committed(self) -> np.ndarray:
        """Rows on a committed term."""
        return np.isfinite(self.term_h)

    @property
    def training(self) -> bool:
        """Whether the rows are training runs (else services)."""
        return self.r.kind == "training"

    # --------------------------------------------------------------------- reliability
    @cached_property
    def network_fraction(self) -> np.ndarray:
        """Share of failures that are network failures (0 where no failure). [fraction]."""
        fs = self.r.failure_share
        return np.where(fs > 0, self.fac.network_interruption_fraction, 0.0)

    @cached_property
    def held_gpu_h(self) -> np.ndarray:
        """Accelerator-hours held. [GPU h]."""
        return np.asarray(self.r.gpus * self.r.wall_h, dtype=float)

    @cached_property
    def fragmentation_f(self) -> float:
        """Held capacity the scheduler cannot fill. [fraction]."""
        return self.fac.fragmentation_idle_fraction

    @cached_property
    def frag_gpu_h(self) -> np.ndarray:
        """Held accelerator-hours idle from fragmentation (0 where capacity is not held)."""
        if not np.any(self.held):
            return np.zeros(self.n)
        idle = items.fragmentation_idle_gpu_h(self.held_gpu_h, self.fragmentation_f)
        return np.where(self.held, idle, 0.0)

    @cached_property
    def rented_idle_f(self) -> float:
        """Share of pay-as-used instance-hours billed while the job does not run. [fraction]."""
        return self.fac.rented_idle_fraction

    @cached_property
    def rented_idle_gpu_h(self) -> np.ndarray:
        """Pay-as-used accelerator-hours billed outside a training job (0 elsewhere). [GPU h].

        The factor is read only where it can apply: a training run on pay-as-used rows (held
        capacity has its idle share in fragmentation; a service is billed for its period).
        """
        if not (self.training and np.any(self.pay_as_used)):
            return np.zeros(self.n)
        idle = items.rented_idle_gpu_h(self.r.gpus_billed * self.r.wall_h, self.rented_idle_f)
        return np.where(self.pay_as_used, idle, 0.0)

    @cached_property
    def frag_h(self) -> np.ndarray:
        """Fragmentation idle hours per accelerator. [h]."""
        n = self.r.gpus
        return np.where(n > 0, self.frag_gpu_h / np.where(n > 0, n, 1.0), 0.0)

    @cached_property
    def terms(self) -> dict[str, np.ndarray]:
        """Whole committed terms and their unused hours (rows without a term: 1 and 0)."""
        th = np.where(self.committed, self.term_h, 1.0)
        got = items.committed_terms(self.r.wall_h + self.frag_h, th)
        return {k: np.where(self.committed, v, 0.0) for k, v in got.items()}

    # --------------------------------------------------------------------- power
    @cached_property
    def pue(self) -> tuple[np.ndarray, np.ndarray]:
        """PUE factor id and value of each row (rented: the hyperscaler's)."""
        kinds = np.where(self.rented, HYPERSCALE_PUE, self.r.cooling)
        got = {k: self.fac.pue(str(k)) for k in dict.fromkeys(kinds.tolist())}
        return (
            np.array([got[k][0] for k in kinds], dtype=object),
            np.array([got[k][1] for k in kinds], dtype=float),
        )

    @cached_property
    def usd_per_kwh(self) -> tuple[np.ndarray, np.ndarray]:
        """Electricity factor id and price of owned rows ("" and 0 where it is in a rent)."""
        ids = np.full(self.n, "", dtype=object)
        price = np.zeros(self.n)
        rows = np.flatnonzero(self.owned)
        if rows.size == 0:
            return ids, price
        keys = list(zip(self.r.regions[rows].tolist(), self.r.modes[rows].tolist(), strict=True))
        got = {
            (reg, mode): self.fac.electricity_usd_per_kwh(str(reg), f"{mode} region")
            for reg, mode in dict.fromkeys(keys)
        }
        ids[rows] = [got[k][0] for k in keys]
        price[rows] = [got[k][1] for k in keys]
        return ids, price

    @cached_property
    def carbon_intensity(self) -> tuple[np.ndarray, np.ndarray]:
        """Carbon intensity factor id and value of each row's region. [kg/kWh]."""
        got = {
            k: self.fac.carbon_kg_per_kwh(str(k)) for k in dict.fromkeys(self.r.regions.tolist())
        }
        return (
            np.array([got[k][0] for k in self.r.regions], dtype=object),
            np.array([got[k][1] for k in self.r.regions], dtype=float),
        )

    @cached_property
    def active_fraction(self) -> np.ndarray:
        """Draw while busy over TDP: the engine's, else the catalog's training draw factor."""
        if self.r.active_fraction is not None:
            return np.asarray(self.r.active_fraction, dtype=float)
        return np.full(self.n, self.fac.active_fraction_of_tdp)

    @cached_property
    def idle_fraction(self) -> np.ndarray:
        """Idle draw over the board power: the measured ``idle_w``, else the idle factor."""
        return self.fac.idle_fraction_of_board(self.r.idle_w, self.r.tdp_w) * np.ones(self.n)

    @cached_property
    def idle_h(self) -> np.ndarray:
        """Hours at the idle draw: held but not busy, and the fragmentation idle. [h]."""
        return np.asarray(self.r.wall_h - self.r.busy_h + self.frag_h, dtype=float)

    @cached_property
    def energy(self) -> dict[str, np.ndarray]:
        """Energy and emissions of each row (NaN where the accelerator has no TDP)."""
        tdp = self.r.tdp_w
        known = np.isfinite(tdp)
        bad = self.owned & ~known
        if np.any(bad):
            hw = self.r.hardware[np.flatnonzero(bad)[0]]
            raise CatalogError(f"accelerators.{hw}.tdp_w", None, "a TDP to compute power")
        if not np.any(known):  # energy is inside every rental price: reported as unknown
            nan = np.full(self.n, math.nan)
            keys = ("busy_it_w", "it_active_kwh", "it_idle_kwh", "input_kwh", "meter_kwh")
            return {**{k: nan for k in keys}, "kg_co2e": nan}
        e = items.energy_kwh(
            gpus=self.r.gpus, tdp_w=np.where(known, tdp, 0.0), active_fraction=self.active_fraction,
            idle_fraction=self.idle_fraction, nodes=self.r.host_nodes,
            node_power_w=self.r.node_power_w, switch_w_per_gpu=self.fac.switch_w_per_gpu,
            busy_h=self.r.busy_h, idle_h=self.idle_h, loss=self.fac.conversion_loss,
            pue=self.pue[1],
        )  # fmt: skip
        e["kg_co2e"] = items.emissions_kg_co2e(e["meter_kwh"], self.carbon_intensity[1])
        return {k: np.where(known, v, math.nan) for k, v in e.items()}

    # --------------------------------------------------------------------- people
    @cached_property
    def labour_rate(self) -> float:
        """Loaded hourly rate of operations staff. [USD/h]."""
        return self.fac.loaded_labour_rate()[0]

    @cached_property
    def fte_per_1000(self) -> np.ndarray:
        """Operations staff per 1,000 accelerators of each row. [FTE]."""
        out = np.zeros(self.n)
        for owned in (True, False):
            sel = self.owned == owned
            if np.any(sel):
                out[sel] = self.fac.fte_per_1000_gpus(owned)
        return out

    @cached_property
    def min_fte(self) -> np.ndarray:
        """On-call staff of owned rows: the fleet's share of a 24x7 rota (0 otherwise). [FTE]."""
        if not np.any(self.owned):
            return np.zeros(self.n)
        return np.where(self.owned, self.fac.on_call_min_fte(self.r.gpus), 0.0)

    @cached_property
    def carbon_usd_per_tonne(self) -> float:
        """Carbon price (0: emissions reported, not priced). [USD/t CO2e]."""
        return self.fac.carbon_usd_per_tonne()

    @cached_property
    def support(self) -> dict[str, Any]:
        """Support schedule of each rented row's provider (None: no plan tabled)."""
        return {
            str(p): self.fac.support_schedule(str(p))
            for p in dict.fromkeys(self.r.providers[self.rented].tolist())
            if p
        }

    @cached_property
    def support_account_other_usd_per_month(self) -> float:
        """The account's other monthly spend beside the job (its support share). [USD/month]."""
        return self.fac.support_account_other_usd_per_month

    @cached_property
    def has_support(self) -> np.ndarray:
        """Rented rows whose provider tables a support plan."""
        providers = self.r.providers.tolist()
        tabled = {p: self.support.get(str(p)) is not None for p in dict.fromkeys(providers)}
        ok = np.array([tabled[p] for p in providers], dtype=bool)
        return self.rented & ok

    # --------------------------------------------------------------------- data
    @cached_property
    def storage(self) -> tuple[str, float]:
        """Storage price of the data's tier, with its id. [USD/(GB month)]."""
        return self.fac.storage_usd_per_gb_month(self.r.data.storage_tier, "data.storage_tier")

    @cached_property
    def retention_storage(self) -> tuple[str, float]:
        """Storage price of the compliance records' tier, with its id. [USD/(GB month)]."""
        tier = self.r.compliance.storage_tier
        return self.fac.storage_usd_per_gb_month(tier, "compliance.storage_tier")

    def transfer(self, kind: str, field_name: str) -> tuple[str, float]:
        """Transfer price of ``kind``, with its id. [USD/GB]."""
        return self.fac.transfer_usd_per_gb(kind, field_name)
