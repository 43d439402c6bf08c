"""Throughput and query latency of memvault's local embedders.

Run with ``python benchmarks/bench_embedder.py`` (``--help`` for options). For each runtime it
prints the one-off load time, documents per second for a batch of realistic ~20-word sentences
(1000 for ONNX, 200 for the much slower numpy reference) and the p50/p95 latency of single
uncached queries. Graphs are cached in ``--cache-dir`` (default: the usual memvault cache), so
the first run also measures the one-off graph build.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

from memvault.embeddings import NumpyMiniLMEmbedder, OnnxMiniLMEmbedder
from memvault.embeddings._base import MiniLMEmbedderBase

SUBJECTS = [
    "The user",
    "Our on-call engineer",
    "The customer from the Berlin office",
    "Alice",
    "The deployment pipeline",
    "My manager",
    "The nightly backup job",
    "The new intern",
    "The payment service",
    "Bob from accounting",
]
VERBS = [
    "mentioned that",
    "reported that",
    "asked whether",
    "confirmed that",
    "complained that",
    "noted during the standup that",
    "wrote in the ticket that",
    "explained over lunch that",
]
CLAUSES = [
    "the staging database ran out of disk space again after the last migration",
    "they prefer dark mode and vim keybindings in every editor they use",
    "the quarterly report should include churn numbers broken down by region",
    "the flight to Lisbon was moved to Thursday morning because of the strike",
    "password resets are failing for accounts created before March",
    "the vegetarian lasagna recipe needs less salt and a longer baking time",
    "invoices above ten thousand euros require a second approval from finance",
    "the kubernetes cluster autoscaler keeps evicting the cache pods at night",
    "their daughter starts school next week and mornings will be busy",
    "the API latency doubled after enabling verbose request logging",
    "the marketing team wants the launch email translated into Spanish",
    "the old laptop battery only lasts about forty minutes now",
]
TAILS = [
    "",
    "so please follow up tomorrow.",
    "which nobody expected.",
    "according to the monitoring dashboard.",
    "and we should document it in the wiki.",
    "before the end of the sprint.",
]


def make_sentences(n: int, seed: int = 7) -> list[str]:
    """Return ``n`` deterministic, varied, realistic sentences of roughly twenty words."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(CLAUSES), rng.choice(TAILS)]
        out.append(" ".join(p for p in parts if p))
    return out


def bench(embedder: MiniLMEmbedderBase, docs: list[str], queries: list[str]) -> None:
    """Print load time, throughput on ``docs`` and single-query latency on ``queries``."""
    started = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - started
    embedder.embed_documents(docs[:8])  # warm-up: first run allocates the arena and plans kernels

    started = time.perf_counter()
    embedder.embed_documents(docs)
    rate = len(docs) / (time.perf_counter() - started)

    latencies = []
    for query in queries:
        t0 = time.perf_counter()
        # embed_documents bypasses the query cache, so every iteration really runs the model.
        embedder.embed_documents([query])
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    p50 = statistics.median(latencies)
    p95 = latencies[min(len(latencies) - 1, round(0.95 * len(latencies)))]
    print(
        f"{embedder.runtime:<13} load {load_s:6.2f} s | {len(docs):4d} docs: {rate:7.1f} sent/s"
        f" | query p50 {p50:6.2f} ms  p95 {p95:6.2f} ms",
        flush=True,
    )


def main() -> int:
    """Parse arguments and run the benchmark for each runtime."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=1000, help="documents for the ONNX runtimes")
    parser.add_argument("--numpy-docs", type=int, default=200, help="documents for numpy")
    parser.add_argument("--queries", type=int, default=200, help="single queries to time")
    parser.add_argument("--cache-dir", default=None, help="where built ONNX graphs are cached")
    parser.add_argument("--skip-numpy", action="store_true", help="skip the numpy reference")
    args = parser.parse_args()

    docs = make_sentences(args.docs)
    queries = make_sentences(args.queries, seed=11)
    words = statistics.mean(len(s.split()) for s in docs)
    print(
        f"cpu_count={os.cpu_count()} python={sys.version.split()[0]} "
        f"docs={len(docs)} mean_words={words:.1f} queries={len(queries)}"
    )
    bench(OnnxMiniLMEmbedder(quantize=True, cache_dir=args.cache_dir), docs, queries)
    bench(OnnxMiniLMEmbedder(quantize=False, cache_dir=args.cache_dir), docs, queries)
    if not args.skip_numpy:
        bench(NumpyMiniLMEmbedder(), docs[: args.numpy_docs], queries[:50])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
