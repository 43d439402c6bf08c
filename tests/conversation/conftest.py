"""Conversation stores of every kind: a real SQLite file, a real PostgreSQL schema, in process.

``make_store(clock=None)`` builds a fresh store of the parametrised kind; every store it built
is closed after the test (PostgreSQL schemas are dropped). The stores come from the
``conversation_stores`` fixture of ``tests/conftest.py``, shared with the session tests.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import pytest
from conversation_helpers import MakeStore

from memvault.conversation import SQLConversationStore

if TYPE_CHECKING:
    from conftest import ConversationStoreFactory  # tests/conftest.py (no package: typing only)


@pytest.fixture(params=["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)])
def make_store(
    request: pytest.FixtureRequest, conversation_stores: ConversationStoreFactory
) -> MakeStore:
    """A builder of fresh, empty conversation stores of one kind."""
    kind: str = request.param

    def make(clock: Callable[[], datetime] | None = None) -> SQLConversationStore:
        return conversation_stores(kind, clock)

    return make


@pytest.fixture
def store(make_store: MakeStore) -> SQLConversationStore:
    """A fresh, empty conversation store."""
    return make_store()
