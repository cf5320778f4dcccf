"""Process-wide CLI state: the user's catalog overlays (``--catalog``), set before commands run.

Also resolves the other user-supplied model inputs every command reads the same way
(``--calibration`` profiles).
"""

from __future__ import annotations

from typing import Annotated

import typer

from aitco.catalog.loader import Catalog, load_catalog
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams

_overlays: list[str] = []

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


def set_overlays(paths: list[str]) -> None:
    """Remember the ``--catalog`` files given on the command line."""
    _overlays[:] = paths


def overlays() -> list[str]:
    """Return the ``--catalog`` files given on the command line."""
    return list(_overlays)


def catalog() -> Catalog:
    """Load the catalog: built-in data, ``AITCO_CATALOG``, then the ``--catalog`` overlays."""
    return load_catalog(_overlays)


def efficiency(path: str | None) -> EfficiencyParams:
    """Efficiency parameters of the ``--calibration`` profile ``path`` (defaults without one)."""
    if not path:
        return DEFAULT_EFFICIENCY
    from aitco.calibrate.profile import load_profile

    return load_profile(path).efficiency
