"""``progress_bar()``, the one progress bar of the CLI: lazy, terminal-only (or forced), one bar
per label (or one at a time with ``replace``), transient; and the commands that use it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from memvault.cli._common import progress_bar
from memvault.cli.app import main


def _screen(*, terminal: bool) -> tuple[Console, io.StringIO]:
    text = io.StringIO()
    return Console(file=text, force_terminal=terminal, width=100), text


def test_nothing_is_drawn_when_stderr_is_not_a_terminal() -> None:
    console, text = _screen(terminal=False)
    with progress_bar(console=console) as bar:
        bar("importing", 3, 10)
        bar("importing", 10, 10)
        assert bar.labels == ()
    assert text.getvalue() == ""


def test_a_terminal_gets_a_bar_per_label() -> None:
    console, text = _screen(terminal=True)
    with progress_bar(console=console) as bar:
        bar("fts", 2, 5)
        bar("vectors", 1, 4)
        bar("fts", 5, 5)
        assert bar.labels == ("fts", "vectors")
    shown = text.getvalue()
    assert "fts" in shown and "vectors" in shown
    assert "5/5" in shown and "1/4" in shown


def test_a_console_forced_to_be_a_terminal_gets_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    # TTY_COMPATIBLE=1 (rich's switch, like FORCE_COLOR) makes a pipe or file count as a terminal.
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.delenv("TERM", raising=False)
    text = io.StringIO()
    with progress_bar(console=Console(file=text, width=100)) as bar:
        bar("migrating", 7, 9)
        assert bar.labels == ("migrating",)
    assert "migrating" in text.getvalue() and "7/9" in text.getvalue()


def test_replace_keeps_only_the_current_step() -> None:
    console, _ = _screen(terminal=True)
    with progress_bar(console=console, replace=True) as bar:
        bar("1000: add_many", 10, 100)
        bar("1000: add_many", 100, 100)
        assert bar.labels == ("1000: add_many",)
        bar("1000: search", 1, 30)
        assert bar.labels == ("1000: search",)


def test_the_bar_starts_on_the_first_report_only() -> None:
    # A command that fails on its input before any progress leaves no bar around its error.
    console, text = _screen(terminal=True)
    with pytest.raises(RuntimeError), progress_bar(console=console):
        raise RuntimeError("bad input")
    assert text.getvalue() == ""


def test_an_unknown_total_is_shown_as_such() -> None:
    console, text = _screen(terminal=True)
    with progress_bar(console=console) as bar:
        bar("embedding", 0, 0)
    assert "0/?" in text.getvalue()


def test_the_default_is_the_cli_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    console, text = _screen(terminal=True)
    monkeypatch.setattr("memvault.cli._common.err_console", console)
    with progress_bar() as bar:
        bar("checking", 1, 2)
    assert "checking" in text.getvalue()


# -- commands ------------------------------------------------------------------------------------


def test_backup_shows_its_stages_on_a_terminal_only(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(isolated_env / "store.db")
    assert main(["--db", db, "add", "The deploy pipeline has three stages."]) == 0
    capsys.readouterr()
    # Captured stderr is no terminal: no bar, not even a blank line.
    assert main(["--db", db, "backup", str(isolated_env / "a.bak")]) == 0
    assert capsys.readouterr().err == ""

    console, text = _screen(terminal=True)
    monkeypatch.setattr("memvault.cli._common.err_console", console)
    assert main(["--db", db, "backup", str(isolated_env / "b.bak")]) == 0
    assert "backup" in text.getvalue()
    assert (isolated_env / "b.bak").exists()
