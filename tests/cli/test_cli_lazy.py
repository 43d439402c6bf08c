"""``memvault --help`` lists every command without importing any command module (issue 42).

The root group builds a command from its module (``memvault.cli.<module>.register``) on first
use; the listing comes from :data:`memvault.cli.app.COMMANDS`. These tests keep that table true
to the commands the modules register, and check what ``--help`` loads in a fresh interpreter.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

from memvault.cli.app import COMMANDS, app


def _registered() -> dict[str, tuple[str, Any]]:
    """Every command the modules named in COMMANDS register: name -> (module, command)."""
    found: dict[str, tuple[str, Any]] = {}
    for module in dict.fromkeys(m for _, m, _ in COMMANDS):
        holder = typer.Typer()
        importlib.import_module(f"memvault.cli.{module}").register(holder)
        for name, command in typer.main.get_group(holder).commands.items():
            found[name] = (module, command)
    return found


def test_the_table_names_each_command_its_module_and_help() -> None:
    registered = _registered()
    assert [name for name, _, _ in COMMANDS] == list(dict.fromkeys(n for n, _, _ in COMMANDS))
    assert {name for name, _, _ in COMMANDS} == set(registered)
    for name, module, text in COMMANDS:
        owner, command = registered[name]
        assert owner == module, name
        first = (command.help or "").split("\n\n")[0]
        assert text == " ".join(first.split()), name
        assert command.short_help is None and not command.hidden and not command.deprecated


def test_the_root_builds_every_command_on_demand() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    assert "search" in root.commands and "keys" in root.commands
    assert set(root.commands) >= {name for name, _, _ in COMMANDS}
    ctx = typer.Context(root)
    assert root.list_commands(ctx)[: len(COMMANDS)] == [name for name, _, _ in COMMANDS]


def test_help_lists_every_command_from_the_table(run: Any) -> None:
    result = run("--help")
    assert result.code == 0
    listed = result.out.split("Commands:", 1)[1]
    for name, _, _ in COMMANDS:
        assert f"\n  {name} " in listed, name


_PROBE = """
import contextlib, io, json, sys
from memvault.cli.app import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["--help"])
mods = sorted(m for m in sys.modules if m == "memvault" or m.startswith("memvault."))
third = sorted({m.split(".")[0] for m in sys.modules} - set(sys.stdlib_module_names))
print(json.dumps({"code": code, "mods": mods, "third": third, "out": out.getvalue()}))
"""


def test_help_imports_no_command_module() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(done.stdout)
    assert found["code"] == 0 and "Commands:" in found["out"]
    assert len(found["mods"]) <= 8, found["mods"]
    assert not set(found["third"]) & {"httpx", "pydantic", "numpy", "fastapi", "starlette"}
