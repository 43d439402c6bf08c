"""Loopback load benchmark of ``memvault serve``: ingest, single adds and concurrent searches.

    python benchmarks/bench_server.py [--memories 10000] [--agents 10] [--adds 500]
        [--concurrency 1,8,32] [--duration 20 | --requests N] [--no-auth] [--out FILE.json]
    python benchmarks/bench_server.py --server http://127.0.0.1:8765 --api-key mvk_... \\
        [--skip-ingest] [--server-pid PID]
    python benchmarks/bench_server.py --compare HEAD~3 --workers 2 --concurrency 8,32 \\
        [--rounds 4] [--adds 0]
    python benchmarks/bench_server.py --models serve,uvicorn,gunicorn --workers 2 \\
        --concurrency 8,32 [--rounds 6] [--adds 0] [--kill [--kill-duration 20]]

``--compare REF`` starts two servers, this checkout's and REF's (from a temporary git worktree,
same interpreter and packages), fills both with the same memories, then at each concurrency
level runs the search load against them in turns (``--rounds`` each, ``--duration`` split
between them, the first build alternating) so both see the same machine; it prints each
build's figures, the server CPU per search, and this/REF ratios. On a shared machine absolute
figures drift with other people's work; the ratios are what to read.

``--models A,B,..`` does the same for process models of one build: the same app factory
(``memvault.cli.serve:app_factory``) and worker environment (``serve``'s ``prepare_workers``)
under ``memvault serve --workers N`` itself (``serve``; ``serve@REF`` from REF's worktree),
uvicorn's own multiprocess supervisor (``uvicorn``) and gunicorn with uvicorn's worker class
(``gunicorn``; needs gunicorn, and uvicorn-worker where uvicorn's own class is deprecated).
Each round's req/s and p99 are kept beside the totals. ``--kill`` then runs ``--kill-duration``
seconds of load on each and, a quarter of the way in, sends ``kill -9`` to one of its workers:
failed requests, how long failures lasted, when a new worker took its place, and whether the
server still answers.

By default a private server is started: a temporary SQLite store, an admin API key made with
the real CLI (``memvault keys create --scope admin --json``) and ``python -m memvault serve`` as
a subprocess on a free loopback port. Then, over real HTTP with keep-alive connections:

1. ingest: ``--memories`` varied memories for ``--agents`` agents through
   ``POST /v1/memories/batch`` in batches of 500 (dedup off);
2. adds: ``--adds`` single ``POST /v1/memories`` at concurrency 8 (dedup on, the default);
3. search: for each ``--concurrency`` level, a short warm-up, then that many clients send
   ``POST /v1/search`` (limit 10, random agent, a pool of distinct queries) for ``--duration``
   seconds (or ``--requests`` in total).

Latency is measured per request on the client (``time.perf_counter``); errors are non-2xx
answers and transport exceptions. The server's own view (its ``/metrics`` histogram sums) and the
CPU used by the client and the server process in each phase are printed too, which shows how
much of a request is HTTP/client overhead and how much is the search itself.

Target (2 cores): >= 200 searches/s with p99 < 150 ms and zero errors, at every concurrency.
The load generator shares the machine with the server, so its CPU share is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from _corpus import ISSUES, PEOPLE, PREFS, SYSTEMS, TOOLS, VERBS

TARGET_RPS = 200.0
TARGET_P99_MS = 150.0
TARGET_LINE = "target on 2 cores: >= 200 searches/s with p99 < 150 ms and zero errors"
BATCH = 500
ADD_CONCURRENCY = 8

# -- synthetic corpus -----------------------------------------------------------------------------
# The shared vocabulary of benchmarks/_corpus.py, with more slots, and sentence templates made
# from a core statement and a context tail: len(CORES) * len(TAILS) distinct templates.

TEAMS = ["platform", "payments", "growth", "data", "mobile", "infra", "security", "support"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend"]
METRICS = ["p99 latency", "error rate", "queue depth", "CPU usage", "memory usage", "cost"]
LANGS = ["Python", "Go", "TypeScript", "Rust", "Java", "SQL"]
CITIES = ["Berlin", "Lisbon", "Toronto", "Singapore", "Nairobi", "Austin", "Osaka"]

CORES = [
    "{p} {v} the {s} service on {d} after {i} showed up in staging.",
    "The {s} team stores its data in {t}; {p} owns the schema.",
    "{p} prefers {pref} and asked for it again in the sprint {n} retro.",
    "Incident {n}: {s} had {i}; fixed by {p} with a config change in {t}.",
    "Always run the {s} migrations before deploying {t} upgrades.",
    "Customer ticket {n} reports {i} in the {s} dashboard.",
    "Decision: the {s} service moves from {t} to {t2} next quarter.",
    "{p} reviewed the {s} PR {n} and requested {pref}.",
    "The {team} team alerts on {m} above {k}% for the {s} service.",
    "{p} is the on-call engineer for {s} during the week of {d}.",
    "Our {s} workers are written in {lang} and run on {t}.",
    "{p} works from {city} and prefers meetings before noon.",
    "Postmortem {n}: {i} in {s} came from a bad {t} setting; {p} wrote it up.",
    "The {s} dashboard tracks {m}; {p} set the threshold to {k}.",
    "We pinned {t} to version {k}.{n2} for {s} after {i}.",
    "{p} asked that every {s} change ship behind a feature flag.",
    "The {team} team owns {s}; escalate to {p} for anything urgent.",
    "{p} {v} the {s} cache layer and cut {m} by {k}%.",
    "Load test {n} of {s} on {t} hit {i} at {k}00 requests per second.",
    "The {s} API returns 429 when a client sends more than {k} requests a second.",
    "{p} likes {pref} in code reviews and dislikes long functions.",
    "Budget review: {s} on {t} costs about {k}00 dollars a month.",
    "{p} is migrating the {s} jobs from cron to {t}.",
    "Runbook: when {s} reports {i}, restart the {t} consumers first.",
    "The {s} integration tests take {k} minutes; {p} wants them under five.",
    "{p} and {p2} pair on the {s} rewrite every {d}.",
    "Security review {n} flagged the {s} service's {t} credentials; {p} rotated them.",
    "The {team} team's standup is at {k}:30 in the {city} office.",
    "{p} wrote the {lang} client for the {s} API.",
    "Release {k}.{n2} of {s} shipped on {d} with a fix for {i}.",
    "{p} says the {s} schema must stay backwards compatible for {k} releases.",
    "The {s} service reads from a {t} replica to keep {m} low.",
    "{p} filed bug {n}: {s} shows {i} when {t} restarts.",
    "Onboarding note: new engineers start with the {s} service and {lang}.",
    "{p} wants weekly reports on {m} for {s}, sent on {d}.",
    "The {s} backfill for {city} customers finished after {k} hours.",
    "{p} {v} the {t} cluster that {s} depends on.",
    "Retro {n}: the {team} team agreed to adopt {pref}.",
]

TAILS = [
    "",
    " {p2} agreed.",
    " This came up again on {d}.",
    " See ticket {n2}.",
    " The {team} team was informed.",
    " Follow up with {p2} next week.",
    " It affected {m}.",
    " Noted during the {city} offsite.",
    " Keep this in mind for the {s2} service too.",
    " Confirmed by {p2} in chat.",
]

QUERY_FORMS = [
    "what went wrong with the {s} service?",
    "who owns the {s} schema?",
    "what does {p} prefer?",
    "which database does {s} use?",
    "incidents involving {i}",
    "how do we deploy {t}?",
    "who is on call for {s}?",
    "what language is the {s} service written in?",
    "where does {p} work from?",
    "which team owns {s}?",
    "how much does {s} cost on {t}?",
    "what did the {team} team decide in the retro?",
    "when did {p} last touch {s}?",
    "how do we handle {i} in {s}?",
    "what is the alert threshold for {m}?",
    "which version of {t} is pinned?",
    "what is the rate limit of the {s} API?",
    "what are {p}'s code review preferences?",
    "runbook for {i}",
    "security findings about {t} credentials",
    "how long do the {s} tests take?",
    "why are we moving off {t}?",
    "{s} {i} postmortem",
    "{p} {s} {t}",
]


def _fill(rng: random.Random) -> dict[str, Any]:
    p, p2 = rng.sample(PEOPLE, 2)
    s, s2 = rng.sample(SYSTEMS, 2)
    t, t2 = rng.sample(TOOLS, 2)
    return {
        "p": p,
        "p2": p2,
        "s": s,
        "s2": s2,
        "t": t,
        "t2": t2,
        "v": rng.choice(VERBS),
        "i": rng.choice(ISSUES),
        "pref": rng.choice(PREFS),
        "team": rng.choice(TEAMS),
        "d": rng.choice(DAYS),
        "m": rng.choice(METRICS),
        "lang": rng.choice(LANGS),
        "city": rng.choice(CITIES),
        "n": rng.randint(100, 9999),
        "n2": rng.randint(1, 99),
        "k": rng.randint(2, 95),
    }


def memory_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` varied memory texts from ``len(CORES) * len(TAILS)`` templates and random fillers."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        values = _fill(rng)
        out.append(rng.choice(CORES).format(**values) + rng.choice(TAILS).format(**values))
    return out


#: Whether searches repeat the pool's queries verbatim (``--repeat-queries``). By default every
#: request's query is made unique (a ticket number is appended) so the embedder's query cache
#: never answers: each search pays for its query embedding, as a stream of new questions would.
REPEAT_QUERIES = False


def pick_query(rng: random.Random, queries: list[str]) -> str:
    """A query for one request: from the pool, unique per request unless REPEAT_QUERIES."""
    query = rng.choice(queries)
    if REPEAT_QUERIES:
        return query
    return f"{query.rstrip('?')} for ticket T-{rng.randrange(10**7)}?"


def query_pool(n: int, seed: int = 11) -> list[str]:
    """``n`` distinct search queries (fewer only if the forms cannot make that many)."""
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    for _ in range(n * 50):
        if len(seen) >= n:
            break
        seen.setdefault(rng.choice(QUERY_FORMS).format(**_fill(rng)), None)
    return list(seen)


# -- statistics and process readings --------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (``serve --workers N`` runs one per worker)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def proc_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` and its children (Linux /proc), or None."""
    if pid is None:
        return None
    total = 0.0
    for p in (pid, *_children(pid)):
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            if p == pid:
                return None
            continue
        fields = stat.rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def proc_status_mb(pid: int | None, field_name: str = "VmRSS") -> float | None:
    """A memory field of /proc/<pid>/status (VmRSS, VmHWM) in MiB, summed over the process
    and its children (the worker processes), or None."""
    if pid is None:
        return None
    total = 0.0
    for p in (pid, *_children(pid)):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(field_name + ":"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            if p == pid:
                return None
    return total


_METRIC_RE = re.compile(
    r'^memvault_http_request_duration_seconds_(sum|count)\{method="(\w+)",route="([^"]*)"\} (\S+)$'
)


async def server_route_totals(client: httpx.AsyncClient) -> dict[tuple[str, str], list[float]]:
    """(method, route) -> [seconds_sum, count] from the server's /metrics ({} if unavailable)."""
    try:
        r = await client.get("/metrics")
    except httpx.HTTPError:
        return {}
    if r.status_code != 200:
        return {}
    out: dict[tuple[str, str], list[float]] = {}
    for line in r.text.splitlines():
        m = _METRIC_RE.match(line)
        if m:
            kind, method, route, value = m.groups()
            slot = out.setdefault((method, route), [0.0, 0.0])
            slot[0 if kind == "sum" else 1] = float(value)
    return out


# -- the server under test ------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SpawnedServer:
    """A ``memvault serve`` subprocess over a temporary SQLite store."""

    no_auth: bool = False
    workers: int = 1
    startup_timeout: float = 120.0
    #: A source tree to run instead of the installed memvault (``--compare``'s worktree).
    src: Path | None = None
    #: The process model (``--models``): ``serve`` (``memvault serve --workers N`` itself),
    #: ``uvicorn`` (uvicorn's own multiprocess supervisor) or ``gunicorn`` (uvicorn workers).
    model: str = "serve"
    url: str = ""
    api_key: str | None = None
    pid: int | None = None
    tmp: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    _log: Any = field(default=None, repr=False)

    def _cli(self, db: Path) -> list[str]:
        return [sys.executable, "-m", "memvault", "--db", str(db)]

    def _env(self) -> dict[str, str] | None:
        if self.src is None:
            return None
        path = os.environ.get("PYTHONPATH")
        return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(self.src), path]))}

    def start(self) -> None:
        """Make the store and key, start the server, wait until GET /health answers."""
        self.tmp = Path(tempfile.mkdtemp(prefix="memvault-bench-server-"))
        db = self.tmp / "bench.db"
        if not self.no_auth:
            done = subprocess.run(
                [*self._cli(db), "keys", "create", "--name", "bench", "--scope", "admin", "--json"],
                capture_output=True,
                text=True,
                check=False,
                timeout=120,
                env=self._env(),
            )
            if done.returncode != 0:
                msg = f"memvault keys create failed ({done.returncode}): {done.stderr.strip()}"
                raise RuntimeError(msg)
            self.api_key = json.loads(done.stdout)["secret"]
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        if self.model == "serve":
            cmd = [*self._cli(db), "serve", "--host", "127.0.0.1", "--port", str(port)]
        else:
            # The same app factory and worker environment under another supervisor: see launch().
            cmd = [sys.executable, str(Path(__file__).resolve()), "--launch", self.model]
            cmd += ["--db", str(db), "--host", "127.0.0.1", "--port", str(port)]
        cmd += ["--log-level", "warning", "--workers", str(self.workers)]
        if self.no_auth:
            cmd.append("--no-auth")
        self._log = (self.tmp / "server.log").open("wb")
        self.proc = subprocess.Popen(
            cmd, stdout=self._log, stderr=subprocess.STDOUT, env=self._env()
        )
        self.pid = self.proc.pid
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(base_url=self.url, timeout=2.0) as client:
            while True:
                if self.proc.poll() is not None:
                    msg = f"the server exited with code {self.proc.returncode}:\n{self.log_tail()}"
                    raise RuntimeError(msg)
                try:
                    if client.get("/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    msg = f"the server did not answer /health in {self.startup_timeout:.0f} s"
                    raise RuntimeError(msg)
                time.sleep(0.1)

    def log_tail(self, lines: int = 20) -> str:
        """The last lines the server wrote."""
        if self.tmp is None or not (self.tmp / "server.log").exists():
            return ""
        text = (self.tmp / "server.log").read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """SIGINT, then kill after 15 s; close the log; remove the temporary directory.

        Workers that outlive their supervisor (one killed after the 15 s) are killed too: they
        would go on holding the port, the store and a core.
        """
        workers: list[int] = []
        try:
            if self.proc is not None and self.proc.poll() is None:
                workers = _children(self.proc.pid)
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=15)
        finally:
            for pid in workers:
                with contextlib.suppress(OSError):
                    if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] == "1":
                        os.kill(pid, signal.SIGKILL)  # orphaned: its supervisor is gone
            if self._log is not None:
                self._log.close()
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)


