"""The serving fields of ``aitco infer`` reach ``compare``, ``sweep`` and ``optimize`` services.

Each field goes through :func:`aitco.perf.service.service_plans` (disaggregation, autoscaling)
or the engine's own inputs (prefix cache, scheduler steps, max batched tokens, ep, MIG); every
test here compares two runs that differ in one field, so each can fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from aitco.catalog.loader import load_catalog
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario
from aitco.decide.sweep import SweepSpec, sweep
from aitco.errors import InputError


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_env=False)


def _scn(pricing: str = "on_demand", provider: str = "aws", **service: Any) -> Scenario:
    return Scenario.model_validate({
        "name": "chat",
        "workload": {"kind": "inference", "model": "llama-3.1-8b", "input_tokens": 2000,
                     "output_tokens": 200, "qps": 40, **service},
        "options": [{"name": "h100", "hardware": "h100-sxm5-80gb", "gpus": 1,
                     "pricing": pricing, "provider": provider}],
    })  # fmt: skip


def _one(cat, **kw: Any):
    return compare(_scn(**kw), cat).options[0]


# ----------------------------------------------------------------------------- compare
def test_prefix_cache_lowers_the_service_total(cat) -> None:
    base, cached = _one(cat), _one(cat, prefix_cache_hit_rate=0.8)
    assert cached.total_usd < base.total_usd
    assert cached.gpus < base.gpus


def test_disaggregate_auto_reports_the_chosen_layout(cat) -> None:
    o = _one(cat, disaggregate="auto", slo_ttft_ms=2000, slo_tpot_ms=50)
    v = o.values
    plan = v["disaggregation"]
    assert plan["chosen"] in ("aggregated", "disaggregated")
    p, d = (int(x) for x in v["prefill_to_decode_ratio"].split(":"))
    assert p >= 1
    assert d >= 1
    chosen = plan[plan["chosen"]]
    assert o.gpus == chosen["gpus"]
    assert v["ttft_s"] == pytest.approx(chosen["ttft_s"])


def test_fixed_layout_is_priced_as_asked(cat) -> None:
    a = _one(cat, disaggregate="2x3")
    b = _one(cat, disaggregate="4x6")
    assert a.values["disaggregation"]["chosen"] == "disaggregated"
    assert a.values["prefill_to_decode_ratio"] == "2:3"
    assert (a.gpus, b.gpus) == (5, 10)
    assert b.total_usd > a.total_usd


def test_autoscaled_month_bills_running_replicas(cat) -> None:
    """On demand, the rental is the replica-hours actually run: pinning the autoscaler at its
    peak all day raises the rental by exactly the ratio of replica-hours."""
    auto = _one(cat, load_profile="diurnal", autoscale="target-util=0.7,min=0,max=64")
    day = auto.values["autoscale"]
    peak = day["peak_replicas"]
    assert 0 < day["replica_hours"] < 24 * peak
    pinned = _one(cat, load_profile="diurnal", autoscale=f"target-util=0.7,min={peak},max={peak}")
    assert pinned.values["autoscale"]["replica_hours"] == pytest.approx(24 * peak)
    r_auto = auto.item("rental_on_demand").usd
    r_pin = pinned.item("rental_on_demand").usd
    assert r_auto / r_pin == pytest.approx(day["replica_hours"] / (24 * peak), rel=1e-9)
    assert auto.total_usd < pinned.total_usd
    # latencies of the busiest hour on the peak replicas: finite, not the saturated mean load
    assert 0 < auto.values["ttft_s"] < 10


def test_autoscale_on_committed_capacity_holds_the_peak(cat) -> None:
    scn = _scn(
        pricing="reserved_1y", provider="gcp", load_profile="diurnal", autoscale="target-util=0.7"
    )
    o = compare(scn, cat).options[0]
    assert o.values["billed_hours"] == pytest.approx(o.values["horizon_months"] * 730, rel=0.01)


def test_mig_slices_are_priced_per_slice(cat) -> None:
    full = _one(cat)
    o = _one(cat, mig="3g.40gb")
    assert o.values["mig_profile"] == "3g.40gb"
    rent = o.item("rental_on_demand")
    assert rent.inputs["mig_slices_per_gpu"] == 2
    assert rent.inputs["usd_per_gpu_hour"] == pytest.approx(
        full.item("rental_on_demand").inputs["usd_per_gpu_hour"] / 2
    )


def test_time_sliced_service_is_priced_per_share(cat) -> None:
    full = _one(cat)
    o = _one(cat, time_slice=2)
    assert o.values["time_slice"] == 2
    rent = o.item("rental_on_demand")
    assert rent.inputs["shares_per_gpu"] == 2
    assert "mig_slices_per_gpu" not in rent.inputs
    assert rent.inputs["usd_per_gpu_hour"] == pytest.approx(
        full.item("rental_on_demand").inputs["usd_per_gpu_hour"] / 2
    )
    # at a share's contended rates more shares carry the load than whole GPUs
    assert o.gpus > full.gpus
    scn = Scenario.model_validate({
        "name": "tpu", "workload": {"kind": "inference", "model": "llama-3.2-1b", "qps": 1,
                                    "time_slice": 2},
        "options": [{"hardware": "tpu-v5e", "gpus": 1, "pricing": "on_demand",
                     "usd_per_gpu_hour": 1.2}],
    })  # fmt: skip
    with pytest.raises(InputError, match=r"workload\.time_slice"):
        compare(scn, cat)
    # a share too small for the model names the share, not more GPUs, as the way out
    # (an option that cannot run is an answer: infeasible with the reason, not an error)
    small = _one(cat, mig="2g.20gb", time_slice=2)  # 10 GiB each: 8B bf16 weights need 16 GB
    assert small.values["feasible"] is False
    assert small.values["fits"] is False
    reason = " ".join(small.values["infeasible_reasons"])
    assert "fewer --time-slice replicas" in reason
    assert "smallest tp" not in reason


def test_bad_service_field_names_the_field(cat) -> None:
    with pytest.raises(InputError) as e:
        _one(cat, disaggregate="3by2")
    assert "workload.disaggregate" in str(e.value)
    with pytest.raises(InputError) as e:
        _one(cat, qps=None, load_profile="diurnal", concurrency=8)
    assert "workload.qps" in str(e.value)


# ----------------------------------------------------------------------------- sweep
def _sweep(cat, grid: dict[str, Any], **wl: Any):
    spec = SweepSpec.from_dict({
        "kind": "serving",
        "workload": {"model": "llama-3.1-8b", "input_tokens": 2000, "output_tokens": 200,
                     "qps": 20, **wl},
        "option": {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"},
        "grid": {"batch": [32], **grid},
        "top_k": 50,
    })  # fmt: skip
    return sweep(spec, cat).top


def _by(df, key: str) -> dict[Any, Any]:
    return {r[key]: r for r in df.to_dict("records")}


def test_sweep_prefix_cache_lowers_cost_per_token(cat) -> None:
    # at 40 req/s the cached prompts' higher throughput needs fewer whole replicas (at 20 req/s
    # both round up to 3 and cost the same per token)
    grid = {"prefix_cache_hit_rate": [0.0, 0.8]}
    rows = _by(_sweep(cat, grid, qps=40), "prefix_cache_hit_rate")
    assert set(rows) == {0.0, 0.8}
    assert rows[0.8]["output_tokens_per_s"] > rows[0.0]["output_tokens_per_s"]
    assert rows[0.8]["usd_per_million_output_tokens"] < rows[0.0]["usd_per_million_output_tokens"]
    assert rows[0.8]["ttft_s"] < rows[0.0]["ttft_s"]


def test_sweep_scheduler_steps_and_batched_tokens_raise_ttft(cat) -> None:
    steps = _by(_sweep(cat, {"scheduler_steps": [1, 8]}), "scheduler_steps")
    assert steps[8]["ttft_s"] > steps[1]["ttft_s"]
    assert steps[8]["tpot_s"] == pytest.approx(steps[1]["tpot_s"])
    # a prefill pool batches max_batched_tokens // prompt prompts per iteration: fewer -> slower
    grid = {"max_batched_tokens": [2048, 16384]}
    chunks = _by(_sweep(cat, grid, disaggregate="4x4"), "max_batched_tokens")
    assert chunks[2048]["ttft_s"] > chunks[16384]["ttft_s"]


def test_sweep_disaggregate_and_autoscale_use_the_service_plans(cat) -> None:
    dis = _by(_sweep(cat, {"disaggregate": ["2x3", "4x6"]}), "disaggregate")
    assert dis["2x3"]["replicas"] == 5
    assert dis["4x6"]["replicas"] == 10
    assert dis["4x6"]["usd_per_h"] == pytest.approx(2 * dis["2x3"]["usd_per_h"])
    auto = _by(
        _sweep(cat, {"autoscale": ["target-util=0.5", "target-util=0.9"]}, load_profile="diurnal"),
        "autoscale",
    )
    assert auto["target-util=0.9"]["usd_per_h"] < auto["target-util=0.5"]["usd_per_h"]


def test_sweep_layout_short_of_the_load_is_invalid(cat) -> None:
    df = _sweep(cat, {"disaggregate": ["1x1", "4x4"]})
    assert set(df["disaggregate"]) == {"4x4"}


def test_sweep_ep_on_a_dense_model_is_an_invalid_plan(cat) -> None:
    df = _sweep(cat, {"ep": [1, 2]})
    assert set(df["ep"]) == {1}


def test_sweep_bad_service_values_name_the_key(cat) -> None:
    for grid, key in (
        ({"prefix_cache_hit_rate": [1.5]}, "workload.prefix_cache_hit_rate"),
        ({"disaggregate": ["3by2"]}, "workload.disaggregate"),
        ({"mig": ["big"]}, "workload.mig"),
        ({"scheduler_steps": [2.5]}, "workload.scheduler_steps"),
    ):
        with pytest.raises(InputError) as e:
            _sweep(cat, grid)
        assert key in str(e.value)


def test_optimize_p99_check_carries_the_service_fields(cat) -> None:
    from aitco.decide.optimize import optimize

    def best(hit: float) -> dict[str, Any]:
        spec = SweepSpec.from_dict({
            "kind": "serving",
            "workload": {"model": "llama-3.1-8b", "input_tokens": 2000, "output_tokens": 200,
                         "qps": 10, "prefix_cache_hit_rate": hit},
            "option": {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand"},
            "grid": {"batch": [32, 64]},
            "constraints": {"max_ttft_s": 1.0, "max_tpot_s": 0.05},
            "top_k": 2,
        })  # fmt: skip
        out = optimize(spec, cat)
        assert out["p99_checks"]
        assert all(c.get("available", True) for c in out["p99_checks"])
        return out["best"]

    assert best(0.8)["usd_per_h_at_p99"] <= best(0.0)["usd_per_h_at_p99"]
    assert best(0.8)["p99_ttft_s_at_sweep_replicas"] < best(0.0)["p99_ttft_s_at_sweep_replicas"]


def test_compare_ep_reaches_the_engine(cat) -> None:
    def one(ep: int):
        scn = Scenario.model_validate({
            "name": "moe",
            "workload": {"kind": "inference", "model": "qwen3-30b-a3b", "input_tokens": 1000,
                         "output_tokens": 200, "concurrency": 64, "ep": ep,
                         **({"tp": 2} if ep == 1 else {})},
            "options": [{"hardware": "h100-sxm5-80gb", "gpus": 2, "pricing": "on_demand",
                         "usd_per_gpu_hour": 3.0}],
        })  # fmt: skip
        return compare(scn, cat).options[0].values

    tp2, ep2 = one(1), one(2)
    assert ep2["tpot_s"] != pytest.approx(tp2["tpot_s"], rel=1e-6)


def test_sweep_mig_is_priced_per_slice_and_needs_a_mig_gpu(cat) -> None:
    rows = _by(_sweep(cat, {"mig": [None, "3g.40gb"]}), "mig")
    full, half = rows["none"], rows["3g.40gb"]
    # a 3g.40gb slice: half a GPU's price, 3/7 of its compute -> slower, more slices
    assert half["tpot_s"] > full["tpot_s"]
    spec = SweepSpec.from_dict({
        "kind": "serving",
        "workload": {"model": "llama-3.1-8b", "input_tokens": 512, "output_tokens": 128,
                     "mig": "1g.10gb"},
        "option": {"hardware": "l40s", "gpus": 1, "pricing": "on_demand"},
        "grid": {"batch": [8]},
    })  # fmt: skip
    res = sweep(spec, cat).to_json()
    assert res["valid"] == 0
    assert any("mig" in k for k in res["invalid_reasons"])


def test_sweep_time_slice_is_priced_per_share_and_needs_an_nvidia_gpu(cat) -> None:
    rows = _by(_sweep(cat, {"time_slice": [None, 2]}), "time_slice")
    full, half = rows[1], rows[2]
    assert half["tpot_s"] > full["tpot_s"]
    one = compare(_scn(provider="any", time_slice=2, qps=20), cat).options[0]
    assert half["total_usd"] != pytest.approx(full["total_usd"], rel=1e-6)
    assert one.values["time_slice"] == 2
    spec = SweepSpec.from_dict({
        "kind": "serving",
        "workload": {"model": "llama-3.2-1b", "input_tokens": 512, "output_tokens": 128,
                     "time_slice": 2},
        "option": {"hardware": "tpu-v5e", "gpus": 1, "pricing": "on_demand"},
        "grid": {"batch": [8]},
    })  # fmt: skip
    res = sweep(spec, cat).to_json()
    assert res["valid"] == 0
    assert any("time_slice" in k for k in res["invalid_reasons"])
    with pytest.raises(InputError, match=r"workload\.time_slice"):
        _sweep(cat, {"time_slice": [0]})


@pytest.mark.parametrize(
    "svc",
    [
        {"disaggregate": "2x3"},
        {"load_profile": "diurnal", "autoscale": "target-util=0.7,min=0,max=64"},
    ],
)
def test_sweep_service_plan_total_is_compares(cat, svc: dict[str, Any]) -> None:
    """A disaggregated or autoscaled service row of a sweep is priced with compare's items."""
    wl = {"input_tokens": 2000, "output_tokens": 200, "qps": 20, **svc}
    one = compare(_scn(provider="any", **{**wl, "qps": 20}), cat).options[0]
    rows = _sweep(cat, {}, **svc)
    assert len(rows) == 1
    assert rows["total_usd"].iloc[0] == pytest.approx(one.total_usd, rel=1e-9)
    assert rows["replicas"].iloc[0] == one.values["replicas"]


