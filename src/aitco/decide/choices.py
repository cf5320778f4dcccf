"""The choices of a comparison: cheapest, fastest, the Pareto fronts and the verdict, made once.

:func:`choose` looks at priced options (:class:`~aitco.cost.breakdown.Breakdown` or their JSON)
and returns :class:`Choices`: the names of the feasible options, the cheapest and the fastest
among them, the cost-vs-time and cost-vs-latency Pareto fronts of the feasible options, and a
one-line verdict. :func:`aitco.decide.compare.compare` calls it, and every surface (the CLI
tables, ``--json``, ``--explain``, the report, the web app, the workbook) renders its result;
none of them chooses again. When no option is feasible there is no cheapest and no fastest, the
fronts are empty and the verdict says so, with each option's reasons.

Feasible means the option can run as priced (:func:`is_feasible`): it fits in memory, meets its
SLO and has an eligible offer (``values["feasible"]``); a multi-stage plan when every stage is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aitco.units import HOURS_PER_DAY

#: Latency keys tried, in order, for the cost-vs-latency front of serving options. [s]
LATENCY_KEYS: tuple[str, ...] = ("p99_e2e_latency_s", "e2e_latency_s", "p99_ttft_s", "ttft_s")


def _get(o: Any, key: str, default: Any = None) -> Any:
    """Read ``key`` from an option: a Breakdown (its attribute, else ``values``) or a mapping."""
    if isinstance(o, Mapping):
        if key in o:
            return o[key]
        return (o.get("values") or {}).get(key, default)
    if key in ("name", "kind", "total_usd", "stages"):
        return getattr(o, key, default)
    return getattr(o, "values", {}).get(key, default)


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def is_feasible(o: Any) -> bool:
    """Whether an option can run as priced (``feasible``; a plan: every stage feasible).

    An option without a ``feasible`` value counts as feasible when its total is a number.
    """
    stages = _get(o, "stages") or []
    if stages:
        return all(is_feasible(s) for s in stages)
    feasible = _get(o, "feasible")
    if feasible is None:
        return _number(_get(o, "total_usd")) is not None
    return bool(feasible)


def latency_s(o: Any) -> float | None:
    """Return the first latency of an option among :data:`LATENCY_KEYS` [s], or None."""
    for k in LATENCY_KEYS:
        v = _number(_get(o, k))
        if v is not None:
            return v
    return None


def pareto_points(
    points: Iterable[tuple[str, float, float]],
    *,
    x_key: str = "x",
    y_key: str = "total_usd",
) -> list[dict[str, Any]]:
    r"""Mark the points no other point beats on both axes (lower is better on both).

    Parameters
    ----------
    points : iterable of (name, x, y)
        Candidates; ``x`` and ``y`` are both to be minimised (days or seconds, and USD).
    x_key, y_key : str
        Glossary names of the two coordinates in the output records (e.g. ``wall_clock_days``
        and ``total_usd``), so the JSON says what and in which unit each one is.

    Returns
    -------
    list of dict
        ``{name, <x_key>, <y_key>, front}`` for every finite point, ``front`` True on the
        Pareto front.

    Notes
    -----
    Point *p* is dominated when some *q* has :math:`x_q \le x_p`, :math:`y_q \le y_p` and
    is strictly better on one of them.

    Examples
    --------
    >>> [p["front"] for p in pareto_points([("a", 1, 10), ("b", 2, 5), ("c", 3, 6)])]
    [True, True, False]
    """
    pts = [(n, float(x), float(y)) for n, x, y in points if math.isfinite(x) and math.isfinite(y)]
    out = []
    for n, x, y in pts:
        dominated = any((qx <= x and qy <= y) and (qx < x or qy < y) for _m, qx, qy in pts)
        out.append({"name": n, x_key: x, y_key: y, "front": not dominated})
    return out


@dataclass(frozen=True)
class Choices:
    """What a comparison chooses among its options (module docstring).

    Attributes
    ----------
    feasible_options : list of str
        Names of the options that can run as priced, in the comparison's order.
    cheapest, fastest : str or None
        The cheapest feasible option, and the fastest (training and plans: shortest wall
        clock; serving: lowest end-to-end latency; a tie: the cheaper). None when no option is
        feasible (or, for fastest, none has a time).
    pareto_time : list of dict
        ``{name, wall_clock_days, total_usd, front}`` of the feasible options with a time.
    pareto_latency : list of dict
        ``{name, latency_s, total_usd, front}`` of the feasible options with a latency.
    verdict : str
        One line: the cheapest and the fastest, or that no option is feasible and why.
    """

    feasible_options: list[str] = field(default_factory=list)
    cheapest: str | None = None
    fastest: str | None = None
    pareto_time: list[dict[str, Any]] = field(default_factory=list)
    pareto_latency: list[dict[str, Any]] = field(default_factory=list)
    verdict: str = ""


def _fastest(ok: Sequence[Any], kind: str) -> str | None:
    if kind == "inference":
        lat = [(o, _number(_get(o, "e2e_latency_s"))) for o in ok]
        timed = [(o, x) for o, x in lat if x is not None]
    else:
        hours = [(o, _number(_get(o, "wall_clock_h"))) for o in ok]
        days = [(o, _number(_get(o, "wall_clock_days"))) for o in ok]
        timed = [(o, x) for o, x in hours if x is not None] or [
            (o, x * HOURS_PER_DAY) for o, x in days if x is not None
        ]
    if not timed:
        return None
    best = min(timed, key=lambda t: (t[1], float(_get(t[0], "total_usd"))))
    return str(_get(best[0], "name"))


def _reasons(o: Any) -> list[str]:
    stages = _get(o, "stages") or []
    if stages and not _get(o, "infeasible_reasons"):
        return [f"{_get(s, 'name')}: {r}" for s in stages for r in _reasons(s)]
    return [str(r) for r in _get(o, "infeasible_reasons") or []] or ["ruled out"]


def verdict_line(options: Sequence[Any], choices: Choices) -> str:
    """Return the one-line answer of a comparison (module docstring)."""
    if not options:
        return "no options to compare"
    if not choices.feasible_options:
        heads: dict[str, int] = {}
        for o in options:
            for r in _reasons(o):
                head = r.split(": ", 1)[0] if r.startswith("no eligible offer") else r
                head = head.split(":", 1)[0].split(";", 1)[0]
                heads[head] = heads.get(head, 0) + 1
        why = ", ".join(f"{h} ({n})" if len(options) > 1 else h for h, n in heads.items())
        n = len(options)
        return (
            f"no option is feasible: {'the one option' if n == 1 else f'none of the {n} options'}"
            f" can run as priced ({why}), so there is no cheapest and no fastest"
        )
    by_name = {str(_get(o, "name")): o for o in options}
    cheap = by_name[str(choices.cheapest)]
    text = f"cheapest: {choices.cheapest} ({float(_get(cheap, 'total_usd')):,.0f} USD)"
    if choices.fastest is not None:
        text += f"; fastest: {choices.fastest}"
        fast = by_name[choices.fastest]
        lat = _number(_get(fast, "e2e_latency_s"))
        days = _number(_get(fast, "wall_clock_days"))
        if days is not None:
            text += f" ({days * HOURS_PER_DAY:,.3g} h)"
        elif lat is not None:
            text += f" ({lat:,.3g} s end to end)"
    left = len(options) - len(choices.feasible_options)
    if left:
        text += f"; {left} of {len(options)} options cannot run as priced"
    return text


def choose(options: Sequence[Any], kind: str) -> Choices:
    """Choose among priced options: cheapest, fastest, Pareto fronts, verdict (module docs).

    Parameters
    ----------
    options : sequence
        :class:`~aitco.cost.breakdown.Breakdown` or their ``to_json()`` dicts.
    kind : str
        ``"training"``, ``"inference"`` or ``"plan"``.

    Returns
    -------
    Choices
    """
    ok = [o for o in options if is_feasible(o) and _number(_get(o, "total_usd")) is not None]
    names = [str(_get(o, "name")) for o in ok]
    if not ok:
        return Choices(verdict=verdict_line(options, Choices()))
    cheapest = str(_get(min(ok, key=lambda o: float(_get(o, "total_usd"))), "name"))
    days = [(str(_get(o, "name")), _number(_get(o, "wall_clock_days")), o) for o in ok]
    timed = [(n, d, float(_get(o, "total_usd"))) for n, d, o in days if d is not None]
    lat = [
        (str(_get(o, "name")), x, float(_get(o, "total_usd")))
        for o in ok
        if (x := latency_s(o)) is not None
    ]
    got = Choices(
        feasible_options=names,
        cheapest=cheapest,
        fastest=_fastest(ok, kind),
        pareto_time=pareto_points(timed, x_key="wall_clock_days"),
        pareto_latency=pareto_points(lat, x_key="latency_s"),
    )
    return Choices(**{**got.__dict__, "verdict": verdict_line(options, got)})
