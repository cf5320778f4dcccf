"""The aitco web app: a scenario builder, the comparison, charts and downloads (FastAPI + htmx).

The page is a thin client of the JSON API below (``/api/v1/...``, described by ``/openapi.json``):
its form is sent as a scenario JSON to ``POST /api/v1/compare``, which answers JSON, or, for
htmx requests, the HTML fragment rendered from the very same result. Validation is the CLI's:
the body goes through :meth:`aitco.decide.scenario.Scenario.from_dict`, and every
:class:`aitco.errors.AitcoError` becomes a 422 JSON ``{"error": {field, value, expected, ...}}``.

Nothing is fetched from a CDN: htmx is vendored under ``static/`` with its licence. Request
bodies are limited to :data:`MAX_BODY_BYTES`; ``aitco web`` binds to 127.0.0.1 by default.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from aitco import __version__
from aitco.catalog.loader import Catalog, load_catalog
from aitco.decide.defaults import default_inference, default_training
from aitco.decide.scenario import NAMED_LOAD_PROFILES, Precision, PricingMode, Scenario
from aitco.errors import AitcoError, InputError, UnknownIdError
from aitco.limits import MAX_JSON_DEPTH, check_json_depth
from aitco.report.html import answer_context, environment, figure_views, render_html
from aitco.report.model import ReportData, build_report
from aitco.report.plots import report_figures
from aitco.report.xlsx import example_inputs, roi_workbook_bytes, workbook_for
from aitco.web import reconcile as reconcile_web
from aitco.web.forms import (
    FormRow,
    check_plausible,
    check_web_scenario,
    form_field,
    form_message,
    form_rows,
    priceable_pricing,
    pricing_check,
    providers_for,
)

#: Largest request body accepted. [bytes]
MAX_BODY_BYTES = 64 * 1024
#: Comparisons kept in memory (keyed by the canonical scenario JSON).
CACHE_SIZE = 64
#: Plots shown on the page (the downloaded report has them all; the page draws the cost
#: breakdown itself, as bars).
FRAGMENT_FIGURES = ("waterfall_1", "pareto_time", "pareto_latency")
#: The one network address in the vendored ReDoc bundle (its logo), replaced by a local icon.
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
#: Empty option rows the page's scenario builder offers below each kind's default rows.
FORM_SPARE_ROWS = 1

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data: blob:; script-src 'self'; "
        "style-src 'self' 'unsafe-inline'; connect-src 'self'; worker-src 'self' blob:; "
        "frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_bytes`` with 413, by header and while streaming."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int = MAX_BODY_BYTES,
        path_limits: dict[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        #: Larger limits of the upload routes, by exact path.
        self.path_limits = dict(path_limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, counting the body bytes."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.path_limits.get(scope.get("path", ""), self.max_bytes)
        for k, v in scope.get("headers", []):
            if k == b"content-length":
                try:
                    too_big = int(v) > limit
                except ValueError:
                    too_big = True
                if too_big:
                    await self._refuse(scope, send)
                    return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:
                    raise _TooLargeError
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooLargeError:
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        limit = self.path_limits.get(scope.get("path", ""), self.max_bytes)
        body = json.dumps(
            {
                "error": {
                    "field": "body",
                    "value": "...",
                    "expected": f"at most {limit} bytes",
                    "message": f"request body larger than {limit} bytes",
                }
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class _TooLargeError(Exception):
    pass


def error_json(exc: AitcoError) -> dict[str, Any]:
    """Return the 422 body of an error: the field, value and expectation of the CLI line.

    Besides the CLI's ``message``, an input error says where the field is on the page's form
    (``form``: ``{input, row, label}``) and gives ``form_message``, the sentence shown next to it.
    Values that JSON cannot carry (NaN, infinities, objects) are sent as their text.
    """
    err: dict[str, Any] = {"message": str(exc), "type": type(exc).__name__}
    if isinstance(exc, InputError):
        value = exc.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            value = repr(value)
        err.update(field=exc.field, value=value, expected=exc.expected)
        if exc.hint:
            err["hint"] = exc.hint
        err["form"] = form_field(str(exc.field))
        err["form_message"] = form_message(err)
    return {"error": err}


class _Engine:
    """Scenario -> ReportData with a small LRU cache, and figures rendered under a lock."""

    def __init__(self, catalog: Catalog, compare: Any | None = None) -> None:
        self.catalog = catalog
        self.compare = compare
        self._cache: OrderedDict[str, ReportData] = OrderedDict()
        self._figs: OrderedDict[str, list[tuple[str, str, bytes]]] = OrderedDict()
        self._lock = threading.Lock()
        self._plot_lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}

    def _key_lock(self, key: str) -> threading.Lock:
        """One lock per key, so that concurrent requests for one scenario compute it once."""
        with self._lock:
            lk = self._inflight.get(key)
            if lk is None:
                lk = self._inflight[key] = threading.Lock()
                if len(self._inflight) > 4 * CACHE_SIZE:
                    for k in [k for k, v in self._inflight.items() if not v.locked()][:CACHE_SIZE]:
                        if k != key:
                            del self._inflight[k]
            return lk

    def _build(self, scen: Scenario) -> ReportData:
        """Compare; a non-finite cost (inputs past what the engines can price) is an input error."""
        try:
            return build_report(scen, self.catalog, compare=self.compare)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            raise InputError(
                "workload",
                "(the scenario)",
                "inputs whose costs are finite numbers",
                hint=str(exc)[:200],
            ) from exc

    def _build_dropping(self, scen: Scenario) -> ReportData:
        """Compare every option; when some cannot be priced, compare the others and say why.

        One option that cannot be priced (a precision its hardware lacks, a pricing mode with no
        offer) must not wipe out the comparison of the others. Each option is retried alone only
        after the whole comparison failed; when every option fails, the first error is raised.
        """
        try:
            return self._build(scen)
        except AitcoError as first:
            if len(scen.options) < 2:
                raise
            kept, dropped = [], []
            for k, opt in enumerate(scen.options):
                try:
                    self._build(scen.model_copy(update={"options": [opt]}))
                    kept.append(opt)
                except AitcoError as one:
                    dropped.append((k, opt, one))
            if not kept or not dropped:
                raise first from None
        data = self._build(scen.model_copy(update={"options": kept}))
        for k, opt, err in dropped:
            info = error_json(err)["error"]
            why = str(info.get("form_message") or err).replace("option 1)", f"option {k + 1})")
            data.dropped_options.append(
                {
                    "option": k + 1,
                    "name": opt.label,
                    "field": f"options[{k}]",
                    "message": f"Option {k + 1} ({opt.label}) cannot be priced: {why}",
                }
            )
        return data

    def report(self, body: Any) -> tuple[str, ReportData]:
        scen = Scenario.from_dict(body, file=None)  # the CLI's validation (limits.py ranges)
        check_plausible(body)  # then what only a web form needs: the form's narrower ranges
        check_web_scenario(scen, self.catalog)  # no file path: the server reads no files
        key = json.dumps(scen.to_dict(), sort_keys=True)
        with self._key_lock("report:" + key):
            with self._lock:
                hit = self._cache.get(key)
                if hit is not None:
                    self._cache.move_to_end(key)
                    return key, hit
            data = self._build_dropping(scen)
            with self._lock:
                self._cache[key] = data
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        return key, data

    def figures(
        self,
        key: str,
        data: ReportData,
        only: tuple[str, ...] | None = None,
        narrow: bool = False,
    ) -> list[tuple[str, str, bytes]]:
        """Return the report's charts (or their phone variants), drawn once per scenario."""
        fkey = f"{only}:{narrow}:{key}"
        with self._key_lock("figs:" + fkey):
            with self._lock:
                hit = self._figs.get(fkey)
            if hit is not None:
                return hit
            with self._plot_lock:
                figs = report_figures(data, only=only, narrow=narrow)
            with self._lock:
                self._figs[fkey] = figs
                while len(self._figs) > CACHE_SIZE:
                    self._figs.popitem(last=False)
        return figs


