"""The SessionStore contract on a real SQLite file, real PostgreSQL and the in-process store."""

from __future__ import annotations

import pytest
from sessions_helpers import MakeStore, StepClock

from memvault.errors import MemoryConnectionError, MemoryValidationError
from memvault.models import ChatMessage
from memvault.sessions import SessionStore

SID_A = "a0a0a0a0a0a0"
SID_B = "b1b1b1b1b1b1"
SID_C = "c2c2c2c2c2c2"


def msgs(*pairs: tuple[str, str]) -> list[ChatMessage]:
    return [ChatMessage(role=role, content=content) for role, content in pairs]  # type: ignore[arg-type]


HISTORY = [
    ChatMessage(role="user", content="What's the capital of Australia? Not Sydney — »Canberra«?"),
    ChatMessage(role="assistant", content="Yes, Canberra."),
    ChatMessage(role="tool", content='{"weather": "sunny"}', name="get_weather"),
    ChatMessage(role="assistant", content="It is sunny there today."),
]


async def test_save_then_get_round_trips_messages_exactly(store: SessionStore) -> None:
    saved = await store.save("dev-1", SID_A, HISTORY)
    got = await store.get("dev-1", SID_A)
    assert got is not None
    assert got.messages == tuple(HISTORY)
    assert got.messages[2].name == "get_weather"
    assert got.message_count == 4
    assert got.session_id == SID_A
    assert got.agent_id == "dev-1"
    assert got.created_at == saved.created_at
    assert got.updated_at == saved.updated_at


async def test_saving_again_replaces_messages_and_keeps_created_at(make_store: MakeStore) -> None:
    store = make_store(StepClock())
    first = await store.save("dev-1", SID_A, HISTORY[:1])
    second = await store.save("dev-1", SID_A, HISTORY)
    got = await store.get("dev-1", SID_A)
    assert got is not None
    assert got.messages == tuple(HISTORY)
    assert got.created_at == first.created_at
    assert got.updated_at == second.updated_at > first.updated_at
    assert [r.session_id for r in await store.list("dev-1")] == [SID_A]


async def test_latest_is_the_most_recently_saved_session(store: SessionStore) -> None:
    assert await store.latest("dev-1") is None
    await store.save("dev-1", SID_A, HISTORY)
    await store.save("dev-1", SID_B, HISTORY[:2])
    latest = await store.latest("dev-1")
    assert latest is not None and latest.session_id == SID_B
    # Continuing an older conversation makes it the latest again.
    await store.save("dev-1", SID_A, HISTORY[:3])
    latest = await store.latest("dev-1")
    assert latest is not None and latest.session_id == SID_A
    assert latest.message_count == 3


async def test_latest_follows_save_order_even_when_the_clock_stands_still(
    make_store: MakeStore,
) -> None:
    frozen = StepClock()
    moment = frozen()
    store = make_store(lambda: moment)
    for sid in (SID_B, SID_A, SID_C, SID_B):
        await store.save("dev-1", sid, HISTORY[:1])
    assert [r.session_id for r in await store.list("dev-1")] == [SID_B, SID_C, SID_A]


async def test_list_is_newest_first_and_honours_limit(store: SessionStore) -> None:
    for sid in (SID_A, SID_B, SID_C):
        await store.save("dev-1", sid, HISTORY)
    assert [r.session_id for r in await store.list("dev-1")] == [SID_C, SID_B, SID_A]
    assert [r.session_id for r in await store.list("dev-1", limit=2)] == [SID_C, SID_B]


async def test_delete_removes_one_session(store: SessionStore) -> None:
    await store.save("dev-1", SID_A, HISTORY)
    await store.save("dev-1", SID_B, HISTORY)
    assert await store.delete("dev-1", SID_A) is True
    assert await store.delete("dev-1", SID_A) is False
    assert await store.get("dev-1", SID_A) is None
    assert [r.session_id for r in await store.list("dev-1")] == [SID_B]


async def test_clear_removes_every_session_of_the_agent(store: SessionStore) -> None:
    for sid in (SID_A, SID_B, SID_C):
        await store.save("dev-1", sid, HISTORY)
    assert await store.clear("dev-1") == 3
    assert await store.list("dev-1") == []
    assert await store.clear("dev-1") == 0