# -- load generation ------------------------------------------------------------------------------


@dataclass
class Phase:
    """What one load phase measured."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    seconds: float = 0.0
    client_cpu_s: float = 0.0
    server_cpu_s: float | None = None
    notes: Counter[str] = field(default_factory=Counter)

    @property
    def requests(self) -> int:
        return len(self.latencies_ms)

    def error(self, text: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 5:
            self.error_samples.append(text[:300])

    def summary(self) -> dict[str, Any]:
        lat = self.latencies_ms
        out: dict[str, Any] = {
            "requests": self.requests,
            "seconds": round(self.seconds, 3),
            "req_per_s": round(self.requests / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": round(pct(lat, 50), 2),
            "p95_ms": round(pct(lat, 95), 2),
            "p99_ms": round(pct(lat, 99), 2),
            "max_ms": round(max(lat), 2) if lat else 0.0,
            "mean_ms": round(sum(lat) / len(lat), 2) if lat else 0.0,
            "errors": self.errors,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "client_cpu_pct": (
                round(100 * self.client_cpu_s / self.seconds, 1) if self.seconds else 0.0
            ),
            "server_cpu_pct": (
                None
                if self.server_cpu_s is None or not self.seconds
                else round(100 * self.server_cpu_s / self.seconds, 1)
            ),
        }
        if self.error_samples:
            out["error_samples"] = self.error_samples
        return out


Send = Callable[[httpx.AsyncClient, random.Random], Awaitable[httpx.Response]]
Check = Callable[[httpx.Response, Phase], bool]


Worker = Callable[[random.Random, Callable[[], bool]], Awaitable[None]]


async def drive(
    phase: Phase,
    worker: Worker,
    *,
    concurrency: int,
    total: int | None,
    duration: float | None,
    seed: int,
    server_pid: int | None,
) -> Phase:
    """Run ``concurrency`` workers until ``total`` requests or ``duration`` s are done, and
    record the phase's wall time and the client's and server's CPU.

    A worker loops ``while more(): <send one request>``.
    """
    remaining = total
    deadline = 0.0

    def more() -> bool:
        nonlocal remaining
        if remaining is None:
            return time.perf_counter() < deadline
        remaining -= 1
        return remaining >= 0

    cpu0, srv0 = time.process_time(), proc_cpu_seconds(server_pid)
    start = time.perf_counter()
    deadline = start + (duration or 0.0)
    await asyncio.gather(
        *(worker(random.Random(seed * 1000 + i), more) for i in range(concurrency))
    )
    phase.seconds = time.perf_counter() - start
    phase.client_cpu_s = time.process_time() - cpu0
    srv1 = proc_cpu_seconds(server_pid)
    if srv0 is not None and srv1 is not None:
        phase.server_cpu_s = srv1 - srv0
    return phase


async def run_phase(
    client: httpx.AsyncClient,
    send: Send,
    *,
    concurrency: int,
    ok_status: int,
    total: int | None = None,
    duration: float | None = None,
    seed: int = 0,
    server_pid: int | None = None,
    check: Check | None = None,
) -> Phase:
    """``concurrency`` workers call ``send`` until ``total`` requests or ``duration`` s are done."""
    phase = Phase()

    async def worker(rng: random.Random, more: Callable[[], bool]) -> None:
        while more():
            t0 = time.perf_counter()
            try:
                r = await send(client, rng)
            except httpx.HTTPError as exc:
                phase.latencies_ms.append((time.perf_counter() - t0) * 1000)
                phase.error(f"{type(exc).__name__}: {exc}")
                continue
            phase.latencies_ms.append((time.perf_counter() - t0) * 1000)
            phase.statuses[r.status_code] += 1
            if r.status_code != ok_status:
                phase.error(f"HTTP {r.status_code}: {r.text}")
            elif check is not None and not check(r, phase):
                phase.error(f"unexpected body: {r.text}")

    return await drive(
        phase,
        worker,
        concurrency=concurrency,
        total=total,
        duration=duration,
        seed=seed,
        server_pid=server_pid,
    )


class RawHttp:
    """A minimal HTTP/1.1 keep-alive connection for the search load.

    A load generator shares the two cores with the server, so its own cost per request counts:
    httpx spends a large part of a millisecond per request on the client, this plain
    request/response loop (one prepared request, Content-Length framing) a small fraction of
    that, the way wrk does in C.
    """

    def __init__(self, host: str, port: int, headers: dict[str, str]) -> None:
        self.host = host
        self.port = port
        self.head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        request = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self.head}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        try:
            self.writer.write(request)
            head = await self.reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            return status, await self.reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            await self.close()
            raise

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def run_raw_search_phase(
    url: str,
    headers: dict[str, str],
    queries: list[str],
    agents: list[str],
    *,
    concurrency: int,
    total: int | None,
    duration: float | None,
    seed: int = 0,
    server_pid: int | None = None,
) -> Phase:
    """Like :func:`run_phase` for POST /v1/search, over :class:`RawHttp` connections."""
    parsed = httpx.URL(url)
    host, port = parsed.host, parsed.port or 80
    phase = Phase()

    async def worker(rng: random.Random, more: Callable[[], bool]) -> None:
        conn = RawHttp(host, port, headers)
        try:
            while more():
                body = json.dumps(
                    {"agent_id": rng.choice(agents), "query": pick_query(rng, queries), "limit": 10}
                ).encode()
                t0 = time.perf_counter()
                try:
                    status, data = await conn.post("/v1/search", body)
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    phase.latencies_ms.append((time.perf_counter() - t0) * 1000)
                    phase.error(f"{type(exc).__name__}: {exc}")
                    continue
                phase.latencies_ms.append((time.perf_counter() - t0) * 1000)
                phase.statuses[status] += 1
                if status != 200:
                    phase.error(f"HTTP {status}: {data[:300]!r}")
                    continue
                results = json.loads(data).get("results")
                if not isinstance(results, list):
                    phase.error(f"unexpected body: {data[:300]!r}")
                    continue
                phase.notes["results"] += len(results)
        finally:
            await conn.close()

    return await drive(
        phase,
        worker,
        concurrency=concurrency,
        total=total,
        duration=duration,
        seed=seed,
        server_pid=server_pid,
    )


def agent_ids(n: int) -> list[str]:
    """The benchmark's agent ids."""
    return [f"bench-agent-{i:02d}" for i in range(n)]