def _scenario_schema(catalog: Catalog) -> tuple[dict[str, Any], dict[str, Any]]:
    """JSON schema of a web scenario: the Scenario's, with catalog ids as enums, no file paths."""
    s = Scenario.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = s.pop("$defs", {})
    s.get("properties", {}).pop("calibration", None)
    # what the page sends (the server also takes multi-stage ``stages``)
    s["required"] = ["workload", "options"]
    if "options" in s.get("properties", {}):
        s["properties"]["options"]["minItems"] = 1
    hardware = sorted([*catalog.accelerators, *catalog.systems])
    if "HardwareOption" in defs:
        defs["HardwareOption"]["properties"]["hardware"]["enum"] = hardware
    for name in ("TrainingWorkload", "InferenceWorkload"):
        if name in defs:
            defs[name]["properties"]["model"]["enum"] = sorted(catalog.models)
    prof = defs.get("InferenceWorkload", {}).get("properties", {}).get("load_profile", {})
    for alt in prof.get("anyOf", []):
        if alt.get("type") == "string":  # a named profile, never a file path
            alt["enum"] = list(NAMED_LOAD_PROFILES)
    if prof:
        prof["description"] = "'diurnal' (qps: the day's mean) or the 24 hourly rates [requests/s]"
    return s, defs


