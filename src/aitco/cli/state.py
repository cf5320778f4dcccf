"""Process-wide CLI state: the user's catalog overlays (``--catalog``), set before commands run."""

from __future__ import annotations

from aitco.catalog.loader import Catalog, load_catalog

_overlays: list[str] = []


def set_overlays(paths: list[str]) -> None:
    """Remember the ``--catalog`` files given on the command line."""
    _overlays[:] = paths


def overlays() -> list[str]:
    """Return the ``--catalog`` files given on the command line."""
    return list(_overlays)


def catalog() -> Catalog:
    """Load the catalog: built-in data, ``AITCO_CATALOG``, then the ``--catalog`` overlays."""
    return load_catalog(_overlays)
