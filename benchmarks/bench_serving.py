"""Speed of the serving plans end to end, as the commands run them.

Targets (issue 15): a disaggregated-vs-aggregated plan search for one model and SLO in under
2 s; a 24-hour autoscaled day at 1-second resolution in under 2 s. ``bench_inference.py`` times
the bare functions; this times what ``aitco infer --disaggregate auto`` / ``--autoscale`` and
``aitco compare`` / ``sweep`` run: the engine's estimate, then
:func:`aitco.perf.service.service_plans` (plan search over up to 64 x 64 prefill/decode
layouts, or the 86,400-step autoscaler), plus the CNN roofline over batch sizes.
Run: ``python benchmarks/bench_serving.py`` (prints JSON; exit 1 if a target is missed).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from aitco.catalog.loader import load_catalog
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario
from aitco.decide.sweep import SweepSpec, sweep
from aitco.perf.cnn import cnn_batch
from aitco.perf.inference import estimate_inference
from aitco.perf.service import service_plans

DISAGG_TARGET_S = 2.0
AUTOSCALE_TARGET_S = 2.0
REPEATS = 3


def _best(fn: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    cat = load_catalog(use_env=False)
    model = cat.resolve_model("llama-3.1-70b")
    acc, system = cat.hardware("h100-sxm5-80gb")
    qps = 30.0

    def infer_disagg() -> Any:
        res = estimate_inference(model, acc, system, 4, precision="fp8", input_tokens=4000,
                                 output_tokens=300, mode="offline")  # fmt: skip
        assert res.iteration is not None
        return service_plans(
            res.values, res.iteration, system, 2.5, input_tokens=4000, output_tokens=300,
            qps=qps, slo_ttft_ms=2000, slo_tpot_ms=50, disaggregate="auto",
        )["disaggregation"]  # fmt: skip

    def infer_autoscale() -> Any:
        res = estimate_inference(model, acc, system, 4, precision="fp8", input_tokens=4000,
                                 output_tokens=300, mode="offline")  # fmt: skip
        assert res.iteration is not None
        return service_plans(
            res.values, res.iteration, system, 2.5, input_tokens=4000, output_tokens=300,
            qps=qps, load_profile="diurnal", autoscale="target-util=0.7,min=0,max=64",
        )["autoscale"]  # fmt: skip

    out: dict[str, Any] = {}
    t, pool = _best(infer_disagg)
    out["infer_disaggregation_plan_search_s"] = t
    out["disaggregation_chosen"] = pool["chosen"]
    out["prefill_to_decode_ratio"] = pool["prefill_to_decode_ratio"]
    ok = t < DISAGG_TARGET_S
    t, day = _best(infer_autoscale)
    out["infer_autoscaled_day_1s_s"] = t
    out["autoscaled_day_peak_replicas"] = day["peak_replicas"]
    out["autoscaled_day_replica_hours"] = day["replica_hours"]
    ok &= t < AUTOSCALE_TARGET_S

    def scn(**kw: Any) -> Scenario:
        return Scenario.model_validate({
            "name": "bench",
            "workload": {"kind": "inference", "model": "llama-3.1-70b", "precision": "fp8",
                         "input_tokens": 4000, "output_tokens": 300, "qps": qps, "tp": 4, **kw},
            "options": [{"hardware": "h100-sxm5-80gb", "gpus": 4, "pricing": "on_demand",
                         "usd_per_gpu_hour": 2.5}],
        })  # fmt: skip

    t, comp = _best(lambda: compare(scn(disaggregate="auto", slo_ttft_ms=2000,
                                        slo_tpot_ms=50), cat))  # fmt: skip
    out["compare_disaggregate_auto_s"] = t
    out["compare_disaggregate_total_usd"] = comp.options[0].total_usd
    ok &= t < DISAGG_TARGET_S
    t, comp = _best(lambda: compare(scn(load_profile="diurnal", autoscale="target-util=0.7"), cat))
    out["compare_autoscale_s"] = t
    out["compare_autoscale_total_usd"] = comp.options[0].total_usd
    ok &= t < AUTOSCALE_TARGET_S
    spec = SweepSpec.from_dict({
        "kind": "serving",
        "workload": {"model": "llama-3.1-8b", "input_tokens": 2000, "output_tokens": 200,
                     "qps": 20},
        "option": {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"},
        "grid": {"batch": [8, 32, 128], "prefix_cache_hit_rate": [0, 0.5, 0.8],
                 "disaggregate": [None, "auto"], "scheduler_steps": [1, 8]},
    })  # fmt: skip
    t, _res = _best(lambda: sweep(spec, cat))
    out["sweep_36_service_configs_s"] = t
    net = cat.cnn_models["resnet-50"]
    t, _ = _best(lambda: cnn_batch(net, acc, list(range(1, 65)), precision="int8"))
    out["cnn_resnet50_64_batch_sizes_s"] = t
    out["targets_met"] = bool(ok)
    print(json.dumps(out, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
