"""Tenants at scale on one PostgreSQL: create, search and drop at 10, 100 and 1,000 tenants.

Each tenant is a schema of its own (memories and every side table). The service keeps at most
``--max-open`` tenants open (idle ones closed, see ``MemoryService``), so the connection count
stays bounded however many tenants exist. At each milestone:

* create: the first write of a new tenant (schema + tables + the write), p50 of ``--probe``
  new tenants;
* search (open): a search in a tenant whose store is open;
* search (reopen): a search in a tenant whose store was closed (reconnect + search);
* drop: ``MemoryService.drop_tenant`` (DROP SCHEMA ... CASCADE), then the tenant is made again;
* the catalog (pg_class rows), the database size and the server's connections.

    python benchmarks/bench_tenants.py --sizes 10,100,1000 [--url postgresql://...]

Without ``--url`` a private pgserver is started in a temporary directory. Writes a JSON report
to ``benchmarks/results/tenants.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from memvault import service as service_module
from memvault.api.auth import Actor
from memvault.config import load_config
from memvault.embeddings import default_embedder
from memvault.service import MemoryService


def _agent(tenant: str) -> Actor:
    return Actor.agent("bot", tenant=tenant, scopes=["read", "write"])


async def _timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return (time.perf_counter() - start) * 1000


def _catalog(url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(url) as conn:
        rel = conn.execute("SELECT count(*) FROM pg_class").fetchone()
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        conns = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        ).fetchone()
    assert rel and size and conns
    return {"pg_class_rows": int(rel[0]), "db_bytes": int(size[0]), "connections": int(conns[0])}


async def run(url: str, sizes: list[int], probe: int, max_open: int) -> dict[str, Any]:
    # Close idle tenants at once: the benchmark walks every tenant in a few minutes.
    service_module.TENANT_IDLE_SECONDS = 0.0
    service = MemoryService(
        load_config(url=url), embedder=default_embedder(), max_open_tenants=max_open
    )
    rng = random.Random(7)
    made: list[str] = []
    rows: list[dict[str, Any]] = []
    created_ms: list[float] = []

    async def create(name: str) -> float:
        ms = await _timed(
            service.call(
                _agent(name),
                "store",
                {"agent_id": "bot", "content": f"{name} keeps its invoices in the blue folder."},
            )
        )
        made.append(name)
        return ms

    try:
        for size in sizes:
            while len(made) < size - probe:
                created_ms.append(await create(f"co-{len(made):05d}"))
            probe_create = [await create(f"co-{len(made):05d}") for _ in range(probe)]
            opened = set(service.open_tenants)
            warm = [t for t in made if t in opened][-probe:]
            cold = [t for t in rng.sample(made, min(len(made), 4 * probe)) if t not in opened][
                :probe
            ]
            query = {"agent_id": "bot", "query": "where are the invoices"}
            search_open = [await _timed(service.call(_agent(t), "search", query)) for t in warm]
            search_reopen = [await _timed(service.call(_agent(t), "search", query)) for t in cold]
            victims = rng.sample(made[: size - probe], min(3, size - probe))
            drop_ms = []
            for victim in victims:
                drop_ms.append(await _timed(service.drop_tenant(victim)))
                made.remove(victim)
                await create(victim)
            row = {
                "tenants": size,
                "create_ms_p50": round(statistics.median(probe_create), 1),
                "search_open_ms_p50": round(statistics.median(search_open), 1)
                if search_open
                else None,
                "search_reopen_ms_p50": round(statistics.median(search_reopen), 1)
                if search_reopen
                else None,
                "drop_ms_p50": round(statistics.median(drop_ms), 1) if drop_ms else None,
                "open_tenants": len(service.open_tenants),
                **_catalog(url),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        await service.close()
    return {"max_open_tenants": max_open, "probe": probe, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--url", default=None, help="a PostgreSQL URL (default: private pgserver)")
    parser.add_argument("--probe", type=int, default=5)
    parser.add_argument("--max-open", type=int, default=32)
    parser.add_argument("--out", default="benchmarks/results/tenants.json")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if args.url:
        report = asyncio.run(run(args.url, sizes, args.probe, args.max_open))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
        root = Path(tempfile.mkdtemp(prefix="memvault-tenants-"))
        server = pgserver.get_server(root / "data", cleanup_mode="stop")
        try:
            url = str(server.get_uri())
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            report = asyncio.run(run(url, sizes, args.probe, args.max_open))
        finally:
            server.cleanup()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
