"""SessionManager: save after every turn, resume, trim, prune, and saving that never raises."""

from __future__ import annotations

import builtins
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import pytest
from pydantic import ValidationError
from sessions_helpers import MakeStore, StepClock

from memvault.errors import MemoryConfigError, MemoryStoreError, MemoryValidationError
from memvault.models import ChatMessage
from memvault.sessions import (
    InMemorySessionStore,
    SessionConfig,
    SessionManager,
    SessionRecord,
    SessionStore,
    SQLiteSessionStore,
    open_session_store,
)

Role = Literal["system", "user", "assistant", "tool"]


def m(role: Role, content: str) -> ChatMessage:
    return ChatMessage(role=role, content=content)


def turns(n: int, start: int = 0) -> list[ChatMessage]:
    """``n`` user/assistant turns: u0, a0, u1, a1, ..."""
    out: list[ChatMessage] = []
    for i in range(start, start + n):
        out += [m("user", f"u{i}"), m("assistant", f"a{i}")]
    return out


def contents(messages: Sequence[ChatMessage]) -> builtins.list[str]:
    return [x.content for x in messages]


# -- ids and configuration ------------------------------------------------------------------------


def test_new_session_ids_are_12_hex_digits_and_distinct() -> None:
    ids = {SessionManager.new_session_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)


def test_config_defaults_and_bounds() -> None:
    cfg = SessionConfig()
    assert (cfg.max_resume_messages, cfg.max_sessions) == (20, 10)
    with pytest.raises(ValidationError):
        SessionConfig(max_resume_messages=0)
    with pytest.raises(ValidationError):
        SessionConfig(max_sessions=0)


@pytest.mark.parametrize("agent", ["", "  ", "x\x00"])
def test_a_manager_needs_a_usable_agent_id(agent: str) -> None:
    with pytest.raises(MemoryValidationError):
        SessionManager(InMemorySessionStore(), agent)


# -- save and resume on every store ---------------------------------------------------------------


async def test_save_then_resume_round_trip(make_store: MakeStore) -> None:
    manager = SessionManager(make_store(StepClock()), "dev-1")
    sid = manager.new_session_id()
    history = [m("user", "Which framework do I prefer?"), m("assistant", "Litestar.")]
    assert await manager.save_turn(sid, history) is True
    assert await manager.resume() == (sid, history)


async def test_system_messages_are_stripped_when_saving(make_store: MakeStore) -> None:
    store = make_store(StepClock())
    manager = SessionManager(store, "dev-1")
    sid = manager.new_session_id()
    history = [
        m("system", "You are a helpful agent (prompt v1)."),
        m("user", "hi"),
        m("system", "Relevant memories: ..."),
        m("assistant", "hello"),
    ]
    assert await manager.save_turn(sid, history)
    record = await store.get("dev-1", sid)
    assert record is not None
    assert contents(record.messages) == ["hi", "hello"]
    assert record.message_count == 2


async def test_resume_loads_only_the_last_max_resume_messages(make_store: MakeStore) -> None:
    manager = SessionManager(make_store(StepClock()), "dev-1", SessionConfig(max_resume_messages=4))
    sid = manager.new_session_id()
    await manager.save_turn(sid, turns(5))
    resumed = await manager.resume()
    assert resumed is not None
    assert resumed == (sid, turns(2, start=3))


async def test_resume_skips_leading_assistant_and_tool_messages(make_store: MakeStore) -> None:
    manager = SessionManager(make_store(StepClock()), "dev-1", SessionConfig(max_resume_messages=5))
    sid = manager.new_session_id()
    history = [
        m("user", "u0"),
        m("assistant", "calling a tool"),
        m("user", "u1"),
        m("assistant", "a1"),
        m("tool", "tool output"),
        m("assistant", "a1 done"),
        m("user", "u2"),
        m("assistant", "a2"),
    ]
    await manager.save_turn(sid, history)
    # The last five start with a1, tool output, a1 done: cut until the user message u2.
    assert await manager.resume() == (sid, [m("user", "u2"), m("assistant", "a2")])


async def test_resume_picks_the_latest_session_of_the_agent(make_store: MakeStore) -> None:
    store = make_store(StepClock())
    dev = SessionManager(store, "dev-1")
    other = SessionManager(store, "other")
    old, new = dev.new_session_id(), dev.new_session_id()
    await dev.save_turn(old, turns(1))
    await dev.save_turn(new, turns(1, start=1))
    await other.save_turn(other.new_session_id(), turns(1, start=7))
    assert await dev.resume() == (new, turns(1, start=1))
    assert await other.resume(agent_id="dev-1") == (new, turns(1, start=1))
    assert await SessionManager(store, "nobody").resume() is None


