"""The curated public API works end to end from Python."""

from __future__ import annotations

import math

import pytest

import aitco


def test_all_names_resolve():
    for name in aitco.__all__:
        assert getattr(aitco, name) is not None


def test_unknown_attribute():
    with pytest.raises(AttributeError):
        aitco.no_such_thing  # noqa: B018


def test_python_api_end_to_end():
    cat = aitco.load_catalog(use_env=False)
    acc, sysm = cat.hardware("h100-sxm5-80gb")
    model = cat.resolve_model("llama-3-8b")
    res = aitco.estimate_training(model, acc, sysm, 8, seq_len=4096, global_batch=256, tokens=1e9)
    v = res.values
    assert 0 < v["mfu"] < 1
    assert math.isclose(v["gpu_hours"], 8 * v["wall_clock_h"], rel_tol=1e-9)
    scenario = aitco.Scenario.from_dict(
        {
            "workload": {"kind": "training", "model": "llama-3-8b", "tokens": 1e9, "seq_len": 4096},
            "options": [{"hardware": "h100-sxm5-80gb", "gpus": 8, "pricing": "on_demand"}],
        }
    )
    comp = aitco.compare(scenario, cat)
    opt = comp.options[0]
    assert opt.total_usd > 0
    assert math.isclose(sum(i.usd for i in opt.items), opt.total_usd, rel_tol=1e-9)
