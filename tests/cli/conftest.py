"""Fixtures of the CLI tests: run ``memvault`` in-process against real SQLite files.

``run`` calls :func:`memvault.cli.app.main` (the function behind the console script) and returns
its exit code with what it wrote to stdout and stderr. Every in-process run shares the
process-wide default embedding model, so the model loads once for the whole directory.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memvault.cli.app import main

# Variables that would make a run depend on the machine it runs on.
_STORE_ENV_PREFIX = "MEMVAULT_"
_KEEP_ENV = {"MEMVAULT_CACHE_DIR"}


@dataclass(frozen=True)
class Result:
    """One CLI run: exit code and captured output."""

    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        """The non-empty lines written to stderr."""
        return [line for line in self.err.splitlines() if line.strip()]

    def json(self) -> Any:
        """Stdout parsed as JSON."""
        return json.loads(self.out)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMVAULT_* setting of the machine and no ./memvault.yaml leaks into a test."""
    for name in list(os.environ):
        if name.startswith(_STORE_ENV_PREFIX) and name not in _KEEP_ENV:
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


class Cli:
    """Runs ``memvault ARGS`` in-process, with shortcuts for the common steps of a test."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self._capsys = capsys
        self._monkeypatch = monkeypatch

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        """Run the CLI; ``stdin`` feeds the answer to a prompt."""
        self._capsys.readouterr()  # drop anything printed before this run
        if stdin is not None:
            self._monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main(list(args))
        captured = self._capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def add(self, db: str, content: str, *options: str) -> str:
        """Add one memory and return the id the command printed."""
        result = self("--db", db, "add", content, *options)
        assert result.code == 0, result.err
        assert result.err == ""
        return result.out.strip()

    def list(self, db: str, *options: str) -> list[dict[str, Any]]:
        """``memvault list --json`` (up to 1000 entries) parsed."""
        result = self("--db", db, "list", "--json", "--limit", "1000", *options)
        assert result.code == 0, result.err
        data: list[dict[str, Any]] = result.json()
        return data


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The in-process CLI runner."""
    return Cli(capsys, monkeypatch)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """Path of a (not yet created) SQLite store for the test."""
    return str(tmp_path / "store.db")
