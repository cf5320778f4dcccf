"""``aitco infer`` (serving estimate) and ``aitco validate inference``.

Thin: parse the flags, resolve the catalog entries, call
:func:`aitco.perf.inference.estimate_inference` or :func:`aitco.validation.inference.validate`,
render. ``--json`` prints one object with the contract keys of docs/glossary.md (``ttft_s``,
``tpot_s``, ``e2e_latency_s``, ``output_tokens_per_s``, ``total_tokens_per_s``,
``requests_per_s``, ``max_concurrency``, ``kv_cache_gb``, ``weights_gb``, ``fits``; with
``--qps`` also ``p50_ttft_s``, ``p99_ttft_s``, ``p50_tpot_s``, ``p99_tpot_s``,
``p99_e2e_latency_s`` and, with an SLO, ``replicas_for_slo``), plus ``interval``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape

from aitco.cli import state
from aitco.cli.render import console, fmt, print_explain, print_json, table
from aitco.errors import InputError
from aitco.labels import display_scale
from aitco.labels import label as key_label
from aitco.units import HOURS_PER_MONTH, SECONDS_PER_HOUR


class Precision(StrEnum):
    """Weight data types."""

    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"
    fp4 = "fp4"
    fp6 = "fp6"
    nvfp4 = "nvfp4"
    mxfp4 = "mxfp4"
    mxfp6 = "mxfp6"
    mxfp8 = "mxfp8"


class Mode(StrEnum):
    """Serving modes."""

    online = "online"
    offline = "offline"


class Engine(StrEnum):
    """Serving engines whose default limits apply."""

    vllm = "vllm"
    vllm_v1 = "vllm-v1"
    sglang = "sglang"
    trtllm = "trtllm"
    generic = "generic"


class Allocation(StrEnum):
    """KV-cache allocation schemes."""

    paged = "paged"
    contiguous = "contiguous"


def _range(res_interval: dict[str, tuple[float, float]], key: str) -> str:
    """Return the 80 % interval of ``key`` in its display unit (TTFT/TPOT in ms)."""
    iv = res_interval.get(key)
    if not iv:
        return ""
    k = display_scale(key)
    return f"{fmt(iv[0] * k)} - {fmt(iv[1] * k)}"


def _shown(v: Any, key: str) -> Any:
    """Return a value in its display unit (:data:`aitco.labels.DISPLAY_UNITS`)."""
    return v * display_scale(key) if isinstance(v, int | float) and not isinstance(v, bool) else v


def infer(
    model: Annotated[str, typer.Option("--model", help="Catalog id, config.json or model YAML.")],
    hardware: Annotated[str, typer.Option("--hardware", help="Accelerator or system id.")],
    gpus: Annotated[int, typer.Option("--gpus", help="Accelerators in total.")] = 1,
    tp: Annotated[int | None, typer.Option("--tp", help="Tensor parallel degree.")] = None,
    pp: Annotated[int | None, typer.Option("--pp", help="Pipeline parallel degree.")] = None,
    precision: Annotated[
        Precision, typer.Option("--precision", help="Weight type.")
    ] = Precision.bf16,
    kv_precision: Annotated[
        Precision | None, typer.Option("--kv-precision", help="KV-cache type.")
    ] = None,
    input_tokens: Annotated[int, typer.Option("--input-tokens", help="Mean prompt tokens.")] = 512,
    output_tokens: Annotated[
        int, typer.Option("--output-tokens", help="Mean output tokens.")
    ] = 256,
    batch: Annotated[int | None, typer.Option("--batch", help="Static batch size.")] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", help="Requests in flight (closed loop).")
    ] = None,
    qps: Annotated[
        float | None, typer.Option("--qps", help="Poisson arrival rate, requests/s.")
    ] = None,
    mode: Annotated[Mode, typer.Option("--mode", help="offline = max throughput.")] = Mode.online,
    slo_ttft_ms: Annotated[
        float | None, typer.Option("--slo-ttft-ms", help="P99 TTFT objective.")
    ] = None,
    slo_tpot_ms: Annotated[
        float | None, typer.Option("--slo-tpot-ms", help="P99 TPOT objective.")
    ] = None,
    engine: Annotated[Engine, typer.Option("--engine", help="Engine limits.")] = Engine.vllm,
    allocation: Annotated[
        Allocation,
        typer.Option(
            "--kv-allocation", help="KV cache in pages (vLLM) or one contiguous block per request."
        ),
    ] = Allocation.paged,
    length_cv: Annotated[
        float, typer.Option("--length-cv", help="Coefficient of variation of lengths (--qps).")
    ] = 0.0,
    num_requests: Annotated[
        int, typer.Option("--num-requests", help="Requests simulated with --qps.")
    ] = 5000,
    trace: Annotated[
        str | None,
        typer.Option(
            "--trace", help="CSV of requests: arrival_s,input_tokens,output_tokens (simulated)."
        ),
    ] = None,
    draft_model: Annotated[
        str | None, typer.Option("--draft-model", help="Speculative decoding: draft model.")
    ] = None,
    spec_tokens: Annotated[
        int, typer.Option("--spec-tokens", help="Draft tokens proposed per step.")
    ] = 4,
    acceptance_rate: Annotated[
        float, typer.Option("--acceptance-rate", help="Per-token draft acceptance.")
    ] = 0.7,
    power_limit_w: state.PowerLimitOpt = None,
    calibration: Annotated[
        str | None, typer.Option("--calibration", help="Calibration profile YAML.")
    ] = None,
    prefix_cache_hit_rate: Annotated[
        float,
        typer.Option("--prefix-cache-hit-rate", help="Share of prompt tokens reused (0-1)."),
    ] = 0.0,
    scheduler_steps: Annotated[
        int, typer.Option("--scheduler-steps", help="Multi-step scheduling: steps per admission.")
    ] = 1,
    max_batched_tokens: Annotated[
        int | None,
        typer.Option("--max-batched-tokens", help="Tokens per iteration (prefill chunk bound)."),
    ] = None,
    disaggregate: Annotated[
        str | None,
        typer.Option("--disaggregate", help="auto, or PxD prefill x decode replicas."),
    ] = None,
    load_profile: Annotated[
        str | None,
        typer.Option("--load-profile", help="diurnal, or a CSV of 24 hourly qps (hour,qps)."),
    ] = None,
    autoscale: Annotated[
        str | None,
        typer.Option("--autoscale", help="target-util=0.7,min=0,max=64 (with --load-profile)."),
    ] = None,
    ep: Annotated[
        int, typer.Option("--ep", help="Expert parallelism (MoE): GPUs per replica, attention DP.")
    ] = 1,
    mig: Annotated[
        str | None, typer.Option("--mig", help="MIG slice per replica, e.g. 1g.10gb.")
    ] = None,
    time_slice: Annotated[
        int | None,
        typer.Option(
            "--time-slice",
            help="Time-slicing: replicas sharing each GPU (or MIG slice); priced at 1/N, "
            "contended rates and 1/N of the memory.",
        ),
    ] = None,
    usd_per_gpu_hour: state.UsdPerGpuHourOpt = None,
    pricing: state.PricingOpt = state.Pricing.on_demand,
    provider: state.ProviderOpt = None,
    region: state.RegionOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show the terms.")] = False,
) -> None:
    """Estimate serving a model: TTFT, TPOT, throughput, tail latency, KV capacity, replicas."""
    from aitco.perf.inference import estimate_inference

    if length_cv < 0:
        raise InputError("--length-cv", length_cv, "a coefficient of variation >= 0")
    cat = state.catalog()
    if model in cat.cnn_models:
        acc, _system = cat.hardware(hardware, field="--hardware")
        if qps is not None or concurrency is not None:
            raise InputError("--qps", qps or concurrency, "--batch for a CNN (no token serving)")
        price, price_note = _gpu_price(cat, acc.id, usd_per_gpu_hour)
        _infer_cnn(cat.cnn_models[model], acc, gpus, batch, precision.value, price, price_note,
                   state.efficiency(calibration), json_out)  # fmt: skip
        return
    arch = cat.resolve_model(model, field="--model")
    acc, system = cat.hardware(hardware, field="--hardware")
    acc = acc.with_power_limit(power_limit_w)  # below the TDP: slower compute, less power
    whole_gpu = acc
    shares = 1
    if mig is not None or time_slice is not None:
        acc, shares = _fractional_accelerator(acc, mig, time_slice, gpus)
    option = {
        "hardware": hardware, "gpus": gpus, "usd_per_gpu_hour": usd_per_gpu_hour,
        "power_limit_w": power_limit_w, "pricing": pricing.value, "provider": provider,
        "region": region,
    }  # fmt: skip
    scn = _scenario(
        arch.id, option, precision=precision.value,
        kv_precision=kv_precision.value if kv_precision else None, input_tokens=input_tokens,
        output_tokens=output_tokens, batch=batch, concurrency=concurrency, qps=qps,
        mode=mode.value, tp=tp, pp=pp, slo_ttft_ms=slo_ttft_ms, slo_tpot_ms=slo_tpot_ms,
        mig=mig, time_slice=time_slice,
    )  # fmt: skip
    # the price first: a rented offer that names its system runs the engine on it (as compare)
    price, system, price_note = _option_price(cat, scn, whole_gpu, system)
    eff = state.efficiency(calibration)
    draft = cat.resolve_model(draft_model, field="--draft-model") if draft_model else None
    trace_arrays, bad_lines = read_trace(trace) if trace else (None, [])

    def run(share: Any) -> Any:
        return estimate_inference(
            arch, share, system, gpus, precision=precision.value,
            kv_precision=kv_precision.value if kv_precision else None,
            input_tokens=input_tokens, output_tokens=output_tokens, batch=batch,
            concurrency=concurrency, qps=qps, mode=mode.value, tp=tp, pp=pp,
            slo_ttft_ms=slo_ttft_ms, slo_tpot_ms=slo_tpot_ms, efficiency=eff,
            engine=engine.value, allocation=allocation.value, input_cv=length_cv,
            output_cv=length_cv, num_requests=num_requests, draft_model=draft,
            spec_tokens=spec_tokens, acceptance_rate=acceptance_rate, trace=trace_arrays,
            prefix_cache_hit_rate=prefix_cache_hit_rate, scheduler_steps=scheduler_steps,
            max_batched_tokens=max_batched_tokens, ep=ep,
        )  # fmt: skip

    res = run(acc)
    v = res.values
    if trace:
        v["trace_malformed_lines"] = bad_lines
    if time_slice is not None and time_slice > 1:
        # the best case beside the guaranteed one: this replica alone on its share's GPU
        v["uncontended"] = _uncontended(run, whole_gpu, mig, time_slice)
    tco = _service_cost(cat, v, res, scn, (acc, system, arch), (price, price_note), shares)
    _add_service_plans(
        v, res, system, v["gpu_usd_per_h"], qps=qps, slo_ttft_ms=slo_ttft_ms,
        slo_tpot_ms=slo_tpot_ms, disaggregate=disaggregate, load_profile=load_profile,
        autoscale=autoscale, prefix_cache_hit_rate=prefix_cache_hit_rate, efficiency=eff,
    )  # fmt: skip
    if json_out:
        out: dict[str, Any] = dict(v)
        out["interval"] = {k: list(iv) for k, iv in res.interval.items()}
        out["model"] = arch.id
        out["hardware"] = whole_gpu.id
        out["system"] = system.id
        if tco is not None:
            out["tco"] = tco.to_json(explain=explain)
        if explain:
            out["explain"] = res.to_estimate().to_json()["explain"]
        print_json(out)
        return
    _render(v, res, arch.id, acc.id, gpus, qps, trace, bad_lines, draft_model)
    if explain:
        print_explain(res.to_estimate())


def _render(
    v: dict[str, Any], res: Any, model_id: str, acc_id: str, gpus: int, qps: float | None,
    trace: str | None, bad_lines: list[int], draft_model: str | None,
) -> None:  # fmt: skip
    """Print the serving estimate as tables (``aitco infer`` without ``--json``)."""
    iv = res.interval
    rows: list[tuple[Any, ...]] = [
        ("TTFT [ms]", _shown(v["ttft_s"], "ttft_s"), _range(iv, "ttft_s")),
        ("TPOT [ms]", _shown(v["tpot_s"], "tpot_s"), _range(iv, "tpot_s")),
        ("end-to-end latency [s]", v["e2e_latency_s"], _range(iv, "e2e_latency_s")),
        ("output tokens/s", v["output_tokens_per_s"], _range(iv, "output_tokens_per_s")),
        ("total tokens/s", v["total_tokens_per_s"], _range(iv, "total_tokens_per_s")),
        ("requests/s", v["requests_per_s"], _range(iv, "requests_per_s")),
        ("max concurrency (KV-bound)", v["max_concurrency"], ""),
        ("batch per replica", v["batch_per_replica"], f"max {v['max_batch_per_replica']}"),
        ("KV cache (GB, per replica)", v["kv_cache_gb"], f"waste {v['kv_waste_fraction']:.1%}"),
        ("weights (GB)", v["weights_gb"], f"{fmt(v['weights_per_gpu_gb'])} per GPU"),
        ("energy per token (J)", v.get("energy_per_token_j"), ""),
        ("USD per hour (every cost item)", v.get("usd_per_h"), v.get("price_source", "")),
        (
            "USD per million output tokens",
            v.get("usd_per_million_output_tokens"),
            "the whole cost over the output tokens (as aitco compare)",
        ),
        (
            "USD per million input tokens",
            v.get("usd_per_million_input_tokens"),
            f"split by prefill time; output {fmt(v.get('split_usd_per_million_output_tokens'))};"
            f" usage basis {fmt(v.get('usage_usd_per_million_input_tokens'))} / "
            f"{fmt(v.get('usage_usd_per_million_output_tokens'))}",
        ),
        ("tokens/s per W", v.get("tokens_per_s_per_w"), ""),
    ]
    if "speculative_speedup" in v:
        rows.append(("speculative speed-up", v["speculative_speedup"], f"draft {draft_model}"))
    if qps is not None or trace:
        rows += _load_rows(v)
    if "uncontended" in v:  # time-slicing: the figures above assume every replica busy
        u = v["uncontended"]
        rows.append(
            (
                "TPOT alone [ms]",
                _shown(u["tpot_s"], "tpot_s"),
                f"TTFT alone {fmt(_shown(u['ttft_s'], 'ttft_s'))} ms: no other replica busy",
            )
        )
    title = (
        f"Serving {model_id} on {gpus} x {acc_id} ({v['precision']}, tp {v['tp']} pp {v['pp']}, "
        f"{v['replicas']} replica(s), {v['engine']})"
    )
    rows = [(escape(str(r[0])), *r[1:]) for r in rows]  # "[ms]" is a unit, not markup
    console.print(table(title, ["", "estimate", "80% range / note"], rows, caption=v["regime"]))
    if v.get("saturated"):
        console.print(
            f"[bold red]saturated:[/bold red] {fmt(qps)} req/s exceeds the capacity of "
            f"{fmt(v['max_qps'])} req/s; latencies are unbounded"
        )
    if bad_lines:
        console.print(
            f"[yellow]trace: skipped {len(bad_lines)} malformed line(s): "
            f"{', '.join(map(str, bad_lines[:20]))}{' ...' if len(bad_lines) > 20 else ''}[/yellow]"
        )
    for key, label in (("disaggregation", "disaggregation"), ("autoscale", "autoscale")):
        if v.get(key):
            d = {k: x for k, x in v[key].items() if not isinstance(x, dict | list)}
            console.print(
                f"[bold]{label}:[/bold] "
                + ", ".join(f"{k} {x if isinstance(x, str) else fmt(x)}" for k, x in d.items())
            )


def _load_rows(v: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Rows of the latencies under load (``--qps`` or ``--trace``)."""
    rows: list[tuple[Any, ...]] = [
        (key_label(k), _shown(v.get(k), k), "")
        for k in ("p50_ttft_s", "p99_ttft_s", "p50_tpot_s", "p99_tpot_s", "p99_e2e_latency_s")
    ]
    rows.append(
        (
            "utilisation",
            v.get("utilization"),
            f"offered load {fmt(v.get('offered_load'))}, capacity {fmt(v.get('max_qps'))} req/s",
        )
    )
    if "replicas_for_slo" in v:
        rows.append(
            ("replicas for SLO", v["replicas_for_slo"], f"GPUs {fmt(v.get('gpus_for_slo'))}")
        )
    return rows


