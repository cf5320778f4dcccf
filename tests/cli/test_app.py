from __future__ import annotations

import json

import pytest

from aitco.cli.app import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    out, err = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else 0
    return code, out, err


def test_version(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0
    assert out.startswith("aitco ")


def test_unknown_id_exit_2_no_traceback(capsys):
    code, _out, err = run(["catalog", "show", "h100-sxm5"], capsys)
    assert code == 2
    assert "Traceback" not in err
    assert "h100-sxm5-80gb" in err


def test_catalog_flag_anywhere(tmp_path, capsys):
    f = tmp_path / "o.yaml"
    f.write_text("kind: accelerators\nentries:\n  - id: h100-sxm5-80gb\n    tdp_w: 600\n")
    code, out, _ = run(["catalog", "show", "h100-sxm5-80gb", "--json", "--catalog", str(f)], capsys)
    assert code == 0
    rows = {r["field"]: r for r in json.loads(out)["values"]}
    assert rows["tdp_w"]["value"] == 600
    assert rows["tdp_w"]["source_key"].startswith("file:")


def test_usage_error_exit_2(capsys):
    code, _, _ = run(["catalog", "list"], capsys)
    assert code == 2


def test_write_atomic_gives_normal_permissions(tmp_path):
    import os
    import stat

    from aitco.fileio import write_atomic

    umask = os.umask(0o022)
    try:
        p = tmp_path / "out" / "report.txt"
        p.parent.mkdir()  # write_atomic creates no directory (issue 18)
        write_atomic(p, "hello")
        assert p.read_text() == "hello"
        assert stat.S_IMODE(p.stat().st_mode) == 0o644
        os.chmod(p, 0o600)
        write_atomic(p, b"again")
        assert p.read_bytes() == b"again"
        assert stat.S_IMODE(p.stat().st_mode) == 0o600  # an existing file keeps its mode
        assert [q.name for q in p.parent.iterdir()] == ["report.txt"]  # no temp file left
    finally:
        os.umask(umask)
