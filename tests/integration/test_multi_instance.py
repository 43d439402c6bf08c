"""Three ``memvault serve`` processes over one PostgreSQL behave as one service.

Three real servers (subprocesses on loopback ports, standing in for hosts behind a load
balancer) serve one private PostgreSQL schema with API keys. First the maintenance lease: with
a poll of half a second every server tries a pass, and each agent's daily retention sweep runs
exactly once across the three. Then the load: client threads spread over all three add,
update, delete and search; after each acknowledged write the client reads it back from another
instance (read-your-writes across instances). Server 1 is killed with SIGKILL mid-load and
restarted. Afterwards:

* every acknowledged write is there (its last acknowledged content), on every instance, and
  every acknowledged delete is gone; a write whose answer the kill cut off after it was sent
  may have landed, so for its id the content it would leave (or its delete) is accepted too;
* only requests to the killed server failed (its in-flight ones and those sent while it was
  down); the other two answered every request;
* the audit log holds each acknowledged add and delete exactly once;
* a dashboard login on one instance works on the others, and an org policy published through
  one reaches the next context served by another.

The figures (writes acknowledged and found, errors by instance) are printed for the report.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from live_server import wait_until_serving
from memvault.server.keys import open_key_store

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
]

SERVERS = 3
KILLED = 1
AGENTS = [f"agent-{n}" for n in range(6)]
LOAD_SECONDS = float(os.environ.get("MEMVAULT_MULTI_LOAD_SECONDS", "16"))
CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
SWEPT_RE = re.compile(r"maintenance .*?: (\d+) agent\(s\).*? swept (\d+) \(")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@dataclass
class Server:
    n: int
    port: int
    log: Path
    db: str
    config: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        # Three servers and the clients share the machine's cores: one embedder thread each.
        env["MEMVAULT_EMBEDDER_THREADS"] = "1"
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memvault", "--db", self.db, "--config",
                 str(self.config), "serve", "--port", str(self.port), "--log-level", "info"],
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=env,
            )  # fmt: skip

    def wait(self) -> None:
        assert self.proc is not None
        wait_until_serving(self.proc, self.url, self.log, timeout=180)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Ledger:
    """What the clients were told, and what failed where."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    content: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (agent, text)
    deleted: set[str] = field(default_factory=set)
    # Writes sent whose answer never came (the killed server's in-flight requests): id -> the
    # content they would leave (None: a delete). They may or may not have landed.
    unanswered: dict[str, str | None] = field(default_factory=dict)
    ops: Counter[str] = field(default_factory=Counter)
    errors: Counter[int] = field(default_factory=Counter)  # server number -> failed requests
    error_kinds: Counter[str] = field(default_factory=Counter)
    stale_reads: list[str] = field(default_factory=list)
    search_misses: int = 0
    searches_checked: int = 0


def _client_loop(
    n: int, servers: list[Server], secret: str, stop: threading.Event, ledger: Ledger
) -> None:
    rng = random.Random(n)
    agent = AGENTS[n % len(AGENTS)]
    mine: list[str] = []
    clients = [
        httpx.Client(base_url=s.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30)
        for s in servers
    ]
    i = 0
    try:
        while not stop.is_set():
            i += 1
            home = (n + i) % len(servers)  # requests spread over every instance
            other = (home + 1 + rng.randrange(len(servers) - 1)) % len(servers)
            sending: tuple[str, str | None] | None = None  # a delete or update in flight
            try:
                roll = rng.random()
                if mine and roll < 0.15:
                    victim = mine.pop(rng.randrange(len(mine)))
                    sending = (victim, None)
                    r = clients[home].delete(
                        f"/v1/memories/{victim}", params={"agent_id": agent, "reason": "test"}
                    )
                    if r.status_code == 200:
                        with ledger.lock:
                            ledger.deleted.add(victim)
                            ledger.ops["delete"] += 1
                    else:
                        mine.append(victim)
                        ledger.error_kinds[f"delete {r.status_code}"] += 1
                    continue
                if mine and roll < 0.35:
                    target = rng.choice(mine)
                    text = f"Client {n} revised note {i}: rotation {rng.random():.6f} amber"
                    sending = (target, text)
                    r = clients[home].patch(
                        f"/v1/memories/{target}", json={"agent_id": agent, "content": text}
                    )
                    if r.status_code == 200:
                        new_id = r.json().get("id", target)
                        with ledger.lock:
                            ledger.ops["update"] += 1
                            ledger.unanswered.pop(target, None)
                            ledger.content.pop(target, None)
                            ledger.content[new_id] = (agent, text)
                        if new_id != target:
                            mine.remove(target)
                            mine.append(new_id)
                        _check_read(clients[other], other, new_id, agent, text, ledger)
                    else:
                        ledger.error_kinds[f"update {r.status_code}"] += 1
                    continue
                if roll < 0.5:
                    query = f"client {n} note"
                    r = clients[home].post(
                        "/v1/search", json={"agent_id": agent, "query": query, "limit": 5}
                    )
                    assert r.status_code == 200, r.text
                    ledger.ops["search"] += 1
                    continue
                token = f"q{n}x{i}z{rng.randrange(10**6)}"
                text = f"Client {n} note {i}: the {token} deploy finished on shard {i % 7}"
                r = clients[home].post(
                    "/v1/memories", json={"agent_id": agent, "content": text, "dedup": False}
                )
                if r.status_code != 201:
                    ledger.error_kinds[f"add {r.status_code}"] += 1
                    continue
                mid = r.json()["id"]
                with ledger.lock:
                    ledger.content[mid] = (agent, text)
                    ledger.ops["add"] += 1
                mine.append(mid)
                _check_read(clients[other], other, mid, agent, text, ledger)
                if i % 5 == 0:
                    _check_search(clients[other], other, mid, agent, token, ledger)
            except httpx.HTTPError as exc:
                with ledger.lock:
                    ledger.errors[home] += 1
                    ledger.error_kinds[type(exc).__name__] += 1
                    # Refused connections never reached a server; only a request cut off
                    # after it was sent may have landed.
                    if sending is not None and not isinstance(exc, httpx.ConnectError):
                        ledger.unanswered[sending[0]] = sending[1]
                time.sleep(0.05)
    finally:
        for c in clients:
            c.close()


