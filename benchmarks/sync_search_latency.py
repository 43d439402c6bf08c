"""Search latency of the sync ``Memory`` (the README's API) on LoCoMo, as one user sees it.

``memvault bench locomo`` times ``AsyncMemory.search``; most applications call the blocking
``Memory`` instead, which runs the async core on a private event-loop thread. This times that
path: each of the first ``--conversations`` conversations is stored in its own SQLite file with
``Memory.add_many``, then every question of categories 1-4 is asked ``--rounds`` times through
``Memory.search(limit=10)`` (later rounds' texts marked, so the query-embedding cache never
answers; recall is of the first round), with access tracking on or off. It prints one line in
the format of ``benchmarks/latency_ab.sh``, which runs it for two builds with ``RUNNER=sync``:

    python benchmarks/sync_search_latency.py path/to/locomo10.json [--conversations 3]
        [--rounds 3] [--track-access]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from memvault import Memory
from memvault.bench._runner import bench_config
from memvault.bench.locomo import load_locomo, turn_items
from memvault.bench.metrics import recall_at_k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="locomo10.json")
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--track-access", action="store_true", help="count hits (the default)")
    args = parser.parse_args()
    conversations = load_locomo(args.data).conversations[: args.conversations]
    latencies: list[float] = []
    recalls: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, conv in enumerate(conversations):
            with Memory(
                str(Path(tmp) / f"c{n}.db"), config=bench_config(), track_access=args.track_access
            ) as mem:
                mem.add_many(turn_items(conv), agent_id="bench", dedup=False)
                questions = [q for q in conv.qas if q.category in (1, 2, 3, 4) and q.evidence]
                for r in range(args.rounds):
                    for qa in questions:
                        # Later rounds are marked, so the query-embedding cache never answers.
                        text = qa.question if r == 0 else f"{qa.question} ({r})"
                        start = time.perf_counter()
                        hits = mem.search(text, agent_id="bench", limit=10)
                        latencies.append((time.perf_counter() - start) * 1000.0)
                        if r == 0:
                            ranked = [str(h.metadata.extra.get("dia_id", "")) for h in hits]
                            recalls.append(recall_at_k(qa.evidence, ranked, 10))
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    print(
        f"search p50 {statistics.median(latencies):.2f} ms p95 {p95:.2f} ms, "
        f"R@10 {statistics.mean(recalls):.4f}"
    )


if __name__ == "__main__":
    main()
