"""Calibration profiles: efficiency parameters fitted to one user's cluster, as YAML.

A :class:`CalibrationProfile` is what ``aitco calibrate`` and ``aitco probe`` write and what
``aitco train|infer|tco --calibration FILE`` read. Its ``efficiency`` field is a full
:class:`aitco.perf.efficiency.EfficiencyParams`; parameters that were not fitted keep the global
defaults, and ``fitted`` lists the ones that were.

The YAML is versioned (``profile_version``) so later versions can read older files. Fields of
``efficiency`` absent from an older file take the defaults of the running version.

Examples
--------
>>> p = CalibrationProfile(accelerator="h100-sxm5-80gb")
>>> p.efficiency.hbm == DEFAULT_EFFICIENCY.hbm
True
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aitco.errors import InputError
from aitco.fileio import parse_yaml, read_text, write_atomic
from aitco.limits import check_tree
from aitco.perf.efficiency import DEFAULT_EFFICIENCY, EfficiencyParams

#: Version of the profile file layout written by this module.
PROFILE_VERSION = 1
#: Range of a per-family GEMM fraction of the dense peak (the bounds of the other fractions in
#: :class:`~aitco.perf.efficiency.EfficiencyParams`).
GEMM_FRACTION_RANGE = (0.01, 1.0)
#: Largest per-engine serving overhead per step accepted from a profile. [s]
MAX_SERVING_OVERHEAD_S = 1.0
#: Upper bound of a per-engine request path (the bound of the global ``request_path_s``). [s]
MAX_REQUEST_PATH_S = 0.5
#: Upper bound of a FlashAttention query block's fixed time per kernel (the bound of
#: ``gemm_tile_fixed_s``; the fitted values are 1.3-2.1 us). [s]
MAX_ATTENTION_BLOCK_FIXED_S = 1e-4


class ParamFit(BaseModel):
    """How one efficiency parameter was fitted.

    Attributes
    ----------
    value : float
        Fitted value. [0-1]
    default : float
        The global default it replaces. [0-1]
    n_observations : int
        Observations that constrained it.
    residual_rms : float
        Root-mean-square relative residual of those observations after the fit. [fraction]
    stderr : float, optional
        Standard error of the estimate, where the fit provides one. [0-1]
    """

    model_config = ConfigDict(extra="forbid")

    value: float
    default: float
    n_observations: int = 0
    residual_rms: float = 0.0
    stderr: float | None = None


class ProbeResult(BaseModel):
    """Achievable rates measured by ``aitco probe`` on one device.

    Attributes
    ----------
    device : str
        Device name as reported by the backend (``"NVIDIA H200"``, ``"cpu"``).
    backend : str
        ``"torch-cuda"``, ``"torch-cpu"`` or ``"numpy"``.
    matmul_tflops : dict of str to float
        Best achieved matmul throughput per data type. [TFLOP/s]
    memory_bandwidth_gb_s : float
        Achieved copy bandwidth (read + write bytes over time). [GB/s]
    matmul_size : int
        Square matrix size used for the matmuls.
    copy_bytes : int
        Size of the buffer copied for the bandwidth test. [B]
    """

    model_config = ConfigDict(extra="forbid")

    device: str
    backend: str
    matmul_tflops: dict[str, float] = Field(default_factory=dict)
    memory_bandwidth_gb_s: float | None = None
    matmul_size: int | None = None
    copy_bytes: int | None = None
    gemm_fraction: dict[str, float] = Field(
        default_factory=dict,
        description="Achieved / catalog peak per data type, when the peak is known.",
    )
    hbm_fraction: float | None = None


class CalibrationProfile(BaseModel):
    """Efficiency parameters fitted to a user's own runs, with where they came from.

    Attributes
    ----------
    profile_version : int
        Layout version of the file.
    created : str
        ISO-8601 UTC time the profile was written.
    accelerator : str, optional
        Catalog id of the accelerator the observations came from.
    family : str, optional
        Its efficiency family (``"nvidia-hopper"``).
    efficiency : EfficiencyParams
        The full parameter set to use (fitted fields replaced, the rest default).
    fitted : dict of str to ParamFit
        Which parameters were fitted and how well.
    measurements : dict of str to float
        Headline measured values (``bus_bandwidth_plateau_gb_s``, ``mfu``, ...).
    sources : list of str
        Files the observations came from.
    probe : ProbeResult, optional
        Micro-benchmark results from ``aitco probe``.
    notes : list of str
        Caveats (e.g. parameters left at defaults and why).
    """

    model_config = ConfigDict(extra="forbid")

    profile_version: int = PROFILE_VERSION
    created: str = Field(
        default_factory=lambda: dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    )
    accelerator: str | None = None
    family: str | None = None
    efficiency: EfficiencyParams = DEFAULT_EFFICIENCY
    fitted: dict[str, ParamFit] = Field(default_factory=dict)
    measurements: dict[str, float] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
    probe: ProbeResult | None = None
    notes: list[str] = Field(default_factory=list)

    @field_validator("efficiency", mode="before")
    @classmethod
    def _merge_defaults(cls, v: Any) -> Any:
        """Read a partial ``efficiency`` mapping on top of the defaults (older files)."""
        if isinstance(v, dict):
            return DEFAULT_EFFICIENCY.with_overrides(v)
        return v

    def to_yaml(self) -> str:
        """Serialise to YAML (keys in a stable order)."""
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)

    @classmethod
    def from_yaml(cls, text: str, *, file: str | None = None) -> CalibrationProfile:
        """Parse a profile from YAML text; bad content raises :class:`InputError`."""
        data = parse_yaml(text, file=file)
        if not isinstance(data, dict):
            raise InputError("profile", type(data).__name__, "a YAML mapping", file=file)
        version = data.get("profile_version", PROFILE_VERSION)
        if not isinstance(version, int) or version > PROFILE_VERSION:
            raise InputError(
                "profile_version",
                version,
                f"an integer <= {PROFILE_VERSION}",
                file=file,
                hint="the file was written by a newer aitco",
            )
        check_tree(data, file=file)  # NaN/inf anywhere stops here
        try:
            prof = cls.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise InputError(loc, err.get("input"), err["msg"], file=file) from exc
        _check_ranges(prof.efficiency, file)
        return prof


def _check_ranges(eff: EfficiencyParams, file: str | None) -> None:
    """Range-check the per-family and per-engine maps the EfficiencyParams fields leave open.

    A GEMM fraction of 5.0 would give an MFU of 1.43, and -1 a negative step time: both are
    refused with the field, the value and the range.
    """
    lo, hi = GEMM_FRACTION_RANGE
    bounds = (  # field, lowest, highest, what the values are
        ("gemm", lo, hi, "a fraction of the dense peak"),
        ("training_gemm", lo, hi, "a fraction of the dense peak"),
        ("attention_by_family", lo, hi, "a fraction of the dense peak"),
        ("attention_block_fixed_s", 0, MAX_ATTENTION_BLOCK_FIXED_S, "seconds"),
        ("elementwise_hbm_by_kernels", lo, hi, "a fraction of the HBM bandwidth"),
        ("serving_overhead_by_engine", 0, MAX_SERVING_OVERHEAD_S, "seconds"),
        ("request_path_by_engine", 0, MAX_REQUEST_PATH_S, "seconds"),
    )
    for name, low, high, what in bounds:
        for key, v in getattr(eff, name).items():
            if not low <= v <= high:
                raise InputError(
                    f"efficiency.{name}.{key}", v, f"{what} in [{low}, {high}]", file=file
                )


def load_profile(path: str | Path) -> CalibrationProfile:
    """Read a calibration profile YAML written by ``aitco calibrate`` or ``aitco probe``.

    Parameters
    ----------
    path : str or pathlib.Path
        The YAML file.

    Returns
    -------
    CalibrationProfile
        The profile; ``.efficiency`` is ready to pass to the performance models.

    Raises
    ------
    aitco.errors.InputError
        If the file is missing, is not YAML, or has invalid values.
    """
    p = Path(path)
    text = read_text(p, field="--calibration")  # a regular file, bounded: no FIFO, no /dev/zero
    return CalibrationProfile.from_yaml(text, file=str(p))


def save_profile(profile: CalibrationProfile, path: str | Path, *, field: str = "-o") -> Path:
    """Write ``profile`` as YAML atomically; returns the path written.

    Refused when ``path`` is not a regular file or a new path, or is an input of the running
    command (:func:`aitco.fileio.check_output`).
    """
    p = Path(path)
    write_atomic(p, profile.to_yaml(), field=field)
    return p
