"""``storage.read_url``: reads on a real streaming replica, writes on the primary.

A private primary (pgserver's bundled PostgreSQL) and a standby made from it with
``pg_basebackup -R`` (``tests/postgres_server.py``). Holding WAL replay on the standby tells a
read it served (it cannot see a write yet) from one the primary served. Checked: reads go to
the replica; a writer reads its own writes at once (routed to the primary until the replica
has replayed them); another process's reads see the replica's (possibly older) state; the
replica killed mid-load costs no read an error (they fall back to the primary) and reads
return to it once it is back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from memvault import AsyncMemory
from memvault.backends.postgres import backend as pg_backend
from memvault.config import MemvaultConfig
from memvault.errors import MemoryConfigError
from memvault.protocols import Embedder

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def replica() -> Iterator[object]:
    from postgres_server import primary_with_replica

    with primary_with_replica() as found:
        yield found


def _config(replica: object, schema: str, *, read: bool = True) -> MemvaultConfig:
    primary = f"{replica.primary_url}&schema={schema}"  # type: ignore[attr-defined]
    read_url = replica.replica_url if read else None  # type: ignore[attr-defined]
    return MemvaultConfig.model_validate({"storage": {"url": primary, "read_url": read_url}})


@pytest.fixture
async def memories(replica: object, minilm: Embedder) -> AsyncIterator[tuple[AsyncMemory, ...]]:
    import uuid

    schema = f"r_{uuid.uuid4().hex[:12]}"
    reader = AsyncMemory(config=_config(replica, schema), embedder=minilm)
    plain = AsyncMemory(config=_config(replica, schema, read=False), embedder=minilm)
    await plain.add("The staging cluster runs in Frankfurt.", agent_id="ops")
    await reader.count(agent_id="ops")  # open the store (and its replica pool)
    try:
        yield reader, plain
    finally:
        await reader.close()
        await plain.close()


def _routes(memory: AsyncMemory) -> pg_backend.PostgresBackend:
    store = memory.backend
    store = getattr(store, "durable", store)
    assert isinstance(store, pg_backend.PostgresBackend)
    return store


async def _replayed(memory: AsyncMemory, timeout: float = 10.0) -> None:
    """Wait until a read of ``memory`` is served by the replica."""
    backend = _routes(memory)
    deadline = time.monotonic() + timeout
    while True:
        before = backend.read_routes["replica"]
        await memory.count(agent_id="ops")
        if backend.read_routes["replica"] > before:
            return
        assert time.monotonic() < deadline, dict(backend.read_routes)
        await asyncio.sleep(0.1)


async def test_reads_go_to_the_replica_and_a_writer_reads_its_own_writes(
    replica: object, memories: tuple[AsyncMemory, ...]
) -> None:
    reader, plain = memories
    await _replayed(reader)
    replica.pause()  # type: ignore[attr-defined]
    try:
        # Written by another process (no replica configured): the replica does not have it.
        await plain.add("The production cluster moved to Dublin in May.", agent_id="ops")
        hits = await reader.search("production cluster Dublin", agent_id="ops")
        assert not any("Dublin" in h.content for h in hits)
        assert _routes(reader).read_routes["replica"] > 0
        # Written by the reader itself: its reads stay on the primary until the replica has it.
        mine = await reader.add("The database failover drill is on Thursday.", agent_id="ops")
        assert (await reader.get(mine, agent_id="ops")) is not None
        hits = await reader.search("failover drill Thursday", agent_id="ops")
        assert hits and hits[0].id == mine
        assert await reader.count(agent_id="ops") == 3
        assert _routes(reader).read_routes["primary (lag)"] >= 3
    finally:
        replica.resume()  # type: ignore[attr-defined]
    await _replayed(reader)
    hits = await reader.search("production cluster Dublin", agent_id="ops")
    assert any("Dublin" in h.content for h in hits)


async def test_a_replica_killed_mid_load_costs_no_read(
    replica: object, memories: tuple[AsyncMemory, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_backend, "REPLICA_RETRY_SECONDS", 0.5)
    reader, _ = memories
    await _replayed(reader)
    routes = _routes(reader).read_routes
    stop = asyncio.Event()
    answered: list[int] = []

    async def load() -> None:
        while not stop.is_set():
            hits = await reader.search("where does staging run", agent_id="ops")
            answered.append(len(hits))

    tasks = [asyncio.create_task(load()) for _ in range(4)]
    await asyncio.sleep(0.5)
    await asyncio.to_thread(replica.stop)  # type: ignore[attr-defined]
    await asyncio.sleep(1.5)
    down = routes["primary (replica down)"]
    await asyncio.to_thread(replica.start)  # type: ignore[attr-defined]
    await asyncio.sleep(0.2)
    await _replayed(reader, timeout=20)
    stop.set()
    await asyncio.gather(*tasks)  # any failed search would raise here
    assert down > 0, dict(routes)
    assert answered and all(n >= 1 for n in answered)


def test_read_url_must_be_postgres(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from memvault.backends.factory import open_backend

    config = MemvaultConfig.model_validate(
        {"storage": {"url": "postgresql://u@localhost/db", "read_url": str(tmp_path / "x.db")}}
    )
    with pytest.raises(MemoryConfigError, match="read_url"):
        open_backend(config.resolved_url(), config=config)
