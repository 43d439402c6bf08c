"""The session adapters over a real PostgreSQL session store, called from several event loops.

PostgreSQL's pool is bound to the loop that opened it; the adapters run every store call on
their one private loop, so callers on fresh loops (``asyncio.run`` per call) and sync callers
share the store safely.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from memvault.integrations.langchain import MemvaultChatMessageHistory
from memvault.integrations.openai_agents import MemvaultSession
from memvault.sessions import PostgresSessionStore
from postgres_server import SchemaFactory

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(postgres_url: str) -> Iterator[PostgresSessionStore]:
    schemas = SchemaFactory(postgres_url)
    yield PostgresSessionStore(postgres_url, schema=schemas())
    schemas.drop_all()


def test_agents_session_and_chat_history_on_postgres(store: PostgresSessionStore) -> None:
    session = MemvaultSession("s-1", agent_id="a", store=store)
    # Each asyncio.run is a new event loop; the store's pool lives on the adapters' own loop.
    asyncio.run(session.add_items([{"role": "user", "content": "hello"}]))
    asyncio.run(session.add_items([{"role": "assistant", "content": "hi"}]))
    items = asyncio.run(session.get_items())
    assert items == [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]

    history = MemvaultChatMessageHistory("s-2", agent_id="a", store=store)
    history.add_messages([HumanMessage("ping"), AIMessage("pong")])
    assert [m.content for m in history.messages] == ["ping", "pong"]
    assert asyncio.run(history.aget_messages()) == history.messages
    history.clear()
    assert history.messages == []
    history.close()  # the store both adapters share, closed on the loop that opened it
