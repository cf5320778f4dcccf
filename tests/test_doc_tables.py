"""Tables and example files that cannot go stale: the committed ones equal today's answer.

``scripts/gen_doc_tables.py`` writes the default scenarios as ``examples/*.yaml`` and the
default-comparison tables of ``docs/tco.md`` between their markers; this test recomputes them
with the shipped catalog and fails when a committed one differs (regenerate with the script).
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest
from tests.conftest import REPO


def _script() -> ModuleType:
    path = REPO / "scripts" / "gen_doc_tables.py"
    spec = importlib.util.spec_from_file_location("gen_doc_tables", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_doc_tables", mod)
    spec.loader.exec_module(mod)
    return mod


def test_markers_hold_what_the_script_finds() -> None:
    gen = _script()
    text = gen.DOC.read_text(encoding="utf-8")
    for name in ("training", "inference", "preset"):
        body = gen.between(text, name)
        assert body.startswith("| option |"), name
        assert gen.replace_between(text, name, body) == text


def test_example_files_are_the_builtin_defaults() -> None:
    for path, text in _script().example_files().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(REPO)} is stale: run python scripts/gen_doc_tables.py"
        )


@pytest.mark.integration
@pytest.mark.usefixtures("live_catalog_data")  # the docs show the shipped catalog's answer
def test_doc_tables_are_todays_answer() -> None:
    gen = _script()
    text = gen.DOC.read_text(encoding="utf-8")
    for name, body in gen.doc_tables().items():
        assert gen.between(text, name) == body.strip(), (
            f"docs/tco.md table {name!r} differs from today's answer: "
            "run python scripts/gen_doc_tables.py"
        )
