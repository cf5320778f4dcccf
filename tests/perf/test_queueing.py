"""Discrete-event simulation of continuous batching: analytic limits and sanity checks."""

from __future__ import annotations

import numpy as np
import pytest

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InputError
from aitco.perf.efficiency import EfficiencyParams
from aitco.perf.inference import iteration_model, resolve_precisions
from aitco.perf.queueing import (
    md1_mean_wait_s,
    mm1_mean_sojourn_s,
    poisson_arrivals_s,
    sample_lengths,
    simulate_continuous_batching,
    simulate_poisson,
)
from aitco.perf.serving import (
    cold_start,
    energy_per_token,
    max_request_rate,
    power_w,
    replicas_for_slo,
    scale_up_lag_cost,
)

MODEL = ModelArch(
    id="m", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab_size=128256
)
GPU = Accelerator(
    id="g", vendor="t", family="nvidia-hopper", memory_gb=80, hbm_bandwidth_gb_s=3000,
    peak_tflops={"bf16": 1000.0}, launch_year=2023, tdp_w=700,
)  # fmt: skip
NODE = System(
    id="n", accelerator="g", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450,
)  # fmt: skip
EFF = EfficiencyParams(
    gemm={"nvidia-hopper": 0.6}, decode_hbm=0.8, serving_overhead_s=0.002, request_path_s=0.0
)
IT = iteration_model(
    MODEL, GPU, NODE, tp=1, pp=1, precisions=resolve_precisions(GPU, "bf16", None), efficiency=EFF
)
BIG = 10**9  # KV capacity that never binds


def test_md1_limit_single_server_one_token() -> None:
    # one sequence at a time, one output token: service = a fixed prefill => M/D/1
    n, prompt = 20_000, 512
    service = float(IT.prefill_s(prompt))
    lam = 0.6 / service
    rng = np.random.default_rng(1)
    t = poisson_arrivals_s(lam, n, rng)
    res = simulate_continuous_batching(
        IT, t, np.full(n, prompt), np.ones(n, dtype=np.int64), max_num_seqs=1,
        kv_capacity_tokens=BIG,
    )  # fmt: skip
    wait = res.ttft_s - service
    assert float(np.min(wait)) >= -1e-12
    assert float(np.mean(wait)) == pytest.approx(float(md1_mean_wait_s(lam, service)), rel=0.1)


def test_mg1_pollaczek_khinchine_with_variable_outputs() -> None:
    # one sequence at a time with random output lengths: M/G/1, mean wait = lam E[S^2] / 2(1-rho)
    n, prompt = 20_000, 64
    rng = np.random.default_rng(2)
    outs = sample_lengths(50, 1.0, n, rng)
    pre = float(IT.prefill_s(prompt))
    s = np.array([pre + float(IT.decode_step_s(1, prompt + (o + 1) / 2)) * (o - 1) for o in outs])
    lam = 0.5 / s.mean()
    t = poisson_arrivals_s(lam, n, rng)
    res = simulate_continuous_batching(
        IT, t, np.full(n, prompt), outs, max_num_seqs=1, kv_capacity_tokens=BIG
    )
    expected = lam * np.mean(s**2) / (2 * (1 - lam * s.mean()))
    assert float(np.mean(res.ttft_s - pre)) == pytest.approx(expected, rel=0.12)
    # service times are exact per request, context growth included
    assert float(np.mean(res.finish_s - res.first_token_s + pre)) == pytest.approx(
        float(s.mean()), rel=0.01
    )


def test_light_load_latency_is_unloaded_latency() -> None:
    res = simulate_poisson(
        IT, 0.01, 256, 64, max_num_seqs=256, kv_capacity_tokens=BIG, num_requests=300, seed=3
    )
    assert np.median(res.ttft_s) == pytest.approx(float(IT.prefill_s(256)), rel=1e-6)
    tpot1 = float(IT.decode_step_s(1, 256 + 32))
    assert np.median(res.tpot_s) == pytest.approx(tpot1, rel=0.02)


def test_load_raises_tpot_and_batch() -> None:
    mu = max_request_rate(IT, 256, 128, 256)
    lo = simulate_poisson(IT, 0.2 * mu, 256, 128, max_num_seqs=256, kv_capacity_tokens=BIG,
                          num_requests=3000, seed=4)  # fmt: skip
    hi = simulate_poisson(IT, 0.8 * mu, 256, 128, max_num_seqs=256, kv_capacity_tokens=BIG,
                          num_requests=3000, seed=4)  # fmt: skip
    assert hi.mean_batch > lo.mean_batch
    assert np.median(hi.tpot_s) > np.median(lo.tpot_s)
    # throughput at 80 % load is the offered load
    assert hi.throughput_tokens_per_s == pytest.approx(0.8 * mu * 128, rel=0.1)


