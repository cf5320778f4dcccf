"""Regenerate docs/screenshots/: the web app (desktop and phone) and the HTML report.

Run from the repository root with Debian's chromium installed::

    PYTHONPATH=src python scripts/screenshots.py

It serves the web app on 127.0.0.1 (real catalog, real engines), opens it in headless chromium
through Playwright at 1400x900 and 390x844, renders the report of
``examples/training-h100-vs-a100-vs-l40s.yaml`` and shoots its first screen. PNGs are reduced to
256 colours so that each stays under :data:`MAX_PNG_BYTES`. The ROI workbook's printed summary
is drawn by ``scripts/screenshot_workbook.py`` (headless LibreOffice), called at the end when
``soffice`` is installed.
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
SCENARIO = ROOT / "examples" / "training-h100-vs-a100-vs-l40s.yaml"
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
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        for name, (w, h) in VIEWS.items():
            ctx = browser.new_context(viewport={"width": w, "height": h})
            page = ctx.new_page()
            page.set_default_timeout(120_000)
            page.goto(base)
            page.wait_for_selector("#summary .card")
            page.wait_for_load_state("networkidle")
            _save(name, page.screenshot())
            ctx.close()
        html_path = Path(tmp) / "report.html"
        html_path.write_text(render_html(report), encoding="utf-8")
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(html_path.as_uri())
        _save("report", page.screenshot())
        ctx.close()
        browser.close()
    server.should_exit = True
    th.join(timeout=10)
    from screenshot_workbook import workbook_summary_png

    if shutil.which("soffice") and shutil.which("pdftoppm"):
        print(f"wrote {workbook_summary_png().relative_to(ROOT)}")
    else:
        print("soffice/pdftoppm not installed: workbook-summary.png not redrawn", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