async def test_sessions_beyond_max_sessions_are_pruned_oldest_first(make_store: MakeStore) -> None:
    store = make_store(StepClock())
    manager = SessionManager(store, "dev-1", SessionConfig(max_sessions=3))
    sids = [manager.new_session_id() for _ in range(5)]
    for i, sid in enumerate(sids):
        assert await manager.save_turn(sid, turns(1, start=i))
    assert [r.session_id for r in await store.list("dev-1")] == sids[:1:-1]
    # Continuing the oldest kept session makes it the newest; the next new one evicts sids[3].
    await manager.save_turn(sids[2], turns(2, start=2))
    extra = manager.new_session_id()
    await manager.save_turn(extra, turns(1))
    assert [r.session_id for r in await store.list("dev-1")] == [extra, sids[2], sids[4]]


async def test_a_history_of_only_system_messages_does_not_hide_the_previous_session() -> None:
    manager = SessionManager(InMemorySessionStore(), "dev-1")
    first, second = manager.new_session_id(), manager.new_session_id()
    await manager.save_turn(first, turns(1))
    assert await manager.save_turn(second, [m("system", "prompt")]) is True
    assert await manager.resume() == (first, turns(1))


@pytest.mark.parametrize("session_id", ["", "a/b", "bad\nid", "x" * 201])
async def test_malformed_session_id_raises_instead_of_saving(session_id: str) -> None:
    manager = SessionManager(InMemorySessionStore(), "dev-1")
    with pytest.raises(MemoryValidationError, match="malformed session id") as caught:
        await manager.save_turn(session_id, turns(1))
    assert "\n" not in str(caught.value).replace(repr(session_id), "")
    assert await manager.resume() is None


async def test_save_turn_takes_any_sane_session_id(make_store: MakeStore) -> None:
    manager = SessionManager(make_store(), "dev-1")
    assert await manager.save_turn("support-ticket-4711", turns(1)) is True
    assert await manager.resume() == ("support-ticket-4711", turns(1))


async def test_save_turn_takes_openai_style_message_dicts(make_store: MakeStore) -> None:
    manager = SessionManager(make_store(), "dev-1")
    history = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Which editor theme do I like?"},
        {"role": "assistant", "content": "Dark."},
        {"role": "tool", "content": "{}", "name": "lookup"},
    ]
    assert await manager.save_turn("chat-1", history) is True
    resumed = await manager.resume()
    assert resumed is not None
    assert resumed[1] == [
        m("user", "Which editor theme do I like?"),
        m("assistant", "Dark."),
        ChatMessage(role="tool", content="{}", name="lookup"),
    ]
    # Dicts and ChatMessage objects mix; trim takes both too.
    mixed = [*history, m("user", "And the font?")]
    assert await manager.save_turn("chat-1", mixed) is True
    assert contents(manager.trim(mixed))[-1] == "And the font?"


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([{"role": "user"}], "session message 0: 'content'"),
        ([{"role": "robot", "content": "hi"}], "session message 0: 'role'"),
        ([m("user", "ok"), {"role": "user", "content": None}], "session message 1: 'content'"),
        (
            [{"role": "assistant", "content": "x", "tool_calls": []}],
            "session message 0: 'tool_calls'",
        ),
        ([42], "session message 0 must be a ChatMessage or a"),
        ({"role": "user", "content": "hi"}, "a list of messages"),
        ("hello", "a list of messages"),
    ],
)
async def test_bad_messages_raise_one_line_validation_errors(
    messages: object, problem: str
) -> None:
    manager = SessionManager(InMemorySessionStore(), "dev-1")
    with pytest.raises(MemoryValidationError) as caught:
        await manager.save_turn("chat-1", messages)  # type: ignore[arg-type]
    text = str(caught.value)
    assert problem in text and "\n" not in text
    assert await manager.resume() is None


# -- trim -----------------------------------------------------------------------------------------


def test_trim_keeps_the_last_twice_max_resume_messages() -> None:
    manager = SessionManager(InMemorySessionStore(), "dev-1", SessionConfig(max_resume_messages=3))
    assert manager.trim(turns(10)) == turns(3, start=7)


def test_trim_starts_the_window_at_a_user_message() -> None:
    manager = SessionManager(InMemorySessionStore(), "dev-1", SessionConfig(max_resume_messages=2))
    history = [
        *turns(2),
        m("assistant", "extra"),
        m("tool", "t"),
        m("user", "u9"),
        m("assistant", "a9"),
    ]
    # The last four are a1, extra, t, ...: everything before u9 goes.
    assert manager.trim(history) == [m("user", "u9"), m("assistant", "a9")]


