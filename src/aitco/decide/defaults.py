"""The built-in default scenarios of ``aitco compare`` (no argument).

Training
    Pre-training a 1.02B-parameter GPT-2-style decoder (catalog id ``gpt2-1.02b``; sequence 2,048,
    global batch 256 sequences = 524,288 tokens) on 20 tokens per parameter, the compute-optimal
    ratio of Hoffmann et al. 2022 (Chinchilla): 20 x 1.02e9 = 2.04e10 tokens. Clusters of 64
    A100-SXM4-80GB, 32 H100-SXM5-80GB and 48 L40S, each rented on-demand, on spot, and owned.
    Rented options take AWS offers so that every option's price and spot-interruption rate come
    from one provider (drop ``provider`` in a scenario file to take the cheapest offer instead).
    No option names an offer: the scenario is what ``examples/default.yaml`` and the web app's
    form hold (hardware, GPUs, pricing, provider), and ties between offers break as
    :mod:`aitco.cost.offers` says.

Inference
    Serving Llama 3 8B (bf16) at 10 requests/s of 512 input / 256 output tokens under a 500 ms
    TTFT and 50 ms TPOT objective for one month, on one H100 NVL, A100, L40S or L4 per replica
    (scaled up by the inference engine until the SLO is met), rented on-demand, plus an owned
    L40S and a 1-year committed H100. Both H100 options (H100 NVL) are priced on the one catalog
    1-GPU instance type that sells it (Azure NC40ads H100 v5), on-demand and committed alike.
    Rented services pay whole instances; the committed term is billed for the whole year.

References
----------
.. [1] J. Hoffmann et al., "Training Compute-Optimal Large Language Models", arXiv:2203.15556,
   2022 (about 20 training tokens per parameter).
"""

from __future__ import annotations

from aitco.cost.pricing import OWNED as OWNED_PRICING
from aitco.decide.scenario import Scenario

#: Chinchilla compute-optimal tokens per parameter (Hoffmann et al. 2022, arXiv:2203.15556).
CHINCHILLA_TOKENS_PER_PARAM = 20.0
#: Parameters of the default model ``gpt2-1.02b`` (its catalog name). [count]
DEFAULT_MODEL_PARAMS = 1.02e9

DEFAULT_TRAINING_CLUSTERS: tuple[tuple[str, int], ...] = (
    ("a100-sxm4-80gb", 64),
    ("h100-sxm5-80gb", 32),
    ("l40s", 48),
)
DEFAULT_TRAINING_MODES: tuple[str, ...] = ("on_demand", "spot", "owned")
#: The H100 of the service options: the H100 NVL, sold as one GPU on-demand and committed for a
#: year (Azure NC40ads H100 v5), so both terms come from one instance type.
H100_SERVICE_HARDWARE = "h100-nvl-94gb"
#: Provider of the rented training options (one provider: prices and spot interruption rates).
TRAINING_PROVIDER = "aws"


def default_training() -> Scenario:
    """Return the default training comparison (module docstring)."""
    options = [
        {
            "hardware": hw,
            "gpus": n,
            "pricing": mode,
            **({"provider": TRAINING_PROVIDER} if mode not in OWNED_PRICING else {}),
        }
        for hw, n in DEFAULT_TRAINING_CLUSTERS
        for mode in DEFAULT_TRAINING_MODES
    ]
    return Scenario.from_dict(
        {
            "name": "gpt2-1.02b pre-training, Chinchilla tokens",
            "description": "1.02B GPT-2-style decoder, 20 tokens/param (Hoffmann et al. 2022)",
            "workload": {
                "kind": "training",
                "model": "gpt2-1.02b",
                "tokens": CHINCHILLA_TOKENS_PER_PARAM * DEFAULT_MODEL_PARAMS,
                "seq_len": 2048,
                "global_batch": 256,
                "precision": "bf16",
            },
            "options": options,
        }
    )


#: Service options of the default inference comparison: (hardware, pricing modes), one GPU per
#: replica each, grouped by hardware as the web form's rows are.
DEFAULT_SERVICE_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (H100_SERVICE_HARDWARE, ("on_demand", "reserved_1y")),
    ("a100-sxm4-80gb", ("on_demand",)),
    ("l40s", ("on_demand", "owned")),
    ("l4", ("on_demand",)),
)


def default_inference() -> Scenario:
    """Return the default inference-service comparison (module docstring)."""
    return Scenario.from_dict(
        {
            "name": "llama-3-8b service, 10 req/s, 1 month",
            "workload": {
                "kind": "inference",
                "model": "llama-3-8b",
                "precision": "bf16",
                "input_tokens": 512,
                "output_tokens": 256,
                "qps": 10,
                "slo_ttft_ms": 500,
                "slo_tpot_ms": 50,
                "months": 1,
            },
            "options": [
                {"hardware": hw, "gpus": 1, "pricing": mode}
                for hw, modes in DEFAULT_SERVICE_OPTIONS
                for mode in modes
            ],
            # request/response logs kept 90 days for audit (about 4 KB per request, 10 req/s)
            "compliance": {"gb_per_day": 3.456, "retention_days": 90, "storage_tier": "s3-ia"},
        }
    )


def default_scenarios() -> list[Scenario]:
    """Return both default scenarios: training, then inference."""
    return [default_training(), default_inference()]