def _check_read(
    client: httpx.Client, where: int, mid: str, agent: str, text: str, ledger: Ledger
) -> None:
    try:
        r = client.get(f"/v1/memories/{mid}", params={"agent_id": agent})
    except httpx.HTTPError:
        with ledger.lock:
            ledger.errors[where] += 1
        return
    if r.status_code != 200 or r.json()["content"] != text:
        with ledger.lock:
            ledger.stale_reads.append(f"{mid} on server {where}: {r.status_code} {r.text[:200]}")


def _check_search(
    client: httpx.Client, where: int, mid: str, agent: str, token: str, ledger: Ledger
) -> None:
    try:
        r = client.post("/v1/search", json={"agent_id": agent, "query": token, "limit": 10})
    except httpx.HTTPError:
        with ledger.lock:
            ledger.errors[where] += 1
        return
    ids = [h["id"] for h in r.json().get("results", [])] if r.status_code == 200 else []
    with ledger.lock:
        ledger.searches_checked += 1
        if mid not in ids:
            ledger.search_misses += 1


def _sweeps(servers: list[Server]) -> list[tuple[int, int]]:
    found = []
    for s in servers:
        for line in s.log.read_text(errors="replace").splitlines():
            m = SWEPT_RE.search(line)
            if m:
                found.append((int(m.group(1)), int(m.group(2))))
    return found


