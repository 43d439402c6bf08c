"""Conversation store benchmark (issue 18): ingest rate, backfill time, response cache hit rate.

Three measurements on a fresh SQLite file (or ``--db``):

1. **Ingest**: ``--messages`` turns appended one message per call through the embedding queue
   (``EmbeddingQueue.append``). A write returns once the message is durable, before its vector
   exists; reported: appends per second, and the time until the queue has embedded everything.
2. **Backfill**: the same number of messages written with no queue (as a crash, or a store
   filled before the queue was enabled, would leave them), then ``backfill()`` from scratch,
   as at start-up; reported: seconds and messages per second.
3. **Response cache**: a repeated workload (``--prompts`` distinct prompts asked ``--repeats``
   times, shuffled) through :class:`memvault.llm.cache.CachingLLM` in front of a scripted LLM;
   reported: hit rate and provider calls saved.

Usage::

    .venv/bin/python benchmarks/bench_conversation.py --messages 100000 [--embedder minilm]

Not a test: timings depend on the machine (report the CPU, and the embedder).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from memvault.config.conversation import EmbeddingQueueConfig
from memvault.conversation.queue import EmbeddingQueue
from memvault.conversation.sqlite import SQLiteConversationStore
from memvault.embeddings import create_embedder
from memvault.llm.cache import CachingLLM
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage

_WORDS = (
    "deploy staging cluster rollback invoice cents tea coffee parser ticket release build "
    "database index latency budget retry policy summary question decision owner deadline"
).split()


def _text(rng: random.Random, i: int) -> str:
    return f"turn {i}: " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 24)))


async def ingest(path: Path, n: int, embedder: Any, config: EmbeddingQueueConfig) -> dict[str, Any]:
    rng = random.Random(1)
    store = SQLiteConversationStore(path)
    queue = EmbeddingQueue(store, embedder, config)
    await queue.start()
    started = time.perf_counter()
    max_depth = 0
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        await queue.append("bench", f"s{i // 200}", [{"role": role, "content": _text(rng, i)}])
        if i % 1000 == 0:
            max_depth = max(max_depth, queue.stats().depth)
    appended = time.perf_counter() - started
    await queue.flush()
    drained = time.perf_counter() - started
    stats = queue.stats()
    await queue.close()
    left = await store.count_unembedded()
    await store.close()
    return {
        "messages": n,
        "append_seconds": round(appended, 2),
        "appends_per_second": round(n / appended, 1),
        "all_embedded_seconds": round(drained, 2),
        "embedded_per_second": round(n / drained, 1),
        "max_queue_depth_seen": max_depth,
        "batches": stats.batches,
        "left_unembedded": left,
    }


async def backfill(
    path: Path, n: int, embedder: Any, config: EmbeddingQueueConfig
) -> dict[str, Any]:
    rng = random.Random(2)
    store = SQLiteConversationStore(path)
    started = time.perf_counter()
    chunk = 500
    for i in range(0, n, chunk):
        await store.append(
            "bench",
            f"b{i // 200}",
            [{"role": "user", "content": _text(rng, j)} for j in range(i, min(n, i + chunk))],
        )
    written = time.perf_counter() - started
    queue = EmbeddingQueue(store, embedder, config)
    started = time.perf_counter()
    stored = await queue.backfill()
    seconds = time.perf_counter() - started
    await queue.close()
    left = await store.count_unembedded()
    await store.close()
    return {
        "messages": n,
        "write_seconds_without_queue": round(written, 2),
        "backfill_seconds": round(seconds, 2),
        "backfilled_per_second": round(stored / seconds, 1) if seconds else None,
        "stored": stored,
        "left_unembedded": left,
    }


async def cache_workload(prompts: int, repeats: int, embedder: Any) -> dict[str, Any]:
    rng = random.Random(3)
    llm = ScriptedLLM([lambda m: "reply to " + m[-1].content], repeat_last=True)
    cache = CachingLLM(llm, embedder=embedder)
    asks = [
        f"Extract the durable facts of episode {i}: "
        + " ".join(rng.choice(_WORDS) for _ in range(12))
        for i in range(prompts)
    ]
    workload = [a for a in asks for _ in range(repeats)]
    rng.shuffle(workload)
    started = time.perf_counter()
    for text in workload:
        await cache.complete([ChatMessage(role="user", content=text)])
    seconds = time.perf_counter() - started
    stats = cache.stats()
    return {
        "requests": len(workload),
        "distinct_prompts": prompts,
        "provider_calls": len(llm.calls),
        "hit_rate": round(stats.hit_rate, 4),
        "semantic_hits": stats.semantic_hits,
        "seconds": round(seconds, 2),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--embedder", default="minilm", help="create_embedder spec")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batch-timeout-ms", type=int, default=200)
    parser.add_argument("--backfill-batch", type=int, default=512)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where the SQLite files go")
    parser.add_argument("--skip", nargs="*", default=[], choices=["ingest", "backfill", "cache"])
    args = parser.parse_args()
    embedder = create_embedder(args.embedder)
    config = EmbeddingQueueConfig(
        enabled=True,
        batch_size=args.batch_size,
        batch_timeout_ms=args.batch_timeout_ms,
        backfill_batch_size=args.backfill_batch,
        max_queue=max(10_000, args.messages),
        backfill_on_start=False,
    )
    out: dict[str, Any] = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
        "embedder": embedder.model_id,
    }
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        if "ingest" not in args.skip:
            out["ingest"] = await ingest(Path(tmp) / "ingest.db", args.messages, embedder, config)
            print(json.dumps({"ingest": out["ingest"]}), flush=True)
        if "backfill" not in args.skip:
            out["backfill"] = await backfill(
                Path(tmp) / "backfill.db", args.messages, embedder, config
            )
            print(json.dumps({"backfill": out["backfill"]}), flush=True)
    if "cache" not in args.skip:
        out["response_cache"] = await cache_workload(args.prompts, args.repeats, embedder)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
