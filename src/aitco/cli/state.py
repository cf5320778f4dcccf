"""Process-wide CLI state: the user's catalog overlays (``--catalog``), set before commands run.

Also resolves the other user-supplied model inputs every command reads the same way
(``--calibration`` profiles).
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated

import typer

from aitco.catalog.history import catalog_as_of
from aitco.catalog.loader import Catalog, load_catalog
from aitco.errors import InputError
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams

_overlays: list[str] = []
#: ``--as-of`` day of the command line (None: the prices in force today).
_as_of: list[dt.date | None] = [None]

#: ``--power-limit-w`` of the commands that run an accelerator (train, infer).
PowerLimitOpt = Annotated[
    float | None,
    typer.Option(
        "--power-limit-w",
        help="Power limit the accelerators run at, below their TDP (nvidia-smi -pl): "
        "compute clocks drop by (limit/TDP)^(1/3), energy is drawn up to it.",
        min=1.0,
    ),
]


class Pricing(StrEnum):
    """The pricing modes of a scenario option (``aitco.decide.scenario.PricingMode``).

    Kept equal to it by ``tests/cli/test_price_flags.py``; spelled here so that ``aitco --help``
    does not import the scenario schema.
    """

    on_demand = "on_demand"
    spot = "spot"
    reserved_1y = "reserved_1y"
    reserved_3y = "reserved_3y"
    owned = "owned"
    colocation = "colocation"


#: How ``train`` and ``infer`` price the plan they estimate: the option fields of ``compare``.
PricingOpt = Annotated[
    Pricing,
    typer.Option(
        "--pricing",
        help="How the accelerators are paid for, as a compare option's pricing: "
        + ", ".join(Pricing)
        + ".",
    ),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider",
        help="Cloud provider of the offer ('any': the cheapest eligible offer of any provider; "
        "default: one home instance type for every pricing mode, as compare).",
    ),
]
RegionOpt = Annotated[
    str | None,
    typer.Option("--region", help="Region of the offer price and of the electricity."),
]
UsdPerGpuHourOpt = Annotated[
    float | None,
    typer.Option(
        "--usd-per-gpu-hour",
        help="GPU price (default: the offer aitco compare bills for --pricing, whole instances).",
    ),
]


def set_overlays(paths: list[str]) -> None:
    """Remember the ``--catalog`` files given on the command line."""
    _overlays[:] = paths


def overlays() -> list[str]:
    """Return the ``--catalog`` files given on the command line."""
    return list(_overlays)


def set_as_of(raw: str | None) -> None:
    """Remember the global ``--as-of`` date (None: today's prices)."""
    if raw is None:
        _as_of[0] = None
        return
    try:
        _as_of[0] = dt.date.fromisoformat(raw)
    except ValueError as exc:
        raise InputError("--as-of", raw, "a date YYYY-MM-DD") from exc


def as_of() -> dt.date | None:
    """Return the global ``--as-of`` date, or None."""
    return _as_of[0]


def catalog() -> Catalog:
    """Load the catalog: built-in data, ``AITCO_CATALOG``, then the ``--catalog`` overlays.

    Priced as of the ``--as-of`` date when one is given (aitco.catalog.history).
    """
    cat = load_catalog(_overlays)
    day = _as_of[0]
    return cat if day is None else catalog_as_of(cat, day)


def efficiency(path: str | None) -> EfficiencyParams:
    """Efficiency parameters of the ``--calibration`` profile ``path`` (defaults without one)."""
    if not path:
        return DEFAULT_EFFICIENCY
    from aitco.calibrate.profile import load_profile

    return load_profile(path).efficiency
