"""The web page of ``aitco reconcile``: upload a scenario, a FOCUS bill and the run's logs.

``GET /reconcile`` shows a form (three file inputs, the option, the run's tags, the telemetry
interval); the form posts to ``POST /reconcile``, which answers the page with the plan-against-bill
section of the report (waterfall, variances, items). ``POST /api/v1/reconcile`` takes the same
multipart form and answers the JSON of ``aitco reconcile --json``. Both run
:func:`aitco.decide.reconcile.reconcile` on the files saved in a temporary folder (removed after
the request), so a large bill is streamed from disk, never held in memory. Uploads are limited to
:data:`MAX_UPLOAD_BYTES` (the app's other routes keep their small body limit).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from markupsafe import Markup

from aitco import __version__
from aitco.catalog.loader import Catalog
from aitco.decide.reconcile import parse_logs, reconcile
from aitco.decide.scenario import Scenario
from aitco.errors import AitcoError, InputError
from aitco.report.html import templates_dir
from aitco.report.reconcile import section_context
from aitco.web.forms import check_web_scenario

#: Paths of the reconcile routes (they take uploads up to MAX_UPLOAD_BYTES).
PAGE_PATH = "/reconcile"
API_PATH = "/api/v1/reconcile"
UPLOAD_PATHS = (PAGE_PATH, API_PATH)
#: Largest upload accepted by the reconcile routes (the bill and the logs together). [bytes]
MAX_UPLOAD_BYTES = 256 * 2**20
#: Log files one request may carry.
MAX_LOG_FILES = 8
#: File name endings kept on the saved uploads (formats are detected from them and the bytes).
_SUFFIX = re.compile(r"(\.(?:csv|txt|log|json|jsonl|parquet|yaml|yml))?(\.gz)?$", re.I)


def _suffix(name: str | None) -> str:
    m = _SUFFIX.search(name or "")
    return (m.group(0) if m else "").lower()


async def _save(form: Any, field: str, folder: Path, stem: str) -> list[Path]:
    """Write the uploads of ``field`` into ``folder``; returns their paths."""
    out: list[Path] = []
    for i, up in enumerate(form.getlist(field)):
        if isinstance(up, str) or not getattr(up, "filename", None):
            continue
        p = folder / f"{stem}{i}{_suffix(up.filename)}"
        with open(p, "wb") as fh:
            while chunk := await up.read(2**20):
                fh.write(chunk)
        out.append(p)
    return out


def _tags(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        k, sep, v = part.partition("=")
        if not sep or not k:
            raise InputError("tags", part, "KEY=VALUE pairs separated by commas")
        out[k] = v
    return out


def _number(form: Any, field: str) -> float | None:
    raw = str(form.get(field) or "").strip()
    if not raw:
        return None
    try:
        x = float(raw)
    except ValueError as exc:
        raise InputError(field, raw, "a number") from exc
    if not x > 0:
        raise InputError(field, raw, "a positive number")
    return x


async def run_form(request: Request, catalog: Catalog, run: Callable[..., Any]) -> dict[str, Any]:
    """Reconcile the uploaded files of a multipart request; the reconciliation's JSON."""
    async with request.form(max_files=MAX_LOG_FILES + 2) as form:
        with tempfile.TemporaryDirectory(prefix="aitco-reconcile-") as tmp:
            result = await _reconcile_form(form, Path(tmp), catalog, run)
    return result


async def _reconcile_form(
    form: Any, folder: Path, catalog: Catalog, run: Callable[..., Any]
) -> dict[str, Any]:
    scen = await _save(form, "scenario", folder, "scenario")
    bill = await _save(form, "bill", folder, "bill")
    logs = await _save(form, "logs", folder, "log")
    if len(scen) != 1:
        raise InputError("scenario", len(scen), "one scenario YAML file")
    if len(bill) != 1:
        raise InputError("bill", len(bill), "one FOCUS bill (CSV, .csv.gz or Parquet)")
    if len(logs) > MAX_LOG_FILES:
        raise InputError("logs", len(logs), f"at most {MAX_LOG_FILES} log files")
    option = str(form.get("option") or "").strip() or None
    tags = _tags(str(form.get("tags") or ""))
    interval = _number(form, "interval_s")

    def work() -> dict[str, Any]:
        scenario = Scenario.from_yaml(scen[0])
        # an uploaded scenario names no file on the server (calibration, model, load profile)
        check_web_scenario(scenario, catalog)
        parsed = parse_logs(logs, interval_s=interval)
        rec = reconcile(scenario, catalog, bill[0], option=option, logs=parsed, tags=tags)
        out = rec.to_json()
        out["bill"]["path"] = "uploaded bill"  # not the server's temporary path
        return out

    result: dict[str, Any] = await run(work)
    return result


def register(app: FastAPI, catalog: Catalog, env: Any, run: Callable[..., Any]) -> None:
    """Add ``GET/POST /reconcile`` and ``POST /api/v1/reconcile`` to the web app."""
    css = Markup((templates_dir() / "report.css").read_text(encoding="utf-8"))

    def page(result: dict[str, Any] | None = None, error: str | None = None) -> HTMLResponse:
        html = env.get_template("reconcile_form.html.j2").render(
            version=__version__,
            css=css,
            r=section_context(result) if result else None,
            error=error,
            max_mb=MAX_UPLOAD_BYTES // 2**20,
        )
        return HTMLResponse(html, status_code=422 if error else 200)

    @app.get(PAGE_PATH, response_class=HTMLResponse, include_in_schema=False)
    def reconcile_page() -> HTMLResponse:
        return page()

    @app.post(PAGE_PATH, response_class=HTMLResponse, include_in_schema=False)
    async def reconcile_submit(request: Request) -> Response:
        try:
            return page(await run_form(request, catalog, run))
        except AitcoError as exc:
            return page(error=str(exc))

    @app.post(
        API_PATH,
        tags=["reconcile"],
        responses={422: {"description": "Invalid input: field, value and expectation."}},
    )
    async def reconcile_api(request: Request) -> Response:
        """Reconcile a plan with its bill (multipart: scenario, bill, logs, option, tags).

        Same result as ``aitco reconcile --json``: ``predicted_usd``, ``billed_usd``,
        ``variances`` and ``unexplained_usd``, which add up exactly.
        """
        return JSONResponse(await run_form(request, catalog, run))
