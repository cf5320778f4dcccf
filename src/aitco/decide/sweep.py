"""Sweeps: a grid or a random sample over dotted scenario keys, evaluated chunk by chunk.

A sweep is the product of the values of each swept key (``option.hardware``, ``option.gpus``,
``workload.precision``, ``option.pricing``, ``workload.plan.tp``...). Configuration *i* of the
product is decoded from *i* in mixed radix, so a chunk of configurations is just an index range:
its keys are gathered with integer arithmetic and numpy indexing and evaluated by a vectorised
:class:`~aitco.decide.evaluators.Evaluator` in one call -- no Python loop per configuration.

Memory stays bounded whatever the size: each chunk is reduced at once to its top-K rows, its
Pareto front, the closest infeasible plan and counters, and these partial results are merged
(optionally every row is also written to Parquet, one part file per chunk). The merge is
associative with deterministic tie-breaking (by configuration index), so the local and the Dask
backends return identical top-K and Pareto fronts.
"""

from __future__ import annotations

import difflib
import math
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aitco.catalog.loader import Catalog
from aitco.cost.factors import CostFactors
from aitco.cost.pricing import offer_system
from aitco.decide import evaluators as ev
from aitco.errors import EnvironmentFailure, InputError, UnknownIdError
from aitco.limits import check_file_size, check_tree
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


class Constraints(BaseModel):
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


class SweepSpec(BaseModel):
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
        if not p.is_file():
            raise InputError("SWEEP_FILE", str(path), "an existing sweep YAML file")
        check_file_size(p, field="SWEEP_FILE")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise InputError("yaml", str(path), f"valid YAML ({exc})", file=str(path)) from exc
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


def _sense(metric: str) -> tuple[str, float]:
    return (metric[1:], -1.0) if metric.startswith("-") else (metric, 1.0)


