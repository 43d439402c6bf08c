"""``memvault stats`` shows the conversation counts (those of ``memvault sessions stats``) when
the store holds conversations, and never creates a conversation store just to count it.

Real SQLite files and a real PostgreSQL schema, the in-process CLI.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memvault.cli.app import main
from memvault.conversation.factory import open_conversation_store

# No MEMVAULT_* setting of the machine and no ./memvault.yaml reach the commands.
pytestmark = pytest.mark.usefixtures("isolated_env")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _fill(url: str, messages: int) -> None:
    async def run() -> None:
        store = open_conversation_store(url)
        try:
            for i in range(messages):
                await store.append("dev", f"s{i % 2}", [{"role": "user", "content": f"note {i}"}])
        finally:
            await store.close()

    asyncio.run(run())


def _sqlite_tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _pg_tables(postgres_url: str, schema: str) -> set[str]:
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = %s", [schema]
        ).fetchall()
    return {r[0] for r in rows}


def _check_counts(capsys: pytest.CaptureFixture[str], db: str) -> dict[str, Any]:
    stats = json.loads(_run(capsys, "--db", db, "stats", "--json"))
    assert stats["total"] == 1
    sessions = json.loads(_run(capsys, "--db", db, "sessions", "stats", "--json"))
    assert stats["conversations"] == sessions
    table = _run(capsys, "--db", db, "stats")
    assert "conversations" in table and "messages" in table and "unembedded" in table
    counts: dict[str, Any] = stats["conversations"]
    return counts


def test_sqlite_counts_only_when_conversations_were_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    _run(capsys, "--db", str(db), "add", "The deploy pipeline has three stages.")
    stats = json.loads(_run(capsys, "--db", str(db), "stats", "--json"))
    assert stats["total"] == 1 and "conversations" not in stats
    assert "conversations" not in _run(capsys, "--db", str(db), "stats")
    # Counting did not create the conversation tables.
    assert "conversation_messages" not in _sqlite_tables(db)

    _fill(str(db), 5)
    counts = _check_counts(capsys, str(db))
    assert (counts["conversations"], counts["messages"], counts["unembedded"]) == (2, 5, 5)


def test_an_in_process_store_has_no_conversation_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stats = json.loads(_run(capsys, "--db", "memory://", "stats", "--json"))
    assert stats["total"] == 0 and "conversations" not in stats


@pytest.mark.postgres
def test_postgres_counts_only_when_conversations_were_stored(
    postgres_url: str, schemas: Callable[[], str], capsys: pytest.CaptureFixture[str]
) -> None:
    schema = schemas()
    sep = "&" if "?" in postgres_url else "?"
    db = f"{postgres_url}{sep}schema={schema}"
    _run(capsys, "--db", db, "add", "The deploy pipeline has three stages.")
    stats = json.loads(_run(capsys, "--db", db, "stats", "--json"))
    assert stats["total"] == 1 and "conversations" not in stats
    assert "conversation_messages" not in _pg_tables(postgres_url, schema)

    _fill(db, 3)
    counts = _check_counts(capsys, db)
    assert (counts["conversations"], counts["messages"]) == (2, 3)