#: Batch sizes shown for a CNN when ``--batch`` is not given.
CNN_BATCHES = (1, 2, 4, 8, 16, 32, 64)


def _infer_cnn(
    net: Any, acc: Any, gpus: int, batch: int | None, precision: str, price: float | None,
    price_note: str, eff: Any, json_out: bool,
) -> None:  # fmt: skip
    """``aitco infer`` of a CNN: the roofline per batch size (:func:`aitco.perf.cnn.cnn_batch`)."""
    from aitco.perf import cnn, service, serving

    batches = [batch] if batch is not None else list(CNN_BATCHES)
    r = cnn.cnn_batch(net, acc, batches, precision=precision, efficiency=eff, gpus=gpus)
    rows: list[dict[str, Any]] = []
    for j, b in enumerate(batches):
        ips = float(r["inferences_per_s"][j])
        busy = float(max(r["compute_s"][j], r["memory_s"][j]) / r["latency_s"][j])
        en = serving.energy_per_token(acc, gpus, ips, utilization=busy)
        usd_h = None if price is None else price * gpus
        rows.append({
            "batch": int(b), "latency_s": float(r["latency_s"][j]),
            "compute_s": float(r["compute_s"][j]), "memory_s": float(r["memory_s"][j]),
            "launch_s": float(r["launch_s"][j]), "inferences_per_s": ips,
            "bound": str(r["bound"][j]),
            "arithmetic_intensity_flop_per_byte": float(
                r["arithmetic_intensity_flop_per_byte"][j]
            ),
            "power_w": en["power_w"], "energy_per_inference_j": en["energy_per_token_j"],
            "usd_per_h": usd_h,
            "usd_per_million_inferences": None if usd_h is None
            else usd_h / SECONDS_PER_HOUR / ips * service.TOKENS_PER_MILLION,
        })  # fmt: skip
    out: dict[str, Any] = {
        "model": net.id, "kind": "cnn", "hardware": acc.id, "gpus": gpus,
        "precision": r["precision"], "compute_precision": r["compute_precision"],
        "flops_per_inference": net.flops_per_inference, "weights_gb": r["weights_gb"],
        "ridge_point_flop_per_byte": r["ridge_point_flop_per_byte"],
        "gpu_usd_per_h": price, "price_source": price_note,
        **rows[-1], "by_batch": rows,
    }  # fmt: skip
    if json_out:
        print_json(out)
        return
    cols = ["batch", "latency (ms)", "inferences/s", "bound", "FLOP/B", "USD per M inferences"]
    trows = [
        (x["batch"], x["latency_s"] * 1e3, x["inferences_per_s"], x["bound"],
         x["arithmetic_intensity_flop_per_byte"], x["usd_per_million_inferences"])
        for x in rows
    ]  # fmt: skip
    title = f"{net.id} on {gpus} x {acc.id} ({r['precision']}, roofline per batch)"
    caption = (
        f"{fmt(net.flops_per_inference / 1e9)} GFLOP per inference; ridge point "
        f"{fmt(r['ridge_point_flop_per_byte'])} FLOP/B; {price_note}"
    )
    console.print(table(title, cols, trows, caption=caption))


