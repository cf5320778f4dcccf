"""The page on the real engines, in headless Chromium: what it sends and what it offers.

- the page's first request is the built-in default scenario (``aitco compare``'s first table),
  and its inference form the second;
- every pricing the form leaves enabled is priced by the comparison (no option "left out");
- a service that misses its latency objectives says so on its card, with the figures;
- the "ROI workbook" button carries the page's inputs (not a workbook at ROI -100 %);
- Swagger's "Try it out" on ``POST /api/v1/compare`` answers 200 with its own sample body.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.web.test_browser import (
    CHROMIUM,
    TRAINING_ROWS,
    VIEWPORTS,
    _local,
    _open,
    text_problems,
    wait_until,
)

from aitco.decide.defaults import default_inference, default_training
from aitco.decide.scenario import Scenario

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"
    ),
]

INFERENCE_ROWS = 'fieldset.options[data-kind="inference"]'


@pytest.fixture(scope="module")
def app() -> Any:
    from aitco.web.app import create_app

    return create_app()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"], headless=True
        )
        yield b
        b.close()


def _bodies(page: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            sent.append(json.loads(r.post_data or "null"))
            if r.url.endswith("/api/v1/compare") and r.method == "POST"
            else None
        ),
    )
    return sent


def _same_scenario(body: dict[str, Any], builtin: Scenario) -> None:
    want = builtin.to_dict()
    want.pop("description", None)
    assert Scenario.from_dict(body).to_dict() == want


def test_the_page_sends_the_builtin_defaults(browser: Any, live_server: str) -> None:
    ctx, page, requests, errors = _open(browser, VIEWPORTS["desktop"])
    try:
        sent = _bodies(page)
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        _same_scenario(sent[0], default_training())
        page.select_option("#kind", "inference")
        page.wait_for_selector('#comparison-table tr[data-option^="l4 "]')
        _same_scenario(sent[-1], default_inference())
        assert not errors, errors
        assert not _local(requests, live_server), requests
    finally:
        ctx.close()


@pytest.mark.parametrize("rows", [TRAINING_ROWS, INFERENCE_ROWS])
def test_every_pricing_the_form_offers_is_priced(browser: Any, live_server: str, rows: str) -> None:
    ctx, page, _requests, errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        if rows == INFERENCE_ROWS:
            page.select_option("#kind", "inference")
            page.wait_for_selector('#comparison-table tr[data-option^="l4 "]')
        used = page.locator(f"{rows} .opt-row").filter(
            has=page.locator("select[name=hardware] option:checked:not([value=''])")
        )
        boxes = used.locator("input[name=pricing]:not(:disabled)")
        n = 0
        for k in range(boxes.count()):
            box = boxes.nth(k)
            if not box.is_checked():
                box.check()
                n += 1
        assert n > 0, "no extra pricing to tick"
        offered = used.locator("input[name=pricing]:checked").count()
        page.locator("button[type=submit]").click()
        wait_until(
            page,
            f"document.querySelectorAll('#comparison-table tbody tr').length == {offered}"
            " || document.querySelector('.dropped, .field-error')",
            timeout_s=120,
        )
        assert page.locator("#comparison-table tbody tr").count() == offered
        assert page.locator(".dropped").count() == 0, page.locator(".dropped").inner_text()
        assert page.locator(".field-error").count() == 0
        assert not errors, errors
    finally:
        ctx.close()


@pytest.mark.parametrize("view", list(VIEWPORTS))
def test_slo_misses_are_shown(browser: Any, live_server: str, view: str) -> None:
    ctx, page, _requests, errors = _open(browser, VIEWPORTS[view])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        page.select_option("#kind", "inference")
        card = page.locator('#summary .card[data-option^="l4 "]')
        card.wait_for()
        text = card.inner_text()
        assert "misses SLO" in text
        assert "TTFT" in text
        assert "> 500 ms target" in text
        assert card.locator(".slo.missed").count() >= 1
        ok = page.locator('#summary .card[data-option^="h100-nvl-94gb "]').first.inner_text()
        assert "misses SLO" not in ok
        assert "TTFT (target 500 ms)" in ok
        low, small = text_problems(page)
        assert not low, low
        assert not small, small
        assert not errors, errors
    finally:
        ctx.close()


def test_roi_workbook_carries_the_page_inputs(
    browser: Any, live_server: str, tmp_path: Path
) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    ctx, page, _requests, errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + "/")
        page.wait_for_selector("#comparison-table")
        page.fill('input[name="monthly_savings_usd"]', "50000")
        page.fill('input[name="horizon_months"]', "24")
        with page.expect_download() as dl:
            page.click('button[data-format="xlsx"]')
        out = tmp_path / "roi.xlsx"
        dl.value.save_as(out)
        wb = openpyxl.load_workbook(out, data_only=True)

        def named(name: str) -> Any:
            (sheet, ref), *_ = wb.defined_names[name].destinations
            return wb[sheet][ref.replace("$", "")].value

        assert named("monthly_savings_usd") == 50000
        assert named("horizon_months") == 24
        cheapest = page.locator("#summary .mark.cheap").first.locator("xpath=..")
        total = float(cheapest.locator("dd.big").inner_text().strip("$").replace(",", ""))
        assert named("upfront_usd") == pytest.approx(total, abs=1.0)  # the cheapest run's cost
        assert named("roi_horizon") > -1.0  # not the empty workbook's -100 %
        assert not errors, errors
    finally:
        ctx.close()


def test_swagger_try_it_out_on_compare(browser: Any, live_server: str) -> None:
    ctx, page, _requests, _errors = _open(browser, VIEWPORTS["desktop"])
    try:
        page.goto(live_server + "/docs")
        op = page.locator("#operations-compare-compare_api_api_v1_compare_post")
        op.locator(".opblock-summary").click()
        op.locator("button.try-out__btn").click()
        op.locator("button.execute").click()
        status = op.locator(".live-responses-table tbody .response-col_status").first
        status.wait_for(timeout=60_000)
        assert status.inner_text().strip().startswith("200"), status.inner_text()
    finally:
        ctx.close()
