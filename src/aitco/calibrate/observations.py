"""Normalised observations: one measured quantity, on what hardware, under what conditions.

Parsers return format-specific :class:`~aitco.calibrate.parsers.base.ParseResult` objects;
the functions here turn them into :class:`Observation` records that
:class:`~aitco.calibrate.fit.EfficiencyFit` can compare with the model's predictions:

========================  ====================================================  ==========
kind                      conditions                                            unit
========================  ====================================================  ==========
``collective_time_s``     ``collective``, ``message_bytes``, ``n_ranks``        s
``matmul_tflops``         ``dtype``, ``size``                                   TFLOP/s
``memory_bandwidth_gb_s``                                                       GB/s
``step_time_s``           ``model``, ``gpus``, ``seq_len``, ``global_batch``,   s
                          ``plan``, ``precision``
``serving_ttft_s``        ``model``, ``gpus``, ``tp``, ``input_tokens``,        s
``serving_tpot_s``        ``output_tokens``, ``qps`` or ``concurrency``         s
========================  ====================================================  ==========
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from aitco.calibrate.parsers.base import ParseResult
from aitco.catalog.schema import Accelerator, ModelArch, System
from aitco.errors import InputError
from aitco.units import US_PER_S, ms_to_s

#: Observation kinds understood by the default predictor.
OBSERVATION_KINDS = (
    "collective_time_s",
    "matmul_tflops",
    "memory_bandwidth_gb_s",
    "step_time_s",
    "serving_ttft_s",
    "serving_tpot_s",
)
#: nccl-tests rows within this many doublings of the largest size are used for the link fit
#: (bandwidth-bound; smaller sizes are dominated by latency, which is not a fitted parameter).
NCCL_FIT_LOG2_SPAN = 3.0


@dataclass
class Observation:
    """One measured value and the conditions it was measured under.

    Attributes
    ----------
    kind : str
        One of :data:`OBSERVATION_KINDS`.
    value : float
        The measured value, in the unit of its kind.
    acc : Accelerator
        The accelerator (catalog entry).
    system : System, optional
        The node/pod (needed for collectives and step times).
    model : ModelArch, optional
        The trained model (step times).
    conditions : dict
        Kind-specific conditions (see the module table).
    source : str
        File (and line) it came from.
    weight : float
        Weight in the least-squares fit.
    """

    kind: str
    value: float
    acc: Accelerator
    system: System | None = None
    model: ModelArch | None = None
    conditions: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in OBSERVATION_KINDS:
            raise InputError(
                "observation.kind", self.kind, "one of " + ", ".join(OBSERVATION_KINDS)
            )
        if not (
            isinstance(self.value, int | float) and math.isfinite(self.value) and self.value > 0
        ):
            raise InputError("observation.value", self.value, "a positive finite number")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready description (ids instead of catalog objects)."""
        return {
            "kind": self.kind,
            "value": self.value,
            "accelerator": self.acc.id,
            "system": self.system.id if self.system else None,
            "model": self.model.id if self.model else None,
            "conditions": self.conditions,
            "source": self.source,
            "weight": self.weight,
        }


def from_nccl(result: ParseResult, acc: Accelerator, system: System) -> list[Observation]:
    """Collective-time observations from the bandwidth-bound rows of an nccl-tests result.

    Uses the out-of-place time of every row within :data:`NCCL_FIT_LOG2_SPAN` doublings of the
    largest message; ``n_ranks`` comes from the rank lines (or ``devices`` in JSON).
    """
    if result.kind != "nccl":
        raise InputError("result.kind", result.kind, "an nccl-tests result")
    n = result.summary.get("n_ranks")
    coll = result.summary.get("collective") or "all_reduce"
    if not n or n < 2:
        raise InputError(
            "n_ranks", n, "at least 2 ranks (from the '# Rank' lines)", file=result.path
        )
    sizes = [r["size_bytes"] for r in result.records if r["size_bytes"] > 0]
    top = max(sizes)
    out = []
    for r in result.records:
        s = r["size_bytes"]
        t = r.get("oop_time_us") or r.get("ip_time_us")
        if s <= 0 or not t or math.log2(top) - math.log2(s) > NCCL_FIT_LOG2_SPAN:
            continue
        out.append(
            Observation(
                kind="collective_time_s",
                value=t / US_PER_S,
                acc=acc,
                system=system,
                conditions={"collective": coll, "message_bytes": s, "n_ranks": int(n)},
                source=result.path,
            )
        )
    return out


def from_trainlog(
    result: ParseResult,
    model: ModelArch,
    acc: Accelerator,
    system: System,
    *,
    gpus: int,
    seq_len: int,
    global_batch: int | None = None,
    plan: dict[str, Any] | None = None,
    precision: str = "bf16",
) -> list[Observation]:
    """Return a step-time observation (steady-state median) from a parsed training log."""
    if result.kind != "trainlog":
        raise InputError("result.kind", result.kind, "a training log")
    step = result.summary.get("step_time_s")
    if not step:
        raise InputError(
            "step_time_s",
            step,
            "a training log with per-step times",
            file=result.path,
            hint="Megatron 'elapsed time per iteration', JSONL step_time_ms, or HF train_runtime",
        )
    gb = global_batch or result.summary.get("global_batch")
    if not gb:
        raise InputError("--global-batch", gb, "the global batch in sequences (not in the log)")
    return [
        Observation(
            kind="step_time_s",
            value=float(step),
            acc=acc,
            system=system,
            model=model,
            conditions={
                "gpus": gpus,
                "seq_len": seq_len,
                "global_batch": int(gb),
                "plan": plan,
                "precision": precision,
            },
            source=result.path,
        )
    ]


