"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``../shared`` folder beside the repository (fixtures, ground truth)."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def catalog():
    """The built-in catalog (no user overlays)."""
    from aitco.catalog.loader import load_catalog

    return load_catalog(use_env=False)
