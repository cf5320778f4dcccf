"""Speed of the inference engine: the continuous-batching simulation and the SLA capacity search.

Targets (issue 4): 100,000 simulated requests in under 2 s; an SLA replica search in under 1 s.
Targets (issue 15): a disaggregated-vs-aggregated plan search for one model and SLO in under 2 s;
a 24-hour autoscaled day at 1-second resolution in under 2 s.
Run: ``python benchmarks/bench_inference.py`` (prints JSON; exit 1 if a target is missed).
"""

from __future__ import annotations

import json
import sys
import time

from aitco.catalog.loader import load_catalog
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.inference import (
    ENGINES,
    estimate_inference,
    iteration_model,
    memory_plan,
    resolve_precisions,
)
from aitco.perf.kvcache import kv_capacity
from aitco.perf.queueing import simulate_poisson
from aitco.perf.service import autoscale_day, hourly_load, plan_pools
from aitco.perf.serving import max_request_rate, replicas_for_slo

DES_TARGET_S = 2.0
SLA_TARGET_S = 1.0
DISAGG_TARGET_S = 2.0
AUTOSCALE_TARGET_S = 2.0


def main() -> int:
    cat = load_catalog(use_env=False)
    model = cat.resolve_model("llama-3.1-8b")
    acc, system = cat.hardware("h100-sxm5-80gb")
    prec = resolve_precisions(acc, "fp8", None)
    it = iteration_model(
        model, acc, system, tp=1, pp=1, precisions=prec, efficiency=DEFAULT_EFFICIENCY
    )
    eng = ENGINES["vllm"]
    mp = memory_plan(model, acc, tp=1, pp=1, precisions=prec, engine=eng)
    cap = kv_capacity(model, mp.kv_gb, input_tokens=512, output_tokens=256, kv_precision=prec.kv)
    mu = max_request_rate(it, 512, 256, min(cap.max_sequences, eng.max_num_seqs))
    out: dict[str, object] = {"capacity_req_s": mu}
    ok = True
    for load in (0.5, 0.9):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            res = simulate_poisson(
                it, load * mu, 512, 256, input_cv=1.0, output_cv=1.0,
                max_num_seqs=eng.max_num_seqs, kv_capacity_tokens=cap.max_tokens,
                num_requests=100_000, seed=0,
            )  # fmt: skip
            best = min(best, time.perf_counter() - t0)
        out[f"des_100k_requests_load_{load}_s"] = best
        out[f"des_iterations_load_{load}"] = res.iterations
        out[f"des_mean_batch_load_{load}"] = res.mean_batch
        ok &= best < DES_TARGET_S
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        r = replicas_for_slo(
            it, 20 * mu, 512, 256, max_num_seqs=eng.max_num_seqs, kv_capacity_tokens=cap.max_tokens,
            slo_ttft_s=0.5, slo_tpot_s=0.05, input_cv=1.0, output_cv=1.0,
        )  # fmt: skip
        best = min(best, time.perf_counter() - t0)
    out["sla_search_s"] = best
    out["sla_replicas"] = r
    ok &= best < SLA_TARGET_S
    t0 = time.perf_counter()
    estimate_inference(model, acc, system, 8, precision="fp8", mode="offline")
    out["estimate_offline_s"] = time.perf_counter() - t0
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        pools = plan_pools(
            it, input_tokens=4000, output_tokens=300, max_batch=eng.max_num_seqs,
            max_batched_tokens=eng.max_num_tokens, gpus_per_replica=1, usd_per_gpu_hour=2.5,
            kv_bytes_per_token=it.kv_bytes_per_token, fabric_bandwidth_gb_s=50.0,
            fabric_latency_us=5.0, fabric_efficiency=0.8, qps=20 * mu, slo_ttft_s=1.0,
            slo_tpot_s=0.03, max_pool_replicas=256,
        )  # fmt: skip
        best = min(best, time.perf_counter() - t0)
    out["disaggregation_plan_search_s"] = best
    out["disaggregation_chosen"] = pools["chosen"]
    ok &= best < DISAGG_TARGET_S
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        day = autoscale_day(hourly_load("diurnal", 20 * mu), mu, cold_start_s=180.0,
                            resolution_s=1.0)  # fmt: skip
        best = min(best, time.perf_counter() - t0)
    out["autoscaled_day_1s_s"] = best
    out["autoscaled_day_replica_hours"] = day["replica_hours"]
    ok &= best < AUTOSCALE_TARGET_S
    out["targets_met"] = bool(ok)
    print(json.dumps(out, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
