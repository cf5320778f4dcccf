"""`aitco reconcile`: JSON contract, the table, errors as one line, --calibrate round trip, HTML."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from aitco.cli.app import main

TAGS = ["--tag", "run=llama1b-r7"]


def _args(d: Path, *extra: str) -> list[str]:
    return [
        "reconcile",
        str(d / "scenario.yaml"),
        "--bill",
        str(d / "focus_bill.csv"),
        "--logs",
        str(d / "megatron_run.log.gz"),
        "--logs",
        str(d / "dcgm_dmon.txt.gz"),
        "--interval-s",
        "20",
        *TAGS,
        *extra,
    ]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out, err


def _run_quiet(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.raises(SystemExit) as exc,
    ):
        main(args)
    code = exc.value.code
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def d(fixtures_dir: Path) -> Path:
    return fixtures_dir / "reconcile"


@pytest.fixture(scope="module")
def rec_json(d: Path) -> dict:
    """The fixture run reconciled once (``--json``), shared by the tests that read it."""
    code, out, err = _run_quiet([*_args(d), "--json"])
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def compare_json(d: Path) -> dict:
    code, out, err = _run_quiet(["compare", str(d / "scenario.yaml"), "--json"])
    assert code == 0, err
    return json.loads(out)


def test_json_carries_the_contract_and_the_identity(rec_json, compare_json):
    j = rec_json
    for k in ("predicted_usd", "billed_usd", "variances", "unexplained_usd"):
        assert k in j
    assert all({"cause", "usd"} <= set(v) for v in j["variances"])
    parts = [j["predicted_usd"], *(v["usd"] for v in j["variances"]), j["unexplained_usd"]]
    assert sum(parts) == j["billed_usd"]
    total = compare_json["options"][0]["total_usd"]
    assert j["predicted_usd"] == pytest.approx(total, rel=1e-12)


def test_the_table_lists_the_largest_variance_first(d, capsys):
    code, out, err = _run(_args(d), capsys)
    assert code == 0, err
    rows = [ln for ln in out.splitlines() if ln.startswith("│ ")]
    causes = [r.split("│")[1].strip() for r in rows]
    assert causes[0] == "price"  # the 20 % discount is the largest variance
    assert causes[1] == "slower_steps"
    assert "unexplained" in causes
    assert "other resources (tags)" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tag", "run"], "--tag = 'run': expected KEY=VALUE"),
        (["--period", "2026-11-02"], "--period = '2026-11-02': expected START/END"),
        (["-o", "p.yaml"], "--calibrate = False: expected --calibrate when -o"),
        (["--calibrate"], "-o = None: expected the profile YAML to write"),
        (["--engine", "spark"], "--engine = 'spark': expected auto, csv or duckdb"),
        (["--option", "nope"], "--option = 'nope': expected one of 'H100 x8 AWS on-demand'"),
        (["--account", "42"], "the bill has accounts 493010271563"),
    ],
)
def test_bad_input_is_one_line_exit_2(d, capsys, extra, message):
    bare = ["reconcile", str(d / "scenario.yaml"), "--bill", str(d / "focus_bill.csv"), *TAGS]
    code, _, err = _run([*bare, *extra], capsys)
    assert code == 2
    assert "Traceback" not in err
    assert message in " ".join(err.split())
    assert len(err.strip().splitlines()) == 1


def test_a_log_that_is_the_bill_is_refused(d, capsys):
    args = ["reconcile", str(d / "scenario.yaml"), "--bill", str(d / "focus_bill.csv")]
    code, _, err = _run([*args, "--logs", str(d / "focus_bill.csv")], capsys)
    assert code == 2
    assert "a log of the run (the bill goes to --bill)" in err


def test_html_page_has_the_waterfall(d, capsys, tmp_path):
    page = tmp_path / "rec.html"
    bare = ["reconcile", str(d / "scenario.yaml"), "--bill", str(d / "focus_bill.csv"), *TAGS]
    code, _, err = _run([*bare, "--html", str(page), "--json"], capsys)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="waterfall"' in text
    assert "billed, not predicted" in text
    assert "http" not in text.split("<svg", 1)[1].split("</svg>", 1)[0].replace(
        "http://www.w3.org/2000/svg", ""
    )  # nothing fetched


@pytest.mark.integration  # renders the report's plots (matplotlib): seconds
def test_report_takes_a_saved_reconciliation(d, rec_json, capsys, tmp_path):
    saved = tmp_path / "rec.json"
    saved.write_text(json.dumps(rec_json), encoding="utf-8")
    page = tmp_path / "report.html"
    args = ["report", str(d / "scenario.yaml"), "-o", str(page), "--reconcile", str(saved)]
    pytest.importorskip("matplotlib")
    code, _, err = _run(args, capsys)
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert 'id="reconcile"' in text
    assert "Predicted against billed" in text
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    code, _, err = _run([*args[:-1], str(bad)], capsys)
    assert code == 2
    assert "the JSON of `aitco reconcile --json`" in err


@pytest.mark.refit
def test_calibrate_then_compare_predicts_the_bill_within_5_percent(d, capsys, tmp_path):
    """--calibrate writes the profile and the price overlay; compare with them hits the bill."""
    prof, prices = tmp_path / "p.yaml", tmp_path / "p.prices.yaml"
    code, out, err = _run([*_args(d), "--calibrate", "-o", str(prof), "--json"], capsys)
    assert code == 0, err
    first = json.loads(out)
    cal = first["calibration"]
    assert cal["prices"] == str(prices)
    assert prof.is_file()
    assert prices.is_file()
    assert cal["measurements"]["discount_vs_predicted"] == pytest.approx(0.20, abs=1e-9)
    assert 0.95 < cal["measurements"]["goodput_observed"] < 1.0
    billed = first["billed_usd"]
    args = ["--catalog", str(prices), "compare", str(d / "scenario.yaml")]
    code, out, err = _run([*args, "--calibration", str(prof), "--json"], capsys)
    assert code == 0, err
    predicted = json.loads(out)["options"][0]["total_usd"]
    assert abs(predicted / billed - 1) < 0.05, (predicted, billed)
    again = [*_args(d), "--catalog", str(prices), "--calibration", str(prof), "--json"]
    code, out, err = _run(again, capsys)
    assert code == 0, err
    second = json.loads(out)
    assert second["predicted_usd"] == pytest.approx(predicted, rel=1e-12)
    causes = {v["cause"]: v["usd"] for v in second["variances"] if v["item"] == "gpu_compute"}
    assert abs(causes["price"]) < 0.01  # the overlay carries the billed price
    assert abs(causes["slower_steps"]) < 0.01 * billed  # the profile carries the step time
    assert abs(second["prediction_error_fraction"]) < abs(first["prediction_error_fraction"])


def test_every_key_is_in_the_glossary(rec_json, tmp_path):
    from tests.contracts.test_json_contracts import _all_keys, glossary_names
    from tests.decide.test_reconcile import SERVICE, _service_bill

    (tmp_path / "s.yaml").write_text(SERVICE, encoding="utf-8")
    bill = _service_bill(tmp_path / "bill.csv")
    code, out, err = _run_quiet(
        ["reconcile", str(tmp_path / "s.yaml"), "--bill", str(bill), "--tokens", "6e10", "--json"]
    )
    assert code == 0, err
    service = json.loads(out)
    assert service["serving"]["billed_usd_per_million_tokens"] > 0
    documented = glossary_names()
    for j in (rec_json, service):
        missing = sorted(k for k in set(_all_keys(j)) if k not in documented)
        assert not missing, f"keys not in docs/glossary.md: {missing}"
