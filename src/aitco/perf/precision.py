"""Number formats as training and serving run them: element type, bytes, native or emulated.

One table (:data:`TRAIN_FORMATS`) says, for each ``--precision`` of training, which dense peak its
linear-layer GEMMs run at, how many bytes an element takes with its block scales, how many
quantised copies of an operand the three GEMMs of a linear layer (forward, data gradient,
weight gradient) need, and which share of the linear-layer work a published recipe keeps in
16-bit. :func:`resolve_training_format` decides, for one accelerator, whether the format runs
natively (its element type has a dense peak and, for a block-scaled format, the matrix units
list it in ``Accelerator.block_scaled_formats``) or emulated, and what that costs.

Formats
-------
- ``bf16``, ``fp16``, ``fp32``: 16/32-bit mixed precision.
- ``fp8``: per-tensor scaled FP8 (Transformer Engine delayed/current scaling, torchao
  tensorwise): one quantised copy of each operand; the fitted default.
- ``mxfp8``: OCP MX FP8, one E8M0 scale per 32 elements along the reduction dimension, so the
  forward and the weight-gradient GEMMs need a row-wise and a column-wise copy of each operand
  (Transformer Engine MXFP8 recipe; torchao ``mx_formats`` casts along dim 0 and dim 1) [1].
- ``nvfp4``: NVFP4 (E2M1, E4M3 scale per 16), NVIDIA's pretraining recipe: 16x16 2D scaling of
  the weights (one copy for both passes), stochastic rounding of gradients, Random Hadamard
  transforms on the weight-gradient inputs, and about 15% of the linear layers (mostly the last
  ones) kept in BF16 [2].
- ``mxfp4``: MX FP4 (E2M1, E8M0 scale per 32), priced with the same recipe the NVFP4 paper
  compares it under (BF16 share as NVFP4), two copies like MXFP8 [2].
- ``int8``: INT8 GEMMs for forward and both gradients with dynamic row-wise scales; weights stay
  in 16 bit and are quantised every step (torchao ``quantized_training`` int8 mixed
  precision) [3].

Attention (softmax, QK and PV products), embeddings, the LM head and norms stay 16-bit in every
recipe [2], as aitco already prices them; master weights and optimizer states stay FP32.

Emulation
---------
A format whose element type has no dense peak on the part (FP8 on A100, FP4 on H100 or MI300X)
runs *fake-quantised*: operands quantised to the format and dequantised back to 16 bit, the GEMMs
at the 16-bit peak: slower than plain BF16 by the casts, with the format's memory. A block-scaled
format whose element type the part has but whose block scaling it does not (MXFP8 on Hopper,
NVFP4 on CDNA 4) runs its GEMMs at the element peak with the scales applied outside the matrix
units, as DeepSeek-V3's fine-grained FP8 does on Hopper (per-128 scales promoted to FP32 on CUDA
cores) [4]: priced at the element peak, with the scale bytes read.

References
----------
.. [1] OCP Microscaling Formats (MX) Specification v1.0, 2023; NVIDIA Transformer Engine,
   "Using FP8 and FP4 with Transformer Engine" (MXFP8 recipe: row-wise and column-wise copies).
.. [2] NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv:2509.25149, 2025.
.. [3] PyTorch torchao documentation, "Quantized Training" (forward, data-gradient and
   weight-gradient GEMMs quantised; int8 training in ``torchao.prototype.quantized_training``).
.. [4] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, Sec. 3.3.
"""

from __future__ import annotations

from dataclasses import dataclass

from aitco.errors import InputError, PlanError
from aitco.perf.specs import FormatSpec
from aitco.units import BLOCK_SCALED_FORMATS, BYTES_PER_DTYPE

#: 16-bit type the parts of a low-precision recipe that are not quantised run in.
HIGH_PRECISION = "bf16"
#: Share of the linear-layer GEMM work the NVFP4 pretraining recipe keeps in BF16: "about 15%
#: of the linear layers, mostly the last ones" (arXiv:2509.25149, Sec. 4); applied to MXFP4 too,
#: which the paper trains with the same recipe for its comparison.
FP4_TRAINING_BF16_LINEAR_SHARE = 0.15
#: Narrowest element (bytes) whose block scaling software can apply around the matrix units:
#: FP8 with per-block scales promoted to FP32 between tensor-core instructions (DeepSeek-V3,
#: arXiv:2412.19437 Sec. 3.3; Transformer Engine's blockwise FP8 on Hopper). FP4/FP6 blocks of
#: 16-32 elements have no such path: without native block scaling they are emulated.
SOFTWARE_SCALING_MIN_BYTES = 1.0
#: Bytes a per-tensor FP8 weight cache adds per parameter (Transformer Engine keeps an FP8 copy
#: of each weight next to the BF16 one; the issue-3 constant the FP8 rows were fitted with).
FP8_WEIGHT_CACHE_BYTES = 1.0


