"""The process the fault campaign kills: runs one operation on a store, logging what it acked.

Usage: python _driver.py OP STORE_DB WORKDIR SEED

It prints ``ready`` once its setup is done (the kill comes at a random moment after that) and
appends one JSON line per acknowledged write to WORKDIR/acks.jsonl, written with os.write right
after the call returned: a SIGKILL cannot lose a line the kernel already has. One-shot
operations (import, migrate, reindex) leave WORKDIR/done when they finish before the kill.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from memvault import Memory
from memvault.config import MemvaultConfig

AGENT = "ops"
WORDS = (
    "disk alarm backup nightly espresso standup release train peanuts lunch vpn endpoint "
    "rota pager incident rollback canary latency budget schema index"
).split()


def _ack(fd: int, **record: Any) -> None:
    os.write(fd, (json.dumps(record) + "\n").encode())


def _text(rng: random.Random, i: int) -> str:
    return f"Note {i}: " + " ".join(rng.choice(WORDS) for _ in range(8)) + "."


def _memory(db: str, **options: Any) -> Memory:
    cfg = MemvaultConfig.model_validate(
        {"level": "persistent", "storage": {"url": db}, "options": options}
    )
    return Memory(db, config=cfg)


def _ready() -> None:
    print("ready", flush=True)


def main() -> None:
    op, db, work, seed = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    fd = os.open(work / "acks.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    if op == "add":
        mem = _memory(db, dedup=False)
        _ready()
        for i in range(1_000_000):
            _ack(fd, id=mem.add(_text(rng, i), agent_id=AGENT))
    elif op == "add_many":
        mem = _memory(db, dedup=False)
        _ready()
        for i in range(1_000_000):
            ids = mem.add_many(
                [{"content": _text(rng, i * 10 + j)} for j in range(10)], agent_id=AGENT
            )
            for mid in ids:
                _ack(fd, id=mid)
    elif op == "dedup_supersede":
        mem = _memory(db, dedup=True)
        _ready()
        for i in range(1_000_000):
            text = _text(rng, i)
            first = mem.add(text, agent_id=AGENT)
            _ack(fd, id=first)
            _ack(fd, id=mem.add(text, agent_id=AGENT), dedup_of=first)  # a repeat: same id
            newer = mem.update(first, agent_id=AGENT, content=text + " Updated.")
            _ack(fd, id=newer.id, supersedes=first)
    elif op == "consolidate":
        mem = _memory(db, dedup=False)
        for i in range(40):
            mem.add(_text(rng, i), agent_id=AGENT, category="episodic")
        _ready()
        for i in range(40, 1_000_000):
            for j in range(5):
                _ack(fd, id=mem.add(_text(rng, i * 5 + j), agent_id=AGENT, category="episodic"))
            # Memories written a moment ago: merged only because the minimum age is lifted.
            mem.consolidate(agent_id=AGENT, min_age_days=0)
            _ack(fd, consolidated=True)
    elif op == "sweep":
        mem = _memory(db, dedup=False, max_memories_per_agent=30)
        _ready()
        for i in range(1_000_000):
            ids = mem.add_many(
                [{"content": _text(rng, i * 8 + j)} for j in range(8)], agent_id=AGENT
            )
            for mid in ids:
                _ack(fd, id=mid)
            report = mem.sweep(agent_id=AGENT)
            _ack(fd, swept=str(report)[:80])
    elif op == "import":
        source = work / "export.json"
        order = [e["id"] for e in json.loads(source.read_text())]
        mem = _memory(db, dedup=False)

        acked_so_far = [0]

        def imported(done: int, total: int) -> None:
            for mid in order[acked_so_far[0] : done]:
                _ack(fd, id=mid)
            acked_so_far[0] = done

        _ready()
        mem.import_(source, batch_size=10, on_progress=imported)
        (work / "done").touch()
        time.sleep(600)
    elif op == "migrate":
        import sqlite3

        from memvault.migrate import migrate_urls

        with sqlite3.connect(work / "source.db") as conn:
            order = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY rowid")]
        acked = [0]

        def copied(done: int, total: int) -> None:
            for mid in order[acked[0] : done]:
                _ack(fd, id=mid)
            acked[0] = done

        _ready()
        asyncio.run(migrate_urls(str(work / "source.db"), db, batch_size=5, progress=copied))
        (work / "done").touch()
        time.sleep(600)
    elif op == "reindex":
        from memvault.backends.factory import open_backend
        from memvault.embeddings import default_embedder
        from memvault.reindex import reindex

        embedder = default_embedder()
        store = open_backend(db, embedder=embedder)
        _ready()
        asyncio.run(reindex(store, embedder, batch_size=20))
        _ack(fd, reindexed=True)
        (work / "done").touch()
        time.sleep(600)
    else:
        raise SystemExit(f"unknown op {op}")


if __name__ == "__main__":
    main()