def test_three_servers_over_one_postgres_are_one_service(
    tmp_path: Path, postgres_url: str, schemas: Any
) -> None:
    sep = "&" if "?" in postgres_url else "?"
    db = f"{postgres_url}{sep}schema={schemas()}"
    keys = open_key_store(db)
    _, admin = keys.create(name="ops", scopes=["admin"])
    keys.close()
    config = tmp_path / "memvault.yaml"
    config.write_text("maintenance:\n  poll_seconds: 0.5\n  lease_seconds: 20\n")
    servers = [
        Server(n, _free_port(), tmp_path / f"server-{n}.log", db, config) for n in range(SERVERS)
    ]
    ledger = Ledger()
    try:
        for s in servers:
            s.start()
        for s in servers:
            s.wait()
        auth = {"Authorization": f"Bearer {admin}"}

        # -- the maintenance lease: each agent swept once across three schedulers -------------
        with httpx.Client(base_url=servers[0].url, headers=auth, timeout=30) as c:
            for agent in AGENTS:
                r = c.post("/v1/memories", json={"agent_id": agent, "content": f"{agent} ready"})
                assert r.status_code == 201, r.text
        deadline = time.monotonic() + 60
        while sum(swept for _, swept in _sweeps(servers)) < len(AGENTS):
            assert time.monotonic() < deadline, [s.log.read_text()[-3000:] for s in servers]
            time.sleep(0.5)
        time.sleep(3)  # six more polls on each server: none may sweep again
        sweeps = _sweeps(servers)
        assert sum(swept for _, swept in sweeps) == len(AGENTS), sweeps

        # -- the dashboard: a login on one instance is known to the others --------------------
        with httpx.Client(timeout=30) as browser:
            form = browser.get(f"{servers[0].url}/ui/login")
            token = CSRF_RE.search(form.text)
            assert token is not None
            done = browser.post(
                f"{servers[0].url}/ui/login", data={"csrf": token.group(1), "key": admin}
            )
            assert done.status_code == 303, done.text
            for s in servers[1:]:
                assert browser.get(f"{s.url}/ui/").status_code == 200

        # -- an org policy written through one instance heads a context served by another -----
        with (
            httpx.Client(base_url=servers[0].url, headers=auth, timeout=30) as a,
            httpx.Client(base_url=servers[2].url, headers=auth, timeout=30) as b,
        ):
            before = b.post("/v1/context", json={"agent_id": AGENTS[0], "query": "deploys"})
            assert before.status_code == 200, before.text
            policy = "Never deploy on Fridays without a second reviewer."
            r = a.post("/v1/org/facts", json={"kind": "policy", "content": policy})
            assert r.status_code in (200, 201), r.text
            after = b.post("/v1/context", json={"agent_id": AGENTS[0], "query": "deploys"})
            assert policy in after.text, after.text[:2000]

        # -- the load, with one server killed and restarted ----------------------------------
        stop = threading.Event()
        threads = [
            threading.Thread(target=_client_loop, args=(n, servers, admin, stop, ledger))
            for n in range(6)
        ]
        for t in threads:
            t.start()
        time.sleep(LOAD_SECONDS * 0.4)
        killed = servers[KILLED]
        assert killed.proc is not None
        killed.proc.send_signal(signal.SIGKILL)
        killed.proc.wait()
        time.sleep(2)
        killed.start()
        killed.wait()
        time.sleep(LOAD_SECONDS * 0.6)
        stop.set()
        for t in threads:
            t.join(timeout=120)

        # -- what the clients were told holds, on every instance -----------------------------
        lost, resurrected = [], []
        live = {m: v for m, v in ledger.content.items() if m not in ledger.deleted}
        for s in servers:
            with httpx.Client(base_url=s.url, headers=auth, timeout=60) as c:
                seen: dict[str, str] = {}
                for agent in AGENTS:
                    offset = 0
                    while True:
                        r = c.get(
                            "/v1/memories",
                            params={"agent_id": agent, "limit": 1000, "offset": offset},
                        )
                        assert r.status_code == 200, r.text
                        page = r.json()["memories"]
                        seen.update({m["id"]: m["content"] for m in page})
                        if len(page) < 1000:
                            break
                        offset += 1000
                # An unanswered write may have landed: its content (or its delete) is then
                # what the store holds, and the acknowledged one is no longer the last word.
                lost += [
                    f"server {s.n}: {m}"
                    for m, (_, t) in live.items()
                    if seen.get(m) != t
                    and not (m in ledger.unanswered and seen.get(m) == ledger.unanswered[m])
                ]
                resurrected += [f"server {s.n}: {m}" for m in ledger.deleted if m in seen]
        # The audit log: each acknowledged add and delete once.
        with httpx.Client(base_url=servers[2].url, headers=auth, timeout=60) as c:
            audit: Counter[tuple[str, str]] = Counter()
            for agent in AGENTS:
                r = c.get("/v1/audit", params={"agent_id": agent, "limit": 10_000})
                assert r.status_code == 200, r.text
                for rec in r.json()["records"]:
                    audit[(rec["action"], rec.get("memory_id") or "")] += 1
        twice_deleted = [m for m in ledger.deleted if audit[("memory.delete", m)] != 1]
        acked_stored = [m for m in ledger.content if audit[("memory.store", m)] == 0]
        doubled = [k for k, v in audit.items() if k[0] == "memory.store" and v > 1]

        report = {
            "ops": dict(ledger.ops),
            "acknowledged writes": ledger.ops["add"] + ledger.ops["update"] + ledger.ops["delete"],
            "found": len([m for m in ledger.content if m not in ledger.deleted]) * SERVERS
            - len(lost),
            "errors by server": {s.n: ledger.errors[s.n] for s in servers},
            "error kinds": dict(ledger.error_kinds),
            "stale reads": len(ledger.stale_reads),
            "unanswered writes (may have landed)": len(ledger.unanswered),
            "searches checked": ledger.searches_checked,
            "search misses": ledger.search_misses,
            "sweeps (agents, swept) per pass that swept": [x for x in sweeps if x[1]],
        }
        print("\nmulti-instance report:", report)
        assert not lost, lost[:10]
        assert not resurrected, resurrected[:10]
        assert not ledger.stale_reads, ledger.stale_reads[:10]
        assert not twice_deleted and not acked_stored and not doubled, (
            twice_deleted[:5],
            acked_stored[:5],
            doubled[:5],
        )
        # Only the killed server's requests failed; the others answered everything.
        assert all(ledger.errors[s.n] == 0 for s in servers if s.n != KILLED), report
        assert not {k for k in ledger.error_kinds if k[0].isalpha() and " 5" in k}, report
        assert ledger.ops["add"] > 30 and ledger.ops["update"] > 5 and ledger.ops["delete"] > 5
        assert ledger.search_misses <= max(1, ledger.searches_checked // 20), report
    finally:
        for s in servers:
            with contextlib.suppress(Exception):
                s.stop()
