"""Pictures that cannot go stale: what each committed screenshot shows is today's answer.

``scripts/screenshots.py`` writes ``docs/screenshots/screenshots.json`` beside the PNGs: each
picture's SHA-256 and the numbers it shows, read from the page it shot. This test checks that the
record belongs to the committed pictures (the hashes) and recomputes the numbers: the version,
the verdict and every card of the web app's default page and of the README's report, and the
ROI workbook's summary values. Regenerate with ``python scripts/screenshots.py`` (Chromium; the
workbook needs LibreOffice), which CI runs (``.ci/run``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from tests.conftest import REPO

from aitco import __version__

SHOTS = REPO / "docs" / "screenshots"
RECORD = SHOTS / "screenshots.json"
STALE = "is stale: run python scripts/screenshots.py"


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    assert RECORD.exists(), f"{RECORD.relative_to(REPO)} is missing: run scripts/screenshots.py"
    return dict(json.loads(RECORD.read_text(encoding="utf-8")))


def test_the_record_is_of_the_committed_pictures(record: dict[str, Any]) -> None:
    pngs = sorted(p.name for p in SHOTS.glob("*.png"))
    assert sorted(record["shots"]) == pngs
    for name, shot in record["shots"].items():
        digest = hashlib.sha256((SHOTS / name).read_bytes()).hexdigest()
        assert shot["sha256"] == digest, f"{name} changed without its record: {STALE}"


def test_pictures_show_this_version(record: dict[str, Any]) -> None:
    assert record["version"] == __version__, f"the screenshots show {record['version']}: {STALE}"
    for name in ("web_desktop.png", "web_phone.png", "report.png"):
        assert __version__ in record["shots"][name]["shown"]["version"], name


@pytest.mark.integration  # recomputes the workbook's ROI series (~1-4 s)
def test_workbook_summary_is_todays(record: dict[str, Any]) -> None:
    import importlib.util
    import sys

    path = REPO / "scripts" / "screenshots.py"
    spec = importlib.util.spec_from_file_location("screenshots", path)
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(REPO / "scripts"))
    shown = record["shots"]["workbook-summary.png"]["shown"]
    today = mod.workbook_shown()
    assert shown.keys() == today.keys()
    for k, v in today.items():
        if isinstance(v, float):
            assert shown[k] == pytest.approx(v, rel=1e-9), f"workbook {k} {STALE}"
        else:
            assert shown[k] == v, f"workbook {k} {STALE}"


def _cards(data: Any) -> list[dict[str, str]]:
    from aitco.report.html import summary_cards

    keys = ("name", "total", "time")
    return [{k: c[k] for k in keys} for c in summary_cards(data)]


@pytest.mark.integration
@pytest.mark.usefixtures("live_catalog_data")  # the pictures show the shipped catalog's answer
def test_web_and_report_pictures_show_todays_answer(record: dict[str, Any]) -> None:
    from aitco.catalog.loader import load_catalog
    from aitco.decide.defaults import default_training
    from aitco.decide.scenario import Scenario
    from aitco.report.html import verdict
    from aitco.report.model import build_report

    cat = load_catalog()
    web = build_report(default_training(), cat)
    report = build_report(Scenario.from_yaml(REPO / "examples" / "default.yaml"), cat)
    for name, data in (("web_desktop.png", web), ("web_phone.png", web), ("report.png", report)):
        shown = record["shots"][name]["shown"]
        assert shown["verdict"] == verdict(data), f"{name} {STALE}"
        assert shown["cards"] == _cards(data), f"{name} {STALE}"
