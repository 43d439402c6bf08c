"""The graph follows the memories' lifecycle, on SQLite and PostgreSQL, through the public API:
a deleted or cleared memory's mentions go with it (in the deletion's transaction); an archived
memory's mentions are kept but never reached while it is archived, and count again once it is
restored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memvault import AsyncMemory
from memvault.config.graph import GraphConfig

from .conftest import OpenMemory

T0 = datetime(2024, 1, 1, tzinfo=UTC)
ON = GraphConfig(enabled=True)


async def _facts(mem: AsyncMemory, agent: str = "a") -> dict[str, str]:
    texts = {
        "alice": "Alice works at Acme Corp in the design team.",
        "acme": "Acme Corp has its headquarters in Berlin.",
        "festival": "Berlin hosts the Lighthouse Festival every June.",
        "note": "The office keys for Berlin are with Dana.",
    }
    ids: dict[str, str] = {}
    for i, (name, text) in enumerate(texts.items()):
        category = "episodic" if name == "note" else "semantic"
        ids[name] = await mem.add(
            text, agent_id=agent, created_at=T0 + timedelta(days=i), category=category
        )
    return ids


async def _berlin(mem: AsyncMemory, agent: str = "a") -> set[str]:
    found = await mem.graph.store.mentions(agent, ["berlin"])
    return set(found.get("berlin", []))


async def test_deleting_a_memory_drops_its_mentions(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    ids = await _facts(mem)
    await _facts(mem, agent="b")  # another agent's identical graph stays untouched
    assert ids["acme"] in await _berlin(mem)
    before_b = await _berlin(mem, "b")
    assert await mem.delete(ids["acme"], agent_id="a")
    # Gone from the table itself, not only filtered out of reads.
    assert await mem.graph.store.entities_of("a", [ids["acme"]]) == {}
    assert await _berlin(mem) == {ids["festival"], ids["note"]}
    hits = await mem.graph_recall("Berlin", agent_id="a")
    assert ids["acme"] not in {h.id for h in hits}
    assert {h.id for h in hits} >= {ids["festival"], ids["note"]}
    # Entities are facts about the world, not about one memory: they stay.
    assert "berlin" in {e.key for e in await mem.graph.entities("a")}
    assert await _berlin(mem, "b") == before_b and len(before_b) == 3
    assert not await mem.delete(ids["acme"], agent_id="a")  # nothing left to delete


async def test_clearing_memories_drops_their_mentions(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    ids = await _facts(mem)
    assert await mem.clear(agent_id="a", category="episodic") == 1
    assert await mem.graph.store.entities_of("a", [ids["note"]]) == {}
    assert await _berlin(mem) == {ids["acme"], ids["festival"]}
    assert await mem.clear(agent_id="a") == 3
    assert await mem.graph.store.entities_of("a", list(ids.values())) == {}
    assert await mem.graph_recall("Alice", agent_id="a") == []


async def test_archived_memories_leave_recall_and_come_back_on_restore(
    open_memory: OpenMemory,
) -> None:
    mem = open_memory(graph=ON)
    ids = await _facts(mem)
    moved = await mem.archive([ids["acme"]], agent_id="a", reason="archive")
    assert set(moved) == {ids["acme"]}
    # Kept (for the restore), but not reached while archived.
    assert ids["acme"] in await mem.graph.store.entities_of("a", [ids["acme"]])
    assert ids["acme"] not in await _berlin(mem)
    for mode in ("bfs", "spreading"):
        hits = await mem.graph_recall("Berlin", agent_id="a", mode=mode)
        assert ids["acme"] not in {h.id for h in hits}, mode
    restored = await mem.restore(ids["acme"], agent_id="a")
    assert restored.id == ids["acme"]
    assert ids["acme"] in await _berlin(mem)
    hits = await mem.graph_recall("Berlin", agent_id="a")
    assert ids["acme"] in {h.id for h in hits}
