"""Plumbing shared by the benchmark runners: setup checks, fresh stores, timing."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memvault.bench.metrics import percentile
from memvault.bench.report import Timing
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.errors import MemoryValidationError
from memvault.memory import AsyncMemory
from memvault.models import MemoryEntry
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig, get_preset

__all__ = [
    "AGENT_ID",
    "Backend",
    "ProgressCallback",
    "Stopwatch",
    "StoreFactory",
    "bench_config",
    "check_backend",
    "open_stores",
    "resolve_embedder",
    "resolve_preset",
]

Backend = Literal["sqlite", "memory"]
ProgressCallback = Callable[[int, int], None]
"""Called with ``(done, total)`` before the first unit of work and after each one."""

AGENT_ID = "bench"
"""Every benchmark store holds one agent; its name does not matter."""


def bench_config() -> MemvaultConfig:
    """Return a configuration independent of the user's ``memvault.yaml`` and environment.

    Benchmarks must measure the code, not the machine's settings; the per-agent cap is lifted
    and the content limit raised because one store holds a whole haystack of long turns.
    """
    return MemvaultConfig(
        options=MemoryOptionsConfig(max_memories_per_agent=None, max_content_chars=1_000_000)
    )


def resolve_preset(preset: str | RetrievalConfig) -> RetrievalConfig:
    """Return the retrieval configuration a preset name (or a configuration) stands for.

    Raises:
        MemoryValidationError: an unknown preset name (the message lists the known ones).
    """
    if isinstance(preset, RetrievalConfig):
        return preset
    try:
        return get_preset(preset)
    except KeyError as exc:
        raise MemoryValidationError(str(exc.args[0])) from None


def check_backend(backend: str) -> Backend:
    """Return ``backend`` if it is ``sqlite`` or ``memory``.

    Raises:
        MemoryValidationError: any other value.
    """
    if backend == "sqlite":
        return "sqlite"
    if backend == "memory":
        return "memory"
    msg = f"unknown benchmark backend {backend!r} (use 'sqlite' or 'memory')"
    raise MemoryValidationError(msg)


async def resolve_embedder(embedder: Embedder | None) -> Embedder:
    """Return the embedder to use (the shared bundled model by default), warmed up.

    The first call of a model loads its weights; doing that here keeps it out of the first
    store's ingest time.
    """
    if embedder is None:
        from memvault.embeddings import default_embedder

        embedder = default_embedder()
    await asyncio.to_thread(embedder.embed_documents, ["warm-up"])
    return embedder


StoreFactory = Callable[[str], str]
"""Maps a unit name (a conversation or question id) to the storage URL of its fresh store."""


class _Stores:
    """Opens one fresh, private store per unit of work and removes it afterwards."""

    def __init__(
        self,
        *,
        backend: Backend,
        factory: StoreFactory | None,
        embedder: Embedder,
        retrieval: RetrievalConfig,
        root: Path | None,
    ) -> None:
        self._backend = backend
        self._factory = factory
        self._embedder = embedder
        self._retrieval = retrieval
        self._root = root
        self._config = bench_config()
        self._serial = 0

    @asynccontextmanager
    async def open(self, name: str) -> AsyncIterator[AsyncMemory]:
        """Yield a connected, empty :class:`AsyncMemory` for ``name``; close and delete it after."""
        self._serial += 1
        workdir: Path | None = None
        if self._factory is not None:
            url = self._factory(name)
        elif self._backend == "memory" or self._root is None:
            url = "memory://"
        else:
            # A directory per store, so the WAL and SHM side files go with it when it is removed.
            workdir = self._root / f"store-{self._serial:05d}"
            # Stores refuse a path in a missing directory (a typo would make a new store).
            workdir.mkdir(parents=True, exist_ok=True)
            url = str(workdir / "bench.db")
        mem = AsyncMemory(
            url,
            config=self._config,
            embedder=self._embedder,
            preset=self._retrieval,
            # Benchmark searches must not write (access counts would slow them and change later
            # rankings if a preset ever weighed them).
            track_access=False,
        )
        try:
            async with mem:
                yield mem
        finally:
            await mem.close()
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)


@asynccontextmanager
async def open_stores(
    *,
    backend: Backend,
    factory: StoreFactory | None,
    embedder: Embedder,
    retrieval: RetrievalConfig,
) -> AsyncIterator[_Stores]:
    """Yield a store opener for one run; SQLite stores go in a temporary directory removed after."""
    if factory is None and backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
            yield _Stores(
                backend=backend,
                factory=None,
                embedder=embedder,
                retrieval=retrieval,
                root=Path(tmp),
            )
    else:
        yield _Stores(
            backend=backend, factory=factory, embedder=embedder, retrieval=retrieval, root=None
        )


@dataclass
class Stopwatch:
    """Accumulates ingest time and per-search latencies of a run."""

    ingest_seconds: float = 0.0
    ingested: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    async def ingest(
        self,
        mem: AsyncMemory,
        items: Sequence[Mapping[str, Any]],
        *,
        agent_id: str,
        dedup: bool | None = False,
    ) -> list[str]:
        """``add_many`` timed as ingest.

        LoCoMo ingests with dedup off: two identical turns ("ok", "thanks") are two gold
        targets there, and merging them would change what is measured. ``dedup=None`` uses the
        store's default, as a user's ``add_many`` does.
        """
        start = time.perf_counter()
        ids = await mem.add_many(items, agent_id=agent_id, dedup=dedup)
        self.ingest_seconds += time.perf_counter() - start
        self.ingested += len(ids)
        return ids

    async def search(
        self,
        mem: AsyncMemory,
        query: str,
        *,
        agent_id: str,
        limit: int,
        preset: RetrievalConfig,
        as_of: datetime | None = None,
        asked_at: datetime | None = None,
    ) -> list[MemoryEntry]:
        """``search`` timed as one search."""
        start = time.perf_counter()
        hits = await mem.search(
            query, agent_id=agent_id, limit=limit, preset=preset, as_of=as_of, asked_at=asked_at
        )
        self.latencies_ms.append((time.perf_counter() - start) * 1000.0)
        return hits

    def timing(self) -> Timing:
        """Return the accumulated :class:`Timing`."""
        lat = self.latencies_ms
        return Timing(
            ingest_seconds=self.ingest_seconds,
            ingested=self.ingested,
            searches=len(lat),
            search_p50_ms=percentile(lat, 50) if lat else None,
            search_p95_ms=percentile(lat, 95) if lat else None,
        )