def _body_examples() -> dict[str, Any]:
    """Request examples of the scenario body: the two built-in default comparisons.

    Swagger's "Try it out" sends the first; ``tests/web/test_api.py`` posts every one.
    """
    return {
        "training": {
            "summary": "The default training comparison (aitco compare)",
            "value": default_training().to_dict(),
        },
        "service": {
            "summary": "The default inference-service comparison (aitco compare)",
            "value": default_inference().to_dict(),
        },
    }


def _ex(value: Any) -> dict[str, Any]:
    """One OpenAPI example of a query parameter (the row "48 L40S on AWS" of the page)."""
    return {"row": {"summary": "48 L40S rented on AWS", "value": value}}


_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"$ref": "#/components/schemas/Scenario"},
                "examples": _body_examples(),
            }
        },
    }
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    422: {"description": "Invalid input: the field, the value and what was expected."},
    413: {"description": "Request body too large."},
}


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    check_json_depth(raw)  # before parsing: 30,000 "[" must not reach the recursion limit
    try:
        return json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(
            "body", raw[:40].decode("utf-8", "replace"), "a JSON scenario object"
        ) from exc


def _is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request", "").lower() == "true"


def create_app(
    overlays: Sequence[str] = (),
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    compare: Callable[[Scenario, Catalog], Any] | None = None,
) -> FastAPI:
    """Build the web app.

    Parameters
    ----------
    overlays : sequence of str
        Catalog overlay files (as ``--catalog``).
    max_body_bytes : int
        Largest request body accepted. [bytes]
    compare : callable, optional
        ``compare(scenario, catalog) -> Comparison``; default :func:`aitco.decide.compare.compare`
        (tests pass their own to check the wiring on explicit data).

    Returns
    -------
    fastapi.FastAPI
        The ASGI app (``uvicorn.run(create_app(), host="127.0.0.1")``).
    """
    catalog = load_catalog(list(overlays))
    engine = _Engine(catalog, compare)
    here = Path(str(resources.files("aitco.web")))
    env = environment([here / "templates"])

    app = FastAPI(
        title="aitco",
        version=__version__,
        description="What will this AI workload really cost, on which hardware, is it worth it?",
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=max_body_bytes,
        path_limits={p: reconcile_web.MAX_UPLOAD_BYTES for p in reconcile_web.UPLOAD_PATHS},
    )
    app.mount("/static", StaticFiles(directory=here / "static"), name="static")
    app.mount("/static-docs", StaticFiles(directory=docs_assets_dir()), name="static-docs")

    @app.middleware("http")
    async def _headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        resp = await call_next(request)
        for k, v in _SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp

    @app.exception_handler(AitcoError)
    async def _aitco_error(request: Request, exc: AitcoError) -> Response:
        # JSON for htmx too: the page puts the message next to the field and keeps the result
        return JSONResponse(error_json(exc), status_code=422)

    @app.exception_handler(RecursionError)
    async def _too_deep(request: Request, exc: RecursionError) -> Response:
        err = InputError("body", "...", f"at most {MAX_JSON_DEPTH} nested lists/objects")
        return JSONResponse(error_json(err), status_code=422)

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception) -> Response:
        # an unexpected failure still answers JSON (never an HTML traceback page)
        body = {"error": {"message": f"internal error ({type(exc).__name__})", "type": "internal"}}
        return JSONResponse(body, status_code=500)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        scen, defs = _scenario_schema(catalog)
        comps = schema.setdefault("components", {}).setdefault("schemas", {})
        comps.update(defs)
        comps["Scenario"] = scen
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

    # ------------------------------------------------------------------ JSON API
    @app.get("/api/v1/health", tags=["meta"])
    def health() -> dict[str, str]:
        """Liveness probe."""
        return {"status": "ok", "version": __version__}

    @app.get("/api/v1/catalog", tags=["catalog"])
    def catalog_lists() -> dict[str, Any]:
        """Pick-lists of the scenario builder: hardware, models, pricing modes, precisions."""
        return pick_lists(catalog)

    @app.get("/api/v1/pricing", tags=["catalog"], responses=_ERRORS)
    def pricing_api(
        hardware: str = Query(
            ...,
            max_length=80,
            description="Accelerator or system id.",
            openapi_examples=_ex("l40s"),
        ),
        gpus: int = Query(
            1,
            ge=1,
            le=1_000_000,
            description="GPUs of the option (of one replica).",
            openapi_examples=_ex(48),
        ),
        provider: str = Query(
            "",
            max_length=40,
            description="'' (one home instance type), 'any', or a provider id.",
            openapi_examples=_ex("aws"),
        ),
    ) -> dict[str, Any]:
        """Which pricing modes the form can price for GPUS x HARDWARE on PROVIDER, and why not.

        The answer of the offer selection ``compare`` prices with: ``pricing`` maps each mode to
        ``""`` (priceable) or the reason it is not; ``providers`` lists who rents the hardware.
        """
        return pricing_lists(catalog, hardware, gpus, provider)

    @app.post("/api/v1/compare", tags=["compare"], openapi_extra=_BODY, responses=_ERRORS)
    async def compare_api(request: Request) -> Response:
        """Compare the options of a scenario: totals, itemised breakdown, Pareto points.

        Same result as ``aitco compare --json``; htmx requests get the HTML fragment instead.
        """
        body = await _json_body(request)
        key, data = await _run(engine.report, body)
        if _is_htmx(request):
            figs = await _run(engine.figures, key, data, FRAGMENT_FIGURES)
            small = await _run(engine.figures, key, data, FRAGMENT_FIGURES, True)
            return HTMLResponse(_fragment(env, data, figs, small))
        return JSONResponse(_finite(data.to_json()))

    @app.post("/api/v1/report", tags=["report"], openapi_extra=_BODY, responses=_ERRORS)
    async def report_api(
        request: Request,
        format: str = Query(
            "html", pattern="^(html|json|xlsx)$", description="html, json or xlsx."
        ),
        monthly_savings_usd: float | None = Query(
            None,
            ge=0,
            le=1e12,
            description="ROI workbook: benefit per month (savings or revenue). [USD/month]",
        ),
        horizon_months: int | None = Query(
            None, ge=1, le=600, description="ROI workbook: months simulated. [months]"
        ),
    ) -> Response:
        """Download the report (self-contained HTML), the comparison JSON or the ROI workbook.

        The workbook starts from the ``aitco roi-template`` example inputs, with the cheapest
        option's cost and the benefit and horizon given here (as the page's ROI fields send).
        """
        body = await _json_body(request)
        key, data = await _run(engine.report, body)
        stem = _safe_stem(data.title)
        if format == "json":
            content = json.dumps(_finite(data.to_json()), indent=2).encode()
            return Response(content, media_type="application/json", headers=_attach(f"{stem}.json"))
        if format == "xlsx":
            content = await _run(_workbook, data, monthly_savings_usd, horizon_months)
            return Response(
                content,
                media_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                headers=_attach(f"{stem}_roi.xlsx"),
            )

        figs = await _run(engine.figures, key, data)
        text = await _run(render_html, data, figs)
        return Response(
            text.encode(), media_type="text/html; charset=utf-8", headers=_attach(f"{stem}.html")
        )

    # ------------------------------------------------------------------ API docs (offline)
    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def swagger_docs() -> HTMLResponse:
        return HTMLResponse(env.get_template("docs.html.j2").render(version=__version__))

    redoc_js: list[bytes] = []

    @app.get("/static-docs-local/redoc.standalone.js", include_in_schema=False)
    def redoc_script() -> Response:
        # ReDoc draws its logo from a CDN: point it at the local icon so nothing leaves the host
        if not redoc_js:
            text = (docs_assets_dir() / "redoc.standalone.js").read_bytes()
            redoc_js.append(text.replace(REDOC_CDN_LOGO.encode(), b"/static-docs/favicon.png"))
        return Response(redoc_js[0], media_type="text/javascript")

    @app.get("/redoc", response_class=HTMLResponse, include_in_schema=False)
    def redoc_docs() -> HTMLResponse:
        return HTMLResponse(env.get_template("redoc.html.j2").render(version=__version__))

    reconcile_web.register(app, catalog, env, _run)

    # ------------------------------------------------------------------ page
    form = form_defaults(catalog)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        html = env.get_template("index.html.j2").render(
            lists=pick_lists(catalog), version=__version__, form=form
        )
        return HTMLResponse(html)

    return app


