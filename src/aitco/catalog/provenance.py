"""Provenance of values read from a user's own file (an overlay, a ``config.json``).

Both the catalog loader and the Hugging Face config reader date such values by the file itself;
the helper lives here so that neither module imports the other (no import cycle).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from aitco.catalog.schema import Source


def file_source(path: Path, title: str) -> Source:
    """Provenance of values read from a user's file: the file itself, dated by its mtime.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "overlay.yaml"
    >>> _ = p.write_text("kind: models")
    >>> s = file_source(p, "user file overlay.yaml")
    >>> s.key.startswith("file:"), s.title
    (True, 'user file overlay.yaml')
    """
    try:
        day = dt.date.fromtimestamp(path.stat().st_mtime)
    except OSError:
        day = dt.date.today()
    return Source(
        key=f"file:{path}",
        title=title,
        document=str(path.resolve()),
        retrieved=day,
    )
