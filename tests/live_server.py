"""A real app served for tests: uvicorn on a free loopback port, in a background thread.

Shared by the server tests (``tests/server/conftest.py``), the dashboard tests
(``tests/ui/conftest.py``) and every test that imports :func:`run_app` from them; and
:func:`wait_until_serving` for the tests that start ``memvault serve`` as a subprocess.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn

__all__ = ["run_app", "wait_until_serving"]


def wait_until_serving(
    proc: subprocess.Popen[bytes], url: str, log: Path, *, timeout: float = 120.0
) -> None:
    """Wait until the ``memvault serve`` process ``proc`` answers ``GET {url}/health`` with 200.

    Fails the test, showing the server's ``log``, when the process exits first or ``timeout``
    seconds pass.
    """
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, log.read_text()
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        assert time.monotonic() < deadline, f"serve did not start: {log.read_text()}"
        time.sleep(0.2)


class _Server(uvicorn.Server):
    """uvicorn's server, setting :attr:`ready` once its startup is over (whether it started)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


def run_app(app: Any, *, start_timeout: float = 60.0) -> tuple[str, Callable[[], None]]:
    """Serve ``app`` with uvicorn on a free loopback port; returns its URL and a stop function.

    Raises RuntimeError when the server has not started within ``start_timeout`` seconds.
    """
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY on accepted sockets only when the
    # listening socket says TCP (proto 0 would leave every response waiting on delayed ACKs).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))

    def serve() -> None:
        try:
            server.run(sockets=[sock])
        finally:
            server.ready.set()  # an early exit must not leave the caller waiting

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    if not server.ready.wait(start_timeout) or not server.started:
        msg = "the test server did not start"
        raise RuntimeError(msg)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()

    return f"http://127.0.0.1:{port}", stop
