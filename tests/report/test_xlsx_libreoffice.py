"""LibreOffice opens the ROI workbook and shows the numbers aitco computed (issue 14 item 5).

One headless ``soffice`` start converts two workbooks to CSV (every sheet):

* the workbook as written: LibreOffice shows its stored (cached) results without recalculating
  (its default for files that say Excel wrote them), so this is what a user sees on open;
* the same workbook with every cached result removed: LibreOffice must calculate each formula
  itself, so this gives the recalculated values.

The two must be equal, non-zero, and equal to ``aitco roi FILE --json`` for the same inputs.
Skipped, with the reason, when ``soffice`` is not installed (CI installs libreoffice-calc).
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from aitco.cli.app import main
from aitco.decide import roi
from aitco.report import xlsx

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = ("roi_support_bot.yaml", "roi_decaying_traffic.yaml")
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
#: LibreOffice's CSV filter: comma, '"', UTF-8, from line 1, raw values (not as shown), and
#: sheet -1 = every sheet to its own file (LibreOffice >= 7.2).
CSV_FILTER = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1"
SOFFICE_TIMEOUT_S = 240

pytestmark = [
    pytest.mark.integration,  # starts LibreOffice (tests/README.md)
    pytest.mark.skipif(
        SOFFICE is None,
        reason="LibreOffice (soffice) is not installed: apt-get install libreoffice-calc",
    ),
]


def strip_cached_results(src: Path, dst: Path) -> None:
    """Copy an .xlsx without the cached result of any formula (LibreOffice must calculate)."""
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zo:
        for item in zi.infolist():
            data = zi.read(item.filename)
            if item.filename.startswith("xl/worksheets/sheet"):
                text = data.decode("utf-8")
                text = re.sub(r'(<c [^>]*?) t="str"(>\s*<f>)', r"\1\2", text)
                text = re.sub(r"(</f>)<v>[^<]*</v>", r"\1", text)
                data = text.encode("utf-8")
            zo.writestr(item, data)


def summary_from_csv(path: Path) -> dict[str, float | str]:
    """Summary values by name from LibreOffice's CSV of the Summary sheet."""
    out: dict[str, float | str] = {}
    with path.open(encoding="utf-8") as fh:
        for row in csv.reader(fh):
            if len(row) < 2 or row[0] not in xlsx.SUMMARY_KEYS:
                continue
            cell = row[1].strip()
            try:
                out[row[0]] = float(cell[:-1]) / 100.0 if cell.endswith("%") else float(cell)
            except ValueError:
                out[row[0]] = cell
    return out


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict]]:
    tmp = tmp_path_factory.mktemp("lo")
    books = []
    for name in FILES:
        stem = Path(name).stem
        inp = roi.RoiInputs.from_yaml(str(EXAMPLES / name))
        book = xlsx.write_roi_workbook(
            tmp / f"{stem}.xlsx", xlsx.WorkbookInputs.from_roi_inputs(inp)
        )
        strip_cached_results(book, tmp / f"{stem}_recalc.xlsx")
        books += [book, tmp / f"{stem}_recalc.xlsx"]
    out_dir = tmp / "csv"
    assert SOFFICE is not None
    proc = subprocess.run(
        [
            SOFFICE,
            f"-env:UserInstallation={(tmp / 'profile').as_uri()}",
            "--headless",
            "--norestore",
            "--convert-to",
            CSV_FILTER,
            "--outdir",
            str(out_dir),
            *map(str, books),
        ],
        capture_output=True,
        text=True,
        timeout=SOFFICE_TIMEOUT_S,
        check=False,
    )
    result: dict[str, dict[str, dict]] = {}
    for name in FILES:
        stem = Path(name).stem
        opened = out_dir / f"{stem}-Summary.csv"
        recalc = out_dir / f"{stem}_recalc-Summary.csv"
        assert opened.exists(), proc.stdout + proc.stderr
        assert recalc.exists(), proc.stdout + proc.stderr
        result[name] = {"opened": summary_from_csv(opened), "recalc": summary_from_csv(recalc)}
    return result


def cli_json(name: str, capsys: pytest.CaptureFixture[str]) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(["roi", str(EXAMPLES / name), "--json"])
    assert exc.value.code == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", FILES)
def test_libreoffice_shows_the_computed_values_on_open(
    name: str, converted: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    opened, recalc = converted[name]["opened"], converted[name]["recalc"]
    cli = cli_json(name, capsys)
    for key, _label, _unit in roi.ROI_SUMMARY:
        a, b, ref = opened.get(key), recalc.get(key), cli[key]
        if ref is None:  # no such month (e.g. never loses again): text in the cell, as on open
            assert isinstance(a, str), (key, a)
            assert a, (key, a)
            assert a == b, (key, a, b)
            continue
        assert isinstance(a, float), (key, a)
        assert isinstance(b, float), (key, b)
        assert a != 0.0, key
        assert math.isfinite(a), (key, a)
        # LibreOffice writes 15 significant digits; its IRR iterates to about 1e-10
        assert a == pytest.approx(b, rel=1e-9), (key, a, b)
        assert a == pytest.approx(ref, rel=1e-9), (key, a, ref)
