"""``aitco train`` (training estimate and plan search), ``aitco validate training|kernels``.

Thin: parse the flags, resolve the catalog entries, call
:func:`aitco.perf.training.estimate_training` or
:func:`aitco.validation.training.validate_training`, render. ``--json`` prints one object
with the keys of the JSON contract, docs/glossary.md (``step_time_s``, ``tokens_per_s``,
``tokens_per_s_per_gpu``, ``model_tflops_per_gpu``, ``hardware_tflops_per_gpu``, ``mfu``, ``hfu``,
``memory_per_gpu_gb``, ``fits``, ``gpu_hours``, ``wall_clock_h``, ``plan``, ``interval``).
"""

from __future__ import annotations

import statistics
from enum import StrEnum
from typing import Annotated, Any

import typer

from aitco.cli import state
from aitco.cli.render import console, fmt, print_explain, print_json, table
from aitco.errors import InputError
from aitco.formatting import time_unit


class Precision(StrEnum):
    """Training number formats (``aitco.perf.precision.TRAIN_FORMATS``)."""

    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    fp32 = "fp32"
    mxfp8 = "mxfp8"
    nvfp4 = "nvfp4"
    mxfp4 = "mxfp4"
    int8 = "int8"


class Recompute(StrEnum):
    """Activation recomputation modes."""

    none = "none"
    selective = "selective"
    full = "full"


class Offload(StrEnum):
    """ZeRO-Offload modes (DeepSpeed offload_optimizer / offload_param to the CPU or NVMe)."""

    none = "none"
    optimizer = "optimizer"
    params = "params"
    optimizer_nvme = "optimizer-nvme"
    params_nvme = "params-nvme"


class LossKernel(StrEnum):
    """Cross-entropy implementations (aitco.perf.training_model.LOSS_KERNELS)."""

    unfused = "unfused"
    fused = "fused"


class HostLoop(StrEnum):
    """Step loops (aitco.perf.training_model.HOST_LOOPS)."""

    python = "python"
    native = "native"


#: Stack options a plan reports (JSON ``plan`` key, wording, default): the text output names
#: those away from their default.
STACK_DEFAULTS: tuple[tuple[str, str, str], ...] = (
    ("elementwise_kernels", "elementwise kernels", "framework"),
    ("loss_kernel", "loss kernel", "unfused"),
    ("host_loop", "step loop", "python"),
    ("gemm_level", "GEMM level", "framework"),
)


class ElementwiseKernels(StrEnum):
    """Elementwise kernel styles (aitco.perf.efficiency.ELEMENTWISE_KERNELS)."""

    framework = "framework"
    fused = "fused"
    eager = "eager"


class GemmLevel(StrEnum):
    """GEMM levels of a training stack (aitco.perf.efficiency.GEMM_LEVELS)."""

    framework = "framework"
    ceiling = "ceiling"


class PipelineSchedule(StrEnum):
    """Pipeline schedules (Megatron 1F1B/interleaved; DeepSeek DualPipe)."""

    one_f_one_b = "1f1b"
    dualpipe = "dualpipe"


class Method(StrEnum):
    """Training methods."""

    full = "full"
    lora = "lora"
    qlora = "qlora"


class CrossValidation(StrEnum):
    """How ``validate training`` scores the rows."""

    none = "none"
    group = "group"


class RowSet(StrEnum):
    """Which bundled rows ``validate training`` reports (``aitco.validation.training.ROW_SETS``)."""

    all = "all"
    fitted = "fitted"
    new = "new"


class Optimizer(StrEnum):
    """Optimizer state formats."""

    adam = "adam"
    adam8bit = "adam8bit"


#: Default global batch when none is given (kept for callers; ``train`` uses the rule below).
DEFAULT_BATCH_TOKENS = 2**20
#: How ``train`` picks the global batch when neither --global-batch nor --global-batch-tokens
#: is given (:func:`aitco.perf.training.default_global_batch_tokens`).
BATCH_RULE = (
    "default: max(DeepSeek LLM compute-optimal batch 0.292 C^0.3271, one sequence per 8 GPUs "
    "as Llama 3 405B)"
)


