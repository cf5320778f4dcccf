"""Validate the inference model against the published runs in ``data/inference.csv``.

Each row is predicted from the catalog specs, the row's stated setup (hardware, GPUs, parallelism,
precision, engine, lengths, load) and the globally fitted efficiency parameters only; the measured
value is never an input. Rows whose model or hardware cannot be mapped to the catalog, or whose
workload is not stated, are reported with the reason, never dropped silently.

Workload assumptions that are not in the CSV are named constants below (with their status).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from aitco.catalog.loader import Catalog, _model_from_yaml, load_catalog
from aitco.catalog.schema import ModelArch
from aitco.errors import AitcoError, InputError
from aitco.fileio import open_input
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams, share_of_ceiling
from aitco.perf.inference import estimate_inference
from aitco.units import MS_PER_S

#: Catalog id of each ground-truth model name.
MODEL_IDS: dict[str, str] = {
    "Llama 2 70B": "llama-2-70b",
    "Llama 3 70B": "llama-3-70b",
    "Llama 3.1 8B Instruct": "llama-3.1-8b",
    "Llama 3.1 70B Instruct": "llama-3.1-70b",
    "Llama 3.3 70B Instruct": "llama-3.3-70b",
    "Llama 3.1 405B Instruct": "llama-3.1-405b",
    "BLOOM-176B": "bloom-176b",
    "13B GPT-style decoder (kipply benchmark)": "kipply-13b",
    "TinyLlama 1.1B": "tinyllama-1.1b",
    "DeepSeek-R1": "deepseek-v3",  # the DeepSeek-V3 architecture (same config.json dims)
    "gpt-oss-120b": "gpt-oss-120b",
}
#: Catalog id of each ground-truth hardware name (variants as stated in the row).
HARDWARE_IDS: dict[str, str] = {
    "H100-SXM-80GB": "h100-sxm5-80gb",
    "H100-80GB": "h100-sxm5-80gb",  # SGLang benchmark: H100 80GB; SXM assumed (HGX nodes)
    "H200-SXM-141GB": "h200-sxm-141gb",
    "H200 (HGX, 8 GPUs)": "h200-sxm-141gb",
    "B200-180GB": "b200",
    "A100-80GB": "a100-sxm4-80gb",  # SXM assumed (DGX/HGX)
    "A100-40GB": "a100-sxm4-40gb",
    "A40": "a40",
    "MI300X-192GB": "mi300x",
    "MI325X-256GB": "mi325x",
    "MI350X-288GB": "mi350x",
    "MI355X-288GB": "mi355x",
    "B300-SXM-270GB": "b300",
    "GB200-186GB": "gb200",
    "GB300-288GB": "gb300",
    "H200-NVL-141GB": "h200-nvl-141gb",
    "RTX-PRO-6000-Blackwell-Server": "rtx-pro-6000-blackwell-server",
}

#: MLPerf Inference Llama-2-70B (OpenOrca subset): mean output tokens per sample derived in the
#: CSV from tokens/s over samples/s (291.9); mean input assumed about equal (~294 tokens; not
#: verified against the dataset file) with max 1024 each; coefficient of variation assumed 0.8.
MLPERF_LLAMA2_INPUT_MEAN = 294.0
MLPERF_LLAMA2_OUTPUT_MEAN = 291.9
MLPERF_LLAMA2_CV = 0.8
#: ShareGPT as sampled by ``sglang.bench_serving``: mean output 194 tokens (CSV derived field of
#: the offline rows); mean input assumed 230 tokens and CV 1.0 for both (heavy-tailed chat
#: lengths; assumption, not from the source).
SHAREGPT_INPUT_MEAN = 230.0
SHAREGPT_OUTPUT_MEAN = 194.0
SHAREGPT_CV = 1.0
#: "A few-token prompt" of the BLOOM blog (assumption: 10 tokens).
BLOOM_PROMPT_TOKENS = 10

#: Engines named in the CSV -> engine limit set (aitco.perf.inference.ENGINES).
ENGINE_PATTERNS: tuple[tuple[str, str], ...] = (
    ("tensorrt-llm", "trtllm"),
    ("sglang", "sglang"),
    ("vllm v1", "vllm-v1"),  # vLLM >= 0.8 runs the V1 engine (its own scheduler defaults)
    ("vllm", "vllm"),
)

THROUGHPUT = "offline_throughput"
STATIC = "static_throughput"
LATENCY = "latency"
KINDS = (THROUGHPUT, STATIC, LATENCY)
#: Latency of a load row predicted at the measured load *relative to the
#: measured capacity* of the same system (its Offline row): the simulation runs at
#: ``rho_measured x predicted capacity``, so a capacity error is not scored as a latency error.
LATENCY_AT_MEASURED_LOAD = "latency_at_measured_load"
#: The latency comparisons (absolute load) of rows measured below
#: :data:`LOW_LOAD` of their measured capacity (single requests count as load 0).
LATENCY_BELOW_LOW_LOAD = "latency_below_80pct_load"
#: Load (arrival rate over measured capacity) below which latency is scored on its own.
LOW_LOAD = 0.8
#: The latency figures the two item-6 views score (the median or mean TTFT and TPOT).
CENTRAL_LATENCY_METRICS = ("ttft_ms_median", "tpot_ms_median", "ttft_ms_mean", "tpot_ms_mean")


@dataclass
class Comparison:
    """One measured figure of one row against its prediction."""

    row_id: str
    metric: str
    kind: str
    measured: float
    predicted: float
    setup: str
    reliability: str = "A"
    offered_load: float | None = None
    measured_load: float | None = None

    @property
    def ape(self) -> float:
        """Absolute percentage error. [0-1]."""
        return abs(self.predicted - self.measured) / abs(self.measured)

    @property
    def log_ratio(self) -> float:
        """ln(predicted / measured)."""
        return math.log(self.predicted / self.measured)


@dataclass
class ValidationReport:
    """Per-row comparisons, the rows skipped (with reasons) and summary statistics."""

    comparisons: list[Comparison] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    saturated: list[tuple[str, float, float, int]] = field(default_factory=list)

    def subset(self, ids: set[str] | None) -> ValidationReport:
        """Return the comparisons, skipped and saturated rows of ``ids`` (all for ``None``)."""
        if ids is None:
            return self
        return ValidationReport(
            [c for c in self.comparisons if c.row_id in ids],
            [x for x in self.skipped if x[0] in ids],
            [x for x in self.saturated if x[0] in ids],
        )

    def errors(self, kind: str | None = None) -> np.ndarray:
        """APEs of the comparisons of one kind (all when None). [0-1]."""
        return np.asarray([c.ape for c in self.comparisons if kind is None or c.kind == kind])

    def summary(self) -> dict[str, Any]:
        """Median and p90 APE per kind, counts, and ratio quantiles for intervals."""
        out: dict[str, Any] = {
            "rows_scored": len({c.row_id for c in self.comparisons}),
            "rows_skipped": len(self.skipped),
            "rows_predicted_saturated": len(self.saturated),
        }
        views = {k: [c for c in self.comparisons if c.kind == k] for k in KINDS}
        views[LATENCY_AT_MEASURED_LOAD] = [
            c for c in self.comparisons if c.kind == LATENCY_AT_MEASURED_LOAD
        ]
        views[LATENCY_BELOW_LOW_LOAD] = [
            c for c in self.comparisons
            if c.kind == LATENCY and c.metric in CENTRAL_LATENCY_METRICS
            and c.measured_load is not None and c.measured_load < LOW_LOAD
        ]  # fmt: skip
        for kind, comps in views.items():
            e = np.asarray([c.ape for c in comps])
            r = np.asarray([c.predicted / c.measured for c in comps])
            out[kind] = {
                "n": int(e.size),
                "median_ape": float(np.median(e)) if e.size else None,
                "p90_ape": float(np.percentile(e, 90)) if e.size else None,
                "ratio_p10": float(np.percentile(r, 10)) if r.size else None,
                "ratio_p90": float(np.percentile(r, 90)) if r.size else None,
            }
        return out


def default_csv() -> Path:
    """Path of the bundled ground-truth CSV."""
    return Path(str(resources.files("aitco.validation").joinpath("data/inference.csv")))


def _fallback_model(model_id: str) -> ModelArch | None:
    p = Path(str(resources.files("aitco.validation").joinpath(f"data/models/{model_id}.yaml")))
    if not p.is_file():
        return None
    return _model_from_yaml(p)


def resolve_model(catalog: Catalog, name: str) -> ModelArch | None:
    """Return the model of a CSV model name (fallback YAML if the catalog lacks it), or None."""
    mid = MODEL_IDS.get(name)
    if mid is None:
        return None
    if mid in catalog.models:
        return catalog.models[mid]
    return _fallback_model(mid)


def _precision(row: dict[str, str]) -> str:
    p = (row.get("precision") or "").lower()
    for key in ("nvfp4", "mxfp4", "fp4", "fp8", "int8", "bf16", "fp16"):
        if key in p:
            return key
    if "4-bit" in p:
        return "int4"
    if "tensorrt-llm" in (row.get("engine") or "").lower():
        return "fp8"  # MLPerf NVIDIA submissions used FP8 (CSV note)
    return "fp16"


def _parallel(row: dict[str, str]) -> tuple[int | None, int | None]:
    par = (row.get("parallelism") or "").lower()
    m = re.search(r"tp(\d+)", par)
    tp = int(m.group(1)) if m else None
    if "pipeline" in par:
        return 1, int(row["num_accelerators"])
    m = re.search(r"pp(\d+)", par)
    return tp, int(m.group(1)) if m else None


def _expert_parallel(row: dict[str, str]) -> int:
    """Expert-parallel degree the row states (``ep8``), 1 when none.

    With attention data parallel (TensorRT-LLM ``enable_attention_dp``, the rows' harness
    configs) a ``tp8 ep8`` layout is aitco's ``ep 8`` replica: attention data-parallel over the
    group, experts sharded over it.
    """
    m = re.search(r"ep(\d+)", (row.get("parallelism") or "").lower())
    return int(m.group(1)) if m else 1


def _engine(row: dict[str, str]) -> str:
    e = (row.get("engine") or "").lower()
    for pat, eng in ENGINE_PATTERNS:
        if pat in e:
            return eng
    return "generic"


def _f(row: dict[str, str], key: str) -> float | None:
    v = row.get(key, "")
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def new_sources_csv() -> Path:
    """Path of the rows from sources not in the shared ground truth."""
    return Path(str(resources.files("aitco.validation").joinpath("data/inference_new_sources.csv")))


def unseen_csv() -> Path:
    """Path of the rows from sources no fit has ever used (never fitted)."""
    return Path(str(resources.files("aitco.validation").joinpath("data/inference_unseen.csv")))


#: Row sets of the bundled data: every row, the ground-truth copy the defaults were fitted on,
#: the new sources (used in refits and cross-validation), the unseen sources (never fitted).
ROW_SETS = ("all", "fitted", "new", "unseen")


def row_set_ids(row_set: str) -> set[str] | None:
    """Ids of the bundled rows of a row set (:data:`ROW_SETS`); ``None`` for all."""
    if row_set not in ROW_SETS:
        raise InputError("--rows", row_set, f"one of {', '.join(ROW_SETS)}")
    if row_set == "all":
        return None
    path = {"fitted": default_csv(), "new": new_sources_csv(), "unseen": unseen_csv()}[row_set]
    return {r["id"] for r in read_rows(path)}


def read_rows(path: str | Path | None = None) -> list[dict[str, str]]:
    """Rows of an inference ground-truth CSV.

    ``None``: every bundled row (the ground-truth copy, the new sources and the unseen sources);
    :data:`_ALL`: the rows a fit may use (the unseen sources are never fitted).
    """
    if path is None:
        paths = [default_csv(), new_sources_csv(), unseen_csv()]
    elif path == _ALL:
        paths = [default_csv(), new_sources_csv()]
    else:
        paths = [Path(path)]
    rows: list[dict[str, str]] = []
    for p in paths:
        with open_input(p, field="CSV", newline="") as fh:
            rows += list(csv.DictReader(fh))
    return rows


def validate(
    path: str | Path | None = None,
    *,
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    catalog: Catalog | None = None,
    row_ids: set[str] | None = None,
    max_requests: int = 5000,
) -> ValidationReport:
    """Predict every row of the ground truth and compare.

    Parameters
    ----------
    path : path, optional
        CSV (default: the bundled ``data/inference.csv`` plus ``data/inference_new_sources.csv``).
    efficiency : EfficiencyParams
        Efficiency parameters to evaluate.
    catalog : Catalog, optional
        Catalog (default: the built-in one).

    Returns
    -------
    ValidationReport
        Comparisons and skipped rows.
    """
    cat = catalog or load_catalog(use_env=False)
    rep = ValidationReport()
    rows = read_rows(path)
    capacity = measured_capacities(rows)
    for row in rows:
        if row_ids is not None and row["id"] not in row_ids:
            continue
        rid = row["id"]
        try:
            _predict_row(row, cat, efficiency, rep, max_requests, capacity.get(_system_key(row)))
        except AitcoError as exc:
            rep.skipped.append((rid, f"prediction failed: {exc}"))
    return rep


def _system_key(row: dict[str, str]) -> tuple[str, ...]:
    """Return what identifies one measured system and workload (its Offline and Server rows).

    Source, model, hardware, accelerators, precision, engine, workload and the system name the
    notes give (``system <name>``, the MLPerf rows).
    """
    m = re.search(r"system (\S+)", row.get("notes") or "")
    keys = ("source", "model", "hardware", "num_accelerators", "precision", "engine", "workload")
    return (*((row.get(k) or "").strip() for k in keys), m.group(1) if m else "")


def measured_capacities(rows: list[dict[str, str]]) -> dict[tuple[str, ...], float]:
    """Measured capacity (requests/s) of each system with an Offline row (:func:`_system_key`)."""
    out: dict[tuple[str, ...], float] = {}
    for row in rows:
        if "offline" not in (row.get("scenario") or "").lower():
            continue
        rps = _f(row, "requests_per_s")
        tps, o = _f(row, "output_tokens_per_s"), _f(row, "output_len")
        if rps is None and tps is not None and o:
            rps = tps / o
        if rps:
            out[_system_key(row)] = rps
    return out


@dataclass
class _RowRun:
    """What one ground-truth row runs: the catalog entries, the stated setup and its workload."""

    row: dict[str, str]
    model: ModelArch
    acc: Any
    system: Any
    gpus: int
    hw: str
    common: dict[str, Any]
    input_tokens: int
    output_tokens: int
    length_cv: float
    rep: ValidationReport
    result: Any = None

    def add(
        self,
        metric: str,
        kind: str,
        measured: float | None,
        predicted: float | None,
        offered_load: float | None = None,
        measured_load: float | None = None,
    ) -> None:
        """Record one comparison (nothing when either side is missing or not finite)."""
        if measured is None or predicted is None or not math.isfinite(predicted):
            return
        c = self.common
        if self.result is not None:  # the resolved plan, not "auto"
            v = self.result.values
            setup = (
                f"{self.model.id} {self.hw}x{self.gpus} {c['precision']} tp{v['tp']} pp{v['pp']}"
            )
        else:
            setup = f"{self.model.id} {self.hw}x{self.gpus} {c['precision']} tp{c['tp'] or 'auto'}"
        self.rep.comparisons.append(
            Comparison(
                self.row["id"], metric, kind, measured, predicted, f"{setup} {c['engine']}",
                self.row.get("reliability") or "C", offered_load, measured_load,
            )
        )  # fmt: skip

    def estimate(self, **kw: Any) -> Any:
        """Run :func:`estimate_inference` on the row's setup with the given load."""
        self.result = estimate_inference(
            self.model, self.acc, self.system, self.gpus, input_tokens=self.input_tokens,
            output_tokens=self.output_tokens, **self.common, **kw,
        )  # fmt: skip
        return self.result


