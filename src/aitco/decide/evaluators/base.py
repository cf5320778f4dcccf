"""What every sweep evaluator shares: the evaluator protocol, sweep keys, metrics and reasons."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from aitco.decide.scenario import InferenceWorkload
from aitco.perf.efficiency import (
    ELEMENTWISE_KERNELS,
    GEMM_LEVELS,
)
from aitco.perf.training_model import HOST_LOOPS, LOSS_KERNELS

PRICING_MODES: tuple[str, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y", "owned")

#: Invalid-configuration reasons (bit flags), reported by the sweep with counts.
REASONS: dict[int, str] = {
    1: "plan: gpus not divisible by tp x pp",
    2: "plan: tp larger than the scale-up domain",
    4: "plan: pp larger than n_layers",
    8: "plan: global batch not divisible by dp x micro_batch",
    16: "memory: does not fit in device memory",
    32: "price: no eligible offer for this hardware / pricing mode / region / size",
    64: "precision: not supported by the accelerator",
    128: "plan: spans nodes of a system without a scale-out network",
    256: "mig: the accelerator has no such MIG slice",
    512: "service: the disaggregated layout does not carry the load within the objectives",
    1024: "offload: the system gives no host memory figures (host_memory_gb, "
    "host_memory_bandwidth_gb_s; NVMe modes: nvme_capacity_gb, nvme_read_gb_s, nvme_write_gb_s) "
    "or the accelerator no PCIe generation",
    2048: "offload: ZeRO stage below the offload mode's (optimizer: >= 1, params and NVMe: 3)",
    4096: "time_slice: the accelerator is not a GPU the device plugin time-slices",
    8192: "plan: cp must divide seq_len; ep must divide the model's experts and dp "
    "(ep > 1 needs an MoE model)",
    16384: "plan: dualpipe needs an even pp >= 2, vp 1 and at least pp micro-batches; "
    "ep_comm_overlap needs ep > 1, no full recompute and, with pp > 1, vp > 1",
}


class Evaluator(Protocol):
    """What a sweep needs from an evaluator.

    Attributes
    ----------
    keys : dict of str to list
        Canonical dotted keys the evaluator understands, with their default value lists.
    metrics : tuple of str
        Names of the float metric arrays :meth:`evaluate` returns.
    """

    keys: dict[str, list[Any]]
    metrics: tuple[str, ...]

    def evaluate(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluate a chunk of configurations.

        ``values`` maps each key to per-configuration values (codes for categorical keys).
        Returns the metrics plus ``reason`` (int bit flags, 0 = valid).
        """
        ...


#: Service period of a serving sweep when the workload gives none (``InferenceWorkload``).
DEFAULT_SERVICE_MONTHS = float(InferenceWorkload.model_fields["months"].default)


# ----------------------------------------------------------------------------- training
#: Keys of a training sweep, outermost first. The keys the step time depends on come first and
#: the price-only keys (pricing, region) last, so that a grid chunk holds long runs of equal
#: (hardware, model, precision, gpus, seq_len, global_batch) -- one engine call per run.
TRAINING_KEYS: dict[str, list[Any]] = {
    "option.hardware": [],
    "workload.model": [],
    "workload.precision": ["bf16"],
    "option.gpus": [],
    "workload.seq_len": [],
    "workload.global_batch": [],
    "workload.plan.tp": [1],
    "workload.plan.pp": [1],
    "workload.plan.vp": [1],
    "workload.plan.micro_batch": [1],
    "workload.plan.zero": [1],
    "workload.plan.recompute": ["selective"],
    "option.pricing": ["on_demand"],
    "option.region": [None],
}
#: Plan fields of the engine training evaluator beyond :data:`TRAINING_KEYS` (the same fields as
#: ``aitco train --cp/--ep``): optional, a sweep adds one only when the spec names it, and a
#: missing one takes the value listed here. The fast screen does not model them.
TRAINING_ENGINE_PLAN_KEYS: dict[str, list[Any]] = {
    "workload.plan.cp": [1],
    "workload.plan.ep": [1],
    "workload.plan.pipeline_schedule": ["1f1b"],
    "workload.plan.ep_comm_overlap": [False],
}
#: Stack options a training sweep takes as base values (one per sweep, as ``aitco train
#: --elementwise-kernels/--loss-kernel/--host-loop/--gemm-level``) and their allowed values.
TRAINING_STACK_OPTIONS: dict[str, tuple[str, ...]] = {
    "elementwise_kernels": ELEMENTWISE_KERNELS,
    "loss_kernel": LOSS_KERNELS,
    "host_loop": HOST_LOOPS,
    "gemm_level": GEMM_LEVELS,
}
#: Pipeline schedules of a training sweep, coded by index (as ``aitco train
#: --pipeline-schedule``).
PIPELINE_SCHEDULES = ("1f1b", "dualpipe")
TRAINING_METRICS: tuple[str, ...] = (
    "step_time_s",
    "tokens_per_s",
    "mfu",
    "memory_per_gpu_gb",
    "wall_clock_h",
    "gpu_hours",
    "price_usd_per_gpu_h",
    "total_usd",
    "dp",
    "total_gpus",
    "gpus_billed",
    "instances",
    "offer_code",
)
RECOMPUTE = ("none", "selective", "full")


def chunk_len(v: dict[str, np.ndarray]) -> int:
    """Count the configurations of a chunk (constant keys may be length-1 arrays)."""
    return max(int(np.shape(a)[0]) if np.ndim(a) else 1 for a in v.values())


def gather(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows of a per-configuration array; length-1 (constant) arrays are kept as they are."""
    a = np.asarray(a)
    return a if a.ndim == 0 or a.shape[0] == 1 else a[rows]


# ----------------------------------------------------------------------------- serving
SERVING_KEYS: dict[str, list[Any]] = {
    "option.hardware": [],
    "option.gpus": [1],
    "option.pricing": ["on_demand"],
    "option.region": [None],
    "workload.model": [],
    "workload.precision": ["bf16"],
    "workload.kv_precision": [None],
    "workload.batch": [1, 8, 32, 128],
    "workload.input_tokens": [],
    "workload.output_tokens": [],
}
#: Service fields of the engine serving evaluator (the same fields as ``aitco infer`` and a
#: scenario's inference workload). Optional: a sweep adds one only when the spec names it, and
#: a missing one takes the value listed here (the service as it was).
SERVICE_KEYS: dict[str, Any] = {
    "workload.prefix_cache_hit_rate": 0.0,
    "workload.scheduler_steps": 1,
    "workload.max_batched_tokens": None,
    "workload.ep": 1,
    "workload.mig": None,
    "workload.time_slice": 1,
    "workload.disaggregate": None,
    "workload.load_profile": None,
    "workload.autoscale": None,
}
#: Service keys whose values are text: coded by their index in the sweep's list of values.
SERVICE_TEXT_KEYS = (
    "workload.mig",
    "workload.disaggregate",
    "workload.load_profile",
    "workload.autoscale",
)
SERVING_METRICS: tuple[str, ...] = (
    "ttft_s",
    "tpot_s",
    "e2e_latency_s",
    "output_tokens_per_s",
    "requests_per_s",
    "replicas",
    "total_gpus",
    "usd_per_h",
    "usd_per_million_output_tokens",
    "total_usd",
    "price_usd_per_gpu_h",
    "memory_per_gpu_gb",
    "gpus_billed",
    "instances",
    "offer_code",
)


def describe_reasons(counts: dict[int, int]) -> dict[str, int]:
    """Turn per-bit counts into ``{reason text: count}``."""
    return {REASONS[k]: int(c) for k, c in sorted(counts.items()) if c}
