"""Issue 18: bad input never reaches a traceback or a silent absurd number.

One test per case listed in the issue: each runs the command line in-process and expects exit 0
with finite output, or exit 2 (1 for an environment failure) with one ``error:`` line.
"""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path

import pytest
from tests.conftest import FIXTURES

from aitco.cli.app import main
from aitco.errors import InputError
from aitco.limits import MAX_SIMULATED_REQUESTS, check_tree, check_value, range_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "calibrate" / "data"
TRAIN = ["train", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "8"]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def latin1_yaml(tmp_path: Path) -> Path:
    p = tmp_path / "latin1.yaml"
    p.write_bytes("name: café\n".encode("latin-1"))
    return p


@pytest.fixture
def binary_file(tmp_path: Path) -> Path:
    p = tmp_path / "blob.bin"
    p.write_bytes(bytes(range(256)) * 8)
    return p


@pytest.fixture
def regular_file(tmp_path: Path) -> Path:
    p = tmp_path / "regular"
    p.write_text("x")
    return p


# ------------------------------------------------------------------ the validator itself
def test_check_value_rejects_nan_inf_negative_and_absurd() -> None:
    assert check_value("--gpus", 8) == 8
    for field, bad in [
        ("--usd-per-gpu-hour", float("nan")),
        ("--tokens", float("inf")),
        ("--monthly-savings-usd", -1.0),
        ("--gpus", 0),
        ("--num-requests", MAX_SIMULATED_REQUESTS + 1),
        ("workload.tokens", 1e300),
    ]:
        with pytest.raises(InputError) as exc:
            check_value(field, bad)
        msg = str(exc.value)
        assert field in msg
        assert "expected a finite number in [" in msg
    assert range_for("--idle-threshold").hi == 1.0


def test_check_tree_names_the_field_path() -> None:
    with pytest.raises(InputError, match=r"workload\.tokens = 1e\+300"):
        check_tree({"workload": {"tokens": 1e300}}, file="s.yaml")
    with pytest.raises(InputError, match="finite"):
        check_tree({"entries": [{"tdp_w": {"value": float("nan")}}]})
    check_tree({"entries": [{"delta": -3.0, "price_usd": {"value": 2.0}}]})  # fine


# ------------------------------------------------------------------ usage errors
def test_usage_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["catalog", "list"], capsys)
    assert code == 2
    line = one_error_line(err)
    assert "Missing argument" in line
    assert "--help" in line
    code, _, err = run(["train", "--no-such-flag"], capsys)
    assert code == 2
    one_error_line(err)


# ------------------------------------------------------------------ NaN, inf, absurd values
@pytest.mark.parametrize(
    "args",
    [
        ["roi", "--monthly-savings-usd", "nan", "--monthly-cost-usd", "10"],
        ["breakeven", "--fixed-cost-usd", "inf", "--price-per-call-usd", "0.1"],
        ["breakeven", "--fixed-cost-usd", "nan", "--price-per-call-usd", "0.1"],
        [*TRAIN, "--tokens", "inf"],
        [*TRAIN, "--tokens", "1e300"],
        ["ingest", "auto", str(DATA / "nccl_results.json"), "--usd-per-gpu-hour", "-3"],
        [
            "api-vs-self-host",
            str(EXAMPLES / "api_vs_self_host_llama70b.yaml"),
            "--volume-tokens-per-month",
            "nan",
        ],
    ],
)
def test_non_finite_and_negative_options_exit_2(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(args, capsys)
    assert code == 2
    assert out == ""
    line = one_error_line(err)
    assert "expected a finite number in [" in line


def test_infer_num_requests_is_capped(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["infer", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb"]
    code, _, err = run([*args, "--num-requests", "100000000"], capsys)
    assert code == 2
    assert "--num-requests = 100000000" in one_error_line(err)


def test_scenario_with_absurd_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (EXAMPLES / "default.yaml").read_text(encoding="utf-8")
    import yaml

    doc = yaml.safe_load(text)
    doc.setdefault("workload", {})["tokens"] = 1e300
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc), encoding="utf-8")
    code, _, err = run(["compare", str(p), "--json"], capsys)
    assert code == 2
    assert "workload.tokens = 1e+300" in one_error_line(err)


def test_overlay_with_nan_and_negative_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "o.yaml"
    f.write_text("kind: accelerators\nentries:\n  - id: h100-sxm5-80gb\n    tdp_w: .nan\n")
    code, _, err = run(["catalog", "show", "h100-sxm5-80gb", "--catalog", str(f)], capsys)
    assert code == 2
    assert "tdp_w = nan" in one_error_line(err)


def test_audit_line_with_overflowing_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = {
        "id": "x",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1e308, "completion_tokens": 3, "total_tokens": 4},
    }
    p = tmp_path / "log.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    code, out, err = run(["audit", str(p), "--price", "openai/gpt-4o", "--json"], capsys)
    assert code == 2
    assert "inf" not in out
    one_error_line(err)