def build_plan(
    spec: SweepSpec,
    catalog: Catalog,
    *,
    parquet_dir: str | None = None,
    evaluator: Any | None = None,
) -> SweepPlan:
    """Resolve a :class:`SweepSpec` against the catalog into a :class:`SweepPlan`.

    Raises
    ------
    InputError
        Unknown keys (with did-you-mean), empty value lists, unknown ids, missing base values.
    """
    keys = dict(ev.TRAINING_KEYS if spec.kind == "training" else ev.SERVING_KEYS)
    # the service fields of aitco infer: engine serving sweeps only, added when named
    optional: dict[str, list[Any]] = {}
    if spec.kind == "serving" and spec.evaluator == "engine":
        optional = {k: [x] for k, x in ev.SERVICE_KEYS.items()}
    elif spec.kind == "training" and spec.evaluator == "engine":
        optional = {k: list(x) for k, x in ev.TRAINING_ENGINE_PLAN_KEYS.items()}
    valid = {**keys, **optional}
    base = {**_flatten(spec.workload, "workload"), **_flatten(spec.option, "option")}
    extra_base = {
        "workload.tokens",
        "workload.qps",
        "workload.months",
        "workload.name",
        "workload.kind",
        "option.name",
        "option.provider",
    }
    offload = _base_offload(spec, base)
    stack = _base_stack(spec, base)
    values: dict[str, list[Any]] = {}
    for k, v in base.items():
        if k in extra_base:
            continue
        ck = canonical_key(k, valid, field_name="base")
        values[ck] = [v]
    grid: dict[str, list[Any]] = {}
    for k, v in spec.grid.items():
        ck = canonical_key(k, valid)
        if not isinstance(v, list):
            v = [v]
        if len(v) == 0:
            raise InputError(f"grid.{k}", v, "a non-empty list of values (the grid would be empty)")
        grid[ck] = v
    values.update(grid)
    for k, default in keys.items():
        if k not in values:
            if not default:
                raise InputError(
                    k,
                    None,
                    "a base value (in workload/option) or a grid entry",
                    hint=f"add {k} to the spec",
                )
            values[k] = list(default)
    # constraints that filter values
    con = spec.constraints
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
    # lookup tables
    hw_ids = [str(x) for x in values["option.hardware"]]
    regions: list[str | None] = [None if r is None else str(r) for r in values["option.region"]]
    cat = catalog
    if con.allowed_providers is not None:
        known = {o.provider for o in catalog.offers.values()}
        for name in con.allowed_providers:
            if name not in known:
                raise UnknownIdError("provider", name, known, field="constraints.allowed_providers")
        allowed = set(con.allowed_providers)
        cat = Catalog(
            **{
                **catalog.__dict__,
                "offers": {k: o for k, o in catalog.offers.items() if o.provider in allowed},
            }
        )
    provider = spec.option.get("provider")
    hw_table = ev.hardware_table(
        cat,
        hw_ids,
        regions,
        prices=spec.prices or None,
        provider=None if provider is None else str(provider),
    )
    model_ids = [str(x) for x in values["workload.model"]]
    models = [catalog.resolve_model(m, field="workload.model") for m in model_ids]
    mt = ev.model_table(models)
    if evaluator is None:
        pairs = [catalog.hardware(x, field="option.hardware") for x in hw_ids]
        # every evaluator bills through compare's item functions (one cost model)
        cost: dict[str, Any] = {
            "accelerators": [a for a, _ in pairs],
            "systems": [s for _, s in pairs],
            # a catalog factor; a missing one is an error naming it (no silent default)
            "factors": CostFactors(catalog),
            "offer_systems": [
                None
                if hw_ids[h] in catalog.systems
                else offer_system(catalog, pairs[h][0], pairs[h][1], o.id)
                for h, lst in enumerate(hw_table.offers)
                for o in lst
            ],
        }
        if spec.kind == "training":
            tokens = spec.workload.get("tokens")
            if tokens is None or float(tokens) <= 0:
                raise InputError("workload.tokens", tokens, "tokens to train on (> 0)")
            if spec.evaluator == "fast":
                evaluator = ev.TrainingEvaluator(
                    hw=hw_table, models=mt, tokens=float(tokens), model_archs=models, **cost
                )
            else:
                evaluator = ev.EngineTrainingEvaluator(
                    hw=hw_table, models=mt, tokens=float(tokens), model_archs=models,
                    offload=offload, stack=stack, **cost,
                )  # fmt: skip
        else:
            qps = spec.workload.get("qps")
            q = None if qps is None else float(qps)
            months = spec.workload.get("months", ev.DEFAULT_SERVICE_MONTHS)
            if not isinstance(months, int | float) or isinstance(months, bool) or months <= 0:
                raise InputError("workload.months", months, "a service period in months (> 0)")
            if spec.evaluator == "fast":
                evaluator = ev.ServingEvaluator(
                    hw=hw_table, models=mt, model_archs=models, qps=q, months=float(months), **cost
                )
            else:
                evaluator = ev.EngineServingEvaluator(
                    hw=hw_table,
                    models=mt,
                    model_archs=models,
                    qps=q,
                    months=float(months),
                    **cost,
                )
    dims = []
    for k in [*keys, *(k for k in optional if k in values)]:
        dims.append(_dimension(k, values[k], hw_ids, model_ids, regions))
    if hasattr(evaluator, "text_values"):
        evaluator.text_values = {k: list(values[k]) for k in ev.SERVICE_TEXT_KEYS if k in values}
    sizes = np.array([d.size for d in dims], dtype=np.int64)
    strides = np.ones(len(dims), dtype=np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * sizes[i + 1]
    n_configs = int(np.prod(sizes.astype(object)))
    if n_configs == 0:
        raise InputError("grid", spec.grid, "a non-empty grid")
    if n_configs >= 2**62:
        raise InputError("grid", n_configs, "fewer than 2**62 configurations; use sample:")
    objective = spec.objective or (
        "total_usd" if spec.kind == "training" else "usd_per_million_output_tokens"
    )
    pareto = spec.pareto or (
        ["total_usd", "wall_clock_h"]
        if spec.kind == "training"
        else ["usd_per_million_output_tokens", "ttft_s"]
    )
    valid_metrics = set(evaluator.metrics)
    for name, m in [("objective", objective), ("pareto", pareto[0]), ("pareto", pareto[1])]:
        if _sense(m)[0] not in valid_metrics:
            close = difflib.get_close_matches(_sense(m)[0], sorted(valid_metrics), n=3)
            raise InputError(
                name,
                m,
                f"a metric ({', '.join(sorted(valid_metrics))})",
                hint=f"did you mean {', '.join(map(repr, close))}?" if close else None,
            )
    bounds = {k: v for k, v in con.bounds().items() if v[0] in valid_metrics}
    ignored = set(con.bounds()) - set(bounds)
    if ignored:
        raise InputError(
            "constraints", sorted(ignored), f"constraints that apply to a {spec.kind} sweep"
        )
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
        codes = []
        for v in vals:
            if v is None and key == "workload.kv_precision":
                codes.append(-1)
                continue
            if v not in DTYPES:
                raise InputError(key, v, f"one of {', '.join(DTYPES)}")
            codes.append(DTYPES.index(v))
        return Dimension(key, ["same" if v is None else v for v in vals], np.array(codes))
    if key == "option.pricing":
        for v in vals:
            if v not in ev.PRICING_MODES:
                raise InputError(key, v, f"one of {', '.join(ev.PRICING_MODES)}")
        return Dimension(key, list(vals), np.array([ev.PRICING_MODES.index(v) for v in vals]))
    if key in ev.SERVICE_TEXT_KEYS:
        for v in vals:
            if v is not None:
                _check_service_text(key, v)
        labels = ["none" if v is None else str(v) for v in vals]
        return Dimension(
            key, labels, np.array([-1 if v is None else j for j, v in enumerate(vals)])
        )
    if key == "workload.max_batched_tokens":
        vals = [-1 if v is None else v for v in vals]
    if key == "workload.time_slice":
        vals = [1 if v is None else v for v in vals]  # none: the whole GPU
    if key == "workload.plan.recompute":
        for v in vals:
            if v not in ev.RECOMPUTE:
                raise InputError(key, v, f"one of {', '.join(ev.RECOMPUTE)}")
        return Dimension(key, list(vals), np.array([ev.RECOMPUTE.index(v) for v in vals]))
    if key == "workload.plan.pipeline_schedule":
        for v in vals:
            if v not in ev.PIPELINE_SCHEDULES:
                raise InputError(key, v, f"one of {', '.join(ev.PIPELINE_SCHEDULES)}")
        sched = np.array([ev.PIPELINE_SCHEDULES.index(v) for v in vals])
        return Dimension(key, list(vals), sched)
    if key == "workload.plan.ep_comm_overlap":
        for v in vals:
            if not isinstance(v, bool):
                raise InputError(key, v, "true or false")
        return Dimension(key, list(vals), np.array([int(v) for v in vals]))
    out = []
    for v in vals:
        try:
            x = float(v)
        except (TypeError, ValueError) as exc:
            raise InputError(key, v, "a number") from exc
        if key == "workload.plan.zero":
            if x not in (0, 1, 2, 3):
                raise InputError(key, v, "a ZeRO stage 0, 1, 2 or 3")
        elif key == "workload.prefix_cache_hit_rate":
            if not 0.0 <= x < 1.0:
                raise InputError(key, v, "a fraction in [0, 1)")
        elif key == "workload.max_batched_tokens" and x == -1:
            pass
        elif key in (
            "workload.scheduler_steps",
            "workload.ep",
            "workload.max_batched_tokens",
            "workload.time_slice",
            "workload.plan.cp",
            "workload.plan.ep",
        ):
            if not (math.isfinite(x) and x >= 1 and x == int(x)):
                raise InputError(key, v, "an integer >= 1")
        elif not math.isfinite(x) or x <= 0:
            raise InputError(key, v, "a finite number > 0")
        out.append(int(x) if x == int(x) else x)
    return Dimension(key, out, np.asarray(out, dtype=float))


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


# ----------------------------------------------------------------------------- chunk reduction
@dataclass
class Partial:
    """Reduced result of one or more chunks (small, mergeable)."""

    top_idx: np.ndarray
    top: dict[str, np.ndarray]
    front_idx: np.ndarray
    front: dict[str, np.ndarray]
    closest_idx: np.ndarray
    closest: dict[str, np.ndarray]
    evaluated: int = 0
    valid: int = 0
    feasible: int = 0
    reasons: dict[int, int] = field(default_factory=dict)
    fails: dict[str, int] = field(default_factory=dict)
    only_fails: dict[str, int] = field(default_factory=dict)
    chunks: int = 0


def chunk_indices(plan: SweepPlan, chunk: int) -> np.ndarray:
    """Return the configuration indices of chunk ``chunk`` (a range, or a seeded random draw)."""
    start = chunk * plan.chunk_size
    stop = min(plan.n_evaluated, start + plan.chunk_size)
    if plan.sample is None:
        return np.arange(start, stop, dtype=np.int64)
    rng = np.random.default_rng([plan.seed, chunk])
    return rng.integers(0, plan.n_configs, size=stop - start, dtype=np.int64)


def decode(plan: SweepPlan, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Per-key value codes of configurations ``idx`` (mixed-radix digits -> codes)."""
    dg = _range_digits(plan, idx) if _is_range(idx) else None
    out = {}
    for d, stride in zip(plan.dims, plan.strides, strict=True):
        if d.size == 1:
            out[d.key] = d.codes[:1]  # constant: broadcast by the evaluator
        elif dg is not None:
            out[d.key] = d.codes[dg[d.key]]
        else:
            out[d.key] = d.codes[(idx // stride) % d.size]
    return out


def _is_range(idx: np.ndarray) -> bool:
    """Whether ``idx`` is a contiguous ascending range (a grid chunk)."""
    return idx.size > 1 and int(idx[-1]) - int(idx[0]) == idx.size - 1 and bool(idx[1] > idx[0])


def _range_digits(plan: SweepPlan, idx: np.ndarray) -> dict[str, np.ndarray]:
    r"""Digits of a contiguous index range built with repeat/tile (no integer division).

    Digit *k* of index *i* is :math:`\lfloor i / s_k \rfloor \bmod z_k`; over a contiguous
    range it is a run-length sequence: runs of length :math:`s_k` (the first one cut by the
    start offset) whose values cycle through :math:`0..z_k-1`.
    """
    start, n = int(idx[0]), int(idx.size)
    out = {}
    for d, stride in zip(plan.dims, plan.strides, strict=True):
        if d.size == 1:
            continue
        s, z = int(stride), d.size
        first = start // s
        n_runs = (start % s + n + s - 1) // s
        vals = (first + np.arange(n_runs)) % z
        lengths = np.full(n_runs, s, dtype=np.int64)
        lengths[0] = s - start % s
        total = int(lengths.sum())
        if total > n:
            lengths[-1] -= total - n
        out[d.key] = np.repeat(vals, lengths)
    return out


def evaluate_all(plan: SweepPlan, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Evaluate configurations ``idx`` and return full-length arrays (NaN where not evaluated).

    For inspection and tests; the sweep itself keeps the evaluator's compressed ``rows``.
    """
    res = dict(plan.evaluator.evaluate(decode(plan, idx)))
    reason = np.asarray(res.pop("reason"))
    rows = res.pop("rows", None)
    out: dict[str, np.ndarray] = {"reason": reason}
    for k, v in res.items():
        if rows is None:
            out[k] = np.broadcast_to(np.asarray(v, dtype=float), idx.shape).copy()
        else:
            full = np.full(idx.shape, np.nan)
            full[rows] = v
            out[k] = full
    return out


def digits(plan: SweepPlan, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Per-key value positions of configurations ``idx``."""
    if _is_range(idx):
        rd = _range_digits(plan, idx)
        return {d.key: rd.get(d.key, np.zeros(idx.shape, dtype=np.int64)) for d in plan.dims}
    return {d.key: (idx // s) % d.size for d, s in zip(plan.dims, plan.strides, strict=True)}


def _order(keys: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.lexsort((idx, keys))


def pareto_mask(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Return the positions of the Pareto-optimal points, both coordinates minimised.

    Sort by (x, y, idx) and keep each point whose y is strictly below every earlier y; exact
    duplicates keep the lowest configuration index, so the result is deterministic.
    """
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((idx, y, x))
    ys = y[order]
    prev_min = np.minimum.accumulate(np.concatenate([[np.inf], ys[:-1]]))
    return order[ys < prev_min]


def _take(d: dict[str, np.ndarray], sel: np.ndarray) -> dict[str, np.ndarray]:
    return {k: np.asarray(v)[sel] for k, v in d.items()}


def _cat(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if not a:
        return dict(b)
    if not b:
        return dict(a)
    return {k: np.concatenate([a[k], b[k]]) for k in a}


def evaluate_chunk(plan: SweepPlan, chunk: int) -> Partial:
    """Evaluate one chunk and reduce it to a :class:`Partial`.

    The evaluator may return ``rows`` (positions in the chunk of the configurations it
    evaluated, all the others being invalid); the metrics then have one value per row.
    """
    all_idx = chunk_indices(plan, chunk)
    res = dict(plan.evaluator.evaluate(decode(plan, all_idx)))
    reason = np.asarray(res.pop("reason"))
    rows = res.pop("rows", None)
    if rows is None:
        rows = np.arange(all_idx.size)
    idx = all_idx[rows]
    metrics = {k: np.broadcast_to(np.asarray(v, dtype=float), idx.shape) for k, v in res.items()}
    if plan.parquet_dir is not None:
        _write_part(plan, chunk, all_idx, rows, metrics, reason)
    reasons = {bit: int(np.count_nonzero(reason & bit)) for bit in ev.REASONS}
    valid = reason[rows] == 0
    fails: dict[str, int] = {}
    only: dict[str, int] = {}
    feasible = valid.copy()
    violation = np.zeros(idx.shape)
    if plan.bounds:
        fail_mat = []
        for metric, lim in plan.bounds.values():
            f = metrics[metric] > lim
            fail_mat.append(f & valid)
            violation += np.maximum(metrics[metric] / lim - 1.0, 0.0)
            feasible &= ~f
        nfail = np.sum(fail_mat, axis=0)
        for (name, _), f in zip(plan.bounds.items(), fail_mat, strict=True):
            fails[name] = int(np.count_nonzero(f))
            only[name] = int(np.count_nonzero(f & (nfail == 1)))
    obj, sgn = _sense(plan.objective)
    # top-K among feasible
    fi = np.flatnonzero(feasible)
    key = sgn * metrics[obj][fi]
    k = min(plan.top_k, fi.size)
    if fi.size > k:
        part = np.argpartition(key, k - 1)[:k]
        # ties at the K-th value: include all equal keys so the index tie-break is exact
        kth = key[part].max()
        part = np.flatnonzero(key <= kth)
        fi_k = fi[part]
    else:
        fi_k = fi
    top_sel = fi_k[_order(sgn * metrics[obj][fi_k], idx[fi_k])][: plan.top_k]
    # Pareto front among feasible
    (xm, xs), (ym, ys) = _sense(plan.pareto[0]), _sense(plan.pareto[1])
    fr = fi[pareto_mask(xs * metrics[xm][fi], ys * metrics[ym][fi], idx[fi])]
    # closest infeasible-but-valid plan (least total relative violation)
    closest_sel = np.zeros(0, dtype=np.int64)
    if plan.bounds:
        vi = np.flatnonzero(valid & ~feasible)
        if vi.size:
            best = vi[np.lexsort((idx[vi], violation[vi]))[:1]]
            closest_sel = best
    closest_m = _take(metrics, closest_sel)
    closest_m["violation"] = violation[closest_sel]
    return Partial(
        top_idx=idx[top_sel],
        top=_take(metrics, top_sel),
        front_idx=idx[fr],
        front=_take(metrics, fr),
        closest_idx=idx[closest_sel],
        closest=closest_m,
        evaluated=int(all_idx.size),
        valid=int(np.count_nonzero(valid)),
        feasible=int(np.count_nonzero(feasible)),
        reasons=reasons,
        fails=fails,
        only_fails=only,
        chunks=1,
    )


def merge(plan: SweepPlan, a: Partial | None, b: Partial) -> Partial:
    """Merge two partial results (associative and order-independent)."""
    if a is None:
        return b
    obj, sgn = _sense(plan.objective)
    top_idx = np.concatenate([a.top_idx, b.top_idx])
    top = _cat(a.top, b.top)
    sel = _order(sgn * top[obj], top_idx)[: plan.top_k] if top_idx.size else np.zeros(0, np.int64)
    f_idx = np.concatenate([a.front_idx, b.front_idx])
    front = _cat(a.front, b.front)
    (xm, xs), (ym, ys) = _sense(plan.pareto[0]), _sense(plan.pareto[1])
    fsel = (
        pareto_mask(xs * front[xm], ys * front[ym], f_idx) if f_idx.size else np.zeros(0, np.int64)
    )
    c_idx = np.concatenate([a.closest_idx, b.closest_idx])
    closest = _cat(a.closest, b.closest)
    csel = np.lexsort((c_idx, closest["violation"]))[:1] if c_idx.size else np.zeros(0, np.int64)

    def add(x: dict[Any, int], y: dict[Any, int]) -> dict[Any, int]:
        return {k: x.get(k, 0) + y.get(k, 0) for k in set(x) | set(y)}

    return Partial(
        top_idx=top_idx[sel],
        top=_take(top, sel),
        front_idx=f_idx[fsel],
        front=_take(front, fsel),
        closest_idx=c_idx[csel],
        closest=_take(closest, csel),
        evaluated=a.evaluated + b.evaluated,
        valid=a.valid + b.valid,
        feasible=a.feasible + b.feasible,
        reasons=add(a.reasons, b.reasons),
        fails=add(a.fails, b.fails),
        only_fails=add(a.only_fails, b.only_fails),
        chunks=a.chunks + b.chunks,
    )


def _write_part(
    plan: SweepPlan,
    chunk: int,
    idx: np.ndarray,
    rows: np.ndarray,
    metrics: dict[str, np.ndarray],
    reason: np.ndarray,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert plan.parquet_dir is not None
    cols: dict[str, Any] = {"config": pa.array(idx)}
    dg = digits(plan, idx)
    for d in plan.swept():
        labels = [str(x) for x in d.labels]
        if all(isinstance(x, int | float) for x in d.labels):
            cols[d.short] = pa.array(np.asarray(d.labels, dtype=float)[dg[d.key]])
        else:
            cols[d.short] = pa.DictionaryArray.from_arrays(
                pa.array(dg[d.key].astype(np.int32)), pa.array(labels)
            )
    for k, v in metrics.items():
        full = np.full(idx.shape, np.nan)
        full[rows] = v
        cols[k] = pa.array(full)
    cols["valid"] = pa.array(reason == 0)
    table = pa.table(cols)
    out = Path(plan.parquet_dir)
    out.mkdir(exist_ok=True)  # the folder asked for, never its parents
    final = out / f"part-{chunk:06d}.parquet"
    tmp = out / f".part-{chunk:06d}.parquet.tmp"
    pq.write_table(table, tmp)
    tmp.replace(final)


# ----------------------------------------------------------------------------- results
@dataclass
class SweepResult:
    """Outcome of a sweep: tidy top-K and Pareto tables, counters, binding constraints."""

    plan: SweepPlan
    partial: Partial
    backend: str
    elapsed_s: float = 0.0

    def _frame(self, idx: np.ndarray, metrics: dict[str, np.ndarray]) -> pd.DataFrame:
        dg = digits(self.plan, idx)
        data: dict[str, Any] = {"config": idx}
        for d in self.plan.dims:
            data[d.short] = [d.labels[j] for j in dg[d.key]]
        for k, v in metrics.items():
            data[k] = v
        ids = getattr(getattr(self.plan.evaluator, "hw", None), "offer_ids", None)
        if "offer_code" in metrics and ids is not None:
            data["offer_id"] = [
                ids[int(c)] if math.isfinite(c) and 0 <= c < len(ids) else None
                for c in np.asarray(metrics["offer_code"], dtype=float)
            ]
        return pd.DataFrame(data)

    @property
    def top(self) -> pd.DataFrame:
        """Top-K feasible configurations by the objective (tidy table)."""
        return self._frame(self.partial.top_idx, self.partial.top)

    @property
    def pareto(self) -> pd.DataFrame:
        """Pareto front of the two pareto metrics, sorted by the first."""
        p = self.partial
        order: np.ndarray = np.zeros(0, dtype=np.int64)
        if p.front_idx.size:
            order = np.lexsort((p.front_idx, p.front[_sense(self.plan.pareto[0])[0]]))
        return self._frame(p.front_idx[order], _take(p.front, order))

    @property
    def closest(self) -> pd.DataFrame:
        """The valid plan that violates the constraints least (when none is feasible)."""
        return self._frame(self.partial.closest_idx, self.partial.closest)

    def binding(self) -> list[dict[str, Any]]:
        """Constraints ranked by how many valid plans they alone exclude, then by failures."""
        p = self.partial
        rows = [
            {
                "constraint": name,
                "metric": metric,
                "limit": lim,
                "plans_failing": p.fails.get(name, 0),
                "plans_failing_only_this": p.only_fails.get(name, 0),
            }
            for name, (metric, lim) in self.plan.bounds.items()
        ]
        rows.sort(key=_binding_key)
        return rows

    def to_json(self) -> dict[str, Any]:
        """JSON-ready summary (the ``--json`` output of ``aitco sweep``)."""
        p = self.partial
        return {
            "n_configs": self.plan.n_configs,
            "evaluated": p.evaluated,
            "valid": p.valid,
            "feasible": p.feasible,
            "chunks": p.chunks,
            "backend": self.backend,
            "elapsed_s": self.elapsed_s,
            "configs_per_s": p.evaluated / self.elapsed_s if self.elapsed_s > 0 else None,
            "objective": self.plan.objective,
            "pareto_metrics": list(self.plan.pareto),
            "swept_keys": [d.key for d in self.plan.swept()],
            # ZeRO-Offload mode of every configuration (a base value; "none" when not asked)
            "offload": getattr(self.plan.evaluator, "offload", "none"),
            # stack options of every configuration (base values; {} when none was given)
            "stack": dict(getattr(self.plan.evaluator, "stack", {})),
            # metrics the evaluator screens rather than takes from the engines ([] for engine)
            "screened_metrics": list(getattr(self.plan.evaluator, "screened", ())),
            "invalid_reasons": ev.describe_reasons(p.reasons),
            "top": _records(self.top),
            "pareto": _records(self.pareto),
            "binding": self.binding() if self.plan.bounds else [],
            "closest": _records(self.closest) if p.feasible == 0 and self.plan.bounds else [],
        }


def _binding_key(r: dict[str, Any]) -> tuple[int, int]:
    return (-int(r["plans_failing_only_this"]), -int(r["plans_failing"]))


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for rec in df.to_dict(orient="records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            clean[str(k)] = v
        out.append(clean)
    return out


# ----------------------------------------------------------------------------- backends
ProgressFn = Callable[[int, int], None]


def run_local(plan: SweepPlan, progress: ProgressFn | None = None) -> Partial:
    """Evaluate every chunk in this process, merging as it goes (bounded memory)."""
    acc: Partial | None = None
    n = plan.n_chunks
    for c in range(n):
        acc = merge(plan, acc, evaluate_chunk(plan, c))
        if progress is not None:
            progress(c + 1, n)
    assert acc is not None
    return acc


def run_dask(
    plan: SweepPlan,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: ProgressFn | None = None,
) -> Partial:
    """Evaluate the chunks on a Dask cluster and merge the partial results as they arrive.

    Parameters
    ----------
    plan : SweepPlan
        The resolved sweep (scattered once to the workers).
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); default: a LocalCluster.
    workers : int, optional
        Workers of the LocalCluster (threads in this process; default 2).
    progress : callable, optional
        Called with (chunks done, chunks total).
    """
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - dask is a declared extra
        raise InputError(
            "--backend", "dask", "dask[distributed] installed (pip install aitco[dask])"
        ) from exc
    cluster = None
    scratch = tempfile.TemporaryDirectory(prefix="aitco-dask-")  # removed in ``finally``
    if scheduler:
        try:
            client = Client(scheduler, set_as_default=False, timeout=SCHEDULER_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            scratch.cleanup()
            raise EnvironmentFailure(
                f"--scheduler {scheduler!r}: no Dask scheduler answered within "
                f"{SCHEDULER_TIMEOUT_S:g} s ({type(exc).__name__})"
            ) from exc
    else:
        with dask.config.set({"temporary-directory": scratch.name}):  # no dask-scratch-space
            cluster = LocalCluster(
                n_workers=workers or 2,
                threads_per_worker=1,
                processes=False,
                dashboard_address=None,
                local_directory=scratch.name,
            )
        client = Client(cluster, set_as_default=False)
    try:
        fplan = client.scatter(plan, broadcast=True)
        n = plan.n_chunks
        futures = client.map(evaluate_chunk, [fplan] * n, list(range(n)), pure=False)
        acc: Partial | None = None
        with client.as_current():
            for done, fut in enumerate(as_completed(futures), start=1):
                acc = merge(plan, acc, fut.result())
                fut.release()
                if progress is not None:
                    progress(done, n)
        assert acc is not None
        return acc
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        scratch.cleanup()


def sweep(
    spec: SweepSpec,
    catalog: Catalog,
    *,
    backend: Literal["local", "dask"] = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    parquet_dir: str | None = None,
    progress: ProgressFn | None = None,
    evaluator: Any | None = None,
) -> SweepResult:
    """Run a sweep and return its tidy top-K and Pareto tables.

    Parameters
    ----------
    spec : SweepSpec
        What to sweep.
    catalog : Catalog
        Hardware, prices and models.
    backend : {"local", "dask"}
        Where chunks run.
    scheduler, workers : optional
        Dask scheduler address, or LocalCluster size.
    parquet_dir : str, optional
        Write every evaluated row to ``parquet_dir/part-NNNNNN.parquet``.
    progress : callable, optional
        ``progress(done, total)`` after each chunk.
    evaluator : Evaluator, optional
        Replace the built-in evaluator of ``spec.kind``.

    Returns
    -------
    SweepResult
    """
    import time

    plan = build_plan(spec, catalog, parquet_dir=parquet_dir, evaluator=evaluator)
    t0 = time.perf_counter()
    if backend == "local":
        part = run_local(plan, progress)
    elif backend == "dask":
        part = run_dask(plan, scheduler=scheduler, workers=workers, progress=progress)
    else:
        raise InputError("--backend", backend, "local or dask")
    return SweepResult(plan=plan, partial=part, backend=backend, elapsed_s=time.perf_counter() - t0)