def _gpu_price(cat: Any, acc_id: str, override: float | None) -> tuple[float | None, str]:
    """GPU-hour price of a CNN estimate: the override, or the cheapest on-demand offer (or None).

    A CNN estimate prices the accelerator-hour alone (``usd_per_million_inferences``); token
    serving prices the whole TCO of the plan (:func:`_service_cost`).
    """
    if override is not None:
        if not override > 0:
            raise InputError("--usd-per-gpu-hour", override, "a positive price")
        return float(override), "price: --usd-per-gpu-hour"
    best: tuple[float, str] | None = None
    for o in cat.offers_for(acc_id):
        p = o.usd_per_accel_hour("on_demand")
        if p is not None and (best is None or p < best[0]):
            best = (p, f"price: cheapest on-demand catalog offer {o.id}")
    return (best[0], best[1]) if best else (None, "price: no catalog offer for this accelerator")


#: Figures of a time-sliced replica also reported for the uncontended case.
UNCONTENDED_KEYS = ("ttft_s", "tpot_s", "p50_ttft_s", "p50_tpot_s", "p99_ttft_s", "p99_tpot_s",
                    "output_tokens_per_s", "max_qps")  # fmt: skip


def _uncontended(run: Any, gpu: Any, mig: str | None, time_slice: int) -> dict[str, Any]:
    """Figures of a time-sliced replica running alone (full rates, its share of the memory)."""
    from aitco.perf.service import fractional_accelerator, time_slice_accelerator

    share, _ = fractional_accelerator(gpu, mig, None)
    alone = run(time_slice_accelerator(share, time_slice, contended=False)).values
    return {k: alone.get(k) for k in UNCONTENDED_KEYS}


