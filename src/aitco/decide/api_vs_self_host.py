"""API vs self-host: dollars per million tokens of managed token APIs against serving it yourself.

The managed side is the dated API price catalog (``catalog/data/apis``): a blended price per
million tokens for the user's request mix (input/output lengths, share of cached input, batch
discount). The self-hosted side prices the user's open model on rented (or owned) accelerators:
every hardware x tensor-parallel degree x precision x batch candidate is evaluated with the
inference engine's continuous-batching model, grouped by hardware
(:class:`aitco.decide.evaluators.EngineServingEvaluator`); candidates that miss the latency
objectives or do not fit are dropped, and the replicas needed for each monthly
volume are rounded up -- so the self-hosted price per token falls with volume (fixed replicas
amortised) while the API price is flat. The break-even volume is the smallest volume from which
self-hosting is at least as cheap as the API. The cheapest plan at the user's volume is then
simulated under Poisson arrivals (:func:`poisson_check`) for its P99 latencies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import ApiPrice
from aitco.cost.factors import CostFactors
from aitco.cost.unit_costs import (
    TOKEN_SPLIT_KEYS,
    token_split_usd_per_million,
    usd_per_million,
)
from aitco.decide import evaluators as ev
from aitco.decide.service_cost import price_service_plan
from aitco.errors import AitcoError, InputError, UnknownIdError
from aitco.perf.inference import estimate_inference
from aitco.units import DTYPES, HOURS_PER_MONTH, MEGA, SECONDS_PER_HOUR, optional_s_to_ms

#: Hardware offered by default for self-hosting (common inference accelerators).
DEFAULT_HARDWARE: tuple[str, ...] = (
    "h100-sxm5-80gb",
    "h200-sxm-141gb",
    "a100-sxm4-80gb",
    "l40s",
    "l4",
    "mi300x",
)
DEFAULT_TP: tuple[int, ...] = (1, 2, 4, 8)
DEFAULT_BATCH: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_PRECISIONS: tuple[str, ...] = ("bf16", "fp8")
#: Volumes scanned for the break-even: 10^4 .. 10^13 tokens/month, 40 points per decade.
VOLUME_MIN_TOKENS = 1e4
VOLUME_MAX_TOKENS = 1e13
VOLUME_POINTS_PER_DECADE = 40
SECONDS_PER_MONTH = HOURS_PER_MONTH * SECONDS_PER_HOUR
#: Requests simulated by the Poisson load check of the chosen plan.
POISSON_CHECK_REQUESTS = 2000
#: Cheapest plans tried, in price order, to find one that meets the objectives at P99.
LOAD_CHECK_CANDIDATES = 20


def api_usd_per_mtok(
    api: ApiPrice,
    input_tokens: float,
    output_tokens: float,
    cached_fraction: float = 0.0,
    batch: bool = False,
) -> float:
    r"""Blended API price per million tokens (input + output) for a request mix.

    Notes
    -----
    .. math::

        p = \frac{i\,[(1-c)\,p_{in} + c\,p_{cached}] + o\,p_{out}}{i + o}\,(1 - \beta)

    with *c* the share of input tokens served from the prompt cache (:math:`p_{cached} = p_{in}`
    when the API lists no cached price) and :math:`\beta` the batch discount when ``batch``.
    """
    if not 0 <= cached_fraction <= 1:
        raise InputError("--cached-fraction", cached_fraction, "a fraction in [0, 1]")
    p_cached = api.cached_input_usd_per_mtok
    if p_cached is None:
        p_cached = api.input_usd_per_mtok
    inp = input_tokens * (
        (1 - cached_fraction) * api.input_usd_per_mtok + cached_fraction * p_cached
    )
    price = (inp + output_tokens * api.output_usd_per_mtok) / (input_tokens + output_tokens)
    if batch and api.batch_discount:
        price *= 1.0 - api.batch_discount
    return float(price)


def volume_grid(volume_tokens_per_month: float | None = None) -> np.ndarray:
    """Monthly volumes scanned (log-spaced), including the user's volume when given."""
    decades = np.log10(VOLUME_MAX_TOKENS) - np.log10(VOLUME_MIN_TOKENS)
    grid = np.logspace(
        np.log10(VOLUME_MIN_TOKENS),
        np.log10(VOLUME_MAX_TOKENS),
        int(decades * VOLUME_POINTS_PER_DECADE) + 1,
    )
    if volume_tokens_per_month is not None:
        grid = np.unique(np.append(grid, volume_tokens_per_month))
    return grid