def stated_engine_settings(row: dict[str, str]) -> dict[str, int]:
    """Engine settings the row states in its notes (the run's command line), as keyword args.

    ``max_num_seqs=N`` -> ``max_batch``, ``max_num_batched_tokens=N`` -> ``max_batched_tokens``,
    and ``--num-scheduler-steps N`` -> ``scheduler_steps`` for the vLLM V0 engine (the only one
    the flag applies to; the SGLang rows' notes name the flag of their vLLM comparison run).
    """
    notes = row.get("notes") or ""
    out: dict[str, int] = {}
    for pattern, key in STATED_SETTINGS:
        m = re.search(pattern, notes)
        if m:
            out[key] = int(m.group(1))
    if _engine(row) != "vllm":
        out.pop("scheduler_steps", None)
    return out


#: Patterns of the engine settings read from a row's notes, and the keyword each sets.
STATED_SETTINGS: tuple[tuple[str, str], ...] = (
    (r"max_num_seqs\s*=\s*(\d+)", "max_batch"),
    (r"max_num_batched_tokens\s*=\s*(\d+)", "max_batched_tokens"),
    (r"num-scheduler-steps\s+(\d+)", "scheduler_steps"),
)


def _row_workload(row: dict[str, str]) -> tuple[float, float, float] | None:
    """Mean input and output lengths and their CV of a row's workload, or None if not stated."""
    wl = (row.get("workload") or "").lower()
    if "mlperf" in wl:
        # the row's own mean output (tokens/s over samples/s of its log) when it states one, and
        # its dataset's mean prompt when it states one (the Llama 2 70B assumption otherwise)
        o = _f(row, "output_len") or MLPERF_LLAMA2_OUTPUT_MEAN
        return _f(row, "input_len") or MLPERF_LLAMA2_INPUT_MEAN, o, MLPERF_LLAMA2_CV
    if "sharegpt" in wl:
        return SHAREGPT_INPUT_MEAN, SHAREGPT_OUTPUT_MEAN, SHAREGPT_CV
    il, ol = _f(row, "input_len"), _f(row, "output_len")
    if ol is not None and il is None and "few-token prompt" in wl:
        il = BLOOM_PROMPT_TOKENS
    if il is None or ol is None:
        return None
    return il, ol, 0.0