async def ingest(
    client: httpx.AsyncClient, memories: int, agents: list[str], server_pid: int | None
) -> dict[str, Any]:
    """``memories`` memories spread over ``agents`` through /v1/memories/batch, one at a time."""
    texts = memory_texts(memories)
    per_agent = [texts[i :: len(agents)] for i in range(len(agents))]
    batches = [
        (agent, chunk[j : j + BATCH])
        for agent, chunk in zip(agents, per_agent, strict=True)
        for j in range(0, len(chunk), BATCH)
    ]
    stored = 0

    async def send(c: httpx.AsyncClient, _: random.Random) -> httpx.Response:
        agent, items = batches.pop(0)
        return await c.post(
            "/v1/memories/batch",
            json={"agent_id": agent, "items": [{"content": t} for t in items], "dedup": False},
        )

    def check(r: httpx.Response, _: Phase) -> bool:
        nonlocal stored
        ids = r.json().get("ids", [])
        stored += len(ids)
        return bool(ids)

    phase = await run_phase(
        client,
        send,
        concurrency=1,
        ok_status=201,
        total=len(batches),
        server_pid=server_pid,
        check=check,
    )
    out = {
        "memories": stored,
        "batches": phase.requests,
        "seconds": round(phase.seconds, 2),
        "memories_per_s": round(stored / phase.seconds, 1) if phase.seconds else 0.0,
        "batch_p50_ms": round(pct(phase.latencies_ms, 50), 1),
        "errors": phase.errors,
        "server_cpu_pct": phase.summary()["server_cpu_pct"],
    }
    if phase.error_samples:
        out["error_samples"] = phase.error_samples
    return out


