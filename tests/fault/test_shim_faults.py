"""Faults from outside through an ``LD_PRELOAD`` shim (tests/fault/fault_shim.c, issue 21):
a slow disk, and a file system that turns read-only while the store is open.

The shim touches only the files whose base name starts with ``MEMVAULT_FAULT_PREFIX`` (the
database, its WAL and journal). It reads its settings at every call, so a process changes them
while it runs (``os.environ`` sets the C environment too), and the read-only fault lasts while a
trigger file exists:

- slow disk (``MEMVAULT_FAULT_DELAY_US`` before every write and sync): writes get slower and
  still succeed; a second writer that waits past its busy timeout for a slow commit gets a
  typed ``MemoryConnectionError`` (HTTP 503 with Retry-After); nothing is half-written;
- read-only after open (``MEMVAULT_FAULT_EROFS_TRIGGER``): ``memvault serve``, already serving,
  answers writes with 503 and Retry-After while reads keep working, and takes writes again
  once the fault is gone, without a restart.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from live_server import wait_until_serving
from memvault.backends.sqlite import SQLiteBackend
from memvault.errors import MemoryConnectionError, MemoryError
from memvault.integrity import check_store
from memvault.models import MemoryStoreRequest
from memvault.protocols import Embedder
from memvault.server.errors import error_status

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("gcc") is None,
    reason="the fault shim needs Linux (LD_PRELOAD, /proc/self/fd) and gcc",
)

SHIM_SOURCE = Path(__file__).with_name("fault_shim.c")
OUTCOMES: dict[str, str] = {}  # fault -> what the user saw (conftest writes it out)


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lib = tmp_path_factory.mktemp("shim") / "fault_shim.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(SHIM_SOURCE), "-ldl"],
        check=True,
        capture_output=True,
    )
    return lib


def _ids(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM memories")}


def _env(shim: Path, **fault: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    env["LD_PRELOAD"] = str(shim)
    env.update(fault)
    return env


# -- slow disk ------------------------------------------------------------------------------------

CHILD_SLOW = """
import asyncio, json, os, sys, time
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings import default_embedder
from memvault.models import MemoryStoreRequest

db = sys.argv[1]

def note(i):
    return MemoryStoreRequest(content=f"Incident {i}: the disk alarm fired on host {i % 7}.")

async def timed(store, first, n):
    ids, t0 = [], time.perf_counter()
    for i in range(first, first + n):
        ids.append(await store.store("ops", note(i)))
    return ids, (time.perf_counter() - t0) / n

async def main():
    store = SQLiteBackend(db, default_embedder(), synchronous="full")
    await store.connect()
    out = {}
    fast, out["write_s_fast"] = await timed(store, 0, 5)
    os.environ["MEMVAULT_FAULT_DELAY_US"] = "20000"  # 20 ms before every write and sync
    slow, out["write_s_slow"] = await timed(store, 100, 5)
    out["acked"] = fast + slow
    print(json.dumps(out), flush=True)
    # The test opens its own connection now: opening needs the lock too, and must not be what
    # runs into the slow commit below. It says when (a line on stdin).
    sys.stdin.readline()
    # A very slow disk: one commit holds the write lock for seconds.
    os.environ["MEMVAULT_FAULT_DELAY_US"] = "300000"
    print(await store.store("ops", note(200)), flush=True)
    await store.disconnect()

