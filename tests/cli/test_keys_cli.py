"""``memvault keys create/list/revoke`` against real SQLite stores."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.core import TyperArgument, TyperGroup, TyperOption

import memvault.cli.app as cli_app
from memvault.cli import keys as keys_cli
from memvault.server.keys import Scope, SQLiteKeyStore

SECRET_RE = re.compile(r"mvk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")


@pytest.fixture(autouse=True, scope="module")
def _registered() -> None:
    """``memvault keys`` on the real app (once, whether or not app.py registers it)."""
    if not any(g.name == "keys" for g in cli_app.app.registered_groups):
        keys_cli.register(cli_app.app)


def _create(run: Any, db: str, *options: str) -> dict[str, Any]:
    result = run("--db", db, "keys", "create", "--json", *options)
    assert result.code == 0, result.err
    assert result.err == ""
    data: dict[str, Any] = result.json()
    return data


def _list(run: Any, db: str, *options: str) -> list[dict[str, Any]]:
    result = run("--db", db, "keys", "list", "--json", *options)
    assert result.code == 0, result.err
    data: list[dict[str, Any]] = result.json()
    return data


def _authenticate(db: str, secret: str) -> Any:
    store = SQLiteKeyStore(db)
    try:
        return store.authenticate(secret)
    finally:
        store.close()


# -- create ---------------------------------------------------------------------------------------


def test_create_prints_the_secret_once_with_a_warning(run: Any, db: str) -> None:
    result = run("--db", db, "keys", "create", "--name", "ci bot")
    assert result.code == 0, result.err
    # The secret is the only line on stdout, so KEY=$(memvault keys create ...) captures it
    # and nothing else; what the key is and the warning go to stderr (still on the terminal).
    assert SECRET_RE.fullmatch(result.out.rstrip("\n")), result.out
    assert result.out.count("\n") == 1
    secret = result.out.strip()
    assert secret not in result.err
    warnings = [line for line in result.err_lines if "cannot be shown again" in line]
    assert len(warnings) == 1
    assert re.search(r"created key k_[0-9a-f]{12} 'ci bot'", result.err)
    key = _authenticate(db, secret)
    assert key is not None and key.name == "ci bot"
    assert key.tenant == "default" and key.scopes == {Scope.READ, Scope.WRITE}


def test_create_json_has_exactly_the_documented_fields(run: Any, db: str) -> None:
    data = _create(
        run, db, "--name", "deploy", "--tenant", "acme", "--scope", "admin", "--agent", "dev-1"
    )
    assert set(data) == {"id", "name", "tenant", "scopes", "agent_id", "created_at", "secret"}
    assert (data["name"], data["tenant"], data["scopes"], data["agent_id"]) == (
        "deploy",
        "acme",
        ["admin"],
        "dev-1",
    )
    assert SECRET_RE.fullmatch(data["secret"])
    assert data["secret"][4:16] == data["id"][2:]
    key = _authenticate(db, data["secret"])
    assert key is not None and key.id == data["id"]
    assert key.created_at.isoformat() == data["created_at"]


def test_repeated_scopes_are_combined(run: Any, db: str) -> None:
    data = _create(run, db, "--name", "k", "-s", "write", "-s", "READ", "-s", "write")
    assert data["scopes"] == ["read", "write"]


def test_a_fresh_key_file_is_a_memvault_store(run: Any, db: str) -> None:
    _create(run, db, "--name", "ci")
    memory_id = run.add(db, "Prefers Litestar over Flask", "--agent", "dev-1")
    assert [e["id"] for e in run.list(db, "--agent", "dev-1")] == [memory_id]
    assert len(_list(run, db)) == 1


def test_keys_join_an_existing_memory_store(run: Any, db: str) -> None:
    memory_id = run.add(db, "Deploys on Fridays are forbidden", "--agent", "dev-1")
    data = _create(run, db, "--name", "ci")
    assert [e["id"] for e in run.list(db, "--agent", "dev-1")] == [memory_id]
    assert _authenticate(db, data["secret"]) is not None


# -- bad input ------------------------------------------------------------------------------------


def test_an_unknown_scope_is_one_line_and_exit_2(run: Any, db: str) -> None:
    result = run("--db", db, "keys", "create", "--name", "k", "--scope", "superuser")
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1
    assert "unknown scope 'superuser'" in result.err
    assert "read, write, admin" in result.err
    assert not Path(db).exists()


@pytest.mark.parametrize(
    "options",
    [
        ("--name", "   "),
        ("--name", "k", "--tenant", " "),
        ("--name", "k", "--agent", " "),
        ("--name", "x" * 101),
        (),  # --name is required
    ],
)
def test_bad_create_input_exits_2(run: Any, db: str, options: tuple[str, ...]) -> None:
    result = run("--db", db, "keys", "create", *options)
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith(("error:", "Error", "Usage")) or "name" in result.err
    assert not Path(db).exists()


def test_a_http_store_is_refused(run: Any) -> None:
    result = run("--db", "http://localhost:8000", "keys", "list")
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert "server's own store" in result.err


def test_a_foreign_database_is_refused_and_left_alone(run: Any, tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    result = run("--db", str(path), "keys", "create", "--name", "k")
    assert result.code == 2
    assert "another application" in result.err
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"users"}


# -- list -----------------------------------------------------------------------------------------


def test_list_shows_keys_but_never_a_secret_or_hash(run: Any, db: str) -> None:
    a = _create(run, db, "--name", "ci [bot]", "--scope", "read")
    b = _create(run, db, "--name", "deploy", "--tenant", "acme", "--agent", "dev-1")
    with sqlite3.connect(db) as conn:
        hashes = [r[0] for r in conn.execute("SELECT secret_hash FROM api_keys")]
    table = run("--db", db, "keys", "list")
    assert table.code == 0, table.err
    as_json = run("--db", db, "keys", "list", "--json")
    for text in (table.out, as_json.out):
        for data in (a, b):
            assert data["secret"] not in text
            assert data["secret"][17:] not in text
        for digest in hashes:
            assert digest not in text
    for column in ("id", "name", "tenant", "scopes", "agent", "created", "revoked"):
        assert column in table.out
    assert a["id"] in table.out and b["id"] in table.out
    assert "ci [bot]" in table.out or "[bot]" in table.out  # literal, not rich markup
    rows = as_json.json()
    assert [r["id"] for r in rows] == [a["id"], b["id"]]
    assert set(rows[0]) == {
        "id",
        "name",
        "tenant",
        "scopes",
        "agent_id",
        "created_at",
        "revoked_at",
    }


def test_list_filters_by_tenant(run: Any, db: str) -> None:
    a = _create(run, db, "--name", "a", "--tenant", "acme")
    _create(run, db, "--name", "b", "--tenant", "globex")
    c = _create(run, db, "--name", "c", "--tenant", "acme")
    assert [r["id"] for r in _list(run, db, "--tenant", "acme")] == [a["id"], c["id"]]
    assert _list(run, db, "--tenant", "initech") == []


def test_list_of_a_missing_store_is_empty_and_creates_nothing(run: Any, db: str) -> None:
    result = run("--db", db, "keys", "list")
    assert result.code == 0 and result.out.strip() == "no keys"
    assert _list(run, db) == []
    assert not Path(db).exists()


# -- revoke ---------------------------------------------------------------------------------------


def test_revoke_disables_the_key_and_keeps_it_listed(run: Any, db: str) -> None:
    a = _create(run, db, "--name", "a")
    b = _create(run, db, "--name", "b")
    result = run("--db", db, "keys", "revoke", a["id"])
    assert result.code == 0, result.err
    assert result.out.startswith(f"revoked key {a['id']}")
    assert _authenticate(db, a["secret"]) is None
    assert _authenticate(db, b["secret"]) is not None
    assert [r["id"] for r in _list(run, db)] == [b["id"]]
    everything = _list(run, db, "--all")
    assert [r["id"] for r in everything] == [a["id"], b["id"]]
    assert everything[0]["revoked_at"] is not None and everything[1]["revoked_at"] is None
    table = run("--db", db, "keys", "list", "--all")
    assert a["id"] in table.out


def test_revoking_again_or_an_unknown_key_exits_1(run: Any, db: str) -> None:
    a = _create(run, db, "--name", "a")
    assert run("--db", db, "keys", "revoke", a["id"]).code == 0
    again = run("--db", db, "keys", "revoke", a["id"])
    assert again.code == 1
    assert "already revoked" in again.err and again.out == ""
    unknown = run("--db", db, "keys", "revoke", "k_000000000000")
    assert unknown.code == 1
    assert "no key k_000000000000" in unknown.err


def test_revoking_in_a_missing_store_exits_1_and_creates_nothing(run: Any, db: str) -> None:
    result = run("--db", db, "keys", "revoke", "k_000000000000")
    assert result.code == 1
    assert not Path(db).exists()


def test_revoke_by_name_revokes_the_one_active_key_of_that_name(run: Any, db: str) -> None:
    ops = _create(run, db, "--name", "ops", "--tenant", "acme", "--scope", "admin")
    other = _create(run, db, "--name", "ci")
    result = run("--db", db, "keys", "revoke", "--name", "ops")
    assert result.code == 0, result.err
    assert result.out.startswith(f"revoked key {ops['id']} 'ops'")
    assert _authenticate(db, ops["secret"]) is None
    assert _authenticate(db, other["secret"]) is not None
    # A new key may reuse a revoked key's name; the name then means the active one.
    again = _create(run, db, "--name", "ops")
    assert run("--db", db, "keys", "revoke", "--name", "ops").code == 0
    assert _authenticate(db, again["secret"]) is None
    missing = run("--db", db, "keys", "revoke", "--name", "ops")
    assert missing.code == 1 and missing.err_lines == ["error: no active key named 'ops'"]


def test_revoke_by_an_ambiguous_name_or_by_name_and_id_is_refused(run: Any, db: str) -> None:
    a = _create(run, db, "--name", "bot")
    b = _create(run, db, "--name", "bot", "--tenant", "acme")
    result = run("--db", db, "keys", "revoke", "--name", "bot")
    assert result.code == 2 and len(result.err_lines) == 1
    assert a["id"] in result.err and b["id"] in result.err
    both = run("--db", db, "keys", "revoke", a["id"], "--name", "bot")
    assert both.code == 2 and len(both.err_lines) == 1
    neither = run("--db", db, "keys", "revoke")
    assert neither.code == 2 and len(neither.err_lines) == 1
    assert _authenticate(db, a["secret"]) is not None
    assert _authenticate(db, b["secret"]) is not None


def test_a_malformed_key_id_exits_2(run: Any, db: str) -> None:
    _create(run, db, "--name", "a")
    result = run("--db", db, "keys", "revoke", "not-a-key")
    assert result.code == 2
    assert len(result.err_lines) == 1 and "malformed key id" in result.err


# -- help -----------------------------------------------------------------------------------------


def test_every_keys_command_and_option_has_help(run: Any) -> None:
    root = typer.main.get_command(cli_app.app)
    assert isinstance(root, TyperGroup)
    group = root.commands["keys"]
    assert isinstance(group, TyperGroup)
    assert (group.help or "").strip()
    assert set(group.commands) == {"create", "list", "revoke"}
    for name, command in group.commands.items():
        assert (command.help or "").strip(), name
        for param in command.params:
            assert isinstance(param, TyperOption | TyperArgument)
            assert (param.help or "").strip(), (name, param.name)
        result = run("keys", name, "--help")
        assert result.code == 0 and result.out.startswith(f"Usage: memvault keys {name} ")
    assert "keys" in run("--help").out