@dataclass(frozen=True)
class TrainFormat:
    """One training precision as its recipe runs it.

    Attributes
    ----------
    name : str
        The ``--precision`` value.
    element : str
        Data type whose dense peak the quantised GEMMs run at (a ``peak_tflops`` key).
    element_bytes : float
        Bytes of one stored element including its block scale. [B]
    quantized_copies : int
        Quantised copies of each operand the three GEMMs of a linear layer need (0: not
        quantised; 2: 1-D block scales along the reduction dimension need a row-wise and a
        column-wise copy).
    weight_cache_copies : float
        Persistent quantised weight copies kept beside the 16-bit weights (0: quantised on the
        fly each step).
    bf16_linear_share : float
        Share of the linear-layer GEMM work the recipe keeps in BF16. [0-1]
    """

    name: str
    element: str
    element_bytes: float
    quantized_copies: int = 1
    weight_cache_copies: float = 1.0
    bf16_linear_share: float = 0.0

    @property
    def block_scaled(self) -> bool:
        """Whether the format carries block scales (MX, NVFP4)."""
        return self.name in BLOCK_SCALED_FORMATS

    @property
    def quantized(self) -> bool:
        """Whether the linear-layer GEMMs take quantised operands (narrower than 16 bit)."""
        return self.quantized_copies > 0


def _block_bytes(fmt: str) -> float:
    element, block, scale_bytes = BLOCK_SCALED_FORMATS[fmt]
    return BYTES_PER_DTYPE[element] + scale_bytes / block


#: Training precisions (``aitco train --precision``), see the module docstring.
TRAIN_FORMATS: dict[str, TrainFormat] = {
    "bf16": TrainFormat("bf16", "bf16", 2.0, 0, 0.0),
    "fp16": TrainFormat("fp16", "fp16", 2.0, 0, 0.0),
    "fp32": TrainFormat("fp32", "fp32", 4.0, 0, 0.0),
    "fp8": TrainFormat("fp8", "fp8", 1.0, 1, FP8_WEIGHT_CACHE_BYTES),
    "mxfp8": TrainFormat("mxfp8", "fp8", _block_bytes("mxfp8"), 2, 2.0),
    "nvfp4": TrainFormat(
        "nvfp4", "fp4", _block_bytes("nvfp4"), 1, 1.0, FP4_TRAINING_BF16_LINEAR_SHARE
    ),
    "mxfp4": TrainFormat(
        "mxfp4", "fp4", _block_bytes("mxfp4"), 2, 2.0, FP4_TRAINING_BF16_LINEAR_SHARE
    ),
    "int8": TrainFormat("int8", "int8", 1.0, 2, 0.0),
}
#: The training precisions in the order error messages list them.
TRAIN_FORMAT_NAMES: tuple[str, ...] = tuple(TRAIN_FORMATS)


@dataclass(frozen=True)
class ResolvedFormat:
    """A training format on one accelerator.

    Attributes
    ----------
    fmt : TrainFormat
        The format.
    mode : {"native", "scaled-in-software", "emulated", "16-bit"}
        ``native``: the matrix units run the format; ``scaled-in-software``: they run its
        element type but not its block scaling; ``emulated``: fake-quantised, GEMMs at 16 bit;
        ``16-bit``: an unquantised format.
    gemm_dtype : str
        Dense peak the quantised linear-layer GEMMs run at.
    note : str
        Why, in words (shown by ``--explain``), empty for a native 16-bit run.
    """

    fmt: TrainFormat
    mode: str
    gemm_dtype: str
    note: str = ""

    @property
    def low_precision_gemms(self) -> bool:
        """Whether the linear-layer GEMMs run below 16 bit (native or scaled in software)."""
        return self.mode in ("native", "scaled-in-software")

    def cast_bytes_per_element(self) -> float:
        r"""Return the HBM bytes per linear-input element the casts move in one pass [B].

        Native or scaled in software: read 16 bit, write each quantised copy,
        :math:`2 + c\,b`. Emulated (fake quantisation): that, plus reading the copies back
        and writing 16 bit, :math:`2 (2 + c\,b)`. A 16-bit format moves nothing.
        """
        if not self.fmt.quantized:
            return 0.0
        one = BYTES_PER_DTYPE[HIGH_PRECISION] + self.fmt.quantized_copies * self.fmt.element_bytes
        return 2.0 * one if self.mode == "emulated" else one


