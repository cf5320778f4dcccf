from __future__ import annotations

from pathlib import Path

import pytest

from aitco.calibrate.profile import CalibrationProfile, ParamFit, load_profile, save_profile
from aitco.errors import InputError
from aitco.perf.efficiency import DEFAULT_EFFICIENCY


def test_yaml_round_trip(tmp_path: Path) -> None:
    eff = DEFAULT_EFFICIENCY.with_overrides({"gemm": {"nvidia-hopper": 0.55}, "hbm": 0.7})
    p = CalibrationProfile(
        accelerator="h100-sxm5-80gb",
        family="nvidia-hopper",
        efficiency=eff,
        fitted={"hbm": ParamFit(value=0.7, default=0.8, n_observations=3, residual_rms=0.01)},
        measurements={"bus_bandwidth_plateau_gb_s": 338.82},
        sources=["nccl.txt"],
    )
    with pytest.raises(InputError, match="existing directory"):  # no folder created (issue 18)
        save_profile(p, tmp_path / "sub" / "profile.yaml")
    assert not (tmp_path / "sub").exists()
    (tmp_path / "sub").mkdir()
    out = save_profile(p, tmp_path / "sub" / "profile.yaml")
    q = load_profile(out)
    assert q == p
    assert q.efficiency.gemm_for("nvidia-hopper") == pytest.approx(0.55)
    assert q.efficiency.hbm == pytest.approx(0.7)


def test_partial_efficiency_takes_defaults(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("profile_version: 1\nefficiency:\n  hbm: 0.6\n")
    p = load_profile(f)
    assert p.efficiency.hbm == pytest.approx(0.6)
    assert p.efficiency.intra_node_link == DEFAULT_EFFICIENCY.intra_node_link


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("efficiency:\n  hbm: 1.7\n", "hbm"),
        ("- a\n- b\n", "profile"),
        ("profile_version: 99\n", "profile_version"),
        ("efficiency: {hbm: [\n", "profile"),
        ("efficiency:\n  no_such_param: 0.5\n", "no_such_param"),
        ("efficiency:\n  request_path_by_engine: {vllm: 3.0}\n", "request_path_by_engine.vllm"),
        ("efficiency:\n  training_gemm: {nvidia-ampere: 7.0}\n", "training_gemm.nvidia-ampere"),
        ("efficiency:\n  attention_by_family: {nvidia-hopper: 0}\n", "attention_by_family"),
        ("efficiency:\n  attention_block_fixed_s: {fa2: 0.5}\n", "attention_block_fixed_s.fa2"),
        ("efficiency:\n  gemm_tile_fixed_s: 0.5\n", "gemm_tile_fixed_s"),
        (
            "efficiency:\n  elementwise_hbm_by_kernels: {fused: 1.5}\n",
            "elementwise_hbm_by_kernels.fused",
        ),
    ],
)
def test_bad_profiles_raise_input_error(tmp_path: Path, text: str, field: str) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as info:
        load_profile(f)
    assert field in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(InputError, match="--calibration"):
        load_profile("/nonexistent/profile.yaml")
