"""Session stores of every kind: a real SQLite file, a real PostgreSQL schema, in process.

``make_store(clock=None)`` builds a fresh store of the parametrised kind; every store it built is
closed after the test (PostgreSQL schemas are dropped).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sessions_helpers import MakeStore, StepClock

from memvault.sessions import InMemorySessionStore, SessionStore, SQLiteSessionStore


@pytest.fixture
def schemas(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """Fresh PostgreSQL schema names (dropped afterwards); starts the server on first use."""
    from postgres_server import SchemaFactory

    factory: SchemaFactory | None = None

    def new() -> str:
        nonlocal factory
        if factory is None:
            factory = SchemaFactory(request.getfixturevalue("postgres_url"))
        return factory()

    yield new
    if factory is not None:
        factory.drop_all()


# The "-messages" kinds run the same session contract over the conversation store
# (ConversationSessionStore, session_storage = "messages"): issue 18 keeps InitRunner's session
# semantics working on top of the append-only message log.
@pytest.fixture(
    params=[
        "sqlite",
        "memory",
        pytest.param("postgres", marks=pytest.mark.postgres),
        "sqlite-messages",
        "memory-messages",
        pytest.param("postgres-messages", marks=pytest.mark.postgres),
    ],
)
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, schemas: Callable[[], str]
) -> AsyncIterator[MakeStore]:
    """A builder of fresh, empty session stores of one kind."""
    built: list[SessionStore] = []
    kind: str = request.param

    def make(clock: Callable[[], datetime] | None = None) -> SessionStore:
        store: SessionStore
        if kind.endswith("-messages"):
            from memvault.conversation import (
                ConversationSessionStore,
                InMemoryConversationStore,
                SQLConversationStore,
            )

            conversations: SQLConversationStore
            if kind == "sqlite-messages":
                from memvault.conversation.sqlite import SQLiteConversationStore

                conversations = SQLiteConversationStore(
                    tmp_path / f"store{len(built)}.db", clock=clock
                )
            elif kind == "memory-messages":
                conversations = InMemoryConversationStore(clock=clock)
            else:
                from memvault.conversation.postgres import PostgresConversationStore

                url = request.getfixturevalue("postgres_url")
                conversations = PostgresConversationStore(url, schema=schemas(), clock=clock)
            store = ConversationSessionStore(conversations)
        elif kind == "sqlite":
            store = SQLiteSessionStore(tmp_path / f"store{len(built)}.db", clock=clock)
        elif kind == "memory":
            store = InMemorySessionStore(clock=clock)
        else:
            from memvault.sessions.postgres import PostgresSessionStore

            url = request.getfixturevalue("postgres_url")
            store = PostgresSessionStore(url, schema=schemas(), clock=clock)
        built.append(store)
        return store

    yield make
    for store in built:
        await store.close()


@pytest.fixture
def store(make_store: MakeStore) -> SessionStore:
    """A fresh, empty session store (stepping clock)."""
    return make_store(StepClock())
