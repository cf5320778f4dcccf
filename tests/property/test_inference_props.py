"""Properties of the inference model (hypothesis): monotonicity and linearity."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitco.catalog.schema import Accelerator, ModelArch, MoE, System
from aitco.perf.efficiency import DEFAULT_EFFICIENCY
from aitco.perf.inference import estimate_inference, iteration_model, resolve_precisions
from aitco.perf.kvcache import kv_capacity

DENSE = ModelArch(
    id="d", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab_size=128256
)
MOE = ModelArch(
    id="moe", n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336, vocab_size=32000,
    moe=MoE(n_experts=8, n_active=2, d_ff_expert=14336),
)  # fmt: skip
NODE = System(
    id="n", accelerator="g", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450,
)  # fmt: skip


def _acc(bw: float = 3350.0, mem: float = 80.0) -> Accelerator:
    return Accelerator(
        id="g", vendor="t", family="nvidia-hopper", memory_gb=mem, hbm_bandwidth_gb_s=bw,
        peak_tflops={"bf16": 989.0, "fp8": 1979.0}, launch_year=2023, tdp_w=700,
    )  # fmt: skip


@given(
    b1=st.integers(1, 1024),
    b2=st.integers(1, 1024),
    ctx=st.integers(1, 32768),
    tp=st.sampled_from([1, 2, 4, 8]),
    moe=st.booleans(),
    prec=st.sampled_from(["bf16", "fp8", "int4"]),
)
def test_tpot_never_falls_as_batch_grows(
    b1: int, b2: int, ctx: int, tp: int, moe: bool, prec: str
) -> None:
    acc = _acc()
    it = iteration_model(
        MOE if moe else DENSE, acc, NODE, tp=tp, pp=1,
        precisions=resolve_precisions(acc, prec, None), efficiency=DEFAULT_EFFICIENCY,
    )  # fmt: skip
    lo, hi = sorted((b1, b2))
    assert float(it.decode_step_s(lo, ctx)) <= float(it.decode_step_s(hi, ctx)) * (1 + 1e-12)


@given(
    bw1=st.floats(500.0, 10000.0),
    bw2=st.floats(500.0, 10000.0),
    i=st.integers(16, 4096),
    o=st.integers(16, 4096),
    prec=st.sampled_from(["bf16", "fp8"]),
)
def test_throughput_never_falls_when_bandwidth_rises(
    bw1: float, bw2: float, i: int, o: int, prec: str
) -> None:
    lo, hi = sorted((bw1, bw2))
    kw = {"input_tokens": i, "output_tokens": o, "mode": "offline", "precision": prec}
    slow = estimate_inference(DENSE, _acc(lo), NODE, 1, **kw).values["output_tokens_per_s"]
    fast = estimate_inference(DENSE, _acc(hi), NODE, 1, **kw).values["output_tokens_per_s"]
    assert fast >= slow * (1 - 1e-12)


@given(
    free=st.floats(1.0, 500.0),
    k=st.integers(2, 8),
    i=st.integers(1, 8192),
    o=st.integers(1, 8192),
    kvp=st.sampled_from(["bf16", "fp8"]),
)
def test_kv_capacity_is_linear_in_free_memory(
    free: float, k: int, i: int, o: int, kvp: str
) -> None:
    one = kv_capacity(DENSE, free, input_tokens=i, output_tokens=o, kv_precision=kvp)
    many = kv_capacity(DENSE, free * k, input_tokens=i, output_tokens=o, kv_precision=kvp)
    # floor(k F / m) lies within k of k floor(F / m)
    assert k * one.max_sequences <= many.max_sequences <= k * one.max_sequences + k
    assert k * one.max_tokens <= many.max_tokens <= k * one.max_tokens + k
    assert many.kv_cache_gb == free * k


@given(mem=st.floats(40.0, 400.0), extra=st.floats(0.0, 200.0))
def test_more_memory_never_lowers_capacity(mem: float, extra: float) -> None:
    a = estimate_inference(DENSE, _acc(mem=mem), NODE, 1, mode="offline").values
    b = estimate_inference(DENSE, _acc(mem=mem + extra), NODE, 1, mode="offline").values
    assert b["max_concurrency"] >= a["max_concurrency"]
    assert b["output_tokens_per_s"] >= a["output_tokens_per_s"] * (1 - 1e-12)
