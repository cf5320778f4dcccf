"""File output shared by every layer: atomic writes, so nothing is left half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aitco.errors import InputError

#: Mode of a new file before the umask, as ``open(path, "w")`` creates it (POSIX ``creat``).
DEFAULT_FILE_MODE = 0o666


def write_atomic(path: Path, text: str | bytes, *, make_parent: bool = False) -> None:
    """Write a file atomically (temp file in the same folder + rename).

    Parameters
    ----------
    path : pathlib.Path
        Destination. Its folder must exist: no directory the user did not ask for is created.
    text : str or bytes
        Content; bytes are written in binary mode.
    make_parent : bool
        Create the folder itself (one level, never its parents) when it is missing: for a
        companion folder the command documents (the plots of a Markdown report).

    Raises
    ------
    aitco.errors.InputError
        When the folder does not exist (or is not a folder).
    OSError
        When the file cannot be written (permission, disk full); nothing is left behind.

    Notes
    -----
    ``os.replace`` is atomic on POSIX and Windows when source and destination are on the same
    file system, so a reader sees either the old file or the complete new one; on any error the
    temporary file is removed and the destination is untouched.
    """
    parent = path.parent
    if make_parent and not parent.exists() and parent.parent.is_dir():
        parent.mkdir()
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise InputError(
            "output", str(path), f"a file in an existing directory ({str(parent)!r} {what})"
        )
    mode = "wb" if isinstance(text, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(text)
        # mkstemp creates 0600 files: give the result the mode a plain open() would (0666 & ~umask),
        # or keep the mode of the file it replaces
        os.chmod(tmp, _target_mode(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _target_mode(path: Path) -> int:
    """Permission bits for ``path``: those of the existing file, else ``0o666`` less the umask."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return DEFAULT_FILE_MODE & ~umask
