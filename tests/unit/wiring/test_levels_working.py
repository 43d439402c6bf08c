"""Issue 17 item 4: level ``none`` stores nothing, WORKING memories live in process.

Real SQLite files and the real embedding model; every check goes through ``Memory``/``AsyncMemory``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memvault import AsyncMemory, Memory, MemvaultConfig
from memvault.config import CompositeStorageConfig, MemoryStorageConfig
from memvault.errors import MemoryCapabilityError
from memvault.memory._async import LEVEL_NONE_REASON
from memvault.models import MemoryCategory, MemoryLevel
from memvault.protocols import Embedder
from memvault.write.pipeline import WriteKind


def _rows(db: Path) -> list[tuple[str, str]]:
    """(category, content) of every memory row in the SQLite file, read behind memvault's back."""
    with sqlite3.connect(db) as conn:
        return [(str(c), str(t)) for c, t in conn.execute("SELECT category, content FROM memories")]


def _config(db: Path, **update: object) -> MemvaultConfig:
    return MemvaultConfig(
        level=MemoryLevel.PERSISTENT, storage=MemoryStorageConfig(url=str(db))
    ).model_copy(update=update)


# -- level none -------------------------------------------------------------------------------


async def test_level_none_accepts_and_drops_every_write_explicitly(minilm: Embedder) -> None:
    cfg = MemvaultConfig(level=MemoryLevel.NONE)
    async with AsyncMemory(config=cfg, embedder=minilm) as mem:
        outcome = await mem.write("Prefers Litestar over Flask", agent_id="dev-1")
        assert outcome.id is None and not outcome.stored
        assert outcome.decision.kind is WriteKind.REJECT
        assert outcome.decision.reason == LEVEL_NONE_REASON
        assert await mem.add("Deploys go through the release PR", agent_id="dev-1") == ""
        assert await mem.add_many([{"content": "a fact"}, {"content": "b"}], agent_id="dev-1") == [
            "",
            "",
        ]
        turns = [{"role": "user", "content": "My cat is called Miso"}]
        assert await mem.add_messages(turns, agent_id="dev-1") == [""]
        exported = [{"id": "01a204f6-3f8c-7000-97c6-5989b26e79e2", "agent_id": "dev-1",
                     "category": "semantic", "content": "imported fact",
                     "created_at": "2026-01-01T00:00:00+00:00"}]  # fmt: skip
        assert await mem.import_(exported) == 0
        with pytest.raises(MemoryCapabilityError, match="level 'none'"):
            await mem.publish("Shared fact", agent_id="dev-1")
        # Reads return nothing.
        assert await mem.search("Litestar", agent_id="dev-1") == []
        assert await mem.list(agent_id="dev-1") == []
        assert await mem.count(agent_id="dev-1") == 0
        assert await mem.export() == []
        assert await mem.capture_episode("Nightly sync ran", agent_id="dev-1") is None
        assert (await mem.context("Litestar", agent_id="dev-1")).entries == ()


# -- working memory in process ----------------------------------------------------------------


