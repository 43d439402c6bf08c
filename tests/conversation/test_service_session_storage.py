"""The service's sessions (REST /v1/sessions) follow ``conversation.session_storage``."""

from __future__ import annotations

from pathlib import Path

from memvault.config import load_config
from memvault.conversation.factory import open_conversation_store
from memvault.conversation.session_models import ChatMessage
from memvault.protocols import Embedder
from memvault.service import Actor, MemoryService


async def test_message_storage_appends_each_turn(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "s.db"
    base = load_config(url=str(db))
    conv = base.conversation.model_copy(update={"session_storage": "messages"})
    service = MemoryService(base.model_copy(update={"conversation": conv}), embedder=minilm)
    dev = Actor.agent("dev-1")
    try:
        turns = [
            ChatMessage(role="user", content="Tabs or spaces?"),
            ChatMessage(role="assistant", content="Tabs."),
        ]
        session = {"session_id": "t-1", "agent_id": "dev-1"}
        await service.call(dev, "save_session", {**session, "messages": turns})
        more = [*turns, ChatMessage(role="user", content="And line length?")]
        await service.call(dev, "save_session", {**session, "messages": more})
        record = await service.call(dev, "session", session)
        assert record is not None
        assert [m.content for m in record.messages][-1] == "And line length?"
    finally:
        await service.close()
    store = open_conversation_store(str(db))
    try:
        rows = await store.messages("dev-1", "t-1", view="all")
        # Appended, not rewritten: each turn once, in order.
        assert [m.content for m in rows] == ["Tabs or spaces?", "Tabs.", "And line length?"]
    finally:
        await store.close()
