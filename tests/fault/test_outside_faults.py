"""Faults from outside (issue 21): disk full, read-only file system, a damaged database file,
PostgreSQL stopped mid-service. Each gives a typed error (``MemoryStoreError`` /
``MemoryConnectionError``; HTTP 503 with Retry-After from the server), never a half-written
memory, and the store recovers by itself once the fault goes away: the same open store (or
server) takes writes again without a restart.

Disk full uses a file-size limit (``RLIMIT_FSIZE``) in a child process everywhere, and a small
tmpfs where this machine lets the tests mount one; the read-only file system is a read-only
bind mount (skipped where mounting is not allowed: a root user ignores chmod, so there is no
unprivileged way to make a file read-only for it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from live_server import wait_until_serving
from memvault.backends.sqlite import SQLiteBackend
from memvault.backup import backup_store, restore_backup
from memvault.errors import MemoryConnectionError, MemoryError, MemoryStoreError
from memvault.integrity import check_store
from memvault.models import MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder

TYPED = (MemoryStoreError, MemoryConnectionError)
OUTCOMES: dict[str, str] = {}  # fault -> what the user saw (conftest writes it out)


def _note(i: int) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=f"Incident {i}: the disk alarm fired on host {i % 7}. " * 20)


def _ids(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {r[0] for r in conn.execute("SELECT id FROM memories")}


# -- disk full -------------------------------------------------------------------------------------

CHILD_FSIZE = """
import asyncio, json, os, resource, signal, sys
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings import default_embedder
from memvault.errors import MemoryError
from memvault.models import MemoryStoreRequest

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
db = sys.argv[1]

def note(i):
    return MemoryStoreRequest(content=f"Incident {i}: the disk alarm fired on host {i % 7}. " * 20)

async def main():
    store = SQLiteBackend(db, default_embedder())
    await store.connect()
    acked = [await store.store("ops", note(i)) for i in range(5)]
    sizes = [os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p)]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max(sizes) + 64 * 1024, hard))
    error = None
    for i in range(5, 2000):
        try:
            acked.append(await store.store("ops", note(i)))
        except MemoryError as exc:
            error = (type(exc).__name__, str(exc))
            break
    failed_reads = None
    try:
        await store.count("ops")
    except MemoryError as exc:
        failed_reads = type(exc).__name__
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space is back
    acked.append(await store.store("ops", note(9999)))  # the same open store writes again
    await store.disconnect()
    print(json.dumps({"error": error, "acked": acked, "failed_reads": failed_reads}))

