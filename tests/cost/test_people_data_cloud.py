import pytest

from aitco.cost import cloud, data, people
from aitco.errors import InputError


def test_ops_staff_hand_computed():
    # 64 GPUs, 2 FTE per 1000 GPUs, one month (730.5 h), 120 $/h:
    # 0.128 FTE x (730.5/8766) x 2080 h x 120 = 0.128 x 173.333 x 120 = 2662.4
    assert float(people.ops_staff_usd(64, 730.5, 2.0, 120.0)) == pytest.approx(2662.4)


def test_incidents_and_support():
    assert float(people.incident_usd(3, 4.0, 150.0)) == pytest.approx(1800)
    assert float(people.support_usd(10_000, 0.1)) == pytest.approx(1000)
    with pytest.raises(InputError, match=r"support.fraction-of-spend"):
        people.support_usd(10_000, 3.0)


def test_data_items():
    assert float(data.per_unit_usd(2.0, 150.0, "data.cleaning-usd-per-tb")) == pytest.approx(300)
    assert float(data.storage_usd(500, 3, 0.023)) == pytest.approx(34.5)
    # 10 GB/day kept 90 days over a 30-day period: 10 * 30^2/2 = 4500 GB-days
    assert float(data.retention_usd(10, 90, 30, 0.023)) == pytest.approx(4500 / 30.4375 * 0.023)
    # over 365 days: 10*(90^2/2 + 90*275) = 288,000 GB-days
    assert float(data.retention_usd(10, 90, 365, 1.0)) == pytest.approx(288_000 / 30.4375)
    with pytest.raises(InputError, match=r"transfer.usd-per-gb"):
        data.per_unit_usd(10, -0.09, "transfer.usd-per-gb")


def test_rental():
    assert float(cloud.rental_usd(64 * 100, 2.0)) == pytest.approx(12_800)
    with pytest.raises(InputError, match="usd_per_gpu_hour"):
        cloud.rental_usd(10, -1.0)
