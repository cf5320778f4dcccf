"""The itemised TCO of one option: :class:`Item` lines adding up to a :class:`Breakdown`.

Every item carries its USD value, category, formula, inputs and sources, so ``--explain`` can
show how it was reached; :meth:`Breakdown.finalize` sets the shares and checks that the items add
up to the total. Multi-stage plans add breakdowns stage by stage with :func:`add_stages`. The
items themselves are priced by :func:`aitco.cost.tco.compose`.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aitco.explain import Estimate, Term, dominant_term

#: Item categories, in display order.
CATEGORIES: tuple[str, ...] = (
    "compute",
    "reliability",
    "power",
    "facility",
    "people",
    "data",
    "compliance",
    "carbon",
)


class Item(BaseModel):
    """One cost line.

    Attributes
    ----------
    name : str
        Line name (``"rental"``, ``"failure_rework"``, ``"electricity"``...).
    usd : float
        Cost. [USD]
    category : str
        One of :data:`CATEGORIES`.
    share : float
        Share of the option's total. [fraction]
    formula : str
        How it was computed.
    inputs : dict
        The inputs used, with units in their names.
    sources : list of str
        Catalog factor ids / citations of the inputs.
    terms : list of Term
        The performance terms behind the item's hours (its children in the explain tree:
        GPU-hours, tokens/s, step time, kernel terms); empty when the item has none.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    usd: float
    category: str
    share: float = 0.0
    formula: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
    note: str = ""
    terms: list[Term] = Field(default_factory=list)

    def to_term(self) -> Term:
        """Return the item as an explain :class:`~aitco.explain.Term` (``<name>_usd``)."""
        return Term(
            name=f"{self.name}_usd",
            value=self.usd,
            unit="USD",
            formula=self.formula,
            inputs=self.inputs,
            sources=self.sources,
            note=self.note,
            children=list(self.terms),
        )

    def to_json(self, *, explain: bool = True) -> dict[str, Any]:
        """JSON-ready dict: name, usd, category, share (and with ``explain`` the rest)."""
        if not explain:
            return self.model_dump(include={"name", "usd", "category", "share"})
        out = self.model_dump(exclude={"terms"})
        if self.terms:
            out["terms"] = [t.to_json() for t in self.terms]
        return out