def _row_run(
    row: dict[str, str], cat: Catalog, eff: EfficiencyParams, rep: ValidationReport
) -> _RowRun | None:
    """Map a row onto the catalog and its stated setup; record why when it cannot be."""
    rid = row["id"]
    model = resolve_model(cat, row["model"])
    if model is None:
        rep.skipped.append((rid, f"model {row['model']!r} not in the catalog"))
        return None
    hw = HARDWARE_IDS.get(row["hardware"])
    if hw is None or hw not in cat.accelerators:
        rep.skipped.append((rid, f"hardware {row['hardware']!r} not in the catalog"))
        return None
    wl = _row_workload(row)
    if wl is None:
        rep.skipped.append((rid, "input/output lengths not stated"))
        return None
    acc, system = cat.hardware(hw)
    tp, pp = _parallel(row)
    common: dict[str, Any] = {
        "precision": _precision(row), "tp": tp, "pp": pp, "efficiency": eff,
        "engine": _engine(row),
    }  # fmt: skip
    ep = _expert_parallel(row)
    if ep > 1:
        common.update(ep=ep, tp=1, pp=None)  # a replica of ep GPUs, attention data-parallel
    m = re.search(r"kv_cache_dtype\s*=\s*(\w+)", row.get("notes") or "")
    if m:
        common["kv_precision"] = m.group(1).lower()
    i, o, cv = wl
    return _RowRun(
        row, model, acc, system, int(float(row["num_accelerators"])), hw, common, round(i),
        round(o), cv, rep,
    )  # fmt: skip


