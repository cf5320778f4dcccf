"""Issue 37, parts 2-4: one validation whatever the door, bounded reads, no traceback.

Every case the issue lists, run in-process: the value comes in through a file (a scenario, a
sweep, an ROI or buy-vs-rent file, a calibration profile, a catalog overlay, a Hugging Face
``config.json``, a trace or a log) or through a flag. Each ends in exit 2 (1 for the machine)
with one ``error:`` line naming the file, the field and the value, and every input file is
byte-identical afterwards. Special files (a FIFO, ``/dev/zero``) are refused at once: the
``no_hang`` fixture fails a test that would block instead of hanging the suite.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aitco.cli.app import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "calibrate" / "data"
#: Longest a refused case may take before it counts as a hang. [s]
HANG_S = 60


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
def no_hang() -> Iterator[None]:
    """Fail (instead of blocking the suite) when a case runs past :data:`HANG_S`."""

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"the command ran past {HANG_S} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _w(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


SCENARIO = """\
workload:
  kind: training
  model: llama-3-8b
  tokens: {tokens}
options:
  - {{hardware: h100-sxm5-80gb, gpus: {gpus}{extra}}}
"""
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
OVERLAY = """\
kind: accelerators
sources:
  me: {{title: my prices, retrieved: {date}}}
entries:
  - id: h100-sxm5-80gb
    source: me
    {field}
"""
FACTOR = """\
kind: factors
sources:
  me: {title: my facility, retrieved: 2025-01-01}
entries:
  - id: pue.air
    source: me
    value: 1e6
"""
HF = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
}
TRAIN = ["train", "--hardware", "h100-sxm5-80gb", "--gpus", "8", "--tokens", "1e9"]
INFER = ["infer", "--model", "llama-3-8b", "--hardware", "h100-sxm5-80gb"]
BVR = ["buy-vs-rent", "--hardware", "h100-sxm5-80gb", "--gpus", "8"]
AUDIT = ["audit", str(DATA / "vllm_current.jsonl")]


def _scenario(tokens: str = "1e9", gpus: str = "8", extra: str = "") -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        text = SCENARIO.format(tokens=tokens, gpus=gpus, extra=extra)
        return ["compare", str(_w(tmp, "s.yaml", text)), "--json"]

    return make


def _file(cmd: list[str], name: str, text: str, *after: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        return [*cmd, str(_w(tmp, name, text)), *after]

    return make


def _overlay(text: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        ov = _w(tmp, "overlay.yaml", text)
        return ["catalog", "show", "h100-sxm5-80gb", "--catalog", str(ov)]

    return make


def _profile(text: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        prof = _w(tmp, "profile.yaml", text)
        return ["compare", str(EXAMPLES / "default.yaml"), "--calibration", str(prof)]

    return make


def _hf(raw: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        return [*TRAIN, "--model", str(_w(tmp, "m/config.json", raw))]

    return make


def _hf_json(**change: object) -> str:
    return json.dumps({**HF, **change})


def _sweep(text: str, *more: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        return ["sweep", str(_w(tmp, "sw.yaml", text)), "--no-progress", *more]

    return make


def _flag(*args: str) -> Callable[[Path], list[str]]:
    return lambda tmp: list(args)


SWEEP = """\
sweep:
  kind: training
  workload: {{model: llama-3-8b, tokens: {tokens}, seq_len: 2048, global_batch: 64}}
  grid:
    option.hardware: [h100-sxm5-80gb]
    option.gpus: {gpus}
