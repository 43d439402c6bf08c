"""Dedup and contradiction handling of the write planner on a generated noisy-write corpus.

    python benchmarks/bench_dedup.py [--writes 10000] [--seed 0] [--embedder hashing|minilm]

Replays the seeded corpus of ``memvault.write.corpus`` (base facts, noisy duplicates,
contradictions, chatter, with ground truth) through ``plan_write`` and prints how many
duplicates were left and how many contradictions were resolved (targets: <= 2% left).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from memvault.embeddings import HashingEmbedder, default_embedder
from memvault.write.corpus import evaluate_dedup, generate_corpus, run_corpus


def main() -> None:
    """Generate, embed, replay and score."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--writes", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    args = ap.parse_args()
    console = Console()
    corpus = generate_corpus(args.writes, seed=args.seed)
    embedder = HashingEmbedder(384) if args.embedder == "hashing" else default_embedder()
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
