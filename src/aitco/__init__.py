"""aitco: what will this AI workload really cost, on which hardware, and is it worth it.

The public API is re-exported here; see the README and ``docs/`` for the guide.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("aitco")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

from aitco.catalog.loader import Catalog, load_catalog
from aitco.errors import AitcoError, CatalogError, InputError, ParseError

__all__ = [
    "AitcoError",
    "Catalog",
    "CatalogError",
    "InputError",
    "ParseError",
    "__version__",
    "load_catalog",
]