# ------------------------------------------------------------------ I/O failures
@pytest.mark.parametrize(
    "make_args",
    [
        lambda d: ["report", str(EXAMPLES / "default.yaml"), "-o", f"{d}/report.html"],
        lambda d: ["roi-template", "-o", f"{d}/roi.xlsx"],
        lambda d: [
            "calibrate",
            str(DATA / "nccl_results.json"),
            "-o",
            f"{d}/p.yaml",
            "--force",
        ],
        lambda d: [
            "sweep",
            str(EXAMPLES / "sweep_training.yaml"),
            "--csv",
            f"{d}/a.csv",
            "--no-progress",
            "--top-k",
            "2",
        ],
    ],
)
@pytest.mark.parametrize("where", ["missing", "under_file"])
def test_unwritable_output_is_one_line_and_creates_nothing(
    make_args, where: str, tmp_path: Path, regular_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = tmp_path / "no" / "such" if where == "missing" else regular_file
    before = sorted(tmp_path.rglob("*"))
    code, _, err = run(make_args(parent), capsys)
    assert code == 2
    assert "directory" in one_error_line(err)
    assert sorted(tmp_path.rglob("*")) == before  # no directory created


def test_permission_denied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: permissions are not enforced")
        code, _, err = run(["roi-template", "-o", str(ro / "roi.xlsx")], capsys)
        assert code == 2
        assert "Permission denied" in one_error_line(err)
    finally:
        ro.chmod(0o700)


def test_disk_full_is_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import aitco.fileio

    def full(*a: object, **k: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "roi.xlsx"))

    monkeypatch.setattr(aitco.fileio.os, "replace", full)
    code, _, err = run(["roi-template", "-o", str(tmp_path / "roi.xlsx")], capsys)
    assert code == 1
    assert "No space left" in one_error_line(err)
    assert list(tmp_path.iterdir()) == []  # the temp file is removed


@pytest.mark.parametrize("what", ["latin1", "binary"])
def test_non_utf8_inputs(
    what: str,
    latin1_yaml: Path,
    binary_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    f = str(latin1_yaml if what == "latin1" else binary_file)
    for args in (
        ["compare", f],
        ["catalog", "show", "h100-sxm5-80gb", "--catalog", f],
        [*TRAIN, "--calibration", f],
        ["arbitrage", f],
        ["sweep", f],
    ):
        code, _out, err = run(args, capsys)
        assert code == 2, (args, err)
        one_error_line(err)


def test_directory_as_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["compare", str(tmp_path)], [*TRAIN, "--calibration", str(tmp_path)]):
        code, _, err = run(args, capsys)
        assert code == 2
        one_error_line(err)