@pytest.mark.parametrize("svc", [{"time_slice": 2}, {"mig": "3g.40gb"}])
def test_a_shared_gpu_service_at_a_fixed_batch_totals_as_compare(cat, svc: dict[str, Any]) -> None:
    """The same plan (a GPU share at 16 sequences per replica) gives one total in compare and
    in the sweep; one replica on a share still rents a whole GPU in both."""
    wl = {"input_tokens": 2000, "output_tokens": 200, **svc}
    one = compare(_scn(provider="any", qps=None, concurrency=16, **wl), cat).options[0]
    whole = compare(_scn(provider="any", qps=None, concurrency=16, **{**wl, **dict.fromkeys(svc)}),
                    cat).options[0]  # fmt: skip
    spec = SweepSpec.from_dict({
        "kind": "serving", "workload": {"model": "llama-3.1-8b", **wl},
        "option": {"hardware": "h100-sxm5-80gb", "gpus": 1, "pricing": "on_demand",
                   "provider": "any"},
        "grid": {"batch": [16]},
    })  # fmt: skip
    rows = sweep(spec, cat).top
    assert rows["total_usd"].iloc[0] == pytest.approx(one.total_usd, rel=1e-9)
    assert one.total_usd == pytest.approx(whole.total_usd, rel=1e-9)


def test_scenario_plan_shard_devices_reaches_the_engine(cat) -> None:
    def total(plan: dict[str, Any]) -> Any:
        scn = Scenario.model_validate({
            "name": "hsdp",
            "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 1e9,
                         "plan": {"fsdp": True, "tp": 1, "pp": 1, "micro_batch": 1, **plan}},
            "options": [{"hardware": "h100-sxm5-80gb", "gpus": 64, "pricing": "on_demand"}],
        })  # fmt: skip
        return compare(scn, cat).options[0]

    full, hybrid = total({}), total({"shard_devices": 8})
    assert hybrid.values["wall_clock_h"] != pytest.approx(full.values["wall_clock_h"])


def test_scenario_bad_shard_devices_names_the_scenario_field(cat) -> None:
    scn = Scenario.model_validate({
        "name": "hsdp",
        "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 1e9,
                     "plan": {"fsdp": True, "shard_devices": 7}},
        "options": [{"hardware": "h100-sxm5-80gb", "gpus": 64, "pricing": "on_demand"}],
    })  # fmt: skip
    with pytest.raises(InputError) as e:
        compare(scn, cat)
    assert e.value.field == "workload.plan.shard_devices"
    assert e.value.value == 7
