"""The conversation store through its public API, on SQLite, PostgreSQL and in process."""

from __future__ import annotations

from pathlib import Path

import pytest
from conversation_helpers import MakeStore

from memvault.conversation import (
    SUMMARY_NAME,
    ConversationSessionStore,
    MessageMetadata,
    SQLConversationStore,
    open_conversation_store,
)
from memvault.conversation.sqlite import SQLiteConversationStore
from memvault.errors import MemoryConfigError, MemoryConnectionError, MemoryValidationError
from memvault.models import ChatMessage
from memvault.sessions import SessionManager, open_session_store

U = {"role": "user", "content": "deploy v2.1 to staging"}
A = {"role": "assistant", "content": "deployed v2.1; rollback plan is ready"}


async def test_every_turn_is_stored_at_once_with_ids_positions_and_one_conversation(
    store: SQLConversationStore,
) -> None:
    first = await store.append("dev", "s1", [U])
    second = await store.append("dev", "s1", [A])
    assert [m.position for m in (*first, *second)] == [1, 2]
    assert first[0].message_id < second[0].message_id
    assert first[0].conversation_id == second[0].conversation_id
    info = await store.conversation("dev", "s1")
    assert info is not None
    assert info.conversation_id == first[0].conversation_id
    assert info.message_count == 2
    other = await store.append("dev", "s2", [U])
    assert other[0].conversation_id != first[0].conversation_id
    assert [m.content for m in await store.messages("dev", "s1")] == [U["content"], A["content"]]


async def test_metadata_is_respected_by_every_read(store: SQLConversationStore) -> None:
    await store.append("dev", "s", [U])
    await store.append(
        "dev",
        "s",
        [{"role": "assistant", "content": "internal scratch note about kubernetes"}],
        metadata=MessageMetadata(user_visible=False),
    )
    await store.append(
        "dev",
        "s",
        [{"role": "assistant", "content": "UI notice: kubernetes session resumed"}],
        metadata=MessageMetadata(agent_visible=False),
    )
    agent = [m.content for m in await store.messages("dev", "s", view="agent")]
    user = [m.content for m in await store.messages("dev", "s", view="user")]
    assert "UI notice: kubernetes session resumed" not in agent
    assert "internal scratch note about kubernetes" in agent
    assert "internal scratch note about kubernetes" not in user
    assert "UI notice: kubernetes session resumed" in user
    assert len(await store.messages("dev", "s", view="all")) == 3
    hits = await store.search("dev", "kubernetes")
    assert [h.message.content for h in hits] == ["internal scratch note about kubernetes"]
    user_hits = await store.search("dev", "kubernetes", view="user")
    assert [h.message.content for h in user_hits] == ["UI notice: kubernetes session resumed"]
    sessions = ConversationSessionStore(store)
    record = await sessions.get("dev", "s")
    assert record is not None
    assert "UI notice: kubernetes session resumed" not in [m.content for m in record.messages]
    # Metadata can change later; the views follow.
    (hidden,) = [
        m for m in await store.messages("dev", "s", view="all") if not m.metadata.agent_visible
    ]
    assert await store.update_metadata("dev", "s", [hidden.message_id], agent_visible=True) == 1
    assert len(await store.messages("dev", "s")) == 3


async def test_compaction_marks_and_summarises_but_never_deletes(
    store: SQLConversationStore,
) -> None:
    stored = await store.append(
        "dev",
        "s",
        [
            U,
            {"role": "assistant", "content": "calling grep"},
            {"role": "tool", "content": "src/app.py:10: TODO"},
            A,
        ],
    )
    pair = [stored[1].message_id, stored[2].message_id]
    assert await store.mark_pending("dev", "s", pair) == 2
    summary = await store.apply_summary("dev", "s", pair, "grep found a TODO in src/app.py")
    assert summary.kind == "summary"
    assert summary.name == SUMMARY_NAME
    agent = await store.messages("dev", "s")
    assert [m.content for m in agent] == [U["content"], summary.content, A["content"]]
    everything = await store.messages("dev", "s", view="all")
    assert len(everything) == 5
    replaced = [m for m in everything if m.message_id in pair]
    assert all(m.compacted_at is not None and m.summary_id == summary.message_id for m in replaced)
    assert not any(m.pending_summary for m in replaced)
    # The transcript a user sees keeps the originals, not the summary.
    user = await store.messages("dev", "s", view="user")
    assert [m.content for m in user] == [m.content for m in stored]
    stats = await store.stats()
    assert (stats.messages, stats.compacted, stats.summaries) == (5, 2, 1)
    with pytest.raises(MemoryValidationError, match="cannot be compacted"):
        await store.apply_summary("dev", "s", pair, "again")


async def test_pinned_messages_cannot_be_compacted(store: SQLConversationStore) -> None:
    (pinned,) = await store.append("dev", "s", [U], metadata=MessageMetadata(focus_pinned=True))
    with pytest.raises(MemoryValidationError, match="pinned"):
        await store.apply_summary("dev", "s", [pinned.message_id], "summary")
    with pytest.raises(MemoryValidationError, match="not part of"):
        await store.apply_summary("dev", "s", [999_999], "summary")
    with pytest.raises(MemoryValidationError, match="non-empty"):
        await store.apply_summary("dev", "s", [pinned.message_id], "  ")