async def test_prune_keeps_the_most_recent_sessions(store: SessionStore) -> None:
    for sid in (SID_A, SID_B, SID_C):
        await store.save("dev-1", sid, HISTORY)
    await store.save("dev-1", SID_A, HISTORY)  # A is now the newest, B the oldest
    assert await store.prune("dev-1", 2) == 1
    assert [r.session_id for r in await store.list("dev-1")] == [SID_A, SID_C]
    assert await store.prune("dev-1", 2) == 0


async def test_one_agent_never_sees_or_touches_another_agents_sessions(
    store: SessionStore,
) -> None:
    await store.save("alice", SID_A, msgs(("user", "alice's secret")))
    await store.save("bob", SID_B, msgs(("user", "bob's question")))
    await store.save("bob", SID_C, msgs(("user", "bob again")))
    assert await store.get("bob", SID_A) is None
    assert await store.delete("bob", SID_A) is False
    assert [r.session_id for r in await store.list("alice")] == [SID_A]
    latest = await store.latest("alice")
    assert latest is not None and latest.messages[0].content == "alice's secret"
    assert await store.prune("bob", 1) == 1
    assert await store.clear("bob") == 1
    assert [r.session_id for r in await store.list("alice")] == [SID_A]
    # The same session id under two agents is two sessions.
    await store.save("bob", SID_A, msgs(("user", "bob reuses the id")))
    alice = await store.get("alice", SID_A)
    assert alice is not None and alice.messages[0].content == "alice's secret"


async def test_agent_ids_are_stripped_like_memory_agent_ids(store: SessionStore) -> None:
    await store.save("  dev-1 ", SID_A, HISTORY)
    got = await store.get("dev-1", SID_A)
    assert got is not None and got.agent_id == "dev-1"


@pytest.mark.parametrize("agent", ["", "   ", "bad\x00agent", "a" * 201])
async def test_bad_agent_id_is_rejected(store: SessionStore, agent: str) -> None:
    with pytest.raises(MemoryValidationError, match="agent_id"):
        await store.save(agent, SID_A, HISTORY)
    with pytest.raises(MemoryValidationError, match="agent_id"):
        await store.list(agent)


@pytest.mark.parametrize(
    "session_id",
    ["chat-2026-03-01", "A0A0A0A0A0A0", "user:42|run 7", "é" * 200, "a0a0a0'--a0a"],
)
async def test_any_sane_session_id_is_accepted(store: SessionStore, session_id: str) -> None:
    await store.save("dev-1", session_id, HISTORY)
    got = await store.get("dev-1", session_id)
    assert got is not None and got.session_id == session_id
    assert [r.session_id for r in await store.list("dev-1")] == [session_id]
    assert await store.delete("dev-1", session_id) is True


@pytest.mark.parametrize(
    "session_id",
    ["", "   ", " padded", "padded ", "a/b", "bad\x00id", "tab\tid", "a" * 201, 42, "latest"],
)
async def test_malformed_session_id_is_rejected(store: SessionStore, session_id: object) -> None:
    with pytest.raises(MemoryValidationError, match="malformed session id") as caught:
        await store.save("dev-1", session_id, HISTORY)
    assert "\n" not in str(caught.value)
    with pytest.raises(MemoryValidationError, match="malformed session id"):
        await store.get("dev-1", session_id)
    with pytest.raises(MemoryValidationError, match="malformed session id"):
        await store.delete("dev-1", session_id)


async def test_bad_limit_keep_and_messages_are_rejected(store: SessionStore) -> None:
    with pytest.raises(MemoryValidationError, match="limit"):
        await store.list("dev-1", limit=0)
    with pytest.raises(MemoryValidationError, match="keep"):
        await store.prune("dev-1", 0)
    with pytest.raises(MemoryValidationError, match="session message 0"):
        await store.save("dev-1", SID_A, [42])  # type: ignore[list-item]
    assert await store.list("dev-1") == []


async def test_a_closed_store_refuses_every_call(store: SessionStore) -> None:
    await store.save("dev-1", SID_A, HISTORY)
    await store.close()
    with pytest.raises(MemoryConnectionError, match="closed"):
        await store.save("dev-1", SID_B, HISTORY)
    with pytest.raises(MemoryConnectionError, match="closed"):
        await store.latest("dev-1")