def test_working_memories_are_never_written_to_the_file(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "w.db"
    with Memory(config=_config(db), embedder=minilm) as mem:
        plan = mem.add("Currently implementing the auth endpoint", agent_id="a", category="working")
        fact = mem.add("The auth service uses JWT with RS256", agent_id="a", category="semantic")
        other = mem.add("Currently reviewing the billing PR", agent_id="b", category="working")
        # The durable store's identity is unchanged by the overlay.
        assert mem.location == str(db) and mem.backend.backend_name == "sqlite"
        # One search over every category finds both kinds, best first.
        hits = mem.search("auth endpoint JWT", agent_id="a", limit=5)
        assert {plan, fact} <= {h.id for h in hits}
        assert other not in {h.id for h in hits}  # agent isolation holds in process
        assert [h.id for h in mem.search("auth", agent_id="a", categories=["working"])] == [plan]
        assert mem.count(agent_id="a") == 2
        assert mem.count(agent_id="a", category="working") == 1
        assert {e.id for e in mem.list(agent_id="a")} == {plan, fact}
        assert {e["id"] for e in mem.export(agent_id="a")} == {plan, fact}
        assert mem.get(plan, agent_id="a").category is MemoryCategory.WORKING
        assert sorted(mem.agents()) == ["a", "b"]
        # Nothing WORKING reached the file; the semantic fact did.
        assert _rows(db) == [("semantic", "The auth service uses JWT with RS256")]
        assert mem.delete(plan, agent_id="a")
        assert mem.count(agent_id="a", category="working") == 0
    with Memory(config=_config(db), embedder=minilm) as again:
        assert [e.id for e in again.list(agent_id="a")] == [fact]
        assert again.list(agent_id="b") == []


def test_each_memory_object_has_its_own_working_memory(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "two.db"
    with (
        Memory(config=_config(db), embedder=minilm) as one,
        Memory(config=_config(db), embedder=minilm) as two,
    ):
        one.add("Drafting the migration plan", agent_id="a", category="working")
        two.add("Release notes are in docs/releases", agent_id="a", category="semantic")
        assert one.count(agent_id="a") == 2  # its own working memory + the shared file
        assert two.count(agent_id="a") == 1


def test_explicit_working_route_persists_working_memories(tmp_path: Path, minilm: Embedder) -> None:
    db, scratch = tmp_path / "main.db", tmp_path / "working.db"
    cfg = _config(
        db,
        backend="composite",
        composite=CompositeStorageConfig(routes={MemoryCategory.WORKING: str(scratch)}),
    )
    with Memory(config=cfg, embedder=minilm) as mem:
        mem.add("Currently migrating the billing tables", agent_id="a", category="working")
        mem.add("Billing runs on PostgreSQL 16", agent_id="a", category="semantic")
    assert _rows(scratch) == [("working", "Currently migrating the billing tables")]
    assert _rows(db) == [("semantic", "Billing runs on PostgreSQL 16")]


def test_a_composite_without_a_working_route_keeps_working_in_process(
    tmp_path: Path, minilm: Embedder
) -> None:
    db, episodes = tmp_path / "main.db", tmp_path / "episodes.db"
    cfg = _config(
        db,
        backend="composite",
        composite=CompositeStorageConfig(routes={MemoryCategory.EPISODIC: str(episodes)}),
    )
    with Memory(config=cfg, embedder=minilm) as mem:
        mem.add("Currently writing the changelog", agent_id="a", category="working")
        mem.add("Shipped v2.1 on Monday", agent_id="a", category="episodic")
        assert mem.count(agent_id="a") == 2
    assert _rows(episodes) == [("episodic", "Shipped v2.1 on Monday")]
    assert not db.exists() or _rows(db) == []


def test_retention_and_audit_still_reach_the_durable_store(
    tmp_path: Path, minilm: Embedder
) -> None:
    db = tmp_path / "caps.db"
    cfg = _config(db).model_copy(
        update={"options": _config(db).options.model_copy(update={"max_memories_per_agent": 2})}
    )
    with Memory(config=cfg, embedder=minilm) as mem:
        for text in ("Alpha fact about the build", "Beta fact about the release"):
            mem.add(text, agent_id="a")
        mem.add("Currently triaging the flaky test", agent_id="a", category="working")
        # Over the cap of 2 after the third write: the weakest goes (archived if durable,
        # dropped if WORKING), through the durable store's archive behind the overlay.
        assert mem.count(agent_id="a") == 2
        archived = mem.archived(agent_id="a")
        assert len(archived) == 1
        assert archived[0].entry.category is MemoryCategory.SEMANTIC
        assert mem.sweep(agent_id="a").evicted == {}
        actions = [r.action for r in mem.audit(agent_id="a")]
        assert "memory.evict" in actions
        restored = mem.restore(archived[0].entry.id, agent_id="a")
        assert restored.id == archived[0].entry.id


async def test_memory_tools_say_when_level_none_stored_nothing(minilm: Embedder) -> None:
    async with AsyncMemory(config=MemvaultConfig(level=MemoryLevel.NONE), embedder=minilm) as mem:
        answer = await mem.memory_tools().remember("dev-1", "Prefers dark mode", "preferences")
    assert answer == f"Not stored: {LEVEL_NONE_REASON}."


def test_import_restores_working_entries_durably(tmp_path: Path, minilm: Embedder) -> None:
    # An import restores stored data: its WORKING entries must not vanish with the process.
    db = tmp_path / "restore.db"
    exported = [
        {"id": "01a204f6-3f8c-7000-97c6-5989b26e79e2", "agent_id": "a", "category": "working",
         "content": "Currently editing report.md", "created_at": "2026-01-01T00:00:00+00:00"},
    ]  # fmt: skip
    with Memory(config=_config(db), embedder=minilm) as mem:
        assert mem.import_(exported) == 1
        assert mem.import_(exported) == 0
    assert _rows(db) == [("working", "Currently editing report.md")]


async def test_searches_skip_the_scratch_store_until_a_working_memory_is_written(
    tmp_path: Path, minilm: Embedder
) -> None:
    # The overlay in front of every durable store costs a search nothing until WORKING memory
    # is used: no count of the in-process store, the durable store answers alone.
    from memvault.backends.inmemory import InMemoryBackend
    from memvault.backends.sqlite import SQLiteBackend
    from memvault.backends.working import WorkingOverlay

    class CountedScratch(InMemoryBackend):
        counts = 0

        async def count(self, agent_id: str, **kwargs: object) -> int:  # type: ignore[override]
            CountedScratch.counts += 1
            return await super().count(agent_id, **kwargs)  # type: ignore[arg-type]

    durable = SQLiteBackend(str(tmp_path / "m.db"), embedder=minilm)
    overlay = WorkingOverlay(durable, CountedScratch(minilm), preset="default")
    async with AsyncMemory(backend=overlay) as mem:
        await mem.add("Prefers dark mode in every editor", agent_id="dev-1")
        CountedScratch.counts = 0  # writes count the agent's memories for the caps
        assert await mem.search("editor theme", agent_id="dev-1")
        assert CountedScratch.counts == 0
        await mem.add("Scratch: the build is red", agent_id="dev-1", category="working")
        CountedScratch.counts = 0
        hits = await mem.search("is the build red?", agent_id="dev-1")
        assert CountedScratch.counts == 1
        assert any(h.category is MemoryCategory.WORKING for h in hits)
    assert [c for c, _ in _rows(tmp_path / "m.db")] == ["semantic"]  # never the working one
