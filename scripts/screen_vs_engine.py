#!/usr/bin/env python3
"""The ``fast`` screens against the engine evaluators on a few grids: ratios and rank agreement.

For each grid and model, over the configurations both evaluators call valid: the median, 10th and
90th percentile and maximum of screen / engine for the time metrics, memory and dollars, and the
Spearman rank correlation of the times. Reads the catalog ``aitco`` reads
(``AITCO_CATALOG_DATA`` to pin one, e.g. ``tests/fixtures/catalog``)::

    AITCO_CATALOG_DATA=tests/fixtures/catalog python scripts/screen_vs_engine.py
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from aitco.catalog.loader import load_catalog
from aitco.decide.sweep import SweepSpec, build_plan, evaluate_all

TRAIN_GRID = {
    "hardware": ["h100-sxm5-80gb", "a100-sxm4-80gb"],
    "gpus": [8, 16, 64],
    "tp": [1, 2, 4, 8],
    "pp": [1, 2, 4],
    "micro_batch": [1, 2],
    "zero": [0, 1, 3],
    "recompute": ["none", "selective", "full"],
}
SERVE_GRID = {
    "hardware": ["h100-sxm5-80gb", "l40s", "a100-sxm4-80gb"],
    "gpus": [1, 2, 4, 8],
    "batch": [1, 8, 32, 128],
    "input_tokens": [512, 4096],
    "output_tokens": [256],
}
CASES = [
    ("training", m, TRAIN_GRID, ("step_time_s", "memory_per_gpu_gb", "total_usd"))
    for m in ("llama-3-8b", "llama-3.1-70b", "mixtral-8x7b")
] + [
    ("serving", m, SERVE_GRID, ("ttft_s", "tpot_s", "memory_per_gpu_gb", "total_usd"))
    for m in ("llama-3.1-8b", "llama-3.1-70b", "gemma-2-9b")
]


def _metrics(kind: str, evaluator: str, model: str, grid: dict) -> dict:
    workload: dict = {"model": model}
    if kind == "training":
        workload |= {"tokens": 1e11, "seq_len": 4096, "global_batch": 512}
    spec = SweepSpec.from_dict(
        {"kind": kind, "evaluator": evaluator, "workload": workload, "grid": grid}
    )
    plan = build_plan(spec, load_catalog())
    return evaluate_all(plan, np.arange(plan.n_configs))


def main() -> None:
    """Print one block per case."""
    for kind, model, grid, keys in CASES:
        fast, engine = (_metrics(kind, e, model, grid) for e in ("fast", "engine"))
        ok = (fast["reason"] == 0) & (engine["reason"] == 0)
        same = int(np.sum(fast["reason"] == engine["reason"]))
        print(f"{kind} {model}: {int(ok.sum())} valid in both, same validity {same}/{ok.size}")
        for k in keys:
            r = fast[k][ok] / engine[k][ok]
            q10, q50, q90 = np.quantile(r, [0.1, 0.5, 0.9])
            rho = spearmanr(fast[k][ok], engine[k][ok]).statistic
            print(
                f"  {k:20s} screen/engine median {q50:.3f} p10 {q10:.3f} p90 {q90:.3f} "
                f"max {r.max():.3f}  Spearman {rho:.3f}"
            )


if __name__ == "__main__":
    main()
