"""Factories for consolidation tests: entries with controlled ids, times and relevance."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memvault.models import MemoryCategory, MemoryEntry, MemoryMetadata

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)

EntryFactory = Callable[..., MemoryEntry]


@pytest.fixture
def now() -> datetime:
    """The fixed clock of every consolidation test."""
    return NOW


@pytest.fixture
def make_entry() -> EntryFactory:
    """Build a MemoryEntry; ``age_days`` sets created_at before NOW, ids are caller-chosen."""

    def build(
        entry_id: str,
        content: str = "a memory",
        *,
        category: MemoryCategory = MemoryCategory.SEMANTIC,
        agent_id: str = "dev-1",
        age_days: float = 1.0,
        importance: float = 0.5,
        access_count: int = 0,
        **fields: Any,
    ) -> MemoryEntry:
        created = NOW - timedelta(days=age_days)
        return MemoryEntry(
            id=entry_id,
            agent_id=agent_id,
            category=category,
            content=content,
            metadata=MemoryMetadata(importance=importance),
            created_at=created,
            updated_at=created,
            access_count=access_count,
            **fields,
        )

    return build