def _predict_row(
    row: dict[str, str],
    cat: Catalog,
    eff: EfficiencyParams,
    rep: ValidationReport,
    max_requests: int = 5000,
    capacity_rps: float | None = None,
) -> None:
    run = _row_run(row, cat, eff, rep)
    if run is None:
        return
    scen = (row.get("scenario") or "").lower()
    stated = stated_engine_settings(row)
    if "offline" in scen:
        stated.pop("scheduler_steps", None)
        r = run.estimate(mode="offline", **stated)
        run.add("output_tokens_per_s", THROUGHPUT, _f(row, "output_tokens_per_s"),
                r.values["output_tokens_per_s"])  # fmt: skip
    elif "server" in scen or "poisson" in scen:
        _score_load(run, stated, max_requests, capacity_rps)
    elif "static batch" in scen:
        r = run.estimate(batch=int(_f(row, "concurrency_or_batch") or 1))
        run.add("output_tokens_per_s", STATIC, _f(row, "output_tokens_per_s"),
                r.values["output_tokens_per_s"])  # fmt: skip
    elif "single request" in scen:
        r = run.estimate(batch=1)
        for metric, key in (("ttft_ms_mean", "ttft_s"), ("tpot_ms_mean", "tpot_s")):
            run.add(metric, LATENCY, _f(row, metric), _ms(r.values[key]), measured_load=0.0)
    else:
        rep.skipped.append(
            (row["id"], f"scenario {row.get('scenario')!r} not scored (workload not stated)")
        )