asyncio.run(main())
"""


def test_disk_full_by_file_size_limit_is_typed_and_recovers(
    tmp_path: Path, minilm: Embedder
) -> None:
    db = tmp_path / "store.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD_FSIZE, str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is not None, "the file-size limit never stopped a write"
    kind, message = result["error"]
    assert kind in ("MemoryStoreError", "MemoryConnectionError"), result["error"]
    assert result["failed_reads"] is None  # reads go on while the disk is full
    # Nothing half-written: exactly the acknowledged memories, and a clean check.
    assert _ids(db) == set(result["acked"])
    report = check_store(str(db), embedder=minilm)
    assert report.ok, report.summary()
    OUTCOMES["disk full (RLIMIT_FSIZE)"] = f"{kind}: {message}; recovered without reopening"


@contextlib.contextmanager
def _mounted(*commands: list[str], undo: list[str]) -> Iterator[None]:
    """Run mount commands; skip the test when this machine does not allow them."""
    done: list[list[str]] = []
    try:
        for cmd in commands:
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                pytest.skip(f"cannot {' '.join(cmd)}: {run.stderr.strip()}")
            done.append(cmd)
        yield
    finally:
        if done:
            subprocess.run(undo, capture_output=True)


async def test_disk_full_on_a_small_tmpfs_is_typed_and_recovers(
    tmp_path: Path, minilm: Embedder
) -> None:
    if shutil.which("mount") is None or sys.platform != "linux":
        pytest.skip("needs Linux mount")
    mnt = tmp_path / "small"
    mnt.mkdir()
    with _mounted(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
        undo=["umount", "-l", str(mnt)],
    ):
        db = mnt / "store.db"
        store = SQLiteBackend(db, minilm)
        await store.connect()
        try:
            acked: list[str] = []
            error: MemoryError | None = None
            for i in range(2000):
                try:
                    acked.append(await store.store("ops", _note(i)))
                except MemoryError as exc:
                    error = exc
                    break
            assert isinstance(error, TYPED), error
            hits = await store.retrieve("ops", MemoryQuery(text="disk alarm", limit=3))
            assert hits  # reads go on
            remount = ["mount", "-o", "remount,size=16m", str(mnt)]
            assert subprocess.run(remount, capture_output=True).returncode == 0
            acked.append(await store.store("ops", _note(99_999)))  # recovered by itself
        finally:
            await store.disconnect()
        assert _ids(db) == set(acked)
        report = check_store(str(db), embedder=minilm)
        assert report.ok, report.summary()
        OUTCOMES["disk full (1 MiB tmpfs)"] = (
            f"{type(error).__name__}: {error}; writes resumed on the same open store after "
            "the tmpfs grew"
        )


# -- read-only file system ------------------------------------------------------------------------


async def test_read_only_file_system_is_typed_and_recovers(
    tmp_path: Path, minilm: Embedder
) -> None:
    # A read-only bind mount refuses new opens for writing; descriptors opened before keep
    # writing (the kernel checks at open), so the store is opened while the mount is read-only,
    # as after a reboot onto a file system that came back read-only.
    if shutil.which("mount") is None or sys.platform != "linux":
        pytest.skip("needs Linux mount")
    data = tmp_path / "data"
    data.mkdir()
    db = data / "store.db"
    store = SQLiteBackend(db, minilm)
    await store.connect()
    first = await store.store("ops", _note(1))
    await store.disconnect()
    again = SQLiteBackend(db, minilm)
    with _mounted(
        ["mount", "--bind", str(data), str(data)],
        ["mount", "-o", "remount,ro,bind", str(data)],
        undo=["umount", "-l", str(data)],
    ):
        with pytest.raises(TYPED) as caught:
            await again.connect()
        assert not again.is_connected
        rw = ["mount", "-o", "remount,rw,bind", str(data)]
        assert subprocess.run(rw, capture_output=True).returncode == 0
        await again.connect()  # the same store object opens once the fault is gone
        try:
            second = await again.store("ops", _note(3))
            hits = await again.retrieve("ops", MemoryQuery(text="disk alarm", limit=3))
            assert {h.id for h in hits} == {first, second}
        finally:
            await again.disconnect()
    assert _ids(db) == {first, second}
    assert check_store(str(db), embedder=minilm).ok
    OUTCOMES["read-only file system (ro bind mount)"] = (
        f"{caught.type.__name__}: {caught.value}; the store opens and writes once it is rw"
    )


# -- damaged database file ------------------------------------------------------------------------


async def test_truncated_or_corrupted_file_is_refused_found_and_restorable(
    tmp_path: Path, minilm: Embedder
) -> None:
    db = tmp_path / "store.db"
    store = SQLiteBackend(db, minilm)
    await store.connect()
    ids = [await store.store("ops", _note(i)) for i in range(30)]
    await store.disconnect()
    backup = tmp_path / "store.backup"
    backup_store(str(db), backup)
    size = db.stat().st_size

    truncated = tmp_path / "truncated.db"
    shutil.copy(db, truncated)
    with truncated.open("r+b") as f:
        f.truncate(size // 3)
    broken = SQLiteBackend(truncated, minilm)
    with pytest.raises(TYPED) as opened:
        await broken.connect()
        try:
            await broken.retrieve("ops", MemoryQuery(text="disk alarm"))
            await broken.count("ops")
            [e async for e in broken.export_entries()]
        finally:
            await broken.disconnect()
    assert not check_store(str(truncated), embedder=minilm).ok

    corrupted = tmp_path / "corrupted.db"
    shutil.copy(db, corrupted)
    with corrupted.open("r+b") as f:
        f.seek(4096 * 3)
        f.write(os.urandom(4096 * 4))  # four pages of the table b-trees
    report = check_store(str(corrupted), embedder=minilm)
    assert "integrity" in {x.code for x in report.findings}, report.summary()
    damaged = SQLiteBackend(corrupted, minilm)
    with pytest.raises(TYPED) as read:
        await damaged.connect()
        try:
            [e async for e in damaged.export_entries()]
        finally:
            await damaged.disconnect()

    restore_backup(backup, str(corrupted), replace=True)
    healed = SQLiteBackend(corrupted, minilm)
    await healed.connect()
    try:
        assert await healed.count("ops") == len(ids)
    finally:
        await healed.disconnect()
    assert check_store(str(corrupted), embedder=minilm).ok
    OUTCOMES["truncated database file"] = f"{opened.type.__name__}: {opened.value}"
    OUTCOMES["corrupted pages"] = (
        f"{read.type.__name__}: {read.value}; memvault check: integrity finding; "
        "restore-backup --replace brings it back"
    )


# -- PostgreSQL stopped mid-service ----------------------------------------------------------------


@pytest.fixture
def private_pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any, Path]]:
    """A PostgreSQL server of this test alone (stopping it touches no other test)."""
    if os.environ.get("MEMVAULT_TEST_POSTGRES_URL"):
        pytest.skip("an external PostgreSQL server is configured; this test stops its own one")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="memvault-pgfault-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(root / "data", cleanup_mode="stop")
    try:
        url = str(server.get_uri())
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url, server, root / "data"
    finally:
        with contextlib.suppress(Exception):
            server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def _pg_stop(server: Any, pgdata: Path) -> None:
    import pgserver

    pgserver.pg_ctl(["-m", "fast", "-w", "stop"], pgdata=pgdata, user=server.system_user)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_postgres_stopped_gives_503_retry_after_and_the_server_recovers(
    tmp_path: Path, private_pg: tuple[str, Any, Path]
) -> None:
    url, server, pgdata = private_pg
    sep = "&" if "?" in url else "?"
    store_url = f"{url}{sep}schema=faults"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", store_url, "serve", "--no-auth",
             "--port", str(port), "--log-level", "warning"],
            stdout=sink, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(proc, base, log, timeout=120)
        with httpx.Client(base_url=base, timeout=60) as c:
            before = c.post(
                "/v1/memories", json={"agent_id": "ops", "content": "Before the outage."}
            )
            assert before.status_code == 201, before.text
            _pg_stop(server, pgdata)
            during = c.post(
                "/v1/memories", json={"agent_id": "ops", "content": "During the outage."}
            )
            assert during.status_code == 503, during.text
            assert during.headers.get("retry-after", "").isdigit()
            assert during.json()["error"]["code"] == "backend_unavailable"
            read = c.get("/v1/memories", params={"agent_id": "ops"})
            assert read.status_code == 503
            server.ensure_postgres_running()
            after = None
            for _ in range(50):  # the pool reconnects by itself; no server restart
                after = c.post("/v1/memories", json={"agent_id": "ops", "content": "After it."})
                if after.status_code == 201:
                    break
                time.sleep(0.2)
            assert after is not None and after.status_code == 201, after.text if after else None
            listed = c.get("/v1/memories", params={"agent_id": "ops", "limit": 10})
            assert listed.status_code == 200
            contents = sorted(m["content"] for m in listed.json()["memories"])
            assert contents == ["After it.", "Before the outage."]  # nothing half-written
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    OUTCOMES["PostgreSQL stopped mid-service"] = (
        f"HTTP 503 backend_unavailable, Retry-After {during.headers.get('retry-after')}; "
        "writes succeed again once PostgreSQL is back, without restarting memvault serve"
    )
