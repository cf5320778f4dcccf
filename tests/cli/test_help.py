"""Every command's ``--help``: each option explained, flags shown as flags, values listed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, get_args

import pytest
import typer

import aitco.cli.app as cli_app
from aitco.decide.scenario import PricingMode


def _commands() -> Iterator[tuple[list[str], Any]]:
    cli_app._register()
    root = typer.main.get_command(cli_app.app)

    def walk(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield from walk(root, [])


COMMANDS = list(_commands())


def test_every_option_and_argument_has_help() -> None:
    missing = [
        f"aitco {' '.join(path)} {p.opts[0] if p.param_type_name == 'option' else p.name}"
        for path, cmd in COMMANDS
        for p in cmd.params
        if not (getattr(p, "help", None) or "").strip()
    ]
    assert not missing, missing


def test_pricing_options_list_their_values() -> None:
    modes = get_args(PricingMode)
    for path, cmd in COMMANDS:
        for p in cmd.params:
            if p.param_type_name == "option" and "pricing" in p.opts[0]:
                assert all(m in (p.help or "") for m in modes), (path, p.opts[0], p.help)


@pytest.mark.parametrize("path", [p for p, _c in COMMANDS], ids=lambda p: " ".join(p) or "aitco")
def test_help_shows_flags_as_flags(
    path: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exc:
        cli_app.main([*path, "--help"])
    out = capsys.readouterr().out
    assert exc.value.code in (0, None)
    assert "<bool>" not in out, out
    assert "--help" in out
