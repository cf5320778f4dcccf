"""The page in headless Chromium (Debian's /usr/bin/chromium through Playwright's Python API)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

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

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium"
    ),
]


@pytest.fixture(scope="module")
def page(live_server: str) -> Any:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        ctx = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
        pg = ctx.new_page()
        pg.set_default_timeout(20_000)
        yield pg
        ctx.close()
        browser.close()


def _first_row_total(page: Any) -> str:
    return str(page.locator("#comparison-table tbody tr").first.locator("td.total").inner_text())


def test_load_change_hardware_and_download(page: Any, live_server: str, tmp_path: Path) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(live_server + "/")
    page.wait_for_selector("#comparison-table")  # loaded on page load, through the JSON API
    rows = page.locator("#comparison-table tbody tr")
    assert rows.count() == 3
    first_name = rows.first.get_attribute("data-option")
    assert first_name == "a100-sxm4-80gb x64 on_demand"
    assert _first_row_total(page) == "$72,200"  # explicit test pricing: 64000 + 5000 + 3200

    # change the hardware and GPU count of the first option: the table follows
    page.select_option("#hardware-0", "l4")
    page.wait_for_selector('#comparison-table tr[data-option="l4 x64 on_demand"]')
    page.fill('input[aria-label="GPUs 1"]', "8")
    page.locator('input[aria-label="GPUs 1"]').dispatch_event("change")
    page.wait_for_selector('#comparison-table tr[data-option="l4 x8 on_demand"]')
    assert _first_row_total(page) == "$13,400"
    assert page.locator("#charts img").count() >= 2

    # an invalid value shows the API's error, naming the field
    page.fill('input[aria-label="GPUs 2"]', "0")
    page.locator('input[aria-label="GPUs 2"]').dispatch_event("change")
    page.wait_for_selector("#results .error")
    assert "options.1.gpus" in page.locator("#results .error").inner_text()
    page.fill('input[aria-label="GPUs 2"]', "32")
    page.locator('input[aria-label="GPUs 2"]').dispatch_event("change")
    page.wait_for_selector("#comparison-table")

    # download the report
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
    assert all(u.startswith(live_server) or u.startswith(("data:", "blob:")) for u in requests), (
        requests
    )
    shot = os.environ.get("AITCO_SCREENSHOT")
    if shot:  # for a human look at the page (not asserted)
        page.screenshot(path=shot, full_page=True)
