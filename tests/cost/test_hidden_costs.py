"""Hidden costs as pure functions: loaded rate, on-call team, repair scale, support tiers,
committed retention, audit labour, host power by slot (issue 12 item 6)."""

import numpy as np
import pytest

from aitco.cost import data, people, power
from aitco.errors import InputError

AWS_BREAKS = [0.0, 10_000.0, 80_000.0, 250_000.0]
AWS_RATES = [0.10, 0.07, 0.05, 0.03]


def test_loaded_rate_is_wage_times_employer_cost_factor():
    assert float(people.loaded_rate_usd_per_h(69.50, 45.65 / 32.07)) == pytest.approx(
        69.50 * 1.42345, rel=1e-4
    )
    with pytest.raises(InputError, match=r"labour\.employer-cost-factor"):
        people.loaded_rate_usd_per_h(69.5, 0.7)  # wages cannot exceed total compensation


def test_on_call_seat_needs_more_than_four_fte():
    # one seat 24x7: 8766 h / 1878.5 productive h per FTE = 4.67 FTE
    assert float(people.on_call_fte(1, 1878.5)) == pytest.approx(8766 / 1878.5)
    with pytest.raises(InputError, match="productive-hours"):
        people.on_call_fte(1, 0.0)


def test_four_gpu_owned_cluster_pays_the_minimum_team():
    min_fte = float(people.on_call_fte(1, 1878.5))
    # a year of a 4-GPU cluster at 2 FTE/1000 GPUs would be 0.008 FTE; the team is 4.67 FTE
    ratio_only = float(people.ops_staff_usd(4, 8766.0, 2.0, 100.0))
    with_team = float(people.ops_staff_usd(4, 8766.0, 2.0, 100.0, min_fte=min_fte))
    assert ratio_only == pytest.approx(0.008 * 2080 * 100)
    assert with_team == pytest.approx(min_fte * 2080 * 100)
    # max, not sum: a 10,000-GPU cluster (20 FTE by ratio) is not charged 24.67 FTE
    big = float(people.ops_staff_usd(10_000, 8766.0, 2.0, 100.0, min_fte=min_fte))
    assert big == pytest.approx(20 * 2080 * 100)


def test_support_tiers_at_5k_50k_500k():
    fee = people.tiered_fee_usd(np.array([5e3, 50e3, 500e3]), 1.0, AWS_BREAKS, AWS_RATES, 100.0)
    # 10% of 5K; 1K + 7% of 40K; 1K + 4.9K + 8.5K + 3% of 250K
    assert fee.tolist() == pytest.approx([500.0, 3_800.0, 21_900.0])
    # the monthly minimum binds on a small bill
    assert float(people.tiered_fee_usd(300.0, 1.0, AWS_BREAKS, AWS_RATES, 100.0)) == 100.0


def test_support_tiers_apply_per_month():
    # $150K over 3 months is 3 x the fee of $50K, less than the fee of $150K in one month
    three = float(people.tiered_fee_usd(150e3, 3.0, AWS_BREAKS, AWS_RATES, 100.0))
    one = float(people.tiered_fee_usd(150e3, 1.0, AWS_BREAKS, AWS_RATES, 100.0))
    assert three == pytest.approx(3 * 3_800.0)
    assert one == pytest.approx(1_000 + 4_900 + 0.05 * 70e3)
    with pytest.raises(InputError, match="months"):
        people.tiered_fee_usd(1e3, 0.5, AWS_BREAKS, AWS_RATES)
    with pytest.raises(InputError, match="tier-breaks"):
        people.tiered_fee_usd(1e3, 1.0, [0, 80e3, 10e3, 250e3], AWS_RATES)


def test_cluster_scale_repair_grows_with_nodes():
    one = float(people.repair_labour_usd(10, 2.0, 100.0, 1, 0.1))
    many = float(people.repair_labour_usd(10, 2.0, 100.0, 128, 0.1))
    assert one == pytest.approx(float(people.incident_usd(10, 2.0, 100.0)))
    assert many == pytest.approx(one * (1 + 0.1 * 7))
    assert float(people.cluster_scale_coefficient(0.125, 0.1)) == 1.0  # sub-node: one node


def test_retention_seven_years_charged_in_full():
    seven_years_days = 7 * 365.25
    # 5 GB/day for a 30-day run, each day kept 7 years: 150 GB x 84 months
    full = float(data.retention_committed_usd(5.0, seven_years_days, 30.0, 0.0125))
    assert full == pytest.approx(150 * 84 * 0.0125)
    within_run = float(data.retention_usd(5.0, seven_years_days, 30.0, 0.0125))
    assert full > 100 * within_run


def test_audit_labour():
    assert float(data.audit_labour_usd(40, 99.0)) == pytest.approx(3960.0)
    with pytest.raises(InputError, match="audit_hours"):
        data.audit_labour_usd(-1, 99.0)


def test_one_gpu_owned_job_pays_its_host_share():
    share = float(power.host_share_nodes(1, 8))
    assert share == 0.125
    # 1 H100 (700 W) busy at 80% TDP in an 8-slot server with 1.7 kW of host power
    w = float(power.it_power_w(1, 700, 1.0, 0.8, 0.2, share, 1700, 0.0))
    assert w == pytest.approx(560 + 1700 / 8)
    with pytest.raises(InputError, match="devices_per_node"):
        power.host_share_nodes(1, 0)


def test_on_call_share_scales_with_the_fleet():
    rota = float(people.on_call_fte(1, 1878.5))  # 4.67 FTE
    one, eight, big = (float(people.on_call_share_fte(n, rota, 4000)) for n in (1, 8, 10_000))
    assert one == pytest.approx(rota / 4000)
    assert eight == pytest.approx(8 * one)  # below the rota fleet: a share, linear in GPUs
    assert big == pytest.approx(rota)  # a fleet past the rota fleet pays one whole rota
    with pytest.raises(InputError, match="on-call-rota-gpus"):
        people.on_call_share_fte(1, rota, 0.0)