async def single_adds(
    client: httpx.AsyncClient, n: int, agents: list[str], server_pid: int | None
) -> dict[str, Any]:
    """``n`` POST /v1/memories at concurrency 8 (dedup as the server defaults: on)."""
    texts = memory_texts(n, seed=1234)

    async def send(c: httpx.AsyncClient, rng: random.Random) -> httpx.Response:
        return await c.post(
            "/v1/memories", json={"agent_id": rng.choice(agents), "content": texts.pop()}
        )

    def check(r: httpx.Response, phase: Phase) -> bool:
        phase.notes[str(r.json().get("decision"))] += 1
        return True

    phase = await run_phase(
        client,
        send,
        concurrency=ADD_CONCURRENCY,
        ok_status=201,
        total=n,
        seed=99,
        server_pid=server_pid,
        check=check,
    )
    s = phase.summary()
    return {
        "requests": s["requests"],
        "concurrency": ADD_CONCURRENCY,
        "seconds": s["seconds"],
        "adds_per_s": s["req_per_s"],
        "p50_ms": s["p50_ms"],
        "p99_ms": s["p99_ms"],
        "errors": s["errors"],
        "decisions": dict(phase.notes),
        "server_cpu_pct": s["server_cpu_pct"],
        **({"error_samples": s["error_samples"]} if "error_samples" in s else {}),
    }


async def search_load(
    client: httpx.AsyncClient,
    concurrency: int,
    queries: list[str],
    agents: list[str],
    *,
    duration: float,
    requests: int | None,
    warmup: int,
    server_pid: int | None,
    raw: bool = True,
    single_process: bool = True,
) -> dict[str, Any]:
    """One concurrency level of POST /v1/search: warm-up, then the measured run."""

    async def send(c: httpx.AsyncClient, rng: random.Random) -> httpx.Response:
        body = {"agent_id": rng.choice(agents), "query": pick_query(rng, queries), "limit": 10}
        return await c.post("/v1/search", json=body)

    def check(r: httpx.Response, phase: Phase) -> bool:
        results = r.json().get("results")
        if not isinstance(results, list):
            return False
        phase.notes["results"] += len(results)
        return True

    if warmup > 0:
        await run_phase(
            client, send, concurrency=concurrency, ok_status=200, total=max(warmup, concurrency)
        )
    # With several worker processes /metrics is one worker's view: no server-side mean then.
    before = await server_route_totals(client) if single_process else {}
    if raw:
        phase = await run_raw_search_phase(
            str(client.base_url),
            {k: v for k, v in client.headers.items() if k.lower() == "authorization"},
            queries,
            agents,
            concurrency=concurrency,
            total=requests,
            duration=None if requests else duration,
            seed=concurrency,
            server_pid=server_pid,
        )
    else:
        phase = await run_phase(
            client,
            send,
            concurrency=concurrency,
            ok_status=200,
            total=requests,
            duration=None if requests else duration,
            seed=concurrency,
            server_pid=server_pid,
            check=check,
        )
    after = await server_route_totals(client) if single_process else {}
    row: dict[str, Any] = {"concurrency": concurrency, **phase.summary()}
    key = ("POST", "/v1/search")
    if key in before and key in after and after[key][1] > before[key][1]:
        n = after[key][1] - before[key][1]
        # The server's own time per request (middleware to last byte), without the client.
        row["server_mean_ms"] = round(1000 * (after[key][0] - before[key][0]) / n, 2)
    else:
        row["server_mean_ms"] = None
    row["mean_results"] = round(phase.notes["results"] / phase.requests, 2) if phase.requests else 0
    row["pass"] = (
        row["req_per_s"] >= TARGET_RPS and row["p99_ms"] < TARGET_P99_MS and row["errors"] == 0
    )
    return row


# -- report ---------------------------------------------------------------------------------------


