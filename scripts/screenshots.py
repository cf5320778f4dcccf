"""Regenerate docs/screenshots/ and the record of what each picture shows.

Run from the repository root with Debian's chromium installed (CI runs it, ``.ci/run``)::

    PYTHONPATH=src python scripts/screenshots.py

It serves the web app on 127.0.0.1 (shipped catalog, real engines), opens it in headless chromium
through Playwright at 1400x900 and 390x844, renders the report of ``examples/default.yaml`` (the
tour's ``aitco report``) and shoots its first screen. PNGs are reduced to 256 colours so that each
stays under :data:`MAX_PNG_BYTES`. The ROI workbook's printed summary is drawn by
``scripts/screenshot_workbook.py`` (headless LibreOffice), called at the end when ``soffice`` is
installed.

Beside the pictures it writes :data:`RECORD` (``screenshots.json``): each PNG's SHA-256 and the
numbers it shows, read from the page (version, verdict, every card's name, total and time) or,
for the workbook, the summary values of its inputs. ``tests/test_screenshots.py`` recomputes
those numbers and fails when a committed picture shows another answer than today's.
"""

from __future__ import annotations

import io
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
SCENARIO = ROOT / "examples" / "default.yaml"
RECORD = OUT / "screenshots.json"
#: What a summary card shows, read from the page (the report and the web app share the template).
CARDS_JS = """() => ({
  version: (document.querySelector("header .right") || {textContent: ""}).textContent.trim(),
  verdict: document.querySelector("#verdict").textContent.trim(),
  cards: Array.from(document.querySelectorAll("#summary .card")).map((c) => ({
    name: c.dataset.option,
    total: c.querySelector("dd.big").textContent.trim(),
    time: c.querySelectorAll("dd")[1].textContent.trim(),
  })),
})"""
#: Largest screenshot kept in the repository. [bytes]
MAX_PNG_BYTES = 300_000
VIEWS = {"web_desktop": (1400, 900), "web_phone": (390, 844)}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _small_png(png: bytes) -> bytes:
    """Quantise a screenshot to 256 colours (text stays sharp, the file shrinks ~3x)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    q = img.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    buf = io.BytesIO()
    q.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _save(name: str, png: bytes) -> Path:
    data = _small_png(png)
    path = OUT / f"{name}.png"
    path.write_bytes(data)
    size = len(data)
    flag = "" if size <= MAX_PNG_BYTES else f"  (over {MAX_PNG_BYTES:,} bytes)"
    print(f"{path.relative_to(ROOT)}: {size:,} bytes{flag}")
    return path


def sha256(path: Path) -> str:
    """Return the SHA-256 of a file (hex)."""
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def workbook_shown() -> dict[str, Any]:
    """Return the summary values the workbook's printed summary shows (its example inputs)."""
    from aitco.decide.roi import roi_series, roi_summary
    from aitco.report.xlsx import _roi_inputs, example_inputs

    res = roi_series(_roi_inputs(example_inputs()))
    return {key: value for key, _label, _unit, value in roi_summary(res)}


def write_record(shots: dict[str, dict[str, Any]]) -> None:
    """Write :data:`RECORD`: each picture's hash and the numbers it shows."""
    import json

    from aitco import __version__

    old = json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.exists() else {}
    merged = {**old.get("shots", {}), **shots}
    for name, shot in merged.items():
        shot["sha256"] = sha256(OUT / name)
    RECORD.write_text(
        json.dumps({"version": __version__, "shots": merged}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {RECORD.relative_to(ROOT)}")


def main() -> int:
    """Serve, shoot, save."""
    if not CHROMIUM.exists():
        print(f"needs Debian chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    import uvicorn
    from playwright.sync_api import sync_playwright

    from aitco.catalog.loader import load_catalog
    from aitco.decide.scenario import Scenario
    from aitco.report.html import render_html
    from aitco.report.model import build_report
    from aitco.web.app import create_app

    OUT.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    while not server.started:
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}/"
    report = build_report(Scenario.from_yaml(SCENARIO), load_catalog())
    shots: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        for name, (w, h) in VIEWS.items():
            ctx = browser.new_context(viewport={"width": w, "height": h})
            page = ctx.new_page()
            page.set_default_timeout(120_000)
            page.goto(base)
            page.wait_for_selector("#summary .card")
            page.wait_for_load_state("networkidle")
            shown = page.evaluate(CARDS_JS)
            _save(name, page.screenshot())
            shots[f"{name}.png"] = {"scenario": "built-in default (training)", "shown": shown}
            ctx.close()
        html_path = Path(tmp) / "report.html"
        html_path.write_text(render_html(report), encoding="utf-8")
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(html_path.as_uri())
        shown = page.evaluate(CARDS_JS)
        shown["version"] = page.get_attribute('meta[name="generator"]', "content") or ""
        _save("report", page.screenshot())
        shots["report.png"] = {"scenario": str(SCENARIO.relative_to(ROOT)), "shown": shown}
        ctx.close()
        browser.close()
    server.should_exit = True
    th.join(timeout=10)
    from screenshot_workbook import workbook_summary_png

    if shutil.which("soffice") and shutil.which("pdftoppm"):
        print(f"wrote {workbook_summary_png().relative_to(ROOT)}")
        shots["workbook-summary.png"] = {
            "scenario": "aitco roi-template (example inputs)",
            "shown": workbook_shown(),
        }
    else:
        print("soffice/pdftoppm not installed: workbook-summary.png not redrawn", file=sys.stderr)
    write_record(shots)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