#: Latency figures of a load row, and the prediction key of each.
LOAD_FIGURES: tuple[tuple[str, str], ...] = (
    ("ttft_ms_median", "p50_ttft_s"),
    ("tpot_ms_median", "p50_tpot_s"),
    ("ttft_ms_p99", "p99_ttft_s"),
    ("tpot_ms_p99", "p99_tpot_s"),
    ("e2e_latency_ms_median", "p50_e2e_latency_s"),
)


def _score_load(
    run: _RowRun, stated: dict[str, int], max_requests: int, capacity_rps: float | None = None
) -> None:
    r"""Simulate a row's open-loop load and compare its latency figures (or record saturation).

    With the measured capacity of the same system (``capacity_rps``, its Offline row) the row's
    load :math:`\rho = \lambda / \mu_{measured}` is recorded on each comparison, and the
    latency is also predicted at :math:`\rho` times the *predicted* capacity
    (:data:`LATENCY_AT_MEASURED_LOAD`): queueing scored apart from the capacity error.
    """
    row = run.row
    qps = _f(row, "request_rate_rps") or _f(row, "requests_per_s")
    n = int(_f(row, "num_requests") or 5000)
    sim = {"input_cv": run.length_cv, "output_cv": run.length_cv,
           "num_requests": min(n, max_requests), **stated}  # fmt: skip
    r = run.estimate(qps=qps, **sim)
    v = r.values
    rho = qps / capacity_rps if qps and capacity_rps else None
    if rho is not None and rho < 1.0:
        rel = run.estimate(qps=rho * float(v["max_qps"]), **sim).values
        if not rel.get("saturated"):
            for metric, key in LOAD_FIGURES:
                if metric in CENTRAL_LATENCY_METRICS:
                    run.add(metric, LATENCY_AT_MEASURED_LOAD, _f(row, metric), _ms(rel.get(key)),
                            float(rel["offered_load"]), measured_load=rho)  # fmt: skip
    if v.get("saturated"):
        n_lat = sum(_f(row, k) is not None for k, _ in LOAD_FIGURES)
        run.rep.saturated.append((row["id"], qps or 0.0, float(v["max_qps"]), n_lat))
        return
    for metric, key in LOAD_FIGURES:
        run.add(metric, LATENCY, _f(row, metric), _ms(v.get(key)), float(v["offered_load"]),
                measured_load=rho)  # fmt: skip