def test_overload_queue_grows() -> None:
    mu = max_request_rate(IT, 256, 128, 64)
    res = simulate_poisson(IT, 3 * mu, 256, 128, max_num_seqs=64, kv_capacity_tokens=BIG,
                           num_requests=3000, seed=5)  # fmt: skip
    ttft = res.ttft_s
    assert np.mean(ttft[-300:]) > 5 * np.mean(ttft[:300])
    # the server delivers about its capacity
    assert res.throughput_tokens_per_s == pytest.approx(mu * 128, rel=0.25)


def test_kv_capacity_limits_batch() -> None:
    res = simulate_poisson(IT, 1000.0, 100, 100, max_num_seqs=1000, kv_capacity_tokens=2000,
                           num_requests=500, seed=6)  # fmt: skip
    assert res.mean_batch <= 10 + 1e-9  # 2000 tokens / 200 per request


def test_multistep_scheduling_delays_admission() -> None:
    kw = {"max_num_seqs": 256, "kv_capacity_tokens": BIG, "num_requests": 2000, "seed": 7}
    one = simulate_poisson(IT, 5.0, 200, 200, **kw)
    ten = simulate_poisson(IT, 5.0, 200, 200, scheduler_steps=10, **kw)
    assert np.median(ten.ttft_s) > np.median(one.ttft_s) + 2 * float(IT.decode_step_s(4, 300))


def test_goodput_and_percentiles() -> None:
    res = simulate_poisson(IT, 5.0, 200, 100, max_num_seqs=256, kv_capacity_tokens=BIG,
                           num_requests=1000, seed=8, slo_ttft_s=1e-6)  # fmt: skip
    assert res.goodput_fraction == 0.0
    p = res.percentiles()
    assert p["p50_ttft_s"] <= p["p90_ttft_s"] <= p["p99_ttft_s"]


def test_bad_simulation_inputs() -> None:
    with pytest.raises(InputError):
        simulate_continuous_batching(IT, [1.0, 0.5], [1, 1], [1, 1], max_num_seqs=1,
                                     kv_capacity_tokens=10)  # fmt: skip
    with pytest.raises(InputError):
        simulate_continuous_batching(IT, [0.0], [100], [100], max_num_seqs=1,
                                     kv_capacity_tokens=10)  # fmt: skip
    with pytest.raises(InputError):
        poisson_arrivals_s(0.0, 10, np.random.default_rng(0))


def test_analytic_queues() -> None:
    assert float(mm1_mean_sojourn_s(1.0, 2.0)) == pytest.approx(1.0)
    assert np.isinf(mm1_mean_sojourn_s(2.0, 2.0))
    assert float(md1_mean_wait_s(0.5, 1.0)) == pytest.approx(0.5)


def test_replicas_for_slo_monotone_in_load() -> None:
    kw = {"max_num_seqs": 256, "kv_capacity_tokens": BIG, "slo_ttft_s": 0.5, "slo_tpot_s": 0.05}
    r1 = replicas_for_slo(IT, 5.0, 256, 128, **kw)
    r2 = replicas_for_slo(IT, 50.0, 256, 128, **kw)
    assert r1 is not None
    assert r2 is not None
    assert r2 >= r1 >= 1
    # an objective below the unloaded step is impossible
    assert replicas_for_slo(IT, 5.0, 256, 128, max_num_seqs=256, kv_capacity_tokens=BIG,
                            slo_tpot_s=1e-5) is None  # fmt: skip


def test_cold_start_and_lag_cost() -> None:
    cs = cold_start(140.0, source="nvme")
    assert cs.load_s == pytest.approx(20.0)
    assert cs.total_s == pytest.approx(cs.provision_s + 20.0 + cs.warmup_s)
    assert cold_start(140.0, source="warm-node").provision_s == 0.0
    lag = scale_up_lag_cost(10.0, 4.0, 200.0, replica_usd_per_h=10.0)
    assert lag["replicas_added"] == 3
    assert lag["backlog_requests"] == pytest.approx(2000.0)
    assert lag["backlog_drain_s"] == pytest.approx(1000.0)
    with pytest.raises(InputError):
        cold_start(1.0, source="floppy")


