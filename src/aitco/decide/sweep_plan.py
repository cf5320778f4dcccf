"""Sweep specs and plans: the keys swept, their values coded for the evaluators, the metrics.

:class:`SweepSpec` is what a user writes (``kind``, base ``workload``/``option`` values, a
``grid`` or a ``sample``, constraints, objective, Pareto pair); :func:`build_plan` resolves it
against the catalog into a :class:`SweepPlan`: one :class:`Dimension` per key (labels for the
table, integer codes for the evaluator) and the evaluator that prices the rows (with the cost
room's factors, :mod:`aitco.cost`). :mod:`aitco.decide.sweep` evaluates a plan chunk by chunk.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aitco.catalog.loader import Catalog
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import offer_system
from aitco.decide import evaluators as ev
from aitco.errors import InputError, UnknownIdError
from aitco.fileio import load_yaml
from aitco.limits import DEFAULT_MAX_SWEEP_POINTS, StrictNumbers, check_tree, check_value
from aitco.perf import service
from aitco.units import DTYPES

#: Configurations evaluated per chunk (a few tens of MB of float64 temporaries).
DEFAULT_CHUNK_SIZE = 1 << 18
#: How long to wait for a Dask scheduler given with ``--scheduler`` before failing. [s]
SCHEDULER_TIMEOUT_S = 5.0

#: Constraint name -> (metric, sense). Limits are upper bounds on the metric.
CONSTRAINT_METRICS: dict[str, str] = {
    "max_wall_clock_h": "wall_clock_h",
    "max_total_usd": "total_usd",
    "max_gpus": "total_gpus",
    "max_ttft_s": "ttft_s",
    "max_tpot_s": "tpot_s",
    "max_e2e_latency_s": "e2e_latency_s",
    "max_usd_per_million_output_tokens": "usd_per_million_output_tokens",
    "max_usd_per_h": "usd_per_h",
    "max_memory_per_gpu_gb": "memory_per_gpu_gb",
}


class Constraints(StrictNumbers):
    """Upper bounds a plan must meet (``None`` = unconstrained).

    Attributes
    ----------
    max_wall_clock_h : float
        Deadline. [h]
    max_total_usd : float
        Budget (training run). [USD]
    max_gpus : int
        Accelerators in use (all replicas). [count]
    max_ttft_s, max_tpot_s, max_e2e_latency_s : float
        Serving latency objectives. [s]
    max_usd_per_million_output_tokens, max_usd_per_h : float
        Serving price caps (per million output tokens [USD/Mtok]; per hour [USD/h]).
    allowed_pricing : list of str
        Pricing modes allowed (e.g. ``[on_demand, reserved_1y]``).
    allowed_regions : list of str
        Regions allowed.
    allowed_providers : list of str
        Cloud providers whose offers may price the plan.
    """

    model_config = ConfigDict(extra="forbid")

    max_wall_clock_h: float | None = Field(default=None, gt=0)
    max_total_usd: float | None = Field(default=None, gt=0)
    max_gpus: int | None = Field(default=None, ge=1)
    max_ttft_s: float | None = Field(default=None, gt=0)
    max_tpot_s: float | None = Field(default=None, gt=0)
    max_e2e_latency_s: float | None = Field(default=None, gt=0)
    max_usd_per_million_output_tokens: float | None = Field(default=None, gt=0)
    max_usd_per_h: float | None = Field(default=None, gt=0)
    max_memory_per_gpu_gb: float | None = Field(default=None, gt=0)
    allowed_pricing: list[str] | None = None
    allowed_regions: list[str] | None = None
    allowed_providers: list[str] | None = None

    def bounds(self) -> dict[str, tuple[str, float]]:
        """Active numeric bounds: ``{constraint: (metric, limit)}``."""
        out = {}
        for name, metric in CONSTRAINT_METRICS.items():
            lim = getattr(self, name)
            if lim is not None:
                out[name] = (metric, float(lim))
        return out


class SweepSpec(StrictNumbers):
    """A sweep: a base workload and option, the grid, the objective and the reductions.

    Attributes
    ----------
    kind : {"training", "serving"}
        Which evaluator prices the configurations.
    evaluator : {"engine", "fast"}
        ``engine`` prices configurations with the engines' vectorised models (training:
        :func:`aitco.perf.training.evaluate_plans`; serving: the inference engine's iteration
        model and continuous batching), ``fast`` with the compact roofline models of
        :class:`aitco.decide.evaluators.TrainingEvaluator` / ``ServingEvaluator``.
    workload : dict
        Base workload fields (``model``, ``tokens``, ``seq_len``, ``global_batch``,
        ``precision``, ``plan``; or ``input_tokens``, ``output_tokens``, ``qps`` and ``months``,
        the service period ``total_usd`` covers, for serving).
    option : dict
        Base hardware option fields (``hardware``, ``gpus``, ``pricing``, ``region``).
    grid : dict of str to list
        Swept keys (dotted, e.g. ``option.gpus``, or a unique short name such as ``gpus``, ``tp``)
        and their values.
    sample : int, optional
        Evaluate this many configurations drawn uniformly (with replacement) from the grid
        instead of the full product.
    seed : int
        Seed of the random sample.
    objective : str
        Metric minimised by top-K (prefix ``-`` to maximise).
    top_k : int
        Rows kept.
    pareto : list of two str
        Metrics of the Pareto front (both minimised; ``-`` to maximise).
    chunk_size : int
        Configurations per chunk.
    prices : dict
        Price overrides ``{hardware: {pricing_mode: usd_per_gpu_hour}}`` (for ``owned``: the
        capital per accelerator-hour; energy, staff and the other items are priced as compare).
    constraints : Constraints
        Feasibility bounds (see :mod:`aitco.decide.optimize`).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["training", "serving"] = "training"
    evaluator: Literal["engine", "fast"] = "engine"
    name: str = "sweep"
    workload: dict[str, Any] = Field(default_factory=dict)
    option: dict[str, Any] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    sample: int | None = Field(default=None, ge=1)
    seed: int = 0
    objective: str | None = None
    top_k: int = Field(default=10, ge=1, le=10_000)
    pareto: list[str] | None = None
    chunk_size: int = Field(default=DEFAULT_CHUNK_SIZE, ge=1, le=1 << 24)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    constraints: Constraints = Field(default_factory=Constraints)

    @field_validator("pareto")
    @classmethod
    def _two(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and len(v) != 2:
            msg = "pareto needs exactly two metrics"
            raise ValueError(msg)
        return v

    @classmethod
    def from_dict(cls, data: Any, *, file: str | None = None) -> SweepSpec:
        """Validate a mapping (the document or its ``sweep:`` section)."""
        if isinstance(data, dict) and isinstance(data.get("sweep"), dict):
            data = data["sweep"]
        if not isinstance(data, dict):
            raise InputError("sweep", type(data).__name__, "a mapping", file=file)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise validation_error(exc, cls, file, "sweep") from exc

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepSpec:
        """Read a sweep YAML file."""
        p = Path(path)
        data = load_yaml(p, field="SWEEP_FILE")
        check_tree(data, file=str(p))  # NaN/inf, negative or absurd numbers stop at the edge
        return cls.from_dict(data, file=str(p))


def validation_error(
    exc: ValidationError, model: type[BaseModel], file: str | None, what: str
) -> InputError:
    """Turn a pydantic error into an InputError; unknown keys suggest the closest valid ones."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    hint = None
    if err["type"] == "extra_forbidden" and loc:
        owner: Any = model
        for part in loc[:-1]:
            fld = getattr(owner, "model_fields", {}).get(part)
            ann = getattr(fld, "annotation", None) if fld is not None else None
            owner = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
            if owner is None:
                break
        valid = list(getattr(owner, "model_fields", {})) if owner is not None else []
        close = difflib.get_close_matches(loc[-1], valid, n=3, cutoff=0.5)
        if close:
            hint = f"did you mean {', '.join(repr(c) for c in close)}?"
        elif valid:
            hint = f"valid keys: {', '.join(valid)}"
    expected = "a known key" if err["type"] == "extra_forbidden" else err["msg"]
    return InputError(".".join(loc) or what, err.get("input"), expected, file=file, hint=hint)


# ----------------------------------------------------------------------------- key handling
def _flatten(d: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def _base_only(
    spec: SweepSpec,
    base: dict[str, Any],
    key: str,
    *,
    noun: str,
    hint: str,
    what: str,
    default: str | None = None,
) -> str | None:
    """Take a base-only plan value ``workload.plan.<key>`` out of the base values.

    One value for the whole sweep: it is not a grid key, and only the engine evaluator of a
    training sweep models it. Returns None when absent (or equal to ``default``); the value
    itself is checked by the evaluator (one check).
    """
    for k in spec.grid:
        if k.rsplit(".", 1)[-1] == key:
            raise InputError(
                f"grid.{k}", spec.grid[k],
                f"workload.plan.{key} as a base value (one {noun} per sweep), not a grid key",
                hint=hint,
            )  # fmt: skip
    v = base.pop(f"workload.plan.{key}", None)
    if v is None or v == default:
        return None
    if spec.kind != "training" or spec.evaluator != "engine":
        raise InputError(
            f"workload.plan.{key}", v,
            f"a training sweep with evaluator: engine (the fast screen does not model {what})",
        )  # fmt: skip
    return str(v)


def _base_offload(spec: SweepSpec, base: dict[str, Any]) -> str:
    """ZeRO-Offload mode of the whole sweep (``workload.plan.offload``; ``none`` when absent)."""
    mode = _base_only(
        spec, base, "offload", noun="mode", hint="run one sweep per offload mode",
        what="offload", default="none",
    )  # fmt: skip
    return mode or "none"


def _base_stack(spec: SweepSpec, base: dict[str, Any]) -> dict[str, str]:
    """Stack options given for the whole sweep, as ``offload``.

    The keys are ``workload.plan.elementwise_kernels``, ``loss_kernel``, ``host_loop`` and
    ``gemm_level``.
    """
    out = {}
    for key in ev.TRAINING_STACK_OPTIONS:
        v = _base_only(
            spec, base, key, noun="choice", hint="run one sweep per kernel stack", what="it"
        )
        if v is not None:
            out[key] = v
    return out


def canonical_key(key: str, valid: Iterable[str], *, field_name: str = "grid") -> str:
    """Resolve a dotted or short key to a canonical one; unknown keys suggest the closest.

    ``gpus`` -> ``option.gpus``, ``tp`` or ``plan.tp`` -> ``workload.plan.tp``.
    """
    valid = list(valid)
    if key in valid:
        return key
    matches = [v for v in valid if v.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    short = {v.rsplit(".", 1)[-1]: v for v in valid}
    close = difflib.get_close_matches(key, valid, n=3, cutoff=0.5) or [
        short[s]
        for s in difflib.get_close_matches(key.rsplit(".", 1)[-1], list(short), n=3, cutoff=0.5)
    ]
    hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else None
    raise InputError(
        f"{field_name}.{key}", key, f"a sweep key (valid: {', '.join(valid)})", hint=hint
    )


@dataclass
class Dimension:
    """One key of the sweep: its labels (for the table) and codes (for the evaluator)."""

    key: str
    labels: list[Any]
    codes: np.ndarray

    @property
    def size(self) -> int:
        """Number of values."""
        return len(self.labels)

    @property
    def short(self) -> str:
        """Column name in the tidy table (last dotted component)."""
        return self.key.rsplit(".", 1)[-1]


@dataclass
class SweepPlan:
    """Everything a worker needs to evaluate chunks (picklable: arrays and plain objects)."""

    dims: list[Dimension]
    constants: dict[str, np.ndarray]
    evaluator: Any
    n_configs: int
    n_evaluated: int
    chunk_size: int
    sample: int | None
    seed: int
    objective: str
    pareto: tuple[str, str]
    top_k: int
    bounds: dict[str, tuple[str, float]]
    parquet_dir: str | None = None
    strides: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_chunks(self) -> int:
        """Chunks to evaluate."""
        return max(1, math.ceil(self.n_evaluated / self.chunk_size))

    def swept(self) -> list[Dimension]:
        """Dimensions with more than one value (the table's configuration columns)."""
        return [d for d in self.dims if d.size > 1]


def metric_sense(metric: str) -> tuple[str, float]:
    """Return a metric's name and sense: ``-x`` is maximised (sense -1), ``x`` minimised (1)."""
    return (metric[1:], -1.0) if metric.startswith("-") else (metric, 1.0)


#: Keys a spec's base values may carry that are not sweep dimensions.
EXTRA_BASE_KEYS = frozenset(
    {
        "workload.tokens",
        "workload.qps",
        "workload.months",
        "workload.name",
        "workload.kind",
        "option.name",
        "option.provider",
    }
)


def _spec_keys(spec: SweepSpec) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Return the keys of the spec's kind with defaults, and its evaluator's optional keys.

    The service fields of ``aitco infer`` (engine serving sweeps) and the ``--cp/--ep`` plan
    fields (engine training sweeps) are added only when the spec names them.
    """
    keys = dict(ev.TRAINING_KEYS if spec.kind == "training" else ev.SERVING_KEYS)
    optional: dict[str, list[Any]] = {}
    if spec.kind == "serving" and spec.evaluator == "engine":
        optional = {k: [x] for k, x in ev.SERVICE_KEYS.items()}
    elif spec.kind == "training" and spec.evaluator == "engine":
        optional = {k: list(x) for k, x in ev.TRAINING_ENGINE_PLAN_KEYS.items()}
    return keys, optional


def _spec_values(
    spec: SweepSpec, keys: dict[str, list[Any]], valid: dict[str, list[Any]], base: dict[str, Any]
) -> dict[str, list[Any]]:
    """Return the values of every key: base values, then the grid, then the defaults."""
    values: dict[str, list[Any]] = {}
    for k, v in base.items():
        if k not in EXTRA_BASE_KEYS:
            values[canonical_key(k, valid, field_name="base")] = [v]
    for k, v in spec.grid.items():
        ck = canonical_key(k, valid)
        vals = v if isinstance(v, list) else [v]
        if len(vals) == 0:
            raise InputError(f"grid.{k}", v, "a non-empty list of values (the grid would be empty)")
        values[ck] = vals
    for k, default in keys.items():
        if k in values:
            continue
        if not default:
            raise InputError(
                k, None, "a base value (in workload/option) or a grid entry",
                hint=f"add {k} to the spec",
            )  # fmt: skip
        values[k] = list(default)
    _constrain_values(values, spec.constraints)
    return values


def _constrain_values(values: dict[str, list[Any]], con: Constraints) -> None:
    """Filter the pricing modes and regions by the constraints' allowed lists."""
    if con.allowed_pricing is not None:
        values["option.pricing"] = [p for p in values["option.pricing"] if p in con.allowed_pricing]
        if not values["option.pricing"]:
            raise InputError(
                "constraints.allowed_pricing",
                con.allowed_pricing,
                "a pricing mode present in the grid",
            )
    if con.allowed_regions is not None:
        regs = [r for r in values["option.region"] if r in con.allowed_regions]
        values["option.region"] = regs or list(con.allowed_regions)


def _provider_catalog(catalog: Catalog, con: Constraints) -> Catalog:
    """Return the catalog with the offers of the allowed providers only (all if none named)."""
    if con.allowed_providers is None:
        return catalog
    known = {o.provider for o in catalog.offers.values()}
    for name in con.allowed_providers:
        if name not in known:
            raise UnknownIdError("provider", name, known, field="constraints.allowed_providers")
    allowed = set(con.allowed_providers)
    offers = {k: o for k, o in catalog.offers.items() if o.provider in allowed}
    return Catalog(**{**catalog.__dict__, "offers": offers})


def _default_evaluator(
    spec: SweepSpec,
    catalog: Catalog,
    hw_ids: list[str],
    tables: tuple[ev.HardwareTable, ev.ModelTable, list[Any]],
    stack: dict[str, str],
) -> Any:
    """Return the evaluator of the spec's kind and ``evaluator`` choice, priced by the cost room.

    Every evaluator bills through the items of :mod:`aitco.cost.tco` (one cost model), with the
    catalog's factors: a missing one is an error naming it (no silent default).
    """
    hw_table, mt, models = tables
    pairs = [catalog.hardware(x, field="option.hardware") for x in hw_ids]
    cost: dict[str, Any] = {
        "accelerators": [a for a, _ in pairs],
        "systems": [s for _, s in pairs],
        "factors": CostFactors(catalog),
        "offer_systems": [
            None if hw_ids[h] in catalog.systems else offer_system(catalog, *pairs[h], o.id)
            for h, lst in enumerate(hw_table.offers)
            for o in lst
        ],
    }
    engine = spec.evaluator != "fast"
    if spec.kind == "training":
        tokens = spec.workload.get("tokens")
        if tokens is None or float(tokens) <= 0:
            raise InputError("workload.tokens", tokens, "tokens to train on (> 0)")
        train: dict[str, Any] = {
            "hw": hw_table,
            "models": mt,
            "tokens": float(tokens),
            "model_archs": models,
        }
        if not engine:
            return ev.TrainingEvaluator(**train, **cost)
        offload = stack.pop("offload")
        return ev.EngineTrainingEvaluator(**train, offload=offload, stack=stack, **cost)
    qps = spec.workload.get("qps")
    months = spec.workload.get("months", ev.DEFAULT_SERVICE_MONTHS)
    if not isinstance(months, int | float) or isinstance(months, bool) or months <= 0:
        raise InputError("workload.months", months, "a service period in months (> 0)")
    serve: dict[str, Any] = {
        "hw": hw_table,
        "models": mt,
        "qps": None if qps is None else float(qps),
    }
    if not engine:
        return ev.ServingEvaluator(**serve, model_archs=models, months=float(months), **cost)
    return ev.EngineServingEvaluator(**serve, model_archs=models, months=float(months), **cost)


def _metrics(
    spec: SweepSpec, evaluator: Any
) -> tuple[str, list[str], dict[str, tuple[str, float]]]:
    """Return the objective, the Pareto pair and the bounds, checked against the metrics."""
    training = spec.kind == "training"
    objective = spec.objective or ("total_usd" if training else "usd_per_million_output_tokens")
    pareto = spec.pareto or (
        ["total_usd", "wall_clock_h"] if training else ["usd_per_million_output_tokens", "ttft_s"]
    )
    valid_metrics = set(evaluator.metrics)
    for name, m in [("objective", objective), ("pareto", pareto[0]), ("pareto", pareto[1])]:
        if metric_sense(m)[0] not in valid_metrics:
            close = difflib.get_close_matches(metric_sense(m)[0], sorted(valid_metrics), n=3)
            raise InputError(
                name,
                m,
                f"a metric ({', '.join(sorted(valid_metrics))})",
                hint=f"did you mean {', '.join(map(repr, close))}?" if close else None,
            )
    con = spec.constraints
    bounds = {k: v for k, v in con.bounds().items() if v[0] in valid_metrics}
    ignored = set(con.bounds()) - set(bounds)
    if ignored:
        raise InputError(
            "constraints", sorted(ignored), f"constraints that apply to a {spec.kind} sweep"
        )
    return objective, pareto, bounds


def _strides(dims: list[Dimension]) -> tuple[np.ndarray, int]:
    """Mixed-radix strides of the dimensions and the number of configurations."""
    sizes = np.array([d.size for d in dims], dtype=np.int64)
    strides = np.ones(len(dims), dtype=np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    n_configs = int(np.prod(sizes.astype(object)))
    if n_configs == 0:
        raise InputError("grid", None, "a non-empty grid")
    if n_configs >= 2**62:
        raise InputError("grid", n_configs, "fewer than 2**62 configurations; use sample:")
    return strides, n_configs


def check_point_count(n_points: int, max_points: int = DEFAULT_MAX_SWEEP_POINTS) -> None:
    """Refuse a sweep of more than ``max_points`` plans before any is evaluated.

    The engine evaluators price about 5x10^4 plans per second on one busy core, so the default
    bound (:data:`aitco.limits.DEFAULT_MAX_SWEEP_POINTS`) is a run of under a minute; a larger
    sweep is allowed with ``--max-points`` (it streams with a progress bar) or ``sample:``.

    Raises
    ------
    InputError
        Stating the number of plans and the bound.
    """
    if n_points > max_points:
        raise InputError(
            "grid",
            f"{n_points:,} configurations",
            f"at most {max_points:,} plans per sweep",
            hint="use sample: N, narrow the grid, or raise the bound with --max-points",
        )


def build_plan(
    spec: SweepSpec,
    catalog: Catalog,
    *,
    parquet_dir: str | None = None,
    evaluator: Any | None = None,
    max_points: int = DEFAULT_MAX_SWEEP_POINTS,
) -> SweepPlan:
    """Resolve a :class:`SweepSpec` against the catalog into a :class:`SweepPlan`.

    ``max_points`` bounds the plans evaluated (:func:`check_point_count`).

    Raises
    ------
    InputError
        Unknown keys (with did-you-mean), empty value lists, unknown ids, missing base values,
        out-of-range values, more plans than ``max_points``.
    """
    keys, optional = _spec_keys(spec)
    base = {**_flatten(spec.workload, "workload"), **_flatten(spec.option, "option")}
    # base-only plan values (one per sweep) leave ``base`` before the keys are resolved
    stack = {"offload": _base_offload(spec, base), **_base_stack(spec, base)}
    values = _spec_values(spec, keys, {**keys, **optional}, base)
    hw_ids = [str(x) for x in values["option.hardware"]]
    regions: list[str | None] = [None if r is None else str(r) for r in values["option.region"]]
    provider = spec.option.get("provider")
    hw_table = ev.hardware_table(
        _provider_catalog(catalog, spec.constraints), hw_ids, regions,
        prices=spec.prices or None, provider=None if provider is None else str(provider),
    )  # fmt: skip
    model_ids = [str(x) for x in values["workload.model"]]
    models = [catalog.resolve_model(m, field="workload.model") for m in model_ids]
    if evaluator is None:
        tables = (hw_table, ev.model_table(models), models)
        evaluator = _default_evaluator(spec, catalog, hw_ids, tables, stack)
    dims = [
        _dimension(k, values[k], hw_ids, model_ids, regions)
        for k in [*keys, *(k for k in optional if k in values)]
    ]
    if hasattr(evaluator, "text_values"):
        evaluator.text_values = {k: list(values[k]) for k in ev.SERVICE_TEXT_KEYS if k in values}
    strides, n_configs = _strides(dims)
    check_point_count(spec.sample if spec.sample is not None else n_configs, max_points)
    objective, pareto, bounds = _metrics(spec, evaluator)
    return SweepPlan(
        dims=dims,
        constants={},
        evaluator=evaluator,
        n_configs=n_configs,
        n_evaluated=spec.sample if spec.sample is not None else n_configs,
        chunk_size=spec.chunk_size,
        sample=spec.sample,
        seed=spec.seed,
        objective=objective,
        pareto=(pareto[0], pareto[1]),
        top_k=spec.top_k,
        bounds=bounds,
        parquet_dir=parquet_dir,
        strides=strides,
    )


#: Text keys coded by their index in a fixed list of choices (key -> choices).
CHOICE_KEYS: dict[str, tuple[str, ...]] = {
    "option.pricing": ev.PRICING_MODES,
    "workload.plan.recompute": ev.RECOMPUTE,
    "workload.plan.pipeline_schedule": ev.PIPELINE_SCHEDULES,
}
#: Numeric keys that must be integers >= 1.
INTEGER_KEYS = frozenset(
    {
        "workload.scheduler_steps",
        "workload.ep",
        "workload.max_batched_tokens",
        "workload.time_slice",
        "workload.plan.cp",
        "workload.plan.ep",
    }
)
#: Numeric keys whose ``None`` stands for a number (max_batched_tokens: engine default, coded
#: -1; time_slice: the whole GPU, 1).
NONE_AS_NUMBER: dict[str, int] = {"workload.max_batched_tokens": -1, "workload.time_slice": 1}


def _dimension(
    key: str, vals: list[Any], hw_ids: list[str], model_ids: list[str], regions: list[str | None]
) -> Dimension:
    """Codes of one key's values (indices for categorical keys, numbers otherwise)."""
    if key == "option.hardware":
        return Dimension(key, hw_ids, np.arange(len(hw_ids)))
    if key == "workload.model":
        return Dimension(key, model_ids, np.arange(len(model_ids)))
    if key == "option.region":
        return Dimension(key, ["any" if r is None else r for r in regions], np.arange(len(regions)))
    if key in ("workload.precision", "workload.kv_precision"):
        return _dtype_dimension(key, vals)
    if key in CHOICE_KEYS:
        return _choice_dimension(key, vals, CHOICE_KEYS[key])
    if key in ev.SERVICE_TEXT_KEYS:
        for v in vals:
            if v is not None:
                _check_service_text(key, v)
        labels = ["none" if v is None else str(v) for v in vals]
        return Dimension(
            key, labels, np.array([-1 if v is None else j for j, v in enumerate(vals)])
        )
    if key == "workload.plan.ep_comm_overlap":
        for v in vals:
            if not isinstance(v, bool):
                raise InputError(key, v, "true or false")
        return Dimension(key, list(vals), np.array([int(v) for v in vals]))
    if key in NONE_AS_NUMBER:
        vals = [NONE_AS_NUMBER[key] if v is None else v for v in vals]
    out = [_number(key, v) for v in vals]
    return Dimension(key, out, np.asarray(out, dtype=float))


def _dtype_dimension(key: str, vals: list[Any]) -> Dimension:
    """Codes of data types (a KV precision of None: the weights', coded -1)."""
    codes = []
    for v in vals:
        if v is None and key == "workload.kv_precision":
            codes.append(-1)
            continue
        if v not in DTYPES:
            raise InputError(key, v, f"one of {', '.join(DTYPES)}")
        codes.append(DTYPES.index(v))
    return Dimension(key, ["same" if v is None else v for v in vals], np.array(codes))


def _choice_dimension(key: str, vals: list[Any], choices: tuple[str, ...]) -> Dimension:
    """Codes of text values from a fixed list of choices (their index in it)."""
    for v in vals:
        if v not in choices:
            raise InputError(key, v, f"one of {', '.join(choices)}")
    return Dimension(key, list(vals), np.array([choices.index(v) for v in vals]))


def _number(key: str, v: Any) -> int | float:
    """Return a numeric key's value, checked against the key's range (and limits.py's)."""
    if isinstance(v, bool):  # float(True) is 1.0: a boolean is not a count
        raise InputError(key, v, "a number, not true/false")
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(key, v, "a number") from exc
    check_value(key, x)  # the range of the flag of the same name (limits.py)
    expected = None
    if key == "workload.plan.zero":
        expected = None if x in (0, 1, 2, 3) else "a ZeRO stage 0, 1, 2 or 3"
    elif key == "workload.prefix_cache_hit_rate":
        expected = None if 0.0 <= x < 1.0 else "a fraction in [0, 1)"
    elif key == "workload.max_batched_tokens" and x == -1:
        expected = None
    elif key in INTEGER_KEYS:
        ok = math.isfinite(x) and x >= 1 and x == int(x)
        expected = None if ok else "an integer >= 1"
    elif not math.isfinite(x) or x <= 0:
        expected = "a finite number > 0"
    if expected is not None:
        raise InputError(key, v, expected)
    return int(x) if x == int(x) else x


def _check_service_text(key: str, v: Any) -> None:
    """Reject a bad text service value up front (the same parsers ``aitco infer`` uses)."""
    text = str(v)
    if key == "workload.disaggregate":
        service.parse_layout(text, key)
    elif key == "workload.autoscale":
        service.parse_autoscale(text)
    elif key == "workload.load_profile":
        if text != "diurnal":
            service.read_load_profile(text, key)
    elif key == "workload.mig" and not re.fullmatch(service.MIG_PROFILE_PATTERN, text.lower()):
        raise InputError(key, text, "a MIG profile like 1g.10gb, 2g.20gb, 3g.40gb")
