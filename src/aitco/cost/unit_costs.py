r"""Unit costs: a service's cost per million tokens, whole and split by token kind.

``usd_per_million_output_tokens`` is one quantity in every command: the whole cost of a service
(every item of its TCO) over the output tokens it served. Token APIs quote input and output
tokens apart; :func:`token_split_usd_per_million` splits the same cost between them by the
share of accelerator time spent on prompts (``prefill_time_fraction``), so that input and output
tokens together recover the whole cost: ``usd_per_million_input_tokens`` and
``split_usd_per_million_output_tokens`` (allocation basis: every hour charged), and their
``usage_`` variants (only busy time charged).
"""

from __future__ import annotations

import math

from aitco.units import MEGA, SECONDS_PER_HOUR


def usd_per_million(total_usd: float, tokens: float) -> float | None:
    """Return ``total_usd`` per million ``tokens`` (None without tokens). [USD/Mtok].

    Examples
    --------
    >>> usd_per_million(3.0, 2e6)
    1.5
    """
    if not tokens or not math.isfinite(tokens):
        return None
    return total_usd / tokens * MEGA


def token_split_usd_per_million(
    usd_per_h: float,
    input_tokens_per_s: float,
    output_tokens_per_s: float,
    prefill_time_fraction: float,
    utilization: float = 1.0,
) -> dict[str, float | None]:
    r"""Cost per million input and output tokens of a service costing ``usd_per_h``.

    Parameters
    ----------
    usd_per_h : float
        Cost of the service per hour (its whole TCO over the period's hours). [USD/h]
    input_tokens_per_s, output_tokens_per_s : float
        Tokens served. [tokens/s]
    prefill_time_fraction : float
        Share of accelerator time on prompt tokens; the rest is charged to output tokens. [0-1]
    utilization : float
        Busy share of the held time (1 for offline and closed-loop loads). [0-1]

    Returns
    -------
    dict
        ``usd_per_million_input_tokens`` and ``split_usd_per_million_output_tokens``
        (allocation basis), ``usage_usd_per_million_input_tokens`` and
        ``usage_usd_per_million_output_tokens`` (usage basis). [USD/Mtok]

    Notes
    -----
    :math:`c_{in} = 10^6\,f\,C / (3600\,r_{in})`, :math:`c_{out} = 10^6 (1-f)\,C / (3600\,r_{out})`
    with :math:`C` the cost per hour and :math:`f` the prefill share; the usage basis multiplies
    by the utilisation. Input and output costs together recover the whole cost.

    Examples
    --------
    >>> c = token_split_usd_per_million(36.0, 2000.0, 500.0, 0.25)
    >>> round((c["usd_per_million_input_tokens"] * 2000
    ...        + c["split_usd_per_million_output_tokens"] * 500) * 3600 / 1e6, 6)
    36.0
    """
    per_s = usd_per_h / SECONDS_PER_HOUR
    f = min(max(prefill_time_fraction, 0.0), 1.0)
    keys = {
        ("", "input"): "usd_per_million_input_tokens",
        ("", "output"): "split_usd_per_million_output_tokens",
        ("usage_", "input"): "usage_usd_per_million_input_tokens",
        ("usage_", "output"): "usage_usd_per_million_output_tokens",
    }
    out: dict[str, float | None] = {}
    for basis, scale in (("", 1.0), ("usage_", min(max(utilization, 0.0), 1.0))):
        for kind, share, rate in (("input", f, input_tokens_per_s),
                                  ("output", 1.0 - f, output_tokens_per_s)):  # fmt: skip
            ok = rate > 0 and math.isfinite(rate)
            out[keys[basis, kind]] = per_s * share * scale / rate * MEGA if ok else None
    return out


#: Keys of :func:`token_split_usd_per_million`.
TOKEN_SPLIT_KEYS: tuple[str, ...] = (
    "usd_per_million_input_tokens",
    "split_usd_per_million_output_tokens",
    "usage_usd_per_million_input_tokens",
    "usage_usd_per_million_output_tokens",
)
