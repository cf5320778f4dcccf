"""``aitco catalog update``: public price catalogs -> a dated overlay (issue 33 item 1).

Every test serves the fixtures from a local HTTP server on 127.0.0.1 (SkyPilot's layout
``catalogs/v7/<cloud>/vms.csv``, genai-prices' ``data.json``); nothing reaches the internet.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.conftest import FIXTURES

from aitco.catalog import remote
from aitco.catalog.loader import load_catalog
from aitco.catalog.update import _current_prices, _match, parse_clouds
from aitco.errors import InputError


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 serving the SkyPilot and genai-prices fixtures."""
    root = tmp_path / "www"
    for cloud in ("aws", "lambda"):
        d = root / "catalogs" / "v7" / cloud
        d.mkdir(parents=True)
        shutil.copy(FIXTURES / f"skypilot_vms_{cloud}_v7.csv", d / "vms.csv")
    shutil.copy(FIXTURES / "genai_prices_data_v2.json", root / "data.json")
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv(remote.CACHE_ENV_VAR, str(d))
    monkeypatch.delenv("AITCO_CATALOG", raising=False)
    return d


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from aitco.cli.app import main

    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _dead_url() -> str:
    """A 127.0.0.1 URL nothing listens on (a port just bound and released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.integration
def test_update_skypilot_writes_offers_dated_today(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's done-when: p5.48xlarge and Lambda's gpu_8x_a100, dated today, listed."""
    out = tmp_path / "fresh.yaml"
    args = ["catalog", "update", "skypilot", "--base-url", server, "--clouds", "aws,lambda"]
    code, stdout, _ = _run([*args, "-o", str(out), "--json"], capsys)
    assert code == 0
    summary = json.loads(stdout)
    assert summary["clouds"] == ["aws", "lambda"]
    assert summary["rows_read"] == 87 + 36
    code, stdout, _ = _run(["--catalog", str(out), "catalog", "list", "offers", "--json"], capsys)
    assert code == 0
    offers = {e["instance"]: e for e in json.loads(stdout)["entries"]}
    today = dt.datetime.now(dt.UTC).date().isoformat()
    for inst in ("p5.48xlarge", "gpu_8x_a100"):
        dated = [p for p in offers[inst]["prices"] if p["as_of"] == today]
        assert dated, inst
        assert not any(p["as_of_estimated"] for p in dated)
    # shapes and spot prices kept (the AWS fixture has spot prices, min over the zones)
    p5 = offers["p5.48xlarge"]
    assert any(p["term"] == "spot" and p["as_of"] == today for p in p5["prices"])
    cat = load_catalog([out], use_env=False)
    o = cat.offers["aws-p5.48xlarge"]
    assert o.vcpus == 192
    spot_east = [p for p in o.prices if p.term == "spot" and p.region == "us-east-1"]
    assert spot_east[0].usd_per_hour == pytest.approx(20.9934)  # lowest of the zones
    src = o.provenance[f"prices.{o.prices.index(spot_east[0])}.source"].source
    assert src.url == f"{server}/catalogs/v7/aws/vms.csv"
    assert src.retrieved.isoformat() == today
    # the shipped prices the update displaced are kept as history, with their own dates
    assert o.price_history
    assert all(p.as_of.isoformat() < today for p in o.price_history)
    # the files are cached with the time they were fetched
    meta = next(cache.rglob("vms.csv.meta.json"))
    info = json.loads(meta.read_text("utf-8"))
    assert info["url"].startswith(server)
    assert info["retrieved_at"].startswith(today)


@pytest.mark.integration
def test_unreachable_server_one_line_nonzero_nothing_touched(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fresh.yaml"
    base = ["catalog", "update", "skypilot", "--clouds", "aws,lambda", "-o", str(out)]
    assert _run([*base, "--base-url", server], capsys)[0] == 0
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    cached = {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()}
    code, stdout, err = _run([*base, "--base-url", _dead_url()], capsys)
    assert code != 0
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("error: cannot fetch")
    assert "Traceback" not in err + stdout
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before
    assert {p: p.read_bytes() for p in cache.rglob("*") if p.is_file()} == cached
    assert not list(tmp_path.glob(".fresh.yaml.*"))  # no temporary file left behind


@pytest.mark.integration
def test_one_missing_cloud_writes_nothing(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """aws is served, gcp is not (HTTP 404): no partial overlay, no partial cache."""
    out = tmp_path / "fresh.yaml"
    args = ["catalog", "update", "skypilot", "--base-url", server, "--clouds", "aws,gcp"]
    code, _, err = _run([*args, "-o", str(out)], capsys)
    assert code != 0
    assert "HTTP 404" in err
    assert not out.exists()
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))