def _range(values: dict[str, Any], key: str, per: float = 1.0) -> str:
    """Return the 80 % interval of ``key`` (divided by ``per``: hours to days)."""
    iv = values.get("interval", {}).get(key)
    if not iv:
        return ""
    return f"{fmt(iv[0] / per)} - {fmt(iv[1] / per)}"


#: Cost keys of ``aitco train`` (null when the run has no price: no --tokens, no offer for
#: --pricing, or a plan that cannot run).
COST_KEYS = (
    "total_usd", "usd_per_million_tokens", "price_usd_per_gpu_h", "effective_usd_per_gpu_h",
    "offer_id", "instances", "gpus_billed", "priced_wall_clock_h", "goodput",
)  # fmt: skip


def _run_cost(
    cat: Any, v: dict[str, Any], res: Any, opt: Any, hardware: tuple[Any, Any, Any],
    priced: tuple[Any, str], workload: dict[str, Any],
) -> Any:  # fmt: skip
    """Price the estimated run as compare prices the option; add the cost keys to ``v``.

    :func:`aitco.decide.training_cost.price_training` on the engine's estimate: goodput, then
    every item. Returns the breakdown, or None when the run cannot be priced (the cost keys
    are then null and ``price_source`` says why).
    """
    from aitco.cost.factors import CostFactors
    from aitco.decide.scenario import Scenario, TrainingWorkload
    from aitco.decide.training_cost import price_training

    price, v["price_source"] = priced
    v.update(dict.fromkeys(COST_KEYS))
    if v.get("tokens") is None or "wall_clock_h" not in v:
        v["price_source"] += "; no --tokens: no run to price"
        return None
    if price is None or not v.get("feasible", True):
        return None
    if price.reasons:  # compare's verdict on the offer (price_source says why): no total
        return None
    w = TrainingWorkload(model=hardware[2].id, tokens=float(v["tokens"]), **workload)
    scn = Scenario.model_construct(name="train", workload=w, options=[opt])
    b = price_training(scn, w, opt, hardware, price, CostFactors(cat), res, where="--hardware")
    bv = b.values
    v.update(
        total_usd=b.total_usd, usd_per_million_tokens=bv["usd_per_million_tokens"],
        price_usd_per_gpu_h=bv["price_usd_per_gpu_h"],
        effective_usd_per_gpu_h=bv["effective_usd_per_gpu_h"], offer_id=bv["offer_id"],
        instances=bv["instances"], gpus_billed=bv["gpus_billed"],
        priced_wall_clock_h=bv["wall_clock_h"], goodput=bv["goodput"],
    )  # fmt: skip
    return b