"""
BIG_GRID = SWEEP.format(tokens="1e9", gpus=list(range(1, 1001))) + (
    f"    workload.seq_len: {list(range(1, 1001))}\n"
    f"    workload.global_batch: {list(range(1, 1001))}\n"
)

#: name -> (arguments made in a scratch folder, text the error line must contain)
CASES: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    # scenario fields: numbers as people type them are numbers, checked like the flag
    "scenario tokens 1e19": (_scenario("1e19"), "workload.tokens = 1e+19"),
    "scenario tokens 1.0e300": (_scenario("1.0e300"), "workload.tokens = 1e+300"),
    "scenario tokens 1e-320": (_scenario("1e-320"), "workload.tokens"),
    "scenario tokens .nan": (_scenario(".nan"), "workload.tokens"),
    "scenario usd 1e300": (_scenario(extra=", usd_per_gpu_hour: 1e300"), "usd_per_gpu_hour"),
    "scenario gpus true": (_scenario(gpus="true"), "gpus = True"),
    "scenario gpus 1e9": (_scenario(gpus="1000000000"), "gpus = 1000000000"),
    "scenario duplicate key": (
        _file(
            ["compare"],
            "dup.yaml",
            SCENARIO.format(tokens="1e9", gpus=8, extra="") + "workload:\n  kind: training\n",
        ),
        "key 'workload' given twice",
    ),
    "scenario alias bomb": (_file(["compare"], "bomb.yaml", BOMB), "alias"),
    # sweeps: base values and grid values, the point count
    "sweep tokens 1e19": (_sweep(SWEEP.format(tokens="1e19", gpus=[8])), "tokens = 1e+19"),
    "sweep grid gpus true": (_sweep(SWEEP.format(tokens="1e9", gpus="[true]")), "gpus"),
    "sweep grid gpus 1e9": (_sweep(SWEEP.format(tokens="1e9", gpus="[1e9]")), "gpus"),
    "sweep --grid gpus=nan": (
        _sweep(SWEEP.format(tokens="1e9", gpus=[8]), "--grid", "gpus=8,nan"),
        "gpus",
    ),
    "sweep alias bomb": (_sweep(BOMB), "alias"),
    "sweep 10^9 points": (_sweep(BIG_GRID), "1,000,000,000 configurations"),
    "report --sweep 10^9 points": (
        lambda tmp: [
            "report",
            str(EXAMPLES / "default.yaml"),
            "-o",
            str(tmp / "r.html"),
            "--sweep",
            str(_w(tmp, "sw.yaml", BIG_GRID)),
        ],
        "1,000,000,000 configurations",
    ),
    # ROI and buy-vs-rent files
    "roi savings 1e300": (
        _file(["roi"], "roi.yaml", "roi:\n  monthly_savings_usd: 1e300\n  monthly_cost_usd: 1\n"),
        "monthly_savings_usd = 1e+300",
    ),
    "buy-vs-rent price 1e300": (
        _file(["buy-vs-rent"], "b.yaml", "buy_vs_rent:\n  gpus: 8\n  prices: {on_demand: 1e300}\n"),
        "prices.on_demand = 1e+300",
    ),
    "buy-vs-rent gpus true": (
        _file(["buy-vs-rent"], "b.yaml", "buy_vs_rent:\n  gpus: true\n"),
        "gpus",
    ),
    "buy-vs-rent unknown provider in the file": (
        _file(["buy-vs-rent"], "b.yaml", "buy_vs_rent:\n  provider: awz\n"),
        "did you mean",
    ),
    # calibration profiles
    "profile 1e19": (_profile("efficiency:\n  hbm: 1e19\n"), "efficiency.hbm = 1e+19"),
    "profile alias bomb": (_profile(BOMB), "alias"),
    # catalog overlays
    "overlay date 2025-13-45": (
        _overlay(OVERLAY.format(date="2025-13-45", field="tdp_w: 700")),
        "'2025-13-45'",
    ),
    "overlay future date": (
        _overlay(OVERLAY.format(date="2099-01-01", field="tdp_w: 700")),
        "no later than today",
    ),
    "overlay tdp 1e19": (
        _overlay(OVERLAY.format(date="2025-01-01", field="tdp_w: 1e19")),
        "tdp_w = 1e+19",
    ),
    "overlay peak 1e-9": (
        _overlay(OVERLAY.format(date="2025-01-01", field="peak_tflops: {bf16: 1e-9}")),
        "peak_tflops.bf16 = 1e-09",
    ),
    "overlay PUE 1e6": (_overlay(FACTOR), "pue.air"),
    "overlay duplicate key": (
        _overlay(OVERLAY.format(date="2025-01-01", field="tdp_w: 700\n    tdp_w: 800")),
        "given twice",
    ),
    "overlay alias bomb": (_overlay(BOMB), "alias"),
    # Hugging Face config.json
    "config.json NaN": (_hf(_hf_json(hidden_size=float("nan"))), "hidden_size = nan"),
    "config.json Infinity": (_hf(_hf_json(intermediate_size=float("inf"))), "= inf"),
    "config.json huge int": (_hf(_hf_json(vocab_size=10**400)), "vocab_size"),
    "config.json nested deep": (_hf('{"model_type": "llama", "x": ' + "[" * 100_000), "config"),
    # flags the issue names
    "--usd-year 3000": (
        _flag("compare", str(EXAMPLES / "default.yaml"), "--usd-year", "3000"),
        "--usd-year",
    ),
    "--power-limit-w 1": (_flag(*INFER, "--power-limit-w", "1"), "--power-limit-w = 1.0"),
    "--power-limit-w above TDP": (_flag(*INFER, "--power-limit-w", "5000"), "TDP"),
    "scenario power limit above TDP": (
        _scenario(extra=", power_limit_w: 5000"),
        "options[0].power_limit_w",
    ),
    "--spec-tokens 1e9": (
        _flag(*INFER, "--draft-model", "llama-3-8b", "--spec-tokens", "1000000000"),
        "--spec-tokens",
    ),
    "--disaggregate 1000000x1000000": (
        _flag(*INFER, "--qps", "1", "--disaggregate", "1000000x1000000"),
        "--disaggregate",
    ),
    "--autoscale max=inf": (
        _flag(*INFER, "--qps", "1", "--load-profile", "diurnal", "--autoscale", "max=inf"),
        "--autoscale",
    ),
    "--horizon-years 1e-12": (_flag(*BVR, "--horizon-years", "1e-12"), "--horizon-years"),
    "--provider unknown": (_flag(*BVR, "--provider", "awz"), "did you mean 'aws'"),
    "scenario region unknown": (_scenario(extra=", region: us-eest-1"), "did you mean 'us-east-1'"),
    "--price-region unknown": (_flag(*BVR, "--price-region", "us-eest-1"), "did you mean"),
    "audit --period-days 0": (
        _flag(*AUDIT, "--price", "openai/gpt-4o", "--period-days", "0"),
        "--period-days",
    ),
    "audit --price ''": (_flag(*AUDIT, "--price", ""), "--price = ''"),
    "probe --repeats 1e9": (
        _flag("probe", "--backend", "numpy", "--repeats", "1000000000"),
        "--repeats",
    ),
    "probe --size 1e6": (_flag("probe", "--backend", "numpy", "--size", "1000000"), "--size"),
    "sweep --workers 100000": (
        _flag(
            "sweep",
            str(EXAMPLES / "sweep_training.yaml"),
            "--no-progress",
            "--backend",
            "dask",
            "--workers",
            "100000",
        ),
        "--workers",
    ),
    "sweep --scheduler http://[::1": (
        _flag(
            "sweep",
            str(EXAMPLES / "sweep_training.yaml"),
            "--no-progress",
            "--backend",
            "dask",
            "--scheduler",
            "http://[::1",
        ),
        "--scheduler",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_case_is_one_line_exit_2_and_inputs_unchanged(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_hang: None
) -> None:
    make, expected = CASES[case]
    args = make(tmp_path)
    files = {p: hashlib.sha256(p.read_bytes()).digest() for p in tmp_path.rglob("*") if p.is_file()}
    code, out, err = run(args, capsys)
    assert code == 2, (out[-500:], err)
    line = one_error_line(err)
    assert expected in line, line
    after = {p: hashlib.sha256(p.read_bytes()).digest() for p in files}
    assert after == files, "an input file changed"


# ------------------------------------------------------------------ special files
def _fifo(tmp: Path) -> Path:
    p = tmp / "special.yaml"
    os.mkfifo(p)
    return p


def _zero(tmp: Path) -> Path:
    if not stat.S_ISCHR(os.stat("/dev/zero").st_mode):
        pytest.skip("/dev/zero is not a character device here")
    return Path("/dev/zero")


def _folder(tmp: Path) -> Path:
    p = tmp / "folder.yaml"
    p.mkdir()
    return p


DOORS: dict[str, Callable[[str], list[str]]] = {
    "scenario": lambda p: ["compare", p],
    "sweep": lambda p: ["sweep", p, "--no-progress"],
    "calibration profile": lambda p: [
        "compare",
        str(EXAMPLES / "default.yaml"),
        "--calibration",
        p,
    ],
    "catalog overlay": lambda p: ["catalog", "list", "accelerators", "--catalog", p],
    "ingest log": lambda p: ["ingest", "auto", p],
    "ingest log of a kind": lambda p: ["ingest", "nccl", p],
    "calibrate input": lambda p: [
        "calibrate",
        p,
        "--hardware",
        "h100-sxm5-80gb",
        "-o",
        "/x/p.yaml",
    ],
    "roi file": lambda p: ["roi", p],
    "buy-vs-rent file": lambda p: ["buy-vs-rent", p],
    "price trace": lambda p: ["arbitrage", p],
    "audit log": lambda p: ["audit", p, "--price", "openai/gpt-4o"],
    "request trace": lambda p: [*INFER, "--trace", p],
    "load profile": lambda p: [*INFER, "--qps", "1", "--load-profile", p],
    "model config": lambda p: [*TRAIN, "--model", p],
    "skypilot csv": lambda p: ["catalog", "import", "skypilot", p, "-o", "/nonexistent/o.yaml"],
}


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(_fifo, id="fifo"),  # the unit tier: a FIFO is what hangs
        pytest.param(_zero, id="dev-zero", marks=pytest.mark.integration),
        pytest.param(_folder, id="folder", marks=pytest.mark.integration),
    ],
)
@pytest.mark.parametrize("door", list(DOORS))
def test_only_regular_files_are_read(
    door: str,
    make: Callable[[Path], Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_hang: None,
) -> None:
    special = make(tmp_path)
    if door == "model config" and special.name != "zero":  # /dev/zero is no model path
        special = special.rename(tmp_path / "config.json")
    code, _out, err = run(DOORS[door](str(special)), capsys)
    assert code == 2, err
    line = one_error_line(err)
    assert any(
        w in line
        for w in ("FIFO", "character device", "directory", "a regular file", "known model id")
    ), line


# ------------------------------------------------------------------ rows that are skipped
def test_trace_rows_with_nan_or_inf_are_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        "0,100,50",
        "0.5,120,40",
        "nan,100,50",
        "inf,100,50",
        "1.0,inf,50",
        "1.5,1e300,5",
        "2.0,90,60",
    ]
    trace = _w(tmp_path, "t.csv", "arrival_s,input_tokens,output_tokens\n" + "\n".join(rows))
    code, out, err = run([*INFER, "--trace", str(trace), "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert "nan" not in out.lower().replace('"nan', "")
    assert 4 in (doc.get("trace_skipped_lines"), len(doc.get("trace_bad_lines", [1] * 4)))


def test_audit_lines_with_nan_usage_are_malformed_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = (DATA / "vllm_current.jsonl").read_text().splitlines()[0]
    bad = [
        '{"model": "gpt-4o", "usage": {"prompt_tokens": NaN, "completion_tokens": 1}}',
        '{"model": "gpt-4o", "usage": {"prompt_tokens": 1, "completion_tokens": Infinity}}',
        '{"model": "gpt-4o", "usage": {"prompt_tokens": 1e400, "completion_tokens": 1}}',
    ]
    log = _w(tmp_path, "log.jsonl", "\n".join([good, *bad, good]) + "\n")
    code, out, err = run(["audit", str(log), "--price", "openai/gpt-4o", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["skipped_lines"]["malformed"] == 3


def test_a_load_profile_csv_with_too_many_rows_is_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prof = _w(tmp_path, "p.csv", "hour,qps\n" + "".join(f"{h},1\n" for h in range(10_000)))
    code, _, err = run([*INFER, "--qps", "1", "--load-profile", str(prof)], capsys)
    assert code == 2
    assert "found more than 24" in one_error_line(err)


# ------------------------------------------------------------------ the YAML loader itself
def test_yaml_numbers_as_typed_are_numbers() -> None:
    from aitco.fileio import parse_yaml

    doc = parse_yaml("a: 1e19\nb: 1.0e300\nc: 1e-320\nd: 2.0e+10\ne: 5E3\nf: '1e19'\ng: v1e5\n")
    assert doc == {
        "a": 1e19,
        "b": 1e300,
        "c": 1e-320,
        "d": 2e10,
        "e": 5e3,
        "f": "1e19",
        "g": "v1e5",
    }


def test_yaml_aliases_are_counted_before_expansion() -> None:
    import time

    from aitco.errors import InputError
    from aitco.fileio import parse_yaml

    t = time.perf_counter()
    with pytest.raises(InputError, match="alias"):
        parse_yaml(BOMB + "j: &j [" + ", ".join(["*i"] * 10) + "]\n")  # 10^10 nodes
    assert time.perf_counter() - t < 5
    assert parse_yaml("base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n")["use"] == {"x": 1, "y": 2}
    with pytest.raises(InputError, match="recursive"):
        parse_yaml("a: &a [*a]\n")


def test_cli_md_states_the_bounds_generated_from_limits() -> None:
    """docs/cli.md states each bound once, as ``scripts/gen_cli_examples.py`` writes it."""
    from aitco.limits import bounds_markdown

    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert bounds_markdown() in text, "run scripts/gen_cli_examples.py"
    assert text.count("<!-- bounds:start") == 1
