"""``memvault serve`` runs the maintenance scheduler by itself and stops it cleanly.

A real ``memvault serve`` subprocess on a real SQLite file: with ``maintenance.enabled`` it
sweeps an expired memory to the archive and consolidates old episodes without any request
asking for it (never on its first pass, which only sweeps), records the runs in the store, and
on SIGINT stops the task and releases the lease.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from memvault.maintenance import SQLiteMaintenanceState
from memvault.maintenance.scheduler import JOB_CONSOLIDATE, JOB_SWEEP

AGENT = "dev-1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _cli(db: Path, cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memvault", "--config", str(cfg), "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _state(db: Path) -> tuple[dict[str, datetime], dict[str, datetime], object]:
    async def read() -> tuple[dict[str, datetime], dict[str, datetime], object]:
        state = SQLiteMaintenanceState(db)
        try:
            return (
                await state.last_runs(JOB_CONSOLIDATE),
                await state.last_runs(JOB_SWEEP),
                await state.lease(),
            )
        finally:
            await state.close()

    return asyncio.run(read())


def test_serve_maintains_the_store_by_itself(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    cfg = tmp_path / "memvault.yaml"
    cfg.write_text(
        "memory:\n"
        "  options:\n"
        "    consolidation_interval: daily\n"
        "    retention_by_category: {semantic: 30}\n"
        "  maintenance:\n"
        "    poll_seconds: 1\n"
    )
    old = (datetime.now(UTC) - timedelta(days=90)).isoformat()
    for i in range(4):
        made = _cli(db, cfg, "add", f"Standup {i}: reviewed ticket PROJ-{i}.", "-a", AGENT,
                    "-t", "episodic", "--created-at", old)  # fmt: skip
        assert made.returncode == 0, made.stderr
    stale = _cli(db, cfg, "add", "The old office wifi password was hunter2.", "-a", AGENT,
                 "-t", "semantic", "--created-at", old)  # fmt: skip
    assert stale.returncode == 0, stale.stderr
    key = _cli(db, cfg, "keys", "create", "--name", "ci", "--json")
    assert key.returncode == 0, key.stderr
    secret = json.loads(key.stdout)["secret"]

    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault", "--config", str(cfg), "--db", str(db), "serve",
             "--port", str(port), "--log-level", "info"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        # Nobody asks for maintenance: the server's own task runs the first pass at startup
        # (a sweep; consolidation waits for the next pass, a poll later).
        deadline = time.monotonic() + 90
        while True:
            consolidated, swept, _ = _state(db)
            if AGENT in consolidated and AGENT in swept:
                break
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no maintenance pass: " + log.read_text()
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {secret}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
            archived = c.get("/v1/archive", params={"agent_id": AGENT})
            assert archived.status_code == 200, archived.text
            reasons = sorted({row["reason"] for row in archived.json()["archived"]})
            assert reasons == ["consolidate", "expire"]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, log.read_text()
    text = log.read_text()
    assert "consolidated 1" in text and "1 expired" in text
    first = next(
        line for line in text.splitlines() if "maintenance " in line and " agent(s)" in line
    )
    assert "consolidation held until the pass after the server's start" in first
    assert _state(db)[2] is None  # the lease was released, not left to expire
