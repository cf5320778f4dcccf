"""Issue 37, part 1: an output never replaces an input, and only regular files are written.

Every command that writes a file is run with its output equal to one of its inputs (by name,
through a symbolic link, through a hard link), with ``--force`` where the command has it: each
answers one ``error:`` line and exit 2, and the input is byte-identical afterwards. An output
that is a FIFO or a directory is refused and left as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from aitco.cli.app import main
from aitco.fileio import check_output

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
DATA = REPO / "tests" / "calibrate" / "data"
FIXTURES = REPO / "tests" / "fixtures"


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
    return lines[0]


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _copy(src: Path, tmp: Path, name: str | None = None) -> Path:
    dst = tmp / (name or src.name)
    shutil.copy(src, dst)
    return dst


# Each case: (make the input files in tmp -> (args, the input the output names))
Case = Callable[[Path], tuple[list[str], Path]]


def _sweep(tmp: Path) -> tuple[list[str], Path]:
    s = _copy(EXAMPLES / "sweep_training.yaml", tmp, "s.yaml")
    return ["sweep", str(s), "--sample", "5", "--no-progress", "--csv", str(s)], s


def _calibrate(tmp: Path) -> tuple[list[str], Path]:
    log = _copy(DATA / "nccl_results.json", tmp, "log.json")
    return ["calibrate", str(log), "-o", str(log), "--force"], log


def _calibrate_trainlog(tmp: Path) -> tuple[list[str], Path]:
    log = _copy(DATA / "megatron_primus.txt", tmp, "log.txt")
    args = ["calibrate", str(log), "--model", "llama-3-8b", "--gpus", "8", "--seq-len", "2048",
            "--hardware", "h100-sxm5-80gb", "-o", str(log), "--force"]  # fmt: skip
    return args, log


def _report_md(tmp: Path) -> tuple[list[str], Path]:
    r = _copy(EXAMPLES / "default.yaml", tmp, "r.md")
    return ["report", str(r), "-o", str(r)], r


def _report_html(tmp: Path) -> tuple[list[str], Path]:
    r = _copy(EXAMPLES / "default.yaml", tmp, "r.html")
    return ["report", str(r), "-o", str(r)], r


def _report_roi(tmp: Path) -> tuple[list[str], Path]:
    roi = _copy(EXAMPLES / "roi_support_bot.yaml", tmp, "roi.html")
    return ["report", str(EXAMPLES / "default.yaml"), "--roi", str(roi), "-o", str(roi)], roi


def _roi_template(tmp: Path) -> tuple[list[str], Path]:
    roi = _copy(EXAMPLES / "roi_support_bot.yaml", tmp, "roi.xlsx")
    return ["roi-template", "--roi", str(roi), "-o", str(roi)], roi


def _skypilot(tmp: Path) -> tuple[list[str], Path]:
    csv = _copy(FIXTURES / "skypilot_vms_aws_v7.csv", tmp, "vms.csv")
    return ["catalog", "import", "skypilot", str(csv), "--provider", "aws", "-o", str(csv)], csv


def _overlay(tmp: Path) -> tuple[list[str], Path]:
    """The output is the ``--catalog`` overlay the command read."""
    ov = tmp / "overlay.yaml"
    ov.write_text("kind: accelerators\nentries: []\n")
    log = _copy(DATA / "nccl_results.json", tmp, "log.json")
    return ["calibrate", str(log), "--catalog", str(ov), "-o", str(ov), "--force"], ov


def _probe_profile(tmp: Path) -> tuple[list[str], Path]:
    """A profile given to calibrate (probe results) is an input too."""
    prof = tmp / "probe.yaml"
    code = main_code(["probe", "--size", "64", "--copy-mb", "1", "--repeats", "1",
                      "--backend", "numpy", "-o", str(prof)])  # fmt: skip
    assert code == 0
    log = _copy(DATA / "nccl_results.json", tmp, "log.json")
    return ["calibrate", str(log), str(prof), "-o", str(prof), "--force"], prof


def main_code(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code if isinstance(exc.value.code, int) else 0


CASES: dict[str, Case] = {
    "sweep --csv": _sweep,
    "calibrate -o (nccl)": _calibrate,
    "calibrate -o (training log)": _calibrate_trainlog,
    "report -o .md": _report_md,
    "report -o .html": _report_html,
    "report --roi -o": _report_roi,
    "roi-template -o": _roi_template,
    "catalog import skypilot -o": _skypilot,
    "calibrate -o = --catalog overlay": _overlay,
    "calibrate -o = probe profile": _probe_profile,
}


@pytest.mark.parametrize(
    "how",
    [
        "same path",
        "symlink",
        pytest.param("hard link", marks=pytest.mark.integration),
        pytest.param("relative path", marks=pytest.mark.integration),
    ],
)
@pytest.mark.parametrize("case", list(CASES))
def test_an_output_never_replaces_an_input(
    case: str, how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    args, src = CASES[case](tmp_path)
    capsys.readouterr()
    before = digest(src)
    i = max(k for k, a in enumerate(args) if a == str(src))  # the output's position
    if how == "symlink":
        link = tmp_path / ("link" + src.suffix)
        link.symlink_to(src)
        args[i] = str(link)
    elif how == "hard link":
        hard = tmp_path / ("hard" + src.suffix)
        os.link(src, hard)
        args[i] = str(hard)
    elif how == "relative path":
        monkeypatch.chdir(tmp_path)
        args[i] = f"./{src.name}"
    code, _out, err = run(args, capsys)
    assert code == 2, err
    line = one_error_line(err)
    assert "other than an input" in line
    assert "--force does not override" in line
    assert digest(src) == before, "the input was replaced"
    assert not list(tmp_path.glob(".*.tmp")), "a temporary file was left"


def test_probe_may_update_its_own_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``probe -o`` reads the profile it updates: that file is the output, not an input."""
    prof = tmp_path / "probe.yaml"
    args = ["probe", "--size", "64", "--copy-mb", "1", "--repeats", "1", "--backend", "numpy",
            "-o", str(prof)]  # fmt: skip
    assert run(args, capsys)[0] == 0
    assert run([*args, "--hardware", "h100-sxm5-80gb"], capsys)[0] == 0
    assert "accelerator: h100-sxm5-80gb" in prof.read_text()


