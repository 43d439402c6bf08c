"""The mem0 backend (mem0ai's local mode: embedded Qdrant plus SQLite history) passes the full
contract suite, and mem0's own API reads what memvault wrote."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from memvault.backends.factory import open_backend
from memvault.errors import MemoryCapabilityError, MemoryConfigError, MemoryConnectionError
from memvault.models import MemoryCategory, MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder
from memvault.testing import BackendContract, BackendFactory

pytest.importorskip("mem0", reason="the mem0 extra is not installed")

from memvault.backends.mem0 import Mem0Backend


class TestMem0Contract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        counter = iter(range(1000))
        return lambda embedder: Mem0Backend(tmp_path / f"mem0-{next(counter)}", embedder)


# -- beyond the contract: mem0's view of the store ---------------------------------------------


@pytest.fixture
async def store(tmp_path: Path, minilm: Embedder) -> Mem0Backend:
    backend = open_backend(f"mem0://{tmp_path}/m0", embedder=minilm)
    assert isinstance(backend, Mem0Backend)
    await backend.connect()
    yield backend  # type: ignore[misc]
    await backend.disconnect()


async def test_mem0_reads_what_memvault_wrote(store: Mem0Backend, tmp_path: Path) -> None:
    litestar = await store.store(
        "agent-7",
        MemoryStoreRequest(content="The user prefers Litestar over Flask for web services."),
    )
    await store.store("agent-7", MemoryStoreRequest(content="Code reviews need two approvals."))
    await store.store("other", MemoryStoreRequest(content="Another agent likes Django."))
    m = store.mem0
    got = m.get(litestar)
    assert got["id"] == litestar
    assert got["memory"] == "The user prefers Litestar over Flask for web services."
    listed = m.get_all(filters={"agent_id": "agent-7"})
    assert sorted(r["memory"] for r in listed["results"]) == [
        "Code reviews need two approvals.",
        "The user prefers Litestar over Flask for web services.",
    ]
    # mem0's own semantic search runs on memvault's embedder (no API key, no network).
    found = m.search("which web framework?", filters={"agent_id": "agent-7"}, top_k=1)
    assert [r["id"] for r in found["results"]] == [litestar]
    # Files where the seed's local mode keeps them: the vector store and the history DB.
    assert (tmp_path / "m0" / "qdrant").is_dir()
    assert (tmp_path / "m0" / "history.db").is_file()


async def test_history_records_adds_and_deletes(store: Mem0Backend) -> None:
    mid = await store.store("a", MemoryStoreRequest(content="temporary note"))
    gone = await store.store(
        "a", MemoryStoreRequest(content="cleared note", category=MemoryCategory.EPISODIC)
    )
    assert [h["event"] for h in store.mem0.history(mid)] == ["ADD"]
    assert await store.delete("a", mid)
    assert await store.clear("a", category=MemoryCategory.EPISODIC) == 1
    events = store.mem0.history(mid)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in events] == [
        ("ADD", None, "temporary note"),
        ("DELETE", "temporary note", None),
    ]
    assert [h["event"] for h in store.mem0.history(gone)] == ["ADD", "DELETE"]
    assert store.mem0.get(mid) is None
    # The history is mem0's SQLite file, readable without mem0.
    with sqlite3.connect(store.history_path) as db:
        rows = db.execute("SELECT event FROM history WHERE memory_id = ?", (mid,)).fetchall()
    assert sorted(r[0] for r in rows) == ["ADD", "DELETE"]


async def test_agents_stay_isolated_in_mem0_too(store: Mem0Backend) -> None:
    await store.store("alice", MemoryStoreRequest(content="alice's private salary note"))
    assert await store.retrieve("bob", MemoryQuery(text="salary")) == ()
    assert store.mem0.get_all(filters={"agent_id": "bob"})["results"] == []


def test_telemetry_is_off_and_no_llm_is_called(minilm: Embedder) -> None:
    import mem0.memory.main as mem0_main
    import mem0.memory.telemetry as telemetry

    from memvault.backends.mem0._driver import NoLLM

    assert os.environ["MEM0_TELEMETRY"] == "False"
    assert telemetry.MEM0_TELEMETRY is False
    assert mem0_main.MEM0_TELEMETRY is False
    with pytest.raises(MemoryCapabilityError, match="infer=False"):
        NoLLM().generate_response([{"role": "user", "content": "hi"}])


def test_infer_true_is_refused(tmp_path: Path, minilm: Embedder) -> None:
    with pytest.raises(MemoryConfigError, match="infer=False"):
        Mem0Backend(tmp_path / "m", minilm, infer=True)


async def test_a_store_in_use_is_refused(
    store: Mem0Backend, tmp_path: Path, minilm: Embedder
) -> None:
    second = Mem0Backend(tmp_path / "m0", minilm)
    with pytest.raises(MemoryConnectionError, match="in use"):
        await second.connect()
    with pytest.raises(MemoryConnectionError):
        _ = second.mem0


async def test_a_mistyped_directory_is_refused(tmp_path: Path, minilm: Embedder) -> None:
    backend = open_backend(f"mem0://{tmp_path}/missing/parent/m0", embedder=minilm)
    with pytest.raises(MemoryConfigError, match="does not exist"):
        await backend.connect()
    assert not (tmp_path / "missing").exists()