def _ms(s: float | None) -> float | None:
    return None if s is None else s * MS_PER_S


#: |ln error| charged in the fit for each latency figure of a load row the model predicts to be
#: saturated (its latency is then unbounded while the measured one is finite): a factor e.
SATURATION_PENALTY = 1.0

#: Figures the fit uses: the throughputs and the median (or mean) TTFT and TPOT named in the
#: accuracy targets (docs/inference.md); P99 and end-to-end figures are validated but not fitted.
FIT_METRICS = (
    "output_tokens_per_s", "ttft_ms_median", "tpot_ms_median", "ttft_ms_mean", "tpot_ms_mean",
)  # fmt: skip

#: Weight of a row in the fit by its reliability tier (README of the ground truth: A read from
#: the primary artefact, B through a faithful transcription, C a single secondary source).
RELIABILITY_WEIGHT: dict[str, float] = {"A": 1.0, "B": 0.5, "C": 0.25}

#: Extra starting points of the coordinate descent (the landscape has shallow local minima).
FIT_STARTS: tuple[dict[str, float], ...] = (
    {"serving_overhead_per_seq_s": 0.0, "roofline_p": 2.0, "lowp_gemm_scale": 0.7},
    {
        "serving_overhead_per_seq_s": 4e-6,
        "roofline_p": 1e9,
        "lowp_gemm_scale": 0.8,
        "decode_hbm": 0.8,
    },
)

#: Grid keys of the request path (fitted after the engine fields: it never occupies the GPU).
REQUEST_PATH_PREFIX = "request_path_by_engine."

#: Grid of the global inference-efficiency fit (the only parameters fitted on this data).
FIT_GRID: dict[str, tuple[float, ...]] = {
    "serving_overhead_s": (0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.010),
    "serving_overhead_by_engine.trtllm": (0.0, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.006),
    "serving_layer_overhead_s": (0.0, 1e-5, 2e-5, 3e-5, 5e-5, 7.5e-5, 1e-4),
    "serving_overhead_per_seq_s": (0.0, 1e-6, 2e-6, 4e-6),
    "lowp_gemm_scale": (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0),
    "decode_hbm": (0.7, 0.75, 0.8, 0.85, 0.9, 0.95),
    "roofline_p": (1.5, 2.0, 3.0, 5.0, 1e9),
    "prefill_attention": (0.3, 0.4, 0.5, 0.6, 0.7),
    "request_path_by_engine.vllm": (0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05),
    "request_path_by_engine.vllm-v1": (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06),
    "request_path_by_engine.sglang": (0.0, 0.0025, 0.005, 0.01, 0.02),
}


def fit_inference_efficiency(
    path: str | Path | None = None,
    *,
    base: EfficiencyParams = DEFAULT_EFFICIENCY,
    catalog: Catalog | None = None,
    grid: dict[str, tuple[float, ...]] | None = None,
    passes: int = 4,
    row_ids: set[str] | None = None,
    starts: tuple[dict[str, float], ...] | None = None,
    max_requests: int = 5000,
) -> tuple[dict[str, float], float]:
    """Fit the inference-only efficiency fields once, globally, on every scored row.

    The objective is the mean absolute log error over the comparisons of :data:`FIT_METRICS`
    (throughput and latency alike), weighted by the row's reliability tier
    (:data:`RELIABILITY_WEIGHT`); the training-owned fields (``gemm``, ``hbm``, links,
    ``attention``) stay as in ``base``. Coordinate descent over :data:`FIT_GRID`, starting
    from ``base``, until no single
    change improves (at most ``passes`` sweeps). The per-engine request path
    (:data:`REQUEST_PATH_PREFIX` keys) is separable (it only delays what the client sees): the
    engine fields are fitted with it at 0, then it is fitted alone on top of them.

    Returns
    -------
    (dict, float)
        Best values of the fitted fields, and the objective there.
    """
    cat = catalog or load_catalog(use_env=False)
    g = grid or FIT_GRID
    path = default_csv() if path is None else path  # the fit behind DEFAULT_EFFICIENCY

    def objective(ov: dict[str, float]) -> float:
        rep = validate(
            path, efficiency=base.with_overrides(_nest(ov)), catalog=cat, row_ids=row_ids,
            max_requests=max_requests,
        )  # fmt: skip
        fitted = [c for c in rep.comparisons if c.metric in FIT_METRICS and c.kind in KINDS]
        errs = [abs(c.log_ratio) for c in fitted]
        w = [RELIABILITY_WEIGHT.get(c.reliability, 0.25) * conditioning_weight(c) for c in fitted]
        n_sat = 2 * len(rep.saturated)  # the two median latencies of a saturated row
        errs += [SATURATION_PENALTY] * n_sat
        w += [1.0] * n_sat
        return float(np.average(errs, weights=w))

    # the request path never occupies the GPU: the engine fields are fitted first with it at 0,
    # then the request path alone on what is left of the TTFT residuals (separable fit)
    gpu = {k: v for k, v in g.items() if not k.startswith(REQUEST_PATH_PREFIX)}
    rpath = {k: v for k, v in g.items() if k.startswith(REQUEST_PATH_PREFIX)}
    zero = {k: 0.0 for k in rpath}
    start0 = {k: _get(base, k) for k in gpu}
    results = [_descend(objective, start0, gpu, passes, fixed=zero)]
    for start in FIT_STARTS if starts is None else starts:
        results.append(_descend(objective, {**start0, **start}, gpu, passes, fixed=zero))
    best_ov, best_obj = min(results, key=lambda r: r[1])
    if rpath:
        best_ov, best_obj = _descend(objective, {**best_ov, **zero}, rpath, passes)
    return best_ov, best_obj


