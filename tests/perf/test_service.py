"""Serving plans: cost per token, prefill/decode disaggregation, the autoscaled day, MIG slices."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.perf.test_inference_explain import GPU, LLAMA70, NODE

from aitco.errors import InputError
from aitco.perf import service
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.inference import iteration_model, resolve_precisions


def _it():  # type: ignore[no-untyped-def]
    p = resolve_precisions(GPU, "fp8", None)
    return iteration_model(LLAMA70, GPU, NODE, tp=4, precisions=p, efficiency=DEFAULT_EFFICIENCY)


def _pools(**kw: object) -> dict[str, object]:
    it = _it()
    base: dict[str, object] = dict(
        input_tokens=4000, output_tokens=300, max_batch=256, max_batched_tokens=8192,
        gpus_per_replica=4, usd_per_gpu_hour=2.0, kv_bytes_per_token=it.kv_bytes_per_token * 4,
        fabric_bandwidth_gb_s=50.0, fabric_latency_us=5.0, fabric_efficiency=0.8, qps=10.0,
    )  # fmt: skip
    base.update(kw)
    return service.plan_pools(it, **base)  # type: ignore[arg-type]


def test_disaggregation_sizes_both_pools_and_picks_the_cheaper() -> None:
    out = _pools(slo_ttft_s=2.0, slo_tpot_s=0.03)
    dis, agg = out["disaggregated"], out["aggregated"]
    assert isinstance(dis, dict)
    assert isinstance(agg, dict)
    assert dis["prefill_replicas"] >= 1
    assert dis["decode_replicas"] >= 1
    assert dis["requests_per_s"] >= 10.0
    assert dis["tpot_s"] <= 0.03
    assert dis["ttft_s"] > out["kv_transfer_s"] > 0
    cheaper = min((p for p in (agg, dis) if p["meets_slo"]), key=lambda p: p["usd_per_h"])
    assert out["chosen"] == cheaper["mode"]
    json.dumps(out)


def test_tight_tpot_favours_disaggregation() -> None:
    # decode without prefill interference meets a TPOT objective aggregated serving cannot
    out = _pools(slo_tpot_s=0.016, input_tokens=8000, output_tokens=100)
    assert out["chosen"] == "disaggregated"


def test_fixed_layout() -> None:
    out = _pools(layout=(3, 2))
    assert out["prefill_to_decode_ratio"] == "3:2"


def test_autoscaled_day_costs_less_than_the_peak_and_scales_to_zero() -> None:
    q = service.hourly_load("diurnal", 10.0)
    assert q.mean() == pytest.approx(10.0)
    day = service.autoscale_day(q, 1.0, target_utilization=0.7, cold_start_s=300.0)
    assert day["replica_hours"] < 24 * day["peak_replicas"]
    assert day["unserved_fraction"] < 0.01
    night = np.zeros(24)
    night[12] = 5.0
    z = service.autoscale_day(night, 1.0, min_replicas=0, cold_start_s=600.0)
    assert z["replicas_by_hour"][3] == 0.0
    assert z["cold_starts"] >= 1
    assert z["unserved_requests"] > 0  # the lag and cold start drop the first arrivals


def test_mig_profiles_follow_the_user_guide() -> None:
    one = service.mig_slice("1g.10gb", 80)
    assert (one.instances_per_gpu, one.memory_fraction) == (7, 0.125)
    assert service.mig_slice("3g.40gb", 80).instances_per_gpu == 2
    assert service.mig_slice("4g.40gb", 80).instances_per_gpu == 1
    with pytest.raises(InputError):
        service.mig_slice("9g.10gb", 80)


def test_time_slice_share_divides_the_gpu_and_composes_with_mig() -> None:
    from aitco.catalog.loader import load_catalog

    cat = load_catalog(use_env=False)
    h100 = cat.accelerators["h100-sxm5-80gb"]
    ts = service.time_slice_accelerator(h100, 4)
    assert ts.memory_gb == pytest.approx(h100.memory_gb / 4)
    assert ts.hbm_bandwidth_gb_s == pytest.approx(h100.hbm_bandwidth_gb_s / 4)
    assert ts.peak_tflops["bf16"] == pytest.approx(h100.peak_tflops["bf16"] / 4)
    assert ts.tdp_w == pytest.approx(h100.tdp_w / 4)
    # the measured matmul ceiling keeps its ratio to the peak
    assert ts.matmul_ceiling("bf16") == pytest.approx(h100.matmul_ceiling("bf16"))
    assert service.time_slice_accelerator(h100, 1) is h100
    acc, shares = service.fractional_accelerator(h100, "3g.40gb", 2)
    assert shares == 4  # 2 slices per GPU, each time-sliced by 2
    assert acc.memory_gb == pytest.approx(20.0)
    # a MIG slice keeps the GPU's matmul ceiling ratio too (its SMs and its ceiling scale)
    mig, _ = service.mig_accelerator(h100, "3g.40gb")
    assert mig.matmul_ceiling("bf16") == pytest.approx(h100.matmul_ceiling("bf16"))
    for bad in (0, -2, 1.5, True):
        with pytest.raises(InputError, match="--time-slice"):
            service.time_slice_accelerator(h100, bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="NVIDIA GPU"):
        service.time_slice_accelerator(cat.accelerators["tpu-v5e"], 2)


def test_parse_autoscale() -> None:
    assert service.parse_autoscale("target-util=0.5,max=8") == {
        "target-util": 0.5, "min": 0.0, "max": 8.0
    }  # fmt: skip
    with pytest.raises(InputError):
        service.parse_autoscale("speed=3")
