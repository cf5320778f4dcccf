"""Measurements derived from parsed logs (numbers checked by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aitco.calibrate import measurements as meas
from aitco.calibrate.parsers._telemetry import TelemetryAggregator
from aitco.calibrate.parsers.dcgm import parse_dcgm
from aitco.calibrate.parsers.focus import parse_focus
from aitco.calibrate.parsers.nccl_tests import parse_nccl
from aitco.calibrate.parsers.train_log import parse_train_log
from aitco.errors import InputError

DATA = Path(__file__).parent / "data"


def test_training_throughput_by_hand(catalog) -> None:
    acc = catalog.accelerator("h100-sxm5-80gb")
    model = catalog.resolve_model("llama-3-8b")
    s = parse_train_log(DATA / "steps.jsonl").summary  # median step 1.005 s, tokens/s/GPU 3980.1
    t = meas.training_throughput(s, gpus=8, seq_len=2048, model=model, acc=acc)
    assert t["tokens_per_s_per_gpu"] == pytest.approx(3980.1)  # the log's own figure wins
    f_tok = meas.model_flops_per_token(model, 2048)
    assert t["achieved_tflops_per_gpu"] == pytest.approx(f_tok * 3980.1 / 1e12)
    assert t["mfu"] == pytest.approx(f_tok * 3980.1 / 1e12 / 989.4)
    assert t["mfu_from_log"] == pytest.approx(0.4975)
    assert t["gpu_hours"] == pytest.approx(8 * 1.005 * 4 / 3600)
    # without tokens/s in the log: from global batch x seq_len / step time
    t2 = meas.training_throughput(
        {"step_time_s": 2.0, "n_steps": 10}, gpus=4, seq_len=1000, global_batch=8
    )
    assert t2["tokens_per_s_per_gpu"] == pytest.approx(8 * 1000 / 2.0 / 4)
    assert t2["tokens_per_step"] == 8000
    with pytest.raises(InputError):
        meas.training_throughput({}, gpus=0)


def test_loss_chain_adds_up() -> None:
    rows = meas.loss_chain(
        10.0, 4.0, {"exposed_communication": 1.5, "data_loading": 0.5, "optimizer": 1.0}
    )
    by = {r["item"]: r for r in rows}
    assert by["compute_below_peak"]["time_s"] == pytest.approx(10 - 3 - 4)
    assert sum(r["time_s"] for r in rows) == pytest.approx(10.0)
    assert rows[-1]["throughput_fraction_after"] == pytest.approx(0.4)  # the MFU
    assert by["other"]["time_s"] == pytest.approx(0.0)
    with pytest.raises(InputError):
        meas.loss_chain(0.0, 1.0, {})


def test_bus_bandwidth_intra_node(catalog) -> None:
    system = catalog.system("hgx-h100-8")
    s = parse_nccl(DATA / "nccl_v217_dup_header.txt").summary  # 4 ranks, one node
    b = meas.bus_bandwidth(s, system)
    assert b["scope"] == "intra-node"
    assert b["link_bandwidth_gb_s"] == pytest.approx(450)
    assert b["busbw_to_link_ratio"] == pytest.approx(282.32 / 450)
    # ring all-reduce ideal: 2(n-1)/n M/B + 2(n-1) alpha
    m, n = 1073741824, 4
    ideal = 2 * (n - 1) / n * m / 450e9 + 2 * (n - 1) * system.intra_node_latency_us * 1e-6
    assert b["ideal_time_s"] == pytest.approx(ideal, rel=1e-6)
    assert b["measured_time_s"] == pytest.approx(5705.0e-6)  # in-place row, best busbw
    assert b["comm_amplification"] == pytest.approx(5705.0e-6 / ideal)


def test_bus_bandwidth_fixture_scale_out(fixtures_dir: Path, catalog) -> None:
    s = parse_nccl(fixtures_dir / "nccl_all_reduce_perf.txt").summary
    b = meas.bus_bandwidth(s, catalog.system("hgx-h100-8"))
    assert b["scope"] == "scale-out"
    assert b["bus_bandwidth_plateau_gb_s"] == pytest.approx(338.82)
    # NCCL beats the flat-ring-over-NICs ideal the model assumes across nodes
    assert b["comm_amplification"] < 1


def test_idle_accelerators_and_cost() -> None:
    s = parse_dcgm(DATA / "dcgm_power_energy.txt").summary
    r = meas.idle_accelerators(s, usd_per_accelerator_hour=3.6)
    assert r["idle_devices"] == ["GPU 1"]
    assert r["idle_gpu_hours"] == pytest.approx(6 / 3600)
    assert r["idle_cost_usd"] == pytest.approx(6 / 3600 * 3.6)
    with pytest.raises(InputError):
        meas.idle_accelerators({"idle_gpu_hours": None})


def test_energy_per_token_and_billed_rate() -> None:
    e = meas.energy_per_token(3.6e6, 1e6)
    assert e["j_per_token"] == pytest.approx(3.6)
    assert e["kwh_per_million_tokens"] == pytest.approx(1.0)
    assert meas.energy_per_token(None, 5)["j_per_token"] is None
    assert meas.telemetry_energy_j({"gpu_energy_kwh": 2.0}) == pytest.approx(7.2e6)
    f = parse_focus(DATA / "focus_gpu.csv").summary
    r = meas.billed_rate(f)
    assert r["billed_cost_usd_per_gpu_h"] == pytest.approx(12.29)
    assert r["discount_vs_list"] == pytest.approx(1 - 9.8325 / 12.29)
    with pytest.raises(InputError):
        meas.billed_rate({"gpu_hours": 0})


_pos = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False)


@given(step=_pos, ideal_share=st.floats(0.01, 1.0), parts=st.lists(_pos, max_size=4))
def test_loss_chain_properties(step: float, ideal_share: float, parts: list[float]) -> None:
    named = {f"part{i}": p for i, p in enumerate(parts)}
    rows = meas.loss_chain(step, ideal_share * step, named)
    # the items always add up to the measured step, and the last fraction is ideal / step
    assert sum(r["time_s"] for r in rows) == pytest.approx(step, rel=1e-9, abs=1e-12)
    assert rows[-1]["throughput_fraction_after"] == pytest.approx(ideal_share, rel=1e-6)


@given(
    powers=st.lists(st.floats(0, 2000), min_size=1, max_size=30),
    scale=st.floats(0.1, 10),
    dt=st.floats(0.01, 60),
)
def test_integrated_energy_is_linear(powers: list[float], scale: float, dt: float) -> None:
    a, b = TelemetryAggregator(), TelemetryAggregator()
    for p in powers:
        a.add("GPU 0", dt, {"POWER": p}, power_w=p, util=0.5)
        b.add("GPU 0", dt, {"POWER": p * scale}, power_w=p * scale, util=0.5)
    ea, eb = a.summary()["energy_j"], b.summary()["energy_j"]
    assert eb == pytest.approx(ea * scale, rel=1e-9, abs=1e-9)
    assert a.summary()["gpu_hours"] == pytest.approx(len(powers) * dt / 3600)
