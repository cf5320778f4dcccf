"""Unit conversions at the edges: one place (aitco.units), SI inside."""

from __future__ import annotations

import pytest

from aitco.decide.scenario import InferenceWorkload
from aitco.units import (
    MIB,
    ms_to_s,
    optional_ms_to_s,
    optional_s_to_ms,
    printed_unit_to_si,
    s_to_ms,
)


def test_ms_and_s_round_trip():
    assert ms_to_s(250.0) == pytest.approx(0.25)
    assert s_to_ms(0.05) == pytest.approx(50.0)
    assert s_to_ms(ms_to_s(123.0)) == pytest.approx(123.0)
    assert optional_ms_to_s(None) is None
    assert optional_s_to_ms(None) is None
    assert optional_ms_to_s(500) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("unit", "suffix", "factor"),
    [("%", "fraction", 0.01), ("MiB", "bytes", float(MIB)), ("mJ", "j", 1e-3), ("MHz", "hz", 1e6)],
)
def test_printed_units_to_si(unit, suffix, factor):
    assert printed_unit_to_si(unit) == (suffix, pytest.approx(factor))
    assert printed_unit_to_si(f" {unit} ") == (suffix, pytest.approx(factor))


def test_unknown_printed_unit_is_not_converted():
    assert printed_unit_to_si("") is None
    assert printed_unit_to_si("GB/s per furlong") is None


def test_scenario_slo_in_seconds_beside_the_ms_key():
    w = InferenceWorkload(kind="inference", model="llama-3-8b", slo_ttft_ms=500, slo_tpot_ms=50)
    assert w.slo_ttft_s == pytest.approx(0.5)
    assert w.slo_tpot_s == pytest.approx(0.05)
    assert "slo_ttft_s" not in w.model_dump()  # the YAML/JSON key stays slo_ttft_ms
    assert InferenceWorkload(kind="inference", model="x").slo_ttft_s is None
