"""The utilisation/idle heatmap from telemetry parsed by aitco.calibrate (explicit DCGM text)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from aitco.errors import InputError

telemetry = pytest.importorskip("aitco.report.telemetry")
pytest.importorskip("aitco.calibrate.parsers.detect")

# two GPUs, 1 s samples: GPU 0 busy (90, 80, 70 %), GPU 1 mostly idle (10, 50, 0 %)
DMON = """#Entity   GPUTL        POWER
ID                      W
GPU 0     90           300.0
GPU 1     10           80.0
GPU 0     80           290.0
GPU 1     50           200.0
GPU 0     70           280.0
GPU 1     0            70.0
"""


def test_heatmap_columns_from_dcgm(tmp_path: Path) -> None:
    f = tmp_path / "dmon.txt"
    f.write_text(DMON)
    u = telemetry.utilisation_from_files([f])
    assert u["devices"] == ["GPU 0", "GPU 1"]
    assert u["times"][0] == "mean utilisation"
    (m0, busy0, peak0), (m1, busy1, peak1) = u["matrix"]
    assert m0 == pytest.approx(0.8)
    assert busy0 == pytest.approx(1.0)
    assert peak0 == pytest.approx(0.9)
    assert m1 == pytest.approx(0.2)
    assert busy1 == pytest.approx(1 / 3)  # only the 50 % sample is at or above 30 %
    assert peak1 == pytest.approx(0.5)
    from aitco.report.plots import utilisation_heatmap_png

    png = utilisation_heatmap_png(u["matrix"], u["devices"], u["times"], idle_threshold=0.3)
    assert png.startswith(b"\x89PNG")


def test_timeline_summary_gives_time_columns() -> None:
    u = telemetry.utilisation_from_summary(
        {"timeline": {"GPU 0": [0.9, 0.1], "GPU 1": [0.5]}, "idle_threshold": 0.25}, "x"
    )
    assert u["times"] == ["0", "1"]
    assert u["matrix"][0] == [0.9, 0.1]
    assert math.isnan(u["matrix"][1][1])


def test_telemetry_without_utilisation_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "nv.txt"
    f.write_text("#Entity   NVLTX\nID\nGPU 0     5\nGPU 0     6\n")
    with pytest.raises(InputError, match="utilisation"):
        telemetry.utilisation_from_files([f])
