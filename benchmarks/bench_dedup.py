"""Dedup and contradiction handling of the write planner on a generated noisy-write corpus.

    python benchmarks/bench_dedup.py [--writes 10000] [--seed 0] [--embedder hashing|minilm]
                                     [--store sqlite|memory]

Replays the seeded corpus of ``_dedup_corpus`` (base facts, noisy duplicates,
contradictions, chatter, with ground truth) through ``plan_write`` and prints how many
duplicates were left and how many contradictions were resolved (targets: <= 2% left).
With ``--store``, the corpus goes through the real write path instead: ``AsyncMemory.write``
on a fresh SQLite file (or the in-memory store), neighbours found by the store's own search.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import numpy as np
from _dedup_corpus import Corpus, evaluate_dedup, generate_corpus, run_corpus
from rich.console import Console
from rich.table import Table

from memvault import AsyncMemory
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.embeddings import HashingEmbedder, default_embedder
from memvault.protocols import Embedder
from memvault.write import WriteDecision


async def _replay_store(
    corpus: Corpus, embedder: Embedder, store: str
) -> tuple[list[WriteDecision], list[str | None]]:
    """Write the corpus through ``AsyncMemory.write``; decisions and the ids entries got."""
    from rich.progress import track

    decisions: list[WriteDecision] = []
    ids: list[str | None] = []
    # No caps: the corpus measures dedup, not eviction.
    config = MemvaultConfig(options=MemoryOptionsConfig(max_memories_per_agent=None))
    with tempfile.TemporaryDirectory() as tmp:
        url = str(Path(tmp) / "dedup.db") if store == "sqlite" else "memory://"
        async with AsyncMemory(url, config=config, embedder=embedder) as mem:
            for w in track(corpus.writes, description="writing"):
                out = await mem.write(
                    w.content, agent_id=w.agent_id, category=w.category, created_at=w.created_at
                )
                decisions.append(out.decision)
                ids.append(out.id if out.stored else None)
    return decisions, ids


def main() -> None:
    """Generate, embed, replay and score."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--writes", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    ap.add_argument("--store", choices=("sqlite", "memory"), default=None)
    args = ap.parse_args()
    console = Console()
    corpus = generate_corpus(args.writes, seed=args.seed)
    embedder = HashingEmbedder(384) if args.embedder == "hashing" else default_embedder()
    if args.store is not None:
        t0 = time.perf_counter()
        decisions, ids = asyncio.run(_replay_store(corpus, embedder, args.store))
        seconds = time.perf_counter() - t0
        store_scores = evaluate_dedup(decisions, corpus, ids=ids)
        table = Table(title=f"AsyncMemory.write on {args.store}: {len(corpus):,} noisy writes")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for name, value in sorted(store_scores.items()):
            table.add_row(name, f"{value:.3f}")
        table.add_row("writes/s", f"{len(corpus) / seconds:.0f}")
        console.print(table)
        return
    t0 = time.perf_counter()
    vectors = np.asarray(embedder.embed_documents([w.content for w in corpus.writes]))
    embed_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    decisions = run_corpus(corpus, vectors)
    replay_s = time.perf_counter() - t0
    scores = evaluate_dedup(decisions, corpus)
    table = Table(title=f"write planner on {len(corpus):,} noisy writes (seed {args.seed})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in sorted(scores.items()):
        table.add_row(name, f"{value:.3f}")
    table.add_row("embed seconds", f"{embed_s:.1f}")
    table.add_row("replay seconds", f"{replay_s:.1f}")
    console.print(table)
    console.print(f"corpus: {corpus.counts()}")


if __name__ == "__main__":
    main()
