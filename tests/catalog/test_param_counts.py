"""Parameter counts derived from each catalog architecture match the published counts.

A derived count passes when it is within 1% of the published figure, or when it rounds to the
figure as printed (``published_params_resolution_b``, e.g. 0.1 for a table that prints '1.7B').
A miss is fixed in the architecture (biases, tied embeddings, vocabulary padding), never here;
the one known miss is marked ``xfail(strict=True)`` with the numbers, so it is reported and
the test fails loudly if it ever starts passing.
"""

from __future__ import annotations

import pytest

from aitco.catalog.loader import load_catalog, shipped_data_dir
from aitco.perf.params import param_counts

REL_TOL = 0.01  # 1 %, the acceptance bound
GIGA = 1e9

#: Known misses: model id -> reason (kept visible in the test report).
KNOWN_ACTIVE_MISSES = {
    "deepseek-v3": (
        "derived active 37.55B (incl. 0.93B input embedding, 0.93B head, 0.11B router) vs the "
        "report's '37B' (+1.5%); the report does not say what it counts as activated"
    ),
}

_CAT = load_catalog(use_env=False, data_dir=shipped_data_dir())
_WITH_TOTAL = sorted(m.id for m in _CAT.models.values() if m.published_params_b)
_WITH_ACTIVE = sorted(m.id for m in _CAT.models.values() if m.published_active_params_b)


def _tolerance_b(published_b: float, resolution_b: float | None) -> float:
    """Allowed absolute difference [B]: 1 % or half the printed resolution, whichever is larger."""
    return max(REL_TOL * published_b, 0.5 * resolution_b if resolution_b else 0.0)


@pytest.mark.parametrize("model_id", _WITH_TOTAL)
def test_total_matches_published(model_id: str) -> None:
    m = _CAT.models[model_id]
    assert m.published_params_b is not None
    derived_b = param_counts(m).total / GIGA
    tol = _tolerance_b(m.published_params_b, m.published_params_resolution_b)
    assert abs(derived_b - m.published_params_b) <= tol, (
        f"{model_id}: derived {derived_b:.4f}B vs published {m.published_params_b}B "
        f"({(derived_b / m.published_params_b - 1) * 100:+.2f}%)"
    )


@pytest.mark.parametrize(
    "model_id",
    [
        pytest.param(i, marks=pytest.mark.xfail(strict=True, reason=KNOWN_ACTIVE_MISSES[i]))
        if i in KNOWN_ACTIVE_MISSES
        else i
        for i in _WITH_ACTIVE
    ],
)
def test_active_matches_published(model_id: str) -> None:
    m = _CAT.models[model_id]
    assert m.published_active_params_b is not None
    derived_b = param_counts(m).active / GIGA
    tol = _tolerance_b(m.published_active_params_b, m.published_params_resolution_b)
    assert abs(derived_b - m.published_active_params_b) <= tol, (
        f"{model_id}: derived active {derived_b:.4f}B vs published {m.published_active_params_b}B"
    )


def test_required_models_present() -> None:
    required = {
        "gpt2-124m", "gpt2-350m", "gpt2-774m", "gpt2-1.5b", "gpt2-1.02b", "gpt3-175b", "opt-175b",
        "bloom-176b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
        "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b",
        "mistral-7b", "mixtral-8x7b", "qwen2-7b", "qwen2-72b", "gemma-2-9b", "gemma-2-27b",
        "phi-3-mini", "deepseek-v3", "mpt-7b", "mpt-30b",
    }  # fmt: skip
    assert required <= set(_CAT.models), sorted(required - set(_CAT.models))


def test_moe_models_have_fewer_active_than_total() -> None:
    for m in _CAT.models.values():
        p = param_counts(m)
        if m.moe is None:
            assert p.active == p.total, m.id
        else:
            assert p.active < p.total, m.id


def test_mixtral_and_llama3_known_values() -> None:
    """Spot values quoted in the issue: Mixtral 46.7B / 12.9B active, Llama-3-8B 8.03B."""
    mix = param_counts(_CAT.models["mixtral-8x7b"])
    assert mix.total / GIGA == pytest.approx(46.70, abs=0.01)
    assert mix.active / GIGA == pytest.approx(12.88, abs=0.01)
    assert param_counts(_CAT.models["llama-3-8b"]).total / GIGA == pytest.approx(8.03, abs=0.005)
