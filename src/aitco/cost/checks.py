"""Input checks shared by the cost models: every bad value names its field.

The cost functions are vectorised, so the checks accept arrays and raise
:class:`aitco.errors.InputError` on the first offending element.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from aitco.errors import InputError


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> Any:
    return arr[bad].flat[0].item() if np.ndim(arr) else arr.item()


def finite(value: ArrayLike, field: str) -> np.ndarray:
    """Return ``value`` as a float array; raise if any element is NaN or infinite."""
    arr = np.asarray(value, dtype=float)
    bad = ~np.isfinite(arr)
    if np.any(bad):
        raise InputError(field, _first_bad(arr, bad), "a finite number")
    return arr


def non_negative(value: ArrayLike, field: str) -> np.ndarray:
    """Return ``value`` as a float array; raise if any element is negative or not finite."""
    arr = finite(value, field)
    bad = arr < 0
    if np.any(bad):
        raise InputError(
            field, _first_bad(arr, bad), "a value >= 0 (prices, rates and sizes cannot be negative)"
        )
    return arr


def positive(value: ArrayLike, field: str) -> np.ndarray:
    """Return ``value`` as a float array; raise unless every element is > 0."""
    arr = finite(value, field)
    bad = arr <= 0
    if np.any(bad):
        raise InputError(field, _first_bad(arr, bad), "a value > 0")
    return arr


def fraction(value: ArrayLike, field: str, *, open_high: bool = False) -> np.ndarray:
    """Return ``value`` as a float array; raise unless every element is in [0, 1] (or [0, 1))."""
    arr = finite(value, field)
    bad = (arr < 0) | ((arr >= 1) if open_high else (arr > 1))
    if np.any(bad):
        expected = "a fraction in [0, 1)" if open_high else "a fraction in [0, 1]"
        raise InputError(
            field, _first_bad(arr, bad), f"{expected} (fractions are 0-1, not percent)"
        )
    return arr


def pue(value: ArrayLike, field: str = "pue") -> np.ndarray:
    """Return ``value`` as a float array; raise unless every element is >= 1."""
    arr = finite(value, field)
    bad = arr < 1
    if np.any(bad):
        raise InputError(field, _first_bad(arr, bad), "a PUE >= 1 (facility power over IT power)")
    return arr
