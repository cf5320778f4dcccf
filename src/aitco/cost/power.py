r"""Power and facility energy: IT power from utilisation, conversion loss, PUE.

The chain is

.. math::

    P_\mathrm{IT} = N_\mathrm{acc}\,T\,(u\,f_\mathrm{active} + (1-u)\,f_\mathrm{idle})
                 + N_\mathrm{nodes} P_\mathrm{node} + N_\mathrm{acc} P_\mathrm{switch}

    P_\mathrm{meter} = \frac{P_\mathrm{IT}}{1 - \ell}\;\mathrm{PUE}

with :math:`T` the accelerator TDP, :math:`u` the busy share of the time, :math:`f` the draw as a
fraction of TDP when busy or idle, and :math:`\ell` the power-conversion loss (PSU/UPS/PDU) as a
fraction of the input power. PUE is applied to the power at the IT input.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from aitco.cost import checks
from aitco.units import WATTS_PER_KILOWATT


def it_power_w(
    accelerators: ArrayLike,
    tdp_w: ArrayLike,
    busy_fraction: ArrayLike,
    active_fraction_of_tdp: ArrayLike,
    idle_fraction_of_tdp: ArrayLike,
    nodes: ArrayLike = 0.0,
    node_power_w: ArrayLike = 0.0,
    switch_power_w_per_accelerator: ArrayLike = 0.0,
) -> np.ndarray:
    r"""Average IT power of a cluster.

    Parameters
    ----------
    accelerators : array_like
        Accelerators in the cluster. [count]
    tdp_w : array_like
        Accelerator TDP. [W]
    busy_fraction : array_like
        Share of the time the accelerators compute. [fraction]
    active_fraction_of_tdp : array_like
        Average draw while computing, over TDP. [fraction]
    idle_fraction_of_tdp : array_like
        Draw while idle (allocated but waiting), over TDP. [fraction]
    nodes : array_like
        Nodes (servers). [count]
    node_power_w : array_like
        Power per node beyond the accelerators (CPUs, NICs, fans). [W]
    switch_power_w_per_accelerator : array_like
        Network-switch power attributed to each accelerator. [W]

    Returns
    -------
    numpy.ndarray
        Average IT power. [W]

    Notes
    -----
    :math:`P = N T (u f_a + (1-u) f_i) + N_n P_n + N P_s`.

    Examples
    --------
    >>> float(it_power_w(8, 700, 1.0, 0.8, 0.25, nodes=1, node_power_w=2000))
    6480.0
    """
    n = checks.non_negative(accelerators, "gpus")
    tdp = checks.non_negative(tdp_w, "tdp_w")
    u = checks.fraction(busy_fraction, "busy_fraction")
    fa = checks.fraction(active_fraction_of_tdp, "utilization-power.fraction-of-tdp")
    fi = checks.fraction(idle_fraction_of_tdp, "idle-power.fraction-of-tdp")
    nn = checks.non_negative(nodes, "nodes")
    pn = checks.non_negative(node_power_w, "node_power_w")
    ps = checks.non_negative(switch_power_w_per_accelerator, "network.switch-power-w-per-gpu")
    return np.asarray(n * tdp * (u * fa + (1.0 - u) * fi) + nn * pn + n * ps, dtype=float)


def facility_power_w(it_w: ArrayLike, conversion_loss: ArrayLike, pue: ArrayLike) -> np.ndarray:
    r"""Power at the meter from IT power, conversion loss and PUE.

    Parameters
    ----------
    it_w : array_like
        IT power (at the chips, boards and nodes). [W]
    conversion_loss : array_like
        Share of the input power lost in PSU/UPS/PDU conversion. [fraction, < 1]
    pue : array_like
        Power usage effectiveness of the facility (>= 1). [ratio]

    Returns
    -------
    numpy.ndarray
        Power drawn at the utility meter. [W]

    Notes
    -----
    .. math:: P_\mathrm{meter} = \frac{P_\mathrm{IT}}{1-\ell}\,\mathrm{PUE}

    References
    ----------
    .. [1] The Green Grid, "PUE: a comprehensive examination of the metric", WP#49, 2012.

    Examples
    --------
    >>> round(float(facility_power_w(1000.0, 0.1, 1.2)), 3)
    1333.333
    """
    p = checks.non_negative(it_w, "it_power_w")
    loss = checks.fraction(conversion_loss, "power-conversion.loss", open_high=True)
    e = checks.pue(pue, "pue")
    return np.asarray(p / (1.0 - loss) * e, dtype=float)


def facility_energy_kwh(
    it_kwh: ArrayLike, conversion_loss: ArrayLike, pue: ArrayLike
) -> np.ndarray:
    r"""Energy at the meter from IT energy, conversion loss and PUE.

    Parameters
    ----------
    it_kwh : array_like
        IT energy (at the chips, boards and nodes). [kWh]
    conversion_loss : array_like
        Share of the input energy lost in PSU/UPS/PDU conversion. [fraction, < 1]
    pue : array_like
        Power usage effectiveness of the facility (>= 1). [ratio]

    Returns
    -------
    numpy.ndarray
        Energy drawn at the utility meter. [kWh]

    Notes
    -----
    .. math:: E_\mathrm{meter} = \frac{E_\mathrm{IT}}{1-\ell}\,\mathrm{PUE}

    The same ratio as :func:`facility_power_w`, applied to energy (a constant factor over time).

    Examples
    --------
    >>> round(float(facility_energy_kwh(1.0, 0.1, 1.2)), 4)
    1.3333
    """
    checks.non_negative(it_kwh, "it_kwh")
    return facility_power_w(it_kwh, conversion_loss, pue)


def energy_kwh(power_w: ArrayLike, hours: ArrayLike) -> np.ndarray:
    """Energy of a constant average power over a duration.

    Parameters
    ----------
    power_w : array_like
        Average power. [W]
    hours : array_like
        Duration. [h]

    Returns
    -------
    numpy.ndarray
        Energy. [kWh]

    Examples
    --------
    >>> float(energy_kwh(2000.0, 3.0))
    6.0
    """
    p = checks.non_negative(power_w, "power_w")
    h = checks.non_negative(hours, "hours")
    return np.asarray(p * h / WATTS_PER_KILOWATT, dtype=float)


def electricity_usd(kwh: ArrayLike, usd_per_kwh: ArrayLike) -> np.ndarray:
    """Cost of electricity.

    Parameters
    ----------
    kwh : array_like
        Energy at the meter. [kWh]
    usd_per_kwh : array_like
        Electricity price. [USD/kWh]

    Returns
    -------
    numpy.ndarray
        Cost. [USD]

    Examples
    --------
    >>> float(electricity_usd(100.0, 0.08))
    8.0
    """
    e = checks.non_negative(kwh, "energy_kwh")
    p = checks.non_negative(usd_per_kwh, "electricity.usd-per-kwh")
    return np.asarray(e * p, dtype=float)


def host_share_nodes(accelerators: ArrayLike, slots_per_node: ArrayLike) -> np.ndarray:
    r"""Nodes whose host power a job pays: its share of the servers' accelerator slots.

    A job on fewer accelerators than a server holds pays the host (CPUs, memory, NICs, fans)
    of that server shared by slot, not zero and not the whole server.

    Parameters
    ----------
    accelerators : array_like
        Accelerators of the job. [count]
    slots_per_node : array_like
        Accelerator slots per server. [count]

    Returns
    -------
    numpy.ndarray
        :math:`N / N_\mathrm{slots}`, the ``nodes`` of :func:`it_power_w`. [nodes]

    Examples
    --------
    >>> float(host_share_nodes(1, 8)), float(host_share_nodes(12, 8))
    (0.125, 1.5)
    """
    n = checks.non_negative(accelerators, "gpus")
    k = checks.positive(slots_per_node, "devices_per_node")
    return np.asarray(n / k, dtype=float)
