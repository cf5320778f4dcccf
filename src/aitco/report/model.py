"""What a report shows, gathered once from the ``decide/`` functions and rendered many ways.

:func:`build_report` calls :func:`aitco.decide.compare.compare` (and :mod:`aitco.decide.roi` when
ROI inputs are given), and keeps the results in a :class:`ReportData` that the HTML, Markdown,
plots and the web app all render, so they cannot disagree. Nothing here computes a cost: the
numbers are the engines' own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aitco.decide import roi
from aitco.decide.choices import LATENCY_KEYS, Choices, choose, pareto_points
from aitco.decide.compare import compare as default_compare
from aitco.decide.sweep import sweep
from aitco.errors import InputError
from aitco.formatting import option_hours, time_unit

#: Headline values shown in the comparison table, in order, when an option has them.
HEADLINE_KEYS: tuple[str, ...] = (
    "wall_clock_days",
    "usd_per_month",
    "usd_per_month_used",
    "committed_term_unused_usd",
    "p99_e2e_latency_s",
    "e2e_latency_s",
    "ttft_s",
    "tpot_s",
    "usd_per_million_tokens",
    "gpu_hours",
    "goodput",
    "energy_kwh",
    "kg_co2e",
    "memory_per_gpu_gb",
    "memory_capacity_gb",
)

#: Headline keys of a committed term, shown only when an option holds one (an unused commitment).
COMMITTED_KEYS: tuple[str, ...] = ("usd_per_month_used", "committed_term_unused_usd")

#: Name prefixes of the items that make up the advertised price of rented compute (the start of
#: the waterfall): ``rental_on_demand``, ``rental_spot``, ``rental_reserved_1y``...
RENTAL_ITEM_PREFIXES: tuple[str, ...] = ("rental",)


def _is_rental(name: str) -> bool:
    return name.startswith(RENTAL_ITEM_PREFIXES)


#: The choices and the latency keys are decide/'s (aitco.decide.choices), re-exported here.
__all__ = [
    "COMMITTED_KEYS",
    "HEADLINE_KEYS",
    "LATENCY_KEYS",
    "RENTAL_ITEM_PREFIXES",
    "ItemView",
    "OptionView",
    "ReportData",
    "add_roi",
    "add_sweep_front",
    "build_report",
    "pareto_points",
    "report_from_options",
]


@dataclass(frozen=True)
class ItemView:
    """One cost line as shown: name, USD, category, share and how it was computed."""

    name: str
    usd: float
    category: str
    share: float = 0.0
    formula: str = ""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    sources: Sequence[str] = ()


@dataclass(frozen=True)
class OptionView:
    """One compared option: its name, total, items and headline values."""

    name: str
    total_usd: float
    items: tuple[ItemView, ...]
    values: Mapping[str, Any] = field(default_factory=dict)
    kind: str = ""
    hardware: str = ""
    pricing: str = ""
    gpus: int = 0
    feasible: bool | None = None
    infeasible_reasons: tuple[str, ...] = ()

    @classmethod
    def from_any(cls, obj: Any) -> OptionView:
        """Build from a :class:`aitco.cost.tco.Breakdown` or its ``to_json()`` dict."""
        d = obj.to_json() if hasattr(obj, "to_json") else dict(obj)
        items = tuple(
            ItemView(
                name=str(i["name"]),
                usd=float(i["usd"]),
                category=str(i.get("category", "other")),
                share=float(i.get("share") or 0.0),
                formula=str(i.get("formula") or ""),
                inputs=dict(i.get("inputs") or {}),
                sources=tuple(i.get("sources") or ()),
            )
            for i in d.get("items", [])
        )
        skip = {
            "name",
            "kind",
            "hardware",
            "pricing",
            "gpus",
            "total_usd",
            "items",
            "stages",
            "assumptions",
            "explain",
            "feasible",
            "infeasible_reasons",
        }
        values = {k: v for k, v in d.items() if k not in skip and not isinstance(v, list | dict)}
        total = d.get("total_usd")
        return cls(
            name=str(d["name"]),
            total_usd=math.nan if total is None else float(total),
            items=items,
            values=values,
            kind=str(d.get("kind", "")),
            hardware=str(d.get("hardware", "")),
            pricing=str(d.get("pricing", "")),
            gpus=int(d.get("gpus") or 0),
            feasible=None if d.get("feasible") is None else bool(d["feasible"]),
            infeasible_reasons=tuple(str(r) for r in d.get("infeasible_reasons") or ()),
        )

    @property
    def is_feasible(self) -> bool:
        """Return False when the comparison ruled it out (it renders the comparison's verdict)."""
        return self.feasible is not False

    def by_category(self) -> dict[str, float]:
        """USD by category, in first-seen order."""
        out: dict[str, float] = {}
        for i in self.items:
            out[i.category] = out.get(i.category, 0.0) + i.usd
        return out

    def rental_usd(self) -> float:
        """USD of the advertised compute price (the first bar of the hidden-cost waterfall).

        The items whose names start with :data:`RENTAL_ITEM_PREFIXES`; when there are none
        (owned hardware), the ``compute`` category (depreciation, financing...).
        """
        named = [i.usd for i in self.items if _is_rental(i.name)]
        if named:
            return math.fsum(named)
        return math.fsum(i.usd for i in self.items if i.category == "compute")

    def hidden_items(self) -> list[ItemView]:
        """Every item not counted in :meth:`rental_usd`, largest first."""
        named = any(_is_rental(i.name) for i in self.items)
        rest = [
            i for i in self.items if not (_is_rental(i.name) if named else i.category == "compute")
        ]
        return sorted(rest, key=lambda i: -abs(i.usd))

    def latency_s(self) -> float | None:
        """Return the first latency found among :data:`LATENCY_KEYS` [s], or None."""
        for k in LATENCY_KEYS:
            v = self.values.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                return float(v)
        return None


@dataclass
class ReportData:
    """Everything a report shows.

    Attributes
    ----------
    title : str
        Scenario name.
    description : str
        Scenario description.
    options : list of OptionView
        Compared options, in the order the comparison gave them.
    cheapest, fastest : str
        The comparison's cheapest and fastest feasible options ("" when none is feasible).
    verdict : str
        The comparison's one-line answer (:attr:`aitco.decide.compare.Comparison.verdict`).
    feasible_options : list of str
        Names of the options the comparison found feasible.
    roi : dict, optional
        :func:`aitco.decide.roi.roi_series` result, when ROI inputs were given.
    tornado : list of dict
        :func:`aitco.decide.roi.tornado` bars.
    tornado_metric : str
        Metric of the tornado bars.
    utilisation : dict, optional
        ``{"matrix": rows=devices x cols=time bins of utilisation 0-1, "devices": [...],
        "times": [...], "idle_threshold": float, "source": str}`` where telemetry was ingested.
    pareto_time : list of dict
        Points ``{name, x, y, front}`` of the cost-vs-time front (x = days, y = USD).
    pareto_latency : list of dict
        Points of the cost-vs-latency front (x = seconds, y = USD).
    sweep_front : dict, optional
        Pareto front of a sweep (:func:`aitco.decide.sweep.sweep`): ``metrics`` (the two
        minimised metrics), ``rows`` (the front's configurations), ``source``, ``evaluated``.
    notes : list of str
        What was left out and why (no ROI inputs, no telemetry...).
    scenario : dict
        The scenario as given (for the appendix and the JSON download).
    dropped_options : list of dict
        Options the web app left out because they cannot be priced, with why
        (``{option, name, field, message}``, ``option`` counted from 1).
    reconcile : dict, optional
        The JSON of ``aitco reconcile`` for one option: the report adds its section (waterfall
        from predicted to billed, variances).
    """

    title: str
    description: str = ""
    options: list[OptionView] = field(default_factory=list)
    cheapest: str = ""
    fastest: str = ""
    verdict: str = ""
    feasible_options: list[str] = field(default_factory=list)
    roi: dict[str, Any] | None = None
    tornado: list[dict[str, Any]] = field(default_factory=list)
    tornado_metric: str = "npv_usd"
    utilisation: dict[str, Any] | None = None
    pareto_time: list[dict[str, Any]] = field(default_factory=list)
    pareto_latency: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    scenario: dict[str, Any] = field(default_factory=dict)
    sweep_front: dict[str, Any] | None = None
    dropped_options: list[dict[str, Any]] = field(default_factory=list)
    #: A reconciliation of one option with its bill (``aitco reconcile --json``), when given.
    reconcile: dict[str, Any] | None = None

    def time_unit(self) -> tuple[str, float]:
        """Return the one time unit of all this report shows (:func:`aitco.formatting.time_unit`).

        Cards, tables and chart axes write every duration in it: hours when the longest option
        takes under a few days, days beyond.
        """
        return time_unit(option_hours(o.values) for o in self.options)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (the web API's and ``report.json``'s shape).

        ``sweep_front`` appears only when a sweep was attached (``aitco report --sweep``).
        """
        out = {
            "name": self.title,
            "description": self.description,
            "verdict": self.verdict,
            "cheapest": self.cheapest or None,
            "fastest": self.fastest or None,
            "feasible_options": self.feasible_options,
            "options": [
                {
                    "name": o.name,
                    "kind": o.kind,
                    "hardware": o.hardware,
                    "pricing": o.pricing,
                    "gpus": o.gpus,
                    "total_usd": o.total_usd,
                    **dict(o.values),
                    **(
                        {"feasible": o.feasible, "infeasible_reasons": list(o.infeasible_reasons)}
                        if o.feasible is not None
                        else {}
                    ),
                    "items": [
                        {
                            "name": i.name,
                            "usd": i.usd,
                            "category": i.category,
                            "share": i.share,
                            "formula": i.formula,
                            "inputs": dict(i.inputs),
                            "sources": list(i.sources),
                        }
                        for i in o.items
                    ],
                }
                for o in self.options
            ],
            "pareto_time": self.pareto_time,
            "pareto_latency": self.pareto_latency,
            "roi_series": self.roi,
            "tornado": self.tornado,
            "notes": self.notes,
            "scenario": self.scenario,
        }
        if self.sweep_front is not None:
            out["sweep_front"] = self.sweep_front
        if self.dropped_options:
            out["dropped_options"] = self.dropped_options
        return out


def report_from_options(
    title: str,
    options: Sequence[Any],
    *,
    description: str = "",
    scenario: Mapping[str, Any] | None = None,
    choices: Choices | None = None,
) -> ReportData:
    """Gather compared options (Breakdowns or their JSON) into a :class:`ReportData`.

    ``choices``: the comparison's (cheapest, fastest, Pareto fronts, verdict); when not given
    they are made by the one function that makes them for ``compare``
    (:func:`aitco.decide.choices.choose`), never here.
    """
    views = [OptionView.from_any(o) for o in options]
    if not views:
        raise InputError("options", [], "at least one compared option")
    if choices is None:
        kind = views[0].kind if all(v.kind == views[0].kind for v in views) else "plan"
        choices = choose(options, kind)
    return ReportData(
        title=title,
        description=description,
        options=views,
        cheapest=choices.cheapest or "",
        fastest=choices.fastest or "",
        verdict=choices.verdict,
        feasible_options=list(choices.feasible_options),
        pareto_time=list(choices.pareto_time),
        pareto_latency=list(choices.pareto_latency),
        scenario=dict(scenario or {}),
    )


def add_roi(data: ReportData, roi_inputs: Any, *, metric: str = "npv_usd") -> None:
    """Attach the ROI series and tornado of :mod:`aitco.decide.roi` to ``data``."""
    data.roi = roi.roi_series(roi_inputs)
    data.tornado = roi.tornado(roi_inputs, metric=metric)
    data.tornado_metric = metric


def add_sweep_front(
    data: ReportData, spec: Any, catalog: Any, *, source: str = "", **sweep_kw: Any
) -> None:
    """Attach the Pareto front of a sweep (:func:`aitco.decide.sweep.sweep`) to ``data``.

    Parameters
    ----------
    data : ReportData
        The report.
    spec : aitco.decide.sweep.SweepSpec
        The sweep (its ``pareto`` names the two metrics, e.g. ``total_usd`` and
        ``wall_clock_h``, or a latency for serving).
    catalog : aitco.catalog.loader.Catalog
        The catalog.
    source : str
        Where the sweep came from (shown in the caption).
    **sweep_kw
        Passed to :func:`aitco.decide.sweep.sweep` (``max_points``, ``progress``).
    """
    res = sweep(spec, catalog, **sweep_kw).to_json()
    data.sweep_front = {
        "metrics": list(res.get("pareto_metrics") or spec.pareto),
        "rows": res["pareto"],
        "source": source,
        "evaluated": res.get("evaluated"),
        "feasible": res.get("feasible"),
    }


def build_report(
    scenario: Any,
    catalog: Any,
    *,
    roi_inputs: Any | None = None,
    utilisation: Mapping[str, Any] | None = None,
    compare: Any | None = None,
) -> ReportData:
    """Compare a scenario's options with :func:`aitco.decide.compare.compare` and gather a report.

    Parameters
    ----------
    scenario : aitco.decide.scenario.Scenario
        The scenario.
    catalog : aitco.catalog.loader.Catalog
        The catalog.
    roi_inputs : aitco.decide.roi.RoiInputs, optional
        ROI inputs; the ROI curves and the tornado are drawn only when given.
    utilisation : mapping, optional
        Ingested telemetry (see :attr:`ReportData.utilisation`).
    compare : callable, optional
        ``compare(scenario, catalog) -> Comparison``; default :func:`aitco.decide.compare.compare`.

    Returns
    -------
    ReportData
        What the HTML, Markdown and web views render.
    """
    compare_fn = default_compare if compare is None else compare
    comp = compare_fn(scenario, catalog)
    options = _comparison_options(comp)
    data = report_from_options(
        scenario.name,
        options,
        description=scenario.description,
        scenario=scenario.to_dict(),
        choices=_comparison_choices(comp),
    )
    if roi_inputs is not None:
        add_roi(data, roi_inputs)
    else:
        data.notes.append(
            "ROI curves and the sensitivity tornado need ROI inputs (aitco report --roi ROI.yaml; "
            "see examples/roi_support_bot.yaml)."
        )
    if utilisation is not None:
        data.utilisation = dict(utilisation)
    else:
        data.notes.append("No telemetry was ingested, so there is no utilisation heatmap.")
    return data


def _comparison_choices(comp: Any) -> Choices | None:
    """Return the choices a :class:`~aitco.decide.compare.Comparison` made (None: none)."""
    if not getattr(comp, "verdict", ""):  # not a comparison, or one made by hand: choose()
        return None
    return Choices(
        feasible_options=list(comp.feasible_options),
        cheapest=comp.cheapest,
        fastest=comp.fastest,
        pareto_time=list(comp.pareto_time),
        pareto_latency=list(comp.pareto_latency),
        verdict=comp.verdict,
    )


def _comparison_options(comp: Any) -> list[Any]:
    """Return the per-option breakdowns of a comparison (``options`` attribute or key)."""
    if hasattr(comp, "options"):
        return list(comp.options)
    if isinstance(comp, Mapping) and "options" in comp:
        return list(comp["options"])
    if isinstance(comp, Sequence):
        return list(comp)
    raise InputError("comparison", type(comp).__name__, "a comparison with options")