async def _run(fn: Callable[..., Any], *args: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args)


def _workbook(data: ReportData, savings_usd: float | None, horizon_months: int | None) -> bytes:
    inputs = example_inputs()
    if savings_usd is not None:
        inputs.monthly_savings_usd = savings_usd
        inputs.notes.append(f"monthly_savings_usd = {savings_usd:,.0f} USD: from the web form")
    if horizon_months is not None:
        inputs.horizon_months = horizon_months
        inputs.notes.append(f"horizon_months = {horizon_months}: from the web form")
    return roi_workbook_bytes(workbook_for(data, inputs))


def _fragment(
    env: Any,
    data: ReportData,
    figs: list[tuple[str, str, bytes]],
    narrow: list[tuple[str, str, bytes]],
) -> str:
    shown = figure_views(figs, narrow)
    return str(env.get_template("results.html.j2").render(**answer_context(data), figures=shown))


def docs_assets_dir() -> Path:
    """Folder of the Swagger UI and ReDoc assets (from the ``fastapi-offline`` package, MIT).

    Served under ``/static-docs`` so that ``/docs`` and ``/redoc`` work with no network.
    """
    import fastapi_offline

    return Path(fastapi_offline.__file__).parent / "static"


def _finite(o: Any) -> Any:
    """Replace NaN and infinities by None so that the JSON is strict."""
    if isinstance(o, float):
        return o if o == o and o not in (float("inf"), float("-inf")) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def _safe_stem(name: str) -> str:
    s = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:60].strip("_")
    return s or "aitco_report"