def _fractional_accelerator(
    acc: Any, mig: str | None, time_slice: int | None, gpus: int
) -> tuple[Any, int]:
    """Return a replica's share of a GPU and the shares one GPU holds.

    :func:`aitco.perf.service.fractional_accelerator` (MIG slice and/or time-slicing).
    """
    from aitco.perf.service import fractional_accelerator

    share, n = fractional_accelerator(acc, mig, time_slice)
    if gpus != 1:
        flag = "--mig" if mig is not None else "--time-slice"
        raise InputError("--gpus", gpus, f"1 with {flag} (one share of a GPU per replica)")
    return share, n


def price_option(option: dict[str, Any]) -> Any:
    """Return the compare option the price flags describe (``--pricing``, ``--provider``...).

    Shared by ``aitco train`` and ``aitco infer``: the option fields of a scenario, so the plan
    an estimate describes is priced as ``aitco compare`` prices that option.
    """
    from aitco.decide.scenario import HardwareOption

    usd = option.get("usd_per_gpu_hour")
    if usd is not None and not usd > 0:
        raise InputError("--usd-per-gpu-hour", usd, "a positive price")
    return HardwareOption(**{k: v for k, v in option.items() if v is not None})


def _scenario(model_id: str, option: dict[str, Any], **workload: Any) -> Any:
    """Return the one-option scenario ``aitco infer`` prices: the flags' option and workload."""
    from aitco.decide.scenario import InferenceWorkload, Scenario

    if workload.get("qps") is not None and not workload["qps"] > 0:
        raise InputError("--qps", workload["qps"], "an arrival rate > 0")
    # the engine checks these flags by their names; the workload only carries them to pricing
    w = InferenceWorkload.model_construct(model=model_id, **workload)
    return Scenario.model_construct(name="infer", workload=w, options=[price_option(option)])


