"""``memvault serve`` as users run it: a real subprocess on a free port, one or two workers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from live_server import wait_until_serving


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _cli(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memvault", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_answers_with_keys_and_stops_on_sigint(tmp_path: Path, workers: int) -> None:
    db = tmp_path / "served.db"
    made = _cli(db, "keys", "create", "--name", "ci", "--agent", "dev-1", "--json")
    assert made.returncode == 0, made.stderr
    secret = json.loads(made.stdout)["secret"]
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", str(db), "serve", "--port", str(port),
             "--workers", str(workers), "--log-level", "warning"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(proc, url, log, timeout=90)
        headers = {"Authorization": f"Bearer {secret}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
            assert c.get("/v1/count", params={"agent_id": "dev-1"}).json() == {"count": 0}
            mids = [
                c.post("/v1/memories", json={"agent_id": "dev-1", "content": text}).json()["id"]
                for text in ("Prefers Litestar over Flask", "Lunch is at noon")
            ]
            # Every worker sees what any worker wrote (one SQLite file, WAL).
            for _ in range(6):
                hits = c.post("/v1/search", json={"agent_id": "dev-1", "query": "web framework"})
                assert hits.json()["results"][0]["id"] == mids[0]
            refused = c.get("/v1/count", params={"agent_id": "dev-2"})
            assert refused.status_code == 403
        assert httpx.get(f"{url}/v1/count", params={"agent_id": "dev-1"}).status_code == 401
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text()


def test_serve_refuses_bad_options_with_one_line(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    for args, needle in (
        (("--host", "0.0.0.0", "--no-auth"), "loopback"),
        (("--workers", "0"), "--workers"),
        (("--port", "70000"), "--port"),
        (("--max-body-bytes", "10"), "--max-body-bytes"),
    ):
        done = _cli(db, "serve", *args, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and needle in lines[0], (args, done.stderr)
    assert not db.exists()


def test_workers_refuse_a_port_another_server_listens_on(tmp_path: Path) -> None:
    # Another server with SO_REUSEPORT on the port: workers must not quietly share it.
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    other.bind(("127.0.0.1", 0))
    other.listen()
    try:
        port = other.getsockname()[1]
        done = _cli(tmp_path / "y.db", "serve", "--no-auth", "--workers", "2", "--port", str(port))
        assert done.returncode == 2, done.stderr
        assert "cannot listen" in done.stderr
    finally:
        other.close()


def test_a_new_worker_drops_the_live_gauges_of_dead_ones(tmp_path: Path) -> None:
    from memvault.cli.serve import forget_dead_workers

    # A pid above the kernel's limit is certain not to be running.
    dead = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    alive = os.getpid()
    for name in (
        f"gauge_livesum_{dead}.db", f"gauge_liveall_{dead}.db", f"counter_{dead}.db",
        f"gauge_livesum_{alive}.db", f"gauge_min_{dead}.db",
    ):  # fmt: skip
        (tmp_path / name).write_bytes(b"")
    assert forget_dead_workers(str(tmp_path)) == [dead]
    # Live gauges of the dead process go; its counters stay (counts never go back).
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"counter_{dead}.db", f"gauge_livesum_{alive}.db", f"gauge_min_{dead}.db"]
    )
    assert forget_dead_workers(str(tmp_path / "missing")) == []
