"""update() stores a new version and keeps the old one; history() returns the chain and audit."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memvault import Memory
from memvault.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from memvault.protocols import Embedder


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(str(tmp_path / "u.db"), embedder=minilm) as m:
        yield m


def test_update_keeps_the_old_version_and_history_lists_both(mem: Memory) -> None:
    first = mem.add("The team meets on Mondays", agent_id="a", tags=["ritual"])
    before = mem.get(first, agent_id="a")
    v2 = mem.update(first, agent_id="a", content="The team meets on Tuesdays")
    assert v2.id != first and v2.content == "The team meets on Tuesdays"
    assert v2.tags == ("ritual",)  # untouched fields are kept
    v3 = mem.update(v2.id, agent_id="a", tags=["ritual", "calendar"])
    assert v3.content == v2.content and v3.tags == ("ritual", "calendar")
    # Searches see the current version; the old ones stay readable and as-of visible.
    assert [h.id for h in mem.search("when does the team meet", agent_id="a")] == [v3.id]
    assert mem.get(first, agent_id="a").superseded_by == v2.id
    then = mem.search("when does the team meet", agent_id="a", as_of=before.created_at)
    assert [h.id for h in then] == [first]
    for some_id in (first, v2.id, v3.id):
        history = mem.history(some_id, agent_id="a")
        assert [v.id for v in history.versions] == [first, v2.id, v3.id]
        assert history.current.id == v3.id
    actions = [(r.action, r.memory_id) for r in mem.history(first, agent_id="a").audit]
    assert ("memory.supersede", first) in actions and ("memory.supersede", v2.id) in actions
    assert ("memory.store", v3.id) in actions


def test_update_refuses_what_it_cannot_do(mem: Memory) -> None:
    mid = mem.add("Deploys happen at noon", agent_id="a")
    with pytest.raises(MemoryValidationError, match="nothing to update"):
        mem.update(mid, agent_id="a")
    newer = mem.update(mid, agent_id="a", content="Deploys happen at 2pm")
    with pytest.raises(MemoryConflictError, match="superseded"):
        mem.update(mid, agent_id="a", content="Deploys happen at 3pm")
    with pytest.raises(MemoryNotFoundError):
        mem.update(newer.id, agent_id="someone-else", content="x")
    with pytest.raises(MemoryNotFoundError):
        mem.history(newer.id, agent_id="someone-else")
    with pytest.raises(MemoryValidationError):
        mem.update(newer.id, agent_id="a", importance=3.0)
    expiring = mem.update(
        newer.id, agent_id="a", expires_at=newer.created_at + timedelta(days=3650)
    )
    assert expiring.expires_at is not None