def train_format(precision: str) -> TrainFormat:
    """Return the :class:`TrainFormat` of ``precision`` (InputError naming the flag if unknown)."""
    fmt = TRAIN_FORMATS.get(precision)
    if fmt is None:
        raise InputError("--precision", precision, f"one of {', '.join(TRAIN_FORMAT_NAMES)}")
    return fmt


def resolve_training_format(acc: FormatSpec, precision: str) -> ResolvedFormat:
    """How ``acc`` runs the training format ``precision``: native, scaled in software or emulated.

    Raises
    ------
    InputError
        An unknown precision.
    PlanError
        A 16/32-bit format the part has no dense peak for and no 16-bit type to compute in.
    """
    fmt = train_format(precision)
    el = fmt.element
    if not fmt.quantized:
        if acc.supports(el):
            return ResolvedFormat(fmt, "16-bit", el)
        raise PlanError(
            "--precision",
            precision,
            f"a data type {acc.id} supports ({', '.join(sorted(acc.peak_tflops))})",
            hint=f"{acc.id} has no dense {precision} peak",
        )
    if acc.supports(el) and (not fmt.block_scaled or precision in acc.block_scaled_formats):
        return ResolvedFormat(fmt, "native", el)
    if acc.supports(el) and BYTES_PER_DTYPE[el] >= SOFTWARE_SCALING_MIN_BYTES:
        return ResolvedFormat(
            fmt, "scaled-in-software", el,
            f"{acc.id} runs {el} GEMMs but not {precision}'s block scaling: scales applied "
            "outside the matrix units (DeepSeek-V3-style fine-grained scaling), GEMMs at the "
            f"{el} peak",
        )  # fmt: skip
    if not acc.supports(HIGH_PRECISION):
        raise PlanError(
            "--precision", precision,
            f"a data type {acc.id} supports ({', '.join(sorted(acc.peak_tflops))})",
            hint=f"{acc.id} has neither a {el} nor a {HIGH_PRECISION} peak",
        )  # fmt: skip
    why = f"no {el} matrix rate" if not acc.supports(el) else f"no native {precision} scaling"
    return ResolvedFormat(
        fmt, "emulated", HIGH_PRECISION,
        f"{acc.id} has {why}: {precision} emulated (operands quantised and "
        f"dequantised to {HIGH_PRECISION}, GEMMs at the {HIGH_PRECISION} peak; slower than "
        f"plain {HIGH_PRECISION} by the casts, with {precision}'s memory)",
    )  # fmt: skip


def blended_linear_peak_tflops(acc: FormatSpec, rf: ResolvedFormat) -> float:
    r"""Return the dense peak the linear GEMMs run at over the recipe's mix [TFLOP/s].

    Notes
    -----
    With a share :math:`h` of the linear work in BF16 (:attr:`TrainFormat.bf16_linear_share`)
    and the rest at the format's GEMM peak :math:`P`: :math:`1 / ((1-h)/P + h/P_{16})`, the
    time-weighted (harmonic) mean. Emulated runs are at the 16-bit peak throughout.
    """
    p = float(acc.peak_tflops[rf.gemm_dtype])
    h = rf.fmt.bf16_linear_share if rf.low_precision_gemms else 0.0
    if h <= 0.0:
        return p
    p16 = float(acc.peak_tflops.get(HIGH_PRECISION, p))
    return 1.0 / ((1.0 - h) / p + h / p16)


def serving_weight_bytes(precision: str) -> float:
    """Return the stored bytes of one serving weight, block scales included [B].

    The DTYPES types by width (``fp4`` is NVFP4's layout: an FP8 scale per 16, and ``int4``
    AWQ/GPTQ's fp16 scale + zero per 128 are added by the caller's group overheads); the block
    formats of :data:`aitco.units.BLOCK_SCALED_FORMATS` with their scale per block.
    """
    if precision in BLOCK_SCALED_FORMATS:
        return _block_bytes(precision)
    if precision not in BYTES_PER_DTYPE:
        names = (*BYTES_PER_DTYPE, *BLOCK_SCALED_FORMATS)
        raise InputError("--precision", precision, f"one of {', '.join(names)}")
    return BYTES_PER_DTYPE[precision]
