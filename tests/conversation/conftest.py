"""Conversation stores of every kind: a real SQLite file, a real PostgreSQL schema, in process.

``make_store(clock=None)`` builds a fresh store of the parametrised kind; every store it built
is closed after the test (PostgreSQL schemas are dropped).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from conversation_helpers import MakeStore

from memvault.conversation import InMemoryConversationStore, SQLConversationStore
from memvault.conversation.sqlite import SQLiteConversationStore


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


@pytest.fixture(params=["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)])
async def make_store(
    request: pytest.FixtureRequest, tmp_path: Path, schemas: Callable[[], str]
) -> AsyncIterator[MakeStore]:
    """A builder of fresh, empty conversation stores of one kind."""
    built: list[SQLConversationStore] = []
    kind: str = request.param

    def make(clock: Callable[[], datetime] | None = None) -> SQLConversationStore:
        store: SQLConversationStore
        if kind == "sqlite":
            store = SQLiteConversationStore(tmp_path / f"conv{len(built)}.db", clock=clock)
        elif kind == "memory":
            store = InMemoryConversationStore(clock=clock)
        else:
            from memvault.conversation.postgres import PostgresConversationStore

            url = request.getfixturevalue("postgres_url")
            store = PostgresConversationStore(url, schema=schemas(), clock=clock)
        built.append(store)
        return store

    yield make
    for store in built:
        await store.close()


@pytest.fixture
def store(make_store: MakeStore) -> SQLConversationStore:
    """A fresh, empty conversation store."""
    return make_store()
