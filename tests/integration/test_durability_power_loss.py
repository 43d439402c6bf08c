"""Simulated power loss for the SQLite store: what each ``durability`` setting keeps.

A power cut keeps, of every file, only what was last made durable (``fsync``/``fdatasync``);
whatever sat in the OS page cache is gone. The test interposes both calls with a small
``LD_PRELOAD`` shim (compiled here with gcc) that copies the file being synced, as it is when
the call returns, into a snapshot directory. A child process opens the store with the given
setting and stores memories one by one, printing each id once ``store`` has returned (the
acknowledgement); it is then killed with SIGKILL, which is the moment of the power cut. The
snapshot directory is the disk the machine would boot with: the test opens it as a store and
counts which acknowledged memories it holds.

Expected: ``power`` (synchronous=FULL, the WAL is synced at every commit) keeps every
acknowledged write; ``process`` (synchronous=NORMAL, synced only at checkpoints) may lose the
writes since the last checkpoint, and the store still opens intact (integrity_check ok). The
figures are written to build/durability_power_loss.json for the closing note.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.backends.sqlite import SQLiteBackend
from memvault.config import MemoryStorageConfig
from memvault.models import MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("gcc") is None,
    reason="the fsync shim needs Linux (LD_PRELOAD, /proc/self/fd) and gcc",
)

WRITES = 150
BUILD = Path(__file__).resolve().parents[2] / "build"

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* After a successful sync, copy the synced file (by basename) into $MEMVAULT_SNAP_DIR. */
static void snapshot(int fd) {
    const char *dir = getenv("MEMVAULT_SNAP_DIR");
    const char *prefix = getenv("MEMVAULT_SNAP_PREFIX");
    if (dir == NULL || prefix == NULL) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return;
    path[n] = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, prefix, strlen(prefix)) != 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    char tmp[PATH_MAX], out[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.%s.part", dir, base);
    snprintf(out, sizeof out, "%s/%s", dir, base);
    int o = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0) return;
    char buf[1 << 16];
    off_t off = 0;
    ssize_t r;
    while ((r = pread(fd, buf, sizeof buf, off)) > 0) {
        if (write(o, buf, (size_t)r) != r) break;
        off += r;
    }
    close(o);
    rename(tmp, out);
}

int fsync(int fd) {
    static int (*real)(int) = NULL;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int rc = real(fd);
    if (rc == 0) snapshot(fd);
    return rc;
}

int fdatasync(int fd) {
    static int (*real)(int) = NULL;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int rc = real(fd);
    if (rc == 0) snapshot(fd);
    return rc;
}
"""

CHILD = """
import asyncio, sys
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings import default_embedder
from memvault.models import MemoryStoreRequest

path, synchronous, writes = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def main():
    store = SQLiteBackend(path, default_embedder(), synchronous=synchronous)
    await store.connect()
    for i in range(writes):
        mid = await store.store("ops", MemoryStoreRequest(content=f"Incident note {i}: disk alarm"))
        print(mid, flush=True)  # acknowledged
    print("done", flush=True)
    await asyncio.sleep(600)  # the power goes out here (SIGKILL), before any clean close

asyncio.run(main())
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("shim") / "fsync_snap.c"
    src.write_text(SHIM)
    lib = src.with_suffix(".so")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(src), "-ldl"],
        check=True,
        capture_output=True,
    )
    return lib


async def _power_cut(
    tmp_path: Path, shim: Path, minilm: Embedder, synchronous: str
) -> dict[str, object]:
    live = tmp_path / synchronous / "live"
    disk = tmp_path / synchronous / "disk"  # what survives the power cut
    live.mkdir(parents=True)
    disk.mkdir()
    db = live / "store.db"
    # A store created and closed cleanly (checkpointed and synced) before the session.
    setup = SQLiteBackend(db, minilm, synchronous=synchronous)
    await setup.connect()
    await setup.store("ops", MemoryStoreRequest(content="Baseline note before the session."))
    await setup.disconnect()
    shutil.copy2(db, disk / "store.db")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "LD_PRELOAD": str(shim),
        "MEMVAULT_SNAP_DIR": str(disk),
        "MEMVAULT_SNAP_PREFIX": "store.db",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), synchronous, str(WRITES)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acked: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() == "done":
                break
            acked.append(line.strip())
        else:
            assert child.stderr is not None
            pytest.fail(f"the child stopped early: {child.stderr.read()[-2000:]}")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert len(acked) == WRITES
    # The shared-memory index is never durable: after a reboot SQLite rebuilds it from the WAL.
    (disk / "store.db-shm").unlink(missing_ok=True)
    with sqlite3.connect(disk / "store.db") as conn:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    booted = SQLiteBackend(disk / "store.db", minilm)
    await booted.connect()
    try:
        present = await booted._existing_ids(acked)
        hits = await booted.retrieve("ops", MemoryQuery(text="baseline note", limit=3))
        assert hits, "search must work on the store that survived"
    finally:
        await booted.disconnect()
    kept = [i for i in acked if i in present]
    # What survives is a prefix: a power cut never keeps a write and loses an earlier one.
    assert kept == acked[: len(kept)]
    return {
        "synchronous": synchronous,
        "acknowledged": len(acked),
        "kept": len(kept),
        "lost": len(acked) - len(kept),
        "integrity_check": integrity,
        "synced_files": sorted(p.name for p in disk.iterdir() if not p.name.startswith(".")),
    }


async def test_power_loss_keeps_what_each_durability_setting_promises(
    tmp_path: Path, shim: Path, minilm: Embedder
) -> None:
    results: dict[str, dict[str, object]] = {}
    for durability in ("power", "process"):
        synchronous = MemoryStorageConfig(durability=durability).synchronous
        results[durability] = await _power_cut(tmp_path, shim, minilm, synchronous)
    BUILD.mkdir(exist_ok=True)
    (BUILD / "durability_power_loss.json").write_text(json.dumps(results, indent=2) + "\n")
    power, process = results["power"], results["process"]
    assert power["integrity_check"] == process["integrity_check"] == "ok"
    # durability: power (synchronous=FULL) loses no acknowledged write.
    assert power["lost"] == 0
    assert "store.db-wal" in power["synced_files"]  # type: ignore[operator]  # the shim saw the per-commit WAL syncs
    # durability: process (NORMAL) syncs only at checkpoints: the writes after the last one
    # are lost, never the store.
    assert process["lost"] > 0
