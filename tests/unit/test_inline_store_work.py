"""The sync facade's loop does a store's blocking work itself while it serves one caller
(memvault._inline): same answers, one thread at a time on the connection, threads otherwise."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memvault import AsyncMemory, Memory
from memvault._inline import allow_inline, may_run_inline, run_blocking
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings.hashing import HashingEmbedder

LOOP_THREAD = "memvault-loop"
STORE_THREAD = "memvault-sqlite"


class JobSpy:
    """Records the thread of every SQLite job and how many ran at once."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.inside = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def wrap(self, guarded: Callable[..., Any]) -> Callable[..., Any]:
        def spy(backend: SQLiteBackend, fn: Any, args: Any, write: bool) -> Any:
            with self._lock:
                self.inside += 1
                self.most_at_once = max(self.most_at_once, self.inside)
                self.threads.append(threading.current_thread().name)
            try:
                return guarded(backend, fn, args, write)
            finally:
                with self._lock:
                    self.inside -= 1

        return spy


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[JobSpy]:
    found = JobSpy()
    monkeypatch.setattr(SQLiteBackend, "_guarded", found.wrap(SQLiteBackend._guarded))
    yield found


async def test_run_blocking_is_inline_only_where_allowed() -> None:
    here = threading.current_thread()

    def where() -> threading.Thread:
        return threading.current_thread()

    assert not may_run_inline()
    assert await run_blocking(where) is not here

    alone = [True]

    async def caller() -> tuple[threading.Thread, threading.Thread]:
        allow_inline(lambda: alone[0])
        inline = await run_blocking(where)
        # A task the caller starts inherits the permission, and its condition is read anew.
        alone[0] = False
        child = await asyncio.create_task(run_blocking(where))
        return inline, child

    inline, child = await asyncio.create_task(caller())
    assert inline is here
    assert child is not here
    # The permission belongs to the caller's context, not to the loop.
    assert not may_run_inline()


class ThreadNotingEmbedder(HashingEmbedder):
    """The hashing embedder, noting the thread of every call."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.current_thread().name)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        self.threads.append(threading.current_thread().name)
        return super().embed_query(text)


def test_a_lone_sync_caller_works_on_the_loop_thread(tmp_path: Path, spy: JobSpy) -> None:
    embedder = ThreadNotingEmbedder()
    with Memory(str(tmp_path / "m.db"), embedder=embedder) as mem:
        ids = mem.add_many(
            [{"content": f"the red kite nests in tree {i}"} for i in range(30)], agent_id="a"
        )
        spy.threads.clear()
        embedder.threads.clear()
        hits = mem.search("red kite nest", agent_id="a", limit=5)
        assert len(hits) == 5 and {h.id for h in hits} <= set(ids)
        new = mem.add("a grey heron fishes at dawn", agent_id="a")
        assert mem.get(new, agent_id="a") is not None
    assert spy.threads and set(spy.threads) == {LOOP_THREAD}
    assert embedder.threads and set(embedder.threads) == {LOOP_THREAD}


async def test_async_memory_keeps_the_store_thread(tmp_path: Path, spy: JobSpy) -> None:
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=HashingEmbedder()) as mem:
        await mem.add("the red kite nests in the oak", agent_id="a")
        spy.threads.clear()
        assert await mem.search("red kite", agent_id="a")
    assert spy.threads and all(t.startswith(STORE_THREAD) for t in spy.threads)


async def test_an_inline_job_waits_while_the_store_thread_works(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "m.db", HashingEmbedder())
    await backend.connect()
    try:
        started, release = threading.Event(), threading.Event()

        def slow() -> str:
            started.set()
            release.wait(10)
            return threading.current_thread().name

        def quick() -> str:
            return threading.current_thread().name

        first = asyncio.create_task(backend._run(slow))
        assert await asyncio.to_thread(started.wait, 10)

        async def allowed() -> tuple[str, str]:
            allow_inline(lambda: True)
            # The connection is busy on the store's thread: the job queues there, not inline.
            second = asyncio.create_task(backend._run(quick))
            for _ in range(5):  # turns enough for an inline job to have run and finished
                await asyncio.sleep(0)
            assert not second.done()
            release.set()
            queued = await second
            # Once the store's thread is idle, an allowed job runs right here.
            return queued, await backend._run(quick)

        queued, inline = await asyncio.create_task(allowed())
        assert (await first).startswith(STORE_THREAD)
        assert queued.startswith(STORE_THREAD)
        assert inline == threading.current_thread().name
    finally:
        release.set()
        await backend.disconnect()


def test_concurrent_sync_callers_share_the_store_one_at_a_time(tmp_path: Path, spy: JobSpy) -> None:
    path = str(tmp_path / "m.db")
    errors: list[BaseException] = []
    with Memory(path, embedder=HashingEmbedder()) as mem:
        gate = threading.Barrier(4)

        def worker(n: int) -> None:
            try:
                gate.wait(10)
                for i in range(15):
                    mem.add(f"worker {n} saw the heron at pond {i}", agent_id="a", dedup=False)
                    mem.search(f"heron pond {i}", agent_id="a", limit=3)
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert mem.count(agent_id="a") == 60
    # Never two jobs on the connection at once, whichever threads ran them.
    assert spy.most_at_once == 1
    assert {t for t in spy.threads if not t.startswith(STORE_THREAD)} <= {LOOP_THREAD}
