"""Speed of the training model: plan search and raw plan evaluation (prints numbers).

Run: ``python benchmarks/bench_training.py`` (single process; numpy elementwise work runs on
one core). Targets (issue 3): plan search for llama-3.1-405b on 16,384 H100 under 1 s; raw
evaluation of at least 1 million candidate plans per second on one core.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from aitco.catalog.loader import load_catalog
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.flops import model_shape
from aitco.perf.plan_search import _candidates_memo, candidate_plans, evaluate_chunked
from aitco.perf.training import estimate_training, evaluate_plans, hardware_shape
from aitco.validation.training import validate_training


def best_of(fn, repeat: int = 5) -> float:
    """Fastest wall time of ``repeat`` calls. [s]"""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    """Print the benchmark figures."""
    cat = load_catalog(use_env=False)
    model = cat.models["llama-3.1-405b"]
    acc, system = cat.hardware("h100-sxm5-80gb")
    gpus, seq, gb = 16384, 8192, 2048

    res = estimate_training(model, acc, system, gpus, seq_len=seq, global_batch=gb, tokens=15.6e12)

    def search() -> None:
        _candidates_memo.cache_clear()  # time the candidate generation too, every call
        estimate_training(model, acc, system, gpus, seq_len=seq, global_batch=gb)

    t_search = best_of(search)
    p = res.values["plan"]
    print(f"plan search llama-3.1-405b on {gpus} x h100: {t_search * 1e3:.1f} ms "
          f"over {res.candidates:,} candidates (target < 1000 ms)")  # fmt: skip
    print(f"  best plan tp={p['tp']} pp={p['pp']} cp={p['cp']} dp={p['dp']} zero={p['zero']} "
          f"mb={p['micro_batch']} {p['recompute']} vp={p['vp']}: "
          f"{res.values['tokens_per_s_per_gpu']:.0f} tokens/s/GPU, MFU {res.values['mfu']:.1%}, "
          f"{res.values['memory_per_gpu_gb']:.1f} GB/GPU")  # fmt: skip

    ms = model_shape(model)
    hw = hardware_shape(acc, "bf16", DEFAULT_EFFICIENCY)
    cands = candidate_plans(ms, gpus, seq, gb)
    n_target = 1_000_000
    reps = int(np.ceil(n_target / cands["tp"].size))
    big = {k: np.tile(v, reps)[:n_target] for k, v in cands.items()}

    kw = dict(ms=ms, hw=hw, system=system, seq_len=seq, global_batch=gb, gpus=gpus,
              precision="bf16", method="full", eff=DEFAULT_EFFICIENCY)  # fmt: skip
    t_raw = best_of(lambda: evaluate_chunked(big, **kw), repeat=3)
    print(
        f"raw evaluation (cache-sized blocks, as the search runs it): {n_target:,} plans in "
        f"{t_raw:.3f} s = {n_target / t_raw:,.0f} plans/s on one core (target >= 1,000,000/s)"
    )
    t_one = best_of(lambda: evaluate_plans(**kw, **big), repeat=3)
    print(f"raw evaluation (one pass over 1M-element arrays): {n_target / t_one:,.0f} plans/s")

    t_val = best_of(lambda: validate_training(catalog=cat), repeat=1)
    print(f"validation of the training ground truth: {t_val:.2f} s")


if __name__ == "__main__":
    main()
