"""Operational records (seed 001) at scale: write rates and key-query latency.

Fills a store with N cost records, N messages, N audit entries and N/10 tasks (plus a few
thousand heartbeats, agent states and settings) through the public ``save_many`` (validated
models, batches of 5,000), times 500 single acknowledged ``save()`` calls, then runs each key
query with fresh random parameters and reports p50/p95/p99::

    python benchmarks/bench_persistence.py --backend sqlite --rows 100000
    python benchmarks/bench_persistence.py --backend postgres --rows 1000000

PostgreSQL is a private server from ``pgserver`` (``tests/postgres_server.py``) unless
``MEMVAULT_TEST_POSTGRES_URL`` names one. Results go to
``benchmarks/results/persistence-<backend>-<rows>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from memvault.persistence import SQLPersistence, create_persistence  # noqa: E402
from memvault.persistence import models as pm  # noqa: E402

AGENTS = 1000
MODELS = 20
CHANNELS = 10_000
PROJECTS = 50
DAYS = 90
BATCH = 5000
NOW = datetime(2026, 12, 1, tzinfo=UTC)
ACTIONS = ("tool_call", "file_read", "file_write", "http_request", "shell", "memory_read")


def _agent(rng: random.Random) -> str:
    return f"agent-{rng.randrange(AGENTS)}"


def _when(rng: random.Random) -> datetime:
    return NOW - timedelta(seconds=rng.uniform(0, DAYS * 86400))


def _costs(rng: random.Random, n: int) -> list[pm.CostRecord]:
    return [
        pm.CostRecord(
            agent_id=_agent(rng),
            task_id=f"task-{rng.randrange(max(1, n // 10))}",
            model=f"model-{rng.randrange(MODELS)}",
            input_tokens=rng.randrange(50, 4000),
            output_tokens=rng.randrange(0, 800),
            latency_ms=rng.uniform(20, 2000),
            cost=rng.uniform(0, 0.05),
            timestamp=_when(rng),
        )
        for _ in range(n)
    ]


def _messages(rng: random.Random, n: int) -> list[pm.Message]:
    return [
        pm.Message(
            channel=f"channel-{rng.randrange(CHANNELS)}",
            agent_id=_agent(rng),
            sender=_agent(rng),
            role=rng.choice(("user", "assistant", "tool")),
            content=f"message {i} about deploy step {rng.randrange(100)}",
            timestamp=_when(rng),
        )
        for i in range(n)
    ]


def _audits(rng: random.Random, n: int) -> list[pm.AuditEntry]:
    return [
        pm.AuditEntry(
            agent_id=_agent(rng),
            action_type=rng.choice(ACTIONS),
            verdict=rng.choice(list(pm.AuditVerdict)),
            risk_level=rng.choices(list(pm.RiskLevel), weights=(70, 20, 8, 2))[0],
            detail="checked by policy",
            timestamp=_when(rng),
        )
        for _ in range(n)
    ]


def _tasks(rng: random.Random, n: int) -> list[pm.Task]:
    return [
        pm.Task(
            title=f"task {i}",
            status=rng.choice(list(pm.TaskStatus)),
            assigned_to=_agent(rng),
            project=f"project-{rng.randrange(PROJECTS)}",
            created_at=_when(rng),
        )
        for i in range(n)
    ]


async def _fill(
    repo: Any, make: Callable[[random.Random, int], list[Any]], rng: random.Random, n: int
) -> float:
    """Records per second of ``save_many`` over ``n`` records (generation not timed)."""
    spent = 0.0
    done = 0
    while done < n:
        batch = make(rng, min(BATCH, n - done))
        start = time.perf_counter()
        await repo.save_many(batch)
        spent += time.perf_counter() - start
        done += len(batch)
        print(f"\r  {repo.entity.name}: {done}/{n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return n / spent if spent else 0.0


async def _timed(
    fn: Callable[[random.Random], Awaitable[Any]], rng: random.Random, reps: int
) -> dict[str, float]:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        await fn(rng)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
        "p99_ms": round(times[int(0.99 * (len(times) - 1))], 3),
    }


def _queries(ops: SQLPersistence) -> dict[str, Callable[[random.Random], Awaitable[Any]]]:
    def since30() -> datetime:
        return NOW - timedelta(days=30)

    return {
        "tasks by status": lambda r: ops.tasks.list_tasks(
            status=r.choice(list(pm.TaskStatus)), limit=100, offset=r.randrange(0, 500)
        ),
        "tasks by assignee": lambda r: ops.tasks.list_tasks(assigned_to=_agent(r), limit=100),
        "tasks by project": lambda r: ops.tasks.list_tasks(
            project=f"project-{r.randrange(PROJECTS)}", limit=100
        ),
        "costs by agent": lambda r: ops.cost_records.query(agent_id=_agent(r), limit=100),
        "cost aggregate by agent": lambda r: ops.cost_records.aggregate(agent_id=_agent(r)),
        "cost summary by model (30 d)": lambda r: ops.cost_records.summarize(
            "model", since=since30() - timedelta(hours=r.randrange(48))
        ),
        "cost summary by day (30 d)": lambda r: ops.cost_records.summarize(
            "day", since=since30() - timedelta(hours=r.randrange(48))
        ),
        "message history (50)": lambda r: ops.messages.get_history(
            f"channel-{r.randrange(CHANNELS)}", limit=50
        ),
        "audit by agent + 7 d": lambda r: ops.audit_entries.query(
            agent_id=_agent(r), since=NOW - timedelta(days=r.randrange(7, 90)), limit=100
        ),
        "audit high risk newest (100)": lambda r: ops.audit_entries.query(
            risk_level=r.choice((pm.RiskLevel.HIGH, pm.RiskLevel.CRITICAL)),
            newest_first=True,
            limit=100,
        ),
        "heartbeats stale": lambda r: ops.heartbeats.stale(
            timedelta(minutes=r.randrange(5, 60)), now=NOW
        ),
        "agent states active": lambda _r: ops.agent_states.active(),
        "setting get": lambda r: ops.settings.get(
            f"ns-{r.randrange(20)}", f"key-{r.randrange(100)}"
        ),
    }


async def _disk(ops: SQLPersistence, backend: str, where: str) -> int:
    if backend == "sqlite":
        path = Path(where)
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    rows = await ops._db.fetch(
        "size",
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'ops_%'",
    )
    return int(rows[0][0])


async def run(backend: str, rows: int, *, seed: int, reps: int, url: str) -> dict[str, Any]:
    """Fill, time, and return the results (see the module docstring)."""
    rng = random.Random(seed)
    ops = create_persistence(url=url)
    async with ops:
        writes = {
            "cost_records": await _fill(ops.cost_records, _costs, rng, rows),
            "messages": await _fill(ops.messages, _messages, rng, rows),
            "audit_entries": await _fill(ops.audit_entries, _audits, rng, rows),
            "tasks": await _fill(ops.tasks, _tasks, rng, max(1, rows // 10)),
        }
        await ops.heartbeats.save_many(
            pm.Heartbeat(execution_id=f"exec-{i}", agent_id=_agent(rng), beat_at=_when(rng))
            for i in range(2000)
        )
        await ops.agent_states.save_many(
            pm.AgentRuntimeState(
                agent_id=f"agent-{i}", status=rng.choice(list(pm.AgentStatus)), updated_at=NOW
            )
            for i in range(AGENTS)
        )
        await ops.settings.save_many(
            pm.Setting(namespace=f"ns-{i // 100}", key=f"key-{i % 100}", value={"v": i})
            for i in range(2000)
        )
        sample = _costs(rng, 500)
        start = time.perf_counter()
        for record in sample:
            await ops.cost_records.save(record)
        single = len(sample) / (time.perf_counter() - start)
        queries = {}
        for name, fn in _queries(ops).items():
            await fn(rng)  # warm the cache and the plan once
            # The 30-day summaries aggregate a third of the table per call: fewer repetitions.
            queries[name] = await _timed(
                fn, rng, reps if "summary" not in name else max(5, reps // 10)
            )
            print(f"  {name}: {queries[name]}", file=sys.stderr)
        disk = await _disk(ops, backend, url)
    return {
        "backend": backend,
        "rows": rows,
        "seed": seed,
        "reps": reps,
        "bulk_records_per_s": {k: round(v) for k, v in writes.items()},
        "single_save_per_s": round(single),
        "queries": queries,
        "disk_bytes": disk,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def table(result: dict[str, Any]) -> str:
    """The result as Markdown."""
    lines = [
        f"### {result['backend']}, {result['rows']:,} rows per kind",
        "",
        "| write | records/s |",
        "|---|---:|",
        *(f"| bulk {k} | {v:,} |" for k, v in result["bulk_records_per_s"].items()),
        f"| single save (acknowledged) | {result['single_save_per_s']:,} |",
        "",
        "| query | p50 ms | p95 ms | p99 ms |",
        "|---|---:|---:|---:|",
        *(
            f"| {k} | {v['p50_ms']} | {v['p95_ms']} | {v['p99_ms']} |"
            for k, v in result["queries"].items()
        ),
        "",
        f"disk {result['disk_bytes'] / 1e6:.0f} MB, peak RSS {result['peak_rss_mb']} MB",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run from the command line (``--help``); returns the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None, help="JSON file (default: results/)")
    args = parser.parse_args(argv)
    out = (
        args.out or ROOT / "benchmarks" / "results" / f"persistence-{args.backend}-{args.rows}.json"
    )
    with tempfile.TemporaryDirectory(prefix="memvault-bench-ops-") as tmp:
        if args.backend == "sqlite":
            url = str(Path(tmp) / "ops.db")
            result = asyncio.run(run("sqlite", args.rows, seed=args.seed, reps=args.reps, url=url))
        else:
            from postgres_server import postgres_server

            with postgres_server() as server:
                sep = "&" if "?" in server else "?"
                url = f"{server}{sep}schema=bench_ops_{args.rows}"
                result = asyncio.run(
                    run("postgres", args.rows, seed=args.seed, reps=args.reps, url=url)
                )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return result


if __name__ == "__main__":
    main()