asyncio.run(main())
"""


async def test_slow_disk_is_slower_then_typed_past_the_busy_timeout(
    tmp_path: Path, shim: Path, minilm: Embedder
) -> None:
    db = tmp_path / "slowstore.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_SLOW, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(shim, MEMVAULT_FAULT_PREFIX="slowstore.db"),
    )
    # Another writer (this process, a fast disk of its own) waits 100 ms for the lock: while
    # the slow commit holds it, it must get a typed error, not a hang or a half-write.
    other = SQLiteBackend(db, minilm, synchronous="full", busy_timeout_ms=100)
    error: MemoryError | None = None
    acked: list[str] = []
    try:
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        first = child.stdout.readline()
        assert first, child.stderr.read()[-3000:]
        timings = json.loads(first)
        acked += timings["acked"]
        await other.connect()
        child.stdin.write("go\n")  # now the slow commit
        child.stdin.flush()
        while child.poll() is None and error is None:
            try:
                acked.append(await other.store("ops", MemoryStoreRequest(content="Other.")))
            except MemoryError as exc:
                error = exc
            await asyncio.sleep(0.01)
        rest, errs = child.communicate(timeout=300)
        assert child.returncode == 0, errs[-3000:]
        acked.append(rest.strip().splitlines()[-1])  # the slow commit succeeded
        acked.append(await other.store("ops", MemoryStoreRequest(content="After.")))
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        await other.disconnect()
    assert error is not None, "the other writer never waited past its busy timeout"
    assert isinstance(error, MemoryConnectionError), repr(error)
    assert error_status(error) == 503  # what the server answers, with Retry-After
    # Nothing half-written: exactly the acknowledged memories, and a clean check.
    assert _ids(db) == set(acked)
    report = check_store(str(db), embedder=minilm)
    assert report.ok, report.summary()
    OUTCOMES["slow disk (20 ms, then 300 ms per write/sync; LD_PRELOAD shim)"] = (
        f"writes slower, no errors: {timings['write_s_fast'] * 1000:.0f} ms -> "
        f"{timings['write_s_slow'] * 1000:.0f} ms per write (synchronous=FULL); a writer "
        f"waiting past its busy timeout: {type(error).__name__} (HTTP 503, Retry-After): "
        f"{error}; nothing half-written"
    )


# -- read-only file system after open --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_read_only_after_open_gives_503_reads_go_on_and_writes_recover(
    tmp_path: Path, shim: Path, minilm: Embedder
) -> None:
    db = tmp_path / "rostore.db"
    trigger = tmp_path / "erofs"
    port = _free_port()
    log = tmp_path / "serve.log"
    env = _env(shim, MEMVAULT_FAULT_PREFIX="rostore.db", MEMVAULT_FAULT_EROFS_TRIGGER=str(trigger))
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", str(db), "serve", "--no-auth",
             "--port", str(port), "--log-level", "warning"],
            stdout=sink, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    acked: list[str] = []
    try:
        wait_until_serving(proc, base, log, timeout=120)
        with httpx.Client(base_url=base, timeout=60) as c:
            for i in range(3):
                r = c.post("/v1/memories", json={"agent_id": "ops", "content": f"Disk alarm {i}."})
                assert r.status_code == 201, r.text
                acked.append(r.json()["id"])
            trigger.touch()  # the file system turns read-only under the open store
            during = c.post("/v1/memories", json={"agent_id": "ops", "content": "During it."})
            assert during.status_code == 503, during.text
            assert during.headers.get("retry-after", "").isdigit()
            assert during.json()["error"]["code"] == "backend_unavailable"
            batch = c.post(
                "/v1/memories/batch",
                json={"agent_id": "ops", "items": [{"content": "a"}, {"content": "b"}]},
            )
            assert batch.status_code == 503, batch.text
            found = c.post("/v1/search", json={"agent_id": "ops", "query": "disk alarm"})
            assert found.status_code == 200, found.text  # reads keep working
            assert {m["id"] for m in found.json()["results"]} <= set(acked)
            listed = c.get("/v1/memories", params={"agent_id": "ops", "limit": 10})
            assert listed.status_code == 200, listed.text
            assert {m["id"] for m in listed.json()["memories"]} == set(acked)
            trigger.unlink()  # the fault goes away: the same server writes again
            after = c.post("/v1/memories", json={"agent_id": "ops", "content": "After it."})
            assert after.status_code == 201, after.text
            acked.append(after.json()["id"])
    finally:
        trigger.unlink(missing_ok=True)
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert _ids(db) == set(acked)  # nothing half-written
    report = check_store(str(db), embedder=minilm)
    assert report.ok, report.summary()
    OUTCOMES["read-only file system after open (EROFS from the shim)"] = (
        f"HTTP 503 backend_unavailable, Retry-After {during.headers.get('retry-after')}: "
        f"{during.json()['error']['message']}; searches and lists answer 200 meanwhile; "
        "writes succeed again once the fault is gone, without a restart"
    )
