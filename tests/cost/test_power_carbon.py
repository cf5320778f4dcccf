import pytest

from aitco.cost import carbon, power
from aitco.errors import InputError


def test_it_power_hand_computed():
    # 8 x 700 W x (0.5*0.8 + 0.5*0.3) = 3080 W; + 1 node x 1500 W; + 8 x 50 W switches
    p = power.it_power_w(
        8, 700, 0.5, 0.8, 0.3, nodes=1, node_power_w=1500, switch_power_w_per_accelerator=50
    )
    assert float(p) == pytest.approx(3080 + 1500 + 400)


def test_facility_power_conversion_then_pue():
    # 10 kW IT, 12.3 % lost in conversion -> 11.402 kW input, x PUE 1.2 -> 13.683 kW
    assert float(power.facility_power_w(10_000, 0.123, 1.2)) == pytest.approx(13_682.98, rel=1e-5)


def test_energy_and_price():
    kwh = power.energy_kwh(13_683.0, 24)
    assert float(kwh) == pytest.approx(328.392)
    assert float(power.electricity_usd(kwh, 0.08)) == pytest.approx(26.27136)


def test_carbon_and_energy_per_token():
    assert float(carbon.emissions_kg_co2e(1000, 0.37)) == pytest.approx(370)
    # 1 kWh = 3.6 MJ over 1e6 tokens = 3.6 J/token
    assert float(carbon.energy_per_token_j(1.0, 1e6)) == pytest.approx(3.6)


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: power.facility_power_w(100, 0.1, 0.95), "pue"),
        (lambda: power.facility_power_w(100, 1.2, 1.2), "power-conversion.loss"),
        (lambda: power.it_power_w(8, 700, 1.5, 0.8, 0.3), "busy_fraction"),
        (lambda: power.it_power_w(8, 700, 0.5, 0.8, -0.1), "idle-power.fraction-of-tdp"),
        (lambda: power.electricity_usd(10, -0.08), "electricity.usd-per-kwh"),
    ],
)
def test_bad_input(call, field):
    with pytest.raises(InputError, match=field):
        call()
