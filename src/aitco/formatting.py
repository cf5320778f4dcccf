"""Number formatting shared by every interface (terminal tables, HTML and Markdown reports)."""

from __future__ import annotations

import math
from typing import Any


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
