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
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            msg = "the test server did not start"
            raise RuntimeError(msg)
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()

    return f"http://127.0.0.1:{port}", stop
