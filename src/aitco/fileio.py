"""The edge of the file system: every file aitco reads or writes goes through this module.

Reading
    :func:`open_input` (a stream), :func:`read_bytes` / :func:`read_text` (a whole file, at
    most :data:`aitco.limits.MAX_FILE_BYTES`) and :func:`check_input_file` (a path handed to a
    third-party reader such as pandas or DuckDB) accept only **regular files**: a FIFO, a
    device (``/dev/zero``), a socket or a directory is refused at once, before anything could
    block or read forever. A file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on
    the open descriptor, so a path swapped for a FIFO after a check cannot hang the reader, and
    whole-file reads stop at the size limit whatever the file claims to hold.

YAML
    :func:`load_yaml` / :func:`parse_yaml` are the one YAML loader of the project. Numbers as
    people type them (``1e19``, ``1.0e300``, ``1e-320``) are numbers (YAML 1.2 floats), so the
    range checks of :mod:`aitco.limits` see them; a key given twice in one mapping is an error;
    an impossible date (``2025-13-45``) is an error; and aliases are counted on the composed
    node graph, before anything is expanded, so an alias-expansion ("billion laughs") bomb is
    refused in milliseconds.

Writing
    :func:`write_atomic` writes through a temporary file and a rename, so nothing is left
    half-written, and :func:`check_output` refuses an output that is not a regular file or a
    new path (``--csv /dev/null``), and one that is the same file (after links) as a file the
    running command has read: an output never replaces an input, whatever ``--force`` says.
    The inputs are recorded by the readers above inside :func:`command_scope`, which the CLI
    opens around each command.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from aitco.errors import InputError
from aitco.limits import MAX_FILE_BYTES, MAX_YAML_ALIAS_NODES, MAX_YAML_ALIASES

#: Mode of a new file before the umask, as ``open(path, "w")`` creates it (POSIX ``creat``).
DEFAULT_FILE_MODE = 0o666

# ----------------------------------------------------------------------------- inputs of a command
#: Files read by the running command: ``(st_dev, st_ino) -> path as given``; None outside a
#: :func:`command_scope` (a library call records nothing and may update a file in place).
_INPUTS: contextvars.ContextVar[dict[tuple[int, int], str] | None] = contextvars.ContextVar(
    "aitco_inputs", default=None
)
_RECORDING: contextvars.ContextVar[bool] = contextvars.ContextVar("aitco_recording", default=True)
#: Paths the running command updates in place by design (``catalog update -o``, ``probe -o``).
_IN_PLACE: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "aitco_in_place", default=None
)


@contextlib.contextmanager
def command_scope() -> Iterator[None]:
    """Record the files read from here on, so that no output of the command replaces one."""
    token = _INPUTS.set({})
    token_in_place = _IN_PLACE.set(set())
    try:
        yield
    finally:
        _IN_PLACE.reset(token_in_place)
        _INPUTS.reset(token)


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Read without recording: the output file a command updates in place (``probe -o``)."""
    token = _RECORDING.set(False)
    try:
        yield
    finally:
        _RECORDING.reset(token)


def update_in_place(path: str | os.PathLike[str]) -> None:
    """Declare ``path`` an output the running command reads and replaces on purpose.

    For a command whose documented job is to update a file (``catalog update -o`` refreshes
    the overlay it may also read through ``--catalog``/``AITCO_CATALOG``; ``probe -o`` adds
    to an existing profile): that path is not an input, so :func:`check_output` lets it be
    written. Every other input stays protected.
    """
    in_place = _IN_PLACE.get()
    if in_place is None:
        return
    p = os.path.realpath(os.fspath(path))
    in_place.add(p)
    inputs = _INPUTS.get()
    if inputs is not None:
        for key, name in list(inputs.items()):
            if os.path.realpath(name) == p:
                del inputs[key]


def _in_place(path: str) -> bool:
    in_place = _IN_PLACE.get()
    return in_place is not None and os.path.realpath(path) in in_place