@pytest.mark.integration  # a Dask client retries a TCP connection until its timeout
def test_unreachable_dask_scheduler_fails_fast(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("dask.distributed")
    import time

    t0 = time.monotonic()
    code, _, err = run(
        [
            "sweep", str(EXAMPLES / "sweep_training.yaml"), "--backend", "dask",
            "--scheduler", "tcp://127.0.0.1:9", "--no-progress",
        ],
        capsys,
    )  # fmt: skip
    assert code == 1
    assert "--scheduler" in one_error_line(err)
    assert time.monotonic() - t0 < 20


# ------------------------------------------------------------------ calibration sanity
F_MEGATRON = FIXTURES / "megatron_log.txt"


def test_calibrate_dcgm_only_is_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.yaml"
    code, _, err = run(["calibrate", str(DATA / "dcgm_power_energy.txt"), "-o", str(out)], capsys)
    assert code == 2
    assert "nccl-tests result or training log" in one_error_line(err)
    assert not out.exists()


@pytest.mark.parametrize(
    ("value", "shown"), [("5.0", "5.0"), ("-1", "-1"), (".nan", "nan"), (".inf", "inf")]
)
def test_profile_range_checked_on_load(
    value: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "p.yaml"
    p.write_text(f"profile_version: 1\nefficiency:\n  gemm:\n    nvidia-hopper: {value}\n")
    code, _out, err = run([*TRAIN, "--calibration", str(p), "--json"], capsys)
    assert code == 2
    line = one_error_line(err)
    assert "efficiency.gemm.nvidia-hopper" in line
    assert shown in line


# ------------------------------------------------------------------ success on nothing
@pytest.mark.parametrize("content", [b"", b"random text\nmore\n", bytes(range(256))])
def test_audit_with_no_parsed_line_fails(
    content: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "log.jsonl"
    p.write_bytes(content)
    code, _out, err = run(["audit", str(p), "--price", "openai/gpt-4o", "--json"], capsys)
    assert code == 2
    assert "no line parsed" in one_error_line(err)


def test_ingest_reports_every_file(binary_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(DATA / "nccl_results.json"), str(binary_file), str(DATA / "nvidia_smi_util.csv")]
    code, out, err = run(["ingest", "auto", *files, "--json"], capsys)
    assert code == 2
    doc = json.loads(out)
    assert [f["path"] for f in doc["files"]] == [files[0], files[2]]
    assert [e["path"] for e in doc["errors"]] == [files[1]]
    assert "Traceback" not in err
    assert err.count("error:") == 1


def test_web_busy_port_says_so_before_any_url(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        port = s.getsockname()[1]
        code, out, err = run(["web", "--port", str(port)], capsys)
    finally:
        s.close()
    assert code == 1
    assert "http://" not in out
    assert "already in use" in one_error_line(err)


def test_calibrate_refuses_a_fit_at_a_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = FIXTURES / "nccl_all_reduce_perf.txt"  # 2 nodes: scale_out_link wants > 1
    out = tmp_path / "p.yaml"
    code, _, err = run(["calibrate", str(log), "-o", str(out), "--json"], capsys)
    assert code == 2
    assert "scale_out_link" in one_error_line(err)
    assert not out.exists()
    code, text, _ = run(["calibrate", str(log), "-o", str(out), "--json", "--force"], capsys)
    assert code == 0
    assert any("at its bound" in w for w in json.loads(text)["warnings"])
    assert out.is_file()


def test_calibrate_refuses_a_wrongly_described_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.yaml"
    wrong = ["--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb", "--gpus", "8"]
    code, _, err = run(
        ["calibrate", str(F_MEGATRON), *wrong, "--seq-len", "4096", "-o", str(out)], capsys
    )
    assert code == 2
    line = one_error_line(err)
    assert "the log reports MFU 0.239" in line
    assert "--force" in line
    assert not out.exists()


def test_dask_sweep_leaves_no_scratch_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("dask.distributed")
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    args = [
        "sweep", str(EXAMPLES / "sweep_training.yaml"), "--backend", "dask", "--workers", "1",
        "--no-progress", "--top-k", "1", "--json",
    ]  # fmt: skip
    code, _, _ = run(args, capsys)
    assert code == 0
    assert list(scratch.iterdir()) == []


def test_optimize_unknown_cloud_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    sweep = str(EXAMPLES / "sweep_training.yaml")
    code, out, err = run(["optimize", sweep, "--allowed-clouds", "nosuchcloud", "--json"], capsys)
    assert code == 2
    line = one_error_line(err)
    assert "nosuchcloud" in line
    assert "allowed_providers" in line
    assert out == ""


@pytest.mark.parametrize(("provider", "expected"), [("amazon", "did you mean 'aws'"), ("nope", "")])
def test_unknown_provider_is_named_not_a_pricing_error(
    provider: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scen = tmp_path / "s.yaml"
    scen.write_text(
        "name: provider typo\n"
        "workload: {kind: training, model: gpt2-1.02b, tokens: 1.0e9}\n"
        "options:\n"
        f"  - {{hardware: h100-sxm5-80gb, gpus: 8, pricing: on_demand, provider: {provider}}}\n",
        encoding="utf-8",
    )
    code, _, err = run(["compare", str(scen)], capsys)
    assert code == 2
    line = one_error_line(err)
    assert f"options[0].provider = '{provider}'" in line
    assert expected in line
    assert "pricing" not in line
