"""Number formatting shared by every interface (terminal tables, HTML and Markdown reports)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from aitco.labels import DISPLAY_UNITS, FRACTION_KEYS


def num(x: Any, digits: int = 4) -> str:
    """Format a number compactly (thousands separators, ``digits`` significant digits).

    The one number formatter of the reports (4 digits) and the terminal
    (:func:`aitco.cli.render.fmt`, 3 digits): ``None`` and non-finite floats give ``-``, booleans
    ``yes``/``no``, ints and floats of 1000 or more get thousands separators and no decimals.
    """
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "-"
        if x == 0:
            return "0"
        return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{digits}g}"
    return str(x)


#: Below this absolute value money prints cents ($43.06), above it whole dollars ($138). [USD]
CENTS_BELOW_USD = 100.0
#: Below this absolute value money prints 3 significant digits ($0.0213). [USD]
SMALL_USD = 0.1
#: SI prefixes of compact money: thousand, million, billion, trillion (short scale).
_SI_MONEY = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))
#: Durations shorter than this print in minutes. [h]
MINUTES_BELOW_H = 1.0
#: Durations shorter than this print in hours, longer ones in days. [h]
HOURS_BELOW_H = 72.0
#: Durations longer than this print in years. [days]
YEARS_ABOVE_DAYS = 730.0
#: Days per (Julian) year. [days]
DAYS_PER_YEAR = 365.25
#: Hours per day. [h]
HOURS_PER_DAY = 24.0


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def usd(x: Any) -> str:
    """Format dollars one way everywhere: ``$1,234``, ``$43.06``, ``-$1.95``; ``-`` if missing.

    Cents are shown below :data:`CENTS_BELOW_USD`, whole dollars with thousands separators above;
    the minus sign comes before the dollar sign.

    Examples
    --------
    >>> usd(1234.4), usd(-1.949), usd(43.061), usd(0.02134), usd(None)
    ('$1,234', '-$1.95', '$43.06', '$0.0213', '-')
    """
    if not _finite(x):
        return "-"
    sign = "-" if x < 0 else ""
    a = abs(float(x))
    # $/M tokens of a cheap run keep 3 significant digits ($0.0213, not $0.02)
    small = 0 < a < SMALL_USD
    body = f"{a:.3g}" if small else (f"{a:,.2f}" if a < CENTS_BELOW_USD else f"{a:,.0f}")
    if body.strip("0.,") == "":
        sign = ""
    return f"{sign}${body}"


def usd_si(x: Any, digits: int = 3) -> str:
    """Format dollars compactly with an SI-like suffix: ``$1.2M``, ``$3.4B``, ``$1.2T``, ``-$950``.

    The axis labels of every chart and the summary cards use it; ``digits`` significant digits.

    Examples
    --------
    >>> usd_si(1.23e6, 2), usd_si(1.5e12), usd_si(-950), usd_si(float("nan"))
    ('$1.2M', '$1.5T', '-$950', '-')
    """
    if not _finite(x):
        return "-"
    sign = "-" if x < 0 else ""
    a = abs(float(x))
    steps = [(1.0, ""), *sorted(_SI_MONEY)]
    for k, (scale, suffix) in enumerate(steps):
        v = float(f"{a / scale:.{digits}g}")
        last = k == len(steps) - 1
        if v < 1000 or last:
            if a == 0:
                return "$0"
            return f"{sign}${v:g}{suffix}"
    return "-"  # pragma: no cover (the last step always returns)


def duration_h(hours: Any) -> str:
    """Format a duration in the unit that reads best: ``45 min``, ``2.8 h``, ``12.5 days``.

    Examples
    --------
    >>> duration_h(0.5), duration_h(2.76), duration_h(300.0), duration_h(24 * 1000)
    ('30 min', '2.8 h', '12.5 days', '2.7 years')
    """
    if not _finite(hours):
        return "-"
    h = float(hours)
    if abs(h) < MINUTES_BELOW_H:
        return f"{h * 60:.2g} min" if abs(h * 60) < 10 else f"{h * 60:.0f} min"
    if abs(h) < HOURS_BELOW_H:
        return f"{h:.1f} h" if abs(h) < 10 else f"{h:.0f} h"
    days = h / HOURS_PER_DAY
    if abs(days) > YEARS_ABOVE_DAYS:
        return f"{days / DAYS_PER_YEAR:.1f} years"
    return f"{days:.1f} days" if abs(days) < 100 else f"{days:,.0f} days"


#: Values that are durations, and the hours in one of their unit. [days], [h]
TIME_KEYS_H: dict[str, float] = {"wall_clock_days": HOURS_PER_DAY, "wall_clock_h": 1.0}


def option_hours(values: Any) -> float | None:
    """Return an option's duration (``wall_clock_days`` or ``wall_clock_h``) or None [h]."""
    for key, per in TIME_KEYS_H.items():
        v = values.get(key)
        if _finite(v):
            return float(v) * per
    return None


def time_unit(hours: Iterable[Any]) -> tuple[str, float]:
    """Return the one time unit of a surface (its cards, table and chart axes): h or days.

    Hours when the longest finite duration shown is under :data:`HOURS_BELOW_H` (a few days),
    days beyond; every duration of the surface is then written in that unit.

    Returns
    -------
    tuple of (str, float)
        The unit (``"h"`` or ``"days"``) and the hours in one unit.

    Examples
    --------
    >>> time_unit([2.9, 9.2]), time_unit([2.9, 240.0]), time_unit([])
    (('h', 1.0), ('days', 24.0), ('h', 1.0))
    """
    finite = [abs(float(h)) for h in hours if _finite(h)]
    if finite and max(finite) >= HOURS_BELOW_H:
        return "days", HOURS_PER_DAY
    return "h", 1.0


def in_time_unit(hours: Any, unit: tuple[str, float]) -> str:
    """Write a duration in a surface's :func:`time_unit` (3 significant digits).

    Examples
    --------
    >>> hours, days = ("h", 1.0), ("days", 24.0)
    >>> in_time_unit(2.94, hours), in_time_unit(36.0, days), in_time_unit(None, hours)
    ('2.94 h', '1.5 days', '-')
    """
    if not _finite(hours):
        return "-"
    name, per = unit
    return f"{num(float(hours) / per, 3)} {name}"


def pct(x: Any, digits: int = 1) -> str:
    """Format a fraction as a percentage (0.1234 -> ``12.3%``); ``-`` if missing."""
    if not _finite(x):
        return "-"
    return f"{100 * float(x):.{digits}f}%"


def value(key: str, x: Any) -> str:
    """Format the value of a JSON key by its unit suffix (money, duration, fraction or number).

    ``*_usd``/``usd_per_*`` as money, ``*_days``/``*_h`` as a duration, the fractions of
    :data:`aitco.labels.FRACTION_KEYS` as percentages, anything else with :func:`num`.
    """
    if key.endswith("_usd") or key.startswith("usd_per_"):
        return usd(x)
    if key.endswith("_days") and _finite(x):
        return duration_h(float(x) * HOURS_PER_DAY)
    if key.endswith("_h") and not key.startswith(("gpu_", "useful_", "lost_", "productive_")):
        return duration_h(x)
    if key in FRACTION_KEYS:
        return pct(x, 2 if _finite(x) and 0.99 < float(x) < 1 else 1)
    if key in DISPLAY_UNITS and _finite(x):
        return num(float(x) * DISPLAY_UNITS[key][1], 3)
    return num(x, 3)
