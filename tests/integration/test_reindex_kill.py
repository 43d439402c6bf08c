"""``kill -9`` in the middle of ``memvault reindex`` leaves a working store, and a rerun resumes.

A child process reindexes a real store (SQLite file, PostgreSQL schema) with the real bundled
model; its progress callback reports once some batches are committed and then blocks, and the
test kills it there with SIGKILL. The store must then open with the old model and answer
searches exactly as before, keep the committed batches, and finish on a second run that
embeds only what the first did not.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memvault.backends.factory import open_backend
from memvault.embeddings.hashing import HashingEmbedder
from memvault.errors import EmbeddingModelChangedError
from memvault.models import MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder, MemoryStore, ReindexableStore
from memvault.reindex import reindex
from postgres_server import SchemaFactory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

OLD = HashingEmbedder(256)
BATCH = 10
STOP_AT = 40  # memories staged (four batches committed) when the child is killed
TOPICS = (
    "Alice drinks a double espresso every morning before standup",
    "The staging database runs PostgreSQL with pgvector",
    "Bob is allergic to peanuts so order lunch accordingly",
    "The release train leaves every second Tuesday",
    "Backups of the build server run nightly at two",
)
QUERIES = ("espresso morning", "peanuts lunch", "release train Tuesday", "nightly backups")

CHILD = """
import asyncio, sys, time
from memvault.backends.factory import open_backend
from memvault.embeddings import default_embedder
from memvault.reindex import reindex

url, stop_at, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
embedder = default_embedder()
store = open_backend(url, embedder=embedder)

def progress(done, total):
    if done >= stop_at:
        print(f"staged {done} of {total}", flush=True)
        time.sleep(600)  # killed here, between two batches

asyncio.run(reindex(store, embedder, batch_size=batch, progress=progress))
print("finished", flush=True)
"""


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    base = request.getfixturevalue("postgres_url")
    schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema={schemas()}"


async def _opened(url: str, embedder: Embedder) -> MemoryStore:
    store = open_backend(url, embedder=embedder)
    await store.connect()
    return store


async def _answers(store: MemoryStore) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for q in QUERIES:
        hits = await store.retrieve("ops", MemoryQuery(text=q, limit=5))
        out[q] = [h.id for h in hits]
    return out


def _kill_midway(url: str) -> str:
    """Run the child until it has staged STOP_AT memories, then SIGKILL it; its report line."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(STOP_AT), str(BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("staged"):
            child.wait(timeout=60)
            assert child.stderr is not None
            pytest.fail(f"the child did not get midway: {line!r} {child.stderr.read()}")
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
        return line
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


async def test_sigkill_midway_leaves_a_working_store_and_a_rerun_resumes(
    url: str, minilm: Embedder
) -> None:
    store = await _opened(url, OLD)
    total = 120
    await store.store_many(
        "ops",
        [MemoryStoreRequest(content=f"{TOPICS[i % len(TOPICS)]} (note {i})") for i in range(total)],
    )
    before = await _answers(store)
    ids = [e.id async for e in store.export_entries()]
    old_vectors = await store.export_vectors(ids)
    await store.disconnect()

    line = _kill_midway(url)
    assert line.strip() == f"staged {STOP_AT} of {total}"

    # Killed before the swap: the store opens with the old model and answers as before.
    store = await _opened(url, OLD)
    try:
        assert await _answers(store) == before
        vectors = await store.export_vectors(ids)
        assert all(np.array_equal(vectors[i], old_vectors[i]) for i in ids)
        assert isinstance(store, ReindexableStore)
        # The batches committed before the kill are kept.
        assert await store.reindex_status(minilm.model_id) == (total, STOP_AT)
        # It still takes writes with the old model meanwhile.
        await store.store("ops", MemoryStoreRequest(content="Carol is the new release manager"))
    finally:
        await store.disconnect()
    with pytest.raises(EmbeddingModelChangedError):
        await _opened(url, minilm)

    # The rerun (as `memvault reindex` opens it: with the new model) finishes the job without
    # redoing the finished batches.
    resumed = open_backend(url, embedder=minilm)
    try:
        seen: list[int] = []
        report = await reindex(resumed, minilm, batch_size=BATCH, progress=_note(seen))
        assert report.swapped
        assert report.resumed == STOP_AT
        assert report.embedded == total + 1 - STOP_AT
        assert seen[0] == STOP_AT
    finally:
        await resumed.disconnect()

    store = await _opened(url, minilm)
    try:
        hits = await store.retrieve("ops", MemoryQuery(text="who manages the releases", limit=3))
        assert any("release manager" in h.content for h in hits)
        hits = await store.retrieve("ops", MemoryQuery(text="coffee habits", limit=3))
        assert "espresso" in hits[0].content
        assert (await store.stats()).total == total + 1
    finally:
        await store.disconnect()


def _note(seen: list[int]) -> Any:
    def progress(done: int, _total: int) -> None:
        seen.append(done)

    return progress
