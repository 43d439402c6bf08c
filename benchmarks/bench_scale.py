"""Search latency at scale (10k .. 1M memories) on SQLite or PostgreSQL, default preset.

For a build's speed at sizes that are embedded for real (add_many, search p50/p95/p99, single
adds, RSS, disk), and for an A/B of two builds in one run, use ``memvault bench scale``
(``--compare REF``); this script is for the million-row range, with synthetic vectors.

    python benchmarks/bench_scale.py --backend sqlite --sizes 10000,100000,1000000
    python benchmarks/bench_scale.py --backend postgres --sizes 1000000 [--url postgresql://...]

Embedding a million texts would take most of an hour on 2 cores, so the corpus is built the way
the scale benchmark asks ("vectors may be synthetic but realistic in distribution"): ``--real``
texts are embedded with the bundled model, and every other memory gets a template-generated
text and the vector of a random real memory plus Gaussian noise (renormalised; mean cosine to
its source about 0.85), which keeps the clustered shape of real sentence embeddings. Queries
are embedded for real, and their time is part of every search.

PostgreSQL: rows are loaded without the HNSW index (bulk load), the index is then built, and
every query runs twice, through HNSW and exactly, giving latency for both and the recall@10 of
HNSW against the exact top 10. Without ``--url`` a private server is started with pgserver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from _corpus import memories, queries, synthetic_vectors, timing_embedder
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from memvault import AsyncMemory, MemoryEntry, MemoryQuery
from memvault._ids import new_id
from memvault.embeddings import default_embedder
from memvault.models import MemoryCategory

AGENT = "bench"
BATCH = 5_000
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def corpus(
    size: int, n_real: int, console: Console, data: str = "noise"
) -> tuple[list[str], np.ndarray]:
    """Texts and unit vectors for ``size`` memories (``n_real`` of them embedded for real, the
    rest made from those by :func:`_corpus.synthetic_vectors` with ``data``)."""
    texts = memories(size, seed=size)
    emb = default_embedder()
    n_real = min(n_real, size)
    with console.status(f"embedding {n_real:,} real texts"):
        real = emb.embed_documents(texts[:n_real])
    rng = np.random.default_rng(size)
    vectors = np.empty((size, real.shape[1]), dtype=np.float32)
    vectors[:n_real] = real
    for start in range(n_real, size, 100_000):
        stop = min(start + 100_000, size)
        vectors[start:stop] = synthetic_vectors(real, stop - start, rng, data)
    return texts, vectors


async def load(mem: AsyncMemory, texts: list[str], vectors: np.ndarray, console: Console) -> float:
    """Bulk-load through ``import_with_vectors``; returns rows per second."""
    store = mem.backend
    if not store.is_connected:
        await store.connect()
    start = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"loading {len(texts):,}", total=len(texts))
        for i in range(0, len(texts), BATCH):
            chunk = texts[i : i + BATCH]
            entries = [
                MemoryEntry(
                    id=new_id(),
                    agent_id=AGENT,
                    category=MemoryCategory.EPISODIC,
                    content=t,
                    created_at=T0 + timedelta(minutes=i + j),
                    updated_at=T0 + timedelta(minutes=i + j),
                )
                for j, t in enumerate(chunk)
            ]
            vecs = {e.id: vectors[i + j] for j, e in enumerate(entries)}
            await store.import_with_vectors(entries, vecs)
            progress.advance(task, len(chunk))
    return len(texts) / (time.perf_counter() - start)


async def time_searches(
    mem: AsyncMemory, qs: list[str], preset: str, tops: list[list[str]] | None = None
) -> list[float]:
    """Milliseconds of each end-to-end ``search`` (query embedding included); the ids of each
    search's results go to ``tops`` when given."""
    await mem.search("warm up", agent_id=AGENT, preset=preset)
    out = []
    for q in qs:
        t = time.perf_counter()
        hits = await mem.search(q, agent_id=AGENT, limit=10, preset=preset)
        out.append((time.perf_counter() - t) * 1000)
        if tops is not None:
            tops.append([h.id for h in hits])
    return out


