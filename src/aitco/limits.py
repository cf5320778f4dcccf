"""Plausible ranges of user inputs and the one validator every edge uses.

The command line, scenario YAML, catalog overlays, calibration profiles and the web API all pass
the numbers a user typed through :func:`check_value` (or :func:`check_tree` for a whole YAML
document), so a NaN, an infinity, a negative price or an absurd count stops at the edge with one
line naming the field, the value and the accepted range (:class:`aitco.errors.InputError`,
exit 2), instead of reaching a model and coming back as a silent ``nan`` or ``$inf``.

The ranges are deliberately wide: they reject what is physically or financially absurd, not
what is unusual. Each bound is a named constant with the reason for its size; ``docs/cli.md``
("Input ranges") lists them.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aitco.errors import InputError

#: Largest amount of money accepted anywhere. [USD] One trillion dollars: above the yearly
#: capital expenditure of all hyperscalers together (about 0.4 trillion USD in 2025).
MAX_USD = 1e12
#: Largest count of accelerators. The largest announced clusters hold a few hundred thousand
#: GPUs (xAI Colossus, about 200,000 in 2025); ten times that is still accepted.
MAX_GPUS = 2_000_000
#: Largest token count (training corpus, monthly volume, prompt). [tokens] Frontier runs train on
#: a few times 1e13 tokens (Llama 3: 1.5e13); 1e18 leaves five decades of headroom while keeping
#: token x FLOP products far from float overflow.
MAX_TOKENS = 1e18
#: Largest sequence / context length. [tokens] Published context windows reach 1e7 (Llama 4 Scout).
MAX_SEQ_LEN = 100_000_000
#: Largest number of requests the serving simulation holds in memory (about 1 kB each).
MAX_SIMULATED_REQUESTS = 1_000_000
#: Largest number of plans a sweep evaluates in memory (about 2 kB of columns each).
MAX_SWEEP_POINTS = 5_000_000
#: Largest file read whole into memory (overlays, scenarios, profiles, JSON exports). [B]
MAX_FILE_BYTES = 512 * 2**20
#: Largest duration. [h] One hundred years.
MAX_HOURS = 100 * 365.25 * 24
#: Smallest non-zero magnitude accepted: below it a number is a denormal or a typo (1e-320
#: requests per second overflows to an infinite gap between requests).
MIN_MAGNITUDE = 1e-12
#: Largest generic count (batch sizes, steps, repeats, workers, rows kept).
MAX_COUNT = 10**12
#: Largest value of any other non-negative number (a generous guard against 1e308).
MAX_GENERIC = 1e15


@dataclass(frozen=True)
class Range:
    """Closed interval ``[lo, hi]`` with the unit shown in the error message."""

    lo: float
    hi: float
    unit: str = ""

    def describe(self) -> str:
        """Describe the range: ``"a finite number in [0, 1e+12] USD"``."""
        unit = f" {self.unit}" if self.unit else ""
        return f"a finite number in [{self.lo:g}, {self.hi:g}]{unit}"


FRACTION = Range(0.0, 1.0, "(fraction)")
MONEY = Range(0.0, MAX_USD, "USD")
COUNT = Range(0.0, MAX_COUNT)
GENERIC = Range(0.0, MAX_GENERIC)

#: Ranges by field name (the CLI option's Python name, the scenario/overlay key).
RANGES: dict[str, Range] = {
    "gpus": Range(1, MAX_GPUS, "GPUs"),
    "max_gpus": Range(1, MAX_GPUS, "GPUs"),
    "tp": Range(1, MAX_GPUS),
    "pp": Range(1, MAX_GPUS),
    "dp": Range(1, MAX_GPUS),
    "cp": Range(1, MAX_GPUS),
    "ep": Range(1, MAX_GPUS),
    "zero": Range(0, 3, "(ZeRO stage)"),
    "seq_len": Range(1, MAX_SEQ_LEN, "tokens"),
    "num_requests": Range(1, MAX_SIMULATED_REQUESTS, "requests (simulated in memory)"),
    "sample": Range(1, MAX_SWEEP_POINTS, "plans (held in memory)"),
    "top_k": Range(1, MAX_SWEEP_POINTS, "rows"),
    "port": Range(0, 65535),
    "seed": Range(0, 2**32 - 1),
    "acceptance_rate": FRACTION,
    "cached_fraction": FRACTION,
    "utilization": FRACTION,
    "idle_threshold": FRACTION,
    "tornado_swing": Range(0.0, 10.0, "(relative swing)"),
    "discount_rate": Range(-0.5, 10.0, "per year"),
    "days_per_month": Range(1.0, 31.0, "days"),
    "horizon_years": Range(0.0, 100.0, "years"),
    "horizon_months": Range(0.0, 1200.0, "months"),
    "period_days": Range(0.0, 36525.0, "days"),
    "deadline_h": Range(0.0, MAX_HOURS, "h"),
    "restart_h": Range(0.0, MAX_HOURS, "h"),
}

#: Name suffixes / fragments and their range, tried in order when a name is not in RANGES.
_PATTERNS: tuple[tuple[str, Range], ...] = (
    ("usd", MONEY),
    ("price", MONEY),
    ("tokens", Range(0.0, MAX_TOKENS, "tokens")),
    ("_fraction", FRACTION),
    ("_frac", FRACTION),
    ("_h", Range(0.0, MAX_HOURS, "h")),
    ("_s", Range(0.0, MAX_HOURS * 3600.0, "s")),
    ("_ms", Range(0.0, MAX_HOURS * 3.6e6, "ms")),
    ("batch", COUNT),
    ("size", COUNT),
    ("steps", COUNT),
    ("repeats", COUNT),
    ("workers", COUNT),
    ("concurrency", COUNT),
)


def range_for(name: str) -> Range:
    """Return the plausible range of ``name`` (``RANGES``, else a name pattern, else generic)."""
    key = name.lstrip("-").replace("-", "_").split(".")[-1]
    if key in RANGES:
        return RANGES[key]
    for frag, rng in _PATTERNS:
        if key.endswith(frag) or (not frag.startswith("_") and frag in key):
            return rng
    return GENERIC


def check_value(
    field: str,
    value: Any,
    *,
    rng: Range | None = None,
    file: str | None = None,
    error: type[InputError] = InputError,
) -> Any:
    """Return ``value`` if it is a finite number inside the range of ``field``; raise otherwise.

    Parameters
    ----------
    field : str
        Flag (``"--gpus"``) or dotted field path (``"workload.tokens"``); its last part selects
        the range (:func:`range_for`) unless ``rng`` is given.
    value : Any
        Booleans, strings and ``None`` pass unchanged; ints and floats are checked.
    rng : Range, optional
        Range to check against instead of the one named by ``field``.
    file : str, optional
        File the value came from (named in the message).
    error : type, optional
        The :class:`~aitco.errors.InputError` subclass raised (``CatalogError`` for overlays).

    Raises
    ------
    aitco.errors.InputError
        One line: ``field = value: expected a finite number in [lo, hi] unit``.

    Examples
    --------
    >>> check_value("--gpus", 8)
    8
    >>> check_value("--usd-per-gpu-hour", float("nan"))
    Traceback (most recent call last):
    ...
    aitco.errors.InputError: --usd-per-gpu-hour = nan: expected a finite number in [0, 1e+12] USD
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    r = rng or range_for(field)
    if not math.isfinite(value) or not r.lo <= value <= r.hi:
        raise error(field, value, r.describe(), file=file)
    if 0 < abs(value) < MIN_MAGNITUDE:
        raise error(field, value, f"0 or a magnitude of at least {MIN_MAGNITUDE:g}", file=file)
    return value


