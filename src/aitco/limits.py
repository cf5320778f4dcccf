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

import datetime as dt
import math
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, model_validator

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
#: Largest side of the square matmul ``aitco probe`` times: three fp32 matrices of 16,384^2
#: hold 3 GiB, and one product is already 9 TFLOP (minutes on a CPU).
MAX_PROBE_MATMUL_SIZE = 16_384
#: Largest buffer ``aitco probe`` copies to measure bandwidth. [MiB] Two 16 GiB buffers.
MAX_PROBE_COPY_MB = 16_384
#: Largest number of steps a multi-step scheduler runs per admission (vLLM's
#: ``num_scheduler_steps`` is typically 8-16).
MAX_SCHEDULER_STEPS = 1_024
#: Largest Dask LocalCluster a sweep starts (``--workers``): one thread each; 256 is well past
#: the cores of one machine, and 100,000 workers never finish starting.
MAX_WORKERS = 256
#: Largest number of plans a sweep evaluates in memory (about 2 kB of columns each).
MAX_SWEEP_POINTS = 5_000_000
#: Largest file read whole into memory (overlays, scenarios, profiles, JSON exports). [B]
MAX_FILE_BYTES = 512 * 2**20
#: Largest duration. [h] One hundred years.
MAX_HOURS = 100 * 365.25 * 24
#: Smallest non-zero magnitude accepted: below it a number is a denormal or a typo (1e-320
#: requests per second overflows to an infinite gap between requests).
MIN_MAGNITUDE = 1e-12
#: Largest generic count (batch sizes, steps, workers, rows kept).
MAX_COUNT = 10**12
#: Largest value of any other non-negative number (a generous guard against 1e308).
MAX_GENERIC = 1e15
#: Largest price of one accelerator-hour. [USD/GPU-h] Rental prices are 0.1-15 USD (2025); a
#: thousand times the dearest still passes, while 1e300 stops here instead of in a total.
MAX_USD_PER_GPU_HOUR = 1e4
#: Smallest and largest matmul rate of one accelerator (a catalog peak, a probe measurement).
#: [TFLOP/s] A small matmul timed by ``aitco probe`` on a busy CPU measures about 1e-4; a 2025
#: rack-scale GPU peaks near 2e4 at fp4: both ends leave two decades or more.
MIN_TFLOPS = 1e-6
MAX_TFLOPS = 1e7
#: Largest power of one accelerator (TDP, limit, idle). [W] Today's largest modules draw
#: about 1.4 kW (B300); a hundred times that is no single device.
MAX_DEVICE_W = 1e5
#: Lowest power limit, as a fraction of the TDP, a driver accepts (``nvidia-smi -pl``): the
#: A100 SXM's minimum is 100 W of 400 W, the H100 SXM's 200 W of 700 W (NVIDIA data sheets).
MIN_POWER_LIMIT_FRACTION = 0.25
#: Largest number of replicas of one service (prefill/decode pools, autoscaler bounds).
MAX_REPLICAS = 100_000
#: Largest number of draft tokens proposed per speculative-decoding step: published schemes
#: propose 1-8 (Medusa, EAGLE chains); tree drafts reach about 60.
MAX_SPEC_TOKENS = 128
#: Shortest period a log may cover. [days] One minute (a period of 0 days divides by zero).
MIN_PERIOD_DAYS = 1 / 1440
#: Shortest horizon of a buy-vs-rent or ROI comparison. [years] One month.
MIN_HORIZON_YEARS = 1 / 12
#: Largest arrival rate. [requests/s] Ten times the largest public API traffic figures
#: (about 1e6 requests/s for a whole search engine).
MAX_QPS = 1e7
#: Largest number of timed repetitions of a measurement loop (``probe --repeats``): each
#: repetition of the default probe takes about 0.1 s, so 10,000 is already hours.
MAX_REPEATS = 10_000
#: Largest number of plans a sweep (or ``report --sweep``) evaluates unless ``--max-points``
#: raises it: about 40 s at the engine evaluators' 50,000 plans/s measured on one busy core
#: (``aitco sweep examples/sweep_training.yaml --sample 500000 --json``: ``configs_per_s``).
DEFAULT_MAX_SWEEP_POINTS = 2_000_000
#: Largest nesting depth of a JSON request body or document (lists and objects): a scenario
#: nests about 5 deep; 30,000 ``[`` under the body limit would exhaust Python's recursion limit.
MAX_JSON_DEPTH = 64
#: Largest number of YAML aliases (``*name``) in one document: a hand-written file uses a few;
#: an alias-expansion ("billion laughs") bomb uses many.
MAX_YAML_ALIASES = 1_000
#: Largest number of nodes aliases may add to a YAML document once expanded (counted on the
#: composed graph, before anything is expanded).
MAX_YAML_ALIAS_NODES = 100_000
#: Longest run a plan may take and still count as feasible. [days] Ten years: beyond it the
#: hardware is obsolete long before the run ends (a typo in tokens or GPUs, not a plan).
MAX_RUN_DAYS = 3650.0
#: Largest total an option may cost and still count as feasible. [USD] (:data:`MAX_USD`)
MAX_TOTAL_USD = MAX_USD
#: Earliest and latest calendar year accepted in a date or a ``--usd-year``: prices are not
#: restated beyond the CPI table, and a date after today is not a retrieval date.
MIN_YEAR = 1913  # the first year of the CPI-U (BLS)
MAX_YEAR = dt.date.today().year
#: Largest integer magnitude in a document (what a float holds without overflow; a 400-digit
#: integer in a ``config.json`` stops here instead of in a conversion to float).
MAX_INT = 2**63 - 1


