"""Searches through 1 and 3 ``memvault serve`` processes over one PostgreSQL, at c8 and c32.

A private pgserver (or ``--url``), one schema, an admin key, ``--servers`` servers started as
``python -m memvault serve`` on loopback ports (one worker each), ``--memories`` memories for
``--agents`` agents ingested through ``POST /v1/memories/batch``; then, for each server count
(1: the first server only; N: every server, requests round-robin) and each concurrency level,
``--duration`` seconds of ``POST /v1/search`` with unique queries (so the query cache never
answers). Latency is per request on the client.

    python benchmarks/bench_multi_server.py --memories 20000 --servers 3 --concurrency 8,32

Writes ``benchmarks/results/multi_server.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import httpx
from bench_server import memory_texts, pct, pick_query, query_pool

from memvault.server.keys import open_key_store


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(db: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", db, "serve", "--port", str(port),
             "--log-level", "warning"],
            stdout=sink, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"server did not start: {log.read_text()}")


async def _ingest(url: str, key: str, memories: int, agents: list[str]) -> float:
    texts = memory_texts(memories)
    start = time.perf_counter()
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=600
    ) as c:
        for n, agent in enumerate(agents):
            mine = texts[n :: len(agents)]
            for j in range(0, len(mine), 500):
                r = await c.post(
                    "/v1/memories/batch",
                    json={
                        "agent_id": agent,
                        "items": [{"content": t} for t in mine[j : j + 500]],
                        "dedup": False,
                    },
                )
                r.raise_for_status()
    return memories / (time.perf_counter() - start)


async def _load(
    urls: list[str], key: str, agents: list[str], concurrency: int, duration: float
) -> dict[str, Any]:
    queries = query_pool(400)
    latencies: list[float] = []
    errors = 0
    turn = itertools.cycle(range(len(urls)))
    limits = httpx.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency)
    clients = [
        httpx.AsyncClient(
            base_url=u, headers={"Authorization": f"Bearer {key}"}, timeout=60, limits=limits
        )
        for u in urls
    ]
    deadline = time.perf_counter() + duration

    async def worker(seed: int) -> None:
        nonlocal errors
        rng = random.Random(seed)
        while time.perf_counter() < deadline:
            client = clients[next(turn)]
            body = {"agent_id": rng.choice(agents), "query": pick_query(rng, queries), "limit": 10}
            t0 = time.perf_counter()
            try:
                r = await client.post("/v1/search", json=body)
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            if ok:
                latencies.append((time.perf_counter() - t0) * 1000)
            else:
                errors += 1

    # A short warm-up, not measured.
    warm = time.perf_counter() + 2
    while time.perf_counter() < warm:
        await clients[0].post("/v1/search", json={"agent_id": agents[0], "query": "warm up"})
    start = time.perf_counter()
    await asyncio.gather(*(worker(s) for s in range(concurrency)))
    elapsed = time.perf_counter() - start
    for c in clients:
        await c.aclose()
    return {
        "servers": len(urls),
        "concurrency": concurrency,
        "searches_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(pct(latencies, 50), 1),
        "p95_ms": round(pct(latencies, 95), 1),
        "p99_ms": round(pct(latencies, 99), 1),
        "errors": errors,
    }


def run(url: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    db = f"{url}{'&' if '?' in url else '?'}schema=bench_multi"
    keys = open_key_store(db)
    _, key = keys.create(name="bench", scopes=["admin"])
    keys.close()
    servers = []
    try:
        for n in range(args.servers):
            port, log = _port(), root / f"server-{n}.log"
            servers.append((f"http://127.0.0.1:{port}", _start(db, port, log), log))
        for u, proc, log in servers:
            _wait(u, proc, log)
        agents = [f"agent-{n}" for n in range(args.agents)]
        rate = asyncio.run(_ingest(servers[0][0], key, args.memories, agents))
        print(f"ingest: {rate:.0f} memories/s through one server", flush=True)
        rows = []
        counts = sorted({1, args.servers})
        for count in counts:
            for level in args.concurrency:
                urls = [s[0] for s in servers[:count]]
                row = asyncio.run(_load(urls, key, agents, level, args.duration))
                print(json.dumps(row), flush=True)
                rows.append(row)
        return {
            "memories": args.memories,
            "agents": args.agents,
            "ingest_per_s": round(rate, 1),
            "cores": os.cpu_count(),
            "rows": rows,
        }
    finally:
        for _, proc, _ in servers:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=20_000)
    ap.add_argument("--agents", type=int, default=10)
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[8, 32])
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--url", default=None)
    ap.add_argument("--out", default="benchmarks/results/multi_server.json")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memvault-multi-"))
    if args.url:
        report = run(args.url, args, root)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver
        server = pgserver.get_server(root / "pg", cleanup_mode="stop")
        try:
            url = str(server.get_uri())
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            report = run(url, args, root)
        finally:
            server.cleanup()
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
