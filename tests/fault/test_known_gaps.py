"""The gaps issue 21 closes: audited deletes, key revocation, composite archive, audit index."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from memvault.api.auth import Scope
from memvault.backends.composite import CompositeBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.errors import MemoryAuthenticationError
from memvault.models import MemoryCategory, MemoryStoreRequest
from memvault.protocols import Embedder
from memvault.server.keys import SQLiteKeyStore
from memvault.server.rest import KEY_CACHE_SECONDS
from memvault.server.rest.auth import Authenticator


def _req(text: str, category: MemoryCategory = MemoryCategory.SEMANTIC) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=text, category=category)


async def test_a_delete_is_audited_even_if_the_caller_never_records_it(
    tmp_path: Path, minilm: Embedder
) -> None:
    # The crash this closes: the delete committed, the process died before the caller's
    # separate audit write. The record is now part of the delete's own transaction.
    path = tmp_path / "store.db"
    store = SQLiteBackend(path, minilm)
    await store.connect()
    mid = await store.store("alice", _req("The door code is 1234."))
    assert await store.delete("alice", mid)
    await store.disconnect()  # no record_audit call: as if the process had died here
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT action, agent_id FROM audit WHERE memory_id = ? ORDER BY at", (mid,)
        ).fetchall()
        gone = conn.execute("SELECT COUNT(*) FROM memories WHERE id = ?", (mid,)).fetchone()[0]
    assert rows == [("memory.store", "alice"), ("memory.delete", "alice")]
    assert gone == 0


async def test_audit_by_agent_uses_the_agent_time_index(tmp_path: Path, minilm: Embedder) -> None:
    path = tmp_path / "store.db"
    store = SQLiteBackend(path, minilm)
    await store.connect()
    await store.store("alice", _req("A note."))
    await store.disconnect()
    with sqlite3.connect(path) as conn:
        plan = " ".join(
            str(r[3])
            for r in conn.execute(
                "EXPLAIN QUERY PLAN SELECT id FROM audit WHERE agent_id = ? ORDER BY at, id",
                ("alice",),
            )
        )
    assert "idx_audit_agent" in plan
    assert "TEMP B-TREE" not in plan  # the index gives the order too


def test_a_revoked_key_is_refused_by_another_worker_within_one_second(tmp_path: Path) -> None:
    assert KEY_CACHE_SECONDS < 1.0
    path = tmp_path / "keys.db"
    admin = SQLiteKeyStore(path)  # the process that revokes (memvault keys revoke)
    worker = SQLiteKeyStore(path)  # a server worker with its own connection and cache
    try:
        key, secret = admin.create(name="bot", scopes=[Scope.READ], agent_id="bot")
        now = [100.0]  # the worker's monotonic clock, advanced by hand
        auth = Authenticator(worker, clock=lambda: now[0])
        assert asyncio.run(auth(f"Bearer {secret}")).name == "bot"
        assert admin.revoke(key.id)
        # The gap: the worker trusts its cached key a little longer...
        assert asyncio.run(auth(f"Bearer {secret}")).name == "bot"
        # ...and asks the shared key store again once KEY_CACHE_SECONDS have passed.
        now[0] += KEY_CACHE_SECONDS
        with pytest.raises(MemoryAuthenticationError):
            asyncio.run(auth(f"Bearer {secret}"))
    finally:
        admin.close()
        worker.close()


async def test_composite_archives_in_the_child_holding_each_entry(
    tmp_path: Path, minilm: Embedder
) -> None:
    durable = SQLiteBackend(tmp_path / "store.db", minilm)
    scratch = InMemoryBackend(minilm)
    store = CompositeBackend({MemoryCategory.EPISODIC: scratch}, durable)
    await store.connect()
    try:
        fact = await store.store("alice", _req("Alice likes tea."))
        event = await store.store("alice", _req("Alice met Bob.", MemoryCategory.EPISODIC))
        moved = await store.archive("alice", [fact, event], reason="expire")
        assert set(moved) == {fact, event}
        assert [r.memory_id for r in await durable.archived("alice")] == [fact]
        assert [r.memory_id for r in await scratch.archived("alice")] == [event]
        assert await store.count_rows("archive") == 2
        rows = [r async for r in store.export_rows("audit")]
        assert sorted((r["action"], r["memory_id"]) for r in rows) == sorted(
            [
                ("memory.store", fact),
                ("memory.store", event),
                ("memory.expire", fact),
                ("memory.expire", event),
            ]
        )
        assert [(r["at"], r["id"]) for r in rows] == sorted((r["at"], r["id"]) for r in rows)
        back = await store.restore("alice", event)
        assert back.category is MemoryCategory.EPISODIC
        assert await scratch.get("alice", event) is not None
        assert await durable.get("alice", event) is None
    finally:
        await store.disconnect()


@pytest.mark.parametrize("given", [{}, {"durability": "process"}])
def test_default_durability_is_process(given: dict[str, str]) -> None:
    from memvault.config import MemoryStorageConfig

    cfg = MemoryStorageConfig(**given)
    assert (cfg.durability, cfg.synchronous) == ("process", "normal")
