"""Add throughput and search latency of the embedded default (SQLite + bundled model).

    python benchmarks/bench_store.py [--sizes 10000,100000] [--queries 200] [--db-dir DIR]

For each size: memories are added with ``add_many`` in batches of 256 (embedding included),
then ``search`` is timed end to end (query embedding + candidates + ranking) on distinct queries.
Targets (DESIGN section 9): >= 300 memories/s batched; search p50 <= 15 ms at 100k.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _corpus import memories, queries
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from memvault import Memory
from memvault.embeddings import default_embedder

BATCH = 256


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of values."""
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def run(size: int, n_queries: int, db_dir: Path, console: Console) -> dict[str, float]:
    """Fill a fresh store with ``size`` memories and time adds and searches."""
    texts = memories(size)
    path = db_dir / f"bench-{size}.db"
    path.unlink(missing_ok=True)
    with Memory(str(path), embedder=default_embedder(), track_access=False) as mem:
        start = time.perf_counter()
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task(f"adding {size:,}", total=size)
            for i in range(0, size, BATCH):
                chunk = texts[i : i + BATCH]
                mem.add_many([{"content": t} for t in chunk], agent_id="bench")
                progress.advance(task, len(chunk))
        add_s = time.perf_counter() - start
        qs = queries(n_queries)
        mem.search("warm up the matrix", agent_id="bench")
        lat: list[float] = []
        for q in qs:
            t0 = time.perf_counter()
            mem.search(q, agent_id="bench", limit=10)
            lat.append((time.perf_counter() - t0) * 1000)
    return {
        "size": size,
        "adds_per_s": size / add_s,
        "p50": statistics.median(lat),
        "p95": pct(lat, 95),
        "mb": path.stat().st_size / 1_048_576,
    }


def main() -> None:
    """Parse arguments, run every size, print a table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--db-dir", type=Path, default=None)
    args = ap.parse_args()
    console = Console()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        db_dir = args.db_dir or Path(tmp)
        rows = [run(n, args.queries, db_dir, console) for n in sizes]
    table = Table(title="memvault embedded default (SQLite + MiniLM int8, 2 cores)")
    for col in ("memories", "add (mem/s, batched)", "search p50 ms", "search p95 ms", "file MiB"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            f"{int(r['size']):,}",
            f"{r['adds_per_s']:.0f}",
            f"{r['p50']:.2f}",
            f"{r['p95']:.2f}",
            f"{r['mb']:.0f}",
        )
    console.print(table)


if __name__ == "__main__":
    main()