class Breakdown(BaseModel):
    """The itemised cost of one option (hardware x pricing mode) or of a multi-stage plan.

    Attributes
    ----------
    name : str
        Option name, naming the hardware id and the pricing mode.
    kind : str
        ``"training"``, ``"inference"`` or ``"plan"`` (multi-stage).
    total_usd : float
        Sum of the items. [USD]
    items : list of Item
        The cost lines.
    values : dict
        Headline values keyed by glossary name (``wall_clock_days``, ``goodput``,
        ``usd_per_million_tokens``, ``energy_kwh``, ``kg_co2e``...).
    stages : list of Breakdown
        Per-stage breakdowns of a multi-stage plan.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str = "training"
    hardware: str = ""
    pricing: str = ""
    gpus: int = 0
    total_usd: float = 0.0
    items: list[Item] = Field(default_factory=list)
    values: dict[str, Any] = Field(default_factory=dict)
    stages: list[Breakdown] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)

    def add(
        self,
        name: str,
        usd: float,
        category: str,
        formula: str = "",
        inputs: dict[str, Any] | None = None,
        sources: list[str] | None = None,
        note: str = "",
        terms: list[Term] | None = None,
    ) -> Item:
        """Append an item (value must be finite) and return it."""
        v = float(usd)
        if not math.isfinite(v):
            msg = f"cost item {name!r} is not finite ({v}); inputs: {inputs}"
            raise ValueError(msg)
        if category not in CATEGORIES:
            msg = f"unknown category {category!r}"
            raise ValueError(msg)
        item = Item(
            name=name,
            usd=v,
            category=category,
            formula=formula,
            inputs={k: _plain(x) for k, x in (inputs or {}).items()},
            sources=list(sources or []),
            note=note,
            terms=list(terms or []),
        )
        self.items.append(item)
        return item

    def finalize(self) -> Breakdown:
        """Set ``total_usd`` to the sum of the items and each item's share; return self."""
        self.total_usd = math.fsum(i.usd for i in self.items)
        for i in self.items:
            i.share = i.usd / self.total_usd if self.total_usd else 0.0
        return self

    def item(self, name: str) -> Item:
        """Return the item called ``name`` (KeyError if absent)."""
        for i in self.items:
            if i.name == name:
                return i
        raise KeyError(name)

    def usd(self, name: str) -> float:
        """USD of the item ``name``, 0 when absent."""
        return sum(i.usd for i in self.items if i.name == name)

    def by_category(self) -> dict[str, float]:
        """Total USD by category, in :data:`CATEGORIES` order."""
        out = {c: 0.0 for c in CATEGORIES}
        for i in self.items:
            out[i.category] += i.usd
        return {k: v for k, v in out.items() if v or k == "compute"}

    def to_json(self, *, explain: bool = True) -> dict[str, Any]:
        """JSON-ready dict: name, total_usd, headline values and items (with explanations)."""
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "hardware": self.hardware,
            "pricing": self.pricing,
            "gpus": self.gpus,
            "total_usd": self.total_usd,
            **{k: _plain(v) for k, v in self.values.items()},
            "items": [i.to_json(explain=explain) for i in self.items],
        }
        if self.stages:
            out["stages"] = [s.to_json(explain=explain) for s in self.stages]
        if self.assumptions:
            out["assumptions"] = self.assumptions
        return out

    def to_estimate(self) -> Estimate:
        """Return the breakdown as an :class:`~aitco.explain.Estimate`: the explain tree.

        One term per item (``<item>_usd``), whose children are the performance terms behind its
        hours; the items add up to ``total_usd``.
        """
        return Estimate(
            kind="tco",
            values={"name": self.name, "total_usd": self.total_usd, **self.values},
            terms=[i.to_term() for i in self.items],
            dominant=dominant_term({f"{i.name}_usd": i.usd for i in self.items}),
            assumptions=self.assumptions,
        )

    def explain_tree(self) -> Term:
        """Return the root of the explain tree: ``total_usd``, the items its children."""
        return Term(
            name="total_usd",
            value=self.total_usd,
            unit="USD",
            formula="sum of the items",
            children=[i.to_term() for i in self.items],
        )


def add_stages(name: str, stages: list[Breakdown]) -> Breakdown:
    """Add a multi-stage plan up stage by stage: items prefixed by stage, totals summed.

    Parameters
    ----------
    name : str
        Plan name.
    stages : list of Breakdown
        One breakdown per stage, in order.

    Returns
    -------
    Breakdown
        ``kind="plan"``: the items of every stage (named ``"<stage>:<item>"``), additive values
        summed (``wall_clock_days``, ``gpu_hours``, ``energy_kwh``, ``kg_co2e``, ``tokens``), and
        the stages kept in ``stages``.
    """
    plan = Breakdown(name=name, kind="plan", stages=stages)
    for st in stages:
        for i in st.items:
            plan.items.append(i.model_copy(update={"name": f"{st.name}:{i.name}"}))
    for key in ("wall_clock_days", "gpu_hours", "energy_kwh", "kg_co2e", "tokens"):
        vals = [s.values.get(key) for s in stages]
        if all(isinstance(v, int | float) for v in vals):
            plan.values[key] = float(sum(vals))  # type: ignore[arg-type]
    plan.finalize()
    return plan


def _plain(v: Any) -> Any:
    if hasattr(v, "item") and getattr(v, "shape", None) == ():
        return v.item()
    if hasattr(v, "tolist"):
        return v.tolist()
    return v