def _attach(filename: str) -> dict[str, str]:
    return {"content-disposition": f'attachment; filename="{filename}"'}


def pick_lists(catalog: Catalog) -> dict[str, Any]:
    """Ids the scenario builder offers, from the catalog and the scenario schema."""
    from typing import get_args

    modes = list(get_args(PricingMode))
    hw = [
        {
            "id": a.id,
            "name": a.name or a.id,
            "memory_gb": a.memory_gb,
            "pricing": priceable_pricing(catalog, a.id, modes),
        }
        for a in sorted(catalog.accelerators.values(), key=lambda a: a.id)
    ]
    return {
        "hardware": hw,
        "systems": sorted(catalog.systems),
        "models": sorted(catalog.models),
        "pricing": modes,
        "precisions": list(get_args(Precision)),
        "workloads": ["training", "inference"],
    }


def pricing_lists(catalog: Catalog, hardware: str, gpus: int, provider: str) -> dict[str, Any]:
    """Return the priceable modes of one option row of the page (``GET /api/v1/pricing``).

    Raises
    ------
    InputError
        An unknown hardware id, or a provider that does not rent it.
    """
    from typing import get_args

    known = sorted([*catalog.accelerators, *catalog.systems])
    if hardware not in known:
        raise UnknownIdError("hardware", hardware, known, field="hardware")
    providers = providers_for(catalog, hardware)
    if provider not in ("", "any", *providers):
        raise InputError(
            "provider",
            provider,
            f"'', 'any' or a provider that rents {hardware}",
            hint=f"providers: {', '.join(providers) or 'none'}",
        )
    modes = list(get_args(PricingMode))
    return {
        "hardware": hardware,
        "gpus": gpus,
        "provider": provider,
        "providers": providers,
        "pricing": pricing_check(catalog, hardware, gpus, provider or None, modes),
    }


def form_defaults(catalog: Catalog) -> dict[str, Any]:
    """Return the page's form filled with the built-in default scenarios (one per kind).

    The training form holds :func:`aitco.decide.defaults.default_training`, the inference form
    :func:`aitco.decide.defaults.default_inference`: the page's first answer is ``aitco
    compare``'s (``tests/web/test_default.py`` compares them).
    """
    from typing import get_args

    modes = list(get_args(PricingMode))
    out: dict[str, Any] = {"modes": modes}
    for kind, scen in (("training", default_training()), ("inference", default_inference())):
        rows = [*form_rows(scen), *(FormRow("", 1, "", ()) for _ in range(FORM_SPARE_ROWS))]
        out[kind] = {
            "name": scen.name,
            "workload": scen.workload.model_dump(mode="json") if scen.workload else {},
            "compliance": scen.compliance.model_dump(mode="json"),
            "rows": [
                {
                    "row": r,
                    "providers": providers_for(catalog, r.hardware) if r.hardware else [],
                    "check": pricing_check(catalog, r.hardware, r.gpus, r.provider, modes)
                    if r.hardware
                    else {},
                }
                for r in rows
            ],
        }
    roi = example_inputs()
    out["roi"] = {
        "monthly_savings_usd": roi.monthly_savings_usd,
        "horizon_months": roi.horizon_months,
    }
    return out
