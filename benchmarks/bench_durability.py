"""Write cost of each ``storage.durability`` setting (issue 21).

Usage::

    .venv/bin/python benchmarks/bench_durability.py [--writes 300] [--batch 100]
        [--dir DIR] [--postgres-url URL] [--json build/bench_durability.json]

For SQLite it stores ``--writes`` memories one per transaction (``store``), then the same number
in batches of ``--batch`` (``store_many``), once with ``durability: process``
(synchronous=NORMAL) and once with ``durability: power`` (synchronous=FULL), and reports the
median and p95 latency per transaction and writes per second. Vectors are computed once up
front and passed in, so the figures are the store's own cost (SQL, fsync), not the embedder's.
The store lives in ``--dir`` (default: a temporary directory; pass a directory on the disk you
care about, since tmpfs makes fsync free).

With ``--postgres-url`` the same runs go to a throwaway schema with the session's
``synchronous_commit`` on (memvault's ``power``, PostgreSQL's default) and off (for contrast
only: memvault never turns it off). The figures mean something only on a server with fsync on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from memvault.backends._base import BaseBackend
from memvault.config import MemoryStorageConfig
from memvault.embeddings import default_embedder
from memvault.models import MemoryStoreRequest
from memvault.protocols import Embedder


def _requests(n: int, tag: str) -> list[MemoryStoreRequest]:
    return [
        MemoryStoreRequest(content=f"Durability probe {tag} {i}: the nightly job wrote {i * 7}.")
        for i in range(n)
    ]


async def _measure(store: BaseBackend, writes: int, batch: int, vectors: Any) -> dict[str, Any]:
    await store.connect()
    try:
        reqs = _requests(writes, "single")
        single: list[float] = []
        for i, r in enumerate(reqs):
            t = time.perf_counter()
            await store.store_many("bench", [r], vectors=[vectors[i]])
            single.append(time.perf_counter() - t)
        batched: list[float] = []
        reqs = _requests(writes, "batch")
        start = time.perf_counter()
        for lo in range(0, writes, batch):
            t = time.perf_counter()
            await store.store_many(
                "bench", reqs[lo : lo + batch], vectors=list(vectors[lo : lo + batch])
            )
            batched.append(time.perf_counter() - t)
        batch_total = time.perf_counter() - start
    finally:
        await store.disconnect()
    single_ms = sorted(x * 1000 for x in single)
    return {
        "single_median_ms": round(statistics.median(single_ms), 3),
        "single_p95_ms": round(single_ms[int(0.95 * (len(single_ms) - 1))], 3),
        "single_writes_per_s": round(len(single) / sum(single), 1),
        "batch_median_ms": round(statistics.median(batched) * 1000, 3),
        "batch_writes_per_s": round(writes / batch_total, 1),
    }


async def _sqlite(
    directory: Path, embedder: Embedder, writes: int, batch: int, vectors: Any
) -> dict[str, Any]:
    from memvault.backends.sqlite import SQLiteBackend

    out: dict[str, Any] = {}
    for durability in ("process", "power"):
        sync = MemoryStorageConfig(durability=durability).synchronous
        path = directory / f"bench-{durability}-{uuid.uuid4().hex[:8]}.db"
        store = SQLiteBackend(path, embedder, synchronous=sync)
        out[durability] = {"synchronous": sync, **await _measure(store, writes, batch, vectors)}
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return out


async def _postgres(
    url: str, embedder: Embedder, writes: int, batch: int, vectors: Any
) -> dict[str, Any]:
    import psycopg

    from memvault.backends.postgres import PostgresBackend

    out: dict[str, Any] = {}
    for label, setting in (("power", "on"), ("off_for_contrast", "off")):
        schema = f"bench_durability_{uuid.uuid4().hex[:8]}"
        sep = "&" if "?" in url else "?"
        # libpq options: the session setting every pooled connection starts with.
        dsn = f"{url}{sep}options=-c%20synchronous_commit%3D{setting}"
        store = PostgresBackend(dsn, embedder, schema=schema)
        try:
            out[label] = {
                "synchronous_commit": setting,
                **await _measure(store, writes, batch, vectors),
            }
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--writes", type=int, default=300)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--postgres-url", default=None)
    ap.add_argument("--json", type=Path, default=Path("build/bench_durability.json"))
    args = ap.parse_args()
    embedder = default_embedder()
    texts = [f"Durability probe {i}" for i in range(args.writes)]
    vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
    results: dict[str, Any] = {"writes": args.writes, "batch": args.batch}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        results["sqlite"] = asyncio.run(
            _sqlite(Path(tmp), embedder, args.writes, args.batch, vectors)
        )
    if args.postgres_url:
        results["postgresql"] = asyncio.run(
            _postgres(args.postgres_url, embedder, args.writes, args.batch, vectors)
        )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