def overlap(got: list[list[str]], want: list[list[str]]) -> float:
    """Mean share of each reference top 10 found in the matching top 10 (recall@10)."""
    return statistics.mean(
        len(set(g) & set(w)) / max(len(w), 1) for g, w in zip(got, want, strict=True)
    )


async def run_sqlite(args: argparse.Namespace, console: Console) -> list[dict[str, Any]]:
    """One fresh SQLite store per size."""
    rows = []
    qs = queries(args.queries)
    embedder = timing_embedder()  # one model for every size; each pass embeds its queries
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            texts, vectors = corpus(size, args.real, console, args.data)
            path = Path(args.db_dir or tmp) / f"scale-{size}.db"
            path.unlink(missing_ok=True)
            mem = AsyncMemory(str(path), embedder=embedder, track_access=False)
            rate = await load(mem, texts, vectors, console)
            for preset in ("default", "fast"):
                lat = await time_searches(mem, qs, preset)
                rows.append(
                    {
                        "size": size,
                        "engine": f"sqlite exact ({preset})",
                        "load": rate,
                        "p50": statistics.median(lat),
                        "p95": pct(lat, 95),
                        "recall": None,
                    }
                )
            await mem.close()
            path.unlink(missing_ok=True)
    return rows


async def _schema_bytes(url: str, schema: str) -> int:
    """Heap, indexes and TOAST of every table of ``schema``."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            [schema],
        )
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def run_postgres(args: argparse.Namespace, console: Console) -> list[dict[str, Any]]:
    """HNSW versus exact on one PostgreSQL schema per size."""
    from memvault.backends.postgres import PostgresBackend
    from memvault.backends.postgres._candidates import exact_scans

    server = None
    url = args.url
    if url is None:
        import pgserver

        tmp = tempfile.mkdtemp(prefix="memvault-pg-")
        server = pgserver.get_server(tmp, cleanup_mode="stop")
        url = server.get_uri()
    rows = []
    qs = queries(args.queries)
    emb = timing_embedder()  # HNSW and exact passes both embed their queries
    try:
        for size in args.sizes:
            schema = f"scale_{size}"
            bulk = PostgresBackend(url, emb, schema=schema, hnsw=False)
            await bulk.connect()
            rate = float("nan")
            if not (args.reuse and await bulk.count(AGENT) == size):
                await bulk.clear(AGENT)
                texts, vectors = corpus(size, args.real, console, args.data)
                mem = AsyncMemory(backend=bulk, track_access=False)
                rate = await load(mem, texts, vectors, console)
            await bulk.disconnect()
            t = time.perf_counter()
            with console.status("building the HNSW index"):
                bound = {}
                if args.lexical_scan_rows is not None:
                    bound["lexical_scan_rows"] = args.lexical_scan_rows
                indexed = PostgresBackend(
                    url,
                    emb,
                    schema=schema,
                    hnsw=True,
                    exact_below=0,
                    index_build_memory=args.index_memory,
                    **bound,
                )
                await indexed.connect()
            build_s = time.perf_counter() - t
            disk = await _schema_bytes(url, schema)
            for exact in (False, True):
                lat = []
                tops: list[list[str]] = []
                for q in qs:
                    t = time.perf_counter()
                    # The default preset's pool for a search of limit 10 (10 x 8).
                    cands = await indexed.search_candidates(
                        AGENT, MemoryQuery(text=q), pool=80, dense=True, exact=exact
                    )
                    lat.append((time.perf_counter() - t) * 1000)
                    tops.append([i for i, _ in cands.dense[:10]])
                if exact:
                    exact_tops = tops
                    exact_lat = lat
                else:
                    hnsw_tops = tops
                    hnsw_lat = lat
            recall = statistics.mean(
                len(set(h) & set(e)) / max(len(e), 1)
                for h, e in zip(hnsw_tops, exact_tops, strict=True)
            )
            for name, lat, rec in (("hnsw", hnsw_lat, recall), ("exact", exact_lat, 1.0)):
                rows.append(
                    {
                        "size": size,
                        "engine": f"postgres {name} (candidates)",
                        "load": rate,
                        "p50": statistics.median(lat),
                        "p95": pct(lat, 95),
                        "p99": pct(lat, 99),
                        "recall": rec,
                        "build_s": build_s,
                        "disk_bytes": disk,
                    }
                )
            # The lexical side alone (BM25 over the query's terms, no dense candidates).
            lat = []
            for q in qs:
                t = time.perf_counter()
                await indexed.search_candidates(AGENT, MemoryQuery(text=q), pool=80, dense=False)
                lat.append((time.perf_counter() - t) * 1000)
            rows.append(
                {
                    "size": size,
                    "engine": "postgres lexical only (candidates)",
                    "load": rate,
                    "p50": statistics.median(lat),
                    "p95": pct(lat, 95),
                    "recall": None,
                }
            )
            full = AsyncMemory(backend=indexed, track_access=False)
            # The whole default search (query embedding, dense and lexical candidates,
            # neighbours, ranking), through the graph and with every dense scan exact: the
            # recall@10 of what the user gets, against the same search without the index.
            graph_ids: list[list[str]] = []
            exact_ids: list[list[str]] = []
            lat = await time_searches(full, qs, "default", graph_ids)
            with exact_scans():
                exact_lat = await time_searches(full, qs, "default", exact_ids)
            for name, times, rec in (
                ("hnsw", lat, overlap(graph_ids, exact_ids)),
                ("exact", exact_lat, 1.0),
            ):
                rows.append(
                    {
                        "size": size,
                        "engine": f"postgres {name} (default search)",
                        "load": rate,
                        "p50": statistics.median(times),
                        "p95": pct(times, 95),
                        "p99": pct(times, 99),
                        "recall": rec,
                        "disk_bytes": disk,
                        "client_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                    }
                )
            await indexed.disconnect()
    finally:
        if server is not None:
            server.cleanup()
    return rows


def main() -> None:
    """Parse arguments, run, print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--real", type=int, default=20_000, help="texts embedded for real")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--url", default=None, help="PostgreSQL URL (default: private pgserver)")
    ap.add_argument("--db-dir", default=None, help="where SQLite files go (default: temp)")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="PostgreSQL (with --url): keep a schema already holding the size's rows",
    )
    ap.add_argument(
        "--data", choices=("noise", "blend"), default="noise", help="synthetic vectors (see corpus)"
    )
    ap.add_argument(
        "--index-memory", default="1GB", help="PostgreSQL index_build_memory (2.5GB for 1M rows)"
    )
    ap.add_argument(
        "--lexical-scan-rows",
        type=int,
        default=None,
        help="PostgreSQL lexical_scan_rows (default: the backend's; 0: score every match)",
    )
    ap.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    console = Console(stderr=True)
    runner = run_sqlite if args.backend == "sqlite" else run_postgres
    rows = asyncio.run(runner(args, console))
    table = Table(title=f"memvault search at scale ({args.backend}, 2 cores)")
    for col in ("memories", "engine", "load rows/s", "p50 ms", "p95 ms", "recall@10"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            f"{r['size']:,}",
            r["engine"],
            f"{r['load']:.0f}",
            f"{r['p50']:.1f}",
            f"{r['p95']:.1f}",
            "-" if r["recall"] is None else f"{r['recall']:.3f}",
        )
    Console().print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=float) + "\n")
    for r in rows:
        if "build_s" in r:
            Console().print(f"HNSW build at {r['size']:,} rows: {r['build_s']:.0f} s")
            break


if __name__ == "__main__":
    main()
