"""Scenario service fields of issue 15 reach the inference engine through ``compare``."""

from __future__ import annotations

from typing import Any

from aitco.catalog.loader import load_catalog
from aitco.decide.compare import compare
from aitco.decide.scenario import Scenario


def _scenario(**service: Any) -> Scenario:
    return Scenario.model_validate({
        "name": "chat",
        "workload": {"kind": "inference", "model": "llama-3.1-8b", "input_tokens": 4000,
                     "output_tokens": 200, "concurrency": 64, **service},
        "options": [{"name": "h100", "hardware": "h100-sxm5-80gb", "gpus": 1,
                     "pricing": "on_demand", "provider": "aws"}],
    })  # fmt: skip


def _ttft(sc: Scenario) -> float:
    comp = compare(sc, load_catalog(use_env=False))
    return float(comp.options[0].values["ttft_s"])


def test_prefix_cache_and_scheduler_fields_change_the_service() -> None:
    base = _ttft(_scenario())
    assert _ttft(_scenario(prefix_cache_hit_rate=0.75)) < base
    assert _ttft(_scenario(scheduler_steps=8)) > base
