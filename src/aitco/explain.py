"""Self-explaining results: every number with its unit, formula, inputs and dominant term.

An :class:`Estimate` is what every engine returns to the interfaces. ``--explain`` prints its
:class:`Term` objects; ``--json`` prints :meth:`Estimate.to_json`. A term may have children: the
terms it was computed from, so one tree goes from a dollar figure down to the kernel times
(a cost item's children are the performance terms behind its hours, :mod:`aitco.cost.breakdown`).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Term(BaseModel):
    """One named quantity of an estimate and how it was reached.

    Attributes
    ----------
    name : str
        Glossary name with its unit suffix (``"compute_s"``, ``"energy_usd"``).
    value : float
        The value, in ``unit``.
    unit : str
        Unit of ``value`` (``"s"``, ``"USD"``, ``"fraction"``).
    formula : str
        The formula, in words or symbols, that produced it.
    inputs : dict
        The inputs used, by name (with units in the names).
    sources : list of str
        Where the inputs came from (catalog sources, user overrides).
    note : str
        Assumptions worth knowing.
    children : list of Term
        The terms this one was computed from (empty for a leaf).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float
    unit: str
    formula: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
    note: str = ""
    children: list[Term] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of the term; ``children`` only when it has some (recursively)."""
        out = self.model_dump(exclude={"children"})
        if self.children:
            out["children"] = [c.to_json() for c in self.children]
        return out

    def walk(self, depth: int = 0) -> list[tuple[int, Term]]:
        """Return ``(depth, term)`` for this term and every descendant, depth first."""
        out = [(depth, self)]
        for c in self.children:
            out += c.walk(depth + 1)
        return out


class Estimate(BaseModel):
    """A result with its terms, the term that dominated, and the headline values.

    Attributes
    ----------
    kind : str
        What was estimated (``"training"``, ``"inference"``, ``"tco"``).
    values : dict
        Headline values keyed by glossary name (what ``--json`` prints).
    terms : list of Term
        The itemised terms behind the values.
    dominant : str
        Name of the term that dominated the headline figure.
    assumptions : list of str
        Assumptions stated in words.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    values: dict[str, Any] = Field(default_factory=dict)
    terms: list[Term] = Field(default_factory=list)
    dominant: str = ""
    assumptions: list[str] = Field(default_factory=list)

    def term(self, name: str) -> Term:
        """Return the term called ``name`` (KeyError if absent)."""
        for t in self.terms:
            if t.name == name:
                return t
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict: the headline values plus ``explain`` (terms and dominant term)."""
        out = {k: _json_safe(v) for k, v in self.values.items()}
        out["explain"] = {
            "dominant": self.dominant,
            "terms": [t.to_json() for t in self.terms],
            "assumptions": self.assumptions,
        }
        return out


def dominant_term(terms: dict[str, float]) -> str:
    """Return the name of the largest term (by absolute value); ``""`` if there are none."""
    if not terms:
        return ""
    return max(terms.items(), key=lambda kv: abs(kv[1]))[0]


def _json_safe(v: Any) -> Any:
    """Convert numpy scalars and non-finite floats into JSON-safe values."""
    if hasattr(v, "item") and callable(v.item) and getattr(v, "shape", None) == ():
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    return v