def _option_price(cat: Any, scn: Any, acc: Any, system: Any) -> tuple[Any, Any, str]:
    """Return the option's price (as ``aitco compare``), the system it runs on and a note.

    None when the catalog cannot price the option (no offer for ``--pricing``, no purchase
    price) and no ``--usd-per-gpu-hour`` is given (the cost keys are then null).
    """
    from aitco.cost.factors import CostFactors
    from aitco.decide.option_cost import quoted_price

    opt, w = scn.options[0], scn.workload
    unit = min(opt.gpus, (w.tp or 1) * (w.pp or 1)) if (w.tp or w.pp) else opt.gpus
    return quoted_price(cat, opt, acc, system, CostFactors(cat), unit_gpus=unit)


#: Cost keys of ``aitco infer`` (null when no price is known).
COST_KEYS = (
    "gpu_usd_per_h", "usd_per_h", "usd_per_month", "usd_per_million_tokens",
    "usd_per_million_output_tokens", "usd_per_million_input_tokens",
    "split_usd_per_million_output_tokens", "usage_usd_per_million_input_tokens",
    "usage_usd_per_million_output_tokens", "offer_id", "instances", "gpus_billed",
)  # fmt: skip


def _service_cost(
    cat: Any, v: dict[str, Any], res: Any, scn: Any, hardware: tuple[Any, Any, Any],
    priced: tuple[Any, str], shares: int,
) -> Any:  # fmt: skip
    """Add the cost keys of the estimated service to ``v``; return its breakdown (or None).

    :func:`aitco.decide.service_cost.price_estimated`: every item of the TCO, as ``aitco
    compare`` prices the same plan and offer. ``usd_per_h`` is the whole cost per hour of the
    period; ``usd_per_million_output_tokens`` the whole cost over the output tokens; the input
    and output split (:func:`aitco.cost.unit_costs.token_split_usd_per_million`) shares the
    same cost by ``prefill_time_fraction``.
    """
    from aitco.cost.factors import CostFactors
    from aitco.cost.unit_costs import token_split_usd_per_million
    from aitco.decide.service_cost import price_estimated

    w = scn.workload
    price, v["price_source"] = priced
    v["mig_profile"], v["time_slice"] = w.mig, w.time_slice
    if price is None or price.reasons:  # no price, or compare's verdict: no eligible offer
        v.update(dict.fromkeys(COST_KEYS))
        return None
    opt = scn.options[0]
    b = price_estimated(scn, opt, hardware, price, CostFactors(cat), res, shares=shares)
    if shares > 1:
        what = " ".join(
            x for x in (f"MIG {w.mig}" if w.mig else "",
                        f"time-sliced by {w.time_slice}" if w.time_slice else "") if x
        )  # fmt: skip
        v["price_source"] += f"; {what}: priced at 1/{shares} of the GPU"
    cv = b.values
    usd_h = b.total_usd / (w.months * HOURS_PER_MONTH)
    util = v.get("utilization")
    v.update(
        gpu_usd_per_h=cv["price_usd_per_gpu_h"], usd_per_h=usd_h, usd_per_month=cv["usd_per_month"],
        usd_per_million_tokens=cv["usd_per_million_tokens"],
        usd_per_million_output_tokens=cv["usd_per_million_output_tokens"],
        offer_id=cv["offer_id"], instances=cv["instances"], gpus_billed=cv["gpus_billed"],
    )  # fmt: skip
    v.update(
        token_split_usd_per_million(
            usd_h, float(v["total_tokens_per_s"]) - float(v["output_tokens_per_s"]),
            float(v["output_tokens_per_s"]), float(v["prefill_time_fraction"]),
            1.0 if util is None else float(util),
        )
    )  # fmt: skip
    return b


