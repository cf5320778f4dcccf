"""Small I/O helpers shared by the calibration modules (opening logs; atomic writes).

Logs are opened through :func:`aitco.fileio.open_input`: only a regular file is read (a FIFO
or ``/dev/zero`` is refused at once instead of blocking or filling memory). ``write_atomic``
is re-exported from :mod:`aitco.fileio`, the one implementation every layer uses.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
from pathlib import Path
from typing import IO, cast

from aitco.errors import ParseError
from aitco.fileio import open_input, write_atomic

__all__ = ["gunzip", "open_binary", "open_text", "write_atomic"]


def open_binary(path: str | Path, *, field: str = "FILE") -> IO[bytes]:
    """Open a (possibly gzip-compressed) log as bytes; only a regular file is opened.

    Raises
    ------
    aitco.errors.ParseError
        If the file does not exist or is a directory.
    aitco.errors.InputError
        If it is a FIFO, a device or a socket (refused before anything is read).
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise ParseError(str(p), "no such file") from None
    if stat.S_ISDIR(mode):
        raise ParseError(str(p), "is a directory, expected a file")
    fh = open_input(p, field=field, binary=True)
    if p.suffix == ".gz":
        return gunzip(fh)
    return cast(IO[bytes], fh)


def gunzip(fh: IO[bytes]) -> IO[bytes]:
    """Decompress an open binary file; closing the result closes ``fh`` too."""
    gz = gzip.GzipFile(fileobj=fh, mode="rb")
    gz.myfileobj = fh  # type: ignore[assignment]  # GzipFile closes the file it owns
    return cast(IO[bytes], gz)


def open_text(path: str | Path, *, field: str = "FILE") -> IO[str]:
    """Open a (possibly gzip-compressed) text log for streaming, undecodable bytes replaced.

    Raises
    ------
    aitco.errors.ParseError
        If the file does not exist or is a directory.
    aitco.errors.InputError
        If it is a FIFO, a device or a socket.
    """
    raw = open_binary(path, field=field)
    return io.TextIOWrapper(cast(IO[bytes], raw), encoding="utf-8", errors="replace", newline="")
