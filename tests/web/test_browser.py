"""The page in headless Chromium (Debian's /usr/bin/chromium through Playwright's Python API).

What a person sees, at a desktop (1400x900) and a phone (390x844) viewport: the answer (summary
cards and the comparison chart) within the first screen, labels rather than JSON keys as headers,
an error next to the field it concerns with the last good result kept and marked out of date,
infeasible options marked, offline API docs, and no request leaving 127.0.0.1.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.web.conftest import explicit_compare

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORTS = {"desktop": (1400, 900), "phone": (390, 844)}
#: The hardware the fixture below marks infeasible (the page's third default row).
INFEASIBLE_HW = "l40s"
INFEASIBLE_WHY = "test fixture: no capacity for l40s"
SNAKE_KEY = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")

pytestmark = [
    pytest.mark.browser,  # the integration tier (tests/README.md)
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"
    ),
]


def marking_compare(scenario: Any, catalog: Any) -> SimpleNamespace:
    """Return the explicit test pricing with every l40s option marked infeasible."""
    comp = explicit_compare(scenario, catalog)
    for b in comp.options:
        if b.hardware == INFEASIBLE_HW:
            b.values["feasible"] = False
            b.values["infeasible_reasons"] = [INFEASIBLE_WHY]
        else:
            b.values["feasible"] = True
            b.values["infeasible_reasons"] = []
    return comp


@pytest.fixture(scope="module")
def app() -> Any:
    from aitco.web.app import create_app

    return create_app(compare=marking_compare)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


class Page(SimpleNamespace):
    """A page with what it requested and what went wrong in it."""


def _open(browser: Any, size: tuple[int, int]) -> Any:
    ctx = browser.new_context(accept_downloads=True, viewport={"width": size[0], "height": size[1]})
    pg = ctx.new_page()
    pg.set_default_timeout(20_000)
    requests: list[str] = []
    errors: list[str] = []
    pg.on("request", lambda r: requests.append(r.url))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return ctx, pg, requests, errors


def _local(requests: list[str], server: str) -> list[str]:
    return [u for u in requests if not u.startswith((server, "data:", "blob:"))]


def _first_row_total(page: Any) -> str:
    return str(page.locator("#comparison-table tbody tr").first.locator("td.total").inner_text())


@pytest.mark.parametrize("view", list(VIEWPORTS))
def test_answer_first_labels_and_infeasible(browser: Any, live_server: str, view: str) -> None:
    w, h = VIEWPORTS[view]
    ctx, page, requests, errors = _open(browser, (w, h))
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#summary .card")
        # the answer within the first screen: the summary cards and the first chart start in it
        for sel in ("#summary", "#chart-compare"):
            box = page.locator(sel).bounding_box()
            assert box is not None
            assert box["y"] < h, f"{sel} starts at {box['y']:.0f} px, below the first screen"
        first_card = page.locator("#summary .card").first.bounding_box()
        assert first_card is not None
        assert first_card["y"] + first_card["height"] <= h
        # nothing overflows the page sideways on a phone
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= w + 1, f"page is {width} px wide in a {w} px viewport"
        # headers are labels, not JSON keys
        heads = page.locator(
            "th[scope=col], #summary dt, figcaption, legend, label, .legend .key"
        ).all_inner_texts()
        names = page.locator("#summary .card").evaluate_all("els => els.map(e => e.dataset.option)")
        for n in sorted(names, key=len, reverse=True):  # option names are data, not headers
            heads = [t.replace(n, "") for t in heads]
        raw = [t for t in heads if SNAKE_KEY.search(t)]
        assert not raw, raw
        assert "Time to finish" in heads
        # infeasible options are marked, on their card and in the table
        bad = page.locator(f'#summary .card[data-option^="{INFEASIBLE_HW} "]')
        assert bad.get_attribute("data-feasible") == "false"
        assert "not feasible" in bad.inner_text()
        assert INFEASIBLE_WHY in bad.inner_text()
        assert page.locator("#comparison-table tr.infeasible").count() == 1
        # the cheapest mark goes to a feasible option, with its reason
        cheap = page.locator("#summary .mark.cheap").first.inner_text()
        assert "less than" in cheap
        assert not errors, errors
        assert not _local(requests, live_server), requests
    finally:
        ctx.close()


@pytest.mark.parametrize("view", list(VIEWPORTS))
def test_bad_field_message_beside_it_and_last_result_kept(
    browser: Any, live_server: str, view: str
) -> None:
    ctx, page, requests, errors = _open(browser, VIEWPORTS[view])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        before = _first_row_total(page)
        rows_before = page.locator("#comparison-table tbody tr").count()

        # a value the API refuses (GPUs = 0): the message sits right after the field
        gpus2 = page.locator('input[aria-label="GPUs 2"]')
        gpus2.fill("0")
        gpus2.dispatch_event("change")
        page.wait_for_selector(".field-error")
        assert gpus2.get_attribute("aria-invalid") == "true"
        msg = page.locator('input[aria-label="GPUs 2"] + .field-error').inner_text()
        assert msg.startswith("GPUs (option 2) must be at least 1"), msg
        assert "options.1" not in msg
        assert "Input should" not in msg
        # the last good result is still there, marked out of date
        assert page.locator("#comparison-table tbody tr").count() == rows_before
        assert _first_row_total(page) == before
        assert page.locator("#stale").is_visible()
        assert "stale" in (page.locator("#results").get_attribute("class") or "")

        # an implausible value (1e30 tokens): 422 with the range, beside the Tokens field
        gpus2.fill("32")
        tokens = page.locator('input[name="tokens"]')
        tokens.fill("1e30")
        tokens.dispatch_event("change")
        page.wait_for_selector('input[name="tokens"] + .field-error')
        msg = page.locator('input[name="tokens"] + .field-error').inner_text()
        assert "Tokens must be between 1 and 1e+16 tokens" in msg, msg
        assert _first_row_total(page) == before

        # an empty field is refused in the page, not silently replaced
        tokens.fill("")
        tokens.dispatch_event("change")
        page.locator('input[name="tokens"] + .field-error', has_text="empty").wait_for()

        # fixed: a fresh answer, no error, no out-of-date mark
        tokens.fill("20000000000")
        tokens.dispatch_event("change")
        page.wait_for_selector("#stale", state="hidden")
        assert page.locator(".field-error").count() == 0
        assert not errors or all("422" in e for e in errors), errors
        assert not _local(requests, live_server), requests
    finally:
        ctx.close()


def test_form_offers_only_priceable_pricing(browser: Any, live_server: str) -> None:
    ctx, page, _requests, _errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        page.select_option("#hardware-0", "a10")
        disabled = page.eval_on_selector_all(
            'select[aria-label="pricing 1"] option:disabled', "els => els.map(e => e.value)"
        )
        assert "spot" in disabled  # the catalog has no spot offer for a10
        assert "on_demand" not in disabled
    finally:
        ctx.close()


def test_change_hardware_and_download(browser: Any, live_server: str, tmp_path: Path) -> None:
    ctx, page, requests, errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        rows = page.locator("#comparison-table tbody tr")
        assert rows.count() == 3
        assert rows.first.get_attribute("data-option") == "a100-sxm4-80gb x64 on_demand"
        assert _first_row_total(page) == "$72,200"  # explicit test pricing: 64000 + 5000 + 3200

        page.select_option("#hardware-0", "l4")
        page.wait_for_selector('#comparison-table tr[data-option="l4 x64 on_demand"]')
        page.fill('input[aria-label="GPUs 1"]', "8")
        page.locator('input[aria-label="GPUs 1"]').dispatch_event("change")
        page.wait_for_selector('#comparison-table tr[data-option="l4 x8 on_demand"]')
        assert _first_row_total(page) == "$13,400"
        assert page.locator("#charts img").count() >= 2

        with page.expect_download() as dl:
            page.click('button[data-format="html"]')
        d = dl.value
        assert d.suggested_filename == "web_scenario.html"
        out = tmp_path / d.suggested_filename
        d.save_as(out)
        text = out.read_text()
        assert "l4 x8 on_demand" in text
        assert "data:image/png;base64," in text
        assert not errors, errors
        assert not _local(requests, live_server), requests
    finally:
        ctx.close()


@pytest.mark.parametrize(("path", "ready"), [("/docs", ".swagger-ui .info"), ("/redoc", "h1")])
def test_api_docs_work_offline(browser: Any, live_server: str, path: str, ready: str) -> None:
    ctx, page, requests, errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + path)
        page.wait_for_selector(ready)
        assert "aitco" in page.locator(ready).first.inner_text()
        assert not _local(requests, live_server), requests
        assert not [e for e in errors if "Content Security Policy" in e], errors
    finally:
        ctx.close()


def test_report_stylesheet_applies(browser: Any, tmp_path: Path) -> None:
    from tests.report.test_render import _option

    from aitco.report import html, model

    opts = [_option("a100 x8", 1000.0, 2.0, {}), _option("h100 x8", 900.0, 1.0, {})]
    data = model.report_from_options("font check", opts)
    path = tmp_path / "report.html"
    path.write_text(html.render_html(data), encoding="utf-8")
    ctx, page, requests, _errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(path.as_uri())
        font = page.evaluate("getComputedStyle(document.body).fontFamily")
        assert "system-ui" in font, font
        assert '"Segoe UI"' in font, font
        assert "serif" not in font.replace("sans-serif", "")
        box = page.locator("#summary").bounding_box()
        assert box is not None
        assert box["y"] < VIEWPORTS["desktop"][1]
        assert not [u for u in requests if not u.startswith(("file:", "data:"))], requests
    finally:
        ctx.close()
