"""Properties of the training model (hypothesis): monotonicity, sharding, units."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.perf import training, training_model
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.flops import model_shape
from aitco.perf.memory import training_memory_bytes
from aitco.perf.roofline import kernel_time_s
from aitco.perf.training import evaluate_plans, hardware_shape

ACC = Accelerator(
    id="p-gpu", vendor="t", family="nvidia-hopper", peak_tflops={"bf16": 989.0, "fp32": 67.0},
    memory_gb=80.0, hbm_bandwidth_gb_s=3350.0, launch_year=2023,
)  # fmt: skip
SYS = System(
    id="p-node", accelerator="p-gpu", devices_per_node=8, intra_node_fabric="nvswitch",
    intra_node_bandwidth_gb_s=450.0, intra_node_latency_us=3.0, scale_up_domain=8,
    scale_out_bandwidth_gb_s=50.0, scale_out_latency_us=8.0,
)  # fmt: skip

pow2 = st.sampled_from([1, 2, 4, 8])


def _model(layers: int = 16, d: int = 2048, heads: int = 16, ff: int = 8192) -> ModelArch:
    return ModelArch(id="p", n_layers=layers, d_model=d, n_heads=heads, n_kv_heads=heads // 2 or 1,
                     d_ff=ff, vocab_size=32000)  # fmt: skip


def _plan(**kw: int) -> dict[str, int]:
    base = dict(tp=1, pp=1, cp=1, ep=1, dp=8, zero=1, micro_batch=1, recompute=0, vp=1)
    base.update(kw)
    return base


def _eval(m: ModelArch, acc: Accelerator = ACC, sys_: System = SYS, gpus: int = 8,
          eff: EfficiencyParams = DEFAULT_EFFICIENCY, **plan: int):  # fmt: skip
    return evaluate_plans(
        model_shape(m), hardware_shape(acc, "bf16", eff), sys_, seq_len=2048,
        global_batch=64, gpus=gpus, precision="bf16", method="full", eff=eff,
        **_plan(**plan),
    )  # fmt: skip


@given(
    layers=st.integers(2, 48),
    extra_layers=st.integers(1, 16),
    ff=st.integers(1024, 16384),
    extra_ff=st.integers(0, 8192),
    tp=pow2,
    recompute=st.integers(0, 2),
)
def test_time_never_falls_as_flops_grow(layers: int, extra_layers: int, ff: int, extra_ff: int,
                                        tp: int, recompute: int) -> None:  # fmt: skip
    small = _eval(_model(layers, ff=ff), tp=tp, dp=8 // tp, recompute=recompute)
    big = _eval(
        _model(layers + extra_layers, ff=ff + extra_ff), tp=tp, dp=8 // tp, recompute=recompute
    )
    assert big["step_time_s"] >= small["step_time_s"]


@given(flops=st.floats(1e6, 1e15), more=st.floats(0, 1e15), nbytes=st.floats(0, 1e12))
def test_kernel_time_monotone_in_flops(flops: float, more: float, nbytes: float) -> None:
    assert kernel_time_s(flops + more, nbytes, 989.0, 3350.0, 0.7, 0.8) >= kernel_time_s(
        flops, nbytes, 989.0, 3350.0, 0.7, 0.8
    )


@given(
    key=st.sampled_from(["tp", "cp", "ep", "dp", "pp"]),
    base=st.sampled_from([1, 2, 4]),
    zero=st.integers(0, 3),
    recompute=st.integers(0, 2),
    mb=st.sampled_from([1, 2, 4]),
)
def test_memory_never_rises_as_a_sharding_degree_grows(
    key: str, base: int, zero: int, recompute: int, mb: int
) -> None:
    from aitco.catalog.schema import MoE

    moe = MoE(n_experts=16, n_active=2, d_ff_expert=2048)
    m = ModelArch(id="moe", n_layers=16, d_model=2048, n_heads=16, n_kv_heads=8, d_ff=8192,
                  vocab_size=32000, moe=moe)  # fmt: skip
    ms = model_shape(m)
    deg = dict(tp=1, pp=1, cp=1, ep=1, dp=1)

    def mem(v: int) -> float:
        d = dict(deg)
        d[key] = v
        if key == "ep":
            d["dp"] = v  # experts are sharded inside the data-parallel group
        out = training_memory_bytes(
            ms, seq_len=4096, precision="bf16", method="full", optimizer_bytes=12.0, zero=zero,
            micro_batch=mb, recompute=recompute, n_micro=16, vp=1, **d,
        )  # fmt: skip
        return float(out["total"])

    assert mem(2 * base) <= mem(base) * (1 + 1e-12)


@given(dp=st.sampled_from([1, 2, 4, 8, 16]), factor=st.sampled_from([2, 4]), zero=st.integers(0, 3),
       tp=pow2)  # fmt: skip
def test_more_gpus_never_lower_total_memory(dp: int, factor: int, zero: int, tp: int) -> None:
    ms = model_shape(_model())

    def total(d: int) -> float:
        per = training_memory_bytes(
            ms, seq_len=2048, precision="bf16", method="full", optimizer_bytes=12.0, tp=tp, pp=1,
            cp=1, ep=1, dp=d, zero=zero, micro_batch=1, recompute=0, n_micro=4,
        )["total"]  # fmt: skip
        return float(per) * d * tp

    assert total(dp * factor) >= total(dp) * (1 - 1e-12)


@given(k=st.sampled_from([0.5, 2.0, 10.0, 1000.0]), tp=pow2, recompute=st.integers(0, 2))
def test_invariant_to_the_unit_of_time(k: float, tp: int, recompute: int) -> None:
    """Measuring time in a unit k times smaller: every rate x k, every latency / k.

    The step time must come out exactly k times smaller and MFU unchanged.
    """
    m = _model()
    acc_k = ACC.model_copy(update={"peak_tflops": {d: v * k for d, v in ACC.peak_tflops.items()},
                                   "hbm_bandwidth_gb_s": ACC.hbm_bandwidth_gb_s * k})  # fmt: skip
    sys_k = SYS.model_copy(update={
        "intra_node_bandwidth_gb_s": SYS.intra_node_bandwidth_gb_s * k,
        "scale_out_bandwidth_gb_s": SYS.scale_out_bandwidth_gb_s * k,
        "intra_node_latency_us": SYS.intra_node_latency_us / k,
        "scale_out_latency_us": SYS.scale_out_latency_us / k,
    })  # fmt: skip
    a = _eval(m, tp=tp, dp=8 // tp, recompute=recompute)
    e = DEFAULT_EFFICIENCY
    eff_k = e.with_overrides(
        {
            "step_overhead_s": e.step_overhead_s / k,
            "gemm_latency_s": e.gemm_latency_s / k,
            "gemm_tile_fixed_s": e.gemm_tile_fixed_s / k,
            "attention_block_fixed_s": {n: v / k for n, v in e.attention_block_fixed_s.items()},
        }
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training_model, "KERNEL_OVERHEAD_S", training_model.KERNEL_OVERHEAD_S / k)
        b = _eval(m, acc_k, sys_k, tp=tp, dp=8 // tp, recompute=recompute, eff=eff_k)
    np.testing.assert_allclose(b["step_time_s"] * k, a["step_time_s"], rtol=1e-9)
    np.testing.assert_allclose(b["mfu"], a["mfu"], rtol=1e-9)
    np.testing.assert_allclose(b["memory_per_gpu_bytes"], a["memory_per_gpu_bytes"], rtol=1e-12)


@given(seq=st.sampled_from([512, 1024, 2048, 4096]), tokens=st.sampled_from([2**19, 2**20, 2**21]))
def test_batch_in_tokens_or_sequences_is_the_same(seq: int, tokens: int) -> None:
    m = _model()
    gb = tokens // seq
    r1 = training.estimate_training(m, ACC, SYS, 8, seq_len=seq, global_batch=gb,
                                    plan={"tp": 1, "dp": 8, "micro_batch": 1, "zero": 1,
                                          "recompute": "none"})  # fmt: skip
    assert r1.values["tokens_per_s"] == pytest.approx(gb * seq / r1.values["step_time_s"])