def fmt_opt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def render(result: dict[str, Any]) -> str:
    """The human report: header lines, the search table and the target verdicts."""
    m, srv = result["machine"], result["server"]
    lines = [
        f"# memvault serve load benchmark ({srv['url']}, "
        f"{'spawned' if srv['spawned'] else 'external'}, auth {'on' if srv['auth'] else 'off'})",
        "",
        f"- machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}",
        "- load average at start (1/5/15 min): "
        + " / ".join(f"{x:.2f}" for x in m["loadavg_start"]),
        f"- command: `{result['command']}`",
        f"- search queries: {result['queries_distinct']} distinct forms, "
        + (
            "repeated verbatim (the query-embedding cache answers many)"
            if result.get("queries_repeated")
            else "made unique per request (no query-embedding cache hits)"
        ),
    ]
    ing = result.get("ingest")
    if ing:
        lines.append(
            f"- ingest: {ing['memories']:,} memories for {result['config']['agents']} agents in "
            f"{ing['batches']} batches of <= {BATCH} (dedup off): {ing['seconds']:.1f} s, "
            f"**{ing['memories_per_s']:.0f} memories/s**, batch p50 {ing['batch_p50_ms']:.0f} ms, "
            f"errors {ing['errors']}"
        )
    else:
        lines.append("- ingest: skipped")
    add = result.get("adds")
    if add:
        decisions = ", ".join(f"{k} {v}" for k, v in sorted(add["decisions"].items()))
        lines.append(
            f"- single adds: {add['requests']} POST /v1/memories at concurrency "
            f"{add['concurrency']} (dedup on): **{add['adds_per_s']:.1f} adds/s**, "
            f"p50 {add['p50_ms']:.1f} ms, p99 {add['p99_ms']:.1f} ms, errors {add['errors']} "
            f"(decisions: {decisions or '-'})"
        )
    else:
        lines.append("- single adds: skipped")
    lines += [
        "",
        "| concurrency | requests | req/s | p50 ms | p95 ms | p99 ms | max ms | errors | target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in result["search"]:
        lines.append(
            f"| {r['concurrency']} | {r['requests']} | {r['req_per_s']:.1f} | {r['p50_ms']:.1f} | "
            f"{r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} | {r['errors']} | "
            f"{'PASS' if r['pass'] else 'FAIL'} |"
        )
    lines += [
        "",
        f"{TARGET_LINE}: {'PASS' if result['pass'] else 'FAIL'}",
        "",
        "| concurrency | server mean ms (/metrics) | client mean ms | client CPU % | "
        "server CPU % | results/query |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["search"]:
        lines.append(
            f"| {r['concurrency']} | {fmt_opt(r['server_mean_ms'], '.2f')} | {r['mean_ms']:.2f} | "
            f"{r['client_cpu_pct']:.0f} | {fmt_opt(r['server_cpu_pct'], '.0f')} | "
            f"{r['mean_results']:.1f} |"
        )
    lines += [
        "",
        f"- server RSS at end: {fmt_opt(srv['rss_mb_end'], '.0f')} MiB "
        f"(peak {fmt_opt(srv['rss_mb_peak'], '.0f')} MiB)",
    ]
    for r in result["search"]:
        for sample in r.get("error_samples", []):
            lines.append(f"- error sample (concurrency {r['concurrency']}): {sample}")
    for name in ("ingest", "adds"):
        for sample in (result.get(name) or {}).get("error_samples", []):
            lines.append(f"- error sample ({name}): {sample}")
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--memories", type=int, default=10_000, help="memories to ingest [10000]")
    ap.add_argument("--agents", type=int, default=10, help="agents to spread them over [10]")
    ap.add_argument("--adds", type=int, default=500, help="single adds at concurrency 8 [500]")
    ap.add_argument(
        "--concurrency", default="1,8,32", help="search concurrency levels, comma-separated"
    )
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per level [20]")
    ap.add_argument(
        "--requests", type=int, default=None, help="requests per level instead of --duration"
    )
    ap.add_argument("--warmup", type=int, default=5, help="warm-up requests per level [5]")
    ap.add_argument("--queries", type=int, default=400, help="distinct queries in the pool [400]")
    ap.add_argument("--no-auth", action="store_true", help="start the server with --no-auth")
    ap.add_argument("--server", default=None, help="benchmark this running server instead")
    ap.add_argument("--api-key", default=None, help="API key for --server")
    ap.add_argument("--server-pid", type=int, default=None, help="--server's pid (CPU, RSS)")
    ap.add_argument("--skip-ingest", action="store_true", help="do not ingest memories")
    ap.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    ap.add_argument(
        "--repeat-queries",
        action="store_true",
        help="reuse the pool's queries verbatim (the query-embedding cache then answers many)",
    )
    ap.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="search load client: raw keep-alive HTTP/1.1 (light, like wrk) or httpx [raw]",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="serve --workers of the spawned (or given) server; >1 skips /metrics means [1]",
    )
    ap.add_argument(
        "--compare",
        default=None,
        metavar="REF",
        help="also run git REF's server (temporary worktree) and search both in turns",
    )
    ap.add_argument(
        "--rounds", type=int, default=4, help="--compare/--models: turns per build and level [4]"
    )
    ap.add_argument(
        "--models",
        default=None,
        help="process models to search in turns, comma-separated: serve (memvault serve), "
        "uvicorn (its multiprocess supervisor), gunicorn (uvicorn workers), serve@REF",
    )
    ap.add_argument(
        "--kill",
        action="store_true",
        help="--models: then kill -9 one worker of each under load and report the recovery",
    )
    ap.add_argument(
        "--kill-duration", type=float, default=20.0, help="--kill: seconds of load [20]"
    )
    ap.add_argument(
        "--kill-concurrency", type=int, default=8, help="--kill: concurrent clients [8]"
    )
    args = ap.parse_args(argv)
    args.levels = [int(c) for c in str(args.concurrency).split(",") if c.strip()]
    if not args.levels or min(args.levels) < 1:
        ap.error("--concurrency needs positive integers")
    if args.agents < 1 or args.memories < 0 or args.adds < 0:
        ap.error("--agents must be >= 1, --memories and --adds >= 0")
    if args.requests is not None and args.requests < 1:
        ap.error("--requests must be >= 1")
    if args.server is None and (args.api_key or args.server_pid):
        ap.error("--api-key and --server-pid go with --server")
    if args.compare and args.server:
        ap.error("--compare starts its own servers; it does not go with --server")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    args.models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else []
    if args.models and (args.compare or args.server):
        ap.error("--models starts its own servers; not with --compare or --server")
    if any(m.partition("@")[0] not in MODELS for m in args.models):
        ap.error(f"--models: each of {', '.join(MODELS)} (serve@REF for another build)")
    if any("@" in m and not m.startswith("serve@") for m in args.models):
        ap.error("--models: only serve takes @REF")
    if len(set(args.models)) != len(args.models):
        ap.error("--models: each model once")
    if args.kill and not args.models:
        ap.error("--kill goes with --models")
    if args.kill_duration <= 0 or args.kill_concurrency < 1:
        ap.error("--kill-duration must be > 0 and --kill-concurrency >= 1")
    return args


async def run(
    args: argparse.Namespace, url: str, api_key: str | None, pid: int | None
) -> dict[str, Any]:
    """Every phase against the server at ``url``."""
    agents = agent_ids(args.agents)
    queries = query_pool(args.queries)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    conns = max([*args.levels, ADD_CONCURRENCY]) + 4
    limits = httpx.Limits(max_connections=conns, max_keepalive_connections=conns)
    result: dict[str, Any] = {
        "queries_distinct": len(queries),
        "queries_repeated": REPEAT_QUERIES,
    }
    async with httpx.AsyncClient(
        base_url=url, headers=headers, limits=limits, timeout=httpx.Timeout(120.0)
    ) as client:
        health = await client.get("/health")
        health.raise_for_status()
        result["server_version"] = health.json().get("version")
        if args.skip_ingest or args.memories == 0:
            result["ingest"] = None
        else:
            print(f"ingesting {args.memories:,} memories ...", file=sys.stderr, flush=True)
            result["ingest"] = await ingest(client, args.memories, agents, pid)
        if args.adds:
            print(f"{args.adds} single adds ...", file=sys.stderr, flush=True)
            result["adds"] = await single_adds(client, args.adds, agents, pid)
        else:
            result["adds"] = None
        rows = []
        for level in args.levels:
            print(f"search at concurrency {level} ...", file=sys.stderr, flush=True)
            rows.append(
                await search_load(
                    client,
                    level,
                    queries,
                    agents,
                    duration=args.duration,
                    requests=args.requests,
                    warmup=args.warmup,
                    server_pid=pid,
                    raw=args.client == "raw",
                    single_process=args.workers == 1,
                )
            )
        result["search"] = rows
    return result


# -- --compare REF: two builds searched in turns -------------------------------------------------


@contextlib.contextmanager
def ref_worktree(ref: str) -> Any:
    """A temporary detached git worktree of ``ref`` (removed after); yields its ``src`` path."""
    root = Path(__file__).resolve().parent.parent
    where = Path(tempfile.mkdtemp(prefix="memvault-bench-ref-")) / "tree"
    try:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", str(where), ref],
            check=True,
            capture_output=True,
        )
    except subprocess.CalledProcessError:
        shutil.rmtree(where.parent, ignore_errors=True)
        raise
    try:
        yield where / "src"
    finally:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "remove", "--force", str(where)],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(where.parent, ignore_errors=True)


