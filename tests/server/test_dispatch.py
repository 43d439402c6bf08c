"""Connection dispatch for ``serve --workers N``: real sockets, real descriptor passing, and a
real uvicorn server fed by the dispatcher."""

from __future__ import annotations

import ctypes
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from memvault.server.dispatch import (
    ConnectionDispatcher,
    FedServer,
    channel_pair,
    supports_dispatch,
)

pytestmark = pytest.mark.skipif(not supports_dispatch(), reason="needs Unix fd passing")


def _listener() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def _until(done: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)


def _received(channel: socket.socket) -> list[socket.socket]:
    """Every connection handed over on ``channel`` so far."""
    out: list[socket.socket] = []
    channel.setblocking(False)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(channel, 1, 4)
        except BlockingIOError:
            return out
        out += [socket.socket(fileno=fd) for fd in fds]


def test_connections_are_split_evenly_and_refill_the_emptier_worker() -> None:
    listener = _listener()
    pairs = [channel_pair() for _ in range(2)]
    closed = (ctypes.c_uint64 * 2)()
    dispatcher = ConnectionDispatcher(listener, [ours for ours, _ in pairs], closed)
    dispatcher.start()
    port = listener.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
    handed: list[socket.socket] = []
    try:
        _until(lambda: sum(dispatcher.open_connections()) == 8)
        assert dispatcher.open_connections() == [4, 4]
        got = [_received(theirs) for _, theirs in pairs]
        handed += got[0] + got[1]
        assert [len(g) for g in got] == [4, 4]
        # A handed-over descriptor is the client's connection: bytes flow both ways.
        clients[0].sendall(b"ping")
        readable, _, _ = select.select(got[0] + got[1], [], [], 5)
        assert len(readable) == 1 and readable[0].recv(4) == b"ping"
        readable[0].sendall(b"pong")
        clients[0].settimeout(5)
        assert clients[0].recv(4) == b"pong"
        # Worker 1 closes three of its connections: the next three go to it.
        closed[1] = 3
        late = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        clients += late
        _until(lambda: sum(dispatcher.open_connections()) == 8)
        assert dispatcher.open_connections() == [4, 4]
        more = [_received(theirs) for _, theirs in pairs]
        handed += more[0] + more[1]
        assert [len(m) for m in more] == [0, 3]
    finally:
        for c in clients + handed:
            c.close()
        dispatcher.stop()
        for _, theirs in pairs:
            theirs.close()


def test_dispatcher_needs_one_counter_per_channel() -> None:
    listener = _listener()
    ours, theirs = channel_pair()
    try:
        with pytest.raises(ValueError, match="one channel"):
            ConnectionDispatcher(listener, [ours], (ctypes.c_uint64 * 2)())
    finally:
        for s in (listener, ours, theirs):
            s.close()


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = f"hello {scope['path']}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def fed() -> Iterator[tuple[int, Any, threading.Thread]]:
    listener = _listener()
    ours, theirs = channel_pair()
    closed = (ctypes.c_uint64 * 1)()
    config = uvicorn.Config(_hello, log_level="warning", lifespan="on")
    server = FedServer(config, theirs, closed, 0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": []}, daemon=True)
    thread.start()
    _until(lambda: bool(server.started))
    dispatcher = ConnectionDispatcher(listener, [ours], closed)
    dispatcher.start()
    try:
        yield listener.getsockname()[1], closed, thread
    finally:
        dispatcher.stop()  # closes the channel: the fed server stops by itself
        thread.join(timeout=10)
        theirs.close()
    assert not thread.is_alive()


def test_fed_uvicorn_serves_handed_connections_and_counts_their_close(
    fed: tuple[int, Any, threading.Thread],
) -> None:
    port, closed, _thread = fed
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        # Keep-alive: three requests on one connection.
        assert [client.get(f"/r{i}").text for i in range(3)] == [
            "hello /r0",
            "hello /r1",
            "hello /r2",
        ]
        assert closed[0] == 0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as other:
        assert other.get("/again").text == "hello /again"
    _until(lambda: closed[0] >= 2)
    assert closed[0] == 2  # both client connections, each counted once
