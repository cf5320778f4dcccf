"""The page in headless Chromium (Debian's /usr/bin/chromium through Playwright's Python API).

What a person sees, at a desktop (1400x900) and a phone (390x844) viewport: the answer (a
one-line verdict, summary cards and the comparison chart) within the first screen, labels rather
than JSON keys as headers, an error next to the field it concerns with the last good result kept
and marked out of date, infeasible options marked, text and tags of WCAG AA contrast (4.5:1),
chart labels of at least 11 px, an "updated" cue, offline API docs, and no request leaving
127.0.0.1. ``tests/web/test_browser_real.py`` runs the real engines.
"""

from __future__ import annotations

import re
import time
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


#: The training option rows of the form (the inference ones are hidden until the kind changes).
TRAINING_ROWS = 'fieldset.options[data-kind="training"]'
#: Smallest text a person must read. [px]
MIN_TEXT_PX = 11.0
#: WCAG 2.1 AA contrast of normal text.
MIN_CONTRAST = 4.5

#: Contrast of every visible text node against the background composited beneath it.
CONTRAST_JS = """() => {
  function parse(c) {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) { return null; }
    const p = m[1].split(/[\\s,/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  }
  function over(top, under) {
    const a = top.a;
    return { r: top.r * a + under.r * (1 - a), g: top.g * a + under.g * (1 - a),
             b: top.b * a + under.b * (1 - a), a: 1 };
  }
  function lum(c) {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  }
  function background(el) {
    const chain = [];
    for (let e = el; e; e = e.parentElement) { chain.push(e); }
    let c = { r: 255, g: 255, b: 255, a: 1 };
    for (const e of chain.reverse()) {
      const b = parse(getComputedStyle(e).backgroundColor);
      if (b && b.a > 0) { c = over(b, c); }
    }
    return c;
  }
  const out = [];
  const seen = new Set();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode;
    const el = node.parentElement;
    if (!node.textContent.trim() || !el || seen.has(el)) { continue; }
    if (el.closest("option, script, style")) { continue; }
    seen.add(el);
    const box = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    if (!box.width || !box.height) { continue; }
    if (cs.visibility === "hidden" || Number(cs.opacity) === 0) { continue; }
    const bg = background(el);
    const fg = over(parse(cs.color), bg);
    const l1 = lum(fg), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    out.push({ text: node.textContent.trim().slice(0, 40), tag: el.className.includes("tag"),
               cls: el.className, ratio: ratio, px: parseFloat(cs.fontSize) });
  }
  return out;
}"""

#: Each chart image: its size on screen, its own size, and its smallest text at its own size.
CHARTS_JS = """() => Array.from(document.querySelectorAll("figure img")).map((img) => ({
  id: img.closest("figure").id,
  shown: img.getBoundingClientRect().width,
  natural: img.naturalWidth,
  narrow: img.currentSrc !== img.src,
  px: parseFloat(img.dataset.minFontPx),
  narrow_px: parseFloat(img.dataset.narrowMinFontPx),
}))"""


def wait_until(page: Any, js: str, timeout_s: float = 20.0) -> None:
    """Poll ``js`` (an expression) until true (the page's CSP forbids wait_for_function's eval)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"() => Boolean({js})"):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {js}")
        page.wait_for_timeout(50)


def text_problems(page: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Visible texts under 4.5:1 contrast, and under 11 px."""
    texts = page.evaluate(CONTRAST_JS)
    assert texts, "no visible text found"
    low = [t for t in texts if t["ratio"] < MIN_CONTRAST]
    small = [t for t in texts if t["px"] < MIN_TEXT_PX]
    return low, small


def chart_label_px(page: Any) -> list[tuple[str, float]]:
    """Smallest label of each chart as shown on screen (its own-size font x display scale). [px]"""
    wait_until(page, "Array.from(document.querySelectorAll('figure img')).every((i) => i.complete)")
    out = []
    for c in page.evaluate(CHARTS_JS):
        px = c["narrow_px"] if c["narrow"] else c["px"]
        out.append((c["id"], px * c["shown"] / c["natural"]))
    return out


