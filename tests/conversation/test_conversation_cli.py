"""``memvault sessions stats|backfill`` on a real SQLite store (in-process CLI)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import memvault.cli.app as cli_app
from memvault.cli import sessions as sessions_cli
from memvault.conversation.sqlite import SQLiteConversationStore


@pytest.fixture(autouse=True)
def _cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMVAULT_DB", "MEMVAULT_CONFIG", "MEMVAULT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    if not any(g.name == "sessions" for g in cli_app.app.registered_groups):
        sessions_cli.register(cli_app.app)


def _fill(db: Path, n: int) -> None:
    async def run() -> None:
        store = SQLiteConversationStore(db)
        try:
            for i in range(n):
                await store.append("dev", "s", [{"role": "user", "content": f"note number {i}"}])
        finally:
            await store.close()

    asyncio.run(run())


def test_stats_then_backfill_then_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "store.db"
    _fill(db, 5)
    capsys.readouterr()
    assert cli_app.main(["--db", str(db), "sessions", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unembedded"] == 5
    assert cli_app.main(["--db", str(db), "sessions", "backfill", "--batch", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"embedded": 5}
    assert cli_app.main(["--db", str(db), "sessions", "stats", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["messages"], found["unembedded"]) == (5, 0)
    assert cli_app.main(["--db", str(db), "sessions", "backfill"]) == 0
    assert "embedded 0 messages" in capsys.readouterr().out


def test_a_missing_store_shows_zeros_and_bad_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "missing.db"
    assert cli_app.main(["--db", str(db), "sessions", "stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 0
    assert not db.exists()
    assert cli_app.main(["--db", str(db), "sessions", "backfill", "--batch", "0"]) == 2


def test_sessions_commands_follow_session_storage_messages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "store.db"
    _fill(db, 3)
    (tmp_path / "memvault.yaml").write_text(
        "memory:\n  conversation:\n    session_storage: messages\n", encoding="utf-8"
    )
    capsys.readouterr()
    assert cli_app.main(["--db", str(db), "sessions", "list", "--agent", "dev", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [item["session_id"] for item in listed] == ["s"]
    assert listed[0]["message_count"] == 3