def _cost_rows(v: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Return the table rows of the run's cost (compare's total of the same option)."""
    if v.get("total_usd") is None:
        return [("total cost (USD)", None, str(v.get("price_source", "")))]
    unit, per_h = time_unit([v["priced_wall_clock_h"]])  # hours, or days beyond a few
    return [
        ("total cost (USD)", v["total_usd"], str(v["price_source"])),
        (
            f"wall clock with failures ({unit})",
            v["priced_wall_clock_h"] / per_h,
            f"goodput {fmt(v['goodput'])}",
        ),
        ("USD per million tokens", v["usd_per_million_tokens"], ""),
    ]


def train(
    model: Annotated[str, typer.Option("--model", help="Catalog id, config.json or model YAML.")],
    hardware: Annotated[str, typer.Option("--hardware", help="Accelerator or system id.")],
    gpus: Annotated[int, typer.Option("--gpus", help="Accelerators.", min=1)],
    tokens: Annotated[float | None, typer.Option("--tokens", help="Tokens to train on.")] = None,
    seq_len: Annotated[int, typer.Option("--seq-len", help="Sequence length.", min=1)] = 2048,
    global_batch: Annotated[
        int | None, typer.Option("--global-batch", help="Global batch in sequences.", min=1)
    ] = None,
    global_batch_tokens: Annotated[
        int | None, typer.Option("--global-batch-tokens", help="Global batch in tokens.", min=1)
    ] = None,
    micro_batch: Annotated[
        int | None, typer.Option("--micro-batch", help="Sequences per micro-batch.", min=1)
    ] = None,
    precision: Annotated[
        Precision, typer.Option("--precision", help="Number format of the weights and matmuls.")
    ] = Precision.bf16,
    tp: Annotated[int | None, typer.Option("--tp", help="Tensor parallel degree.", min=1)] = None,
    pp: Annotated[int | None, typer.Option("--pp", help="Pipeline parallel degree.", min=1)] = None,
    cp: Annotated[int | None, typer.Option("--cp", help="Context parallel degree.", min=1)] = None,
    ep: Annotated[int | None, typer.Option("--ep", help="Expert parallel degree.", min=1)] = None,
    dp: Annotated[int | None, typer.Option("--dp", help="Data parallel degree.", min=1)] = None,
    zero: Annotated[
        int | None, typer.Option("--zero", help="ZeRO stage 0-3.", min=0, max=3)
    ] = None,
    fsdp: Annotated[bool, typer.Option("--fsdp", help="FSDP full shard (= ZeRO-3).")] = False,
    shard_devices: Annotated[
        int | None,
        typer.Option(
            "--shard-devices",
            help="Hybrid sharding: ZeRO/FSDP state split inside groups of N devices (a node or "
            "TPU slice), data parallel across groups (HSDP, MaxText multi-slice).",
            min=1,
        ),
    ] = None,
    tp_overlap: Annotated[
        bool, typer.Option("--tp-overlap", help="TP collectives overlapped with GEMMs.")
    ] = False,
    ep_overlap: Annotated[
        bool,
        typer.Option(
            "--ep-overlap",
            help="EP all-to-alls under another micro-batch's compute (Megatron-Bridge "
            "overlap_moe_expert_parallel_comm; DualPipe: --pipeline-schedule); the search keeps "
            "to plans that allow it.",
        ),
    ] = False,
    pipeline_schedule: Annotated[
        PipelineSchedule,
        typer.Option(
            "--pipeline-schedule",
            help="'1f1b' (interleaved when vp > 1) or 'dualpipe' (DeepSeek-V3: EP and PP "
            "communication hidden under the paired chunks, bubble (pp/2-1) x a third of a "
            "micro-batch, two parameter copies; even pp, no interleaving).",
        ),
    ] = PipelineSchedule.one_f_one_b,
    offload: Annotated[
        Offload,
        typer.Option(
            "--offload",
            help="ZeRO-Offload to host memory: 'optimizer' (states, fp32 gradients and the "
            "Adam step on the CPU; ZeRO >= 1) or 'params' (weights too, ZeRO-Infinity; ZeRO-3); "
            "'optimizer-nvme' / 'params-nvme': those states on the node's NVMe (ZeRO-3).",
        ),
    ] = Offload.none,
    loss_kernel: Annotated[
        LossKernel,
        typer.Option(
            "--loss-kernel",
            help="'unfused' (PyTorch cross-entropy over fp32 logits) or 'fused' (one kernel "
            "over the 16-bit logits, gradient in place: llm.c, Liger Kernel, Megatron "
            "--cross-entropy-loss-fusion).",
        ),
    ] = LossKernel.unfused,
    host_loop: Annotated[
        HostLoop,
        typer.Option(
            "--host-loop",
            help="'python' (a PyTorch-style loop's fitted per-step host time) or 'native' "
            "(none on the critical path: a C/CUDA loop such as llm.c, a step in CUDA graphs).",
        ),
    ] = HostLoop.python,
    elementwise_kernels: Annotated[
        ElementwiseKernels,
        typer.Option(
            "--elementwise-kernels",
            help="Norm/activation/residual kernels: 'framework' (the fitted end-to-end level of "
            "Megatron-style frameworks), 'fused' (hand-written one-pass kernels: llm.c, Liger "
            "Kernel) or 'eager' (PyTorch / Hugging Face modules op by op); levels in "
            "docs/efficiency.md.",
        ),
    ] = ElementwiseKernels.framework,
    gemm_level: Annotated[
        GemmLevel,
        typer.Option(
            "--gemm-level",
            help="GEMM rate: 'framework' (the fitted end-to-end level a GEMM reaches inside a "
            "PyTorch/Megatron-style step) or 'ceiling' (the accelerator's measured matmul "
            "ceiling: a native C/CUDA loop calling cuBLAS back to back, such as llm.c); the "
            "kernel shape laws apply to both.",
        ),
    ] = GemmLevel.framework,
    recompute: Annotated[
        Recompute | None,
        typer.Option(
            "--recompute",
            help="Activation recomputation (default: the least that fits in memory).",
        ),
    ] = None,
    recompute_layers: Annotated[
        int | None,
        typer.Option(
            "--recompute-layers",
            help="Partial recomputation: N of the layers fully recomputed (Megatron "
            "--recompute-num-layers), the others keep their activations.",
            min=1,
        ),
    ] = None,
    offload_activations: Annotated[
        bool,
        typer.Option(
            "--offload-activations",
            help="Keep every decoder layer's input in host memory over the host link (PCIe or "
            "NVLink-C2C) and recompute the layer in the backward pass (MaxText's offloaded "
            "decoder-layer input); full recompute.",
        ),
    ] = False,
    moe_capacity_factor: Annotated[
        float | None,
        typer.Option(
            "--moe-capacity-factor",
            help="MoE expert capacity, a multiple of the even share of routed tokens; tokens "
            "beyond it are dropped (default: dropless).",
            min=0.01,
        ),
    ] = None,
    moe_pad_to_capacity: Annotated[
        bool,
        typer.Option(
            "--moe-pad-to-capacity",
            help="Pad every expert's input to the capacity (the experts compute it all).",
        ),
    ] = False,
    method: Annotated[
        Method, typer.Option("--method", help="Full training, or LoRA / QLoRA adapters.")
    ] = Method.full,
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA/QLoRA rank.", min=1)] = 16,
    optimizer: Annotated[
        Optimizer,
        typer.Option("--optimizer", help="Optimizer states: Adam (fp32) or 8-bit Adam."),
    ] = Optimizer.adam,
    plan: Annotated[
        str | None,
        typer.Option("--plan", help="'auto': search the plan (given degrees are held)."),
    ] = None,
    power_limit_w: state.PowerLimitOpt = None,
    calibration: Annotated[
        str | None, typer.Option("--calibration", help="Calibration profile YAML.")
    ] = None,
    pricing: state.PricingOpt = state.Pricing.on_demand,
    provider: state.ProviderOpt = None,
    region: state.RegionOpt = None,
    usd_per_gpu_hour: state.UsdPerGpuHourOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show the time split and terms.")
    ] = False,
) -> None:
    """Estimate a training run: step time, MFU, memory, GPU-hours, dollars; search the plan.

    With ``--tokens`` the run is priced as ``aitco compare`` prices the option of the price
    flags (``--pricing``, ``--provider``, ``--region``, ``--usd-per-gpu-hour``): the same offer
    (and the system it runs on), goodput and items (``total_usd``, ``tco``).
    """
    from aitco.cli.infer_cmd import price_option
    from aitco.cost.factors import CostFactors
    from aitco.decide.option_cost import quoted_price
    from aitco.decide.practice import practice_for
    from aitco.perf.params import param_counts
    from aitco.perf.training import default_global_batch, estimate_training

    if plan is not None and plan != "auto":
        raise InputError("--plan", plan, "'auto' (or leave it out and give --tp/--pp/...)")
    if global_batch is not None and global_batch_tokens is not None:
        raise InputError(
            "--global-batch",
            global_batch,
            "either --global-batch or --global-batch-tokens, not both",
        )
    if tokens is not None and not tokens > 0:
        raise InputError("--tokens", tokens, "a positive number of tokens")
    if shard_devices is not None and gpus % shard_devices:
        raise InputError("--shard-devices", shard_devices, f"a divisor of --gpus ({gpus})")
    cat = state.catalog()
    arch = cat.resolve_model(model, field="--model")
    acc, system = cat.hardware(hardware, field="--hardware")
    acc = acc.with_power_limit(power_limit_w)  # below the TDP: slower compute (perf.power)
    batch_rule = "given"
    if global_batch is None:
        if global_batch_tokens is None:
            global_batch = default_global_batch(param_counts(arch).active, gpus, seq_len, tokens)
            batch_rule = BATCH_RULE
        else:
            global_batch = max(1, round(global_batch_tokens / seq_len))
    plan_d: dict[str, Any] = {
        "tp": tp, "pp": pp, "cp": cp, "ep": ep, "dp": dp, "zero": zero, "fsdp": fsdp,
        "micro_batch": micro_batch, "recompute": recompute.value if recompute else None,
        "auto": plan == "auto", "tp_comm_overlap": tp_overlap, "shard_devices": shard_devices,
        "ep_comm_overlap": ep_overlap, "offload": offload.value,
        "pipeline_schedule": pipeline_schedule.value, "loss_kernel": loss_kernel.value,
        "host_loop": host_loop.value, "elementwise_kernels": elementwise_kernels.value,
        "gemm_level": gemm_level.value, "recompute_layers": recompute_layers,
        "offload_activations": offload_activations, "moe_capacity_factor": moe_capacity_factor,
        "moe_pad_to_capacity": moe_pad_to_capacity,
    }  # fmt: skip
    practice = practice_for(
        param_counts(arch).total, acc.family, precision.value, arch.moe is not None
    )
    option = price_option(
        {"hardware": hardware, "gpus": gpus, "pricing": pricing.value, "provider": provider,
         "region": region, "usd_per_gpu_hour": usd_per_gpu_hour, "power_limit_w": power_limit_w}
    )  # fmt: skip
    # the price first: a rented offer that names its system runs the engine on it (as compare)
    price, system, price_note = quoted_price(
        cat, option, acc, system, CostFactors(cat), unit_gpus=gpus
    )
    res = estimate_training(
        arch, acc, system, gpus, seq_len=seq_len, global_batch=global_batch, tokens=tokens,
        precision=precision.value, method=method.value, plan=plan_d,
        efficiency=state.efficiency(calibration), lora_rank=lora_rank, optimizer=optimizer.value,
        practice=practice,
    )  # fmt: skip
    v = res.values
    v["batch_rule"] = batch_rule
    tco = _run_cost(cat, v, res, option, (acc, system, arch), (price, price_note),
                    dict(seq_len=seq_len, global_batch=global_batch, precision=precision.value,
                         method=method.value, lora_rank=lora_rank))  # fmt: skip
    if json_out:
        out = dict(v)
        if tco is not None:
            out["tco"] = tco.to_json(explain=explain)
        out["time_split_s"] = res.time_terms_s
        out["memory_split_gb"] = res.memory_terms_gb
        out["dominant"] = res.to_estimate().dominant
        out["candidates"] = res.candidates
        out["model"] = arch.id
        out["hardware"] = acc.id
        out["system"] = system.id
        if explain:  # the terms with their formulas and inputs, as `aitco infer --explain`
            out["explain"] = res.to_estimate().to_json()["explain"]
        print_json(out)
        return
    p = v["plan"]
    plan_s = (
        f"tp={p['tp']} pp={p['pp']} cp={p['cp']} ep={p['ep']} dp={p['dp']} zero={p['zero']} "
        f"micro_batch={p['micro_batch']} recompute={p['recompute']}"
        + (f" ({p['recompute_fraction']:.0%} of layers)" if p["recompute_fraction"] < 1 else "")
        + (f" vp={p['vp']}" if p["vp"] > 1 else "")
        + (f" shard_devices={p['shard_devices']}" if p.get("shard_devices") else "")
        + (f" offload={p['offload']}" if p.get("offload", "none") != "none" else "")
        + (" offload_activations" if p.get("offload_activations") else "")
        + (
            f" moe_capacity={p['moe_capacity_factor']:g}"
            + (" padded" if p.get("moe_pad_to_capacity") else "")
            if p.get("moe_capacity_factor")
            else ""
        )
        + f"  (grad. accumulation {v['gradient_accumulation']})"
    )
    rows = [
        ("step time (s)", v["step_time_s"], _range(v, "step_time_s")),
        ("tokens/s", v["tokens_per_s"], _range(v, "tokens_per_s")),
        ("tokens/s per GPU", v["tokens_per_s_per_gpu"], _range(v, "tokens_per_s_per_gpu")),
        ("model TFLOP/s per GPU", v["model_tflops_per_gpu"], _range(v, "model_tflops_per_gpu")),
        ("hardware TFLOP/s per GPU", v["hardware_tflops_per_gpu"], ""),
        ("MFU", v["mfu"], _range(v, "mfu")),
        ("HFU", v["hfu"], ""),
        ("memory per GPU (GB)", v["memory_per_gpu_gb"], f"of {fmt(v['memory_capacity_gb'])}"),
    ]
    if p.get("offload", "none") != "none" or p.get("offload_activations"):
        rows.append(("host memory per GPU (GB)", v["host_memory_per_gpu_gb"], "offloaded"))
    if str(p.get("offload", "none")).endswith("-nvme"):
        rows.append(("NVMe per GPU (GB)", v["nvme_per_gpu_gb"], "offloaded"))
    if "gpu_hours" in v:
        rows.append(("GPU-hours", v["gpu_hours"], _range(v, "gpu_hours")))
        unit, per_h = time_unit([v["wall_clock_h"]])  # hours, or days beyond a few
        rows.append(
            (f"wall clock ({unit})", v["wall_clock_h"] / per_h, _range(v, "wall_clock_h", per_h))
        )
    rows += _cost_rows(v)
    title = f"Training {arch.id} on {gpus} x {acc.id} ({precision.value}, {method.value})"
    console.print(table(title, ["", "estimate", "80% range"], rows, caption=f"plan: {plan_s}"))
    console.print(
        f"global batch: {v['global_batch']:,} sequences x {v['seq_len']:,} = "
        f"{v['global_batch_tokens']:,} tokens ({batch_rule})"
    )
    if v["batch_caps_dp"]:
        console.print(
            f"[yellow]batch caps data parallelism:[/yellow] {v['global_batch']:,} sequences for "
            f"{gpus:,} GPUs (under one per 8 GPUs); raise --global-batch-tokens"
        )
    if v["batch_leaves_gpus_idle"]:
        console.print(
            f"[yellow]batch leaves GPUs idle:[/yellow] {v['gradient_accumulation']} micro-batches "
            f"for {p['pp']} pipeline stages (bubble over half the step)"
        )
    if "published_best_mfu" in v:
        console.print(
            f"best published MFU for this size on {acc.family} ({precision.value}): "
            f"{v['published_best_mfu']:.2f} ({v['published_best_source']})"
        )
        if v["beyond_published_evidence"]:
            console.print(
                "[yellow]beyond published evidence:[/yellow] the whole 80% range of the MFU is "
                "above the best published run; treat this plan's speed as optimistic"
            )
    stack = [
        f"{name} {p[key]}"
        for key, name, default in STACK_DEFAULTS
        if p.get(key, default) != default
    ]
    if stack:  # stack options away from the defaults the efficiencies were fitted on
        console.print("stack: " + ", ".join(stack))
    if res.inputs.get("precision_note"):  # a format the part does not run natively
        console.print(f"[yellow]precision:[/yellow] {res.inputs['precision_note']}")
    if res.candidates > 1:
        console.print(f"plan searched over {res.candidates:,} candidates")
    if not v["feasible"]:  # the one verdict: no step time, no throughput
        console.print(f"[bold red]infeasible:[/bold red] {v['infeasible_reason']}")
    if explain:
        print_explain(res.to_estimate())


def validate_training_cmd(
    csv: Annotated[str | None, typer.Argument(help="Ground-truth CSV (default: bundled).")] = None,
    all_scopes: Annotated[
        bool, typer.Option("--all-scopes", help="Also rows that are not throughput measurements.")
    ] = False,
    calibration: Annotated[
        str | None, typer.Option("--calibration", help="Calibration profile YAML.")
    ] = None,
    cv: Annotated[
        CrossValidation,
        typer.Option(
            "--cv",
            help="'group': leave-one-source-out (each source's rows predicted by a fit that "
            "never saw that source; refits the efficiencies once per source, takes minutes).",
        ),
    ] = CrossValidation.none,
    rows_set: Annotated[
        RowSet,
        typer.Option(
            "--rows",
            help="Bundled rows to report: 'fitted' (the ground-truth copy the defaults were "
            "fitted on), 'new' (published runs from sources the defaults never saw) or 'all'. "
            "Cross-validation always refits on every row.",
        ),
    ] = RowSet.all,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Predict every row of a training ground-truth CSV; print the per-row errors and APE."""
    from aitco.validation.training import (
        CV_MAX_NFEV,
        THROUGHPUT_SCOPES,
        by_source_group,
        coverage,
        cross_validate,
        results_frame,
        select_rows,
        summary,
        validate_training,
    )

    if csv is not None and rows_set is not RowSet.all:
        raise InputError("--rows", rows_set.value, "'all' with a CSV argument (row sets name "
                         "the bundled rows)")  # fmt: skip
    eff = state.efficiency(calibration)
    res = validate_training(csv, state.catalog(), eff, None if all_scopes else THROUGHPUT_SCOPES)
    cvr = (
        cross_validate(csv, state.catalog(), eff, CV_MAX_NFEV)
        if cv is CrossValidation.group
        else []
    )
    extra: dict[str, Any] = {}
    if csv is None:  # the bundled rows: the statistics of each row set, then the set asked for
        scored = cvr or [r for r in res if r.scope in THROUGHPUT_SCOPES]
        extra["row_set"] = rows_set.value
        extra["by_row_set"] = {
            name.value: summary(select_rows(scored, name.value))
            for name in (RowSet.fitted, RowSet.new)
        }
        res, cvr = select_rows(res, rows_set.value), select_rows(cvr, rows_set.value)
    thr = [r for r in res if r.scope in THROUGHPUT_SCOPES]
    runs = [r for r in res if r.scope not in THROUGHPUT_SCOPES and not r.skipped]
    s = summary(thr)
    if cv is CrossValidation.group:
        in_sample = s
        s = summary(cvr)
        extra = {
            "cv": "group",
            "in_sample": in_sample,
            "interval_coverage": coverage(cvr, eff),
            "by_source_group": by_source_group(cvr),
            **extra,
        }
        res = cvr + [r for r in res if r.scope not in THROUGHPUT_SCOPES]
    s = {**s, **extra}
    goodput = {
        "full_runs_predicted": len(runs),
        "implied_goodput_median": (
            float(sorted(r.predicted / r.observed for r in runs)[len(runs) // 2]) if runs else None
        ),
        # GPU-hour (or wall-clock) error of the full runs, batch as published or else the
        # default-batch rule of `aitco train`
        "full_runs_median_ape": float(statistics.median(r.ape for r in runs)) if runs else None,
    }
    if json_out:
        df = results_frame(res)
        print_json(
            {**s, **(goodput if all_scopes else {}), "rows_table": df.to_dict(orient="records")}
        )
        return
    rows: list[tuple[Any, ...]] = []
    for r in res:
        if r.skipped:
            rows.append((r.row_id, r.label[:40], "-", "-", "-", "-", f"skipped: {r.skipped}"))
        else:
            rows.append(
                (r.row_id, r.label[:32], r.target.replace("_per_gpu", "/GPU"), r.observed,
                 r.predicted, f"{r.ape:.1%}", r.plan)
            )  # fmt: skip
    console.print(
        table(
            "Training validation",
            ["id", "model", "metric", "published", "predicted", "APE", "plan"],
            rows,
        )
    )
    if s.get("predicted"):
        kind = "leave-one-source-out" if cv is CrossValidation.group else "in-sample"
        console.print(
            f"rows {s['rows']}, predicted {s['predicted']}, skipped {s['skipped']}: "
            f"median APE {s['median_ape']:.1%}, p90 APE {s['p90_ape']:.1%}, max {s['max_ape']:.1%}"
            f" (throughput rows, {kind})"
        )
    for name, rs in extra.get("by_row_set", {}).items():
        if rs.get("predicted"):
            console.print(
                f"  {name} rows: {rs['predicted']} predicted, median APE {rs['median_ape']:.1%}, "
                f"p90 {rs['p90_ape']:.1%}"
            )
    if cv is CrossValidation.group:
        ins = extra["in_sample"]
        console.print(
            f"in-sample (the fit saw every row): median APE {ins['median_ape']:.1%}, "
            f"p90 {ins['p90_ape']:.1%}; the 80% interval covers "
            f"{extra['interval_coverage']:.0%} of the leave-one-source-out residuals"
        )
        for g in extra["by_source_group"]:
            console.print(
                f"  held out {g['source_group']}: {g['rows']} rows, median APE "
                f"{g['median_ape']:.1%}, max {g['max_ape']:.1%}"
            )
    if runs:
        console.print(
            f"full runs predicted: {len(runs)}; ideal (no-failure) GPU-hours / published, median "
            f"{goodput['implied_goodput_median']:.2f} (below 1 = time lost to failures, restarts, "
            "evaluation; above 1 = the throughput model is too slow for that run); median "
            f"GPU-hour error {goodput['full_runs_median_ape']:.1%}"
        )


def validate_kernels_cmd(
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Kernel laws refitted to the bundled GEMM, attention and elementwise benchmarks."""
    from aitco.validation.kernels import validate_kernels

    res = validate_kernels()
    if json_out:
        print_json(res)
        return
    rows = [["GEMM (OpenXLA H100/B200 tables)", res["gemm"]]]
    if res["gemm_held_out"] is not None:
        rows.append(["GEMM held out: MI300X (NVIDIA-fitted law, level only)", res["gemm_held_out"]])
    rows += [
        [f"attention {r['kernel']} (FlashAttention-3 paper, H100)", r] for r in res["attention"]
    ]
    rows += [
        [
            f"elementwise {r['style']} (Liger-Kernel benchmarks): "
            f"{r['params']['elementwise_hbm']:.2f} of HBM",
            r,
        ]
        for r in res["elementwise"]
    ]
    console.print(
        table(
            "Kernel laws against published kernel benchmarks",
            ["law", "rows fitted", "left out", "median APE", "p90 APE"],
            [
                [
                    name,
                    str(r["rows"]),
                    str(r["excluded"]),
                    f"{r['median_ape']:.1%}",
                    f"{r['p90_ape']:.1%}",
                ]
                for name, r in rows
            ],
        )
    )
    console.print(
        table(
            "Shipped constants (aitco.perf.efficiency.KERNEL_FIT_DEFAULTS)",
            ["constant", "shipped", "refit"],
            [[c["name"], f"{c['shipped']:.4g}", f"{c['refit']:.4g}"] for c in res["constants"]],
        )
    )


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``aitco train``, ``aitco validate training`` and ``aitco validate kernels``."""
    app.command("train")(train)
    groups["validate"].command("training")(validate_training_cmd)
    groups["validate"].command("kernels")(validate_kernels_cmd)
