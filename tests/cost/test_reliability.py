import math

import numpy as np
import pytest

from aitco.cost import cloud, reliability
from aitco.errors import InputError


def test_young_daly_hand_computed():
    # delta = 0.05 h, M = 10 h: sqrt(2*0.05*10) - 0.05 = 1 - 0.05 = 0.95 h
    assert float(reliability.optimal_checkpoint_interval_h(0.05, 10.0)) == pytest.approx(0.95)
    # delta >= 2M: checkpoint every MTBF
    assert float(reliability.optimal_checkpoint_interval_h(30.0, 10.0)) == pytest.approx(10.0)
    assert math.isinf(float(reliability.optimal_checkpoint_interval_h(0.05, np.inf)))


def test_llama3_rate_gives_three_hour_mtbf_at_16k():
    # 419 unexpected interruptions over 16,384 GPUs x 54 days (Llama 3 Table 5)
    lam = 419 / (16_384 * 54 * 24)
    mtbf = 1 / float(reliability.job_interruption_rate_per_h(lam, 16_384))
    assert mtbf == pytest.approx(54 * 24 / 419)


def test_checkpoint_save_time():
    # 1.02e9 params x 14 B = 14.28 GB over 8 nodes x 2 GB/s = 0.8925 s
    assert float(reliability.checkpoint_save_h(1.02e9, 2.0, 8)) * 3600 == pytest.approx(0.8925)


def test_goodput_hand_computed():
    # P = 100 h, Lambda = 0.02/h, tau = 1 h, delta = 0.01 h sync, R = 0.25 h, phi = 0.01
    # stall = 100 * 0.01 / 1 = 1 h; lost share = 0.02*(0.5+0.25) + 0.01 = 0.025
    # W = 101 / 0.975 = 103.5897 h
    o = reliability.goodput_overheads(100, 0.02, 1.0, 0.01, 0.25, 0.01)
    w = 101 / 0.975
    assert float(o["wall_clock_h"]) == pytest.approx(w)
    assert float(o["interruptions"]) == pytest.approx(0.02 * w)
    assert float(o["rework_h"]) == pytest.approx(0.02 * w * 0.5)
    assert float(o["restart_h"]) == pytest.approx(0.02 * w * 0.25)
    assert float(o["firmware_h"]) == pytest.approx(0.01 * w)
    assert float(o["checkpoint_stall_h"]) == pytest.approx(1.0)
    parts = o["rework_h"] + o["restart_h"] + o["firmware_h"] + o["checkpoint_stall_h"] + 100
    assert float(parts) == pytest.approx(w)
    assert float(o["goodput"]) == pytest.approx(100 / w)


def test_async_checkpoint_stalls_less():
    sync = reliability.goodput_overheads(100, 0.02, 1.0, 0.01, 0.25, 0.0, 1.0)
    asyn = reliability.goodput_overheads(100, 0.02, 1.0, 0.01, 0.25, 0.0, 0.1)
    assert float(asyn["checkpoint_stall_h"]) == pytest.approx(
        0.1 * float(sync["checkpoint_stall_h"])
    )


def test_zero_failures_zero_rework():
    o = reliability.goodput_overheads(50, 0.0, np.inf, 0.01, 0.25)
    assert float(o["rework_h"]) == 0.0
    assert float(o["restart_h"]) == 0.0
    assert float(o["wall_clock_h"]) == pytest.approx(50)


def test_spot_without_checkpoint_interval_is_an_error():
    with pytest.raises(InputError, match="checkpoint_interval_h"):
        cloud.spot_interruptions(0.05, 4, 100, np.nan)
    with pytest.raises(InputError, match="checkpoint_interval_h"):
        reliability.goodput_overheads(100, 0.05, np.nan, 0.01, 0.25)
    assert float(cloud.spot_interruptions(0.0, 4, 100, np.nan)) == 0.0


def test_job_that_cannot_finish():
    with pytest.raises(InputError, match="interruption_rate_per_h"):
        reliability.goodput_overheads(100, 2.0, 1.0, 0.01, 0.5)


def test_fragmentation_and_firmware():
    # 17.6 % idle: 1000 busy GPU-h -> 1000*0.176/0.824 = 213.59 idle GPU-h
    assert float(reliability.fragmentation_idle_h(1000, 0.176)) == pytest.approx(213.592, rel=1e-5)
    assert float(reliability.firmware_downtime_fraction(24)) == pytest.approx(24 / 8766)
    with pytest.raises(InputError, match=r"fragmentation.idle-fraction"):
        reliability.fragmentation_idle_h(1000, 1.2)
