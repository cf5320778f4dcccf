"""Exceptions raised for bad input, bad catalog data and unreadable logs.

Every user-facing error names *where* (file and field path), *what* (the value) and *what was
expected*, so that the CLI can print one clear line and exit with status 2 instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


class AitcoError(Exception):
    """Base class of every error aitco raises on purpose."""

    exit_code = 2


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
        msg = f"{where}{field} = {value!r}: expected {expected}"
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


class ParseError(AitcoError):
    """A log or export could not be parsed at all (individual bad lines are counted instead)."""

    def __init__(self, path: str, message: str, *, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
