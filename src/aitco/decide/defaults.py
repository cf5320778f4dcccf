"""The built-in default scenarios of ``aitco compare`` (no argument).

Training
    Pre-training a 1.02B-parameter GPT-2-style decoder (catalog id ``gpt2-1.02b``; sequence 2,048,
    global batch 256 sequences = 524,288 tokens) on 20 tokens per parameter, the compute-optimal
    ratio of Hoffmann et al. 2022 (Chinchilla): 20 x 1.02e9 = 2.04e10 tokens. Clusters of 64
    A100-SXM4-80GB, 32 H100-SXM5-80GB and 48 L40S, each rented on-demand, on spot, and owned.
    Rented options take AWS offers so that every option's price and spot-interruption rate come
    from one provider (drop ``provider`` in a scenario file to take the cheapest offer instead).

Inference
    Serving Llama 3 8B (bf16) at 10 requests/s of 512 input / 256 output tokens under a 500 ms
    TTFT and 50 ms TPOT objective for one month, on one H100 NVL, A100, L40S or L4 per replica
    (scaled up by the inference engine until the SLO is met), rented on-demand, plus an owned
    L40S and a 1-year committed H100. Both H100 options (H100 NVL) take one Azure 1-GPU instance
    type (NC40ads H100 v5), so that on-demand and committed come from one provider. Rented
    services pay whole instances; the committed term is billed for the whole year.

References
----------
.. [1] J. Hoffmann et al., "Training Compute-Optimal Large Language Models", arXiv:2203.15556,
   2022 (about 20 training tokens per parameter).
"""

from __future__ import annotations

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
#: AWS sells L40S spot on g6e.24xlarge (4 GPUs, EFA) but not on g6e.48xlarge: the rented L40S
#: options take that one instance type for on-demand and spot alike.
L40S_TRAINING_OFFER = "aws-g6e.24xlarge"
#: The H100 service options take one 1-GPU instance type that sells both on-demand and a 1-year
#: commitment (Azure NC40ads H100 v5, an H100 NVL), so both are priced by one provider.
H100_SERVICE_HARDWARE = "h100-nvl-94gb"
H100_COMMITTED_OFFER = "azure-standard-nc40ads-h100-v5"


def default_training() -> Scenario:
    """Return the default training comparison (module docstring)."""
    options = [
        {
            "name": f"{hw} x{n} {mode}",
            "hardware": hw,
            "gpus": n,
            "pricing": mode,
            **({"provider": "aws"} if mode != "owned" else {}),
            **({"offer": L40S_TRAINING_OFFER} if mode != "owned" and hw == "l40s" else {}),
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
                "name": "pretrain",
                "model": "gpt2-1.02b",
                "tokens": CHINCHILLA_TOKENS_PER_PARAM * DEFAULT_MODEL_PARAMS,
                "seq_len": 2048,
                "global_batch": 256,
                "precision": "bf16",
            },
            "options": options,
        }
    )


def default_inference() -> Scenario:
    """Return the default inference-service comparison (module docstring)."""
    opts = [
        (H100_SERVICE_HARDWARE, "on_demand"),
        ("a100-sxm4-80gb", "on_demand"),
        ("l40s", "on_demand"),
        ("l4", "on_demand"),
        ("l40s", "owned"),
        (H100_SERVICE_HARDWARE, "reserved_1y"),
    ]
    return Scenario.from_dict(
        {
            "name": "llama-3-8b service, 10 req/s, 1 month",
            "workload": {
                "kind": "inference",
                "name": "chat-service",
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
                {
                    "name": f"{hw} {mode}",
                    "hardware": hw,
                    "gpus": 1,
                    "pricing": mode,
                    **({"offer": H100_COMMITTED_OFFER} if hw == H100_SERVICE_HARDWARE else {}),
                }
                for hw, mode in opts
            ],
            # request/response logs kept 90 days for audit (about 4 KB per request, 10 req/s)
            "compliance": {"gb_per_day": 3.456, "retention_days": 90, "storage_tier": "s3-ia"},
        }
    )


def default_scenarios() -> list[Scenario]:
    """Return both default scenarios: training, then inference."""
    return [default_training(), default_inference()]
