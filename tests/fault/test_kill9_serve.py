"""kill -9 of ``memvault serve`` under concurrent REST writes and deletes.

A real server subprocess on a real SQLite file; four client threads add memories and delete
some of their own, recording every request the server acknowledged (201 / 200). The server is
killed with SIGKILL at a random moment, then the store is checked with the campaign's
invariants: it opens, every acknowledged write is there, every acknowledged delete is gone and
audited, ids are live xor archived xor deleted, the audit log matches, check is clean, search
works. Rounds: ``MEMVAULT_FAULT_ROUNDS`` (default 2).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_kill9_campaign import BUILD, ROUNDS, SEED, _verify

from live_server import wait_until_serving
from memvault.protocols import Embedder

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

WRITERS = 4


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _writer(url: str, n: int, stop: threading.Event, acks: list[dict[str, Any]]) -> None:
    rng = random.Random(n)
    mine: list[str] = []
    with httpx.Client(base_url=url, timeout=30) as c:
        i = 0
        while not stop.is_set():
            try:
                if mine and rng.random() < 0.2:
                    victim = mine.pop(rng.randrange(len(mine)))
                    # A delete the server commits but whose answer the kill cuts off: the id
                    # may then be gone, and only its memory.delete audit record says why.
                    acks.append({"id": victim, "delete_sent": True})
                    r = c.delete(f"/v1/memories/{victim}", params={"agent_id": "ops"})
                    if r.status_code == 200:
                        acks.append({"id": victim, "deleted": True})
                    continue
                text = f"Writer {n} note {i}: nightly job disk alarm {rng.random():.6f}"
                r = c.post("/v1/memories", json={"agent_id": "ops", "content": text})
                if r.status_code == 201:
                    mid = r.json()["id"]
                    acks.append({"id": mid})
                    mine.append(mid)
                i += 1
            except httpx.HTTPError:
                return  # the server is gone


def _serve(db: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", str(db), "serve", "--no-auth",
             "--port", str(port), "--log-level", "warning"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )  # fmt: skip


async def test_kill9_of_the_server_under_concurrent_writes(
    tmp_path: Path, minilm: Embedder
) -> None:
    rng = random.Random(f"{SEED}-serve")
    stats = {"rounds": 0, "acked": 0, "lost": 0, "failures": 0, "finished_before_kill": 0}
    problems_all: list[str] = []
    for round_no in range(ROUNDS):
        db = tmp_path / f"served-{round_no}.db"
        port = _free_port()
        log = tmp_path / f"serve-{round_no}.log"
        proc = _serve(db, port, log)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(proc, url, log, timeout=120)
            acks: list[dict[str, Any]] = []
            stop = threading.Event()
            threads = [
                threading.Thread(target=_writer, args=(url, n, stop, acks)) for n in range(WRITERS)
            ]
            for t in threads:
                t.start()
            delay = rng.uniform(0.5, 3.0)
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=60) == -signal.SIGKILL
            stop.set()
            for t in threads:
                t.join(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        problems = await _verify("serve", db, acks, minilm)
        stats["rounds"] += 1
        stats["acked"] += len(acks)
        stats["lost"] += sum(1 for p in problems if "lost" in p)
        stats["failures"] += bool(problems)
        problems_all += [f"round {round_no} (kill after {delay:.2f}s): {p}" for p in problems]
        assert any(not a.get("deleted") for a in acks), "no write was acknowledged before the kill"
    BUILD.mkdir(exist_ok=True)
    out = BUILD / "fault_campaign.json"
    summary = json.loads(out.read_text()) if out.exists() else {}
    summary["serve (REST writes + deletes)"] = stats
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\nkill -9 of memvault serve: {stats}")
    assert not problems_all, "\n".join(problems_all)
