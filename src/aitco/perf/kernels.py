"""Kernel shape laws: how far a GEMM or a FlashAttention kernel gets from its peak by shape.

Small pure functions, one relation each, fitted to **published kernel benchmarks** (not to
end-to-end training rows): the GEMM laws to OpenXLA's measured matmul tables for H100 and B200,
the attention law to the FlashAttention-3 paper's kernel figures (FA2, FA3 and cuDNN on H100).
The data and the fits are in :mod:`aitco.validation.kernels`; the fitted constants are the
``gemm_tile_fixed_s``, ``gemm_latency_s`` and ``attention_block_fixed_s`` fields of
:class:`aitco.perf.efficiency.EfficiencyParams` (fixed times; the half lengths of the laws
follow from them and each part's SM count and peak: :func:`gemm_k_half`,
:func:`attention_seq_half`).

The training model (:mod:`aitco.perf.training_model`) multiplies its fitted per-family GEMM and
attention fractions (the level a large kernel reaches inside a training step) by these shape
factors (how a kernel of this shape compares with a large one), so the level stays an
end-to-end fit and the shape comes from the kernel tables.

References
----------
.. [1] NVIDIA, "Matrix Multiplication Background User's Guide", Deep Learning Performance
   documentation, sections "Tile Quantization" and "Wave Quantization",
   https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/.
.. [2] OpenXLA, ``xla/service/gpu/model/matmul_interpolator_data.h`` (sm_90) and
   ``default_matmul_perf_table.txtpb`` (sm_100_B200): measured GEMM FLOP/s by (b, m, n, k).
.. [3] T. Dao, "FlashAttention-2", arXiv:2307.08691, 2023 (block sizes 128, Algorithm 1).
.. [4] J. Shah et al., "FlashAttention-3", arXiv:2407.08608, 2024, Figs. 5-6.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]

#: Output tiles cuBLAS/CUTLASS pick among for large GEMMs (rows x columns of C that one SM
#: computes); the library's heuristic takes the one that wastes least [1].
GEMM_TILES: tuple[tuple[int, int], ...] = ((128, 256), (256, 128), (128, 128))

#: Output-tile size (elements) the fixed per-tile time is expressed against: cuBLAS's usual
#: 128 x 256 tile for large bf16 GEMMs on Ampere and Hopper [1].
REFERENCE_TILE_ELEMENTS = 128.0 * 256.0

#: FLOPs per key and query row of the attention core in the forward pass: 2 d for QK^T and
#: 2 d for PV (d = head dim) [3].
ATTENTION_FLOPS_PER_KEY_PER_HEAD_DIM = 4.0

#: Query/key block of FlashAttention-2/3's forward kernels for head dim 128 [3], [4]: with a
#: causal mask the blocks on the diagonal are computed whole but only half used.
FLASH_BLOCK_TOKENS = 128.0

#: FlashAttention kernel generation a training stack runs by default, by accelerator family:
#: FlashAttention-2 (PyTorch's SDPA flash backend, the FlashAttention-2 package) on Ampere and
#: Hopper - FlashAttention-3 is an opt-in package for Hopper, not what SDPA runs [4] - and
#: cuDNN's fused attention on Blackwell (Transformer Engine's backend there, FA2/FA3 having no
#: sm_100 kernels). Families absent use :data:`DEFAULT_FLASH_KERNEL`.
FLASH_KERNEL_BY_FAMILY: dict[str, str] = {
    "nvidia-blackwell": "cudnn",
}
DEFAULT_FLASH_KERNEL = "fa2"


def gemm_wave_utilization(m: Any, n: Any, compute_units: float, batch: Any = 1.0) -> F64:
    r"""Share of the SMs' time that the output tiles of a (batched) ``m x n`` GEMM keep busy.

    Parameters
    ----------
    m, n : array_like
        Rows and columns of the GEMM output. [elements]
    compute_units : float
        SMs (NVIDIA) / CUs (AMD) the tiles are scheduled on; 0 = unknown (tile quantization
        only). [count]
    batch : array_like
        Independent GEMMs of this shape in one launch. [count]

    Returns
    -------
    ndarray
        :math:`\max_{t} \frac{b m n}{\lceil T_t / c \rceil c\, t_m t_n}` with
        :math:`T_t = b \lceil m/t_m \rceil \lceil n/t_n \rceil` tiles of shape
        :math:`t_m \times t_n` (:data:`GEMM_TILES`) and :math:`c` compute units: tile
        quantization (partial edge tiles) times wave quantization (a last, partial wave) [1].
        [0-1]

    Examples
    --------
    >>> round(float(gemm_wave_utilization(8192, 8192, 132)), 3)  # 2048 tiles, 16 waves
    0.97
    """
    m = np.asarray(m, dtype=float)
    n = np.asarray(n, dtype=float)
    b = np.asarray(batch, dtype=float)
    best = np.zeros(np.broadcast(m, n, b).shape)
    for tm, tn in GEMM_TILES:
        tiles = b * np.ceil(m / tm) * np.ceil(n / tn)
        slots = np.ceil(tiles / compute_units) * compute_units if compute_units > 0 else tiles
        best = np.maximum(best, b * m * n / (slots * (tm * tn)))
    return best


def gemm_k_efficiency(k: Any, k_half: float) -> F64:
    r"""Share of a tile's time spent in its K loop: :math:`K / (K + K_{1/2})`.

    Each output tile fills its pipeline and writes its result once (prologue and epilogue)
    whatever the reduction length :math:`K`, so short-K GEMMs (narrow models, row-parallel
    GEMMs under large TP) reach less of the peak. :math:`K_{1/2}` is ``gemm_k_half``. [0-1]
    """
    k = np.asarray(k, dtype=float)
    return k / (k + k_half)


def gemm_k_half(tile_fixed_s: float, peak_flops: float, compute_units: float) -> float:
    r"""Reduction length at which a tile spends half its time outside its K loop [elements].

    A tile of :math:`t_m t_n` outputs (:data:`REFERENCE_TILE_ELEMENTS`) on one SM of rate
    :math:`R/c` spends :math:`2 t_m t_n K c / R` in its K loop and a fixed
    :math:`t_f` (``gemm_tile_fixed_s``: pipeline fill, epilogue, write-back) around it, so
    :math:`K_{1/2} = t_f (R/c) / (2 t_m t_n)`: faster SMs (Hopper, Blackwell, FP8) need longer
    K to hide the same fixed time. 0 where the SM count is unknown (no short-K term).

    Examples
    --------
    >>> round(gemm_k_half(1.1e-6, 989.4e12, 132), 1)  # H100 bf16
    125.8
    """
    if compute_units <= 0:
        return 0.0
    return tile_fixed_s * (peak_flops / compute_units) / (2.0 * REFERENCE_TILE_ELEMENTS)


def attention_seq_half(
    block_fixed_s: float,
    peak_flops: float,
    compute_units: float,
    head_dim: float,
    block_tokens: float = FLASH_BLOCK_TOKENS,
) -> float:
    r"""Keys per query at which FlashAttention reaches half its long-sequence rate [tokens].

    A block of :math:`B` queries costs a fixed :math:`t_f` (``attention_block_fixed_s``: load
    Q, softmax bookkeeping, write O) plus :math:`4 B d` FLOPs per key at the SM's rate
    :math:`R/c`, so :math:`s_{1/2} = t_f (R/c) / (4 B d)`: larger for faster SMs and smaller head
    dims. 0 where the SM count is unknown.
    """
    if compute_units <= 0:
        return 0.0
    per_key = ATTENTION_FLOPS_PER_KEY_PER_HEAD_DIM * block_tokens * head_dim
    return block_fixed_s * (peak_flops / compute_units) / per_key


def gemm_shape_efficiency(
    m: Any, n: Any, k: Any, compute_units: float, k_half: float, batch: Any = 1.0
) -> F64:
    """Throughput of an ``(m, n, k)`` GEMM relative to a large one (wave x short-K), 0-1."""
    return gemm_wave_utilization(m, n, compute_units, batch) * gemm_k_efficiency(k, k_half)


def gemm_time_s(
    m: Any,
    n: Any,
    k: Any,
    rate_flops: Any,
    compute_units: float,
    k_half: float,
    latency_s: float,
    batch: Any = 1.0,
) -> F64:
    r"""Time of one (batched) GEMM launch [s].

    :math:`t = t_0 + 2 b m n k / (R\, e_{shape})`: a fixed kernel latency :math:`t_0`
    (``gemm_latency_s``: launch, prologue, the last tile's drain) plus the FLOPs at the large-GEMM
    rate :math:`R` (peak x achievable fraction) times :func:`gemm_shape_efficiency`.
    """
    m = np.asarray(m, dtype=float)
    n = np.asarray(n, dtype=float)
    k = np.asarray(k, dtype=float)
    b = np.asarray(batch, dtype=float)
    eff = gemm_shape_efficiency(m, n, k, compute_units, k_half, b)
    return latency_s + 2.0 * b * m * n * k / (rate_flops * eff)


def flash_kernel_for(family: str) -> str:
    """FlashAttention kernel generation (``fa2``/``fa3``/``cudnn``) used on ``family``."""
    return FLASH_KERNEL_BY_FAMILY.get(family, DEFAULT_FLASH_KERNEL)


def attention_seq_efficiency(
    seq_len: Any, causal: bool, seq_half: float, block_tokens: float = FLASH_BLOCK_TOKENS
) -> F64:
    r"""FlashAttention throughput relative to very long sequences (0-1).

    Each block of queries loads Q, keeps its running softmax statistics and writes O once,
    however many key blocks it loops over [3], so short sequences amortise that fixed work
    over fewer keys: :math:`s_k / (s_k + s_{1/2})` with :math:`s_k` the keys a query attends on
    average (:math:`s`, causal :math:`s/2`) and :math:`s_{1/2}` = ``attention_seq_half``. A
    causal mask also computes the diagonal blocks whole: useful over computed FLOPs
    :math:`s / (s + B)` with :math:`B` = :data:`FLASH_BLOCK_TOKENS`.

    Examples
    --------
    >>> round(float(attention_seq_efficiency(4096, True, 150.0)), 3)
    0.904
    """
    s = np.asarray(seq_len, dtype=float)
    keys = s / 2.0 if causal else s
    out = keys / (keys + seq_half)
    return out * (s / (s + block_tokens)) if causal else out