@dataclass(frozen=True)
class Range:
    """Closed interval ``[lo, hi]`` with the unit shown in the error message."""

    lo: float
    hi: float
    unit: str = ""
    #: Why the bound is where it is (shown in docs/cli.md, "Input ranges").
    why: str = field(default="", compare=False)

    def describe(self) -> str:
        """Describe the range: ``"a finite number in [0, 1e+12] USD"``."""
        unit = f" {self.unit}" if self.unit else ""
        return f"a finite number in [{self.lo:g}, {self.hi:g}]{unit}"


FRACTION = Range(0.0, 1.0, "(fraction)", "a share")
MONEY = Range(0.0, MAX_USD, "USD", "above the yearly capex of all hyperscalers together")
COUNT = Range(0.0, MAX_COUNT, "", "a generic count (batch, steps, workers)")
GENERIC = Range(0.0, MAX_GENERIC)

_GPUS = Range(1, MAX_GPUS, "GPUs", "10x the largest announced cluster")
_HOURS = Range(0.0, MAX_HOURS, "h", "one hundred years")
_TFLOPS = Range(MIN_TFLOPS, MAX_TFLOPS, "TFLOP/s", "a tiny probe on a busy CPU to 500x a rack GPU")
_USD_GPU_H = Range(
    0.0, MAX_USD_PER_GPU_HOUR, "USD/GPU-h", "1,000x the dearest rental (0.1-15 USD in 2025)"
)

