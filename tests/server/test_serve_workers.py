"""``memvault serve --workers 2`` survives its workers: a real subprocess, real ``kill -9``.

The workers are found in the process tree (the supervisor's children in /proc, less
multiprocessing's resource tracker), so these tests run where /proc does (Linux).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from live_server import wait_until_serving

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _workers(pid: int) -> list[int]:
    """The server workers of supervisor ``pid``: its children, less the resource tracker."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"resource_tracker" not in cmdline:
            out.append(int(stat.parent.name))
    return sorted(out)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _until(done: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.1)


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, dict[str, str]]]:
    """``serve --workers 2`` on a free port with one key; stopped (and killed if need be) after."""
    db = tmp_path / "served.db"
    made = subprocess.run(
        [sys.executable, "-m", "memvault", "--db", str(db), "keys", "create", "--name", "ci",
         "--agent", "dev-1", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    headers = {"Authorization": f"Bearer {json.loads(made.stdout)['secret']}"}
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", str(db), "serve", "--port", str(port),
             "--workers", "2", "--log-level", "info"],
            stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    workers: list[int] = []
    try:
        wait_until_serving(proc, url, log, timeout=90)
        _until(lambda: len(_workers(proc.pid)) == 2, 30, "two workers")
        workers = _workers(proc.pid)
        yield proc, url, headers
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for pid in workers + _workers(proc.pid):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _search_ok(url: str, headers: dict[str, str]) -> bool:
    """One search on a fresh connection; True if it answered 200."""
    try:
        r = httpx.post(
            f"{url}/v1/search",
            json={"agent_id": "dev-1", "query": "web framework"},
            headers=headers,
            timeout=10,
        )
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def test_a_killed_worker_is_replaced_and_the_server_keeps_serving(
    two_workers: tuple[subprocess.Popen[bytes], str, dict[str, str]],
) -> None:
    proc, url, headers = two_workers
    with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
        r = c.post("/v1/memories", json={"agent_id": "dev-1", "content": "Prefers Litestar"})
        assert r.status_code == 201, r.text
    first, second = _workers(proc.pid)
    os.kill(first, signal.SIGKILL)
    # The other worker serves at once; the supervisor does not stop.
    _until(lambda: _search_ok(url, headers), 5, "a search answered after kill -9 of a worker")
    assert proc.poll() is None
    _until(
        lambda: len(_workers(proc.pid)) == 2 and first not in _workers(proc.pid),
        30,
        "a replacement worker",
    )
    (replacement,) = set(_workers(proc.pid)) - {second}
    # Now the original survivor goes too: only the replacement is left to answer (until the
    # supervisor replaces this one as well), so an answer shows the replacement serves.
    os.kill(second, signal.SIGKILL)
    _until(lambda: _search_ok(url, headers), 60, "a search answered by the replacement")
    assert proc.poll() is None and _alive(replacement)
    for _ in range(5):
        assert _search_ok(url, headers)
    # /metrics still merges every worker's counts (the killed ones' counters included).
    metrics = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
    assert metrics.status_code == 200
    assert "memvault_http_requests_total" in metrics.text


def test_workers_stop_when_the_supervisor_is_killed(
    two_workers: tuple[subprocess.Popen[bytes], str, dict[str, str]],
) -> None:
    proc, url, headers = two_workers
    workers = _workers(proc.pid)
    assert _search_ok(url, headers)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    # Unsupervised workers would go on serving the inherited port: each stops by itself.
    _until(lambda: not any(_alive(pid) for pid in workers), 30, "the orphaned workers exit")
