r"""Fetch public price files over HTTP(S) into the user's cache, with the time they were read.

``aitco catalog update`` reads the price catalogs others publish (SkyPilot's ``vms.csv`` files,
genai-prices' ``data.json``). Each file fetched is kept in the user's cache directory with a
``.meta.json`` beside it (URL, UTC retrieval time, size, SHA-256), so that

* ``--offline`` can rebuild an overlay from the cached copies without the network, dated the
  day they were fetched;
* every price of the overlay is dated with the day its file was retrieved.

The cache directory is ``AITCO_CACHE_DIR`` when set, else the platform's user cache folder
(``$XDG_CACHE_HOME/aitco`` or ``~/.cache/aitco`` on Linux, ``~/Library/Caches/aitco`` on macOS,
``%LOCALAPPDATA%\aitco\Cache`` on Windows). Only the standard library is used (``urllib``): the
core install stays light.

Nothing is written until every file of an update has been fetched and parsed (the callers
stage the bytes with :func:`fetch`, then :func:`store` them), and each write is atomic
(:func:`aitco.fileio.write_atomic`): a failed or partial update leaves the cache as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from aitco import __version__
from aitco.errors import EnvironmentFailure, InputError
from aitco.fileio import write_atomic

#: Environment variable that overrides the cache directory.
CACHE_ENV_VAR = "AITCO_CACHE_DIR"
#: Seconds to wait for a server before giving up.
TIMEOUT_S = 30.0
#: Largest file accepted from a server (SkyPilot's largest ``vms.csv``, Azure's, is ~30 MB).
MAX_BYTES = 256 * 1024 * 1024
_META = ".meta.json"


def cache_dir() -> Path:
    """Return the user's aitco cache directory (not created here)."""
    env = os.environ.get(CACHE_ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "aitco"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA", "").strip()
        return (Path(base) if base else home / "AppData" / "Local") / "aitco" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else home / ".cache") / "aitco"


def url_key(url: str) -> str:
    """Short stable folder name of a base URL (copies from different servers never mix)."""
    return hashlib.sha256(url.rstrip("/").encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Fetched:
    """A file read from a server or from the cache.

    Attributes
    ----------
    url : str
        Where it was read from.
    content : bytes
        The file.
    retrieved_at : datetime.datetime
        When it was fetched from the server (UTC); for a cached copy, when that copy was fetched.
    cache_path : Path
        Where it is (or will be) kept in the cache.
    from_cache : bool
        Whether it was read from the cache (``--offline``).
    """

    url: str
    content: bytes
    retrieved_at: dt.datetime
    cache_path: Path
    from_cache: bool = False

    @property
    def retrieved(self) -> dt.date:
        """UTC day the file was fetched (the date of its prices)."""
        return self.retrieved_at.date()

    @property
    def sha256(self) -> str:
        """SHA-256 of the content."""
        return hashlib.sha256(self.content).hexdigest()

    def text(self) -> str:
        """Return the content as UTF-8 text."""
        try:
            return self.content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError("url", self.url, "a UTF-8 text file") from exc


def _http_get(url: str, timeout_s: float) -> bytes:
    if not url.lower().startswith(("http://", "https://")):
        raise InputError("url", url, "an http:// or https:// URL")
    req = urllib.request.Request(url, headers={"User-Agent": f"aitco/{__version__}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # the scheme is checked above
            data: bytes = resp.read(MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise EnvironmentFailure(f"cannot fetch {url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise EnvironmentFailure(
            f"cannot fetch {url}: {exc.reason} (no network? --offline uses the cached copy)"
        ) from exc
    except TimeoutError as exc:
        raise EnvironmentFailure(f"cannot fetch {url}: no answer in {timeout_s:g} s") from exc
    except (OSError, ValueError) as exc:  # connection reset, malformed URL
        raise EnvironmentFailure(f"cannot fetch {url}: {exc}") from exc
    if len(data) > MAX_BYTES:
        raise EnvironmentFailure(f"cannot fetch {url}: larger than {MAX_BYTES} bytes")
    return data


def _read_cached(url: str, path: Path) -> Fetched:
    meta_path = path.with_name(path.name + _META)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        content = path.read_bytes()
        when = dt.datetime.fromisoformat(meta["retrieved_at"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            "--offline",
            url,
            f"a cached copy in {path.parent} (none yet: run the update once with the network)",
        ) from exc
    if meta.get("url") != url or hashlib.sha256(content).hexdigest() != meta.get("sha256"):
        raise InputError("--offline", url, f"an intact cached copy of it in {path.parent}")
    return Fetched(url, content, when, path, from_cache=True)


def fetch(
    url: str, cache_path: Path, *, offline: bool = False, timeout_s: float = TIMEOUT_S
) -> Fetched:
    """Read ``url`` from the server (or, ``offline``, from its cached copy); nothing is written.

    Raises
    ------
    EnvironmentFailure
        The server cannot be reached or answers with an error (exit status 1).
    InputError
        ``offline`` and no intact cached copy of ``url``; a URL that is not http(s).
    """
    if offline:
        return _read_cached(url, cache_path)
    content = _http_get(url, timeout_s)
    return Fetched(url, content, dt.datetime.now(dt.UTC).replace(microsecond=0), cache_path)


def store(files: list[Fetched]) -> None:
    """Keep fetched files in the cache (atomically, each with its ``.meta.json``)."""
    for f in files:
        if f.from_cache:
            continue
        f.cache_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(f.cache_path, f.content)
        meta = {
            "url": f.url,
            "retrieved_at": f.retrieved_at.isoformat(),
            "bytes": len(f.content),
            "sha256": f.sha256,
        }
        write_atomic(
            f.cache_path.with_name(f.cache_path.name + _META), json.dumps(meta, indent=2) + "\n"
        )


def cached(url: str, cache_path: Path) -> Fetched | None:
    """Return the cached copy of ``url``, or None (absent or damaged)."""
    try:
        return _read_cached(url, cache_path)
    except InputError:
        return None
