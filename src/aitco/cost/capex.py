r"""Capital cost of one owned accelerator: the one capex chain of aitco.

Every command that prices owned hardware (``compare``/``tco``, ``sweep``/``optimize``,
``buy-vs-rent``) builds the capital of an accelerator with :func:`capex_parts_usd` and spreads
it over the holding period with :func:`ownership_usd_per_gpu_hour`.

.. math::

    S = P s, \quad N = (P + S) n, \quad O = (P + S) o, \quad I = (P + S + N + O) i,
    \qquad K = P + S + N + O + I

with chip price *P* and the catalog fractions server *s* (``server.overhead-fraction``),
network *n* (``network.capex-fraction``), storage *o* (``storage.capex-fraction``) and
installation *i* (``installation.fraction-of-capex``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks, finance
from aitco.units import HOURS_PER_YEAR

#: Catalog factor ids of the capex chain, by part.
CAPEX_FACTORS: dict[str, str] = {
    "server": "server.overhead-fraction",
    "network": "network.capex-fraction",
    "storage": "storage.capex-fraction",
    "install": "installation.fraction-of-capex",
}


def capex_parts_usd(
    chip_usd: ArrayLike,
    server_fraction: ArrayLike,
    network_fraction: ArrayLike,
    storage_fraction: ArrayLike,
    install_fraction: ArrayLike,
) -> dict[str, np.ndarray]:
    """Capital of one accelerator, part by part (module formula).

    Parameters
    ----------
    chip_usd : array_like
        Accelerator price. [USD]
    server_fraction, network_fraction, storage_fraction, install_fraction : array_like
        Catalog fractions (see the module docstring). [fraction]

    Returns
    -------
    dict of str to numpy.ndarray
        ``accelerator_usd``, ``server_usd``, ``network_usd``, ``storage_usd``,
        ``installation_usd`` and their sum ``capex_usd``. [USD]

    Examples
    --------
    >>> p = capex_parts_usd(10_000.0, 0.5, 0.1, 0.1, 0.0)
    >>> float(p["capex_usd"])
    18000.0
    """
    chip = checks.non_negative(chip_usd, "accelerator price")
    s = checks.non_negative(server_fraction, CAPEX_FACTORS["server"])
    n = checks.non_negative(network_fraction, CAPEX_FACTORS["network"])
    o = checks.non_negative(storage_fraction, CAPEX_FACTORS["storage"])
    i = checks.non_negative(install_fraction, CAPEX_FACTORS["install"])
    server = chip * s
    network = (chip + server) * n
    storage = (chip + server) * o
    install = (chip + server + network + storage) * i
    return {
        "accelerator_usd": np.asarray(chip, dtype=float),
        "server_usd": np.asarray(server, dtype=float),
        "network_usd": np.asarray(network, dtype=float),
        "storage_usd": np.asarray(storage, dtype=float),
        "installation_usd": np.asarray(install, dtype=float),
        "capex_usd": np.asarray(chip + server + network + storage + install, dtype=float),
    }


def ownership_usd_per_gpu_hour(
    capex_usd: float,
    book_fraction_end: float,
    market_fraction_end: float,
    discount_rate: float,
    horizon_years: float,
) -> dict[str, float]:
    """Cost of holding one accelerator's capital, per hour of the holding period.

    Parameters
    ----------
    capex_usd : float
        Capital of one accelerator (:func:`capex_parts_usd`). [USD]
    book_fraction_end, market_fraction_end : float
        Book and market value at the end of the horizon, as fractions of the capital.
    discount_rate : float
        Annual cost of capital. [1/year]
    horizon_years : float
        Holding period. [years]

    Returns
    -------
    dict of str to float
        ``depreciation``, ``tech_iteration_risk``, ``financing`` and ``total`` in
        USD per accelerator-hour (the split of :func:`aitco.cost.finance.ownership_split_usd`
        over the hours of the horizon).
    """
    split = finance.ownership_split_usd(
        capex_usd, book_fraction_end, market_fraction_end, discount_rate, horizon_years
    )
    hours = horizon_years * HOURS_PER_YEAR
    return {
        "depreciation": float(split["depreciation_usd"]) / hours,
        "tech_iteration_risk": float(split["tech_iteration_risk_usd"]) / hours,
        "financing": float(split["financing_usd"]) / hours,
        "total": float(split["total_usd"]) / hours,
    }
