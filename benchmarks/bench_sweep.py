"""Sweep throughput and memory benchmark (issue 6 targets; not a unit test).

Targets: >= 1e6 configurations/s per core through the sweep path (training step time + TCO),
reported against a naive per-configuration Python loop over the same model in the same run; a
100-million-point sweep with peak memory under 1 GB.

    python benchmarks/bench_sweep.py                 # ~5.5 M configurations (default)
    python benchmarks/bench_sweep.py --configs 1e8   # the full 100 M run
    python benchmarks/bench_sweep.py --backend dask --workers 2
    python benchmarks/bench_sweep.py --evaluator fast     # the compact model instead of the engine

Single core: numpy's element-wise kernels are single-threaded, and the local backend runs the
chunks one after another in this process, so configs/s here is configs/s per core.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from aitco.catalog.loader import load_catalog
from aitco.decide.sweep import SweepSpec, build_plan, decode, sweep
from aitco.limits import DEFAULT_MAX_SWEEP_POINTS

BASE_GRID = {
    "hardware": ["h100-sxm5-80gb", "h200-sxm-141gb", "a100-sxm4-80gb", "b200", "mi300x", "l40s"],
    "gpus": [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048],
    "pricing": ["on_demand", "spot", "reserved_1y", "owned"],
    "precision": ["bf16", "fp8", "fp16"],
    "tp": [1, 2, 4, 8],
    "pp": [1, 2, 4, 8],
    "micro_batch": [1, 2, 4, 8, 16],
    "zero": [0, 1, 2, 3],
    "recompute": ["none", "selective", "full"],
}


def spec_for(n_target: float, chunk_size: int, evaluator: str = "engine") -> SweepSpec:
    base = math.prod(len(v) for v in BASE_GRID.values())
    k = max(1, math.ceil(n_target / base))
    batches = [256 * (i + 1) for i in range(k)]
    return SweepSpec.from_dict(
        {
            "kind": "training",
            "evaluator": evaluator,
            "workload": {"model": "gpt2-124m", "tokens": 1e11, "seq_len": 2048},
            "grid": {**BASE_GRID, "global_batch": batches},
            "top_k": 20,
            "chunk_size": chunk_size,
        }
    )


GRID_ROUNDING_MARGIN = 2  # spec_for rounds the grid up to whole axes, never doubling it


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def naive_loop_rate(plan, n: int) -> tuple[float, float]:
    """The same model called once per configuration from a Python loop (the naive way).

    Returns (configs per wall second, configs per CPU second).
    """
    rng = np.random.default_rng(0)
    idx = rng.integers(0, plan.n_configs, size=n)
    t0 = time.perf_counter()
    c0 = time.process_time()
    best = math.inf
    for i in idx:
        m = plan.evaluator.evaluate(decode(plan, np.array([i])))
        if m["reason"][0] == 0 and m["total_usd"][0] < best:
            best = float(m["total_usd"][0])
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=float, default=5e6)
    ap.add_argument("--chunk-size", type=int, default=1 << 18)
    ap.add_argument("--loop-n", type=int, default=3000)
    ap.add_argument("--backend", default="local")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--evaluator", default="engine", choices=["engine", "fast"])
    a = ap.parse_args()
    cat = load_catalog(use_env=False)
    spec = spec_for(a.configs, a.chunk_size, a.evaluator)
    rss0 = peak_rss_mb()
    t0 = time.perf_counter()
    c0 = time.process_time()
    # the benchmark's grids (5.5 M, 1e8) are deliberately beyond the interactive bound that
    # `--max-points` raises; allow the whole grid the spec builds
    points = max(int(a.configs) * GRID_ROUNDING_MARGIN, DEFAULT_MAX_SWEEP_POINTS)
    res = sweep(
        spec, cat, backend=a.backend, workers=a.workers if a.backend == "dask" else None,
        max_points=points,
    )
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rate = res.partial.evaluated / wall
    loop, loop_cpu = naive_loop_rate(build_plan(spec, cat, max_points=points), a.loop_n)
    out = {
        "configurations": res.partial.evaluated,
        "valid": res.partial.valid,
        "chunks": res.partial.chunks,
        "chunk_size": a.chunk_size,
        "backend": a.backend,
        "evaluator": a.evaluator,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "configs_per_cpu_s": round(res.partial.evaluated / cpu),
        "configs_per_s": round(rate),
        "naive_loop_configs_per_s": round(loop),
        "naive_loop_configs_per_cpu_s": round(loop_cpu),
        "speedup_vs_loop": round(rate / loop, 1),
        "speedup_vs_loop_cpu": round(res.partial.evaluated / cpu / loop_cpu, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "rss_before_sweep_mb": round(rss0, 1),
        "target_configs_per_s": 1_000_000,
        "target_peak_mb": 1024,
        "best_total_usd": float(res.top["total_usd"].iloc[0]),
        "pareto_points": len(res.pareto),
    }
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