def note_input(path: str | os.PathLike[str]) -> None:
    """Record ``path`` as an input of the running command when it is a regular file.

    Only ``os.stat`` is called (it never blocks, even on a FIFO); a path that does not exist or
    is not a regular file is ignored here (the reader reports it).
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return
    if stat.S_ISREG(st.st_mode):
        _remember(st, os.fspath(path))


def _remember(st: os.stat_result, path: str) -> None:
    inputs = _INPUTS.get()
    if inputs is not None and _RECORDING.get() and not _in_place(path):
        inputs.setdefault((st.st_dev, st.st_ino), path)


def _kind(mode: int) -> str:
    """Name the kind of a file that is not regular, in words."""
    for test, words in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return words
    return "not a regular file"


def _not_regular(field: str, path: str, mode: int, what: str = "a regular file") -> InputError:
    return InputError(field, path, f"{what} ({path} is {_kind(mode)})")


# ----------------------------------------------------------------------------- reading
def open_input(
    path: str | os.PathLike[str],
    *,
    field: str = "file",
    binary: bool = False,
    encoding: str = "utf-8",
    errors: str = "strict",
    newline: str | None = None,
) -> IO[Any]:
    """Open a regular file for reading; refuse anything else at once.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    field : str
        Flag or field named in the error (``--calibration``, ``FILE``).
    binary : bool
        Binary stream instead of text.
    encoding, errors, newline : str
        As :func:`open` (text mode only).

    Returns
    -------
    IO
        An open file object (close it, or use it in a ``with`` block).

    Raises
    ------
    aitco.errors.InputError
        The path does not exist, or is a FIFO, device, socket or directory.
    OSError
        Other failures to open (permission denied).
    """
    p = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise InputError(field, p, "an existing file") from None
    except IsADirectoryError:  # pragma: no cover (Windows)
        raise InputError(field, p, f"a regular file ({p} is a directory)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(field, p, st.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        _remember(st, p)
        if binary:
            return os.fdopen(fd, "rb")
        return os.fdopen(fd, "r", encoding=encoding, errors=errors, newline=newline)
    except BaseException:
        os.close(fd)
        raise


def check_input_file(path: str | os.PathLike[str], *, field: str = "file") -> Path:
    """Check that ``path`` is an existing regular file (for readers aitco does not open itself).

    ``os.stat`` never blocks (unlike opening a FIFO), so pandas, DuckDB or gzip are handed only
    a regular file. The file is recorded as an input of the running command.
    """
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(field, p, "an existing file") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(field, p, st.st_mode)
    _remember(st, p)
    return Path(p)


def read_bytes(
    path: str | os.PathLike[str], *, field: str = "file", limit: int = MAX_FILE_BYTES
) -> bytes:
    """Read a whole regular file, at most ``limit`` bytes (else an error, whatever its size says).

    Raises
    ------
    aitco.errors.InputError
        Not a regular file (see :func:`open_input`), or longer than ``limit``.
    """
    with open_input(path, field=field, binary=True) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            field,
            os.fspath(path),
            f"a file of at most {limit / 2**20:g} MiB (this format is read whole)",
        )
    return bytes(data)


def read_text(
    path: str | os.PathLike[str], *, field: str = "file", limit: int = MAX_FILE_BYTES
) -> str:
    """Read a whole regular UTF-8 text file (see :func:`read_bytes`).

    Raises
    ------
    aitco.errors.InputError
        As :func:`read_bytes`, or the file is not UTF-8 text (naming the first bad byte).
    """
    data = read_bytes(path, field=field, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(field, os.fspath(path), f"UTF-8 text (byte {exc.start} is not)") from None


# ----------------------------------------------------------------------------- YAML
#: YAML 1.2 floats that YAML 1.1 (PyYAML) reads as strings: an exponent without a dot (``1e19``)
#: or without a sign (``1.0e300``).
_FLOAT_12 = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_MERGE_TAG = "tag:yaml.org,2002:merge"

try:  # the C parser is several times faster; the constructor is Python either way
    _BaseLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _BaseLoader = yaml.SafeLoader


class _Loader(_BaseLoader):
    """Safe loader: YAML 1.2 floats, no duplicate keys, no impossible dates."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], Any] = {}
            for key_node, _ in node.value:  # scalar keys, compared as written (tag and text)
                if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                    continue
                first = seen.setdefault((key_node.tag, key_node.value), key_node)
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"key {key_node.value!r} given twice "
                        f"(first on line {first.start_mark.line + 1})",
                        key_node.start_mark,
                    )
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node: Any) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a valid date ({exc})", node.start_mark
            ) from None


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _alias_counts(root: Any) -> tuple[int, int]:
    """``(aliases, nodes aliases add once expanded)`` of a composed document, without expanding.

    The composed graph shares one node per anchor; each further reference to it is an alias.
    Expanded sizes are computed once per node (iteratively: no recursion limit).

    Raises
    ------
    ValueError
        A recursive alias (a node that contains itself).
    """
    cap = 10 * MAX_YAML_ALIAS_NODES
    size: dict[int, int] = {}
    on_path: set[int] = set()
    refs = 1
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        kids = _children(node)
        if done:
            on_path.discard(nid)
            size[nid] = min(cap, 1 + sum(size[id(k)] for k in kids))
            continue
        if nid in size:
            continue
        on_path.add(nid)
        refs += len(kids)
        stack.append((node, True))
        for k in kids:
            if id(k) in on_path:
                msg = "an alias refers to a node that contains it"
                raise ValueError(msg)
            if id(k) not in size:
                stack.append((k, False))
    return refs - len(size), size[id(root)] - len(size)