@pytest.mark.parametrize("view", list(VIEWPORTS))
def test_answer_first_labels_and_infeasible(browser: Any, live_server: str, view: str) -> None:
    w, h = VIEWPORTS[view]
    ctx, page, requests, errors = _open(browser, (w, h))
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#summary .card")
        # the answer within the first screen: the verdict whole, then the cards and the chart
        verdict = page.locator("#verdict").bounding_box()
        assert verdict is not None
        assert verdict["y"] + verdict["height"] <= h, "the verdict is not in the first screen"
        assert page.locator("#verdict").inner_text().startswith("Cheapest: ")
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
        assert "Time to finish [days]" in heads  # one time unit for the page (runs of 15-31 days)
        # infeasible options are marked, on their card and in the table
        bad = page.locator(f'#summary .card[data-option^="{INFEASIBLE_HW} "]')
        assert bad.count() == 3  # the l40s row: on demand, spot, owned
        assert bad.first.get_attribute("data-feasible") == "false"
        assert "not feasible" in bad.first.inner_text()
        assert INFEASIBLE_WHY in bad.first.inner_text()
        assert page.locator("#comparison-table tr.infeasible").count() == 3
        # every text and tag reads at WCAG AA contrast, and at 11 px or more
        low, small = text_problems(page)
        assert not low, low
        assert not small, sorted({(t["cls"], t["px"], t["text"][:20]) for t in small})
        tags = page.locator(".tag").all_inner_texts()
        assert {"cheapest", "fastest", "not feasible"} <= set(tags)
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
        gpus2 = page.locator(f'{TRAINING_ROWS} input[aria-label="GPUs 2"]')
        gpus2.fill("0")
        gpus2.dispatch_event("change")
        page.wait_for_selector(".field-error")
        assert gpus2.get_attribute("aria-invalid") == "true"
        msg = page.locator(
            f'{TRAINING_ROWS} input[aria-label="GPUs 2"] + .field-error'
        ).inner_text()
        assert msg.startswith("GPUs (row 2) must be at least 1"), msg
        assert "options." not in msg
        assert "Input should" not in msg
        # the last good result is still there, marked out of date
        assert page.locator("#comparison-table tbody tr").count() == rows_before
        assert _first_row_total(page) == before
        assert page.locator("#stale").is_visible()
        assert "stale" in (page.locator("#results").get_attribute("class") or "")

        # an implausible value (1e17 tokens: past the form's range, inside the CLI's): 422 with
        # the range, beside the Tokens field
        gpus2.fill("32")
        tokens = page.locator('input[name="tokens"]')
        tokens.fill("1e17")
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
        row = page.locator(f"{TRAINING_ROWS} .opt-row").first
        with page.expect_response(lambda r: "/api/v1/pricing" in r.url):
            row.locator('select[name="hardware"]').select_option("a10g")
        wait_until(
            page, "document.querySelector('fieldset.options .opt-row input[value=spot]').disabled"
        )
        boxes = row.locator('input[name="pricing"]')
        disabled = boxes.evaluate_all("els => els.filter(e => e.disabled).map(e => e.value)")
        assert "spot" in disabled  # the catalog has no spot offer for a10g
        assert "owned" in disabled  # nor a purchase price
        assert "on_demand" not in disabled
        assert "spot" in row.locator("p.why").inner_text()  # and the row says why
        checked = boxes.evaluate_all("els => els.filter(e => e.checked).map(e => e.value)")
        assert checked == ["on_demand"]
        # the providers offered are those that rent a10g
        providers = row.locator('select[name="provider"] option').evaluate_all(
            "els => els.map(e => e.value)"
        )
        assert providers == ["", "any", "aws"]
    finally:
        ctx.close()


def test_change_hardware_and_download(browser: Any, live_server: str, tmp_path: Path) -> None:
    ctx, page, requests, errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        rows = page.locator("#comparison-table tbody tr")
        assert rows.count() == 9  # 3 rows x on demand, spot, owned: the built-in default
        assert rows.first.get_attribute("data-option") == "a100-sxm4-80gb x64 on_demand"
        assert _first_row_total(page) == "$72,200"  # explicit test pricing: 64000 + 5000 + 3200

        row = page.locator(f"{TRAINING_ROWS} .opt-row").first
        row.locator('select[name="provider"]').select_option("")  # any provider's home type
        row.locator('input[name="gpus"]').fill("8")
        row.locator('input[name="gpus"]').dispatch_event("change")
        row.locator('select[name="hardware"]').select_option("l4")
        page.wait_for_selector('#comparison-table tr[data-option="l4 x8 on_demand"]')
        assert _first_row_total(page) == "$13,400"
        assert page.locator("#charts img").count() >= 2

        with page.expect_download() as dl:
            page.click('button[data-format="html"]')
        d = dl.value
        assert d.suggested_filename == "gpt2-1_02b_pre-training__Chinchilla_tokens.html"
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


@pytest.mark.parametrize("view", list(VIEWPORTS))
def test_chart_labels_are_at_least_11_px(browser: Any, live_server: str, view: str) -> None:
    ctx, page, _requests, errors = _open(browser, VIEWPORTS[view])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#charts figure img")
        sizes = chart_label_px(page)
        assert len(sizes) >= 2, sizes
        small = [(i, round(px, 1)) for i, px in sizes if px < MIN_TEXT_PX]
        assert not small, f"chart labels under {MIN_TEXT_PX} px on a {view}: {small}"
        # the page's own bar chart: names, totals and legend
        bar_px = page.locator("#chart-compare .bar-name, #chart-compare .bar-total").evaluate_all(
            "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        assert bar_px
        assert min(bar_px) >= MIN_TEXT_PX
        assert not errors, errors
    finally:
        ctx.close()


def test_phone_shows_that_the_answer_changed(browser: Any, live_server: str) -> None:
    """On a phone the form is below the answer: an edit there says the answer above changed."""
    ctx, page, _requests, errors = _open(browser, VIEWPORTS["phone"])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        assert page.locator("#updated").is_hidden()  # the first answer is not an update
        gpus = page.locator(f'{TRAINING_ROWS} input[aria-label="GPUs 2"]')
        gpus.scroll_into_view_if_needed()
        gpus.fill("16")
        gpus.dispatch_event("change")
        page.wait_for_selector('#comparison-table tr[data-option="h100-sxm5-80gb x16 spot"]')
        toast = page.locator("#updated")
        toast.wait_for(state="visible")
        box = toast.bounding_box()
        assert box is not None
        assert box["y"] >= 0
        assert box["y"] + box["height"] <= VIEWPORTS["phone"][1]
        assert "Updated" in toast.inner_text()
        assert "Cheapest:" in toast.inner_text()
        assert page.locator("#results-stamp").inner_text().startswith("Updated ")
        low, _small = text_problems(page)
        assert not low, low
        assert not errors, errors
    finally:
        ctx.close()