#: Ranges by field name (the CLI option's Python name, the scenario/overlay key).
RANGES: dict[str, Range] = {
    "gpus": _GPUS,
    "max_gpus": _GPUS,
    "tp": _GPUS,
    "pp": _GPUS,
    "dp": _GPUS,
    "cp": _GPUS,
    "ep": _GPUS,
    "zero": Range(0, 3, "(ZeRO stage)", "ZeRO stages"),
    "seq_len": Range(1, MAX_SEQ_LEN, "tokens", "published context windows reach 1e7"),
    "num_requests": Range(
        1, MAX_SIMULATED_REQUESTS, "requests (simulated in memory)", "held in memory"
    ),
    "sample": Range(1, MAX_SWEEP_POINTS, "plans (held in memory)", "held in memory"),
    "top_k": Range(1, MAX_SWEEP_POINTS, "rows", "held in memory"),
    "port": Range(0, 65535),
    "seed": Range(0, 2**32 - 1),
    "acceptance_rate": FRACTION,
    "cached_fraction": FRACTION,
    "utilization": FRACTION,
    "idle_threshold": FRACTION,
    "tornado_swing": Range(0.0, 10.0, "(relative swing)", "a tenfold swing"),
    "discount_rate": Range(-0.5, 10.0, "per year", "a yearly rate"),
    "days_per_month": Range(1.0, 31.0, "days"),
    "horizon_years": Range(MIN_HORIZON_YEARS, 100.0, "years", "one month to a century"),
    "horizon_months": Range(1.0, 1200.0, "months", "one month to a century"),
    "period_days": Range(MIN_PERIOD_DAYS, 36525.0, "days", "a minute (0 divides by zero)"),
    "spec_tokens": Range(
        1, MAX_SPEC_TOKENS, "draft tokens per step", "tree drafts propose about 60"
    ),
    "usd_year": Range(
        MIN_YEAR, MAX_YEAR, "(a year of the CPI table: no later than this year)", "CPI-U years"
    ),
    "deadline_h": _HOURS,
    "restart_h": _HOURS,
    # catalog physics: a peak of 1e-9 TFLOP/s or a 1e9 W accelerator is a typo
    "peak_tflops": _TFLOPS,
    "matmul_tflops": _TFLOPS,
    "tdp_w": Range(1.0, MAX_DEVICE_W, "W", "the largest modules draw about 1.4 kW"),
    "idle_w": Range(0.0, MAX_DEVICE_W, "W", "the largest modules draw about 1.4 kW"),
    "power_limit_w": Range(1.0, MAX_DEVICE_W, "W"),  # and relative to the TDP (see below)
    "usd_per_gpu_hour": _USD_GPU_H,
    "usd_per_gpu_h": _USD_GPU_H,
    "qps": Range(0.0, MAX_QPS, "requests/s", "10x the largest public API traffic"),
    # rental prices keyed by pricing mode (buy-vs-rent, sweep ``prices``) are per GPU-hour
    "prices": _USD_GPU_H,
    "repeats": Range(1, MAX_REPEATS, "repetitions", "each repetition takes up to seconds"),
    "size": Range(1, MAX_PROBE_MATMUL_SIZE, "(square matmul side)", "3 GiB of matrices"),
    "copy_mb": Range(1, MAX_PROBE_COPY_MB, "MiB", "two 16 GiB buffers"),
    "scheduler_steps": Range(1, MAX_SCHEDULER_STEPS, "steps per admission", "vLLM uses 8-16"),
    "max_points": Range(1, 2**62, "plans", "raises the sweep bound below"),
    "workers": Range(1, MAX_WORKERS, "Dask workers (threads)", "past the cores of one machine"),
}

#: Physical ranges of catalog factors by id prefix (a ``--catalog`` overlay or a scenario's
#: ``assumptions`` setting one); other factors are only finite and below :data:`MAX_GENERIC`.
FACTOR_RANGES: dict[str, Range] = {
    # power usage effectiveness: 1.0 is a perfect facility; the worst surveyed data centres are
    # near 2.5 (Uptime Institute Global Data Center Survey 2024: average 1.56)
    "pue.": Range(1.0, 5.0, "(power usage effectiveness)", "surveyed average 1.56, worst near 2.5"),
    "electricity.usd-per-kwh.": Range(0.0, 10.0, "USD/kWh", "industrial prices are 0.05-0.3"),
    "carbon.kg-per-kwh.": Range(0.0, 5.0, "kg CO2e/kWh", "coal is about 1"),
}

