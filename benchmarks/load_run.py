"""Bounded load run of ``memvault serve``: a fixed rate below capacity, with RSS over time.

    python benchmarks/load_run.py [--duration 600] [--fraction 0.8] [--rate R]
        [--add-share 0.1] [--memories 2000] [--capacity-seconds 20] [--out build/load_run.json]

Loopback only, and it stops by itself: a private ``memvault serve`` (temporary SQLite store, an
admin key made with the real CLI, a free port on 127.0.0.1; benchmarks/bench_server.py's
``SpawnedServer``) is started, seeded with ``--memories`` memories, then:

1. capacity: unless ``--rate`` is given, ``--capacity-concurrency`` clients send the mixed
   workload back to back for ``--capacity-seconds``; the requests/s they reach is the capacity;
2. load: requests are *scheduled* at ``--fraction`` of that capacity (open loop: one every
   1/rate seconds whether or not earlier ones answered, at most ``--max-in-flight`` at a time)
   for ``--duration`` seconds; ``--add-share`` of them are ``POST /v1/memories``, the rest
   ``POST /v1/search``;
3. the server's RSS (process and children: psutil when installed, else /proc/<pid>/status VmRSS)
   is sampled every ``--sample-every`` seconds for the whole run.

Printed and written to ``--out``: errors (non-2xx answers and transport failures), p50/p99/max
latency, the achieved rate, how late the scheduler fell behind, and the RSS series with its
growth over the second half of the run (a leak grows steadily; adds grow the store a little).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from bench_server import (
    SpawnedServer,
    agent_ids,
    memory_texts,
    pct,
    pick_query,
    proc_status_mb,
    query_pool,
)

#: build/load_run.json at the repository root, wherever the script is run from.
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "build" / "load_run.json"

try:  # psutil is optional: /proc is read without it
    import psutil
except ImportError:  # pragma: no cover - depends on the environment
    psutil = None


def rss_mb(pid: int) -> float | None:
    """The RSS of ``pid`` and its children in MiB (psutil if installed, else /proc)."""
    if psutil is None:
        return proc_status_mb(pid, "VmRSS")
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / (1024 * 1024)
    except psutil.Error:
        return None


class Workload:
    """The mixed add/search requests, and what they got back."""

    def __init__(self, client: httpx.AsyncClient, agents: list[str], add_share: float) -> None:
        self.client = client
        self.agents = agents
        self.add_share = add_share
        self.queries = query_pool(400)
        self.texts = memory_texts(200_000, seed=4321)
        self.latencies: dict[str, list[float]] = {"add": [], "search": []}
        self.statuses: Counter[str] = Counter()
        self.errors = 0
        self.error_samples: list[str] = []

    def reset(self) -> None:
        """Forget what was recorded (after the capacity phase)."""
        self.latencies = {"add": [], "search": []}
        self.statuses.clear()
        self.errors = 0
        self.error_samples = []

    async def one(self, rng: random.Random) -> None:
        """Send one request (an add or a search) and record its latency and outcome."""
        kind = "add" if rng.random() < self.add_share else "search"
        agent = rng.choice(self.agents)
        t0 = time.perf_counter()
        try:
            if kind == "add":
                text = self.texts.pop() if self.texts else f"note {rng.randrange(10**9)}"
                r = await self.client.post(
                    "/v1/memories", json={"agent_id": agent, "content": text}
                )
                ok = r.status_code == 201
            else:
                query = pick_query(rng, self.queries)
                r = await self.client.post(
                    "/v1/search", json={"agent_id": agent, "query": query, "limit": 10}
                )
                ok = r.status_code == 200
        except httpx.HTTPError as exc:
            self.latencies[kind].append((time.perf_counter() - t0) * 1000)
            self._error(f"{kind}: {type(exc).__name__}: {exc}")
            return
        self.latencies[kind].append((time.perf_counter() - t0) * 1000)
        self.statuses[f"{kind} {r.status_code}"] += 1
        if not ok:
            self._error(f"{kind}: HTTP {r.status_code}: {r.text[:200]}")

    def _error(self, text: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(text)

    def summary(self, seconds: float) -> dict[str, Any]:
        every = self.latencies["add"] + self.latencies["search"]
        out: dict[str, Any] = {
            "requests": len(every),
            "seconds": round(seconds, 1),
            "req_per_s": round(len(every) / seconds, 1) if seconds else 0.0,
            "errors": self.errors,
            "statuses": dict(sorted(self.statuses.items())),
        }
        for name, lat in (("all", every), *self.latencies.items()):
            out[name] = {
                "requests": len(lat),
                "p50_ms": round(pct(lat, 50), 1),
                "p99_ms": round(pct(lat, 99), 1),
                "max_ms": round(max(lat), 1) if lat else 0.0,
            }
        if self.error_samples:
            out["error_samples"] = self.error_samples
        return out


async def seed(client: httpx.AsyncClient, agents: list[str], n: int) -> None:
    """``n`` memories over ``agents`` through /v1/memories/batch (dedup off)."""
    texts = memory_texts(n)
    for i, agent in enumerate(agents):
        chunk = texts[i :: len(agents)]
        for j in range(0, len(chunk), 500):
            r = await client.post(
                "/v1/memories/batch",
                json={
                    "agent_id": agent,
                    "items": [{"content": t} for t in chunk[j : j + 500]],
                    "dedup": False,
                },
            )
            r.raise_for_status()


async def capacity(work: Workload, concurrency: int, seconds: float) -> float:
    """Requests/s of the mixed workload with ``concurrency`` clients sending back to back."""
    deadline = time.perf_counter() + seconds
    done = 0

    async def client(i: int) -> None:
        nonlocal done
        rng = random.Random(1000 + i)
        while time.perf_counter() < deadline:
            await work.one(rng)
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(concurrency)))
    return done / (time.perf_counter() - start)


async def sample_rss(
    pid: int, every: float, series: list[tuple[float, float | None]], stop: asyncio.Event
) -> None:
    """Append (seconds since start, RSS MiB) every ``every`` seconds until ``stop``."""
    start = time.perf_counter()
    while True:
        series.append((round(time.perf_counter() - start, 1), rss_mb(pid)))
        try:
            await asyncio.wait_for(stop.wait(), timeout=every)
            series.append((round(time.perf_counter() - start, 1), rss_mb(pid)))
            return
        except TimeoutError:
            continue


async def open_loop(
    work: Workload, rate: float, duration: float, max_in_flight: int
) -> dict[str, Any]:
    """Schedule one request every 1/rate s for ``duration`` s (open loop, bounded in flight)."""
    gate = asyncio.Semaphore(max_in_flight)
    tasks: set[asyncio.Task[None]] = set()
    rng = random.Random(77)
    lag_max = 0.0
    late = 0
    start = time.perf_counter()
    i = 0

    async def fire(r: random.Random) -> None:
        try:
            await work.one(r)
        finally:
            gate.release()

    while True:
        due = start + i / rate
        if due - start >= duration:
            break
        now = time.perf_counter()
        if due > now:
            await asyncio.sleep(due - now)
        await gate.acquire()  # at most max_in_flight outstanding: waiting here shows as lag
        lag = time.perf_counter() - due
        lag_max = max(lag_max, lag)
        late += lag > 0.1
        task = asyncio.create_task(fire(random.Random(rng.random())))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        i += 1
    if tasks:
        await asyncio.gather(*tasks)
    seconds = time.perf_counter() - start
    out = work.summary(seconds)
    out["scheduled"] = i
    out["target_req_per_s"] = round(rate, 1)
    out["scheduler_lag_max_s"] = round(lag_max, 3)
    out["scheduled_over_100ms_late"] = late
    return out


def rss_report(series: list[tuple[float, float | None]]) -> dict[str, Any]:
    """Start/end/peak RSS and the growth over the second half of the run (MiB, MiB/min)."""
    values = [(t, v) for t, v in series if v is not None]
    if len(values) < 2:
        return {"samples": len(values)}
    half = [(t, v) for t, v in values if t >= values[-1][0] / 2]
    (t0, v0), (t1, v1) = half[0], half[-1]
    return {
        "samples": len(values),
        "start_mb": round(values[0][1], 1),
        "end_mb": round(values[-1][1], 1),
        "peak_mb": round(max(v for _, v in values), 1),
        "second_half_growth_mb": round(v1 - v0, 1),
        "second_half_mb_per_min": round((v1 - v0) / ((t1 - t0) / 60), 2) if t1 > t0 else 0.0,
        # Flat: the second half grew by under 3% of the starting RSS (at least 10 MiB of
        # slack), which the adds' own growth of the store and index stays within.
        "flat": v1 - v0 <= max(10.0, 0.03 * values[0][1]),
    }


async def run(args: argparse.Namespace, server: SpawnedServer) -> dict[str, Any]:
    assert server.pid is not None
    headers = {} if server.api_key is None else {"Authorization": f"Bearer {server.api_key}"}
    # Idle connections are dropped after 2 s, before uvicorn's 5 s keep-alive timeout: at equal
    # timeouts the server may close a connection just as the client sends on it (ReadError).
    limits = httpx.Limits(
        max_connections=args.max_in_flight, max_keepalive_connections=64, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(
        base_url=server.url, headers=headers, timeout=30.0, limits=limits
    ) as client:
        agents = agent_ids(args.agents)
        print(f"seeding {args.memories} memories ...", file=sys.stderr, flush=True)
        await seed(client, agents, args.memories)
        work = Workload(client, agents, args.add_share)
        result: dict[str, Any] = {}
        if args.rate is None:
            print(f"measuring capacity ({args.capacity_seconds:.0f} s) ...", file=sys.stderr)
            cap = await capacity(work, args.capacity_concurrency, args.capacity_seconds)
            result["capacity"] = {
                "req_per_s": round(cap, 1),
                "concurrency": args.capacity_concurrency,
                "seconds": args.capacity_seconds,
                **{k: v for k, v in work.summary(args.capacity_seconds).items() if k != "seconds"},
            }
            rate = cap * args.fraction
            work.reset()
        else:
            rate = args.rate
        print(
            f"driving {rate:.1f} req/s for {args.duration:.0f} s ...", file=sys.stderr, flush=True
        )
        series: list[tuple[float, float | None]] = []
        stop = asyncio.Event()
        sampler = asyncio.create_task(sample_rss(server.pid, args.sample_every, series, stop))
        result["load"] = await open_loop(work, rate, args.duration, args.max_in_flight)
        stop.set()
        await sampler
        result["rss_series_mb"] = [[t, None if v is None else round(v, 1)] for t, v in series]
        result["rss"] = rss_report(series)
        result["rss"]["source"] = "psutil" if psutil is not None else "/proc/<pid>/status VmRSS"
    return result


def render(result: dict[str, Any]) -> str:
    lines = [f"command: {result['command']}"]
    if "capacity" in result:
        c = result["capacity"]
        lines.append(
            f"capacity: {c['req_per_s']} req/s at concurrency {c['concurrency']} "
            f"(p50 {c['all']['p50_ms']} ms, p99 {c['all']['p99_ms']} ms, errors {c['errors']})"
        )
    ld = result["load"]
    lines.append(
        f"load: target {ld['target_req_per_s']} req/s for {result['config']['duration_s']} s, "
        f"achieved {ld['req_per_s']} req/s, {ld['requests']} requests, errors {ld['errors']}"
    )
    for name in ("all", "search", "add"):
        s = ld[name]
        lines.append(
            f"  {name:<6} n={s['requests']:<7} p50 {s['p50_ms']} ms  p99 {s['p99_ms']} ms  "
            f"max {s['max_ms']} ms"
        )
    lines.append(
        f"  scheduler: max lag {ld['scheduler_lag_max_s']} s, "
        f"{ld['scheduled_over_100ms_late']} requests sent over 100 ms late"
    )
    lines.append(f"  statuses: {ld['statuses']}")
    for sample in ld.get("error_samples", []):
        lines.append(f"  error: {sample}")
    rss = result["rss"]
    lines.append(
        f"RSS ({rss.get('source')}): {json.dumps({k: v for k, v in rss.items() if k != 'source'})}"
    )
    lines.append(
        "RSS series (s, MiB): " + ", ".join(f"{t:.0f}:{v}" for t, v in result["rss_series_mb"])
    )
    lines.append(f"pass (zero errors, flat RSS): {result['pass']}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of load [600]")
    ap.add_argument("--fraction", type=float, default=0.8, help="share of capacity [0.8]")
    ap.add_argument("--rate", type=float, default=None, help="req/s (skips the capacity phase)")
    ap.add_argument("--add-share", type=float, default=0.1, help="share of adds [0.1]")
    ap.add_argument("--memories", type=int, default=2000, help="memories seeded first [2000]")
    ap.add_argument("--agents", type=int, default=10, help="agents [10]")
    ap.add_argument("--capacity-seconds", type=float, default=20.0, help="[20]")
    ap.add_argument("--capacity-concurrency", type=int, default=8, help="[8]")
    ap.add_argument("--max-in-flight", type=int, default=64, help="[64]")
    ap.add_argument("--sample-every", type=float, default=10.0, help="RSS sample period s [10]")
    ap.add_argument("--workers", type=int, default=1, help="serve --workers [1]")
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="JSON output [build/load_run.json]"
    )
    args = ap.parse_args(argv)
    if args.duration <= 0 or not 0 < args.fraction <= 1 or not 0 <= args.add_share <= 1:
        ap.error("--duration must be > 0, --fraction in (0, 1], --add-share in [0, 1]")
    if args.rate is not None and args.rate <= 0:
        ap.error("--rate must be > 0")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the load, print the report, write ``--out``; returns the results."""
    args = parse_args(argv)
    server = SpawnedServer(workers=args.workers)
    result: dict[str, Any] = {
        "command": " ".join(
            ["python", "benchmarks/load_run.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "config": {
            "duration_s": args.duration,
            "fraction": args.fraction,
            "rate": args.rate,
            "add_share": args.add_share,
            "memories": args.memories,
            "workers": args.workers,
        },
    }
    try:
        print("starting memvault serve on 127.0.0.1 ...", file=sys.stderr, flush=True)
        server.start()
        result.update(asyncio.run(run(args, server)))
    except BaseException:
        if server.log_tail():
            print(f"server log:\n{server.log_tail()}", file=sys.stderr)
        raise
    finally:
        server.stop()
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["pass"] = result["load"]["errors"] == 0 and bool(result["rss"].get("flat"))
    print(render(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