async def _split_later(pid: int | None, delay: float) -> list[int]:
    """:func:`connections_per_worker` of ``pid`` after ``delay`` s ([] without a pid or /proc)."""
    await asyncio.sleep(delay)
    return [] if pid is None else connections_per_worker(pid)


async def compare_level(
    servers: dict[str, SpawnedServer],
    level: int,
    queries: list[str],
    agents: list[str],
    *,
    duration: float,
    rounds: int,
    warmup: int,
) -> dict[str, Any]:
    """One concurrency level against every server, in turns; a summary per build."""
    phases = {name: Phase() for name in servers}
    cpu = dict.fromkeys(servers, 0.0)
    # Each turn's own figures too, so the spread between rounds shows beside the totals.
    rounds_of: dict[str, dict[str, list[float]]] = {
        name: {"req_per_s": [], "p99_ms": [], "loadavg_1m": [], "connections": []}
        for name in servers
    }
    names = list(servers)
    for srv in servers.values():
        headers = {"Authorization": f"Bearer {srv.api_key}"} if srv.api_key else {}
        await run_raw_search_phase(
            srv.url, headers, queries, agents, concurrency=level, total=max(warmup, level),
            duration=None, seed=7,
        )  # fmt: skip
    for turn in range(rounds):
        for name in names if turn % 2 == 0 else names[::-1]:
            srv = servers[name]
            headers = {"Authorization": f"Bearer {srv.api_key}"} if srv.api_key else {}
            before = proc_cpu_seconds(srv.pid)
            # Halfway through the turn: how the clients' connections are split over the workers.
            split = asyncio.create_task(_split_later(srv.pid, duration / rounds / 2))
            got = await run_raw_search_phase(
                srv.url, headers, queries, agents, concurrency=level, total=None,
                duration=duration / rounds, seed=1000 * level + turn,
            )  # fmt: skip
            after = proc_cpu_seconds(srv.pid)
            rounds_of[name]["connections"].append(await split)
            if before is not None and after is not None:
                cpu[name] += after - before
            per = rounds_of[name]
            per["req_per_s"].append(round(got.requests / got.seconds, 1) if got.seconds else 0.0)
            per["p99_ms"].append(round(pct(got.latencies_ms, 99), 1))
            per["loadavg_1m"].append(round(os.getloadavg()[0], 2))
            into = phases[name]
            into.latencies_ms += got.latencies_ms
            into.seconds += got.seconds
            into.errors += got.errors
            into.error_samples += got.error_samples[: 5 - len(into.error_samples)]
            into.statuses.update(got.statuses)
    out: dict[str, Any] = {"concurrency": level}
    for name, phase in phases.items():
        row = phase.summary()
        row.pop("client_cpu_pct", None)
        row.pop("server_cpu_pct", None)
        row["server_cpu_ms_per_search"] = (
            round(1000 * cpu[name] / phase.requests, 2) if phase.requests else None
        )
        row["rounds"] = rounds_of[name]
        out[name] = row
    return out