#: Name suffixes / fragments and their range, tried in order when a name is not in RANGES.
_PATTERNS: tuple[tuple[str, Range], ...] = (
    ("usd_per_gpu_h", RANGES["usd_per_gpu_hour"]),
    ("usd", MONEY),
    ("price", MONEY),
    ("tokens", Range(0.0, MAX_TOKENS, "tokens", "frontier runs use ~1e13 tokens")),
    ("_fraction", FRACTION),
    ("_frac", FRACTION),
    ("_h", _HOURS),
    ("_s", Range(0.0, MAX_HOURS * 3600.0, "s", "one hundred years")),
    ("_ms", Range(0.0, MAX_HOURS * 3.6e6, "ms", "one hundred years")),
    ("batch", COUNT),
    ("size", COUNT),
    ("steps", COUNT),
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
    >>> check_value("--monthly-cost-usd", float("nan"))
    Traceback (most recent call last):
    ...
    aitco.errors.InputError: --monthly-cost-usd = nan: expected a finite number in [0, 1e+12] USD
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    r = rng or range_for(field)
    finite = isinstance(value, int) or math.isfinite(value)  # an int of any size is finite
    if not finite or not r.lo <= value <= r.hi:
        raise error(field, value, r.describe(), file=file)
    if 0 < abs(value) < MIN_MAGNITUDE:
        raise error(field, value, f"0 or a magnitude of at least {MIN_MAGNITUDE:g}", file=file)
    return value


#: What a number under a key without a range must be (a residual of 2e-16 is fine).
_GENERIC_TREE = Range(-MAX_GENERIC, MAX_GENERIC)


def factor_range(factor_id: str) -> Range | None:
    """Physical range of a catalog factor's value (``pue.air``), or None for a generic one."""
    for prefix, rng in FACTOR_RANGES.items():
        if factor_id.startswith(prefix):
            return rng
    return None


def _tree_range(prefix: str) -> Range:
    """Range of the number at dotted path ``prefix`` (``options[0].usd_per_gpu_hour``).

    The last key names it; a ``{value: ...}`` wrapper takes its parent's name, and a mapping
    keyed by precision, mode or id (``peak_tflops.bf16``, ``prices.h100.on_demand``) the name
    of its parent or grandparent.
    A factor override (``assumptions.pue.air``) takes the factor's range.
    """
    parts = [q.split("[")[0] for q in prefix.split(".")]
    if parts[0] == "assumptions" and len(parts) > 1:
        return factor_range(".".join(parts[1:])) or GENERIC
    if parts[-1] == "value" and len(parts) > 1:
        parts = parts[:-1]
    for key in reversed(parts[-3:]):  # the key, else its parent, else its grandparent
        rng = range_for(key)
        if rng is not GENERIC:
            return rng
    return GENERIC


def check_tree(
    data: Any,
    *,
    file: str | None = None,
    prefix: str = "",
    error: type[InputError] = InputError,
) -> Any:
    """Check every number of a parsed YAML/JSON document (see :func:`check_value`).

    A number under a key that names a range (:data:`RANGES`, the ``usd``/``tokens``/...
    patterns, the parent key of a ``{value: ...}`` wrapper or of a mapping keyed by precision)
    must lie in it; any other number must be finite, of magnitude at most :data:`MAX_GENERIC`
    and not subnormal (schemas add their own bounds).
    """
    if isinstance(data, Mapping):
        for k, v in data.items():
            check_tree(v, file=file, prefix=f"{prefix}.{k}" if prefix else str(k), error=error)
    elif isinstance(data, list | tuple):
        for i, v in enumerate(data):
            check_tree(v, file=file, prefix=f"{prefix}[{i}]", error=error)
    elif isinstance(data, float | int) and not isinstance(data, bool):
        rng = _tree_range(prefix)
        if rng is not GENERIC:
            check_value(prefix or "value", data, rng=rng, file=file, error=error)
        elif not (isinstance(data, int) or math.isfinite(data)) or abs(data) > MAX_GENERIC:
            # an unknown key: finite and not absurdly large, of either sign
            raise error(prefix or "value", data, _GENERIC_TREE.describe(), file=file)
        elif 0 < abs(data) < sys.float_info.min:  # a subnormal: 1e-320 is a typo anywhere
            raise error(prefix or "value", data, "0 or a normal float", file=file)
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


def implausible_reasons(total_usd: Any, wall_clock_days: Any) -> list[str]:
    """Why a priced plan cannot be meant as a plan: it costs or lasts implausibly much.

    Every surface (``compare``, ``tco``, the sweeps, the web page) marks a plan with one of these
    reasons as not feasible, so no absurd total (a run of 136,000 years, $1e15) is reported as
    the answer.

    Parameters
    ----------
    total_usd : float or None
        Total of the plan. [USD]
    wall_clock_days : float or None
        Duration of the run (None for a service). [days]

    Returns
    -------
    list of str
        Empty when the plan is plausible.

    Examples
    --------
    >>> implausible_reasons(2e6, 30.0)
    []
    >>> implausible_reasons(2e15, None)
    ['it would cost $2e+15 (more than $1e+12): check the tokens, GPUs and prices']
    """
    reasons = []
    if isinstance(total_usd, int | float) and not (
        math.isfinite(total_usd) and total_usd <= MAX_TOTAL_USD
    ):
        reasons.append(
            f"it would cost ${total_usd:.3g} (more than ${MAX_TOTAL_USD:g}): "
            "check the tokens, GPUs and prices"
        )
    if isinstance(wall_clock_days, int | float) and not (
        math.isfinite(wall_clock_days) and wall_clock_days <= MAX_RUN_DAYS
    ):
        reasons.append(
            f"it would take {wall_clock_days / 365.25:.3g} years (more than "
            f"{MAX_RUN_DAYS / 365.25:.0f}): add GPUs or train on fewer tokens"
        )
    return reasons


def plausible_mask(total_usd: Any = None, wall_clock_days: Any = None) -> Any:
    """Vectorised :func:`implausible_reasons`: True where a plan is plausible (sweeps).

    Examples
    --------
    >>> plausible_mask([1e6, 2e15], [30.0, 30.0]).tolist()
    [True, False]
    """
    import numpy as np

    ok: Any = True
    if total_usd is not None:
        ok = ok & ~(np.asarray(total_usd, dtype=float) > MAX_TOTAL_USD)
    if wall_clock_days is not None:
        ok = ok & ~(np.asarray(wall_clock_days, dtype=float) > MAX_RUN_DAYS)
    return np.asarray(ok, dtype=bool)


def check_json_depth(raw: bytes | str, *, field: str = "body", limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse a JSON text nested deeper than ``limit`` before it is parsed.

    Brackets inside strings do not count. Parsing (and every recursive walk after it) is then
    safe from Python's recursion limit.

    Raises
    ------
    aitco.errors.InputError
        Naming the depth reached and the limit.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else raw
    depth = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                raise InputError(
                    field, f"more than {limit} nested lists/objects", f"at most {limit} levels"
                )
        elif ch in "]}":
            depth -= 1


def _is_numeric(annotation: Any) -> bool:
    """Whether a field annotation takes a number (``int``, ``float | None``, ``Literal[0, 1]``)."""
    if annotation in (int, float):
        return True
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return any(isinstance(a, int | float) and not isinstance(a, bool) for a in args)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return bool(args) and all(a is type(None) or _is_numeric(a) for a in args)
    return False


class _Boolean:
    """Stand-in for a boolean given to a number field: no number validator accepts it."""

    def __repr__(self) -> str:
        return "true/false"


class StrictNumbers(BaseModel):
    """Pydantic base whose number fields refuse ``true``/``false`` (``gpus: true`` is not 1 GPU).

    Pydantic's lax mode reads a boolean as 0 or 1; a YAML or JSON input that writes ``true``
    where a count belongs is a mistake, not a count. The boolean is swapped for a value no
    number validator accepts, so the error names the field as any other type error does.
    """

    @model_validator(mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        bad = [
            k
            for k, fld in cls.model_fields.items()
            if isinstance(data.get(k), bool) and _is_numeric(fld.annotation)
        ]
        return {**data, **dict.fromkeys(bad, _Boolean())} if bad else data


def _span(rng: Range) -> str:
    unit = f" {rng.unit}" if rng.unit else ""
    return f"{rng.lo:g} to {rng.hi:g}{unit}"


def bounds_markdown() -> str:
    """Return the bounds of every input as the Markdown tables of ``docs/cli.md``.

    Generated from the constants of this module by ``scripts/gen_cli_examples.py``, so the page
    states each bound once and cannot drift from the code.
    """
    groups: dict[Range, list[str]] = {}
    for name, rng in RANGES.items():
        groups.setdefault(rng, []).append(f"`{name}`")
    rows = ["| Field (flag or YAML key) | Range | Why this bound |", "|---|---|---|"]
    rows += [f"| {', '.join(names)} | {_span(r)} | {r.why} |" for r, names in groups.items()]
    for frag, rng in _PATTERNS:
        where = "ending in" if frag.startswith("_") else "containing"
        rows.append(f"| other names {where} `{frag}` | {_span(rng)} | {rng.why} |")
    for prefix, rng in FACTOR_RANGES.items():
        rows.append(f"| catalog factor `{prefix}*` (overlay, `assumptions`) | {_span(rng)} | "
                    f"{rng.why} |")  # fmt: skip
    rows.append(
        f"| any other number | finite, magnitude at most {MAX_GENERIC:g}, not subnormal | "
        "guards against 1e308 and 1e-320 |"
    )
    rows.append(
        f"| any non-zero number with a range above | magnitude at least {MIN_MAGNITUDE:g} | "
        "1e-320 requests/s is a typo |"
    )
    other = [
        ("", "Bound", "Value"),
        ("---", "---", "---"),
        ("files", "a file read whole (scenario, sweep, overlay, profile, config.json, trace)",
         f"at most {MAX_FILE_BYTES / 2**20:g} MiB"),
        ("files", "any input (logs are streamed)",
         "a regular file: a FIFO, device or folder is refused before it is opened for reading"),
        ("files", "an output path", "a regular file or a new path, never an input of the "
         "same command (after links); `--force` does not override this"),
        ("YAML", "aliases in one document", f"at most {MAX_YAML_ALIASES:,}, adding at most "
         f"{MAX_YAML_ALIAS_NODES:,} nodes (counted before expansion); no duplicate keys"),
        ("JSON", "nesting depth of a web request", f"at most {MAX_JSON_DEPTH}"),
        ("sweep", "plans per sweep or `report --sweep`",
         f"at most {DEFAULT_MAX_SWEEP_POINTS:,} unless `--max-points` raises it"),
        ("plans", "a plan still counted as feasible",
         f"costs at most ${MAX_TOTAL_USD:g} and runs at most {MAX_RUN_DAYS:g} days"),
        ("power", "`--power-limit-w`, `power_limit_w`",
         f"{MIN_POWER_LIMIT_FRACTION:.0%} of the part's TDP up to its TDP"),
        ("serving", "replicas (`--disaggregate PxD`, `--autoscale max=`)",
         f"at most {MAX_REPLICAS:,}"),
        ("integers", "an integer anywhere", f"magnitude at most {MAX_INT:,}"),
    ]  # fmt: skip
    table2 = [f"| {a} | {b} | {c} |" for a, b, c in other]
    return "\n".join(rows) + "\n\n" + "\n".join(table2)