def _fifo(tmp: Path) -> Path:
    p = tmp / "out.fifo"
    os.mkfifo(p)
    return p


def _dir(tmp: Path) -> Path:
    p = tmp / "out.csv"
    p.mkdir()
    return p


@pytest.mark.parametrize("make", [_fifo, _dir], ids=["fifo", "directory"])
@pytest.mark.parametrize(
    "command",
    [
        ["sweep", str(EXAMPLES / "sweep_training.yaml"), "--sample", "5", "--no-progress",
         "--csv"],
        ["calibrate", str(DATA / "nccl_results.json"), "--force", "-o"],
        ["report", str(EXAMPLES / "default.yaml"), "-o"],
        ["roi-template", "-o"],
        ["probe", "--size", "64", "--copy-mb", "1", "--repeats", "1", "--backend", "numpy",
         "-o"],
    ],
    ids=["sweep", "calibrate", "report", "roi-template", "probe"],
)  # fmt: skip
def test_only_regular_files_or_new_paths_are_written(
    command: list[str], make: Callable[[Path], Path], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    out = make(tmp_path)
    if command[0] == "report":
        out = out.rename(tmp_path / "out.html")
    elif command[0] == "roi-template":
        out = out.rename(tmp_path / "out.xlsx")
    elif command[0] in ("calibrate", "probe"):
        out = out.rename(tmp_path / "out.yaml")
    mode = os.stat(out).st_mode
    code, _out, err = run([*command, str(out)], capsys)
    assert code == 2, err
    line = one_error_line(err)
    assert "a regular file or a new path" in line
    assert os.stat(out).st_mode == mode, "the special file was replaced"


def test_a_device_is_never_an_output() -> None:
    """``/dev/zero`` (a character device) is refused without writing anything to it."""
    if not stat.S_ISCHR(os.stat("/dev/zero").st_mode):
        pytest.skip("/dev/zero is not a character device here")
    with pytest.raises(Exception, match="character device"):
        check_output("/dev/zero", field="--csv")


def test_sweep_parquet_must_be_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "rows.parquet"
    f.write_text("not a folder")
    args = ["sweep", str(EXAMPLES / "sweep_training.yaml"), "--sample", "5", "--no-progress",
            "--parquet", str(f)]  # fmt: skip
    code, _out, err = run(args, capsys)
    assert code == 2
    assert "a directory or a new path" in one_error_line(err)
    assert f.read_text() == "not a folder"