def from_serving(
    result: ParseResult,
    model: ModelArch,
    acc: Accelerator,
    system: System,
    *,
    gpus: int,
    tp: int | None = None,
    precision: str = "bf16",
) -> list[Observation]:
    """Mean TTFT and TPOT observations, one pair per run of a vLLM/SGLang benchmark result.

    Mean input and output lengths are the run's token totals over completed requests; the load
    is the request rate (``qps``), or the concurrency cap when the rate was ``inf``.
    """
    if result.kind not in ("vllm", "sglang"):
        raise InputError("result.kind", result.kind, "a vLLM or SGLang benchmark result")
    out: list[Observation] = []
    for i, r in enumerate(result.records):
        done = r.get("completed")
        tin, tout = r.get("total_input_tokens"), r.get("total_output_tokens")
        if not done or not tin or not tout:
            continue
        rate = r.get("request_rate")
        conc = r.get("max_concurrency")
        cond: dict[str, Any] = {
            "gpus": gpus,
            "tp": tp,
            "precision": precision,
            "input_tokens": max(1, round(tin / done)),
            "output_tokens": max(1, round(tout / done)),
        }
        if isinstance(rate, int | float) and math.isfinite(rate) and rate > 0:
            cond["qps"] = float(rate)
        elif conc:
            cond["concurrency"] = int(conc)
        else:
            continue
        src = f"{result.path} (run {i + 1})"
        for kind, key in (("serving_ttft_s", "mean_ttft_ms"), ("serving_tpot_s", "mean_tpot_ms")):
            v = r.get(key) or r.get(key.replace("mean_", "median_"))
            if v and v > 0:
                out.append(
                    Observation(
                        kind=kind,
                        value=ms_to_s(v),
                        acc=acc,
                        system=system,
                        model=model,
                        conditions=dict(cond),
                        source=src,
                    )
                )
    return out


def from_probe(
    probe: dict[str, Any], acc: Accelerator, *, source: str = "probe"
) -> list[Observation]:
    """Matmul and memory-bandwidth observations from ``aitco probe`` results."""
    out = []
    for dtype, tflops in (probe.get("matmul_tflops") or {}).items():
        if dtype in acc.peak_tflops and tflops and tflops > 0:
            out.append(
                Observation(
                    kind="matmul_tflops",
                    value=float(tflops),
                    acc=acc,
                    conditions={"dtype": dtype, "size": probe.get("matmul_size")},
                    source=source,
                )
            )
    bw = probe.get("memory_bandwidth_gb_s")
    if bw and bw > 0:
        out.append(
            Observation(kind="memory_bandwidth_gb_s", value=float(bw), acc=acc, source=source)
        )
    return out


_CHIPS = re.compile(
    r"(gb200|b200|h200|h100|h800|a100|a10g|l40s|l4|v100|mi300x|mi325x|gaudi3|gaudi2|rtx.?4090|"
    r"rtx.?6000)",
    re.I,
)


def guess_accelerator(device_name: str, accelerators: list[Accelerator]) -> Accelerator | None:
    """Return the catalog accelerator a reported device name most likely is (None if unsure).

    Matches the chip token (``H100``, ``A100``, ``L40S``, ...) and, when several catalog entries
    share it, the memory size and form factor named (``80GB``, ``PCIe``; SXM otherwise).

    Examples
    --------
    >>> from aitco.catalog.schema import Accelerator
    >>> a = Accelerator(id="h100-sxm5-80gb", vendor="nvidia", family="nvidia-hopper",
    ...     peak_tflops={"bf16": 989.4}, memory_gb=80, hbm_bandwidth_gb_s=3350, launch_year=2022)
    >>> guess_accelerator("NVIDIA H100 80GB HBM3", [a]).id
    'h100-sxm5-80gb'
    """
    m = _CHIPS.search(device_name.replace("_", " "))
    if not m:
        return None
    chip = re.sub(r"[^a-z0-9]", "", m.group(1).lower())
    cands = [a for a in accelerators if chip in re.sub(r"[^a-z0-9]", "", a.id.split("-")[0] + a.id)]
    cands = [a for a in cands if a.id.replace("-", "").startswith(chip) or a.id.startswith(chip)]
    if not cands:
        return None
    low = device_name.lower()
    mem = re.search(r"(\d+)\s*gb", low)
    if mem:
        same = [a for a in cands if f"{mem.group(1)}gb" in a.id]
        cands = same or cands
    form = "pcie" if "pcie" in low else "sxm"
    same = [a for a in cands if form in a.id]
    if form == "pcie" and not same:
        return None  # a PCIe card whose catalog entry is missing: do not guess the SXM one
    cands = same or cands
    return cands[0]