def check_file_size(path: str | Path, *, field: str = "file") -> None:
    """Refuse a file larger than :data:`MAX_FILE_BYTES` before it is read whole into memory."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return  # the read that follows reports the error with its own message
    if size > MAX_FILE_BYTES:
        raise InputError(
            field,
            str(path),
            f"a file of at most {MAX_FILE_BYTES / 2**20:g} MiB "
            f"(it has {size / 2**20:.0f} MiB; this format is read whole)",
        )


def check_tree(
    data: Any,
    *,
    file: str | None = None,
    prefix: str = "",
    error: type[InputError] = InputError,
) -> Any:
    """Check every number of a parsed YAML/JSON document (see :func:`check_value`).

    Only non-finite numbers and numbers outside the range their key names (RANGES and the
    ``usd``/``tokens``/... patterns) are rejected; keys without a known range only need to be
    finite, because catalog and scenario fields carry their own schema bounds.
    """
    if isinstance(data, Mapping):
        for k, v in data.items():
            check_tree(v, file=file, prefix=f"{prefix}.{k}" if prefix else str(k), error=error)
    elif isinstance(data, list | tuple):
        for i, v in enumerate(data):
            check_tree(v, file=file, prefix=f"{prefix}[{i}]", error=error)
    elif isinstance(data, float | int) and not isinstance(data, bool):
        parts = [q.split("[")[0] for q in prefix.split(".")]
        key = parts[-2] if parts[-1] == "value" and len(parts) > 1 else parts[-1]
        rng = range_for(key)
        if rng is GENERIC:  # unknown key: only finiteness is an edge rule
            if not math.isfinite(data):
                raise error(prefix or "value", data, "a finite number", file=file)
            return data
        check_value(prefix or "value", data, rng=rng, file=file, error=error)
    return data


def first_non_finite(obj: Any, path: str = "") -> tuple[str, float] | None:
    """Path and value of the first NaN or infinity in a result tree, or ``None``.

    Results are checked with it before they are shown, so an input that overflows a model
    (a usage count of 1e308 in a log) is reported instead of printed as ``$inf``.
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        return path or "value", obj
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            hit = first_non_finite(v, f"{path}.{k}" if path else str(k))
            if hit:
                return hit
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            hit = first_non_finite(v, f"{path}[{i}]")
            if hit:
                return hit
    return None
