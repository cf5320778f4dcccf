"""Small I/O helpers shared by the calibration modules (atomic writes, opening logs).

``aitco.decide.scenario.write_atomic`` lives in a higher layer, which ``calibrate`` may not
import (see the import-linter contract), so the same temp-file-and-rename write is repeated here.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path
from typing import IO

from aitco.errors import ParseError


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write a file atomically (temp file + rename) so nothing is left half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(text, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def open_text(path: str | Path) -> IO[str]:
    """Open a (possibly gzip-compressed) text log for streaming, undecodable bytes replaced.

    Raises
    ------
    aitco.errors.ParseError
        If the file does not exist or is a directory.
    """
    p = Path(path)
    if not p.exists():
        raise ParseError(str(p), "no such file")
    if p.is_dir():
        raise ParseError(str(p), "is a directory, expected a file")
    if p.suffix == ".gz":
        return gzip.open(p, "rt", encoding="utf-8", errors="replace", newline="")
    return open(p, encoding="utf-8", errors="replace", newline="")
