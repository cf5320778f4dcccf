"""CLI fuzz suite (issues 18, 37), bounded for the normal test run.

Hypothesis picks a command, one of its options or arguments, and a hostile value (see
``harness.py`` for the values and the rules); and a door that is not a flag -- a field of a
scenario, an overlay or a ``config.json``, a trace or log row, an output path equal to an input
(``doors.py``) -- and a hostile value as a person types it. The longer run is
``benchmarks/fuzz_cli.py``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

import doors
import harness

#: Bounded for CI: the slow commands are left to benchmarks/fuzz_cli.py.
SLOTS = harness.slots(include_slow=False)
#: Cases per run of the bounded suite (about 0.05-0.5 s each).
MAX_EXAMPLES = 150
#: Door cases per run (about 0.1-1.5 s each: most reach the real engine or are refused).
MAX_DOOR_EXAMPLES = 40


def test_every_command_is_fuzzed() -> None:
    fuzzed = {s.command for s in harness.slots()}
    missing = set(harness.leaf_commands()) - fuzzed - harness.SKIP
    assert not missing, f"commands without a fuzzable option or argument: {sorted(missing)}"
    assert len(harness.slots()) >= 150  # options and arguments of all commands


@st.composite
def cases(draw: st.DrawFn) -> tuple[harness.Slot, str]:
    slot = draw(st.sampled_from(SLOTS))
    value = draw(
        st.one_of(
            st.sampled_from(slot.values),
            st.floats(allow_nan=True, allow_infinity=True).map(repr)
            if slot.values is harness.NUMBERS
            else st.sampled_from(slot.values),
        )
    )
    return slot, value


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(cases())
def test_hostile_value_never_reaches_a_traceback(case: tuple[harness.Slot, str]) -> None:
    slot, value = case
    with tempfile.TemporaryDirectory(prefix="aitco-fuzz-") as tmp:
        outcome = harness.check(harness.build_args(slot, value, Path(tmp)))
    assert outcome.problem is None, f"{outcome.problem}: aitco {outcome.args}"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e308", "1e-320"])
def test_numbers_on_the_commands_issue_18_names(value: str) -> None:
    """The cases of the issue, always run (not left to the draw)."""
    base = {
        "roi": ("--monthly-savings-usd",),
        "breakeven": ("--fixed-cost-usd",),
        "train": ("--tokens", "--gpus"),
        "infer": ("--num-requests", "--qps"),
        "ingest": ("--usd-per-gpu-hour",),
        "actual-vs-estimate": ("--usd-per-gpu-hour",),
    }
    for command, flags in base.items():
        for flag in flags:
            slot = harness.Slot(command, flag, 0, harness.NUMBERS)
            with tempfile.TemporaryDirectory(prefix="aitco-fuzz-") as tmp:
                o = harness.check(harness.build_args(slot, value, Path(tmp)))
            assert o.problem is None, f"{o.problem}: aitco {o.args}"
            assert o.exit_code == 2, o.args


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_optimize_with_no_feasible_plan_prints_one_error_line(json_flag: list[str]) -> None:
    """An optimisation whose bounds nothing meets exits 2 with one ``error:`` line (the JSON
    object, with ``status: infeasible``, still goes to stdout); found by the fuzz draw."""
    sweep = str(Path(__file__).resolve().parents[2] / "examples" / "sweep_training.yaml")
    o = harness.check(["optimize", sweep, "--no-progress", *json_flag, "--deadline-h", "1.0"])
    assert o.exit_code == 2
    assert o.problem is None, o.problem


def test_every_kind_of_door_is_fuzzed() -> None:
    kinds = {d.name for d in doors.DOORS}
    assert {"scenario", "serving scenario", "overlay", "factor overlay", "config.json",
            "trace row", "audit row", "training-log row", "output = input"} <= kinds  # fmt: skip
    assert len(doors.cases()) >= 500


@settings(
    max_examples=MAX_DOOR_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.sampled_from(doors.cases()))
def test_hostile_value_inside_a_file_never_reaches_a_traceback(
    case: tuple[doors.Door, str],
) -> None:
    door, value = case
    with tempfile.TemporaryDirectory(prefix="aitco-fuzz-") as tmp:
        outcome = doors.run_case(door, value, Path(tmp))
    assert outcome.problem is None, f"{outcome.problem}: aitco {outcome.args}"


@pytest.mark.parametrize("how", ["same path", "symlink", "hardlink"])
def test_output_equal_to_input_is_always_drawn(how: str) -> None:
    """The issue's overwrite cases, always run (not left to the draw)."""
    for door in (d for d in doors.DOORS if d.name == "output = input"):
        with tempfile.TemporaryDirectory(prefix="aitco-fuzz-") as tmp:
            o = doors.run_case(door, how, Path(tmp))
        assert o.problem is None, f"{o.problem}: aitco {o.args}"
        assert o.exit_code == 2
