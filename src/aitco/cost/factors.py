"""Cost factors: catalog values, then an assumption preset, then a user's overrides, resolved once.

Every command that prices something (``compare``/``tco``, ``sweep``/``optimize``, ``buy-vs-rent``,
``infer``, ``levers``, ``api-vs-self-host``, ``validate tco``) reads its factors through one
:class:`CostFactors`: the three layers are merged into one table when it is built, every
override is checked against the factor it replaces, and each value read is remembered with the
place it came from, so an answer can list the factors it rests on (``assumptions``).

The typed accessors name each factor by its quantity and unit (``restart_h``,
``failure_rate_per_gpu_h``, ``pue(kind)``, ``electricity_usd_per_kwh(region)``...); the catalog
ids they read are the module constants below. A factor the catalog lacks is an error naming it
when it is first needed (no silent default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import spot_rate_ids
from aitco.cost import people
from aitco.errors import CatalogError, InputError, UnknownIdError

FactorValue = float | list[float]

# ------------------------------------------------------------------------- catalog factor ids
#: Job-interrupting failures per accelerator-hour. [1/(GPU h)]
FAILURE_RATE_ID = "failure.interruptions-per-gpu-hour"
#: Share of failures that are network/topology failures. [fraction]
NETWORK_FRACTION_ID = "failure.network-interruption-fraction"
#: Restart and re-queue time per interruption. [h]
RESTART_ID = "restart.hours"
#: Planned firmware/driver downtime per year. [h/year]
FIRMWARE_ID = "firmware.downtime-hours-per-year"
#: Checkpoint write bandwidth of one node. [GB/s]
CHECKPOINT_WRITE_ID = "checkpoint.write-gb-s-per-node"
#: Share of a synchronous save an asynchronous checkpoint stalls. [fraction]
ASYNC_STALL_ID = "checkpoint.async-stall-fraction"
#: Held capacity the scheduler cannot fill. [fraction]
FRAGMENTATION_ID = "fragmentation.idle-fraction"
#: Share of a pay-as-used rented instance's billed hours when the job does not run (set-up,
#: waiting, tear-down): 0 by default, a team's own observation (``aitco reconcile
#: --calibrate`` writes it in its catalog overlay). [fraction]
RENTED_IDLE_ID = "utilization.rented-idle-fraction"
#: Spare accelerators of an owned fleet. [fraction]
SPARES_ID = "spares.fraction"
#: Draw while computing, as a fraction of TDP. [fraction]
ACTIVE_POWER_ID = "utilization-power.training-fraction-of-tdp"
#: Draw while idle, as a fraction of TDP. [fraction]
IDLE_POWER_ID = "idle-power.fraction-of-tdp"
#: Network switch power per accelerator. [W]
SWITCH_POWER_ID = "network.switch-power-w-per-gpu"
#: PSU/UPS/PDU conversion loss. [fraction]
CONVERSION_LOSS_ID = "power-conversion.loss"
#: Colocation fee per provisioned kW and month. [USD/(kW month)]
COLOCATION_ID = "facility.colocation-usd-per-kw-month"
#: Carbon price (0: emissions reported, not priced). [USD/t CO2e]
CARBON_PRICE_ID = "carbon.usd-per-tonne"
#: Labour role whose wage prices operations, incident and audit time. [USD/h]
OPS_ROLE_ID = "labour.usd-per-hour.sre"
#: Employer cost of compensation over wages (wage -> loaded labour rate). [-]
EMPLOYER_COST_ID = "labour.employer-cost-factor"
#: Factors of the on-call rota an owned fleet shares: seats staffed around the clock, productive
#: hours per FTE, and the fleet that needs a rota of its own (a smaller fleet pays its share).
ON_CALL_IDS = (
    "ops.on-call-seats.owned",
    "labour.productive-hours-per-fte-year",
    "ops.on-call-rota-gpus",
)
#: The cloud account's other monthly spend beside the priced job (support is billed per account
#: and month: :func:`aitco.cost.people.support_share_usd`). [USD/month]
SUPPORT_ACCOUNT_OTHER_ID = "support.account-other-usd-per-month"
#: Staff hours per incident. [h]
MTTR_ID = "ops.mttr-staff-hours"
#: Repair labour growth per doubling of the job's nodes (cluster-scale repair model). [-]
REPAIR_SCALE_ID = "ops.repair-scale-per-node-doubling"
#: Operations staff per 1,000 accelerators, owned and cloud. [FTE]
FTE_IDS = {True: "ops.fte-per-1000-gpus.owned", False: "ops.fte-per-1000-gpus.cloud"}
#: Bytes of a training dataset per token. [B]
BYTES_PER_TOKEN_ID = "data.bytes-per-token"
#: Ownership factors: holding period, useful life, cost of capital.
HORIZON_ID = "ownership.horizon-years"
USEFUL_LIFE_ID = "useful-life.years"
DISCOUNT_RATE_ID = "finance.discount-rate"
#: Cooling of a rented accelerator: the hyperscaler's PUE.
HYPERSCALE_PUE = "hyperscale"


@dataclass
class CostFactors:
    """Factor values: catalog, then preset overrides, then a user's overrides.

    Parameters
    ----------
    catalog : Catalog
        The catalog.
    preset : str, optional
        Preset id (its ``overrides`` apply on top of the catalog).
    overrides : dict
        A user's factors (factor id -> value), applied last: a scenario's ``assumptions``, or
        ``buy-vs-rent``'s ``overrides``.
    where : str
        Field prefix naming the overrides in errors (``assumptions``, ``overrides``).

    Attributes
    ----------
    used : dict of str to str
        Each factor read so far and where its value came from.
    """

    catalog: Catalog
    preset: str | None = None
    overrides: dict[str, FactorValue] = field(default_factory=dict)
    where: str = "assumptions"
    used: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        preset_over: dict[str, FactorValue] = {}
        if self.preset:
            if self.preset not in self.catalog.presets:
                raise UnknownIdError("preset", self.preset, self.catalog.presets, field="preset")
            preset_over = dict(self.catalog.presets[self.preset].overrides)
        for fid, v in preset_over.items():
            self._check_override(fid, v, f"presets.{self.preset}.overrides.{fid}")
        for fid, v in self.overrides.items():
            self._check_override(fid, v, f"{self.where}.{fid}")
        # the three layers merged once: id -> (value, where it came from)
        self._table: dict[str, tuple[FactorValue, str | None]] = {
            fid: (f.value, None) for fid, f in self.catalog.factors.items()
        }
        self._table.update((k, (v, f"preset {self.preset}")) for k, v in preset_over.items())
        label = "scenario assumptions" if self.where == "assumptions" else "user override"
        self._table.update((k, (v, label)) for k, v in self.overrides.items())

    def _check_override(self, fid: str, v: FactorValue, where: str) -> None:
        """Reject overrides that cannot be right for the factor they replace.

        Unknown factor ids, non-finite or negative values, fractions outside [0, 1] and a PUE
        below 1 (facility power can never be below IT power) are errors naming the field.
        """
        fac = self.catalog.factors.get(fid)
        if fac is None:
            # ids looked up with a fallback (e.g. residual-value.<accelerator>) are accepted when
            # a catalog factor of the same family (the text before the last dot) exists
            family = fid.rsplit(".", 1)[0] + "."
            fac = next((f for k, f in self.catalog.factors.items() if k.startswith(family)), None)
            if fac is None:
                raise UnknownIdError("factor", fid, self.catalog.factors, field=where)
        for x in v if isinstance(v, list) else [v]:
            if not math.isfinite(float(x)) or float(x) < 0:
                raise InputError(where, v, f"a finite, non-negative value in {fac.unit}")
            if fac.category == "pue" and float(x) < 1.0:
                raise InputError(where, v, "a PUE >= 1 (facility power >= IT power)")
            if fac.unit.startswith("fraction") and fac.category != "finance" and float(x) > 1.0:
                raise InputError(where, v, f"a fraction in [0, 1] ({fac.unit})")

    # ----------------------------------------------------------------------- generic lookups
    def has(self, fid: str) -> bool:
        """Whether ``fid`` has a value anywhere."""
        return fid in self._table

    def raw(self, fid: str, field_name: str | None = None) -> FactorValue:
        """Value of ``fid`` (scalar or curve) and remember where it came from."""
        got = self._table.get(fid)
        if got is None:
            raise UnknownIdError("factor", fid, self.catalog.factors, field=field_name or fid)
        value, src = got
        if src is None:
            prov = self.catalog.factors[fid].provenance.get("value")
            src = prov.source.cite() if prov else "catalog"
        self.used[fid] = src
        return value

    def value(self, fid: str, field_name: str | None = None) -> float:
        """Scalar value of ``fid``."""
        v = self.raw(fid, field_name)
        if isinstance(v, list):
            raise CatalogError(fid, v, "a scalar factor value")
        return float(v)

    def curve(self, fid: str) -> list[float]:
        """Curve value of ``fid`` (a scalar becomes a one-point curve)."""
        v = self.raw(fid)
        return [float(x) for x in v] if isinstance(v, list) else [float(v)]

    def first(self, fids: list[str], field_name: str) -> tuple[str, float]:
        """Return the first of ``fids`` that has a value, as ``(id, value)``."""
        for fid in fids:
            if self.has(fid):
                return fid, self.value(fid)
        raise CatalogError(
            field_name, fids[0], f"one of the factors {', '.join(fids)} in the catalog"
        )

    def region_value(self, prefix: str, region: str, field_name: str) -> tuple[str, float]:
        """Return ``<prefix>.<region>``, else the region's first part (``us-east-1`` -> ``us``)."""
        cands = [f"{prefix}.{region}", f"{prefix}.{region.split('-')[0]}"]
        return self.first(cands, field_name)

    def sources(self, *fids: str) -> list[str]:
        """Citations of the factors ``fids`` as used."""
        return [f"{f}: {self.used[f]}" for f in fids if f in self.used]

    def assumption_lines(self) -> list[str]:
        """One line per factor used: ``id = value (where it came from)``, sorted by id."""
        return [f"{fid} = {self.raw(fid)!r} ({src})" for fid, src in sorted(self.used.items())]

    # ----------------------------------------------------------------------- reliability
    @property
    def failure_rate_per_gpu_h(self) -> float:
        """Job-interrupting failures per accelerator-hour. [1/(GPU h)]."""
        return self.value(FAILURE_RATE_ID)

    @property
    def network_interruption_fraction(self) -> float:
        """Share of failures that are network/topology failures. [fraction]."""
        return self.value(NETWORK_FRACTION_ID)

    @property
    def restart_h(self) -> float:
        """Restart and re-queue time per interruption. [h]."""
        return self.value(RESTART_ID)

    @property
    def firmware_downtime_h_per_year(self) -> float:
        """Planned firmware/driver downtime per year. [h/year]."""
        return self.value(FIRMWARE_ID)

    @property
    def checkpoint_write_gb_s_per_node(self) -> float:
        """Checkpoint write bandwidth of one node. [GB/s]."""
        return self.value(CHECKPOINT_WRITE_ID)

    @property
    def async_stall_fraction(self) -> float:
        """Share of a synchronous save an asynchronous checkpoint stalls. [fraction]."""
        return self.value(ASYNC_STALL_ID)

    @property
    def fragmentation_idle_fraction(self) -> float:
        """Held capacity the scheduler cannot fill. [fraction]."""
        return self.value(FRAGMENTATION_ID)

    @property
    def rented_idle_fraction(self) -> float:
        """Share of pay-as-used rented instance-hours billed while the job does not run.

        [fraction].
        """
        return self.value(RENTED_IDLE_ID)

    @property
    def spares_fraction(self) -> float:
        """Spare accelerators of an owned fleet; outside [0, 1] is an error. [fraction]."""
        f = self.value(SPARES_ID)
        if not 0.0 <= f <= 1.0:
            raise InputError(SPARES_ID, f, "a fraction in [0, 1] (fractions are 0-1, not percent)")
        return f

    def spot_rate_per_instance_h(
        self, provider: str | None, field_name: str, instance: str | None = None
    ) -> tuple[str, float]:
        """Spot preemptions per instance-hour, with the id of the factor used.

        The rate of ``instance``'s family at ``provider`` (``<provider>.<family>``), else of
        ``provider``, else the default (:func:`aitco.catalog.schema.spot_rate_ids`).
        """
        return self.first(spot_rate_ids(provider, instance), field_name)

    # ----------------------------------------------------------------------- power and carbon
    @property
    def active_fraction_of_tdp(self) -> float:
        """Draw while computing, as a fraction of TDP. [fraction]."""
        return self.value(ACTIVE_POWER_ID)

    @property
    def idle_fraction_of_tdp(self) -> float:
        """Draw while idle, as a fraction of TDP. [fraction]."""
        return self.value(IDLE_POWER_ID)

    def idle_fraction_of_board(
        self, idle_w: ArrayLike | None, board_w: ArrayLike | None
    ) -> np.ndarray:
        """Idle draw over the board power: a measured ``idle_w``, else the idle factor. [fraction].

        The catalog's measured ``idle_w`` where published (NaN/None: not published), else
        ``idle-power.fraction-of-tdp``; at most 1. The one rule of compare, the sweep,
        buy-vs-rent and the inference engine (:func:`aitco.perf.serving.idle_power_w`).
        """
        idle = np.asarray(np.nan if idle_w is None else idle_w, dtype=float)
        board = np.asarray(np.nan if board_w is None else board_w, dtype=float)
        known = np.isfinite(idle) & np.isfinite(board) & (board > 0)
        shape = np.broadcast(idle, board).shape
        measured = np.divide(idle, board, out=np.zeros(shape), where=known)
        frac = np.where(known, measured, self.idle_fraction_of_tdp)
        return np.asarray(np.minimum(frac, 1.0), dtype=float)

    @property
    def switch_w_per_gpu(self) -> float:
        """Network switch power per accelerator. [W]."""
        return self.value(SWITCH_POWER_ID)

    @property
    def conversion_loss(self) -> float:
        """PSU/UPS/PDU conversion loss. [fraction]."""
        return self.value(CONVERSION_LOSS_ID)

    @property
    def colocation_usd_per_kw_month(self) -> float:
        """Colocation fee per provisioned kW and month. [USD/(kW month)]."""
        return self.value(COLOCATION_ID)

    def pue(self, cooling: str) -> tuple[str, float]:
        """Return the PUE of ``cooling`` (``air``, ``liquid``, ``hyperscale``) and its id."""
        fid = f"pue.{cooling}"
        return fid, self.value(fid)

    def electricity_usd_per_kwh(self, region: str, field_name: str) -> tuple[str, float]:
        """Electricity price of ``region`` (else its first part), with its id. [USD/kWh]."""
        return self.region_value("electricity.usd-per-kwh", region, field_name)

    def carbon_kg_per_kwh(self, region: str) -> tuple[str, float]:
        """Grid carbon intensity of ``region`` (else its first part), with its id. [kg/kWh]."""
        return self.region_value("carbon.kg-per-kwh", region, "carbon region")

    def carbon_usd_per_tonne(self) -> float:
        """Carbon price; 0 when the catalog prices none; negative is an error. [USD/t CO2e]."""
        if not self.has(CARBON_PRICE_ID):
            return 0.0
        p = self.value(CARBON_PRICE_ID)
        if p < 0:
            raise InputError(CARBON_PRICE_ID, p, "a carbon price >= 0")
        return p

    # ----------------------------------------------------------------------- people
    def loaded_labour_rate(self, role_id: str = OPS_ROLE_ID) -> tuple[float, list[str]]:
        """Return the loaded hourly rate of ``role_id`` (wage x employer cost) and its ids."""
        w = people.loaded_rate_usd_per_h(self.value(role_id), self.value(EMPLOYER_COST_ID))
        return float(w), [role_id, EMPLOYER_COST_ID]

    def on_call_min_fte(self, gpus: ArrayLike) -> np.ndarray:
        """On-call staff of an owned fleet of ``gpus``: its share of a 24x7 rota. [FTE].

        A rota of ``ops.on-call-seats.owned`` seats (:func:`aitco.cost.people.on_call_fte`),
        shared by fleets smaller than ``ops.on-call-rota-gpus``
        (:func:`aitco.cost.people.on_call_share_fte`).
        """
        seats, hours, rota_gpus = (self.value(i) for i in ON_CALL_IDS)
        return people.on_call_share_fte(gpus, people.on_call_fte(seats, hours), rota_gpus)

    def fte_per_1000_gpus(self, owned: bool) -> float:
        """Operations staff per 1,000 accelerators, owned or cloud. [FTE]."""
        return self.value(FTE_IDS[owned])

    @property
    def mttr_staff_h(self) -> float:
        """Staff hours per incident. [h]."""
        return self.value(MTTR_ID)

    @property
    def repair_scale_per_node_doubling(self) -> float:
        """Repair labour growth per doubling of nodes (cluster-scale model). [-]."""
        return self.value(REPAIR_SCALE_ID)

    def support_schedule(
        self, provider: str | None
    ) -> tuple[list[float], list[float], float, list[str]] | None:
        """Return a provider's support fee brackets (breaks, rates, monthly minimum, ids), or None.

        None where the catalog tables no plan for the provider (no support item is charged).
        """
        key = (provider or "").lower()
        ids = [
            f"support.tier-breaks-usd.{key}",
            f"support.tier-rates.{key}",
            f"support.minimum-usd-per-month.{key}",
        ]
        if not key or not self.has(ids[1]):
            return None
        breaks, rates = self.curve(ids[0]), self.curve(ids[1])
        if len(breaks) != len(rates):
            raise CatalogError(ids[0], breaks, f"one break per rate of {ids[1]} ({len(rates)})")
        return breaks, rates, self.value(ids[2]), ids

    @property
    def support_account_other_usd_per_month(self) -> float:
        """The account's other monthly spend beside the job (support share). [USD/month]."""
        return self.value(SUPPORT_ACCOUNT_OTHER_ID)

    # ----------------------------------------------------------------------- data
    def storage_usd_per_gb_month(self, tier: str, field_name: str) -> tuple[str, float]:
        """Storage price of ``tier``, with its id. [USD/(GB month)]."""
        fid = f"storage.usd-per-gb-month.{tier}"
        return fid, self.value(fid, field_name)

    def transfer_usd_per_gb(self, kind: str, field_name: str) -> tuple[str, float]:
        """Transfer price of ``kind`` (egress, cross-zone...), with its id. [USD/GB]."""
        fid = f"transfer.usd-per-gb.{kind}"
        return fid, self.value(fid, field_name)

    @property
    def data_bytes_per_token(self) -> float:
        """Bytes of a training dataset per token. [B]."""
        return self.value(BYTES_PER_TOKEN_ID)

    # ----------------------------------------------------------------------- ownership
    def residual_curve_id(self, accelerator_id: str, residual_class: str) -> str:
        """Residual-value curve of an accelerator: its own, else its class's."""
        own = f"residual-value.{accelerator_id}"
        return own if self.has(own) else f"residual-value.{residual_class}"
