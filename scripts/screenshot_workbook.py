"""Regenerate docs/screenshots/workbook-summary.png: the ROI workbook's printed summary.

Writes the ``aitco roi-template`` workbook (the seed example's inputs), prints it to PDF with
headless LibreOffice (``soffice --convert-to pdf``, the workbook's own print layout: one
landscape page per sheet), finds the page of the summary and rasterises it with poppler's
``pdftoppm``. Needs ``soffice`` (Debian libreoffice-calc) and ``pdftoppm`` (poppler-utils).

Usage::

    PYTHONPATH=src python scripts/screenshot_workbook.py [OUT.png]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "screenshots" / "workbook-summary.png"
#: Resolution of the PNG; lowered until the file is under MAX_BYTES.
DPIS = (96, 80, 64)
MAX_BYTES = 300_000
SUMMARY_MARK = "aitco ROI workbook: summary"
TIMEOUT_S = 240


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(
            f"error: {name} is not installed (apt-get install libreoffice-calc poppler-utils)"
        )
    return path


def workbook_pdf(tmp: Path) -> Path:
    """Write the template workbook and print it to PDF with headless LibreOffice."""
    from aitco.report.xlsx import example_inputs, write_roi_workbook

    book = write_roi_workbook(tmp / "aitco-roi.xlsx", example_inputs())
    soffice = shutil.which("soffice") or _tool("libreoffice")
    subprocess.run(
        [
            soffice,
            f"-env:UserInstallation={(tmp / 'profile').as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            "pdf",
            "--outdir",
            str(tmp),
            str(book),
        ],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    return tmp / "aitco-roi.pdf"


def summary_page(pdf: Path) -> int:
    """1-based number of the PDF page that holds the summary sheet."""
    info = subprocess.run([_tool("pdfinfo"), str(pdf)], check=True, capture_output=True, text=True)
    pages = int(next(ln.split()[1] for ln in info.stdout.splitlines() if ln.startswith("Pages:")))
    for page in range(1, pages + 1):
        text = subprocess.run(
            [_tool("pdftotext"), "-f", str(page), "-l", str(page), str(pdf), "-"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        if SUMMARY_MARK in text:
            return page
    raise SystemExit(f"error: no page of {pdf} shows {SUMMARY_MARK!r}")


def workbook_summary_png(out: Path = DEFAULT_OUT) -> Path:
    """Write the PNG of the workbook's printed summary page to ``out`` (< MAX_BYTES)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        pdf = workbook_pdf(tmp)
        page = summary_page(pdf)
        for dpi in DPIS:
            stem = tmp / "summary"
            subprocess.run(
                [
                    _tool("pdftoppm"),
                    "-png",
                    "-r",
                    str(dpi),
                    "-f",
                    str(page),
                    "-l",
                    str(page),
                    "-singlefile",
                    str(pdf),
                    str(stem),
                ],
                check=True,
                capture_output=True,
            )
            png = stem.with_suffix(".png")
            if png.stat().st_size < MAX_BYTES:
                shutil.copyfile(png, out)
                return out
    raise SystemExit(f"error: the summary page is over {MAX_BYTES} bytes even at {DPIS[-1]} dpi")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    path = workbook_summary_png(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
