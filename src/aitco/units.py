"""Named constants and unit conversions used everywhere in aitco.

Nothing else lives here: every magic number in a formula is one of these names, or a catalog
value with a source. Decimal prefixes are SI (``GIGA = 1e9``); binary sizes use the ``*IB``
names (``GIB = 2**30``).
"""

from __future__ import annotations

KILO = 1e3
MEGA = 1e6
GIGA = 1e9
TERA = 1e12
PETA = 1e15

KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40

BITS_PER_BYTE = 8

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
SECONDS_PER_DAY = SECONDS_PER_HOUR * HOURS_PER_DAY
DAYS_PER_YEAR = 365.25
HOURS_PER_YEAR = HOURS_PER_DAY * DAYS_PER_YEAR
MONTHS_PER_YEAR = 12
HOURS_PER_MONTH = HOURS_PER_YEAR / MONTHS_PER_YEAR
DAYS_PER_MONTH = DAYS_PER_YEAR / MONTHS_PER_YEAR
SECONDS_PER_MONTH = HOURS_PER_MONTH * SECONDS_PER_HOUR
#: Milliseconds and microseconds per second: the CLI edge and log parsers meet ms and us; the
#: models and JSON keys use seconds.
MS_PER_S = 1e3
US_PER_S = 1e6
#: Percent per unit fraction (tools print percent; aitco keys hold fractions 0-1).
PERCENT = 100.0

WATTS_PER_KILOWATT = 1e3
KWH_PER_MWH = 1e3
#: Joules per kilowatt-hour (1 kW x 3600 s).
J_PER_KWH = WATTS_PER_KILOWATT * SECONDS_PER_HOUR
#: Watt-hours per megawatt-hour.
WH_PER_MWH = WATTS_PER_KILOWATT * KWH_PER_MWH
KG_PER_TONNE = 1e3
GRAMS_PER_KG = 1e3

#: Bytes per element of each numeric data type used by the models.
BYTES_PER_DTYPE: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
    "fp6": 0.75,
}

#: Data types understood by the CLI and the models.
DTYPES: tuple[str, ...] = tuple(BYTES_PER_DTYPE)

#: Block-scaled ("microscaling") number formats: element data type (whose dense peak the
#: tensor cores run them at), elements sharing one scale, and bytes of that scale. MX formats
#: (OCP Microscaling Formats Specification v1.0, 2023): an 8-bit power-of-two (E8M0) scale per
#: 32 elements. NVFP4 (arXiv:2509.25149; NVIDIA Blackwell): an FP8 E4M3 scale per 16 E2M1
#: elements plus one FP32 scale per tensor (negligible, not counted).
BLOCK_SCALED_FORMATS: dict[str, tuple[str, int, float]] = {
    "mxfp8": ("fp8", 32, 1.0),
    "mxfp6": ("fp6", 32, 1.0),
    "mxfp4": ("fp4", 32, 1.0),
    "nvfp4": ("fp4", 16, 1.0),
}


def gb_to_bytes(gb: float) -> float:
    """Convert decimal gigabytes to bytes. [GB] -> [B]."""
    return gb * GIGA


def bytes_to_gb(n_bytes: float) -> float:
    """Convert bytes to decimal gigabytes. [B] -> [GB]."""
    return n_bytes / GIGA


def gbit_to_gbyte(gbit_s: float) -> float:
    """Convert a link rate in Gbit/s to GB/s. [Gbit/s] -> [GB/s]."""
    return gbit_s / BITS_PER_BYTE


def ms_to_s(ms: float) -> float:
    """Convert milliseconds to seconds (the CLI edge and logs meet ms). [ms] -> [s]."""
    return ms / MS_PER_S


def s_to_ms(s: float) -> float:
    """Convert seconds to milliseconds, for an interface that takes ms. [s] -> [ms]."""
    return s * MS_PER_S


def optional_ms_to_s(ms: float | None) -> float | None:
    """:func:`ms_to_s`, passing ``None`` (an unset limit) through. [ms] -> [s]."""
    return None if ms is None else ms_to_s(ms)


def optional_s_to_ms(s: float | None) -> float | None:
    """:func:`s_to_ms`, passing ``None`` (an unset limit) through. [s] -> [ms]."""
    return None if s is None else s_to_ms(s)


#: Units that telemetry tools print (nvidia-smi ``[unit]`` headers, the DCGM units line), each
#: with the SI key suffix and the factor to SI: percent -> fraction, MiB -> bytes, MHz -> Hz,
#: mJ -> J. Temperatures stay in degrees Celsius (``_c``); other units are left unconverted.
PRINTED_UNITS_TO_SI: dict[str, tuple[str, float]] = {
    "%": ("fraction", 1.0 / PERCENT),
    "W": ("w", 1.0),
    "mW": ("w", 1.0 / KILO),
    "J": ("j", 1.0),
    "mJ": ("j", 1.0 / KILO),
    "B": ("bytes", 1.0),
    "KiB": ("bytes", float(KIB)),
    "MiB": ("bytes", float(MIB)),
    "GiB": ("bytes", float(GIB)),
    "MHz": ("hz", MEGA),
    "C": ("c", 1.0),
    "s": ("s", 1.0),
    "ms": ("s", 1.0 / MS_PER_S),
    "us": ("s", 1.0 / US_PER_S),
}


def printed_unit_to_si(unit: str) -> tuple[str, float] | None:
    """SI key suffix and factor for a unit as a tool prints it, or None when not known.

    Examples
    --------
    >>> printed_unit_to_si("MiB")
    ('bytes', 1048576.0)
    >>> printed_unit_to_si("%")
    ('fraction', 0.01)
    >>> printed_unit_to_si("furlongs") is None
    True
    """
    return PRINTED_UNITS_TO_SI.get(unit.strip())