def self_host_candidates(
    catalog: Catalog,
    model: str,
    *,
    hardware: tuple[str, ...] = DEFAULT_HARDWARE,
    tps: tuple[int, ...] = DEFAULT_TP,
    batches: tuple[int, ...] = DEFAULT_BATCH,
    precisions: tuple[str, ...] = DEFAULT_PRECISIONS,
    pricing: str = "on_demand",
    input_tokens: int = 512,
    output_tokens: int = 256,
    max_ttft_s: float | None = None,
    max_tpot_s: float | None = None,
    prices: dict[str, dict[str, float]] | None = None,
) -> dict[str, np.ndarray | list[str]]:
    """Evaluate every self-hosting candidate with the vectorised serving model.

    Returns
    -------
    dict
        Arrays over the feasible candidates: ``hardware`` (ids), ``gpus``, ``precision``,
        ``batch``, ``requests_per_s`` (one replica), ``usd_per_h`` (one replica), ``ttft_s``,
        ``tpot_s``, ``output_tokens_per_s``.
    """
    if pricing not in ev.PRICING_MODES:
        raise InputError("--pricing", pricing, f"one of {', '.join(ev.PRICING_MODES)}")
    for p in precisions:
        if p not in DTYPES:
            raise InputError("--precision", p, f"one of {', '.join(DTYPES)}")
    known = list(hardware)
    hw = ev.hardware_table(catalog, known, [None], prices=prices, field_name="--hardware")
    arch = catalog.resolve_model(model, field="--model")
    mt = ev.model_table([arch])
    pairs = [catalog.hardware(h, field="--hardware") for h in known]
    e = ev.EngineServingEvaluator(
        hw=hw,
        models=mt,
        accelerators=[a for a, _ in pairs],
        systems=[sy for _, sy in pairs],
        model_archs=[arch],
        factors=CostFactors(catalog),
    )
    grids = np.meshgrid(
        np.arange(len(known)),
        np.asarray(tps, dtype=float),
        np.array([DTYPES.index(p) for p in precisions]),
        np.asarray(batches, dtype=float),
        indexing="ij",
    )
    h_i, g, prec, b = (x.ravel() for x in grids)
    n = h_i.size
    v = {
        "option.hardware": h_i,
        "option.gpus": g,
        "option.pricing": np.full(n, ev.PRICING_MODES.index(pricing)),
        "option.region": np.zeros(n, dtype=np.int64),
        "workload.model": np.zeros(n, dtype=np.int64),
        "workload.precision": prec,
        "workload.kv_precision": np.full(n, -1),
        "workload.batch": b,
        "workload.input_tokens": np.full(n, float(input_tokens)),
        "workload.output_tokens": np.full(n, float(output_tokens)),
    }
    m = e.evaluate(v)
    rows = m["rows"]
    ok = m["reason"][rows] == 0
    if max_ttft_s is not None:
        ok &= m["ttft_s"] <= max_ttft_s
    if max_tpot_s is not None:
        ok &= m["tpot_s"] <= max_tpot_s
    sel = np.flatnonzero(ok)
    at = rows[sel]
    return {
        "hardware": [known[i] for i in h_i[at]],
        "gpus": g[at],
        "precision": [DTYPES[i] for i in prec[at]],
        "batch": b[at],
        "requests_per_s": m["requests_per_s"][sel],
        "usd_per_h": m["usd_per_h"][sel],
        "ttft_s": m["ttft_s"][sel],
        "tpot_s": m["tpot_s"][sel],
        "output_tokens_per_s": m["output_tokens_per_s"][sel],
        "evaluated": np.array([n]),
        "reasons": np.array([int(np.count_nonzero(m["reason"] & bit)) for bit in ev.REASONS]),
    }


