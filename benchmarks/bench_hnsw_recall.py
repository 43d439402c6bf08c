"""HNSW recall@10 against exact search, by ef, for usearch (SQLite's graph) and pgvector.

    python benchmarks/bench_hnsw_recall.py --engine usearch --size 1000000 --data blend
    python benchmarks/bench_hnsw_recall.py --engine pgvector --size 1000000 --data blend

Vectors: the real all-MiniLM-L6-v2 document vectors and held-out query vectors that
``bench_ann.py embed`` saves under ``/tmp/memvault-ann`` (``real_docs.npy``,
``real_queries.npy``), completed to ``--size`` with synthetic ones:

* ``noise``: a real vector plus Gaussian noise (sigma 0.028), as ``bench_ann.py`` does. At 1M
  every real vector has ~36 noisy near-copies: many near-ties around each answer.
* ``blend``: a real vector pulled 15-50% towards another real one, plus light noise (sigma
  0.01). Nearest-neighbour cosines are like the noisy copies' (median ~0.89) without the
  clusters of copies.

usearch: M 16, ef_construction 128 (as ``_ann.AnnGraph``), 2 build threads. pgvector: a private
``pgserver`` (or ``MEMVAULT_TEST_POSTGRES_URL``), m 16, ef_construction 64 (as the PostgreSQL
backend's index), queries shaped like the backend's (``WHERE agent = ... ORDER BY embedding <=>
q LIMIT 80``, top 10 kept). Prints build time, then recall@10 and query p50/p95 for each ef.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

WORK = Path("/tmp/memvault-ann")
DIM = 384
EFS = (40, 80, 160, 320, 640)


def corpus(size: int, data: str, seed: int = 1) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    """``size`` unit vectors (the real ones first) and the real query vectors."""
    real = np.load(WORK / "real_docs.npy")
    queries = np.load(WORK / "real_queries.npy")
    if size <= len(real):
        return np.ascontiguousarray(real[:size]), queries
    rng = np.random.default_rng(seed)
    out = np.empty((size, DIM), dtype=np.float32)
    out[: len(real)] = real
    for start in range(len(real), size, 100_000):
        k = min(size, start + 100_000) - start
        if data == "noise":
            block = real[rng.integers(0, len(real), k)]
            block = block + rng.normal(scale=0.028, size=(k, DIM)).astype(np.float32)
        else:
            w = rng.uniform(0.15, 0.5, size=(k, 1)).astype(np.float32)
            a = real[rng.integers(0, len(real), k)]
            b = real[rng.integers(0, len(real), k)]
            block = (1 - w) * a + w * b + rng.normal(scale=0.01, size=(k, DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + k] = block
    return out, queries


def report(ef: int, hits: int, n_queries: int, latencies: list[float]) -> None:
    latencies.sort()
    p50 = latencies[len(latencies) // 2]
    p95 = latencies[int(len(latencies) * 0.95)]
    print(f"ef {ef}: recall@10 {hits / n_queries / 10:.3f}  p50 {p50:.2f} ms  p95 {p95:.2f} ms")


def run_usearch(
    x: NDArray[np.float32], queries: NDArray[np.float32], truth: list[set[int]]
) -> None:
    from usearch.index import Index

    index = Index(ndim=DIM, metric="ip", dtype="f32", connectivity=16, expansion_add=128)
    t0 = time.perf_counter()
    index.add(np.arange(len(x), dtype=np.uint64), x, threads=2)
    print(f"usearch build: {time.perf_counter() - t0:.0f} s", flush=True)
    for ef in EFS:
        index.expansion_search = ef  # type: ignore[misc]
        hits, latencies = 0, []
        for q, t in zip(queries, truth, strict=True):
            t1 = time.perf_counter()
            got = index.search(q, 10, threads=1).keys
            latencies.append((time.perf_counter() - t1) * 1000)
            hits += len(t & {int(k) for k in got})
        report(ef, hits, len(queries), latencies)


def run_pgvector(
    x: NDArray[np.float32], queries: NDArray[np.float32], truth: list[set[int]]
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import psycopg

    from postgres_server import postgres_server

    def literal(v: NDArray[np.float32]) -> str:
        return "[" + ",".join(f"{c:.6f}" for c in v) + "]"

    with postgres_server() as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS hnsw_recall")
        conn.execute("CREATE TABLE hnsw_recall (id bigint, agent text, embedding vector(384))")
        t0 = time.perf_counter()
        with conn.cursor().copy("COPY hnsw_recall (id, agent, embedding) FROM STDIN") as copy:
            for i, v in enumerate(x):
                copy.write_row((i, "a", literal(v)))
        print(f"loaded {len(x):,} rows: {time.perf_counter() - t0:.0f} s", flush=True)
        conn.execute("SET maintenance_work_mem = '2GB'")
        t0 = time.perf_counter()
        conn.execute(
            "CREATE INDEX ON hnsw_recall USING hnsw (embedding vector_cosine_ops)"
            " WITH (m = 16, ef_construction = 64)"
        )
        print(f"pgvector build: {time.perf_counter() - t0:.0f} s", flush=True)
        # As the backend does: with sorting off the planner walks the index even where it
        # would rather sort a scan (small tables).
        conn.execute("SET enable_sort = off")
        for ef in EFS:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            hits, latencies = 0, []
            for q, t in zip(queries, truth, strict=True):
                t1 = time.perf_counter()
                rows = conn.execute(
                    "SELECT id FROM hnsw_recall WHERE agent = 'a'"
                    " ORDER BY embedding <=> %s::vector LIMIT 80",
                    (literal(q),),
                ).fetchall()
                latencies.append((time.perf_counter() - t1) * 1000)
                hits += len(t & {int(r[0]) for r in rows[:10]})
            report(ef, hits, len(queries), latencies)
        conn.execute("DROP TABLE hnsw_recall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("usearch", "pgvector"), default="usearch")
    ap.add_argument("--size", type=int, default=300_000)
    ap.add_argument("--data", choices=("blend", "noise"), default="blend")
    args = ap.parse_args()
    x, queries = corpus(args.size, args.data)
    truth = [set(np.argsort(-(x @ q))[:10].tolist()) for q in queries]
    print(f"{args.engine}, {args.size:,} vectors ({args.data}), {len(queries)} real queries")
    (run_usearch if args.engine == "usearch" else run_pgvector)(x, queries, truth)


if __name__ == "__main__":
    main()
