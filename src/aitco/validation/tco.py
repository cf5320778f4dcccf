"""Full-run GPU-hours of published pre-training runs, predicted from throughput x goodput.

For every ``full_pretraining_run`` row of the training ground truth, the training engine predicts
the throughput from specs and the global efficiency parameters only, the TCO goodput model adds
failures, restarts, checkpoint stalls and firmware downtime at the catalog's reliability factors,
and the GPU-hours ``gpus x wall_clock_h`` are compared with the published figure. Nothing of the
row's outcome (GPU-hours, wall clock, throughput) enters the prediction.

Rows often leave out the cluster size, batch or sequence length; those are then filled with the
stated defaults below (and the row says so), or the row is skipped with the reason. Energy and
emissions are compared against the model cards' *stated basis* (GPU-hours x their nominal
per-GPU power, location-based emissions), not as metered truth.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog
from aitco.catalog.schema import ModelArch
from aitco.cost import carbon, power
from aitco.decide.compare import Factors, training_goodput
from aitco.decide.scenario import OpsAssumptions, TrainingWorkload
from aitco.errors import AitcoError
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.training import estimate_training
from aitco.units import KG_PER_TONNE, KWH_PER_MWH
from aitco.validation.training import SkipRow, _num, load_rows, map_hardware, parse_plan, row_model

#: Cluster size used when a row does not state it (LLaMA-1 65B's 2,048 A100s, Touvron et al.
#: 2023, the one size the Meta cards' family states). Per-GPU throughput barely depends on it;
#: the goodput does, weakly (failures scale with the cluster).
ASSUMED_GPUS = 2048
#: Global batch used when not stated: 4M tokens (Llama 2 card; LLaMA-1 paper Table 2). [tokens]
ASSUMED_BATCH_TOKENS = 4_194_304
#: Sequence length used when not stated and the model has none. [tokens]
ASSUMED_SEQ_LEN = 2048

#: Published architectures of full-run models missing from the catalog and from
#: :mod:`aitco.validation.training`. Sources: LLaMA-1 (Touvron et al., arXiv 2302.13971,
#: Table 2; HF configs); Llama 2 (arXiv 2307.09288; same dims, 4k context); Llama 3 8B and 3.2
#: (Llama 3 paper Table 3; HF config.json of meta-llama/Llama-3.2-1B/3B); OPT-175B (Zhang et al.,
#: arXiv 2205.01068, Table 1; ReLU, learned positions); TinyLlama (README: 22 layers, 2048 hidden,
#: 32 heads, 4 KV groups, 5632 FFN); Falcon-40B (HF config: 60 layers, 8192 hidden, 128 heads,
#: 8 KV heads, parallel attention); MPT-1.3B (llm-foundry mpt-1b: 24 layers, 2048 hidden, 16 heads).
_LLAMA = {"ffn_type": "swiglu", "norm": "rmsnorm", "position_embedding": "rope"}
FULL_RUN_ARCHS: dict[str, dict[str, Any]] = {
    "llama-1-7b": dict(
        n_layers=32,
        d_model=4096,
        n_heads=32,
        d_ff=11008,
        vocab_size=32000,
        max_seq_len=2048,
        **_LLAMA,
    ),
    "llama-1-13b": dict(
        n_layers=40,
        d_model=5120,
        n_heads=40,
        d_ff=13824,
        vocab_size=32000,
        max_seq_len=2048,
        **_LLAMA,
    ),
    "llama-1-65b": dict(
        n_layers=80,
        d_model=8192,
        n_heads=64,
        d_ff=22016,
        vocab_size=32000,
        max_seq_len=2048,
        **_LLAMA,
    ),
    "llama-2-7b": dict(
        n_layers=32,
        d_model=4096,
        n_heads=32,
        d_ff=11008,
        vocab_size=32000,
        max_seq_len=4096,
        **_LLAMA,
    ),
    "llama-2-13b": dict(
        n_layers=40,
        d_model=5120,
        n_heads=40,
        d_ff=13824,
        vocab_size=32000,
        max_seq_len=4096,
        **_LLAMA,
    ),
    "llama-3-8b": dict(
        n_layers=32,
        d_model=4096,
        n_heads=32,
        n_kv_heads=8,
        d_ff=14336,
        vocab_size=128256,
        max_seq_len=8192,
        **_LLAMA,
    ),
    "llama-3.2-1b": dict(
        n_layers=16,
        d_model=2048,
        n_heads=32,
        n_kv_heads=8,
        d_ff=8192,
        vocab_size=128256,
        max_seq_len=8192,
        tied_embeddings=True,
        **_LLAMA,
    ),
    "llama-3.2-3b": dict(
        n_layers=28,
        d_model=3072,
        n_heads=24,
        n_kv_heads=8,
        d_ff=8192,
        vocab_size=128256,
        max_seq_len=8192,
        tied_embeddings=True,
        **_LLAMA,
    ),
    "opt-175b": dict(
        n_layers=96,
        d_model=12288,
        n_heads=96,
        d_ff=49152,
        vocab_size=50272,
        max_seq_len=2048,
        ffn_type="relu",
        norm="layernorm",
        position_embedding="learned",
        attention_bias=True,
        mlp_bias=True,
    ),
    "tinyllama-1.1b": dict(
        n_layers=22,
        d_model=2048,
        n_heads=32,
        n_kv_heads=4,
        d_ff=5632,
        vocab_size=32000,
        max_seq_len=2048,
        **_LLAMA,
    ),
    "falcon-40b": dict(
        n_layers=60,
        d_model=8192,
        n_heads=128,
        n_kv_heads=8,
        d_ff=32768,
        vocab_size=65024,
        max_seq_len=2048,
        ffn_type="gelu",
        norm="layernorm",
        position_embedding="rope",
        parallel_attention=True,
    ),
    "mpt-1.3b": dict(
        n_layers=24,
        d_model=2048,
        n_heads=16,
        d_ff=8192,
        vocab_size=50368,
        max_seq_len=2048,
        ffn_type="gelu",
        norm="layernorm",
        position_embedding="learned",
        tied_embeddings=True,
    ),
}

#: Row model name patterns -> catalog ids (tried first) or :data:`FULL_RUN_ARCHS` keys.
FULL_RUN_MODELS: tuple[tuple[str, str], ...] = (
    (r"^llama-1 7b", "llama-1-7b"),
    (r"^llama-1 13b", "llama-1-13b"),
    (r"^llama-1 65b", "llama-1-65b"),
    (r"^llama 2 7b", "llama-2-7b"),
    (r"^llama 2 13b", "llama-2-13b"),
    (r"^llama 3(\.1)? 8b", "llama-3-8b"),
    (r"^llama 3\.2 1b", "llama-3.2-1b"),
    (r"^llama 3\.2 3b", "llama-3.2-3b"),
    (r"^opt-175b", "opt-175b"),
    (r"^palm 540b", "palm-540b"),
    (r"^tinyllama", "tinyllama-1.1b"),
    (r"^falcon-40b", "falcon-40b"),
    (r"^mpt-1\.3b", "mpt-1.3b"),
    (r"gpt-2 124m", "gpt2-124m"),
    (r"gpt-2 350m", "gpt2-350m"),
    (r"gpt-2 1558m", "gpt2-1.5b"),
    (r"^gpt-3 175b", "gpt3-175b"),
)


def full_run_model(row: Any, catalog: Catalog) -> tuple[ModelArch, str]:
    """Return the architecture of a full-run row and where it came from."""
    low = str(row["model"]).lower()
    for pat, key in FULL_RUN_MODELS:
        if re.search(pat, low):
            if key in catalog.models:
                return catalog.models[key], f"catalog:{key}"
            if key in FULL_RUN_ARCHS:
                return ModelArch(id=key, **FULL_RUN_ARCHS[key]), f"FULL_RUN_ARCHS[{key}]"
    return row_model(row, catalog)


def _pct(x: float) -> float:
    return 100.0 * x


def predict_full_run(
    row: Any, catalog: Catalog, eff: EfficiencyParams, fac: Factors
) -> dict[str, Any]:
    """Predict one full-run row's GPU-hours (and energy on the card's basis)."""
    rid, label = str(row["id"]), str(row["model"])
    out: dict[str, Any] = {"id": rid, "model": label, "notes": []}
    observed = _num(row.get("gpu_hours"))
    wall_obs = _num(row.get("wall_clock_hours"))
    if not observed and not (wall_obs and _num(row.get("num_accelerators"))):
        raise SkipRow("no published gpu_hours (nor wall_clock_hours with num_accelerators)")
    tokens = _num(row.get("training_tokens"))
    if not tokens:
        raise SkipRow("no training_tokens")
    acc_id = map_hardware(row["hardware"])
    acc, sysm = catalog.hardware(acc_id)
    model, src = full_run_model(row, catalog)
    out["notes"].append(f"arch {src}")
    gpus = _num(row.get("num_accelerators"))
    if not gpus:
        gpus = ASSUMED_GPUS
        out["notes"].append(f"gpus assumed {ASSUMED_GPUS}")
    seq = _num(row.get("seq_len")) or float(min(model.max_seq_len, 8192) or ASSUMED_SEQ_LEN)
    if not _num(row.get("seq_len")):
        out["notes"].append(f"seq_len assumed {seq:.0f}")
    gbt = _num(row.get("global_batch_tokens"))
    if not gbt:
        gbt = ASSUMED_BATCH_TOKENS
        out["notes"].append("batch assumed 4M tokens")
    n = int(gpus)
    gb = max(1, round(gbt / seq))
    plan = parse_plan(row.get("parallelism"), n) or None
    prec = "fp16" if acc.family == "nvidia-volta" else "bf16"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = estimate_training(
            model,
            acc,
            sysm,
            n,
            seq_len=int(seq),
            global_batch=gb,
            tokens=tokens,
            precision=prec,
            plan=plan,
            efficiency=eff,
        )
    for wmsg in {str(c.message) for c in caught}:
        out["notes"].append(f"training-engine warning: {wmsg}")
    productive_h = float(res.values["wall_clock_h"])
    nodes = math.ceil(n / sysm.devices_per_node)
    w = TrainingWorkload(model="validation", tokens=tokens, seq_len=int(seq), global_batch=gb)
    g = training_goodput(model, w, OpsAssumptions(), fac, n, nodes, productive_h)
    wall_h = float(g["overheads"]["wall_clock_h"])
    pred = n * wall_h
    target = "gpu_hours"
    if not observed:  # wall clock published with the cluster size: compare wall-clock hours
        target, observed, pred = "wall_clock_h", float(wall_obs or 0.0), wall_h
        out["notes"].append("target: wall-clock hours (no GPU-hours published)")
    out.update(
        target=target,
        hardware=acc.id,
        gpus=n,
        fits=bool(res.values["fits"]),
        mfu=float(res.values["mfu"]),
        goodput=float(g["overheads"]["goodput"]),
        gpu_hours_observed=observed,
        gpu_hours_throughput_only=n * productive_h if target == "gpu_hours" else productive_h,
        gpu_hours_predicted=pred,
        ape=abs(pred - observed) / observed,
        log_ratio=math.log(observed / pred),
    )
    # energy on the card's stated basis: GPU-hours x nominal per-GPU power (PUE-adjusted peak)
    p_card = _num(row.get("power_w_per_gpu"))
    e_card = _num(row.get("energy_mwh"))
    if p_card and e_card:
        # aitco's per-GPU power at the meter, applied to the card's own GPU-hours
        node_share = sysm.node_power_w / sysm.devices_per_node
        it_w = float(
            power.it_power_w(
                1,
                acc.tdp_w or 0.0,
                1.0,
                fac.value("utilization-power.training-fraction-of-tdp"),
                fac.value("idle-power.fraction-of-tdp"),
                1,
                node_share,
                fac.value("network.switch-power-w-per-gpu"),
            )
        )
        meter_w = float(
            power.facility_power_w(
                it_w, fac.value("power-conversion.loss"), fac.value("pue.hyperscale")
            )
        )
        e_aitco = observed * meter_w / 1e6  # W x h -> MWh
        out.update(
            energy_mwh_card=e_card,
            energy_mwh_card_basis_from_prediction=pred * p_card / 1e6,
            energy_mwh_aitco_power_model=e_aitco,
            energy_ratio_aitco_to_card=e_aitco / e_card,
            meter_w_per_gpu_aitco=meter_w,
            power_w_per_gpu_card=p_card,
        )
        t_card = _num(row.get("emissions_tco2eq"))
        if t_card:
            _, ci = fac.region_value("carbon.kg-per-kwh", "us", "carbon region")
            t_aitco = float(carbon.emissions_kg_co2e(e_card * KWH_PER_MWH, ci)) / KG_PER_TONNE
            out.update(
                tco2e_card=t_card,
                tco2e_aitco_from_card_energy=t_aitco,
                implied_card_kg_per_kwh=t_card * KG_PER_TONNE / (e_card * KWH_PER_MWH),
                grid_kg_per_kwh_aitco=ci,
            )
    return out


def validate_full_runs(
    catalog: Catalog,
    *,
    efficiency: EfficiencyParams | None = None,
    path: str | None = None,
    preset: str | None = None,
) -> dict[str, Any]:
    """Predict every full-run row; return rows, skipped rows and the error summary.

    Parameters
    ----------
    catalog : Catalog
        Catalog (hardware specs and reliability factors).
    efficiency : EfficiencyParams, optional
        Efficiency parameters (default: the globally fitted ones).
    path : str, optional
        Ground-truth CSV (default: the copy shipped in :mod:`aitco.validation`).
    preset : str, optional
        Assumption preset for the goodput and power factors.

    Returns
    -------
    dict
        ``rows`` (predicted), ``skipped`` (id, model, reason) and ``summary`` (median and worst
        APE of GPU-hours with and without the goodput model, count).
    """
    eff = efficiency or DEFAULT_EFFICIENCY
    fac = Factors(catalog, preset)
    df = load_rows(path)
    rows, skipped = [], []
    for _, row in df.iterrows():
        if str(row["run_scope"]) != "full_pretraining_run":
            continue
        try:
            rows.append(predict_full_run(row, catalog, eff, fac))
        except SkipRow as exc:
            skipped.append({"id": str(row["id"]), "model": str(row["model"]), "reason": str(exc)})
        except AitcoError as exc:
            skipped.append(
                {"id": str(row["id"]), "model": str(row["model"]), "reason": f"model error: {exc}"}
            )
    summary: dict[str, Any] = {"n_predicted": len(rows), "n_skipped": len(skipped)}
    if rows:
        ape = np.array([r["ape"] for r in rows])
        thr = np.array(
            [
                abs(r["gpu_hours_throughput_only"] - r["gpu_hours_observed"])
                / r["gpu_hours_observed"]
                for r in rows
            ]
        )
        lr = np.array([r["log_ratio"] for r in rows])
        summary.update(
            median_ape=float(np.median(ape)),
            worst_ape=float(np.max(ape)),
            worst_id=rows[int(np.argmax(ape))]["id"],
            median_ape_throughput_only=float(np.median(thr)),
            median_log_ratio=float(np.median(lr)),
            median_goodput=float(np.median([r["goodput"] for r in rows])),
        )
    return {"rows": rows, "skipped": skipped, "summary": summary}


def render_validation(res: dict[str, Any]) -> None:
    """Print the error table (rich)."""
    from aitco.cli.render import console, table

    rows = [
        [
            r["id"],
            r["model"],
            r["hardware"],
            r["gpus"],
            r["gpu_hours_observed"],
            r["gpu_hours_predicted"],
            f"{_pct(r['ape']):.0f}%",
            f"{r['goodput']:.3f}",
            f"{r['mfu']:.2f}",
            "; ".join(r["notes"]),
        ]
        for r in res["rows"]
    ]
    console.print(
        table(
            "Full-run GPU-hours: published vs predicted (throughput x goodput)",
            [
                "id",
                "model",
                "hardware",
                "gpus",
                "published",
                "predicted",
                "APE",
                "goodput",
                "MFU",
                "notes",
            ],
            rows,
        )
    )
    erows = [
        [
            r["id"],
            r["model"],
            r["power_w_per_gpu_card"],
            r["meter_w_per_gpu_aitco"],
            r["energy_mwh_card"],
            r["energy_mwh_aitco_power_model"],
            f"{r['energy_ratio_aitco_to_card']:.2f}",
            r.get("tco2e_card"),
            r.get("tco2e_aitco_from_card_energy"),
        ]
        for r in res["rows"]
        if "energy_mwh_card" in r
    ]
    if erows:
        console.print(
            table(
                "Energy on the model cards' basis (their GPU-hours): card vs aitco power model",
                [
                    "id",
                    "model",
                    "card W/GPU",
                    "aitco W/GPU",
                    "card MWh",
                    "aitco MWh",
                    "ratio",
                    "card tCO2e",
                    "aitco tCO2e",
                ],
                erows,
            )
        )
    for s in res["skipped"]:
        console.print(f"skipped {s['id']} {s['model']}: {s['reason']}", highlight=False)
    console.print(res["summary"], highlight=False)