def self_host_usd_per_mtok(
    cands: dict[str, Any], volumes: np.ndarray, input_tokens: int, output_tokens: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""Cheapest self-hosted price per million tokens at each monthly volume.

    Notes
    -----
    For candidate *j* (one replica: :math:`r_j` requests/s at :math:`c_j` USD/h) and volume *V*
    tokens/month of requests of :math:`i + o` tokens:

    .. math::

        n_j(V) = \left\lceil \frac{V / (i+o)}{r_j\, 2.6298\times10^{6}\,\mathrm{s}} \right\rceil,
        \qquad p(V) = \min_j \frac{n_j(V)\, c_j \cdot 730.5\,\mathrm{h}}{V / 10^6}

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Price per million tokens at each volume, and the index of the cheapest candidate.
    """
    rps = np.asarray(cands["requests_per_s"], dtype=float)
    if rps.size == 0:
        return np.full(volumes.shape, np.nan), np.full(volumes.shape, -1)
    need = volumes[:, None] / (input_tokens + output_tokens) / SECONDS_PER_MONTH
    replicas = np.maximum(np.ceil(need / rps[None, :]), 1.0)
    monthly = replicas * np.asarray(cands["usd_per_h"])[None, :] * HOURS_PER_MONTH
    per_mtok = monthly / (volumes[:, None] / MEGA)
    best = np.argmin(per_mtok, axis=1)
    return per_mtok[np.arange(volumes.size), best], best


def break_even_volume(volumes: np.ndarray, self_host: np.ndarray, api: float) -> float | None:
    """Smallest scanned volume from which self-hosting stays at or below the API price.

    Rounding replicas up makes the self-hosted price a saw-tooth in volume; the break-even is
    the start of the last run of volumes where it is <= the API price that reaches the top of
    the scan (or the first crossing when no run reaches it). None if it never is.
    """
    cheaper = self_host <= api
    if not cheaper.any():
        return None
    if cheaper[-1]:
        losing = np.flatnonzero(~cheaper)
        start = 0 if losing.size == 0 else int(losing[-1]) + 1
        return float(volumes[start])
    return float(volumes[int(np.flatnonzero(cheaper)[0])])


def api_vs_self_host(
    catalog: Catalog,
    model: str,
    *,
    volume_tokens_per_month: float | None = None,
    requests_per_day: float | None = None,
    input_tokens: int = 512,
    output_tokens: int = 256,
    cached_fraction: float = 0.0,
    batch_api: bool = False,
    apis: list[str] | None = None,
    hardware: tuple[str, ...] = DEFAULT_HARDWARE,
    pricing: str = "on_demand",
    precisions: tuple[str, ...] = DEFAULT_PRECISIONS,
    max_ttft_s: float | None = None,
    max_tpot_s: float | None = None,
    prices: dict[str, dict[str, float]] | None = None,
    load_check: bool = True,
) -> dict[str, Any]:
    """Compare each managed API with self-hosting ``model``; the volume where self-hosting wins.

    Parameters
    ----------
    catalog : Catalog
        APIs, accelerators, offers, models.
    model : str
        Open model to self-host (catalog id or config path).
    volume_tokens_per_month, requests_per_day : float, optional
        The user's volume (one of them; requests are converted with the mix).
    input_tokens, output_tokens : int
        Mean request shape. [tokens]
    cached_fraction : float
        Share of input tokens billed at the API's cached price. [0-1]
    batch_api : bool
        Use the APIs' batch discount (offline jobs).
    apis : list of str, optional
        API ids (default: all in the catalog).
    hardware, pricing, precisions : optional
        Self-hosting candidates.
    max_ttft_s, max_tpot_s : float, optional
        Latency objectives self-hosting must meet (the API's latency is the provider's).
    prices : dict, optional
        Rental price overrides ``{hardware: {mode: usd_per_gpu_hour}}``.
    load_check : bool
        Simulate the chosen plan under Poisson arrivals (P99 latencies). With latency
        objectives, the ``LOAD_CHECK_CANDIDATES`` cheapest plans are simulated, each scaled to the
        replicas the engine needs to meet the objectives at P99 (``replicas_for_slo``), and the
        cheapest after scaling is chosen.

    Returns
    -------
    dict
        ``apis`` (one row per API: ``usd_per_million_tokens``, ``break_even_tokens_per_month``,
        monthly cost at the volume, ``self_host_wins``), ``self_host`` (the plan at the volume)
        and ``curve`` (volume -> self-host $/Mtok).
    """
    if input_tokens < 1 or output_tokens < 1:
        raise InputError(
            "--input-tokens/--output-tokens", (input_tokens, output_tokens), "lengths >= 1"
        )
    if volume_tokens_per_month is not None and requests_per_day is not None:
        raise InputError(
            "--requests-per-day", requests_per_day, "either a token volume or requests per day"
        )
    vol = volume_tokens_per_month
    if requests_per_day is not None:
        if requests_per_day <= 0:
            raise InputError("--requests-per-day", requests_per_day, "a rate > 0")
        vol = requests_per_day * (input_tokens + output_tokens) * (SECONDS_PER_MONTH / 86400.0)
    if vol is not None and vol <= 0:
        raise InputError("--volume-tokens-per-month", vol, "a volume > 0")
    ids = apis if apis else sorted(catalog.apis)
    rows_api: list[tuple[str, ApiPrice]] = []
    for a in ids:
        if a not in catalog.apis:
            raise UnknownIdError("api", a, catalog.apis, field="--api")
        rows_api.append((a, catalog.apis[a]))
    if not rows_api:
        raise InputError("apis", ids, "at least one API price in the catalog")
    cands = self_host_candidates(
        catalog,
        model,
        hardware=hardware,
        pricing=pricing,
        precisions=precisions,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        max_ttft_s=max_ttft_s,
        max_tpot_s=max_tpot_s,
        prices=prices,
    )
    if len(cands["hardware"]) == 0:
        raise InputError(
            "self-host",
            model,
            "a hardware x tp x batch that fits, is priced and meets the latency objectives",
            hint=f"evaluated {int(cands['evaluated'][0])}; relax --max-ttft-s/--max-tpot-s "
            "or add hardware",
        )
    grid = volume_grid(vol)
    curve, _ = self_host_usd_per_mtok(cands, grid, input_tokens, output_tokens)
    out_apis = []
    for aid, api in rows_api:
        p = api_usd_per_mtok(api, input_tokens, output_tokens, cached_fraction, batch_api)
        be = break_even_volume(grid, curve, p)
        row: dict[str, Any] = {
            "api": aid,
            "provider": api.provider,
            "model": api.model,
            "as_of": str(api.as_of),
            "usd_per_million_tokens": p,
            "break_even_tokens_per_month": be,
            "input_usd_per_million_tokens": api.input_usd_per_mtok,
            "output_usd_per_million_tokens": api.output_usd_per_mtok,
            "cached_input_usd_per_million_tokens": api.cached_input_usd_per_mtok,
            "price_source": f"catalog {api.as_of}",
        }
        if vol is not None:
            j = int(np.flatnonzero(grid == vol)[0])
            row["api_usd_per_month"] = p * vol / MEGA
            row["self_host_usd_per_month"] = float(curve[j]) * vol / MEGA
            row["self_host_wins"] = bool(curve[j] <= p)
        out_apis.append(row)
    out_apis.sort(key=lambda r: r["usd_per_million_tokens"])
    result: dict[str, Any] = {
        "model": model,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cached_fraction": cached_fraction,
        "batch_api": batch_api,
        "pricing": pricing,
        "volume_tokens_per_month": vol,
        "note": (
            "prices only: an API model and the self-hosted open model may differ in quality; "
            "compare like with like (e.g. a hosted API of the same open model)"
        ),
        "candidates_evaluated": int(cands["evaluated"][0]),
        "candidates_feasible": len(cands["hardware"]),
        "apis": out_apis,
        "curve": [
            {"tokens_per_month": float(v), "self_host_usd_per_million_tokens": float(c)}
            for v, c in zip(
                grid[:: VOLUME_POINTS_PER_DECADE // 4],
                curve[:: VOLUME_POINTS_PER_DECADE // 4],
                strict=True,
            )
        ],
    }
    if vol is not None:
        need = vol / (input_tokens + output_tokens) / SECONDS_PER_MONTH
        rps_all = np.asarray(cands["requests_per_s"], dtype=float)
        reps = np.maximum(np.ceil(need / rps_all), 1.0)
        monthly = reps * np.asarray(cands["usd_per_h"]) * HOURS_PER_MONTH
        ranked = np.lexsort((np.arange(monthly.size), monthly))

        def make_plan(k: int) -> dict[str, Any]:
            return {
                "hardware": cands["hardware"][k],
                "gpus_per_replica": int(cands["gpus"][k]),
                "precision": cands["precision"][k],
                "batch": int(cands["batch"][k]),
                "replicas": int(reps[k]),
                "requests_per_s_needed": need,
                "requests_per_s_per_replica": float(rps_all[k]),
                "ttft_s": float(cands["ttft_s"][k]),
                "tpot_s": float(cands["tpot_s"][k]),
                "usd_per_million_tokens": float(monthly[k] / (vol / MEGA)),
                "utilization": need / (reps[k] * rps_all[k]),
                "model": "inference engine, steady-state continuous batching at the batch",
            }

        plan = (
            _load_checked(
                catalog, model, make_plan, ranked, (input_tokens, output_tokens),
                max_ttft_s, max_tpot_s,
            )
            if load_check
            else make_plan(int(ranked[0]))
        )  # fmt: skip
        _price_plan(catalog, model, plan, (input_tokens, output_tokens), pricing, prices)
        plan.update(self_host_token_prices(catalog, model, plan, input_tokens, output_tokens, vol))
        # the per-API verdicts at the user's volume use the plan finally chosen
        for row in out_apis:
            row["self_host_usd_per_month"] = plan["usd_per_million_tokens"] * vol / MEGA
            row["self_host_wins"] = bool(
                plan["usd_per_million_tokens"] <= row["usd_per_million_tokens"]
            )
        result["self_host"] = plan
    return result


def _price_plan(
    catalog: Catalog, model: str, plan: dict[str, Any], lengths: tuple[int, int], pricing: str,
    prices: dict[str, dict[str, float]] | None,
) -> None:  # fmt: skip
    """Price the chosen plan as compare prices a service: its month, every item, whole instances.

    The candidates are ranked by the vectorised screen (one replica's cost per hour x replicas);
    the plan chosen is then priced by :func:`aitco.decide.service_cost.price_service_plan` (the
    offer selection, eligibility and items of ``compare``), and its
    ``usd_per_million_tokens`` is that month's total over its tokens. ``priced_by`` says which.
    """
    override = (prices or {}).get(plan["hardware"], {}).get(pricing)
    got = price_service_plan(
        catalog,
        {**plan, "model": model, "input_tokens": lengths[0], "output_tokens": lengths[1],
         "pricing": pricing, "usd_per_gpu_hour": override},
    )  # fmt: skip
    if got is None:
        plan["priced_by"] = "screen (the plan cannot be priced by compare's cost path)"
        return
    b, _res = got
    v = b.values
    plan.update(
        usd_per_million_tokens=v["usd_per_million_tokens"], usd_per_month=v["usd_per_month"],
        offer_id=v["offer_id"], instances=v["instances"], gpus_billed=v["gpus_billed"],
        priced_by="compare's cost path (aitco.decide.service_cost.price_service_plan)",
    )  # fmt: skip


def _load_checked(
    catalog: Catalog,
    model: str,
    make_plan: Any,
    ranked: np.ndarray,
    lengths: tuple[int, int],
    max_ttft_s: float | None,
    max_tpot_s: float | None,
) -> dict[str, Any]:
    """Return the plan chosen by the Poisson check (:func:`poisson_check`) of the cheapest.

    Without latency objectives the cheapest plan is checked and kept; with them the
    ``LOAD_CHECK_CANDIDATES`` cheapest are checked, each scaled to the replicas the engine needs
    to meet the objectives at P99, and the cheapest after scaling is kept.
    """
    slo = max_ttft_s is not None or max_tpot_s is not None
    plan: dict[str, Any] = make_plan(int(ranked[0]))
    best_cost = math.inf
    for n_tried, k in enumerate(ranked[: LOAD_CHECK_CANDIDATES if slo else 1], start=1):
        cand = make_plan(int(k))
        chk = poisson_check(catalog, model, cand, *lengths, max_ttft_s, max_tpot_s)
        chk["plans_checked"] = n_tried
        cand["load_check"] = chk
        if not slo:
            return cand
        # replicas the engine needs to meet the objectives at P99 under Poisson load
        need_r = chk.get("replicas_for_slo")
        if not need_r:
            if n_tried == 1:
                plan = cand
            continue
        scale = need_r / cand["replicas"]
        cost = cand["usd_per_million_tokens"] * scale
        if cost < best_cost:
            best_cost = cost
            cand["replicas"] = int(need_r)
            cand["usd_per_million_tokens"] = cost
            cand["utilization"] = cand["utilization"] / scale
            plan = cand
    return plan


def self_host_token_prices(
    catalog: Catalog,
    model: str,
    plan: dict[str, Any],
    input_tokens: int,
    output_tokens: int,
    volume_tokens_per_month: float,
) -> dict[str, Any]:
    """Self-hosted price per million tokens: whole, and split as token APIs quote them.

    ``usd_per_million_output_tokens`` is the plan's whole cost over its output tokens (the one
    definition of every command). The split
    (:func:`aitco.cost.unit_costs.token_split_usd_per_million`) shares the same monthly cost
    between input and output tokens by the share of GPU time on prompt tokens
    (``prefill_time_fraction`` of the inference engine at the plan's load, from the Poisson
    check when it ran, else the closed loop at the plan's batch): allocation basis (every
    rented hour) and usage basis (busy hours only).
    """
    f = (plan.get("load_check") or {}).get("prefill_time_fraction")
    if f is None:
        acc, sysm = catalog.hardware(plan["hardware"])
        try:
            res = estimate_inference(
                catalog.resolve_model(model), acc, sysm, plan["gpus_per_replica"],
                precision=plan["precision"], input_tokens=input_tokens,
                output_tokens=output_tokens, concurrency=plan["batch"],
                tp=plan["gpus_per_replica"], max_batch=plan["batch"],
            )  # fmt: skip
        except AitcoError:
            return {k: None for k in TOKEN_PRICE_KEYS}
        f = res.values.get("prefill_time_fraction")
    if f is None:
        return {k: None for k in TOKEN_PRICE_KEYS}
    monthly_usd = plan["usd_per_million_tokens"] * volume_tokens_per_month / MEGA
    usd_h = monthly_usd / HOURS_PER_MONTH
    need = float(plan["requests_per_s_needed"])
    out = token_split_usd_per_million(
        usd_h, need * input_tokens, need * output_tokens, float(f), float(plan["utilization"])
    )
    out_tokens = need * output_tokens * SECONDS_PER_MONTH
    return {
        **out,
        "usd_per_million_output_tokens": usd_per_million(monthly_usd, out_tokens),
        "prefill_time_fraction": float(f),
    }


#: Keys of :func:`self_host_token_prices`.
TOKEN_PRICE_KEYS = (
    *TOKEN_SPLIT_KEYS,
    "usd_per_million_output_tokens",
    "prefill_time_fraction",
)


def poisson_check(
    catalog: Catalog,
    model: str,
    plan: dict[str, Any],
    input_tokens: int,
    output_tokens: int,
    max_ttft_s: float | None = None,
    max_tpot_s: float | None = None,
    **service: Any,
) -> dict[str, Any]:
    """Simulate the plan under Poisson arrivals with the inference engine: P99 latencies.

    ``service``: further :func:`~aitco.perf.inference.estimate_inference` fields of the plan
    (``prefix_cache_hit_rate``, ``scheduler_steps``, ``max_batched_tokens``).

    The candidates are ranked at steady-state mean latency; this re-runs the chosen plan
    (``replicas x gpus_per_replica`` accelerators, tensor parallel within a replica, the batch
    as the engine's ``max_num_seqs``) at the needed request rate with
    :func:`aitco.perf.inference.estimate_inference` and reports its P99 TTFT and TPOT, and
    whether they meet the objectives.
    """
    acc, sysm = catalog.hardware(plan["hardware"])
    try:
        res = estimate_inference(
            catalog.resolve_model(model),
            acc,
            sysm,
            plan["gpus_per_replica"] * plan["replicas"],
            precision=plan["precision"],
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            qps=plan["requests_per_s_needed"],
            tp=plan["gpus_per_replica"],
            max_batch=plan["batch"],
            num_requests=POISSON_CHECK_REQUESTS,
            slo_ttft_ms=optional_s_to_ms(max_ttft_s),  # the engine's objectives are in ms
            slo_tpot_ms=optional_s_to_ms(max_tpot_s),
            **service,
        )
    except AitcoError as exc:
        return {"available": False, "error": str(exc)}
    v = res.values
    out: dict[str, Any] = {
        "available": True,
        "p99_ttft_s": v.get("p99_ttft_s"),
        "p99_tpot_s": v.get("p99_tpot_s"),
        "saturated": v.get("saturated"),
        "utilization": v.get("utilization"),
        "replicas": plan["replicas"],
        "replicas_for_slo": v.get("replicas_for_slo"),
        "prefill_time_fraction": v.get("prefill_time_fraction"),
    }
    ok = not v.get("saturated", False)
    if max_ttft_s is not None and v.get("p99_ttft_s") is not None:
        ok &= v["p99_ttft_s"] <= max_ttft_s
    if max_tpot_s is not None and v.get("p99_tpot_s") is not None:
        ok &= v["p99_tpot_s"] <= max_tpot_s
    out["meets_objectives_at_p99"] = bool(ok)
    return out
