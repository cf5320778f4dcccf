r"""Non-transformer networks (CNNs) on the roofline: latency and throughput per batch size.

A network is described by its work per inference (:class:`aitco.catalog.schema.CnnModel`):
FLOPs, parameters and activation elements. A batch of :math:`B` inputs runs its layers one
kernel each; the batch reads the weights once and writes and reads every activation once.

References
----------
.. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual performance model
   for multicore architectures", Commun. ACM 52(4), 2009 (:mod:`aitco.perf.roofline`).
.. [2] K. He et al., "Deep Residual Learning for Image Recognition", CVPR 2016.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from aitco.catalog.schema import Accelerator, CnnModel
from aitco.errors import InputError
from aitco.perf import roofline
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams
from aitco.perf.inference import resolve_precisions, weight_bytes_per_element
from aitco.perf.power import compute_clock_ratio
from aitco.units import BYTES_PER_DTYPE, GIGA

#: Each activation element is written by its layer and read by the next. [accesses]
ACTIVATION_ACCESSES = 2.0
#: Kernels of a transformer layer in the fitted ``serving_layer_overhead_s`` (its description:
#: "~10 kernels of a layer"); one fused kernel's launch gap is that value over this count.
TRANSFORMER_KERNELS_PER_LAYER = 10.0


def cnn_batch(
    model: CnnModel,
    acc: Accelerator,
    batch: ArrayLike,
    *,
    precision: str = "bf16",
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY,
    gpus: int = 1,
) -> dict[str, Any]:
    r"""Latency and throughput of a CNN at batch sizes ``batch`` on ``gpus`` data-parallel GPUs.

    Parameters
    ----------
    model : CnnModel
        FLOPs, parameters and activations per inference.
    acc : Accelerator
        The device (dense peak of the compute type, HBM bandwidth).
    batch : array_like
        Inputs per forward pass on one GPU. [count]
    precision : str
        Weights and activations type (int8 on int8 tensor cores, as MLPerf submissions run).
    efficiency : EfficiencyParams
        ``gemm_for(family)`` (fraction of the dense peak), ``hbm`` and the launch gap derived
        from ``serving_layer_overhead_s``.
    gpus : int
        Replicas (one per GPU, each at ``batch``).

    Returns
    -------
    dict
        Arrays over ``batch``: ``latency_s``, ``compute_s``, ``memory_s``, ``launch_s``,
        ``inferences_per_s`` (all GPUs), ``flops``, ``bytes_moved``,
        ``arithmetic_intensity_flop_per_byte`` and ``bound`` (``compute`` / ``memory``);
        scalars ``weights_gb``, ``ridge_point_flop_per_byte``, ``compute_precision``.

    Notes
    -----
    .. math::

        F &= B\,f, \qquad Q = P\,w + 2\,B\,A\,a \\
        t(B) &= L\,t_k + \max\!\big(F / (\eta_F \Pi),\; Q / (\eta_M \beta)\big)

    with :math:`f` FLOPs, :math:`P` parameters, :math:`A` activation elements per inference,
    :math:`w, a` bytes per element, :math:`L` weight layers and :math:`t_k` one kernel's launch
    gap. Throughput = :math:`g B / t(B)`.
    """
    b = np.atleast_1d(np.asarray(batch, dtype=np.float64))
    if b.size == 0 or not np.all(np.isfinite(b)) or np.any(b < 1) or np.any(b != np.floor(b)):
        raise InputError("--batch", batch, "whole batch sizes >= 1")
    if gpus < 1:
        raise InputError("--gpus", gpus, "a GPU count >= 1")
    prec = resolve_precisions(acc, precision, None)
    peak = float(acc.peak_tflops[prec.compute]) * compute_clock_ratio(acc)
    w_bytes = weight_bytes_per_element(prec.weights)
    a_bytes = BYTES_PER_DTYPE[prec.compute]
    flops = b * model.flops_per_inference
    moved = (
        model.params * w_bytes
        + ACTIVATION_ACCESSES * b * model.activation_elements_per_inference * a_bytes
    )
    eta_f = efficiency.gemm_for(acc.family, acc.matmul_ceiling(prec.compute))
    compute = roofline.compute_time_s(flops, peak, eta_f)
    memory = roofline.memory_time_s(moved, acc.hbm_bandwidth_gb_s, efficiency.hbm)
    launch = (
        model.weight_layers * efficiency.serving_layer_overhead_s / TRANSFORMER_KERNELS_PER_LAYER
    )
    latency = launch + np.maximum(compute, memory)
    return {
        "batch": b,
        "latency_s": latency,
        "compute_s": compute,
        "memory_s": memory,
        "launch_s": np.full_like(b, launch),
        "inferences_per_s": gpus * b / latency,
        "flops": flops,
        "bytes_moved": moved,
        "arithmetic_intensity_flop_per_byte": roofline.arithmetic_intensity(flops, moved),
        "bound": np.where(compute >= memory, "compute", "memory"),
        "weights_gb": model.params * w_bytes / GIGA,
        "ridge_point_flop_per_byte": float(
            roofline.ridge_point(peak * eta_f, acc.hbm_bandwidth_gb_s * efficiency.hbm)
        ),
        "compute_precision": prec.compute,
        "precision": prec.weights,
    }


__all__ = ["cnn_batch"]
