r"""Reconcile a plan with its bill: the predicted cost against the billed one, item by item.

:func:`reconcile` prices the scenario with :func:`aitco.decide.compare.compare` (the predicted
bill is ``compare``'s total for the option, never re-priced), reads the FOCUS bill into line
groups (:mod:`aitco.calibrate.billing`), matches bill lines to predicted items, and explains the
difference as variances that add up to it exactly:

.. math:: C_{billed} = C_{predicted} + \sum_i V_i + U

Accelerator hours (every item priced per GPU-hour: rental, rework, restarts, idle instances)
are matched with the bill's accelerator rows of the planned instance type and split into

* a **price** variance :math:`(P_b - P_p)\,Q_b` (negotiated discounts, price changes, another
  region or pricing category), and
* a **usage** variance :math:`(Q_b - Q_p)\,P_p`, split in this order by causes measured in the
  run's logs (:func:`aitco.cost.variance.training_usage_split`): ``slower_steps`` (training log
  step times), ``restarts_lost_work`` (repeated steps and gaps in the log),
  ``idle_waiting`` (DCGM / nvidia-smi idle time outside the job), and
  ``more_instances_longer_period`` (the bill's accelerators at once above the plan, and work
  beyond the plan); a service month splits into ``more_replicas`` and ``longer_period``
  (average accelerators billed at once and billed hours, from the bill).

What the measured causes leave of the usage variance is ``unexplained_usd``. Storage, transfer
and support lines get their own price and usage variances; predicted items no bill carries
(people, carbon: ``predicted_not_billed``) and bill lines no item predicted (tax, other
services: ``billed_not_predicted``) are variances too. Rows outside the run's scope (another
provider, account, period or tagged resource) are listed, never dropped, and are not billed to
the run.

:func:`feedback` turns the evidence into what the next prediction should use: an efficiency
profile fitted to the measured step time (as ``aitco calibrate`` does), a catalog overlay with
the billed unit price of the offer and the observed restart rate and downtime, and the observed
goodput and idle share.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from scipy.stats import chi2

from aitco.calibrate import measurements as meas
from aitco.calibrate.billing import Bill, BillScope, LineGroup, period_hours, read_bill
from aitco.calibrate.fit import EfficiencyFit, fit_warnings, fitted_mfu, profile_from_fit
from aitco.calibrate.observations import Observation
from aitco.calibrate.parsers.base import ParseResult
from aitco.calibrate.parsers.detect import KINDS, detect_kind, parse_any
from aitco.calibrate.profile import CalibrationProfile
from aitco.calibrate.served_load import SERVED_KIND
from aitco.calibrate.timeline import RunTimeline, run_timeline
from aitco.catalog.loader import Catalog
from aitco.cost import variance as var
from aitco.cost.factors import FAILURE_RATE_ID
from aitco.cost.pricing import RENTED
from aitco.cost.tco import Breakdown, Item
from aitco.decide.compare import Comparison, compare
from aitco.decide.reconcile_factors import idle_facts, reliability_facts
from aitco.decide.reconcile_serving import serving_month
from aitco.decide.scenario import HardwareOption, InferenceWorkload, Scenario, TrainingWorkload
from aitco.errors import InputError
from aitco.perf.efficiency import EfficiencyParams
from aitco.perf.params import param_counts
from aitco.units import SECONDS_PER_HOUR

#: Causes of a variance, in the order the decomposition takes them.
CAUSES = (
    "price",
    "slower_steps",
    "restarts_lost_work",
    "idle_waiting",
    "more_instances_longer_period",
    "higher_load",
    "slower_serving",
    "lower_utilization",
    "more_replicas",
    "longer_period",
    "usage",
    "predicted_not_billed",
    "billed_not_predicted",
)
#: Predicted items that are costs of the team, not of the provider: never on a cloud bill.
INTERNAL_CATEGORIES = ("people", "carbon")
INTERNAL_ITEMS = ("audit_labour", "data_acquisition", "data_cleaning", "data_labeling")
#: Accelerator-hour items that are idle capacity the plan expected (fragmentation of held
#: capacity), counted against measured idle time.
PREDICTED_IDLE_ITEMS = ("fragmentation_idle", "rented_idle")
#: Accelerator-hour items billed beyond the accelerators used (whole instances, unused terms).
PREDICTED_EXCESS_ITEMS = ("idle_instance_gpus", "committed_term_unused")
#: Item groups matched to bill lines, in table order.
GROUPS = ("gpu_compute", "storage", "network", "support")
#: Units of bill quantities comparable with predicted GB-months and GB.
GB_MONTH_UNITS = ("gb-mo", "gb-month", "gb-months", "gb month", "gigabyte-month")
GB_UNITS = ("gb", "gigabytes", "gigabyte")
#: Key suffix of the quantity of an item group in ``detail`` (units in the name).
QTY_KEYS = {"storage": "gb_months", "network": "gb"}
#: Log kinds reconcile reads.
TELEMETRY_KINDS = ("dcgm", "nvidia-smi")
SERVING_KINDS = ("vllm", "sglang")
#: Telemetry covering less than this share of the job (or more than its inverse times the billed
#: hours) was probably read with the wrong sampling interval: a note says so.
TELEMETRY_COVERAGE_MIN = 0.8
#: A fitted profile parameter for a training step time (one observation fits one parameter).
TRAINING_FIT_PARAMS = ("gemm",)


class Variance(BaseModel):
    """One explained part of billed minus predicted.

    Attributes
    ----------
    cause : str
        One of :data:`CAUSES`.
    item : str
        The item group (``gpu_compute``, ``storage``...) or bill line it concerns.
    usd : float
        Its amount; positive when the bill is higher. [USD]
    basis : str
        How it was computed.
    detail : dict
        The measured quantities behind it (units in the key names).
    """

    model_config = ConfigDict(extra="forbid")

    cause: str
    item: str
    usd: float
    basis: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)


class ItemLine(BaseModel):
    """Predicted against billed for one item group (the cost-prediction error of an item)."""

    model_config = ConfigDict(extra="forbid")

    item: str
    predicted_usd: float
    billed_usd: float
    prediction_error_usd: float
    prediction_error_fraction: float | None
    unit: str = ""
    predicted_qty: float | None = None
    billed_qty: float | None = None
    predicted_unit_price_usd: float | None = None
    billed_unit_price_usd: float | None = None
    predicted_items: list[str] = Field(default_factory=list)
    bill_lines: int = 0


class Reconciliation(BaseModel):
    """The predicted bill of one option against the real one (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    option: str
    kind: str
    pricing: str
    provider: str | None = None
    predicted_usd: float
    billed_usd: float
    variances: list[Variance]
    unexplained_usd: float
    prediction_error_usd: float
    prediction_error_fraction: float | None
    items: list[ItemLine]
    out_of_scope: list[dict[str, Any]] = Field(default_factory=list)
    out_of_scope_usd: float = 0.0
    bill: dict[str, Any] = Field(default_factory=dict)
    evidence: dict[str, Any] = Field(default_factory=dict)
    serving: dict[str, Any] | None = None
    notes: list[str] = Field(default_factory=list)
    #: What :func:`feedback` needs: the option, the parsed evidence, the efficiency used.
    _context: dict[str, Any] = PrivateAttr(default_factory=dict)

    def largest_first(self) -> list[Variance]:
        """Variances by absolute amount, largest first (the CLI table's order)."""
        return sorted(self.variances, key=lambda v: -abs(v.usd))

    def waterfall(self) -> list[tuple[str, float]]:
        """Return the steps from predicted to billed, ``(label, usd)``, one per cause."""
        steps: dict[str, float] = {}
        for v in self.variances:
            steps[v.cause] = steps.get(v.cause, 0.0) + v.usd
        out = [("predicted", self.predicted_usd)]
        out += [(c, steps[c]) for c in CAUSES if c in steps]
        out.append(("unexplained", self.unexplained_usd))
        out.append(("billed", self.billed_usd))
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict.

        ``predicted_usd + sum(variances[].usd) + unexplained_usd`` equals ``billed_usd``
        exactly, in any order of addition (:func:`aitco.cost.variance.exact_ledger`).
        """
        return _finite(self.model_dump())


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


# --------------------------------------------------------------------------- evidence
class Evidence:
    """The parsed logs of a run: one training log, telemetry files, serving benchmarks."""

    def __init__(self, results: Sequence[ParseResult]) -> None:
        self.results = list(results)
        logs = [r for r in results if r.kind == "trainlog"]
        if len(logs) > 1:
            raise InputError(
                "--logs",
                [r.path for r in logs],
                "one training log of the run (concatenate the logs of one run in order)",
            )
        self.trainlog = logs[0] if logs else None
        self.telemetry = [r for r in results if r.kind in TELEMETRY_KINDS]
        self.serving = [r for r in results if r.kind in SERVING_KINDS]
        self.served = [r for r in results if r.kind == SERVED_KIND]
        self.timeline: RunTimeline | None = run_timeline(self.trainlog) if self.trainlog else None

    def telemetry_hours(self) -> dict[str, float] | None:
        """Return the observed, idle and busy hours per accelerator [h] (files summed)."""
        devs = sum(int(r.summary.get("n_devices") or 0) for r in self.telemetry)
        if not devs:
            return None
        total = sum(float(r.summary.get("gpu_hours") or 0.0) for r in self.telemetry)
        idles = [r.summary.get("idle_gpu_hours") for r in self.telemetry]
        if any(i is None for i in idles):
            return {"devices": devs, "observed_h": total / devs}
        idle = sum(float(i) for i in idles if i is not None)
        return {
            "devices": devs,
            "observed_h": total / devs,
            "idle_h": idle / devs,
            "busy_h": (total - idle) / devs,
            "idle_threshold": float(self.telemetry[0].summary.get("idle_threshold") or 0.0),
        }


def parse_logs(
    paths: Sequence[str | Path],
    *,
    interval_s: float | None = None,
    idle_threshold: float | None = None,
) -> list[ParseResult]:
    """Parse the run's logs (format detected, or ``KIND:FILE``); telemetry options applied."""
    out = []
    for f in paths:
        s = str(f)
        head = s.split(":", 1)[0]
        kind, path = (head, s.split(":", 1)[1]) if ":" in s and head in KINDS else ("auto", s)
        p = Path(path)
        k = detect_kind(p) if kind == "auto" else kind
        if k == "focus":
            raise InputError("--logs", s, "a log of the run (the bill goes to --bill)")
        kw: dict[str, Any] = {}
        if k in TELEMETRY_KINDS:
            if interval_s is not None:
                kw["interval_s"] = interval_s
            if idle_threshold is not None:
                kw["idle_threshold"] = idle_threshold
        out.append(parse_any(p, k, **kw))
    return out


# --------------------------------------------------------------------------- matching
def item_group(item: Item) -> str:
    """Which bill lines an item is matched with: a :data:`GROUPS` name, ``internal`` or ``-``."""
    inp = item.inputs
    if item.category in ("compute", "reliability") and "usd_per_gpu_hour" in inp:
        return "gpu_compute"
    if item.name == "cloud_support":
        return "support"
    if "usd_per_gb_month" in inp:
        return "storage"
    if "usd_per_gb" in inp:
        return "network"
    if item.category in INTERNAL_CATEGORIES or item.name in INTERNAL_ITEMS:
        return "internal"
    return "-"


def _gpu_hours(item: Item) -> float:
    p = float(item.inputs.get("usd_per_gpu_hour") or 0.0)
    return item.usd / p if p else 0.0


def _item_qty(group: str, item: Item) -> float | None:
    inp = item.inputs
    if group == "gpu_compute":
        return _gpu_hours(item)
    if group == "storage" and "gb" in inp and "months" in inp:
        return float(inp["gb"]) * float(inp["months"])
    if group == "network" and "gb" in inp:
        return float(inp["gb"])
    return None


def _bill_qty(group: str, lines: list[LineGroup]) -> float | None:
    if group == "gpu_compute":
        return sum(g.gpu_hours for g in lines)
    units = GB_MONTH_UNITS if group == "storage" else GB_UNITS if group == "network" else ()
    if not units or not lines:
        return None
    if all(g.unit.strip().lower() in units for g in lines):
        return sum(g.quantity for g in lines)
    return None


def _planned_instance(catalog: Catalog, b: Breakdown) -> str | None:
    offer = b.values.get("offer") or b.values.get("offer_id")
    o = catalog.offers.get(str(offer)) if offer else None
    return o.instance.lower() if o is not None else None


def pick_option(comp: Comparison, name: str | None) -> tuple[int, Breakdown]:
    """Return the option called ``name`` (the only one when None) and its index."""
    names = [o.name for o in comp.options]
    if name is None:
        if len(names) == 1:
            return 0, comp.options[0]
        raise InputError(
            "--option", None, "the option the bill is for: " + ", ".join(repr(n) for n in names)
        )
    if name in names:
        i = names.index(name)
        return i, comp.options[i]
    low = [n.lower() for n in names]
    if name.lower() in low:
        i = low.index(name.lower())
        return i, comp.options[i]
    raise InputError("--option", name, "one of " + ", ".join(repr(n) for n in names))


# --------------------------------------------------------------------------- scope checks
def _check_bill(bill: Bill, b: Breakdown) -> None:
    """One clear line when the bill cannot be the option's: nothing in scope, other currency.

    The run must have resource rows in scope (account-level charges alone, a support fee or a
    tax, do not make a run), and accelerator rows among them.
    """
    ins = bill.in_scope()
    resources = [g for g in ins if not g.account_level]
    gpu = [g for g in resources if g.kind == "gpu_compute"]
    if not resources or not gpu:
        out = [g for g in bill.out_of_scope() if not g.account_level]
        by: dict[str, float] = {}
        for g in out:
            by[g.scope] = by.get(g.scope, 0.0) + abs(g.billed_usd)
        why = max(by, key=lambda k: by[k]) if by else ""
        seen = {
            "other provider": f"providers {', '.join(bill.providers) or 'none named'}",
            "other account": f"accounts {', '.join(bill.accounts) or 'none named'}",
            "outside period": f"charge period {bill.start or '?'} to {bill.end or '?'}",
            "other resources (tags)": "no resource row with the tags "
            + ", ".join(f"{k}={v}" for k, v in bill.scope.tags.items()),
        }.get(why, "no accelerator instance rows" if resources else "no resource rows")
        raise InputError(
            "--bill",
            bill.path,
            f"accelerator rows of the planned run ({bill.scope.describe()}); the bill has {seen}",
            hint=f"option {b.name!r} is priced at provider {b.values.get('provider') or '?'}",
        )
    currencies = sorted({g.key.get("BillingCurrency") or "" for g in ins} - {""})
    if currencies and currencies != ["USD"]:
        raise InputError(
            "--bill",
            f"BillingCurrency {', '.join(currencies)}",
            "a bill in USD (the prediction is in USD; convert the export, or select the USD "
            "account with --account)",
            file=bill.path,
        )


# --------------------------------------------------------------------------- reconcile
def reconcile(
    scenario: Scenario,
    catalog: Catalog,
    bill_path: str | Path,
    *,
    option: str | None = None,
    logs: Sequence[ParseResult] = (),
    efficiency: EfficiencyParams | None = None,
    preset: str | None = None,
    account: str | None = None,
    start: str | None = None,
    end: str | None = None,
    tags: dict[str, str] | None = None,
    engine: str = "auto",
    tokens_served: float | None = None,
) -> Reconciliation:
    """Reconcile the predicted cost of one option of ``scenario`` with its FOCUS bill.

    Parameters
    ----------
    scenario : Scenario
        The plan (a training or inference workload; not a multi-stage plan).
    catalog : Catalog
        Catalog for :func:`~aitco.decide.compare.compare` (the same one ``compare`` uses).
    bill_path : str or pathlib.Path
        FOCUS export (CSV, ``.csv.gz`` or Parquet).
    option : str, optional
        Option name (needed when the scenario has several).
    logs : sequence of ParseResult
        Parsed logs of the run (:func:`parse_logs`): a training log, DCGM / nvidia-smi
        telemetry, serving benchmarks.
    efficiency : EfficiencyParams, optional
        As ``compare --calibration``.
    preset : str, optional
        As ``compare --preset``.
    account : str, optional
        Billing or sub-account the run was billed to.
    start, end : str, optional
        Charge period of the run, ``[start, end)``.
    tags : dict, optional
        Resource tags of the run's resources.
    engine : {"auto", "csv", "duckdb"}
        How the bill is read (:func:`aitco.calibrate.billing.read_bill`).
    tokens_served : float, optional
        Tokens a service served over the billed period (for $/M tokens and utilisation).

    Returns
    -------
    Reconciliation
    """
    comp = compare(scenario, catalog, preset=preset, efficiency=efficiency)
    if comp.kind == "plan":
        raise InputError(
            "SCENARIO",
            scenario.name,
            "a training or inference scenario (a multi-stage plan is reconciled stage by stage: "
            "one scenario per stage)",
        )
    idx, b = pick_option(comp, option)
    if b.pricing not in RENTED:
        raise InputError(
            "--option",
            b.name,
            f"a rented option ({', '.join(RENTED)}): a cloud bill prices rented capacity, "
            f"this one is {b.pricing}",
        )
    provider = b.values.get("provider")
    scope = BillScope(
        provider=str(provider).lower() if provider else None,
        account=account,
        start=start,
        end=end,
        tags=dict(tags or {}),
        instances={
            o.instance.lower(): o.accelerators_per_instance
            for o in catalog.offers.values()
            if not provider or o.provider == str(provider).lower()
        },
    )
    bill = read_bill(bill_path, scope, engine=engine)
    _check_bill(bill, b)
    ev = Evidence(logs)
    builder = _Builder(scenario, scenario.options[idx], catalog, b, bill, ev, tokens_served)
    rec = builder.build(comp)
    rental = next((i for i in b.items if i.name.startswith("rental_")), None)
    rec._context = {
        "option": scenario.options[idx],
        "evidence": ev,
        "efficiency": efficiency,
        "offer": b.values.get("offer") or b.values.get("offer_id"),
        "region": rental.inputs.get("region") if rental is not None else None,
    }
    return rec


class _Builder:
    """Assembles the variances of one reconciliation."""

    def __init__(
        self,
        scenario: Scenario,
        opt: HardwareOption,
        catalog: Catalog,
        b: Breakdown,
        bill: Bill,
        ev: Evidence,
        tokens_served: float | None,
    ) -> None:
        self.scenario = scenario
        self.opt = opt
        self.catalog = catalog
        self.b = b
        self.bill = bill
        self.ev = ev
        self.tokens_served = tokens_served
        self.variances: list[Variance] = []
        self.items: list[ItemLine] = []
        self.notes: list[str] = []
        self.evidence: dict[str, Any] = {}
        self.serving: dict[str, Any] | None = None

    # ------------------------------------------------------------------ assembly
    def build(self, comp: Comparison) -> Reconciliation:
        b, bill = self.b, self.bill
        pred: dict[str, list[Item]] = {}
        for it in b.items:
            pred.setdefault(item_group(it), []).append(it)
        instance = _planned_instance(self.catalog, b)
        billed: dict[str, list[LineGroup]] = {}
        other_lines: list[LineGroup] = []
        for g in bill.in_scope():
            if g.kind == "gpu_compute" and instance and g.instance and g.instance != instance:
                other_lines.append(g)
                self.notes.append(
                    f"bill line {g.label!r} is a {g.instance} instance, not the planned "
                    f"{instance}: billed, not predicted"
                )
            elif g.kind in GROUPS:
                billed.setdefault(g.kind, []).append(g)
            else:
                other_lines.append(g)
        for group in GROUPS:
            items, lines = pred.get(group, []), billed.get(group, [])
            if not items and not lines:
                continue
            if group == "gpu_compute" and items and lines:
                self._gpu(items, lines, instance)
            else:
                self._group(group, items, lines)
        for it in pred.get("internal", []) + pred.get("-", []):
            internal = item_group(it) == "internal"
            self._add(
                "predicted_not_billed",
                it.name,
                -it.usd,
                "internal cost (people, carbon): not on a provider bill"
                if internal
                else "predicted item with no bill line to match",
                {"category": it.category},
            )
            self.items.append(_line(it.name, it.usd, 0.0, predicted_items=[it.name]))
        for g in sorted(other_lines, key=lambda g: -abs(g.billed_usd)):
            self._add(
                "billed_not_predicted",
                g.label,
                g.billed_usd,
                f"{g.kind} bill line with no predicted item",
                {
                    "kind": g.kind,
                    "service": g.key.get("ServiceName"),
                    "sku": g.key.get("SkuId"),
                    "rows": g.rows,
                    "quantity": g.quantity,
                    "unit": g.unit,
                },
            )
            self.items.append(_line(g.label, 0.0, g.billed_usd, lines=g.rows))
        predicted = b.total_usd
        billed_usd = math.fsum(g.billed_usd for g in bill.in_scope())
        p, vs, bl, u = var.exact_ledger(predicted, [v.usd for v in self.variances], billed_usd)
        for v, x in zip(self.variances, vs, strict=True):
            v.usd = x
        out_scope = bill.out_of_scope()
        return Reconciliation(
            scenario=comp.name,
            option=b.name,
            kind=b.kind,
            pricing=b.pricing,
            provider=b.values.get("provider"),
            predicted_usd=p,
            billed_usd=bl,
            variances=self.variances,
            unexplained_usd=u,
            prediction_error_usd=predicted - billed_usd,
            prediction_error_fraction=predicted / billed_usd - 1 if billed_usd else None,
            items=sorted(self.items, key=lambda r: -abs(r.prediction_error_usd)),
            out_of_scope=[g.to_json() for g in sorted(out_scope, key=lambda g: -g.billed_usd)],
            out_of_scope_usd=math.fsum(g.billed_usd for g in out_scope),
            bill=self._bill_json(),
            evidence=self.evidence,
            serving=self.serving,
            notes=self.notes,
        )

    def _add(
        self, cause: str, item: str, usd: float, basis: str, detail: dict[str, Any] | None = None
    ) -> None:
        self.variances.append(
            Variance(cause=cause, item=item, usd=float(usd), basis=basis, detail=detail or {})
        )

    def _bill_json(self) -> dict[str, Any]:
        bill = self.bill
        return {
            "path": bill.path,
            "format_version": bill.format_version,
            "engine": bill.engine,
            "rows": bill.rows,
            "skipped_rows": bill.skipped.to_json(),
            "currencies": bill.currencies,
            "providers": bill.providers,
            "accounts": bill.accounts,
            "charge_period_start": bill.start or None,
            "charge_period_end": bill.end or None,
            "scope": bill.scope.describe(),
            "lines_in_scope": len(bill.in_scope()),
        }

    # ------------------------------------------------------------------ other groups
    def _group(self, group: str, items: list[Item], lines: list[LineGroup]) -> None:
        """Storage, transfer, support (and accelerator items without bill lines)."""
        p_usd = math.fsum(i.usd for i in items)
        b_usd = math.fsum(g.billed_usd for g in lines)
        names = [i.name for i in items]
        if not lines:
            for it in items:
                self._add(
                    "predicted_not_billed",
                    it.name,
                    -it.usd,
                    f"predicted {group} item with no bill line",
                    {"group": group},
                )
            self.items.append(_line(group, p_usd, 0.0, predicted_items=names))
            return
        if not items:
            for g in lines:
                self._add(
                    "billed_not_predicted",
                    g.label,
                    g.billed_usd,
                    f"{group} bill line with no predicted item",
                    {"group": group, "rows": g.rows, "quantity": g.quantity, "unit": g.unit},
                )
            self.items.append(_line(group, 0.0, b_usd, lines=sum(g.rows for g in lines)))
            return
        qs = [_item_qty(group, i) for i in items]
        p_qty = (
            math.fsum(q for q in qs if q is not None) if all(q is not None for q in qs) else None
        )
        b_qty = _bill_qty(group, lines)
        unit = "GB-month" if group == "storage" else "GB" if group == "network" else ""
        qk = QTY_KEYS.get(group, "qty")
        rows = sum(g.rows for g in lines)
        if p_qty and b_qty is not None:
            price = p_usd / p_qty
            pv = float(var.price_variance_usd(b_usd, b_qty, price))
            uv = float(var.usage_variance_usd(b_qty, p_qty, price))
            self._add(
                "price",
                group,
                pv,
                "(billed unit price - predicted unit price) x billed quantity",
                {"billed_unit_price_usd": b_usd / b_qty if b_qty else None,
                 "predicted_unit_price_usd": price, f"billed_{qk}": b_qty},
            )  # fmt: skip
            self._add(
                "usage",
                group,
                uv,
                "(billed quantity - predicted quantity) x predicted unit price",
                {f"billed_{qk}": b_qty, f"predicted_{qk}": p_qty},
            )
            self.items.append(
                _line(group, p_usd, b_usd, unit=unit, p_qty=p_qty, b_qty=b_qty,
                      predicted_items=names, lines=rows)
            )  # fmt: skip
        else:
            self._add(
                "usage",
                group,
                b_usd - p_usd,
                "billed - predicted (no comparable quantity to split price from usage)",
                {"bill_units": sorted({g.unit for g in lines})},
            )
            self.items.append(_line(group, p_usd, b_usd, predicted_items=names, lines=rows))

    # ------------------------------------------------------------------ accelerators
    def _gpu(self, items: list[Item], lines: list[LineGroup], instance: str | None) -> float:
        """Price and usage variances of the accelerator hours; returns the unexplained USD."""
        b = self.b
        c_p = math.fsum(i.usd for i in items)
        q_p = math.fsum(_gpu_hours(i) for i in items)
        p_p = c_p / q_p if q_p else 0.0
        c_b = math.fsum(g.billed_usd for g in lines)
        q_b = math.fsum(g.gpu_hours for g in lines)
        p_b = c_b / q_b if q_b else None
        names = [i.name for i in items]
        rows = sum(g.rows for g in lines)
        self.items.append(
            _line("gpu_compute", c_p, c_b, unit="GPU-hour", p_qty=q_p, b_qty=q_b,
                  predicted_items=names, lines=rows)
        )  # fmt: skip
        list_b = math.fsum(g.list_usd for g in lines)
        self._add(
            "price",
            "gpu_compute",
            float(var.price_variance_usd(c_b, q_b, p_p)),
            "(billed $/GPU-hour - predicted $/GPU-hour) x billed GPU-hours",
            {
                "billed_usd_per_gpu_h": p_b,
                "predicted_usd_per_gpu_h": p_p,
                "list_usd_per_gpu_h": list_b / q_b if q_b and list_b else None,
                "billed_gpu_h": q_b,
                "discount_vs_predicted": 1 - p_b / p_p if p_b is not None and p_p else None,
                "pricing_categories": sorted({g.key.get("PricingCategory") or "" for g in lines}),
            },
        )
        usage_usd = float(var.usage_variance_usd(q_b, q_p, p_p))
        gpus = float(b.gpus or self.opt.gpus)
        slots = {
            (s, e): h
            for (inst, s, e), h in self.bill.gpu_slots.items()
            if not instance or not inst or inst == instance
        }
        excess = var.excess_gpu_hours(slots, period_hours, gpus)
        starts = [s for s, _ in slots]
        ends = [e for _, e in slots]
        span_b = period_hours(min(starts), max(ends)) if starts else None
        self.evidence["bill_gpu"] = {
            "instance": instance,
            "billed_gpu_h": q_b,
            "predicted_gpu_h": q_p,
            "gpus_planned": gpus,
            "billed_span_h": span_b,
            "mean_gpus_billed": q_b / span_b if span_b else None,
            "peak_gpus_billed": max(
                (h / (period_hours(s, e) or 1.0) for (s, e), h in slots.items()), default=None
            ),
            "gpu_h_above_plan": excess,
        }
        if b.kind == "inference":
            return self._serving_split(q_p, q_b, p_p, gpus, span_b, slots)
        return self._training_split(items, q_p, q_b, p_p, gpus, excess, usage_usd)

    def _training_split(
        self,
        items: list[Item],
        q_p: float,
        q_b: float,
        p_p: float,
        gpus: float,
        excess: float,
        usage_usd: float,
    ) -> float:
        b, ev = self.b, self.ev
        prod_items = [
            i for i in items if i.category == "compute" and i.name not in PREDICTED_EXCESS_ITEMS
        ]
        q_prod = math.fsum(_gpu_hours(i) for i in prod_items)
        q_idle = math.fsum(_gpu_hours(i) for i in items if i.name in PREDICTED_IDLE_ITEMS)
        q_excess = math.fsum(_gpu_hours(i) for i in items if i.name in PREDICTED_EXCESS_ITEMS)
        q_over = q_p - q_prod - q_idle - q_excess
        pred_prod_h = q_prod / gpus if gpus else 0.0
        tl = ev.timeline
        tel = ev.telemetry_hours()
        causes: dict[str, float] = {}
        detail: dict[str, dict[str, Any]] = {c: {} for c in var.TRAINING_CAUSES}
        extra_h = 0.0
        lost_h = gaps_h = 0.0
        if tl is not None:
            h = tl.hours()
            w = self.scenario.workload
            assert isinstance(w, TrainingWorkload)  # a training option of a training scenario
            arch = self.catalog.resolve_model(w.model, field="workload.model")
            gb_plan = w.batch_sequences(param_counts(arch).active, int(gpus))
            gb = tl.global_batch or gb_plan
            tokens_done = tl.unique_steps * gb * w.seq_len
            tokens_plan = float(b.values.get("tokens") or w.tokens)
            plan_h = tl.productive_h * tokens_plan / tokens_done if tokens_done else 0.0
            extra_h = max(tl.productive_h - plan_h, 0.0)
            gaps_h = tl.gaps_h
            lost_h = tl.repeated_h + gaps_h
            split = var.training_usage_split(
                gpus=gpus,
                predicted_productive_h=pred_prod_h,
                predicted_overhead_gpu_h=q_over,
                predicted_idle_gpu_h=q_idle,
                productive_plan_h=plan_h,
                extra_work_h=extra_h,
                lost_h=lost_h,
                idle_outside_h=0.0,
                excess_gpu_h=excess,
            )
            causes["slower_steps"] = float(split["slower_steps"])
            causes["restarts_lost_work"] = float(split["restarts_lost_work"])
            detail["slower_steps"] = {
                "measured_step_s": tl.mean_step_s,
                "predicted_step_s": pred_prod_h
                * SECONDS_PER_HOUR
                * gb_plan
                * w.seq_len
                / tokens_plan
                if tokens_plan
                else None,
                "measured_tokens_per_s": tokens_done / tl.productive_s if tl.productive_s else None,
                "predicted_tokens_per_s": b.values.get("tokens_per_s"),
                "planned_work_at_measured_speed_h": plan_h,
                "predicted_productive_h": pred_prod_h,
                "log_covers_fraction_of_plan": tokens_done / tokens_plan if tokens_plan else None,
            }
            detail["restarts_lost_work"] = {
                "restarts": len(tl.restarts),
                "repeated_steps": tl.repeated_steps,
                "repeated_h": tl.repeated_h,
                "restart_gaps_h": h["restart_gaps_h"],
                "other_gaps_h": h["other_gaps_h"],
                "predicted_overhead_gpu_h": q_over,
            }
            if tokens_done < tokens_plan * (1 - 1e-9):
                self.notes.append(
                    f"the training log covers {tokens_done / tokens_plan:.1%} of the planned "
                    "tokens: the planned work is extrapolated at the measured speed"
                )
            self.notes += tl.notes
            self.evidence["timeline"] = tl.to_json()
        else:
            self.notes.append(
                "no training log: slower steps and restarts are not measured (their share of "
                "the usage variance stays unexplained)"
            )
        if tel is not None and "idle_h" in tel:
            stepped = tl.productive_h + tl.repeated_h if tl else 0.0
            idle_out = var.idle_outside_job_h(tel["idle_h"], tel["busy_h"], stepped, gaps_h)
            causes["idle_waiting"] = gpus * idle_out - q_idle
            detail["idle_waiting"] = {
                "telemetry_devices": tel["devices"],
                "telemetry_observed_h": tel["observed_h"],
                "telemetry_idle_h": tel["idle_h"],
                "idle_threshold": tel["idle_threshold"],
                "idle_outside_job_h": idle_out,
                "predicted_idle_gpu_h": q_idle,
            }
            billed_h = q_b / gpus if gpus else 0.0
            span_h = tl.span_s / SECONDS_PER_HOUR if tl is not None and tl.span_s else None
            if (span_h and tel["observed_h"] < TELEMETRY_COVERAGE_MIN * span_h) or (
                billed_h and tel["observed_h"] > billed_h / TELEMETRY_COVERAGE_MIN
            ):
                self.notes.append(
                    f"the telemetry covers {tel['observed_h']:.3g} h per GPU against a job of "
                    f"{span_h or 0:.3g} h and {billed_h:.3g} h billed: check --interval-s (the "
                    "sampling interval of the capture, dcgmi dmon -d / 1000)"
                )
            if tel["devices"] < gpus:
                self.notes.append(
                    f"telemetry covers {tel['devices']} of {gpus:g} accelerators: their idle "
                    "time per accelerator is taken for all"
                )
            self.evidence["telemetry"] = tel
        elif tel is not None:
            self.notes.append("the telemetry has no utilisation field: idle time not measured")
        else:
            self.notes.append(
                "no DCGM / nvidia-smi telemetry: idle time is not measured (it stays unexplained)"
            )
        causes["more_instances_longer_period"] = excess + gpus * extra_h - q_excess
        detail["more_instances_longer_period"] = {
            "gpu_h_above_plan_at_once": excess,
            "work_beyond_plan_h": extra_h,
            "predicted_excess_gpu_h": q_excess,
        }
        basis = {
            "slower_steps": "GPUs x (planned work at the measured step time - predicted "
            "productive hours) x predicted $/GPU-hour",
            "restarts_lost_work": "(GPUs x (repeated steps + gaps in the log) - predicted "
            "reliability GPU-hours) x predicted $/GPU-hour",
            "idle_waiting": "(GPUs x telemetry idle time outside the job's gaps - predicted idle "
            "GPU-hours) x predicted $/GPU-hour",
            "more_instances_longer_period": "(GPU-hours billed above the planned GPUs at once + "
            "GPUs x work beyond the plan - predicted excess GPU-hours) x predicted $/GPU-hour",
        }
        explained = 0.0
        for c in var.TRAINING_CAUSES:
            if c in causes:
                usd = causes[c] * p_p
                explained += usd
                self._add(c, "gpu_compute", usd, basis[c], {"gpu_h": causes[c], **detail[c]})
        unexplained = usage_usd - explained
        self.evidence["usage_gpu_h"] = {
            "billed_gpu_h": q_b,
            "predicted_gpu_h": q_p,
            **{f"{c}_gpu_h": x for c, x in causes.items()},
            "unexplained_gpu_h": (q_b - q_p) - sum(causes.values()),
        }
        self.evidence["ledger_per_gpu_h"] = {
            "billed_h": q_b / gpus if gpus else None,
            "predicted_h": q_p / gpus if gpus else None,
            "lost_h": lost_h,
            "work_beyond_plan_h": extra_h,
        }
        return unexplained

    def _serving_split(
        self,
        q_p: float,
        q_b: float,
        p_p: float,
        gpus: float,
        span_b: float | None,
        slots: dict[tuple[str, str], float],
    ) -> float:
        """Split a service month (:func:`aitco.decide.reconcile_serving.serving_month`)."""
        w = self.scenario.workload
        assert isinstance(w, InferenceWorkload)  # an inference option of an inference scenario
        got = serving_month(
            self.b, w, q_p=q_p, q_b=q_b, p_p=p_p, slots=slots, span_h=span_b,
            served=self.ev.served, benches=self.ev.serving,
            telemetry=self.ev.telemetry_hours(), tokens_served=self.tokens_served,
            billed_usd=math.fsum(g.billed_usd for g in self.bill.in_scope()),
        )  # fmt: skip
        for cause, usd, basis, detail in got.causes:
            self._add(cause, "gpu_compute", usd, basis, detail)
        self.notes += got.notes
        if got.usage_gpu_h:
            self.evidence["usage_gpu_h"] = got.usage_gpu_h
        self.serving = got.serving or None
        return got.unexplained_usd


def _line(
    item: str,
    p_usd: float,
    b_usd: float,
    *,
    unit: str = "",
    p_qty: float | None = None,
    b_qty: float | None = None,
    predicted_items: list[str] | None = None,
    lines: int = 0,
) -> ItemLine:
    return ItemLine(
        item=item,
        predicted_usd=p_usd,
        billed_usd=b_usd,
        prediction_error_usd=p_usd - b_usd,
        prediction_error_fraction=p_usd / b_usd - 1 if b_usd else None,
        unit=unit,
        predicted_qty=p_qty,
        billed_qty=b_qty,
        predicted_unit_price_usd=p_usd / p_qty if p_qty else None,
        billed_unit_price_usd=b_usd / b_qty if b_qty else None,
        predicted_items=predicted_items or [],
        bill_lines=lines,
    )


# --------------------------------------------------------------------------- feedback
#: Source key of the values a feedback overlay takes from the bill and the logs.
FEEDBACK_SOURCE = "aitco-reconcile"
#: Confidence of the interval written with an observed interruption rate.
POISSON_CONFIDENCE = 0.95


class Feedback(BaseModel):
    """What the evidence supports for the next prediction (:func:`feedback`).

    Attributes
    ----------
    profile : CalibrationProfile
        Efficiency fitted to the measured step time (as ``aitco calibrate`` fits a training
        log), with the observed goodput, idle share and billed price in ``measurements``.
    overlay : dict
        Catalog overlay (``--catalog``): the offer at its billed unit price and, when the run
        restarted, the observed interruption rate and restart downtime.
    warnings : list of str
        Reasons not to trust the fit (:func:`aitco.calibrate.fit.fit_warnings`).
    summary : dict
        The values written, for the report.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    profile: CalibrationProfile
    overlay: dict[str, Any]
    warnings: list[str] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)

    def overlay_yaml(self) -> str:
        """Return the overlay as YAML text, with a header naming where it came from."""
        head = (
            "# Catalog overlay written by `aitco reconcile --calibrate`: billed unit prices and "
            "observed reliability.\n# Use: aitco --catalog THIS_FILE compare SCENARIO "
            "--calibration PROFILE\n"
        )
        return head + yaml.safe_dump(self.overlay, sort_keys=False, allow_unicode=True)


def feedback(
    rec: Reconciliation,
    scenario: Scenario,
    catalog: Catalog,
    *,
    params: Sequence[str] = TRAINING_FIT_PARAMS,
    today: dt.date | None = None,
    write_failure_rate: bool = False,
) -> Feedback:
    """Turn a reconciliation's evidence into a calibration profile and a catalog overlay.

    Parameters
    ----------
    rec : Reconciliation
        The result of :func:`reconcile` (it carries the parsed evidence).
    scenario, catalog
        As given to :func:`reconcile`.
    params : sequence of str
        Efficiency parameters fitted to the measured step time (one observation: one
        parameter, ``gemm`` of the accelerator's family).
    today : datetime.date, optional
        Date written as the overlay source's ``retrieved`` (default: today).
    write_failure_rate : bool
        Also write the run's observed interruption rate into the overlay (one run's rate is
        uncertain: by default the overlay lines only name it, with its interval).

    Returns
    -------
    Feedback
    """
    ctx = rec._context
    if not ctx:
        raise InputError("reconciliation", rec.option, "a result of reconcile() (no evidence)")
    opt: HardwareOption = ctx["option"]
    ev: Evidence = ctx["evidence"]
    acc, system = catalog.hardware(opt.hardware, field="option.hardware")
    gpu = next((v for v in rec.variances if v.cause == "price" and v.item == "gpu_compute"), None)
    measured: dict[str, float] = {}
    notes = [f"from aitco reconcile of {rec.bill.get('path')} ({rec.option})"]
    summary: dict[str, Any] = {}
    if gpu is not None:
        for k in ("billed_usd_per_gpu_h", "predicted_usd_per_gpu_h", "discount_vs_predicted"):
            if isinstance(gpu.detail.get(k), int | float):
                measured[k] = float(gpu.detail[k])
    tl = ev.timeline
    usage = rec.evidence.get("usage_gpu_h", {})
    gpus = float(opt.gpus)
    if tl is not None:
        job = tl.productive_h + tl.repeated_h + tl.gaps_h
        measured["goodput_observed"] = tl.productive_h / job if job else 1.0
        measured["step_time_s"] = tl.mean_step_s
        measured["restarts"] = float(len(tl.restarts))
    billed_gpu_h = usage.get("billed_gpu_h")
    idle = next((v for v in rec.variances if v.cause == "idle_waiting"), None)
    if idle is not None and billed_gpu_h:
        out_h = float(idle.detail.get("idle_outside_job_h") or 0.0)
        measured["idle_share_observed"] = gpus * out_h / float(billed_gpu_h)
    fit_eff = ctx.get("efficiency")
    profile: CalibrationProfile
    warnings: list[str] = []
    w = scenario.workload
    if tl is not None and isinstance(w, TrainingWorkload) and ev.trainlog is not None:
        arch = catalog.resolve_model(w.model, field="workload.model")
        gb = int(tl.global_batch or w.batch_sequences(param_counts(arch).active, opt.gpus))
        plan = w.plan.model_dump(exclude_none=True, exclude_defaults=True) or None
        obs = [
            Observation(
                kind="step_time_s",
                value=tl.mean_step_s,
                acc=acc,
                system=system,
                model=arch,
                conditions={
                    "gpus": opt.gpus,
                    "seq_len": w.seq_len,
                    "global_batch": gb,
                    "plan": plan,
                    "precision": w.precision,
                },
                source=ev.trainlog.path,
            )
        ]
        fit = EfficiencyFit(params=list(params), base=fit_eff).fit(obs)
        tt = meas.training_throughput(
            {**ev.trainlog.summary, "step_time_s": tl.mean_step_s},
            gpus=opt.gpus,
            seq_len=w.seq_len,
            global_batch=gb,
            model=arch,
            acc=acc,
            precision=w.precision,
        )
        for k in ("tokens_per_s_per_gpu", "mfu", "mfu_from_log"):
            if tt.get(k) is not None:
                measured[k] = float(tt[k])
        mfu_fit = fitted_mfu(fit, measured.get("mfu"))
        if mfu_fit is not None:
            measured["mfu_fitted"] = mfu_fit
        warnings = fit_warnings(fit, measured)
        profile = profile_from_fit(
            fit,
            accelerator=acc.id,
            family=acc.family,
            sources=[ev.trainlog.path, str(rec.bill.get("path"))],
            measurements=measured,
            notes=notes + [f"warning: {x}" for x in warnings],
        )
        summary["fitted"] = {k: v.value for k, v in profile.fitted.items()}
    else:
        profile = CalibrationProfile(
            accelerator=acc.id,
            family=acc.family,
            efficiency=fit_eff or CalibrationProfile().efficiency,
            measurements=measured,
            sources=[str(rec.bill.get("path"))],
            notes=[*notes, "no training log: the efficiency parameters are not refitted"],
        )
    overlay, written = _overlay(
        rec, catalog, ev, gpus, today or dt.date.today(),
        write_failure_rate=write_failure_rate, idle_share=measured.get("idle_share_observed"),
    )  # fmt: skip
    summary.update(measurements=measured, overlay=written)
    return Feedback(profile=profile, overlay=overlay, warnings=warnings, summary=summary)


def _overlay(
    rec: Reconciliation,
    catalog: Catalog,
    ev: Evidence,
    gpus: float,
    today: dt.date,
    *,
    write_failure_rate: bool = False,
    idle_share: float | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Catalog overlay: the offer at its billed price; observed reliability and idle share.

    The factors: :mod:`aitco.decide.reconcile_factors` (the interruption rate of one run only
    with ``write_failure_rate``).
    """
    ctx_b = rec._context
    opt: HardwareOption = ctx_b["option"]
    written: list[str] = []
    end = (rec.bill.get("charge_period_end") or "")[:10]
    try:
        as_of = dt.date.fromisoformat(end) if end else today
    except ValueError:
        as_of = today
    doc: dict[str, Any] = {
        "sources": {
            FEEDBACK_SOURCE: {
                "title": f"Billed unit prices and observed run of {rec.option} (aitco reconcile)",
                "document": str(rec.bill.get("path")),
                "retrieved": as_of.isoformat(),
                "note": f"reconciled {today.isoformat()}; one run: use with care",
            }
        }
    }
    gpu = next((v for v in rec.variances if v.cause == "price" and v.item == "gpu_compute"), None)
    offer_id = _offer_of(rec)
    offer = catalog.offers.get(str(offer_id)) if offer_id else None
    billed_h = gpu.detail.get("billed_usd_per_gpu_h") if gpu is not None else None
    region = _region_of(rec)
    if offer is not None and isinstance(billed_h, int | float) and rec.pricing in RENTED:
        price = round(float(billed_h) * offer.accelerators_per_instance, 6)
        prices: list[dict[str, Any]] = []
        replaced = False
        for pr in offer.prices:
            d = pr.model_dump(mode="json", exclude_none=True)
            d.pop("currency", None)
            if pr.term == rec.pricing and (region is None or pr.region == region):
                d.update(
                    usd_per_hour=price,
                    as_of=as_of.isoformat(),
                    source=FEEDBACK_SOURCE,
                    note=f"billed unit price (catalog {pr.usd_per_hour:g}); aitco reconcile",
                )
                d.pop("as_of_estimated", None)
                replaced = True
            prices.append(d)
        if not replaced:
            prices.append(
                {
                    "term": rec.pricing,
                    "region": region or "us-east-1",
                    "usd_per_hour": price,
                    "as_of": as_of.isoformat(),
                    "source": FEEDBACK_SOURCE,
                    "note": "billed unit price; aitco reconcile",
                }
            )
        doc["offers"] = [{"id": offer.id, "prices": prices}]
        written.append(f"offers.{offer.id}: {rec.pricing} {price:g} USD/instance-hour")
    elif opt.usd_per_gpu_hour is not None and isinstance(billed_h, int | float):
        written.append(
            f"the option prices {opt.usd_per_gpu_hour:g} USD/GPU-hour itself: set it to "
            f"{billed_h:.4g} in the scenario"
        )
    facts: list[dict[str, Any]] = []
    tl = ev.timeline
    if tl is not None and tl.restarts and tl.span_s:
        n = len(tl.restarts)
        exposure_h = gpus * tl.span_s / SECONDS_PER_HOUR
        cat_rate = catalog.factors.get(FAILURE_RATE_ID)
        facts += reliability_facts(
            restarts=n, exposure_gpu_h=exposure_h,
            interval=poisson_rate_interval(n, exposure_h),
            downtime_h=_restart_downtime_h(rec, tl),
            catalog_rate=float(cat_rate.value) if cat_rate and isinstance(cat_rate.value, float)
            else None,
            write_rate=write_failure_rate, source=FEEDBACK_SOURCE, written=written,
        )  # fmt: skip
    facts += idle_facts(
        idle_share=idle_share, pricing=rec.pricing, kind=rec.kind, source=FEEDBACK_SOURCE,
        written=written,
    )  # fmt: skip
    if facts:
        doc["factors"] = facts
    return doc, written


def poisson_rate_interval(
    events: int, exposure: float, confidence: float = POISSON_CONFIDENCE
) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson rate: ``events`` seen over ``exposure`` units.

    Returns ``(low, high)`` per unit of exposure, from the chi-square quantiles
    ``chi2(a/2, 2k) / 2E`` and ``chi2(1 - a/2, 2k + 2) / 2E`` (F. Garwood, "Fiducial limits
    for the Poisson distribution", Biometrika 28, 1936).
    """
    a = 1 - confidence
    low = float(chi2.ppf(a / 2, 2 * events)) / (2 * exposure) if events else 0.0
    high = float(chi2.ppf(1 - a / 2, 2 * events + 2)) / (2 * exposure)
    return low, high


def _offer_of(rec: Reconciliation) -> str | None:
    ctx = rec._context
    return ctx.get("offer")


def _region_of(rec: Reconciliation) -> str | None:
    ctx = rec._context
    return ctx.get("region")


def _restart_downtime_h(rec: Reconciliation, tl: RunTimeline) -> float | None:
    """Return the mean downtime per restart [h]: its gap less the busy (lost) work in it."""
    if not tl.restarts or tl.restart_gaps_s is None:
        return None
    gaps_h = tl.restart_gaps_s / SECONDS_PER_HOUR
    tel = rec.evidence.get("telemetry")
    busy_in = 0.0
    if tel and "busy_h" in tel:
        stepped = tl.productive_h + tl.repeated_h
        busy_in = min(max(float(tel["busy_h"]) - stepped, 0.0), gaps_h)
    return (gaps_h - busy_in) / len(tl.restarts)
