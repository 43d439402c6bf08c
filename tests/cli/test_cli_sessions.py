"""``memvault sessions list/show/clear`` against real SQLite stores."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest

import memvault.cli.app as cli_app
from memvault.cli import sessions as sessions_cli
from memvault.models import ChatMessage
from memvault.sessions import SQLiteSessionStore

OLD, NEW, BOBS = "0000000000aa", "0000000000bb", "0000000000cc"


@pytest.fixture(autouse=True, scope="module")
def _registered() -> None:
    """``memvault sessions`` on the real app (once, whether or not app.py registers it)."""
    if not any(g.name == "sessions" for g in cli_app.app.registered_groups):
        sessions_cli.register(cli_app.app)


def _save(db: str, agent: str, sid: str, messages: Sequence[ChatMessage]) -> None:
    async def run() -> None:
        store = SQLiteSessionStore(db)
        try:
            await store.save(agent, sid, messages)
        finally:
            await store.close()

    asyncio.run(run())


def _ids(db: str, agent: str) -> list[str]:
    async def run() -> list[str]:
        store = SQLiteSessionStore(db)
        try:
            return [r.session_id for r in await store.list(agent)]
        finally:
            await store.close()

    return asyncio.run(run())


@pytest.fixture
def seeded(db: str) -> str:
    """Two sessions of agent ``dev`` (OLD, then NEW) and one of agent ``bob``."""
    _save(db, "dev", OLD, [ChatMessage(role="user", content="How do I rotate the API key?")])
    _save(
        db,
        "dev",
        NEW,
        [
            ChatMessage(role="user", content="Which port does staging use? [not markup]"),
            ChatMessage(role="assistant", content="5433"),
            ChatMessage(role="tool", content="ok", name="lookup"),
        ],
    )
    _save(db, "bob", BOBS, [ChatMessage(role="user", content="bob's private question")])
    return db


# -- list ----------------------------------------------------------------------------------------


def test_list_json_is_newest_first_and_only_the_agents_sessions(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "list", "--agent", "dev", "--json")
    assert result.code == 0, result.err
    rows = result.json()
    assert [r["session_id"] for r in rows] == [NEW, OLD]
    assert [r["message_count"] for r in rows] == [3, 1]
    assert {r["agent_id"] for r in rows} == {"dev"}
    assert set(rows[0]) == {"session_id", "agent_id", "created_at", "updated_at", "message_count"}


def test_list_table_shows_ids_counts_and_first_messages(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "list", "--agent", "dev")
    assert result.code == 0, result.err
    assert result.out.index(NEW) < result.out.index(OLD)
    # Cells wrap at the terminal width: compare the table's words, not its lines.
    words = result.out.split()
    assert all(w in words for w in "Which port does staging use? [not markup]".split())
    row = next(line for line in result.out.splitlines() if NEW in line)
    assert row.split("│")[3].strip() == "3"
    assert "bob" not in result.out


def test_list_limit(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "list", "--agent", "dev", "--json", "-n", "1")
    assert [r["session_id"] for r in result.json()] == [NEW]


def test_list_of_a_store_that_does_not_exist_creates_nothing(run, tmp_path: Path) -> None:
    db = tmp_path / "absent.db"
    result = run("--db", str(db), "sessions", "list", "--agent", "dev")
    assert (result.code, result.out.strip(), result.err) == (0, "no sessions", "")
    assert run("--db", str(db), "sessions", "list", "--json").json() == []
    assert not db.exists()


# -- show ----------------------------------------------------------------------------------------


def test_show_json_has_the_messages(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "show", NEW, "--agent", "dev", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert data["session_id"] == NEW
    assert data["messages"] == [
        {"role": "user", "content": "Which port does staging use? [not markup]"},
        {"role": "assistant", "content": "5433"},
        {"role": "tool", "content": "ok", "name": "lookup"},
    ]


def test_show_prints_each_message_with_its_role(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "show", NEW, "--agent", "dev")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1:] == [
        "user: Which port does staging use? [not markup]",
        "assistant: 5433",
        "tool (lookup): ok",
    ]


def test_show_latest_is_the_most_recent_session_as_in_the_api(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "show", "latest", "--agent", "dev", "--json")
    assert result.code == 0, result.err
    assert result.json()["session_id"] == NEW
    none = run("--db", seeded, "sessions", "show", "latest", "--agent", "nobody")
    assert none.code == 2 and none.err_lines == ["error: agent 'nobody' has no sessions"]


def test_show_of_another_agents_session_is_not_found(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "show", BOBS, "--agent", "dev")
    assert result.code == 2
    assert result.out == ""
    assert result.err_lines == [f"error: session {BOBS} not found for agent 'dev'"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "not/an/id", "--agent", "dev"], "malformed session id 'not/an/id'"),
        (["show", NEW, "--agent", "   "], "invalid agent_id"),
        (["list", "--agent", ""], "invalid agent_id"),
        (["clear", "--agent", "dev", "--session", " XYZ", "--force"], "malformed session id"),
        (["show", "no-such-session", "--agent", "dev"], "session no-such-session not found"),
        (["list", "--agent", "dev", "--limit", "0"], "--limit"),
    ],
)
def test_bad_input_exits_2_with_one_line(run, seeded: str, args: list[str], message: str) -> None:
    result = run("--db", seeded, "sessions", *args)
    assert result.code == 2
    assert len(result.err_lines) == 1, result.err
    assert result.err_lines[0].startswith("error: ")
    assert message in result.err_lines[0]
    assert _ids(seeded, "dev") == [NEW, OLD]


def test_a_store_of_another_application_exits_2_with_one_line(run, tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    result = run("--db", str(db), "sessions", "list")
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert "another application" in result.err_lines[0]


# -- clear ---------------------------------------------------------------------------------------


def test_clear_one_session(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "clear", "--agent", "dev", "--session", OLD, "-f")
    assert (result.code, result.out.strip()) == (0, f"deleted session {OLD}")
    assert _ids(seeded, "dev") == [NEW]
    assert _ids(seeded, "bob") == [BOBS]


def test_clear_an_unknown_session_exits_2(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "clear", "--agent", "dev", "--session", BOBS, "-f")
    assert result.code == 2
    assert result.err_lines == [f"error: session {BOBS} not found for agent 'dev'"]
    assert _ids(seeded, "bob") == [BOBS]


def test_clear_all_sessions_of_an_agent_after_confirming(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "clear", "--agent", "dev", stdin="y\n")
    assert result.code == 0, result.err
    assert "deleted 2 sessions" in result.out
    assert _ids(seeded, "dev") == []
    assert _ids(seeded, "bob") == [BOBS]


def test_clear_declined_deletes_nothing(run, seeded: str) -> None:
    result = run("--db", seeded, "sessions", "clear", "--agent", "dev", stdin="n\n")
    assert result.code == 1
    assert "aborted" in result.out
    assert _ids(seeded, "dev") == [NEW, OLD]


# -- the memory commands on the same file ---------------------------------------------------------


def test_memories_and_sessions_share_the_store_file(run, seeded: str) -> None:
    new_id = run.add(seeded, "Staging uses port 5433", "--agent", "dev")
    assert [e["id"] for e in run.list(seeded, "--agent", "dev")] == [new_id]
    result = run("--db", seeded, "sessions", "list", "--agent", "dev", "--json")
    assert [r["session_id"] for r in result.json()] == [NEW, OLD]
