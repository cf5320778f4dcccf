"""What every parser returns: records, a summary, the detected format version, skipped lines.

Parsers never crash on bad input. A line that looks like it belongs to the format but cannot be
read is *skipped* and counted with its line number (:class:`SkipLog`); a line that belongs to no
known shape (banner text, other log output) is *ignored* and only counted. When nothing usable is
found in the whole file the parser raises :class:`aitco.errors.ParseError`.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from aitco.errors import ParseError

#: How many skipped lines are kept with their text; the rest are only counted.
MAX_SKIPS_KEPT = 50
#: Longest excerpt of a skipped line kept for the report. [characters]
SKIP_EXCERPT_CHARS = 120

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUM = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class SkipLog:
    """Count of skipped lines, with the first :data:`MAX_SKIPS_KEPT` kept (line, reason, text)."""

    count: int = 0
    first: list[tuple[int, str, str]] = field(default_factory=list)

    def add(self, line_no: int, reason: str, text: str = "") -> None:
        """Record one skipped line (1-based ``line_no``)."""
        self.count += 1
        if len(self.first) < MAX_SKIPS_KEPT:
            self.first.append((line_no, reason, text.strip()[:SKIP_EXCERPT_CHARS]))

    def to_json(self) -> dict[str, Any]:
        """JSON-ready summary: count and the kept lines."""
        return {
            "count": self.count,
            "lines": [{"line": n, "reason": r, "text": t} for n, r, t in self.first],
        }


class CsvRows:
    """Rows of a CSV log with a required header; malformed rows are skipped and counted.

    Reads the header on construction (cells stripped, byte-order mark removed) and raises
    :class:`aitco.errors.ParseError` when it is missing or lacks a ``required`` column. Iterating
    yields each data row with as many fields as the header; blank rows are passed over, rows with
    a CSV error or the wrong number of fields are recorded in ``skipped`` with their line number.

    Parameters
    ----------
    fh : text file
        The open CSV log.
    path : str
        File name, for error messages.
    required : iterable of str
        Columns the header must contain.
    what : str
        What the file should be (``"CodeCarbon file"``), for the missing-column message.
    skipped : SkipLog
        Where malformed rows are recorded.
    """

    def __init__(
        self, fh: IO[str], path: str, required: Iterable[str], what: str, skipped: SkipLog
    ) -> None:
        self._reader = csv.reader(fh)
        self._skipped = skipped
        try:
            header = next(self._reader)
        except (StopIteration, csv.Error) as exc:
            raise ParseError(path, "empty file or unreadable CSV header") from exc
        self.header = [c.strip().lstrip("\ufeff") for c in header]
        missing = [c for c in required if c not in self.header]
        if missing:
            raise ParseError(path, f"not a {what}: missing column(s) {', '.join(missing)}", line=1)

    @property
    def line_num(self) -> int:
        """Lines read so far, up to the last line of the row just yielded [count]."""
        return self._reader.line_num

    def __iter__(self) -> Iterator[list[str]]:
        """Yield the well-formed data rows."""
        n_fields = len(self.header)
        while True:
            try:
                row = next(self._reader)
            except StopIteration:
                return
            except csv.Error as exc:
                self._skipped.add(self.line_num, f"CSV error: {exc}")
                continue
            if not row:
                continue
            if len(row) != n_fields:
                self._skipped.add(
                    self.line_num, f"expected {n_fields} fields, got {len(row)}", ",".join(row)
                )
                continue
            yield row


@dataclass
class ParseResult:
    """The output of one parser on one file.

    Attributes
    ----------
    kind : str
        Parser kind (``"nccl"``, ``"dcgm"``, ``"nvidia-smi"``, ``"trainlog"``, ``"vllm"``,
        ``"sglang"``, ``"focus"``, ``"codecarbon"``, ``"kineto"``).
    path : str
        The file parsed.
    format : str
        Detected format (``"nccl-tests-stdout"``, ``"megatron-lm"``, ...).
    format_version : str
        Detected version or layout of that format.
    records : list of dict
        Normalised records (rows, steps, runs); telemetry parsers keep aggregates instead.
    summary : dict
        Headline values, keys with unit suffixes.
    lines_read : int
        Lines (or rows) read.
    lines_ignored : int
        Lines that belong to no known shape (banners, unrelated log output).
    skipped : SkipLog
        Lines that looked like data but could not be read.
    """

    kind: str
    path: str
    format: str
    format_version: str
    records: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    lines_read: int = 0
    lines_ignored: int = 0
    skipped: SkipLog = field(default_factory=SkipLog)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self, *, with_records: bool = True) -> dict[str, Any]:
        """JSON-ready dict (non-finite floats become ``None``)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "path": self.path,
            "format": self.format,
            "format_version": self.format_version,
            "lines_read": self.lines_read,
            "lines_ignored": self.lines_ignored,
            "skipped_lines": self.skipped.to_json(),
            "summary": self.summary,
            "meta": self.meta,
        }
        if with_records:
            out["records"] = self.records
        return clean_json(out)


def clean_json(v: Any) -> Any:
    """Replace non-finite floats by ``None`` recursively."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: clean_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [clean_json(x) for x in v]
    return v


def strip_ansi(s: str) -> str:
    """Remove ANSI colour escapes (terminal logs)."""
    return _ANSI.sub("", s) if "\x1b" in s else s


def to_float(s: Any) -> float | None:
    """Parse a number that may carry thousands separators, a unit or a percent sign.

    Returns ``None`` for missing markers (``N/A``, ``[N/A]``, ``[Not Supported]``, ``NULL``,
    empty) and for anything that is not a finite number.
    """
    if s is None:
        return None
    if isinstance(s, bool):
        return None
    if isinstance(s, int | float):
        try:
            x = float(s)
        except OverflowError:  # an integer too large for a float (a 400-digit JSON number)
            return None
        return x if math.isfinite(x) else None
    t = str(s)
    try:  # fast path: a plain number
        x = float(t)
    except ValueError:
        pass
    else:
        return x if math.isfinite(x) and "_" not in t else None
    t = t.strip().replace(",", "")
    if not t:
        return None
    head, sep, unit = t.partition(" ")
    if sep and (unit.isalpha() or unit == "%"):
        try:
            x = float(head)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    # drop a trailing unit ("16.48 W", "40960 MiB", "13.99%", "112.9TFLOPS", "66.91GiB")
    m = re.match(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*[A-Za-z%/()]*$", t)
    if not m:
        return None
    x = float(m.group(1))  # the regex only lets numbers through
    return x if math.isfinite(x) else None


def is_number(tok: str) -> bool:
    """Whether ``tok`` is a plain decimal or scientific number."""
    return bool(_NUM.match(tok))