def render_compare(result: dict[str, Any]) -> str:
    """The --compare table: each build's figures per level and this/ref ratios."""
    ref = result["compare"]["ref"]
    lines = [
        f"memvault serve --workers {result['config']['workers']}: this checkout vs {ref} "
        f"(searched in turns, {result['config']['rounds']} rounds each); "
        f"load average at start {result['machine']['loadavg_start']}, "
        f"at end {result['machine']['loadavg_end']}",
        f"{'conc':>4}  {'build':<6} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} "
        f"{'cpu ms/search':>13}",
    ]
    for row in result["compare"]["levels"]:
        for name in ("ref", "this"):
            r = row[name]
            lines.append(
                f"{row['concurrency']:>4}  {name:<6} {r['req_per_s']:>7.1f} {r['p50_ms']:>7.1f} "
                f"{r['p99_ms']:>7.1f} {r['errors']:>6} "
                f"{fmt_opt(r['server_cpu_ms_per_search'], '.2f'):>13}"
            )
        ratio = row["ratio_this_over_ref"]
        cpu = fmt_opt(ratio["server_cpu_ms_per_search"], ".2f")
        lines.append(
            f"{'':>4}  {'ratio':<6} {fmt_opt(ratio['req_per_s'], '.2f'):>7} "
            f"{fmt_opt(ratio['p50_ms'], '.2f'):>7} {fmt_opt(ratio['p99_ms'], '.2f'):>7} "
            f"{'':>6} {cpu:>13}"
        )
    return "\n".join(lines)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def main_compare(args: argparse.Namespace, result: dict[str, Any]) -> dict[str, Any]:
    """``--compare REF``: both builds' servers, the same memories, searches in turns."""
    result["config"].update({"workers": args.workers, "rounds": args.rounds})
    result["compare"] = {"ref": args.compare, "levels": []}
    agents, queries = agent_ids(args.agents), query_pool(args.queries)
    with ref_worktree(args.compare) as ref_src:
        servers = {
            "ref": SpawnedServer(no_auth=args.no_auth, workers=args.workers, src=ref_src),
            "this": SpawnedServer(no_auth=args.no_auth, workers=args.workers),
        }
        try:
            for name, srv in servers.items():
                print(f"starting {name} server, ingesting ...", file=sys.stderr, flush=True)
                srv.start()
                headers = {"Authorization": f"Bearer {srv.api_key}"} if srv.api_key else {}

                async def fill(url: str = srv.url, h: dict[str, str] = headers) -> None:
                    async with httpx.AsyncClient(
                        base_url=url, headers=h, timeout=httpx.Timeout(120.0)
                    ) as client:
                        if args.memories:
                            await ingest(client, args.memories, agents, None)
                        if args.adds:
                            await single_adds(client, args.adds, agents, None)

                asyncio.run(fill())
            for level in args.levels:
                print(f"search at concurrency {level} ...", file=sys.stderr, flush=True)
                row = asyncio.run(
                    compare_level(
                        servers, level, queries, agents, duration=args.duration,
                        rounds=args.rounds, warmup=args.warmup,
                    )
                )  # fmt: skip
                row["ratio_this_over_ref"] = {
                    key: _ratio(row["this"][key], row["ref"][key])
                    for key in ("req_per_s", "p50_ms", "p99_ms", "server_cpu_ms_per_search")
                }
                result["compare"]["levels"].append(row)
        finally:
            for srv in servers.values():
                srv.stop()
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(render_compare(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


# -- --models: one app and store under different process models ----------------------------------

#: The process models ``--models`` knows; ``serve@REF`` is ``serve`` from git REF's worktree.
MODELS = ("serve", "uvicorn", "gunicorn")
#: The app every model serves: what ``memvault serve --workers N`` runs in each worker.
APP_FACTORY = "memvault.cli.serve:app_factory"


def launch(argv: Sequence[str]) -> None:
    """``bench_server.py --launch uvicorn|gunicorn ...``: serve the app under that supervisor.

    The worker environment is set up by ``serve``'s own :func:`prepare_workers` (options, the
    shared metrics directory, the embedder's thread share), so the model is the only difference:

    * ``uvicorn``: ``uvicorn.run(APP_FACTORY, factory=True, workers=N)``, uvicorn's multiprocess
      supervisor (one socket bound in the parent, dead workers restarted);
    * ``gunicorn``: gunicorn's arbiter with uvicorn's ASGI worker class (this process becomes
      gunicorn, so its pid is the arbiter's).
    """
    ap = argparse.ArgumentParser(prog="bench_server.py --launch")
    ap.add_argument("model", choices=MODELS[1:])
    ap.add_argument("--db", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--log-level", default="warning")
    ap.add_argument("--no-auth", action="store_true")
    args = ap.parse_args(argv)
    from memvault.cli.serve import DEFAULT_MAX_BODY, prepare_workers

    # The options serve builds from its defaults (serve(): ``options``).
    options = {
        "db": args.db, "config": None, "no_auth": args.no_auth,
        "max_body_bytes": DEFAULT_MAX_BODY, "rate_limit": 0.0, "rate_burst": None,
        "cors_origins": [],
    }  # fmt: skip
    prepare_workers(options, args.workers)
    if args.model == "uvicorn":
        import uvicorn

        uvicorn.run(
            APP_FACTORY, factory=True, host=args.host, port=args.port, workers=args.workers,
            log_level=args.log_level, access_log=False,
        )  # fmt: skip
        return
    # uvicorn.workers.UvicornWorker is deprecated in favour of the uvicorn-worker package.
    try:
        import uvicorn_worker  # noqa: F401

        worker_class = "uvicorn_worker.UvicornWorker"
    except ImportError:
        worker_class = "uvicorn.workers.UvicornWorker"
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    os.execv(
        gunicorn,
        [gunicorn, "--workers", str(args.workers), "--worker-class", worker_class,
         "--bind", f"{args.host}:{args.port}", "--log-level", args.log_level,
         "--graceful-timeout", "15", f"{APP_FACTORY}()"],
    )  # fmt: skip


def worker_pids(pid: int) -> list[int]:
    """The server processes under supervisor ``pid``: its children, less multiprocessing's
    resource tracker (not a worker)."""
    out = []
    for child in _children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            out.append(child)
    return sorted(out)


def _established_inodes() -> set[str]:
    """Socket inodes of this machine's established TCP connections (/proc/net/tcp, tcp6)."""
    out: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "01":  # 01: ESTABLISHED
                    out.add(fields[9])
    return out


def holds_connection(pid: int) -> bool:
    """True if process ``pid`` holds an established TCP connection (it accepted one)."""
    try:
        links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False
    mine = {link[8:-1] for link in links if link.startswith("socket:[")}
    return bool(mine & _established_inodes())


def connections_per_worker(pid: int) -> list[int]:
    """How many established TCP connections each worker of supervisor ``pid`` holds, most
    first: the split of the load's keep-alive connections over the workers."""
    established = _established_inodes()
    counts = []
    for worker in worker_pids(pid):
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{worker}/fd").iterdir()]
        except OSError:
            continue
        counts.append(sum(1 for link in links if link[8:-1] in established))
    return sorted(counts, reverse=True)


async def _probe(host: str, port: int) -> tuple[asyncio.StreamWriter, bool]:
    """A fresh connection that asks for /health (kept open, so whoever accepted it holds it)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        return writer, head.startswith(b"HTTP/1.1 200")
    except (OSError, asyncio.IncompleteReadError, TimeoutError):
        return writer, False


async def kill_run(
    srv: SpawnedServer,
    level: int,
    queries: list[str],
    agents: list[str],
    *,
    duration: float,
    kill_at: float,
) -> dict[str, Any]:
    """Search load for ``duration`` s; ``kill_at`` s in, ``kill -9`` one worker of ``srv``.

    Reports the failed requests, how long failures went on after the kill, when the process
    tree had ``workers`` workers again (a new pid), whether the server still answers a fresh
    connection at the end, and the throughput before the kill and in the last quarter of the
    run (keep-alive clients that reconnected after the kill may all sit on the survivor).
    """
    assert srv.pid is not None
    headers = {"Authorization": f"Bearer {srv.api_key}"} if srv.api_key else {}
    parsed = httpx.URL(srv.url)
    host, port = parsed.host, parsed.port or 80
    before_pids = worker_pids(srv.pid)
    done: list[tuple[float, bool]] = []  # (end time since start, ok)
    samples: list[str] = []
    start = time.perf_counter()
    deadline = start + duration
    state: dict[str, Any] = {
        "victim": None, "killed_at": None, "back_at": None, "serving_at": None,
    }  # fmt: skip

    async def client(seed: int) -> None:
        rng = random.Random(seed)
        conn = RawHttp(host, port, headers)
        try:
            while time.perf_counter() < deadline:
                body = json.dumps(
                    {"agent_id": rng.choice(agents), "query": pick_query(rng, queries), "limit": 10}
                ).encode()
                try:
                    status, _ = await conn.post("/v1/search", body)
                    ok = status == 200
                    if not ok and len(samples) < 5:
                        samples.append(f"HTTP {status}")
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    ok = False
                    if len(samples) < 5:
                        samples.append(f"{type(exc).__name__}: {exc}"[:200])
                done.append((time.perf_counter() - start, ok))
                if not ok:
                    # A refused connection fails at once: without a pause a dead server would
                    # count as many failures as the loop can spin.
                    await asyncio.sleep(0.05)
        finally:
            await conn.close()

    async def killer() -> None:
        await asyncio.sleep(kill_at)
        assert srv.pid is not None
        victim = worker_pids(srv.pid)[0]
        state["victim"] = victim
        state["killed_at"] = time.perf_counter() - start
        os.kill(victim, signal.SIGKILL)
        while time.perf_counter() < deadline:
            await asyncio.sleep(0.05)
            if srv.proc is not None and srv.proc.poll() is not None:
                return  # the whole server stopped
            now = worker_pids(srv.pid)
            if len(now) >= len(before_pids) and victim not in now:
                state["back_at"] = time.perf_counter() - start
                break
        else:
            return
        # The new worker serves once it accepts a connection: fresh ones, kept open, until it
        # holds one (the survivor may take many first; it is busy, the new one is not).
        fresh = [p for p in worker_pids(srv.pid) if p not in before_pids]
        probes: list[asyncio.StreamWriter] = []
        try:
            while fresh and time.perf_counter() < deadline:
                with contextlib.suppress(OSError):
                    writer, _ = await _probe(host, port)
                    probes.append(writer)
                if any(holds_connection(p) for p in fresh):
                    state["serving_at"] = time.perf_counter() - start
                    return
                await asyncio.sleep(0.05)
                if len(probes) > 64:  # never hold more than a few dozen idle connections
                    probes.pop(0).close()
        finally:
            for writer in probes:
                writer.close()

    await asyncio.gather(killer(), *(client(1000 + i) for i in range(level)))
    killed_at = state["killed_at"]
    failed = [t for t, ok in done if not ok]
    pre = [t for t, ok in done if ok and t < killed_at]
    tail_from = duration * 0.75
    tail = [t for t, ok in done if ok and t >= tail_from]
    alive = srv.proc is not None and srv.proc.poll() is None
    answers = False
    if alive:
        try:
            with httpx.Client(base_url=srv.url, headers=headers, timeout=10) as c:
                r = c.post("/v1/search", json={"agent_id": agents[0], "query": "on call"})
                answers = r.status_code == 200
        except httpx.HTTPError:
            answers = False
    return {
        "concurrency": level,
        "workers_before": len(before_pids),
        "killed_at_s": round(killed_at, 2),
        "requests": len(done),
        "failed": len(failed),
        "failures_end_s": round(max(failed) - killed_at, 2) if failed else None,
        "worker_back_s": (
            None if state["back_at"] is None else round(state["back_at"] - killed_at, 2)
        ),
        "new_worker_serving_s": (
            None if state["serving_at"] is None else round(state["serving_at"] - killed_at, 2)
        ),
        "server_alive": alive,
        "answers_at_end": answers,
        "req_per_s_before": round(len(pre) / killed_at, 1) if killed_at else 0.0,
        "req_per_s_tail": round(len(tail) / (duration - tail_from), 1),
        "error_samples": samples,
    }


def _model_servers(args: argparse.Namespace, stack: contextlib.ExitStack) -> dict[str, Any]:
    """One SpawnedServer per ``--models`` entry (``serve@REF`` from a worktree of REF)."""
    servers: dict[str, SpawnedServer] = {}
    for name in args.models:
        model, _, ref = name.partition("@")
        src = stack.enter_context(ref_worktree(ref)) if ref else None
        servers[name] = SpawnedServer(
            no_auth=args.no_auth, workers=args.workers, src=src, model=model
        )
    return servers


def render_models(result: dict[str, Any]) -> str:
    """The --models table: per model and level, medians over the rounds and their spread."""
    lines = [
        f"process models, {result['config']['workers']} workers, searched in turns "
        f"({result['config']['rounds']} rounds each); load average at start "
        f"{result['machine']['loadavg_start']}, at end {result['machine']['loadavg_end']}",
        f"{'conc':>4}  {'model':<22} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} "
        f"{'cpu ms/search':>13}  rounds: req/s | p99 ms | connections per worker",
    ]
    for row in result["models"]["levels"]:
        for name in result["models"]["names"]:
            r = row[name]
            per = r["rounds"]
            lines.append(
                f"{row['concurrency']:>4}  {name:<22} {r['req_per_s']:>7.1f} {r['p50_ms']:>7.1f} "
                f"{r['p99_ms']:>7.1f} {r['errors']:>6} "
                f"{fmt_opt(r['server_cpu_ms_per_search'], '.2f'):>13}  "
                + " ".join(f"{x:.0f}" for x in per["req_per_s"])
                + " | "
                + " ".join(f"{x:.0f}" for x in per["p99_ms"])
                + " | conns "
                + " ".join("/".join(map(str, c)) for c in per.get("connections", []))
            )
    for name, k in result["models"].get("kill", {}).items():
        lines.append(
            f"kill -9 {name}: failed {k['failed']} of {k['requests']}, failures until "
            f"+{fmt_opt(k['failures_end_s'], '.2f')} s, worker replaced after "
            f"{fmt_opt(k['worker_back_s'], '.2f')} s, serving after "
            f"{fmt_opt(k['new_worker_serving_s'], '.2f')} s, server alive {k['server_alive']}, "
            f"answers at end {k['answers_at_end']}, req/s before {k['req_per_s_before']:.0f} / "
            f"last quarter {k['req_per_s_tail']:.0f}"
        )
    return "\n".join(lines)


def main_models(args: argparse.Namespace, result: dict[str, Any]) -> dict[str, Any]:
    """``--models A,B,..``: one server per process model over identically filled stores,
    searched in turns at each level; then, with ``--kill``, a worker of each killed under load."""
    result["config"].update({"workers": args.workers, "rounds": args.rounds})
    result["models"] = {"names": list(args.models), "levels": [], "kill": {}}
    agents, queries = agent_ids(args.agents), query_pool(args.queries)
    with contextlib.ExitStack() as stack:
        servers = _model_servers(args, stack)
        try:
            for name, srv in servers.items():
                print(f"starting {name} server, ingesting ...", file=sys.stderr, flush=True)
                srv.start()
                headers = {"Authorization": f"Bearer {srv.api_key}"} if srv.api_key else {}

                async def fill(url: str = srv.url, h: dict[str, str] = headers) -> None:
                    async with httpx.AsyncClient(
                        base_url=url, headers=h, timeout=httpx.Timeout(120.0)
                    ) as client:
                        if args.memories:
                            await ingest(client, args.memories, agents, None)
                        if args.adds:
                            await single_adds(client, args.adds, agents, None)

                asyncio.run(fill())
            for level in args.levels:
                print(f"search at concurrency {level} ...", file=sys.stderr, flush=True)
                result["models"]["levels"].append(
                    asyncio.run(
                        compare_level(
                            servers, level, queries, agents, duration=args.duration,
                            rounds=args.rounds, warmup=args.warmup,
                        )
                    )
                )  # fmt: skip
            if args.kill:
                for name, srv in servers.items():
                    print(f"kill -9 a worker of {name} under load ...", file=sys.stderr)
                    result["models"]["kill"][name] = asyncio.run(
                        kill_run(
                            srv, args.kill_concurrency, queries, agents,
                            duration=args.kill_duration, kill_at=args.kill_duration / 4,
                        )
                    )  # fmt: skip
        finally:
            for srv in servers.values():
                srv.stop()
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(render_models(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the report, write ``--out``; returns the results."""
    args = parse_args(argv)
    global REPEAT_QUERIES
    REPEAT_QUERIES = args.repeat_queries
    loadavg = [round(x, 2) for x in os.getloadavg()]
    spawned = (
        SpawnedServer(no_auth=args.no_auth, workers=args.workers) if args.server is None else None
    )
    result: dict[str, Any] = {
        "command": " ".join(
            ["python", "benchmarks/bench_server.py", *(sys.argv[1:] if argv is None else argv)]
        ),
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_start": loadavg,
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "config": {
            "memories": args.memories,
            "agents": args.agents,
            "adds": args.adds,
            "concurrency": args.levels,
            "duration_s": None if args.requests else args.duration,
            "requests": args.requests,
            "warmup": args.warmup,
            "batch": BATCH,
        },
        "target": {"req_per_s": TARGET_RPS, "p99_ms": TARGET_P99_MS, "errors": 0},
    }
    if args.compare:
        return main_compare(args, result)
    if args.models:
        return main_models(args, result)
    try:
        if spawned is not None:
            print("starting memvault serve ...", file=sys.stderr, flush=True)
            spawned.start()
            url, key, pid = spawned.url, spawned.api_key, spawned.pid
        else:
            url, key, pid = args.server.rstrip("/"), args.api_key, args.server_pid
        result.update(asyncio.run(run(args, url, key, pid)))
        result["server"] = {
            "url": url,
            "spawned": spawned is not None,
            "auth": key is not None,
            "pid": pid,
            "rss_mb_end": proc_status_mb(pid, "VmRSS"),
            "rss_mb_peak": proc_status_mb(pid, "VmHWM"),
            "store_dir": None if spawned is None else str(spawned.tmp),
        }
    except BaseException:
        if spawned is not None and spawned.log_tail():
            print(f"server log:\n{spawned.log_tail()}", file=sys.stderr)
        raise
    finally:
        if spawned is not None:
            spawned.stop()
    result["pass"] = bool(result["search"]) and all(r["pass"] for r in result["search"])
    print(render(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--launch"]:
        launch(sys.argv[2:])
    else:
        main()
