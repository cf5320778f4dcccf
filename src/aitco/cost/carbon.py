r"""Carbon: energy at the meter times the grid's carbon intensity; energy per token.

.. math:: m_{\mathrm{CO_2e}} = E_\mathrm{meter}\,I_\mathrm{grid}
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.units import SECONDS_PER_HOUR, WATTS_PER_KILOWATT


def emissions_kg_co2e(kwh: ArrayLike, kg_co2e_per_kwh: ArrayLike) -> np.ndarray:
    """Location-based emissions of the energy used.

    Parameters
    ----------
    kwh : array_like
        Energy at the meter. [kWh]
    kg_co2e_per_kwh : array_like
        Grid carbon intensity of the region. [kg CO2e/kWh]

    Returns
    -------
    numpy.ndarray
        Emissions. [kg CO2e]

    References
    ----------
    .. [1] GHG Protocol Scope 2 Guidance (location-based method), WRI/WBCSD, 2015.

    Examples
    --------
    >>> float(emissions_kg_co2e(1000.0, 0.4))
    400.0
    """
    e = checks.non_negative(kwh, "energy_kwh")
    i = checks.non_negative(kg_co2e_per_kwh, "carbon.kg-per-kwh")
    return np.asarray(e * i, dtype=float)


def energy_per_token_j(kwh: ArrayLike, tokens: ArrayLike) -> np.ndarray:
    """Energy per token trained or served.

    Parameters
    ----------
    kwh : array_like
        Energy at the meter. [kWh]
    tokens : array_like
        Tokens trained or served (> 0). [tokens]

    Returns
    -------
    numpy.ndarray
        Energy per token. [J/token]

    Examples
    --------
    >>> float(energy_per_token_j(1.0, 3600.0))
    1000.0
    """
    e = checks.non_negative(kwh, "energy_kwh")
    t = checks.positive(tokens, "tokens")
    joules_per_kwh = WATTS_PER_KILOWATT * SECONDS_PER_HOUR
    return np.asarray(e * joules_per_kwh / t, dtype=float)
