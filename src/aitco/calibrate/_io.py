"""Small I/O helpers shared by the calibration modules (opening logs; atomic writes).

``write_atomic`` is re-exported from :mod:`aitco.fileio`, the one implementation every layer uses.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO

from aitco.errors import ParseError
from aitco.fileio import write_atomic

__all__ = ["open_text", "write_atomic"]


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
