"""Bad input: exit code 2, exactly one line on stderr, no traceback, the store unchanged.

One test runs the installed ``memvault`` console script in a subprocess to prove the entry
point works end to end; everything else calls ``main()`` in-process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SEED = "The one memory that must survive every failed command"


def assert_one_line_error(result, *expected: str) -> str:
    """Exit 2, nothing on stdout, one ``error: ...`` line on stderr naming ``expected``."""
    assert result.code == 2, (result.out, result.err)
    assert result.out == ""
    assert "Traceback" not in result.err
    assert len(result.err_lines) == 1, result.err
    line = result.err_lines[0]
    assert line.startswith("error: ")
    assert len(line) > len("error: ") + 5
    for text in expected:
        assert text in line, line
    return line


@pytest.fixture
def seeded_db(run, db) -> str:
    """A store that already holds one memory."""
    run.add(db, SEED)
    return db


BAD_INPUT = [
    # The request model's limits, as REST and `memvault api` have them.
    pytest.param(["add", ""], ["content", "at least 1 character"], id="empty-content"),
    pytest.param(["add", "  \t\n  "], ["content", "empty"], id="whitespace-content"),
    pytest.param(["add", "a\x00b"], ["NUL"], id="nul-in-content"),
    pytest.param(["add", "x" * 100_001], ["content", "100000"], id="content-too-long"),
    pytest.param(["add", "ok", "--type", "bogus"], ["unknown category 'bogus'"], id="cat"),
    pytest.param(["add", "ok", "--created-at", "notadate"], ["--created-at", "notadate"], id="dt"),
    pytest.param(["add", "ok", "--agent", "   "], ["agent_id"], id="blank-agent"),
    pytest.param(["add", "ok", "--tag", ""], ["tag"], id="empty-tag"),
    pytest.param(["add"], ["Missing argument"], id="missing-content"),
    pytest.param(["add", "ok", "--colour", "red"], ["--colour"], id="unknown-option"),
    pytest.param(["get", "bad id!"], ["malformed memory id"], id="malformed-id-get"),
    pytest.param(["delete", "../../etc/passwd"], ["malformed memory id"], id="malformed-id-del"),
    pytest.param(["get"], ["Missing argument"], id="missing-id"),
    pytest.param(["get", "01a20452-66aa-7000-9be4-25e5c3c5af99"], ["not found"], id="unknown-id"),
    pytest.param(["list", "--limit", "0"], ["--limit"], id="list-limit-0"),
    pytest.param(["list", "--limit", "1001"], ["--limit"], id="list-limit-too-big"),
    pytest.param(["list", "--limit", "many"], ["--limit"], id="list-limit-not-int"),
    pytest.param(["list", "--type", "bogus"], ["unknown category"], id="list-type"),
    pytest.param(["search", "x", "--limit", "0"], ["--limit"], id="search-limit-0"),
    pytest.param(["search", ""], ["query", "at least 1 character"], id="empty-query"),
    pytest.param(["search", "x", "--type", "nope"], ["unknown category"], id="search-type"),
    pytest.param(["search", "x", "--preset", "nope"], ["preset", "nope"], id="search-preset"),
    pytest.param(["search"], ["Missing argument"], id="missing-query"),
    pytest.param(["clear", "--type", "bogus", "--force"], ["unknown category"], id="clear-type"),
    pytest.param(["frobnicate"], ["No such command"], id="unknown-command"),
]


@pytest.mark.parametrize(("args", "expected"), BAD_INPUT)
def test_bad_input_fails_with_one_line_and_changes_nothing(run, seeded_db, args, expected) -> None:
    assert_one_line_error(run("--db", seeded_db, *args), *expected)
    assert [e["content"] for e in run.list(seeded_db)] == [SEED]


def test_db_path_that_is_a_directory(run, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    assert_one_line_error(run("--db", str(folder), "add", "hello"), "directory")
    assert list(folder.iterdir()) == []


def test_db_file_that_is_not_sqlite_is_left_alone(run, tmp_path: Path) -> None:
    garbage = tmp_path / "notes.db"
    payload = bytes(range(256)) * 8
    garbage.write_bytes(payload)
    assert_one_line_error(run("--db", str(garbage), "add", "hello"), "not a SQLite database")
    assert_one_line_error(run("--db", str(garbage), "list"), "not a SQLite database")
    assert garbage.read_bytes() == payload


def test_unknown_url_scheme(run, tmp_path: Path) -> None:
    line = assert_one_line_error(run("--db", "ftp://x", "add", "hello"), "ftp")
    assert "scheme" in line
    assert list(tmp_path.iterdir()) == []  # nothing was created in the working directory


def test_missing_config_file(run, db, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert_one_line_error(run("--config", str(missing), "--db", db, "list"), "nope.yaml")


def test_invalid_config_value_names_the_key(run, db, tmp_path: Path) -> None:
    cfg = tmp_path / "memvault.yaml"
    cfg.write_text("memory:\n  options:\n    retention_days: -1\n", encoding="utf-8")
    assert_one_line_error(
        run("--config", str(cfg), "--db", db, "list"), "memory.options.retention_days"
    )
    assert not Path(db).exists()


def test_invalid_config_found_in_the_working_directory(run, db, tmp_path: Path) -> None:
    (tmp_path / "memvault.yaml").write_text("memory:\n  level: bogus\n", encoding="utf-8")
    assert_one_line_error(run("--db", db, "list"), "memory.level")


def test_config_file_that_is_not_utf8(run, db, tmp_path: Path) -> None:
    cfg = tmp_path / "latin1.yaml"
    cfg.write_bytes("memory:\n  level: persistent  # café\n".encode("latin-1"))
    assert_one_line_error(run("--config", str(cfg), "--db", db, "list"), "latin1.yaml")


def test_error_message_with_a_closing_tag_is_printed(run, seeded_db) -> None:
    assert_one_line_error(run("--db", seeded_db, "add", "ok", "--type", "[/x]"), "'[/x]'")


def test_error_message_quotes_markup_like_input_verbatim(run, seeded_db) -> None:
    assert_one_line_error(
        run("--db", seeded_db, "get", "x" * 10, "--agent", "[bold]ops"), "'[bold]ops'"
    )


def test_console_script_end_to_end(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("memvault")
    assert script.is_file()
    db = str(tmp_path / "e2e.db")

    def memvault(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), "--db", db, *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            check=False,
        )

    added = memvault("add", "The build server is called hal9000")
    assert added.returncode == 0, added.stderr
    new_id = added.stdout.strip()
    assert new_id

    found = memvault("search", "what is the CI machine named", "--json")
    assert found.returncode == 0, found.stderr
    assert '"id": "' + new_id + '"' in found.stdout

    bad = memvault("add", "   ")
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: ")
    assert "empty" in bad.stderr
    assert "Traceback" not in bad.stderr
