r"""Compute clocks under a power limit.

A GPU run below its TDP (``nvidia-smi -pl``) lowers its SM clock until the board stays within
the limit. Dynamic CMOS power is :math:`P = C V^2 f`, and in the DVFS range the voltage tracks
the frequency, so :math:`P \propto f^3` [1]_; dense GEMMs on Hopper-class parts already draw
about their TDP (a reason their measured matmul rate stays below the boost-clock peak), so a
limit :math:`P_{lim} < P_{TDP}` scales the compute clock by
:math:`(P_{lim}/P_{TDP})^{1/3}`. HBM bandwidth is left unchanged (the memory clock is not
lowered first under a cap [2]_). Static power is neglected, which understates the slowdown a
little (no idle figure is published for the parts it matters for).

References
----------
.. [1] J. L. Hennessy and D. A. Patterson, *Computer Architecture: A Quantitative Approach*,
   6th ed., Sec. 1.5 (dynamic power :math:`\tfrac12 C V^2 f`; DVFS lowers voltage with
   frequency).
.. [2] A. Ujeniya et al., "Architectural Trade-offs in the Energy-Efficient Era: A Comparative
   Study of power-capping NVIDIA H100 and H200", arXiv:2604.11391 (2026): under power caps of
   200-700 W the SM frequency falls while the memory keeps its bandwidth.
"""

from __future__ import annotations

from aitco.perf.specs import PowerSpec

#: Exponent of the power-frequency relation in the DVFS range, :math:`P \propto f^3` [1]_.
DVFS_POWER_EXPONENT = 3.0


def power_limited_clock_ratio(power_limit_w: float | None, tdp_w: float | None) -> float:
    r"""Return the compute-clock ratio of a device run at ``power_limit_w`` below ``tdp_w``.

    Parameters
    ----------
    power_limit_w : float or None
        Power limit the device runs at (None: no limit). [W]
    tdp_w : float or None
        The TDP its peak figures hold at (None: unknown, no derating). [W]

    Returns
    -------
    float
        :math:`\min(1, (P_{lim}/P_{TDP})^{1/3})`; 1 without a limit below the TDP. [0-1]
    """
    if power_limit_w is None or tdp_w is None or power_limit_w >= tdp_w:
        return 1.0
    return float((power_limit_w / tdp_w) ** (1.0 / DVFS_POWER_EXPONENT))


def compute_clock_ratio(acc: PowerSpec) -> float:
    """Return :func:`power_limited_clock_ratio` of an accelerator's power limit and TDP."""
    return power_limited_clock_ratio(acc.power_limit_w, acc.tdp_w)