def parse_yaml(text: str, *, file: str | None = None, error: type[InputError] = InputError) -> Any:
    """Parse one YAML document safely (see the module docstring); None for an empty one.

    Raises
    ------
    aitco.errors.InputError
        (or ``error``) Invalid YAML, a duplicate key, an impossible date, a recursive alias, or
        more aliases than :data:`aitco.limits.MAX_YAML_ALIASES` / more expanded nodes than
        :data:`aitco.limits.MAX_YAML_ALIAS_NODES`, naming the file and the line.
    """
    where = file or "yaml"
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:  # without an anchor (&name) there is no alias: nothing to count
            aliases, added = _alias_counts(node) if "&" in text else (0, 0)
        except ValueError as exc:
            raise error(
                "yaml", where, f"YAML without recursive aliases ({exc})", file=file
            ) from None
        if aliases > MAX_YAML_ALIASES or added > MAX_YAML_ALIAS_NODES:
            raise error(
                "yaml",
                where,
                f"at most {MAX_YAML_ALIASES} aliases adding at most {MAX_YAML_ALIAS_NODES:,} "
                f"nodes (this file has {aliases:,} aliases adding {added:,}+ nodes: an "
                "alias-expansion bomb?)",
                file=file,
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error("yaml", line, f"valid YAML ({problem})", file=file) from None
    except RecursionError:
        raise error("yaml", where, "YAML nested less deeply", file=file) from None
    finally:
        loader.dispose()


def load_yaml(
    path: str | os.PathLike[str],
    *,
    field: str = "file",
    error: type[InputError] = InputError,
    limit: int = MAX_FILE_BYTES,
) -> Any:
    """Read a YAML file: a regular file, at most ``limit`` bytes, parsed by :func:`parse_yaml`."""
    return parse_yaml(read_text(path, field=field, limit=limit), file=os.fspath(path), error=error)


def check_dates(
    data: Any,
    *,
    file: str | None = None,
    prefix: str = "",
    today: dt.date | None = None,
    error: type[InputError] = InputError,
) -> None:
    """Refuse a date after ``today`` in a document of facts (a retrieval or price date)."""
    today = today or dt.date.today()
    if isinstance(data, dict):
        for k, v in data.items():
            check_dates(v, file=file, prefix=f"{prefix}.{k}" if prefix else str(k), today=today,
                        error=error)  # fmt: skip
    elif isinstance(data, list):
        for i, v in enumerate(data):
            check_dates(v, file=file, prefix=f"{prefix}[{i}]", today=today, error=error)
    elif isinstance(data, dt.date):
        day = data.date() if isinstance(data, dt.datetime) else data
        if day > today:
            raise error(
                prefix or "date", day.isoformat(), f"a date no later than today ({today})",
                file=file,
            )  # fmt: skip


# ----------------------------------------------------------------------------- writing
def check_output(path: str | os.PathLike[str], *, field: str = "output") -> None:
    """Refuse an output that is not a regular file or a new path, or that is an input.

    Parameters
    ----------
    path : str or os.PathLike
        Where the command will write.
    field : str
        The flag named in the error (``--csv``, ``-o``).

    Raises
    ------
    aitco.errors.InputError
        ``path`` is a directory, FIFO, device or socket; or it is (after links) a file the
        running command has read (:func:`command_scope`). ``--force`` never overrides this.
    """
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(field, p, st.st_mode, "a regular file or a new path to write")
    inputs = _INPUTS.get() or {}
    src = inputs.get((st.st_dev, st.st_ino))
    if src is not None:
        same = "" if os.path.abspath(src) == os.path.abspath(p) else f" ({src}, after links)"
        raise InputError(
            field,
            p,
            f"an output path other than an input of this command{same}: writing it would "
            "replace the input (--force does not override this)",
        )


def write_atomic(
    path: str | os.PathLike[str],
    text: str | bytes,
    *,
    make_parent: bool = False,
    field: str = "output",
) -> None:
    """Write a file atomically (temp file in the same folder + rename), after :func:`check_output`.

    Parameters
    ----------
    path : str or os.PathLike
        Destination. Its folder must exist: no directory the user did not ask for is created.
    text : str or bytes
        Content; bytes are written in binary mode.
    make_parent : bool
        Create the folder itself (one level, never its parents) when it is missing: for a
        companion folder the command documents (the plots of a Markdown report).
    field : str
        The flag named in errors (``-o``, ``--csv``).

    Raises
    ------
    aitco.errors.InputError
        When the folder does not exist (or is not a folder), or :func:`check_output` refuses.
    OSError
        When the file cannot be written (permission, disk full); nothing is left behind.

    Notes
    -----
    ``os.replace`` is atomic on POSIX and Windows when source and destination are on the same
    file system, so a reader sees either the old file or the complete new one; on any error the
    temporary file is removed and the destination is untouched.
    """
    path = Path(path)
    check_output(path, field=field)
    parent = path.parent
    if make_parent and not parent.exists() and parent.parent.is_dir():
        parent.mkdir()
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise InputError(
            field, str(path), f"a file in an existing directory ({str(parent)!r} {what})"
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


def check_output_dir(path: str | os.PathLike[str], *, field: str = "output") -> None:
    """Refuse an output folder that exists and is not a directory (``--parquet FILE``)."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISDIR(st.st_mode):
        raise _not_regular(field, p, st.st_mode, "a directory or a new path")


def _target_mode(path: Path) -> int:
    """Permission bits for ``path``: those of the existing file, else ``0o666`` less the umask."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return DEFAULT_FILE_MODE & ~umask
