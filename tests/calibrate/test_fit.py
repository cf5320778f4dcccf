"""EfficiencyFit: sklearn conventions and the round trip (recover known parameters)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aitco.calibrate.fit import EfficiencyFit, NotFittedError, default_predict, profile_from_fit
from aitco.calibrate.observations import Observation
from aitco.errors import InputError
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams

TRUE = {
    "gemm": {"nvidia-hopper": 0.62},
    "hbm": 0.71,
    "intra_node_link": 0.66,
    "scale_out_link": 0.55,
}


@pytest.fixture(scope="module")
def hw(catalog):
    acc, system = catalog.hardware("h100-sxm5-80gb")
    return acc, system, catalog.resolve_model("llama-3-8b")


def _synthetic(hw, eff: EfficiencyParams, noise: float = 0.0, seed: int = 0) -> list[Observation]:
    acc, system, model = hw
    rng = np.random.default_rng(seed)
    obs = []

    def mk(kind: str, cond: dict, m=None) -> None:
        o = Observation(kind=kind, value=1.0, acc=acc, system=system, model=m, conditions=cond)
        o.value = default_predict(o, eff) * math.exp(noise * rng.standard_normal())
        obs.append(o)

    for n in (8, 16, 32):
        for s in (2**27, 2**30, 2**33):
            mk("collective_time_s", {"collective": "all_reduce", "message_bytes": s, "n_ranks": n})
    mk("collective_time_s", {"collective": "all_gather", "message_bytes": 2**30, "n_ranks": 8})
    for dtype in ("bf16", "fp16"):
        mk("matmul_tflops", {"dtype": dtype, "size": 8192})
    mk("memory_bandwidth_gb_s", {})
    mk(
        "step_time_s",
        {"gpus": 64, "seq_len": 8192, "global_batch": 512, "plan": {"tp": 1, "pp": 1, "dp": 64}},
        model,
    )
    return obs


def test_init_only_stores() -> None:
    f = EfficiencyFit(params=("hbm", "nonsense"), max_iter=3)
    assert f.params == ("hbm", "nonsense")
    assert f.max_iter == 3
    assert not hasattr(f, "params_")


def test_round_trip_recovers_known_parameters(hw) -> None:
    true = DEFAULT_EFFICIENCY.with_overrides(TRUE)
    obs = _synthetic(hw, true)
    fit = EfficiencyFit().fit(obs)
    assert fit is not None
    assert isinstance(fit, EfficiencyFit)
    assert fit.params_["gemm:nvidia-hopper"] == pytest.approx(0.62, abs=1e-4)
    assert fit.params_["hbm"] == pytest.approx(0.71, abs=1e-4)
    assert fit.params_["intra_node_link"] == pytest.approx(0.66, abs=1e-4)
    assert fit.params_["scale_out_link"] == pytest.approx(0.55, abs=1e-4)
    assert np.max(np.abs(fit.residuals_)) < 1e-6
    assert fit.unconstrained_ == ["decode_hbm", "serving_overhead_s"]  # no serving observations
    np.testing.assert_allclose(fit.predict(obs), [o.value for o in obs], rtol=1e-5)


def test_round_trip_with_noise_within_tolerance(hw) -> None:
    true = DEFAULT_EFFICIENCY.with_overrides(TRUE)
    fit = EfficiencyFit().fit(_synthetic(hw, true, noise=0.02, seed=3))
    # 2 % log-noise on ~15 observations: each parameter within 5 % of truth
    assert fit.params_["intra_node_link"] == pytest.approx(0.66, rel=0.05)
    assert fit.params_["scale_out_link"] == pytest.approx(0.55, rel=0.05)
    assert fit.params_["gemm:nvidia-hopper"] == pytest.approx(0.62, rel=0.05)
    assert 0.005 < float(np.sqrt(np.mean(fit.residuals_**2))) < 0.05
    assert all(v is not None and v > 0 for v in fit.stderr_.values())


def test_unconstrained_parameters_keep_defaults(hw) -> None:
    acc, _, _ = hw
    o = Observation(kind="memory_bandwidth_gb_s", value=2500.0, acc=acc)
    fit = EfficiencyFit(params=("hbm", "intra_node_link")).fit([o])
    assert fit.fitted_ == ["hbm"]
    assert fit.unconstrained_ == ["intra_node_link"]
    assert fit.params_["hbm"] == pytest.approx(2500 / 3350, rel=1e-6)
    assert fit.efficiency_.intra_node_link == DEFAULT_EFFICIENCY.intra_node_link


def test_parameter_at_bound_is_reported(hw) -> None:
    acc, _, _ = hw
    o = Observation(kind="memory_bandwidth_gb_s", value=5000.0, acc=acc)  # above the 3350 GB/s peak
    fit = EfficiencyFit(params=("hbm",)).fit([o])
    assert fit.at_bound_ == ["hbm"]
    prof = profile_from_fit(fit, accelerator=acc.id, family=acc.family)
    assert any("at its bound" in n for n in prof.notes)


def test_pluggable_predict_fn(hw) -> None:
    acc, _, _ = hw

    def simple_roofline(obs: Observation, eff: EfficiencyParams) -> float:
        return obs.conditions["peak"] * eff.hbm

    obs = [
        Observation(kind="memory_bandwidth_gb_s", value=0.5 * p, acc=acc, conditions={"peak": p})
        for p in (100.0, 200.0, 400.0)
    ]
    fit = EfficiencyFit(params=("hbm",), predict_fn=simple_roofline).fit(obs)
    assert fit.params_["hbm"] == pytest.approx(0.5, abs=1e-6)


def test_profile_from_fit(hw) -> None:
    true = DEFAULT_EFFICIENCY.with_overrides(TRUE)
    fit = EfficiencyFit().fit(_synthetic(hw, true))
    prof = profile_from_fit(
        fit,
        accelerator="h100-sxm5-80gb",
        family="nvidia-hopper",
        sources=["a.txt", "a.txt"],
        measurements={"x": 1.0},
    )
    assert prof.efficiency.gemm_for("nvidia-hopper") == pytest.approx(0.62, abs=1e-4)
    assert prof.fitted["hbm"].n_observations >= 1
    assert prof.fitted["intra_node_link"].n_observations == 4  # the 8-rank collectives
    assert prof.sources == ["a.txt"]


def test_errors() -> None:
    with pytest.raises(InputError):
        EfficiencyFit().fit([])
    with pytest.raises(NotFittedError):  # scikit-learn's exception (issue 17)
        EfficiencyFit().predict([])


def test_scikit_learn_estimator_checks() -> None:
    """The parts of ``check_estimator`` that apply to a fit on observations, not on (X, y)."""
    sk = pytest.importorskip("sklearn.utils.estimator_checks")
    from sklearn.base import clone

    est = EfficiencyFit(params=("hbm",), max_iter=7)
    sk.check_no_attributes_set_in_init("EfficiencyFit", est)
    sk.check_get_params_invariance("EfficiencyFit", est)
    sk.check_set_params("EfficiencyFit", est)
    sk.check_parameters_default_constructible("EfficiencyFit", EfficiencyFit())
    twin = clone(est)
    assert twin is not est
    assert twin.get_params() == est.get_params()
    assert est.set_params(tol=1e-6).tol == 1e-6


def test_clone_refits_the_same(hw) -> None:
    from sklearn.base import clone

    acc, _, _ = hw
    obs = [Observation(kind="memory_bandwidth_gb_s", value=2000.0, acc=acc)]
    a = EfficiencyFit(params=("hbm",)).fit(obs)
    b = clone(a)
    assert not hasattr(b, "params_")  # clone copies parameters, not the fit
    assert b.fit(obs).params_["hbm"] == pytest.approx(a.params_["hbm"])


def test_bad_param_name(hw) -> None:
    acc, _, _ = hw
    with pytest.raises(InputError, match="params"):
        EfficiencyFit(params=("nonsense",)).fit(
            [Observation(kind="memory_bandwidth_gb_s", value=1.0, acc=acc)]
        )


def test_observation_validation(hw) -> None:
    acc, _, _ = hw
    with pytest.raises(InputError):
        Observation(kind="bogus", value=1.0, acc=acc)
    with pytest.raises(InputError):
        Observation(kind="matmul_tflops", value=float("nan"), acc=acc)


@pytest.mark.refit
def test_serving_round_trip(catalog) -> None:
    """Recover decode_hbm and the per-iteration overhead from TTFT/TPOT at two loads.

    The serving model simulates a queue, so its predictions jitter by ~0.1 % between nearby
    parameter values; the tolerance (1 %) reflects that, not a fudge.
    """
    acc, system = catalog.hardware("l40s")
    model = catalog.resolve_model("llama-3.2-3b")
    # without the (fixed, not fitted here) request path, which only dilutes TTFT's sensitivity
    no_path = {"request_path_by_engine": {"vllm": 0.0}}
    true = DEFAULT_EFFICIENCY.with_overrides(
        {"decode_hbm": 0.7, "serving_overhead_s": 0.006, **no_path}
    )
    obs = []
    for qps in (1.0, 8.0):
        for kind in ("serving_ttft_s", "serving_tpot_s"):
            o = Observation(
                kind=kind,
                value=1.0,
                acc=acc,
                system=system,
                model=model,
                conditions={
                    "gpus": 1,
                    "tp": 1,
                    "input_tokens": 1000,
                    "output_tokens": 250,
                    "qps": qps,
                },
            )
            o.value = default_predict(o, true)
            obs.append(o)
    # start away from decode_hbm's upper bound 1: from the default 0.95 the bounded finite-
    # difference least squares stalls at ~0.97 (a known weakness, reported; 0.9 converges)
    start = DEFAULT_EFFICIENCY.with_overrides({"decode_hbm": 0.9, **no_path})
    fit = EfficiencyFit(params=("decode_hbm", "serving_overhead_s"), base=start).fit(obs)
    assert fit.params_["decode_hbm"] == pytest.approx(0.7, rel=0.01)
    # the overhead is ~10-30 % of TPOT, so ~0.3 % of simulation jitter on TPOT (prefill-only
    # iterations of the prefill-first engine add events) is up to ~2 % on the overhead
    assert fit.params_["serving_overhead_s"] == pytest.approx(0.006, rel=0.02)
    assert np.max(np.abs(fit.residuals_)) < 0.01
