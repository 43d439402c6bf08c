"""Every command, argument and option of ``memvault`` is documented."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
import typer
import typer.main
from typer.core import TyperArgument, TyperGroup, TyperOption

from memvault.cli.app import app

COMMANDS = [
    *("add", "search", "list", "get", "delete", "clear", "export", "import", "stats"),
    "migrate",
]


def _root(typer_app: typer.Typer) -> TyperGroup:
    root = typer.main.get_command(typer_app)
    assert isinstance(root, TyperGroup)
    return root


def _commands(typer_app: typer.Typer) -> dict[str, Any]:
    return dict(_root(typer_app).commands)


def _undocumented_commands(typer_app: typer.Typer) -> set[str]:
    return {
        name
        for name, command in _commands(typer_app).items()
        if not (command.help or "").strip() or not command.get_short_help_str().strip()
    }


def _undocumented_params(typer_app: typer.Typer) -> set[tuple[str, str]]:
    """(command, option or argument) pairs whose help text is empty, the global ones included."""
    missing: set[tuple[str, str]] = set()
    commands = {"(global)": _root(typer_app), **_commands(typer_app)}
    for name, command in commands.items():
        for param in command.params:
            assert isinstance(param, TyperOption | TyperArgument), param
            if not (param.help or "").strip():
                label = param.opts[0] if isinstance(param, TyperOption) else param.name
                missing.add((name, str(label)))
    return missing


def test_the_expected_commands_exist() -> None:
    assert set(COMMANDS) <= set(_commands(app))


def test_every_command_has_help() -> None:
    assert (_root(app).help or "").strip()
    assert _undocumented_commands(app) == set()


def test_every_option_has_help() -> None:
    assert _undocumented_params(app) == set()


def test_the_walk_reaches_every_kind_of_parameter() -> None:
    commands = _commands(app)
    assert any(isinstance(p, TyperArgument) for p in commands["add"].params)
    assert {"--limit", "--type", "--explain", "--json"} <= {
        opt for p in commands["search"].params for opt in p.opts
    }
    assert {"--db", "--config"} <= {opt for p in _root(app).params for opt in p.opts}


def test_the_checks_detect_undocumented_commands_and_parameters() -> None:
    probe = typer.Typer()

    @probe.callback()
    def _cb() -> None:
        """Probe app."""

    @probe.command()
    def documented(
        name: Annotated[str, typer.Argument(help="A name.")],
        loud: Annotated[bool, typer.Option(help="Shout.")] = False,
    ) -> None:
        """Has help."""

    @probe.command()
    def bare(name: str, count: Annotated[int, typer.Option("--count")] = 1) -> None:
        pass

    assert _undocumented_commands(probe) == {"bare"}
    assert _undocumented_params(probe) == {("bare", "name"), ("bare", "--count")}


@pytest.mark.parametrize("command", COMMANDS)
def test_command_help_prints_usage_and_exits_0(run, command) -> None:
    result = run(command, "--help")
    assert result.code == 0
    assert result.err == ""
    assert result.out.startswith(f"Usage: memvault {command} ")
    summary = (_commands(app)[command].help or "").strip().splitlines()[0]
    assert summary in result.out


def test_top_level_help_lists_every_command(run) -> None:
    result = run("--help")
    assert result.code == 0
    assert "--db" in result.out
    listed = result.out.split("Commands:", 1)[1].split()
    for command in COMMANDS:
        assert command in listed


def test_version_and_short_help(run: Any) -> None:
    from memvault._version import __version__

    shown = run("--version")
    assert shown.code == 0 and shown.out.strip() == f"memvault {__version__}"
    for args in (("-h",), ("serve", "-h"), ("keys", "create", "-h")):
        result = run(*args)
        assert result.code == 0, (args, result.err)
        assert result.out.startswith("Usage: memvault"), (args, result.out[:200])
        assert "-h, --help" in result.out
