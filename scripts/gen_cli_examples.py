#!/usr/bin/env python3
"""Refresh docs/cli.md: the input bounds from limits.py and the JSON outputs of real runs.

The "Input ranges" tables between ``<!-- bounds:start -->`` and ``<!-- bounds:end -->`` are
:func:`aitco.limits.bounds_markdown` (the one table of bounds the code checks).

Each ``console`` block of the page that shows ``$ aitco ... --json`` followed by a JSON object
is re-run (in-process, from a scratch folder holding ``examples/`` and the fixtures of
``tests/fixtures`` under their bare names). The page's choice of keys is kept: the same keys in
the same order, values from the run, floats to 4 significant digits, and the ``"…"`` markers
recounted. A key the page shows but the command no longer prints stops the script (edit the page).

Usage::

    PYTHONPATH=src python scripts/gen_cli_examples.py           # rewrite docs/cli.md
    PYTHONPATH=src python scripts/gen_cli_examples.py --check   # exit 1 when out of date
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "cli.md"
FIXTURES = REPO / "tests" / "fixtures"
BLOCK = re.compile(
    r"(```console\n\$ aitco (?P<cmd>[^\n]*--json[^\n]*)\n)(?P<out>\{.*?\n\})(\n```)", re.S
)
MORE_KEYS = "{n} more keys (see docs/glossary.md)"
MORE_ITEMS = "… {n} more"


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return float(f"{x:.4g}")
    return x


def refresh(shown: Any, actual: Any, path: str = "$") -> Any:
    """Return ``shown`` with each value taken from ``actual`` (same keys, same item count)."""
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            raise SystemExit(f"{path}: the page shows an object, the command prints {actual!r}")
        out: dict[str, Any] = {}
        kept = [k for k in shown if not k.startswith("…")]
        for k in kept:
            if k not in actual:
                raise SystemExit(f"{path}.{k}: shown in docs/cli.md, no longer printed")
            out[k] = refresh(shown[k], actual[k], f"{path}.{k}")
        left = [k for k in actual if k not in out]
        marker = next((v for k, v in shown.items() if k.startswith("…")), None)
        if marker is not None and left:
            # the page either counts what it left out or names it; keep its way
            counted = isinstance(marker, str) and re.match(r"\d+ more keys", marker)
            out["…"] = MORE_KEYS.format(n=len(left)) if counted else ", ".join(left)
        return out
    if isinstance(shown, list) and isinstance(actual, list):
        items = [x for x in shown if not (isinstance(x, str) and x.startswith("…"))]
        n = min(len(items), len(actual))
        new = [refresh(items[i], actual[i], f"{path}[{i}]") for i in range(n)]
        if len(actual) > n and len(items) < len(shown):
            new.append(MORE_ITEMS.format(n=len(actual) - n))
        return new
    if shown in ("{…}", "[…]"):
        return shown
    return _round(actual)


def _scratch() -> Path:
    d = Path(tempfile.mkdtemp(prefix="aitco-cli-md-"))
    (d / "examples").symlink_to(REPO / "examples", target_is_directory=True)
    (d / "tests").symlink_to(REPO / "tests", target_is_directory=True)  # fixture sub-folders
    for f in FIXTURES.iterdir():
        if f.is_file():
            shutil.copy(f, d / f.name)
    return d


def _run(argv: list[str], cwd: Path) -> tuple[int, str]:
    import aitco.cli.app as cli_app

    buf = io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli_app.main(argv)
                code: Any = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        os.chdir(old)
    return (code if isinstance(code, int) else (0 if code is None else 1)), buf.getvalue()


def updated(text: str, cwd: Path) -> str:
    """Return the page with every shown JSON output refreshed."""

    def one(m: re.Match[str]) -> str:
        argv = shlex.split(m.group("cmd"), comments=True)
        try:  # a block whose output is not one JSON object (prose, several commands) stays
            shown = json.loads(m.group("out"))
        except json.JSONDecodeError:
            return m.group(0)
        _, out = _run(argv, cwd)
        new = refresh(shown, json.loads(out))
        body = json.dumps(new, indent=2, ensure_ascii=False)
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(one, text)


BOUNDS = re.compile(r"(<!-- bounds:start[^\n]*-->\n).*?(<!-- bounds:end -->)", re.S)


def with_bounds(text: str) -> str:
    """Return the page with the bounds tables regenerated from :mod:`aitco.limits`."""
    from aitco.limits import bounds_markdown

    if not BOUNDS.search(text):
        raise SystemExit(f"{PAGE}: no <!-- bounds:start --> ... <!-- bounds:end --> markers")
    return BOUNDS.sub(lambda m: m.group(1) + bounds_markdown() + "\n" + m.group(2), text)


def main(argv: list[str] | None = None) -> int:
    """Rewrite docs/cli.md, or with ``--check`` report whether it is current."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the page is out of date")
    args = ap.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    cwd = _scratch()
    try:
        new = with_bounds(updated(text, cwd))
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    if args.check:
        if new != text:
            print(f"{PAGE} shows stale outputs: run scripts/gen_cli_examples.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