@pytest.mark.integration
def test_offline_reuses_the_cache_and_its_date(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    base = ["catalog", "update", "skypilot", "--base-url", server, "--clouds", "lambda"]
    assert _run([*base, "-o", str(first)], capsys)[0] == 0
    code, stdout, _ = _run([*base, "--offline", "-o", str(second), "--json"], capsys)
    assert code == 0
    assert json.loads(stdout)["from_cache"] is True
    a = yaml.safe_load(first.read_text("utf-8"))
    b = yaml.safe_load(second.read_text("utf-8"))
    assert a["offers"] == b["offers"]
    # offline with nothing cached for that cloud: one line, exit non-zero, nothing written
    third = tmp_path / "c.yaml"
    code, _, err = _run(
        ["catalog", "update", "skypilot", "--base-url", server, "--clouds", "aws", "--offline",
         "-o", str(third)],
        capsys,
    )  # fmt: skip
    assert code != 0
    assert err.startswith("error: --offline")
    assert len(err.strip().splitlines()) == 1
    assert not third.exists()


@pytest.mark.integration
def test_update_merges_into_the_overlay_it_replaces(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """AITCO_CATALOG naming the output: the first update creates it, the next merges into it."""
    out = tmp_path / "fresh.yaml"
    monkeypatch.setenv("AITCO_CATALOG", str(out))
    args = ["catalog", "update", "skypilot", "--base-url", server, "--clouds", "lambda"]
    assert _run([*args, "-o", str(out)], capsys)[0] == 0
    assert _run([*args, "-o", str(out)], capsys)[0] == 0
    code, stdout, _ = _run(["catalog", "list", "offers", "--json"], capsys)
    assert code == 0
    ids = {e["id"] for e in json.loads(stdout)["entries"]}
    assert "lambda-gpu-8x-a100" in ids


@pytest.mark.integration
def test_genai_prices_update_refreshes_api_prices(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "apis.yaml"
    url = f"{server}/data.json"
    args = ["catalog", "update", "genai-prices", "--url", url, "--providers", "anthropic"]
    code, stdout, _ = _run([*args, "-o", str(out), "--json"], capsys)
    assert code == 0
    s = json.loads(stdout)
    assert "anthropic/claude-opus-4-6" in s["apis_refreshed"]
    assert "anthropic/claude-sonnet-5" in s["apis_added"]
    cat = load_catalog([out], use_env=False)
    opus = cat.apis["anthropic/claude-opus-4-6"]
    # the conditional price in force since 2026-03-13 (flat), dated by its start_date
    assert (opus.input_usd_per_mtok, opus.output_usd_per_mtok) == (5.0, 25.0)
    assert opus.as_of == dt.date(2026, 3, 13)
    assert opus.cached_input_usd_per_mtok == 0.5
    new = cat.apis["anthropic/claude-sonnet-5"]
    assert (new.input_usd_per_mtok, new.output_usd_per_mtok) == (2.0, 10.0)
    assert new.provenance["input_usd_per_mtok"].source.url == url
    # api-vs-self-host reads the overlay
    code, stdout, _ = _run(
        ["--catalog", str(out), "api-vs-self-host", "--api", "anthropic/claude-sonnet-5",
         "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0, stdout


@pytest.mark.integration
def test_genai_prices_update_over_its_own_overlay(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Entries the replaced overlay added are written in full again (not as bare prices)."""
    out = tmp_path / "apis.yaml"
    monkeypatch.setenv("AITCO_CATALOG", str(out))
    url = f"{server}/data.json"
    base = ["catalog", "update", "genai-prices", "--url", url, "-o", str(out)]
    assert _run([*base, "--providers", "anthropic"], capsys)[0] == 0
    assert _run(base, capsys)[0] == 0
    code, stdout, _ = _run(["catalog", "show", "anthropic/claude-sonnet-5", "--json"], capsys)
    assert code == 0
    assert json.loads(stdout)["id"] == "anthropic/claude-sonnet-5"


@pytest.mark.integration
def test_genai_prices_cached_data_feeds_the_package(
    server: str, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gp = pytest.importorskip("genai_prices")
    from aitco.audit import genai

    url = f"{server}/data.json"
    out = tmp_path / "apis.yaml"
    monkey = pytest.MonkeyPatch()
    try:
        monkey.setattr("aitco.catalog.update.genai_url", lambda: url)
        assert _run(["catalog", "update", "genai-prices", "-o", str(out)], capsys)[0] == 0
        monkey.setattr(genai, "_DATA_FETCHED", [])
        assert genai.module() is gp
        assert "data fetched" in (genai.version() or "")
        calc = gp.calc_price(gp.Usage(input_tokens=10**6), model_ref="claude-sonnet-5")
        assert float(calc.input_price) == pytest.approx(2.0)
    finally:
        from genai_prices import data_snapshot

        data_snapshot.set_custom_snapshot(None)
        monkey.undo()


def test_match_rules_and_conditional_prices() -> None:
    rule = {"or": [{"starts_with": "claude-opus-4-6"}, {"equals": "opus"}]}
    assert _match(rule, "claude-opus-4-6-20260101")
    assert _match(rule, "opus")
    assert not _match(rule, "claude-opus-4-5")
    prices = [
        {"prices": {"input_mtok": 1}},
        {"constraint": {"start_date": "2026-03-13"}, "prices": {"input_mtok": 2}},
        {"constraint": {"start_time": "16:30:00", "end_time": "00:30:00"}, "prices": {}},
    ]
    assert _current_prices(prices, dt.date(2026, 1, 1)) == ({"input_mtok": 1}, None)
    assert _current_prices(prices, dt.date(2026, 6, 1)) == (
        {"input_mtok": 2},
        dt.date(2026, 3, 13),
    )


def test_cache_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(remote.CACHE_ENV_VAR, str(tmp_path / "c"))
    assert remote.cache_dir() == tmp_path / "c"
    monkeypatch.delenv(remote.CACHE_ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if remote.sys.platform.startswith("linux"):
        assert remote.cache_dir() == tmp_path / "xdg" / "aitco"


def test_bad_clouds_and_urls_are_input_errors() -> None:
    with pytest.raises(InputError, match="--clouds"):
        parse_clouds("aws,,gcp/../x")
    with pytest.raises(InputError, match="http"):
        remote.fetch("file:///etc/passwd", Path("/nonexistent/x"))
