"""The writes-by-decision chart counts duplicates and rejections from the audit log."""

from __future__ import annotations

from datetime import UTC, datetime

from memvault._ids import new_id
from memvault.models import AuditRecord, MemoryCategory, MemoryEntry
from memvault.server.ui import data

DAY1 = datetime(2026, 11, 1, 9, tzinfo=UTC)
DAY2 = datetime(2026, 11, 2, 9, tzinfo=UTC)


def _entry(at: datetime, superseded_by: str | None = None) -> MemoryEntry:
    return MemoryEntry(
        id=new_id(),
        agent_id="a",
        category=MemoryCategory.SEMANTIC,
        content="x",
        created_at=at,
        updated_at=DAY2,
        valid_to=DAY2 if superseded_by else None,
        superseded_by=superseded_by,
    )


def _record(action: str, at: datetime) -> AuditRecord:
    return AuditRecord(id=new_id(), at=at, actor="agent:a", action=action, agent_id="a")


def test_every_decision_has_its_series() -> None:
    newer = _entry(DAY2)
    entries = [_entry(DAY1, superseded_by=newer.id), newer]
    audit = [
        _record("memory.duplicate", DAY1),
        _record("memory.duplicate", DAY2),
        _record("memory.duplicate", DAY2),
        _record("memory.reject", DAY2),
        _record("memory.store", DAY1),  # counted from the entries, not twice
    ]
    labels, series = data.decisions_per_day(entries, audit)
    assert labels == ["2026-11-01", "2026-11-02"]
    assert series == {
        "stored": [1.0, 1.0],
        "superseded": [0.0, 1.0],
        "duplicate": [1.0, 2.0],
        "rejected": [0.0, 1.0],
    }


def test_without_audit_records_only_rows_count() -> None:
    labels, series = data.decisions_per_day([_entry(DAY1)])
    assert labels == ["2026-11-01"]
    assert series["duplicate"] == [0.0] and series["rejected"] == [0.0]
