"""Vectorised evaluators of sweep configurations: hardware/price tables and array models.

A sweep turns every configuration into integer *codes* (one per swept key) and hands whole
chunks of codes to an evaluator. The evaluator gathers per-configuration inputs from small lookup
tables (hardware specs per accelerator, prices per accelerator x pricing mode x region, model
shapes per model) with numpy fancy indexing and evaluates the performance and cost formulas on
the arrays at once: there is no Python loop per configuration.

The engine-backed evaluators (:class:`EngineTrainingEvaluator`, :class:`EngineServingEvaluator`,
the default) give what ``aitco train`` / ``aitco infer`` give for each plan. The ``fast`` screens
(:class:`TrainingEvaluator`, :class:`ServingEvaluator`) take memory, FLOPs, KV bytes and
feasibility from the same engine relations and screen only the time (a roofline with alpha-beta
collectives; the metrics it touches are :data:`SCREENED_METRICS`), for ranking millions of
plans before the winners are re-estimated with the engines. Any object with ``keys``,
``metrics`` and ``evaluate(codes) -> dict`` can be plugged in instead (see :class:`Evaluator`).

The package splits into :mod:`~aitco.decide.evaluators.base` (the protocol, keys, metrics and
reasons), :mod:`~aitco.decide.evaluators.tables` (hardware, price and model tables),
:mod:`~aitco.decide.evaluators.costing` (the dollars: the items of ``aitco compare`` over
arrays), :mod:`~aitco.decide.evaluators.screen` (the ``fast`` screening models) and
:mod:`~aitco.decide.evaluators.engine` (the engine-backed evaluators).
"""

from __future__ import annotations

from aitco.decide.evaluators.base import (
    DEFAULT_SERVICE_MONTHS,
    PIPELINE_SCHEDULES,
    PRICING_MODES,
    REASONS,
    RECOMPUTE,
    SERVICE_KEYS,
    SERVICE_TEXT_KEYS,
    SERVING_KEYS,
    SERVING_METRICS,
    TRAINING_ENGINE_PLAN_KEYS,
    TRAINING_KEYS,
    TRAINING_METRICS,
    TRAINING_STACK_OPTIONS,
    Evaluator,
    describe_reasons,
)
from aitco.decide.evaluators.costing import ItemPricing
from aitco.decide.evaluators.engine import (
    EngineServingEvaluator,
    EngineTrainingEvaluator,
)
from aitco.decide.evaluators.screen import (
    SCREENED_METRICS,
    TP_ALLREDUCES_PER_LAYER,
    ServingEvaluator,
    TrainingEvaluator,
)
from aitco.decide.evaluators.tables import (
    HardwareTable,
    ModelTable,
    hardware_table,
    model_table,
)
from aitco.units import DTYPES

__all__ = [
    "DEFAULT_SERVICE_MONTHS",
    "DTYPES",
    "PIPELINE_SCHEDULES",
    "PRICING_MODES",
    "REASONS",
    "RECOMPUTE",
    "SCREENED_METRICS",
    "SERVICE_KEYS",
    "SERVICE_TEXT_KEYS",
    "SERVING_KEYS",
    "SERVING_METRICS",
    "TP_ALLREDUCES_PER_LAYER",
    "TRAINING_ENGINE_PLAN_KEYS",
    "TRAINING_KEYS",
    "TRAINING_METRICS",
    "TRAINING_STACK_OPTIONS",
    "EngineServingEvaluator",
    "EngineTrainingEvaluator",
    "Evaluator",
    "HardwareTable",
    "ItemPricing",
    "ModelTable",
    "ServingEvaluator",
    "TrainingEvaluator",
    "describe_reasons",
    "hardware_table",
    "model_table",
]