def test_trim_keeps_a_leading_system_prompt_and_short_histories() -> None:
    manager = SessionManager(InMemorySessionStore(), "dev-1", SessionConfig(max_resume_messages=2))
    prompt = m("system", "You are terse.")
    assert manager.trim([prompt, *turns(1)]) == [prompt, *turns(1)]
    assert manager.trim([prompt, *turns(5)]) == [prompt, *turns(2, start=3)]
    assert manager.trim([]) == []


# -- saving never raises --------------------------------------------------------------------------


async def test_save_on_an_unusable_sqlite_path_logs_a_warning_and_returns_false(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "memvault.db"
    path.mkdir()  # a directory where the database file should be
    manager = SessionManager(SQLiteSessionStore(path), "dev-1")
    sid = manager.new_session_id()
    with caplog.at_level(logging.WARNING, logger="memvault.sessions"):
        assert await manager.save_turn(sid, turns(1)) is False
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage().startswith("session.save.failed")
    assert sid in record.getMessage() and "is a directory" in record.getMessage()
    await manager.store.close()


async def test_save_on_a_closed_store_logs_a_warning_and_returns_false(
    make_store: MakeStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store(StepClock())
    manager = SessionManager(store, "dev-1")
    sid = manager.new_session_id()
    assert await manager.save_turn(sid, turns(1)) is True
    await store.close()
    with caplog.at_level(logging.WARNING, logger="memvault.sessions"):
        assert await manager.save_turn(sid, turns(2)) is False
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["session.save.failed"]


async def test_save_on_an_unreachable_postgres_server_returns_false(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = open_session_store("postgresql://agent@127.0.0.1:1/memvault")
    manager = SessionManager(store, "dev-1")
    with caplog.at_level(logging.WARNING, logger="memvault.sessions"):
        assert await manager.save_turn(manager.new_session_id(), turns(1)) is False
    assert "session.save.failed" in caplog.text
    await store.close()


class _FailingStore(InMemorySessionStore):
    """An in-process store whose save or prune fails the way a broken plugin might."""

    def __init__(self, *, save_error: Exception | None, prune_error: Exception | None) -> None:
        super().__init__()
        self.save_error = save_error
        self.prune_error = prune_error

    async def save(
        self, agent_id: str, session_id: str, messages: Sequence[ChatMessage]
    ) -> SessionRecord:
        if self.save_error is not None:
            raise self.save_error
        return await super().save(agent_id, session_id, messages)

    async def prune(self, agent_id: str, keep: int) -> int:
        if self.prune_error is not None:
            raise self.prune_error
        return await super().prune(agent_id, keep)


async def test_even_an_unexpected_error_of_a_store_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store: SessionStore = _FailingStore(save_error=RuntimeError("plugin bug"), prune_error=None)
    manager = SessionManager(store, "dev-1")
    with caplog.at_level(logging.WARNING, logger="memvault.sessions"):
        assert await manager.save_turn(manager.new_session_id(), turns(1)) is False
    [record] = caplog.records
    assert "plugin bug" in record.getMessage()
    assert record.exc_info is not None  # unexpected: the traceback is kept for debugging


async def test_a_failed_prune_after_a_good_save_still_counts_as_saved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = _FailingStore(save_error=None, prune_error=MemoryStoreError("disk full"))
    manager = SessionManager(store, "dev-1")
    sid = manager.new_session_id()
    with caplog.at_level(logging.WARNING, logger="memvault.sessions"):
        assert await manager.save_turn(sid, turns(1)) is True
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["session.prune.failed"]
    assert await manager.resume() == (sid, turns(1))


# -- opening a store from a URL ------------------------------------------------------------------


def test_open_session_store_takes_memvault_urls(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    plain = open_session_store(str(path))
    assert isinstance(plain, SQLiteSessionStore) and plain.location == str(path)
    prefixed = open_session_store(f"sqlite:///{path}")
    assert isinstance(prefixed, SQLiteSessionStore) and prefixed.location == str(path)
    assert isinstance(open_session_store("memory://"), InMemorySessionStore)
    from memvault.sessions import PostgresSessionStore

    pg = open_session_store("postgresql://agent:pw@db.example/mem?schema=tenant_a")
    assert isinstance(pg, PostgresSessionStore)
    assert pg.location == "postgresql://agent@db.example/mem?schema=tenant_a"
    assert not path.exists()  # nothing is opened before the first call


@pytest.mark.parametrize("url", ["composite://", "http://localhost:8000", ""])
def test_open_session_store_refuses_other_urls(url: str) -> None:
    with pytest.raises(MemoryConfigError):
        open_session_store(url)
