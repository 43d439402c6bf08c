"""Session stores of every kind: a real SQLite file, a real PostgreSQL schema, in process.

``make_store(clock=None)`` builds a fresh store of the parametrised kind; every store it built is
closed after the test (PostgreSQL schemas are dropped). ``schemas`` and the conversation stores
under the "-messages" kinds come from ``tests/conftest.py``, shared with the conversation tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sessions_helpers import MakeStore, StepClock

from memvault.sessions import InMemorySessionStore, SessionStore, SQLiteSessionStore

if TYPE_CHECKING:
    from conftest import ConversationStoreFactory  # tests/conftest.py (no package: typing only)


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
    request: pytest.FixtureRequest,
    tmp_path: Path,
    schemas: Callable[[], str],
    conversation_stores: ConversationStoreFactory,
) -> AsyncIterator[MakeStore]:
    """A builder of fresh, empty session stores of one kind."""
    built: list[SessionStore] = []
    kind: str = request.param

    def make(clock: Callable[[], datetime] | None = None) -> SessionStore:
        store: SessionStore
        if kind.endswith("-messages"):
            from memvault.conversation import ConversationSessionStore

            store = ConversationSessionStore(
                conversation_stores(kind.removesuffix("-messages"), clock)
            )
        elif kind == "sqlite":
            store = SQLiteSessionStore(tmp_path / f"store{len(built)}.db", clock=clock)
        elif kind == "memory":
            store = InMemorySessionStore(clock=clock)
        else:
            from memvault.conversation.session_postgres import PostgresSessionStore

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
