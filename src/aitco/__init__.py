"""aitco: what will this AI workload really cost, on which hardware, and is it worth it.

The public API is re-exported here (imported lazily, so ``import aitco`` stays light):

- :func:`load_catalog` / :class:`Catalog` — the sourced catalog, with user overlays;
- :class:`Scenario` — a workload, hardware options and assumptions (YAML round trip);
- :func:`estimate_training`, :func:`estimate_inference` — the performance engines;
- :func:`compare` / :func:`tco` — itemised TCO of every option of a scenario;
- :func:`sweep` — vectorised, chunked sweeps over scenario keys.

See the README and ``docs/`` for the guide.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("aitco")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

from aitco.catalog.loader import Catalog, load_catalog
from aitco.errors import AitcoError, CatalogError, InputError, ParseError

_LAZY = {
    "Scenario": "aitco.decide.scenario",
    "estimate_training": "aitco.perf.training",
    "estimate_inference": "aitco.perf.inference",
    "compare": "aitco.decide.compare",
    "tco": "aitco.decide.compare",
    "sweep": "aitco.decide.sweep",
}

__all__ = [
    "AitcoError",
    "Catalog",
    "CatalogError",
    "InputError",
    "ParseError",
    "Scenario",
    "__version__",
    "compare",
    "estimate_inference",
    "estimate_training",
    "load_catalog",
    "sweep",
    "tco",
]


def __getattr__(name: str) -> Any:
    """Import the heavier parts of the public API on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    msg = f"module 'aitco' has no attribute {name!r}"
    raise AttributeError(msg)