def test_power_and_energy() -> None:
    assert float(power_w(700, 0.0, 0.25)) == pytest.approx(175.0)
    assert float(power_w(700, 1.0, 0.25)) == pytest.approx(700.0)
    e = energy_per_token(GPU, 2, 1000.0, utilization=1.0)
    assert e["power_w"] == pytest.approx(1400.0)
    assert e["energy_per_token_j"] == pytest.approx(1.4)
    assert e["peak_tops_per_w"] == pytest.approx(1000 / 700)


def test_chunked_prefill_splits_long_prompts() -> None:
    t = np.array([0.0])
    kw = {"max_num_seqs": 8, "kv_capacity_tokens": BIG, "max_num_tokens": 512}
    whole = simulate_continuous_batching(IT, t, [4096], [2], chunked=False, **kw)
    chunk = simulate_continuous_batching(IT, t, [4096], [2], chunked=True, **kw)
    assert whole.iterations == 2
    assert chunk.iterations == 9  # 8 chunks of 512 + one decode
    # eight passes over the weights instead of one: a slower first token, never a faster one
    assert chunk.ttft_s[0] > whole.ttft_s[0]
    assert whole.ttft_s[0] == pytest.approx(float(IT.prefill_s(4096)), rel=1e-9)


def test_chunked_prefill_protects_running_decodes() -> None:
    # short chats running while long documents arrive: chunking caps the decode stall
    rng = np.random.default_rng(9)
    n = 400
    t = np.sort(rng.uniform(0, 20, n))
    ins = np.where(rng.random(n) < 0.1, 8000, 100)
    outs = np.full(n, 100)
    kw = {"max_num_seqs": 64, "kv_capacity_tokens": BIG, "max_num_tokens": 1024}
    a = simulate_continuous_batching(IT, t, ins, outs, chunked=False, **kw)
    b = simulate_continuous_batching(IT, t, ins, outs, chunked=True, **kw)
    gaps = lambda r: r.percentiles()["p99_tpot_s"]  # noqa: E731
    assert gaps(b) <= gaps(a)


def test_prefill_only_iterations_stall_the_running_decodes() -> None:
    # one long decode running; a prompt arrives: with mixed batching the decode emits a token
    # in the prompt's iteration, with prefill-first (vLLM V0, SGLang extend) it waits it out
    t = np.array([0.0, 0.05])
    ins, outs = np.array([16, 2048]), np.array([400, 2])
    kw: dict = {"max_num_seqs": 8, "kv_capacity_tokens": BIG, "chunked": False}
    mixed = simulate_continuous_batching(IT, t, ins, outs, mixed=True, **kw)
    stall = simulate_continuous_batching(IT, t, ins, outs, mixed=False, **kw)
    # the prompt's own first token comes no later (its iteration carries no decodes)
    assert stall.first_token_s[1] <= mixed.first_token_s[1] + 1e-12
    # the long request finishes later by the decode step it did not get during the prefill
    # (the mixed iteration costs about the prefill alone: its linear layers are compute-bound)
    delay = stall.finish_s[0] - mixed.finish_s[0]
    assert delay == pytest.approx(float(IT.decode_step_s(1, 300)), rel=0.25)
    assert stall.iterations == mixed.iterations - 1  # one iteration emitted no decode token


def test_stalled_prefill_steady_state_adds_a_prefill_iteration() -> None:
    from aitco.perf.inference import continuous_batching_step

    b, i, o = 64.0, 512.0, 64.0  # one prompt starts per decode step per 1 output token
    mixed = float(continuous_batching_step(IT, b, i, o))
    stalled = float(continuous_batching_step(IT, b, i, o, separate_prefill_tokens=8192.0))
    decode = float(IT.decode_step_s(b, i + o / 2.0))
    prefill = float(IT.prefill_s(i, b / o))  # the b/o prompts together, in one iteration
    assert stalled == pytest.approx(decode + prefill, rel=1e-9)
    assert stalled > mixed
    assert max_request_rate(IT, i, o, 64, separate_prefill_tokens=8192.0) < max_request_rate(
        IT, i, o, 64
    )


def test_request_path_shifts_first_and_last_token_not_the_gpu() -> None:
    from dataclasses import replace

    t = poisson_arrivals_s(5.0, 400, np.random.default_rng(3))
    ins, outs = np.full(400, 300), np.full(400, 40)
    kw: dict = {"max_num_seqs": 64, "kv_capacity_tokens": BIG}
    a = simulate_continuous_batching(IT, t, ins, outs, **kw)
    b = simulate_continuous_batching(replace(IT, request_path_s=0.03), t, ins, outs, **kw)
    assert np.allclose(b.ttft_s, a.ttft_s + 0.03)
    assert np.allclose(b.tpot_s, a.tpot_s)
    assert b.iterations == a.iterations
