"""The CLI goes through MemoryService: deletes are audited under the local user and a reason."""

from __future__ import annotations

import pytest

from memvault.cli._common import local_user


def test_delete_and_clear_are_audited_with_the_user_and_reason(
    run, db, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    assert local_user() == "alice"
    first = run.add(db, "Prefers tabs", "--agent", "dev-1")
    run.add(db, "Uses vim", "--agent", "dev-1")
    deleted = run("--db", db, "delete", first, "--agent", "dev-1", "--reason", "wrong person")
    assert deleted.code == 0, deleted.err
    cleared = run("--db", db, "clear", "--agent", "dev-1", "--force", "--reason", "offboarding")
    assert cleared.code == 0 and "deleted 1 memories" in cleared.out
    audit = run("--db", db, "audit", "--agent", "dev-1", "--json")
    assert audit.code == 0, audit.err
    records = {r["action"]: r for r in audit.json()}
    assert records["memory.delete"]["actor"] == "admin:alice"
    assert records["memory.delete"]["details"]["stated_reason"] == "wrong person"
    assert records["memory.clear"]["details"]["stated_reason"] == "offboarding"
    assert records["memory.store"]["actor"] == "admin:alice"


def test_an_oversized_reason_is_refused_and_nothing_is_deleted(run, db) -> None:
    mid = run.add(db, "Keep me", "--agent", "dev-1")
    result = run("--db", db, "delete", mid, "--agent", "dev-1", "--reason", "x" * 600)
    assert result.code == 2
    assert len(result.err_lines) == 1 and "reason" in result.err
    assert [e["id"] for e in run.list(db, "--agent", "dev-1")] == [mid]
