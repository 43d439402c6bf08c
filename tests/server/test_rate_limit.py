"""Per-key rate limits (429 + Retry-After) and the body size limit, over real HTTP."""

from __future__ import annotations

import math
import signal
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from live_server import wait_until_serving
from memvault.errors import MemoryValidationError
from memvault.server.rest import ServerSettings

from .conftest import STANDARD_KEYS, ServerFactory


class ManualClock:
    """The rate limit's clock: stands still until the test advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# One request a second with bursts of three, on a clock that stands still unless a test
# advances it: of ten back-to-back requests exactly three pass.
LIMITED = ServerSettings(rate_limit=1.0, rate_burst=3, max_body_bytes=2048)


def _limited() -> tuple[ServerSettings, ManualClock]:
    clock = ManualClock()
    return replace(LIMITED, clock=clock), clock


COUNT = ("/v1/count", {"agent_id": "dev-1"})


def _burst(client: httpx.Client, n: int = 10) -> list[httpx.Response]:
    return [client.get(COUNT[0], params=COUNT[1]) for _ in range(n)]


def _retry_after(resp: httpx.Response) -> int:
    assert resp.status_code == 429, resp.text
    body = resp.json()
    assert set(body) == {"error"} and body["error"]["code"] == "rate_limited"
    assert "requests/s" in body["error"]["message"]
    value = resp.headers["Retry-After"]
    assert value.isdigit() and int(value) >= 1, value
    return int(value)


def test_a_burst_over_the_limit_gets_429_and_other_keys_are_unaffected(
    live_server: ServerFactory,
) -> None:
    settings, clock = _limited()
    srv = live_server(keys=STANDARD_KEYS, settings=settings)
    with srv.client("dev1") as dev1, srv.client("operator") as other, srv.client() as anon:
        answers = _burst(dev1)
        assert [r.status_code for r in answers] == [200] * 3 + [429] * 7
        wait = max(_retry_after(r) for r in answers[3:])
        assert wait == 1  # one token short at 1/s

        # Another key has its own bucket, full.
        assert [r.status_code for r in _burst(other, 3)] == [200, 200, 200]
        # Liveness and metrics answer while the key is throttled.
        assert anon.get("/health").status_code == 200
        assert dev1.get("/metrics").status_code == 200
        assert dev1.get(COUNT[0], params=COUNT[1]).status_code == 429

        clock.advance(wait - 0.5)  # not yet a whole token
        assert dev1.get(COUNT[0], params=COUNT[1]).status_code == 429
        clock.advance(0.5)  # the bucket has a token again after Retry-After seconds
        again = dev1.get(COUNT[0], params=COUNT[1])
        assert again.status_code == 200, again.text
        assert dev1.get(COUNT[0], params=COUNT[1]).status_code == 429  # and only one


def test_throttled_requests_do_not_reach_the_store(live_server: ServerFactory) -> None:
    srv = live_server(keys=STANDARD_KEYS, settings=_limited()[0])
    with srv.client("dev1") as c:
        statuses = [
            c.post("/v1/memories", json={"agent_id": "dev-1", "content": f"note number {i}"})
            for i in range(8)
        ]
        stored = sum(r.status_code == 201 for r in statuses)
        assert [r.status_code for r in statuses] == [201] * 3 + [429] * 5
        assert stored == 3
    with srv.client("admin") as admin:  # its own bucket: full
        assert admin.get(COUNT[0], params=COUNT[1]).json() == {"count": stored}


def test_without_keys_the_limit_is_per_client_address(live_server: ServerFactory) -> None:
    srv = live_server(auth=False, settings=_limited()[0])
    with srv.client() as first, srv.client() as second:
        answers = _burst(first)
        assert [r.status_code for r in answers] == [200] * 3 + [429] * 7
        # A second connection from the same address shares the address's bucket.
        _retry_after(second.get(COUNT[0], params=COUNT[1]))


def test_the_body_limit_answers_413_json_with_a_rate_limit_on(
    live_server: ServerFactory,
) -> None:
    srv = live_server(keys=STANDARD_KEYS, settings=LIMITED)
    with srv.client("dev1") as c:
        big = c.post("/v1/memories", json={"agent_id": "dev-1", "content": "x" * 5000})
        assert big.status_code == 413, big.text
        assert big.json()["error"]["code"] == "payload_too_large"
        assert "2048" in big.json()["error"]["message"]


def test_no_rate_limit_by_default(live_server: ServerFactory) -> None:
    srv = live_server(keys=STANDARD_KEYS)
    with srv.client("dev1") as c:
        assert {r.status_code for r in _burst(c, 30)} == {200}


def test_settings_refuse_a_rate_that_would_switch_the_limit_off() -> None:
    for rate in (-1.0, math.nan, 0.0, math.inf):
        with pytest.raises(MemoryValidationError, match="rate_limit"):
            ServerSettings(rate_limit=rate)
    with pytest.raises(MemoryValidationError, match="rate_burst"):
        ServerSettings(rate_limit=5.0, rate_burst=0)
    assert ServerSettings(rate_limit=2.5).burst == 5


def test_serve_refuses_a_bad_rate_limit_with_one_line(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    for args, needle in (
        (("--rate-limit", "-1"), "--rate-limit"),
        (("--rate-limit", "nan"), "--rate-limit"),
        (("--rate-limit", "5", "--rate-burst", "0"), "--rate-burst"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "memvault", "--db", str(db), "serve", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (args, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and needle in lines[0], (args, done.stderr)
    assert not db.exists()


def test_serve_rate_limit_option_reaches_the_server(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault", "--db", str(db), "serve", "--port", str(port),
             "--no-auth", "--rate-limit", "1", "--rate-burst", "2", "--log-level", "warning"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(proc, url, log, timeout=90)
        with httpx.Client(base_url=url, timeout=60) as c:
            answers = _burst(c, 8)
            assert [r.status_code for r in answers[:2]] == [200, 200]
            _retry_after(next(r for r in answers if r.status_code != 200))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text()
