"""Exceptions raised for bad input, bad catalog data and unreadable logs.

Every user-facing error names *where* (file and field path), *what* (the value) and *what was
expected*, so that the CLI can print one clear line and exit with status 2 instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

#: Longest value representation an error message shows (a whole scenario is not "the value").
MAX_VALUE_CHARS = 120


def _shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`MAX_VALUE_CHARS` (mappings and lists by their size)."""
    if isinstance(value, dict):
        return f"<mapping of {len(value)} keys>"
    text = repr(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


class AitcoError(Exception):
    """Base class of every error aitco raises on purpose."""

    exit_code = 2


class EnvironmentFailure(AitcoError):
    """The machine, not the input, failed: disk full, out of memory, a service that does not answer.

    Printed as one ``error:`` line like every :class:`AitcoError`, with exit status 1.
    """

    exit_code = 1


class InputError(AitcoError):
    """A value given by the user is invalid.

    Parameters
    ----------
    field : str
        Dotted path of the offending field (``"workload.seq_len"``, ``"--gpus"``).
    value : Any
        The value that was given.
    expected : str
        What would have been accepted.
    file : str, optional
        The file the value came from, when there is one.
    hint : str, optional
        A suggestion, e.g. the closest valid ids.
    """

    def __init__(
        self,
        field: str,
        value: Any,
        expected: str,
        *,
        file: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.field = field
        self.value = value
        self.expected = expected
        self.file = file
        self.hint = hint
        where = f"{file}: " if file else ""
        msg = f"{where}{field} = {_shown(value)}: expected {expected}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class CatalogError(InputError):
    """A catalog entry (built-in or user overlay) is invalid or unknown."""


class UnknownIdError(CatalogError):
    """An id that is not in the catalog; the message lists the closest valid ids."""

    def __init__(self, kind: str, value: str, valid: Iterable[str], *, field: str = "id") -> None:
        valid_list = sorted(valid)
        close = difflib.get_close_matches(value, valid_list, n=3, cutoff=0.3)
        if not close:
            close = [v for v in valid_list if value.lower() in v][:3]
        hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else None
        shown = ", ".join(valid_list[:12]) + (", ..." if len(valid_list) > 12 else "")
        super().__init__(
            field,
            value,
            f"a known {kind} id (valid: {shown})",
            hint=hint,
        )
        self.kind = kind
        self.close_matches = close


class PlanError(InputError):
    """A parallel plan or configuration that is impossible (names the constraint)."""


class InfeasiblePlan(PlanError):
    """A plan the hardware cannot run: memory or a link the system lacks.

    It does not fit in device or host memory, or needs a link the system lacks. The one
    feasibility verdict of aitco: ``aitco infer`` refuses with it, ``compare`` marks the option
    infeasible with its reason (no cost, no throughput).

    ``values``: the figures behind the verdict, by glossary name (``memory_per_gpu_gb``,
    ``memory_capacity_gb``, ``over_by_gb``), for the option that reports it.
    """

    def __init__(
        self,
        field: str,
        value: Any,
        expected: str,
        *,
        file: str | None = None,
        hint: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(field, value, expected, file=file, hint=hint)
        self.values = dict(values or {})


class ParseError(AitcoError):
    """A log or export could not be parsed at all (individual bad lines are counted instead)."""

    def __init__(self, path: str, message: str, *, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