#: Ratio of the relative error of a predicted capacity to the intrinsic relative error of a
#: predicted latency (both about 10 % on the offline and unloaded rows): sets how fast a latency
#: figure measured near capacity loses weight in the fit (:func:`conditioning_weight`).
CAPACITY_TO_LATENCY_ERROR = 1.0


def conditioning_weight(c: Comparison) -> float:
    r"""Weight of a comparison in the fit: 1, or less for latency measured near capacity.

    Notes
    -----
    Under load :math:`\rho` the latency of a queue grows like :math:`1/(1-\rho)`, so a relative
    capacity error :math:`\sigma_\mu` moves ln(latency) by :math:`\sigma_\mu \rho/(1-\rho)`.
    With :math:`r` = :data:`CAPACITY_TO_LATENCY_ERROR` the residual's spread is
    :math:`\sigma_0 \sqrt{1 + (r \rho/(1-\rho))^2}` and its weight the inverse
    (errors in variables): 0.92 at 30 % load, 0.71 at 50 %, 0.11 at 90 %, 0.03 at 97 %. MLPerf
    Server rows run at their highest valid load, where a few % of capacity swing latency 2x.
    """
    rho = c.offered_load
    if rho is None:
        return 1.0
    rho = min(max(rho, 0.0), 0.999)
    amp = CAPACITY_TO_LATENCY_ERROR * rho / (1.0 - rho)
    return 1.0 / math.sqrt(1.0 + amp * amp)


def _descend(
    objective: Any,
    cur: dict[str, float],
    g: dict[str, tuple[float, ...]],
    passes: int,
    fixed: dict[str, float] | None = None,
) -> tuple[dict[str, float], float]:
    """Coordinate descent over ``g`` from ``cur`` (``fixed`` fields held, not returned)."""
    hold = fixed or {}
    best = objective({**cur, **hold})
    for _ in range(passes):
        improved = False
        for k, values in g.items():
            for v in values:
                if v == cur[k]:
                    continue
                trial = {**cur, k: v}
                obj = objective({**trial, **hold})
                if obj < best - 1e-9:
                    best, cur, improved = obj, trial, True
        if not improved:
            break
    return cur, best


#: Latency figures whose errors set the TTFT/TPOT interval.
LATENCY_INTERVAL_METRICS = ("ttft_ms_median", "tpot_ms_median", "ttft_ms_mean", "tpot_ms_mean")


def interval_log_ratios(rep: ValidationReport) -> dict[str, float]:
    """10th/90th percentiles of ln(observed/predicted), as the ``inference_*_log_ratio_*`` fields.

    Offline throughput rows set the throughput interval; median/mean TTFT and TPOT rows set the
    latency interval.
    """
    thr = [-c.log_ratio for c in rep.comparisons if c.kind == THROUGHPUT]
    lat = [
        -c.log_ratio
        for c in rep.comparisons
        if c.metric in LATENCY_INTERVAL_METRICS and c.kind == LATENCY  # the absolute-load figures
    ]
    return {
        "inference_throughput_log_ratio_q10": float(np.percentile(thr, 10)),
        "inference_throughput_log_ratio_q90": float(np.percentile(thr, 90)),
        "inference_latency_log_ratio_q10": float(np.percentile(lat, 10)),
        "inference_latency_log_ratio_q90": float(np.percentile(lat, 90)),
    }