async def test_replace_history_appends_continuations_and_supersedes_edits(
    store: SQLConversationStore,
) -> None:
    u1, a1 = ChatMessage(role="user", content="one"), ChatMessage(role="assistant", content="1")
    u2, a2 = ChatMessage(role="user", content="two"), ChatMessage(role="assistant", content="2")
    await store.replace_history("dev", "s", [u1, a1])
    await store.replace_history("dev", "s", [u1, a1, u2, a2])  # a continuation
    assert len(await store.messages("dev", "s", view="all")) == 4
    # A trimmed window that continues the log appends only what is new.
    u3 = ChatMessage(role="user", content="three")
    await store.replace_history("dev", "s", [u2, a2, u3])
    assert await store.history("dev", "s") == [u1, a1, u2, a2, u3]
    assert len(await store.messages("dev", "s", view="all")) == 5
    # Changing the past supersedes the stored tail (kept, out of the views).
    b = ChatMessage(role="assistant", content="another answer")
    await store.replace_history("dev", "s", [u1, b])
    assert await store.history("dev", "s") == [u1, b]
    assert len(await store.messages("dev", "s", view="all")) == 6


async def test_prune_deletes_or_archives(make_store: MakeStore) -> None:
    store = make_store()
    for sid in ("s1", "s2", "s3"):
        await store.append("dev", sid, [U])
    assert await store.prune("dev", 1, mode="archive") == 2
    assert [c.session_id for c in await store.conversations("dev")] == ["s3"]
    archived = await store.conversations("dev", include_archived=True)
    assert {c.session_id for c in archived if c.archived_at is not None} == {"s1", "s2"}
    assert (await store.stats()).messages == 3  # archived, not deleted
    # Appending to an archived conversation brings it back.
    await store.append("dev", "s1", [A])
    assert [c.session_id for c in await store.conversations("dev")] == ["s1", "s3"]
    assert await store.prune("dev", 1) == 1
    assert (await store.stats()).messages == 3  # s3's message went; s2 stays archived
    with pytest.raises(MemoryValidationError, match="prune mode"):
        await store.prune("dev", 1, mode="shred")


async def test_session_manager_resume_trim_prune_on_the_message_log(make_store: MakeStore) -> None:
    conversations = make_store()
    manager = SessionManager(ConversationSessionStore(conversations, prune="archive"), "dev")
    history: list[ChatMessage] = []
    for i in range(30):
        history = manager.trim(
            [
                *history,
                ChatMessage(role="user", content=f"question {i}"),
                ChatMessage(role="assistant", content=f"answer {i}"),
            ]
        )
        assert await manager.save_turn("s1", history)
    # Every turn is in the log although the active history was trimmed to 40 messages.
    assert len(await conversations.messages("dev", "s1", view="all")) == 60
    resumed = await manager.resume()
    assert resumed is not None
    sid, messages = resumed
    assert sid == "s1"
    assert len(messages) == 20
    assert messages[-1].content == "answer 29"
    assert messages[0].role == "user"


async def test_agents_never_see_each_others_conversations(store: SQLConversationStore) -> None:
    await store.append("alice", "s", [U])
    assert await store.messages("bob", "s") == []
    assert await store.conversation("bob", "s") is None
    assert await store.search("bob", "staging") == []
    assert not await store.delete("bob", "s")
    assert await store.delete("alice", "s")
    assert await store.messages("alice", "s") == []


async def test_bad_input_is_a_validation_error(store: SQLConversationStore) -> None:
    with pytest.raises(MemoryValidationError):
        await store.append(" ", "s", [U])
    with pytest.raises(MemoryValidationError):
        await store.append("dev", "a/b", [U])
    with pytest.raises(MemoryValidationError):
        await store.append("dev", "s", [{"role": "robot", "content": "x"}])
    with pytest.raises(MemoryValidationError, match="one per message"):
        await store.append("dev", "s", [U, A], metadata=[MessageMetadata()])
    with pytest.raises(MemoryValidationError, match="view"):
        await store.messages("dev", "s", view="everyone")  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="positive integers"):
        await store.mark_pending("dev", "s", [0])
    with pytest.raises(MemoryValidationError, match="non-empty"):
        await store.search("dev", " ")


async def test_a_closed_store_refuses_calls(store: SQLConversationStore) -> None:
    await store.append("dev", "s", [U])
    await store.close()
    with pytest.raises(MemoryConnectionError):
        await store.messages("dev", "s")


async def test_sqlite_conversations_survive_reopening_and_share_the_memory_file(
    tmp_path: Path,
) -> None:
    from memvault import AsyncMemory

    path = tmp_path / "m.db"
    async with AsyncMemory(str(path)) as memory:
        await memory.add("the user likes tea", agent_id="dev")
    store = SQLiteConversationStore(path)
    await store.append("dev", "s", [U, A])
    await store.close()
    again = open_conversation_store(str(path))
    try:
        assert [m.content for m in await again.messages("dev", "s")] == [U["content"], A["content"]]
    finally:
        await again.close()
    async with AsyncMemory(str(path)) as memory:
        assert len(await memory.list(agent_id="dev")) == 1


def test_open_conversation_store_refuses_other_urls() -> None:
    with pytest.raises(MemoryConfigError, match="conversations cannot be stored"):
        open_conversation_store("qdrant:///tmp/q")
    with pytest.raises(MemoryConfigError, match="session storage"):
        open_session_store("memory://", storage="rows")


async def test_session_storage_messages_opens_a_conversation_backed_session_store(
    tmp_path: Path,
) -> None:
    sessions = open_session_store(str(tmp_path / "s.db"), storage="messages", prune="archive")
    assert isinstance(sessions, ConversationSessionStore)
    try:
        await sessions.save("dev", "s1", [U, A])
        await sessions.save("dev", "s2", [U])
        assert await sessions.prune("dev", 1) == 1
        assert [r.session_id for r in await sessions.list("dev")] == ["s2"]
        assert len(await sessions.conversations.messages("dev", "s1", view="all")) == 2
    finally:
        await sessions.close()