def _add_service_plans(
    v: dict[str, Any], res: Any, system: Any, price: float | None, **kw: Any
) -> None:
    """Disaggregation and the autoscaled day (:func:`aitco.perf.service.service_plans`)."""
    from aitco.perf import service

    v.update(
        service.service_plans(
            v, res.iteration, system, price, input_tokens=float(res.extra["input_tokens"]),
            output_tokens=float(res.extra["output_tokens"]), **kw,
        )
    )  # fmt: skip


def read_load_profile(path: str) -> list[float]:
    """Read 24 hourly rates from a CSV (:func:`aitco.perf.service.read_load_profile`)."""
    from aitco.perf.service import read_load_profile as read

    return read(path)


TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens")


def read_trace(path: str) -> tuple[tuple[list[float], list[int], list[int]], list[int]]:
    """Read a request trace CSV; malformed lines are skipped and their line numbers returned.

    Parameters
    ----------
    path : str
        CSV with a header naming ``arrival_s``, ``input_tokens`` and ``output_tokens``.

    Returns
    -------
    ((arrival_s, input_tokens, output_tokens), bad_lines)
        The columns, and the 1-based line numbers that were skipped (not numbers, NaN or
        infinite, negative, or beyond the ranges of ``--seq-len`` and ``--num-requests``).
    """
    import csv
    import math
    from pathlib import Path

    from aitco.fileio import open_input
    from aitco.limits import MAX_HOURS, MAX_SEQ_LEN, MAX_SIMULATED_REQUESTS

    p = Path(path)
    arr: list[float] = []
    ins: list[int] = []
    outs: list[int] = []
    bad: list[int] = []
    with open_input(p, field="--trace", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in TRACE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(
                "--trace", path, f"a CSV header with {', '.join(TRACE_COLUMNS)}", file=path,
                hint=f"missing {', '.join(missing)}",
            )  # fmt: skip
        for row in reader:
            try:
                t, fi, fo = (float(row[c]) for c in TRACE_COLUMNS)
            except (TypeError, ValueError):
                bad.append(reader.line_num)
                continue
            ok = all(math.isfinite(x) for x in (t, fi, fo))
            if not (ok and 0 <= t <= MAX_HOURS * 3600 and 1 <= fi <= MAX_SEQ_LEN >= fo >= 1):
                bad.append(reader.line_num)  # NaN, inf, negative or absurd: skipped, counted
                continue
            if len(arr) >= MAX_SIMULATED_REQUESTS:
                raise InputError(
                    "--trace", path, f"at most {MAX_SIMULATED_REQUESTS:,} requests "
                    "(simulated in memory)", file=path,
                )  # fmt: skip
            arr.append(t)
            ins.append(int(fi))
            outs.append(int(fo))
    if len(arr) < 2:
        raise InputError("--trace", path, "at least 2 valid requests", file=path)
    return (arr, ins, outs), bad


def validate_inference_cmd(
    csv: Annotated[str | None, typer.Argument(help="Ground-truth CSV (default: bundled).")] = None,
    calibration: Annotated[
        str | None, typer.Option("--calibration", help="Calibration profile YAML.")
    ] = None,
    cv: Annotated[
        str | None,
        typer.Option(
            "--cv", help="group: leave-one-source-out cross-validation (refits per source)."
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    rows_set: Annotated[
        str,
        typer.Option(
            "--rows",
            help="Bundled rows to report: 'fitted' (the ground-truth copy the defaults were "
            "fitted on), 'new' (new sources, used in refits), 'unseen' (sources no fit has "
            "ever used) or 'all'. JSON by_row_set gives every set.",
        ),
    ] = "all",
) -> None:
    """Predict every row of an inference ground-truth CSV; print the per-row errors and APE."""
    from aitco.validation.inference import (
        ROW_SETS,
        ValidationReport,
        cross_validate,
        row_set_ids,
        validate,
    )

    if cv not in (None, "group"):
        raise InputError("--cv", cv, "'group' (leave-one-source-out)")
    keep = row_set_ids(rows_set)  # checks the name first
    if csv is not None and rows_set != "all":
        raise InputError(
            "--rows", rows_set, "'all' with a CSV argument (row sets name the bundled rows)"
        )
    if cv == "group":
        rep = cross_validate(
            csv, groups="source", base=state.efficiency(calibration), catalog=state.catalog()
        )
    else:
        rep = validate(csv, efficiency=state.efficiency(calibration), catalog=state.catalog())
    by_set = None
    if csv is None:
        by_set = {name: rep.subset(row_set_ids(name)).summary() for name in ROW_SETS}
    rep = rep.subset(keep) if keep is not None else rep
    assert isinstance(rep, ValidationReport)
    s = rep.summary()
    if cv:
        s["cv"] = "leave-one-source-out"
    if json_out:
        print_json({
            **s,
            "row_set": rows_set,
            **({"by_row_set": by_set} if by_set is not None else {}),
            "rows_table": [
                {"id": c.row_id, "metric": c.metric, "kind": c.kind, "measured": c.measured,
                 "predicted": c.predicted, "ape": c.ape, "setup": c.setup,
                 "offered_load": c.offered_load, "measured_load": c.measured_load}
                for c in rep.comparisons
            ],
            "skipped": [{"id": i, "reason": r} for i, r in rep.skipped],
            "saturated": [
                {"id": i, "requests_per_s": q, "predicted_max_qps": m, "latency_figures": n}
                for i, q, m, n in rep.saturated
            ],
        })  # fmt: skip
        return
    rows: list[tuple[Any, ...]] = [
        (c.row_id, c.metric, c.measured, c.predicted, f"{c.ape:.1%}", c.setup)
        for c in rep.comparisons
    ]
    rows += [(i, "-", "-", "-", "-", f"skipped: {r}") for i, r in rep.skipped]
    rows += [
        (i, "latency", "-", "-", "-", f"predicted saturated: {fmt(q)} req/s > capacity {fmt(m)}")
        for i, q, m, _n in rep.saturated
    ]
    console.print(
        table(
            "Inference validation", ["id", "metric", "published", "predicted", "APE", "setup"], rows
        )
    )
    for kind in (
        "offline_throughput", "static_throughput", "latency", "latency_at_measured_load",
        "latency_below_80pct_load",
    ):  # fmt: skip
        k = s[kind]
        if k["n"]:
            console.print(
                f"{kind}: n {k['n']}, median APE {k['median_ape']:.1%}, p90 APE {k['p90_ape']:.1%}"
            )
    console.print(
        f"rows scored {s['rows_scored']}, skipped {s['rows_skipped']}, "
        f"predicted saturated {s['rows_predicted_saturated']}"
    )


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``aitco infer`` and ``aitco validate inference``."""
    app.command("infer")(infer)
    groups["validate"].command("inference")(validate_inference_cmd)
