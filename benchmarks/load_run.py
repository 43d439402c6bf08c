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
3. search only: the same rate for ``--search-only-seconds`` with no adds (a fixed store size);
4. the server's RSS (process and children: psutil when installed, else /proc/<pid>/status VmRSS)
   is sampled every ``--sample-every`` seconds for the whole run, with the adds made so far.

Capacity is measured on the seeded store and again on probe agents seeded to the size the run's
agents will reach (a search's cost grows with the agent's store), and the lower one is used.
The RSS verdict separates the store's growth from a leak: the mixed phase may grow by at most
``PER_MEMORY_BUDGET_BYTES`` per added memory, the search-only phase hardly at all.

Printed and written to ``--out``: errors (non-2xx answers and transport failures), p50/p99/max
latency, the achieved rate, how late the scheduler fell behind, the load average with each
figure (the machine is shared), and the RSS series, per minute, with bytes per added memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
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
        self.added = 0  # acknowledged adds since the start (never reset: the store's size)
        self.started = time.perf_counter()
        self.timeline: list[tuple[float, float]] = []  # (seconds since reset, latency ms)

    def reset(self) -> None:
        """Forget what was recorded (after the capacity phase)."""
        self.latencies = {"add": [], "search": []}
        self.statuses.clear()
        self.errors = 0
        self.error_samples = []
        self.started = time.perf_counter()
        self.timeline = []

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
                self.added += ok
            else:
                query = pick_query(rng, self.queries)
                r = await self.client.post(
                    "/v1/search", json={"agent_id": agent, "query": query, "limit": 10}
                )
                ok = r.status_code == 200
        except httpx.HTTPError as exc:
            self._record(kind, t0)
            self._error(f"{kind}: {type(exc).__name__}: {exc}")
            return
        self._record(kind, t0)
        self.statuses[f"{kind} {r.status_code}"] += 1
        if not ok:
            self._error(f"{kind}: HTTP {r.status_code}: {r.text[:200]}")

    def _record(self, kind: str, t0: float) -> None:
        ms = (time.perf_counter() - t0) * 1000
        self.latencies[kind].append(ms)
        self.timeline.append((t0 - self.started, ms))

    def per_minute(self) -> list[dict[str, float]]:
        """p50/p99 of the requests sent in each minute (where queueing starts shows here)."""
        minutes: dict[int, list[float]] = {}
        for t, ms in self.timeline:
            minutes.setdefault(int(t // 60), []).append(ms)
        return [
            {"minute": m, "requests": len(v), "p50_ms": round(pct(v, 50), 1),
             "p99_ms": round(pct(v, 99), 1)}
            for m, v in sorted(minutes.items())
        ]  # fmt: skip

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


async def seed(client: httpx.AsyncClient, agents: list[str], n: int, text_seed: int = 7) -> None:
    """``n`` memories over ``agents`` through /v1/memories/batch (dedup off)."""
    texts = memory_texts(n, seed=text_seed)
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


#: Expected in-process footprint of one added memory on the SQLite store (bytes), measured with
#: benchmarks/load_run.py's phases and an in-process count of each structure (issue 21): the
#: vector row (384 float32 = 1.5 KiB) and its lexical postings grow by design; the hydrated
#: entry in the store's entry cache (~7.5 KiB, bounded at 20,000 entries) and the retrieval
#: caches keyed by text (term sets, question share, temporal mentions; bounded at 65,536 texts)
#: fill with each new memory until their bound. Growth at or under this per added memory is the
#: store's own size, not a leak.
PER_MEMORY_BUDGET_BYTES = 16 * 1024

#: A search-only phase (fixed store size) may grow by at most this much RSS (MiB, or 1% of the
#: starting RSS if larger): allocator noise and caches of queries, never per-request garbage.
SEARCH_ONLY_SLACK_MB = 8.0


def load_avg() -> list[float]:
    """The 1/5/15-minute load averages (every figure is recorded with the machine's load)."""
    return [round(x, 2) for x in os.getloadavg()]


Sample = tuple[float, float | None, int, str]  # (seconds, RSS MiB, adds so far, phase)


async def sample_rss(
    pid: int,
    every: float,
    series: list[Sample],
    stop: asyncio.Event,
    phase: list[str],
    work: Workload,
) -> None:
    """Append (seconds, RSS MiB, adds so far, phase) every ``every`` s until ``stop``."""
    start = time.perf_counter()
    while True:
        series.append((round(time.perf_counter() - start, 1), rss_mb(pid), work.added, phase[0]))
        try:
            await asyncio.wait_for(stop.wait(), timeout=every)
            series.append(
                (round(time.perf_counter() - start, 1), rss_mb(pid), work.added, phase[0])
            )
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
    out["per_minute"] = work.per_minute()
    out["scheduled"] = i
    out["target_req_per_s"] = round(rate, 1)
    out["scheduler_lag_max_s"] = round(lag_max, 3)
    out["scheduled_over_100ms_late"] = late
    return out


def rss_report(series: list[Sample]) -> dict[str, Any]:
    """RSS start/end/peak; per phase the growth, MiB/min and, for the mixed phase, bytes per add.

    The verdict ``flat`` is honest about adds growing the store: the mixed phase's second half
    may grow by at most ``PER_MEMORY_BUDGET_BYTES`` per memory added in it (the store's own
    size), and the search-only phase (no adds, fixed store size) by at most
    ``SEARCH_ONLY_SLACK_MB`` (or 1% of the starting RSS).
    """
    values = [(t, v, n, ph) for t, v, n, ph in series if v is not None]
    if len(values) < 2:
        return {"samples": len(values), "flat": False}
    out: dict[str, Any] = {
        "samples": len(values),
        "start_mb": round(values[0][1], 1),
        "end_mb": round(values[-1][1], 1),
        "peak_mb": round(max(v for _, v, _, _ in values), 1),
        "per_memory_budget_bytes": PER_MEMORY_BUDGET_BYTES,
    }
    flat = True
    mixed = [x for x in values if x[3] == "mixed"]
    if len(mixed) >= 2:
        half = [x for x in mixed if x[0] >= (mixed[0][0] + mixed[-1][0]) / 2]
        (t0, v0, n0, _), (t1, v1, n1, _) = half[0], half[-1]
        grew = v1 - v0
        adds = n1 - n0
        per_add = grew * 1024 * 1024 / adds if adds else None
        out["mixed"] = {
            "start_mb": round(mixed[0][1], 1),
            "end_mb": round(mixed[-1][1], 1),
            "second_half_growth_mb": round(grew, 1),
            "second_half_mb_per_min": round(grew / ((t1 - t0) / 60), 2) if t1 > t0 else 0.0,
            "second_half_adds": adds,
            "second_half_bytes_per_add": None if per_add is None else round(per_add),
            "per_minute_mb": _per_minute(mixed),
        }
        ok = grew <= 2.0 if not adds else per_add is not None and per_add <= PER_MEMORY_BUDGET_BYTES
        out["mixed"]["flat"] = ok
        flat = flat and ok
    search = [x for x in values if x[3] == "search-only"]
    if len(search) >= 2:
        grew = search[-1][1] - search[0][1]
        minutes = (search[-1][0] - search[0][0]) / 60
        slack = max(SEARCH_ONLY_SLACK_MB, 0.01 * search[0][1])
        out["search_only"] = {
            "start_mb": round(search[0][1], 1),
            "end_mb": round(search[-1][1], 1),
            "growth_mb": round(grew, 1),
            "mb_per_min": round(grew / minutes, 2) if minutes else 0.0,
            "slack_mb": round(slack, 1),
            "flat": grew <= slack,
        }
        flat = flat and grew <= slack
    out["flat"] = flat
    return out


def _per_minute(samples: list[Sample]) -> list[list[float]]:
    """[minute, RSS MiB, adds so far] at each whole minute of a phase."""
    out: list[list[float]] = []
    t_start = samples[0][0]
    for t, v, n, _ in samples:
        minute = int((t - t_start) // 60)
        if v is not None and (not out or minute > out[-1][0]):
            out.append([minute, round(v, 1), n])
    return out


async def seed_probe(client: httpx.AsyncClient, agents: list[str], per_agent: int) -> float:
    """Seed the capacity probe's own agents to ``per_agent`` memories each; seconds taken."""
    t0 = time.perf_counter()
    await seed(client, agents, per_agent * len(agents), text_seed=99)
    return time.perf_counter() - t0


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
            rate = await measure_capacity(args, client, work, result)
        else:
            rate = args.rate
        print(
            f"driving {rate:.1f} req/s for {args.duration:.0f} s, then search only for "
            f"{args.search_only_seconds:.0f} s ...",
            file=sys.stderr,
            flush=True,
        )
        series: list[Sample] = []
        stop = asyncio.Event()
        phase = ["mixed"]
        sampler = asyncio.create_task(
            sample_rss(server.pid, args.sample_every, series, stop, phase, work)
        )
        added_before = work.added
        result["load"] = await open_loop(work, rate, args.duration, args.max_in_flight)
        result["load"]["loadavg_end"] = load_avg()
        result["load"]["memories_added"] = work.added - added_before
        result["load"]["store_size_end"] = args.memories + work.added
        if args.search_only_seconds > 0:
            phase[0] = "search-only"
            work.reset()
            work.add_share = 0.0
            result["search_only"] = await open_loop(
                work, rate, args.search_only_seconds, args.max_in_flight
            )
            result["search_only"]["loadavg_end"] = load_avg()
        stop.set()
        await sampler
        result["rss_series"] = [
            [t, None if v is None else round(v, 1), n, ph] for t, v, n, ph in series
        ]
        result["rss"] = rss_report(series)
        result["rss"]["source"] = "psutil" if psutil is not None else "/proc/<pid>/status VmRSS"
    return result


async def measure_capacity(
    args: argparse.Namespace, client: httpx.AsyncClient, work: Workload, result: dict[str, Any]
) -> float:
    """The rate to drive: ``--fraction`` of the capacity on a store the size the run ends with.

    A fresh store's capacity overstates what 10 minutes sustain: every add grows the agent's
    store, and a search's cost grows with it. So capacity is measured twice with the same
    mixed workload: on the seeded agents (``start``), and on a second set of agents, each
    seeded first to the size the run's agents will reach (``end``: seeded + the adds the
    run will make at ``--fraction`` of the start capacity). The run uses the lower one.
    """
    print(f"measuring capacity at the start ({args.capacity_seconds:.0f} s) ...", file=sys.stderr)
    cap_start = await capacity(work, args.capacity_concurrency, args.capacity_seconds)
    result["capacity_start"] = {
        "req_per_s": round(cap_start, 1),
        "loadavg": load_avg(),
        **{k: v for k, v in work.summary(args.capacity_seconds).items() if k != "seconds"},
    }
    work.reset()
    cap = cap_start
    if args.capacity_at_end:
        expected_adds = cap_start * args.fraction * args.add_share * args.duration
        per_agent = math.ceil((args.memories + work.added + expected_adds) / args.agents)
        probe = [f"probe-{a}" for a in agent_ids(args.agents)]
        print(
            f"seeding {per_agent} memories for each of {len(probe)} probe agents ...",
            file=sys.stderr,
            flush=True,
        )
        seeded_in = await seed_probe(client, probe, per_agent)
        main_agents, added = work.agents, work.added
        work.agents = probe
        # A short warm-up first: the probe's entries reach the caches as the run's would.
        await capacity(work, args.capacity_concurrency, min(10.0, args.capacity_seconds))
        work.reset()
        print(
            f"measuring capacity at the end size ({args.capacity_seconds:.0f} s) ...",
            file=sys.stderr,
        )
        cap_end = await capacity(work, args.capacity_concurrency, args.capacity_seconds)
        result["capacity_end"] = {
            "req_per_s": round(cap_end, 1),
            "memories_per_agent": per_agent,
            "seeded_in_s": round(seeded_in, 1),
            "loadavg": load_avg(),
            **{k: v for k, v in work.summary(args.capacity_seconds).items() if k != "seconds"},
        }
        work.agents, work.added = main_agents, added
        work.reset()
        cap = min(cap_start, cap_end)
    result["capacity"] = {
        "req_per_s": round(cap, 1),
        "concurrency": args.capacity_concurrency,
        "seconds": args.capacity_seconds,
        "measured_at": "end size" if args.capacity_at_end else "start",
    }
    return cap * args.fraction


def _phase_lines(name: str, ld: dict[str, Any], duration: float) -> list[str]:
    lines = [
        f"{name}: target {ld['target_req_per_s']} req/s for {duration:.0f} s, "
        f"achieved {ld['req_per_s']} req/s, {ld['requests']} requests, errors {ld['errors']} "
        f"(load average at the end {ld.get('loadavg_end')})"
    ]
    for kind in ("all", "search", "add"):
        s = ld[kind]
        if s["requests"]:
            lines.append(
                f"  {kind:<6} n={s['requests']:<7} p50 {s['p50_ms']} ms  p99 {s['p99_ms']} ms  "
                f"max {s['max_ms']} ms"
            )
    lines.append(
        f"  scheduler: max lag {ld['scheduler_lag_max_s']} s, "
        f"{ld['scheduled_over_100ms_late']} requests sent over 100 ms late"
    )
    lines.append(
        "  per minute [min: n, p50, p99 ms]: "
        + ", ".join(
            f"{m['minute']}: {m['requests']}, {m['p50_ms']}, {m['p99_ms']}"
            for m in ld.get("per_minute", [])
        )
    )
    lines.append(f"  statuses: {ld['statuses']}")
    lines.extend(f"  error: {sample}" for sample in ld.get("error_samples", []))
    return lines


def render(result: dict[str, Any]) -> str:
    lines = [f"command: {result['command']}", f"machine: {json.dumps(result['machine'])}"]
    for key in ("capacity_start", "capacity_end"):
        if key in result:
            c = result[key]
            extra = f", {c['memories_per_agent']} memories/agent" if key == "capacity_end" else ""
            lines.append(
                f"{key}: {c['req_per_s']} req/s (p50 {c['all']['p50_ms']} ms, p99 "
                f"{c['all']['p99_ms']} ms, errors {c['errors']}{extra}; load average "
                f"{c['loadavg']})"
            )
    if "capacity" in result:
        c = result["capacity"]
        lines.append(f"capacity used: {c['req_per_s']} req/s ({c['measured_at']})")
    lines += _phase_lines("load (mixed)", result["load"], result["config"]["duration_s"])
    lines.append(
        f"  memories added {result['load']['memories_added']}, store size at the end "
        f"{result['load']['store_size_end']}"
    )
    if "search_only" in result:
        lines += _phase_lines(
            "search only", result["search_only"], result["config"]["search_only_s"]
        )
    rss = result["rss"]
    lines.append(
        f"RSS ({rss.get('source')}): start {rss.get('start_mb')} MiB, end {rss.get('end_mb')} "
        f"MiB, peak {rss.get('peak_mb')} MiB"
    )
    if "mixed" in rss:
        m = rss["mixed"]
        lines.append(
            f"  mixed: {m['start_mb']} -> {m['end_mb']} MiB; second half +"
            f"{m['second_half_growth_mb']} MiB ({m['second_half_mb_per_min']} MiB/min) for "
            f"{m['second_half_adds']} adds = {m['second_half_bytes_per_add']} B/add "
            f"(budget {rss['per_memory_budget_bytes']} B/memory): flat {m['flat']}"
        )
        lines.append(
            "  per minute [min, MiB, adds]: "
            + ", ".join(f"{a:.0f}:{b}:{c:.0f}" for a, b, c in m["per_minute_mb"])
        )
    if "search_only" in rss:
        s = rss["search_only"]
        lines.append(
            f"  search only: {s['start_mb']} -> {s['end_mb']} MiB ({s['growth_mb']:+} MiB, "
            f"{s['mb_per_min']} MiB/min, slack {s['slack_mb']} MiB): flat {s['flat']}"
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
        "--search-only-seconds",
        type=float,
        default=120.0,
        help="a search-only phase after the load, same rate, fixed store size [120]",
    )
    ap.add_argument(
        "--capacity-at-start-only",
        dest="capacity_at_end",
        action="store_false",
        help="measure capacity on the fresh store only (overstates what long runs sustain)",
    )
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
            "loadavg_start": load_avg(),
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
            "search_only_s": args.search_only_seconds,
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
    result["machine"]["loadavg_end"] = load_avg()
    errors = result["load"]["errors"] + result.get("search_only", {}).get("errors", 0)
    result["pass"] = errors == 0 and bool(result["rss"].get("flat"))
    print(render(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