def gemm_share_of_ceiling(
    eff: EfficiencyParams, catalog: Catalog, rows: list[dict[str, str]]
) -> float | None:
    """``gemm`` as a share of the measured matmul ceiling, from the rows of fitted families.

    Geometric mean of ``gemm[family] / matmul_ceiling("bf16")`` over the rows whose accelerator
    family has a ``gemm`` value and a measured ceiling: the derivation of the
    ``gemm_share_of_ceiling`` default. ``None`` when no row qualifies.
    """
    pairs = []
    for r in rows:
        hw = HARDWARE_IDS.get(r["hardware"])
        if hw is not None and hw in catalog.accelerators:
            acc = catalog.accelerators[hw]
            if acc.family in eff.gemm:
                pairs.append((eff.gemm[acc.family], acc.matmul_ceiling("bf16")))
    return share_of_ceiling(pairs)


def _get(eff: EfficiencyParams, key: str) -> float:
    """Value of a (possibly dotted ``field.key``) efficiency parameter."""
    if "." in key:
        f, k = key.split(".", 1)
        if f == "request_path_by_engine":
            return eff.request_path_for(k)
        d = getattr(eff, f)
        fallback = {"serving_overhead_by_engine": eff.serving_overhead_s}
        return float(d.get(k, fallback.get(f, 0.0)))
    return float(getattr(eff, key))


def _nest(ov: dict[str, float]) -> dict[str, Any]:
    """Turn dotted keys (``serving_overhead_by_engine.trtllm``) into nested overrides."""
    out: dict[str, Any] = {}
    for k, v in ov.items():
        if "." in k:
            f, sub = k.split(".", 1)
            out.setdefault(f, {})[sub] = v
        else:
            out[k] = v
    return out


def source_group(row: dict[str, str]) -> str:
    """Return the group of a row for leave-one-source-out: its ``source`` without mirror notes."""
    return (row.get("source") or "").split(" (")[0].strip() or row["id"]


def cross_validate(
    path: str | Path | None = None,
    *,
    folds: int = 5,
    base: EfficiencyParams = DEFAULT_EFFICIENCY,
    catalog: Catalog | None = None,
    passes: int = 2,
    groups: str | None = None,
    fit_max_requests: int = 1000,
) -> ValidationReport:
    """Cross-validation of the global fit: each row predicted by a fit that never saw it.

    With ``groups=None`` rows are dealt to ``folds`` folds in id order (row ``n`` to fold
    ``n mod folds``); with ``groups="source"`` each source (:func:`source_group`) is one fold
    (leave-one-source-out), so a source's rows are predicted by a fit that never saw that source.
    For each fold the inference fields are refitted on the other rows (coordinate descent from
    ``base`` only, ``passes`` sweeps) and the fold's rows are predicted with that fit. The result
    is the out-of-sample error table, the figure that matters for runs the model has not seen.
    The refits simulate ``fit_max_requests`` requests per load row (speed); the held-out rows
    are predicted at the full 5,000. Rows of the unseen sources (:func:`unseen_csv`) are never in
    a refit's training set: each of their sources is predicted by a refit on the other
    fit-eligible rows.
    """
    cat = catalog or load_catalog(use_env=False)
    rows = read_rows(path)
    ids = sorted(r["id"] for r in rows)
    # rows a refit may use: never the unseen sources (they are only ever predicted)
    fit_ids = {r["id"] for r in read_rows(_ALL)} if path is None else set(ids)
    if groups == "source":
        by: dict[str, set[str]] = {}
        for r in rows:
            by.setdefault(source_group(r), set()).add(r["id"])
        held_out = list(by.values())
    elif groups is None:
        held_out = [{rid for n, rid in enumerate(ids) if n % folds == k} for k in range(folds)]
    else:
        raise InputError("--cv", groups, "'source' (leave-one-source-out) or k-fold")
    out = ValidationReport()
    for held in held_out:
        train = (set(ids) & fit_ids) - held
        ov, _ = fit_inference_efficiency(
            path if path is not None else _ALL, base=base, catalog=cat, passes=passes,
            row_ids=train, starts=(), max_requests=fit_max_requests,
        )  # fmt: skip
        rep = validate(path, efficiency=base.with_overrides(_nest(ov)), catalog=cat, row_ids=held)
        out.comparisons += rep.comparisons
        out.skipped += rep.skipped
        out.saturated += rep.saturated
    return out


#: Sentinel path: every bundled CSV a fit may use (the shared copy and the new sources).
_ALL = "__all__"
