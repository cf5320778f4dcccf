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

The spec, its keys and the plan (:class:`SweepSpec`, :func:`build_plan`) live in
:mod:`aitco.decide.sweep_plan` and are re-exported here.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from aitco.catalog.loader import Catalog
from aitco.decide import evaluators as ev
from aitco.decide.sweep_plan import (
    CONSTRAINT_METRICS,
    DEFAULT_CHUNK_SIZE,
    SCHEDULER_TIMEOUT_S,
    Constraints,
    Dimension,
    SweepPlan,
    SweepSpec,
    build_plan,
    canonical_key,
    metric_sense,
    validation_error,
)
from aitco.errors import EnvironmentFailure, InputError
from aitco.limits import DEFAULT_MAX_SWEEP_POINTS, plausible_mask
from aitco.units import HOURS_PER_DAY


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
    # an absurd total or duration is not a plan (limits.py: the rule compare applies too)
    wall_h = metrics.get("wall_clock_h")
    feasible &= plausible_mask(
        metrics.get("total_usd"), None if wall_h is None else wall_h / HOURS_PER_DAY
    )
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
    obj, sgn = metric_sense(plan.objective)
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
    (xm, xs), (ym, ys) = metric_sense(plan.pareto[0]), metric_sense(plan.pareto[1])
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
    obj, sgn = metric_sense(plan.objective)
    top_idx = np.concatenate([a.top_idx, b.top_idx])
    top = _cat(a.top, b.top)
    sel = _order(sgn * top[obj], top_idx)[: plan.top_k] if top_idx.size else np.zeros(0, np.int64)
    f_idx = np.concatenate([a.front_idx, b.front_idx])
    front = _cat(a.front, b.front)
    (xm, xs), (ym, ys) = metric_sense(plan.pareto[0]), metric_sense(plan.pareto[1])
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
            order = np.lexsort((p.front_idx, p.front[metric_sense(self.plan.pareto[0])[0]]))
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
    if scheduler:
        check_scheduler_address(scheduler)
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


#: Address schemes a Dask client connects with (``distributed.comm.registry``).
DASK_SCHEMES = ("tcp", "tls", "ws", "wss", "inproc", "ucx")


def check_scheduler_address(address: str, field: str = "--scheduler") -> None:
    """Refuse a Dask scheduler address that cannot be parsed, before any connection is tried.

    Raises
    ------
    InputError
        A malformed address (``http://[::1``), an unknown scheme, or a bad port.
    """
    from urllib.parse import urlsplit

    expected = f"a Dask scheduler address SCHEME://HOST:PORT (scheme {', '.join(DASK_SCHEMES)})"
    text = address if "://" in address else f"tcp://{address}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise InputError(field, address, expected, hint=str(exc)) from None
    if parts.scheme not in DASK_SCHEMES or (parts.scheme != "inproc" and not parts.hostname):
        raise InputError(field, address, expected)
    if parts.scheme in ("tcp", "tls") and port is None:
        raise InputError(field, address, expected, hint="give the port (Dask's default: 8786)")


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
    max_points: int = DEFAULT_MAX_SWEEP_POINTS,
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
    max_points : int
        Most plans evaluated (:func:`~aitco.decide.sweep_plan.check_point_count`);
        ``--max-points`` on the CLI.

    Returns
    -------
    SweepResult
    """
    import time

    plan = build_plan(
        spec, catalog, parquet_dir=parquet_dir, evaluator=evaluator, max_points=max_points
    )
    t0 = time.perf_counter()
    if backend == "local":
        part = run_local(plan, progress)
    elif backend == "dask":
        part = run_dask(plan, scheduler=scheduler, workers=workers, progress=progress)
    else:
        raise InputError("--backend", backend, "local or dask")
    return SweepResult(plan=plan, partial=part, backend=backend, elapsed_s=time.perf_counter() - t0)


__all__ = [
    "CONSTRAINT_METRICS",
    "DEFAULT_CHUNK_SIZE",
    "SCHEDULER_TIMEOUT_S",
    "Constraints",
    "Dimension",
    "Partial",
    "SweepPlan",
    "SweepResult",
    "SweepSpec",
    "build_plan",
    "canonical_key",
    "chunk_indices",
    "decode",
    "digits",
    "evaluate_all",
    "evaluate_chunk",
    "merge",
    "pareto_mask",
    "run_dask",
    "run_local",
    "sweep",
    "validation_error",
]
