"""Connections spread evenly over ``serve --workers N``: the supervisor accepts, workers serve.

With one listening socket per worker (``SO_REUSEPORT``) the kernel picks each connection's
worker by a hash of its addresses: even on average, uneven for the few long-lived keep-alive
connections a client pool opens. 32 connections came out 21 / 11 in a measured run, and the
worker holding 21 answered with a mean latency of 238 ms against 144 ms for the other, which
set the p99 of the whole server. An even split needs someone who knows how many connections
each worker holds, as Node's cluster module does by default:

* the supervisor owns the one listening socket; a thread accepts each connection and passes its
  file descriptor (``SCM_RIGHTS`` over a ``socketpair``) to the worker with the fewest open
  connections, round robin among equals;
* each worker runs uvicorn without a listening socket of its own and serves every connection it
  is handed; it counts the connections it has closed in a shared array, so the supervisor's
  count of a worker's open connections is what it handed over minus what that worker closed.

A connection is handed over once, so keep-alive requests cost nothing extra. Unix only (file
descriptor passing).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import uvicorn

__all__ = ["ClosedCounts", "ConnectionDispatcher", "FedServer", "supports_dispatch"]

logger = logging.getLogger(__name__)

_TOKEN = b"c"  # the one byte each message carries beside its descriptor


class ClosedCounts(Protocol):
    """A shared array of per-worker counters (``multiprocessing`` ``Array('Q', n)``)."""

    def __getitem__(self, index: int, /) -> int: ...

    def __setitem__(self, index: int, value: int, /) -> None: ...

    def __len__(self) -> int: ...


def supports_dispatch() -> bool:
    """True where file descriptors can be passed between processes (Unix)."""
    return hasattr(socket, "send_fds") and hasattr(socket, "AF_UNIX")


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """A ``(supervisor end, worker end)`` pair; one message per handed-over connection."""
    # SOCK_SEQPACKET keeps message boundaries, so two descriptors sent back to back are never
    # read as one message.
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class ConnectionDispatcher:
    """The supervisor's side: accept on ``listener`` and hand each connection to a worker.

    ``channels[i]`` is the supervisor's end of worker ``i``'s channel; ``closed[i]`` is how many
    of the connections handed to worker ``i`` it has closed (the worker counts).
    """

    def __init__(
        self,
        listener: socket.socket,
        channels: Sequence[socket.socket],
        closed: ClosedCounts,
    ) -> None:
        if not channels or len(channels) != len(closed):
            msg = "one channel and one closed-counter per worker"
            raise ValueError(msg)
        self._listener = listener
        self._channels = list(channels)
        self._closed = closed
        self._handed = [0] * len(channels)
        self._turn = itertools.cycle(range(len(channels)))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def open_connections(self) -> list[int]:
        """Each worker's open connections, as far as the supervisor can tell."""
        return [max(0, h - self._closed[i]) for i, h in enumerate(self._handed)]

    def pick(self) -> int:
        """The worker for the next connection: fewest open, round robin among equals."""
        counts = self.open_connections()
        fewest = min(counts)
        for _ in range(len(counts)):
            worker = next(self._turn)
            if counts[worker] == fewest:
                return worker
        return counts.index(fewest)  # pragma: no cover - the cycle visits every worker

    def hand_over(self, conn: socket.socket) -> int:
        """Pass ``conn`` to a worker (closing this process's copy); returns the worker."""
        worker = self.pick()
        try:
            socket.send_fds(self._channels[worker], [_TOKEN], [conn.fileno()])
        finally:
            conn.close()
        self._handed[worker] += 1
        return worker

    def start(self) -> None:
        """Accept connections on a daemon thread until :meth:`stop`."""
        self._listener.settimeout(0.2)  # so the thread sees stop() within 0.2 s
        self._thread = threading.Thread(target=self._run, name="memvault-dispatch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting, close the listening socket and the channels (workers then stop)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._listener.close()
        for channel in self._channels:
            channel.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop.is_set():
                    return
                # EMFILE and the like: the connection stays in the backlog; try again shortly.
                logger.warning("serve.accept_failed error=%s", exc)
                self._stop.wait(0.05)
                continue
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.hand_over(conn)
            except OSError as exc:
                # A worker that is gone: the supervisor notices and stops the server.
                logger.warning("serve.hand_over_failed error=%s", exc)


class FedServer(uvicorn.Server):
    """uvicorn's server, serving the connections a :class:`ConnectionDispatcher` hands it.

    Run it with ``run(sockets=[])``: it listens on nothing itself. It stops when the channel
    closes (the supervisor is gone). Every connection it is handed counts one in
    ``closed[index]`` once it is closed, whatever the reason.
    """

    def __init__(
        self, config: uvicorn.Config, channel: socket.socket, closed: ClosedCounts, index: int
    ) -> None:
        super().__init__(config)
        self._channel = channel
        self._closed = closed
        self._index = index
        self._pending: set[asyncio.Task[Any]] = set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's startup, then start taking connections from the channel."""
        await super().startup(sockets=sockets)
        if self.should_exit:
            return
        loop = asyncio.get_running_loop()
        self._channel.setblocking(False)
        loop.add_reader(self._channel.fileno(), self._receive, loop)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop taking connections, then uvicorn's shutdown (requests in flight finish)."""
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(self._channel.fileno())
        await super().shutdown(sockets=sockets)

    def _count_closed(self) -> None:
        self._closed[self._index] = self._closed[self._index] + 1

    def _protocol(self) -> asyncio.Protocol:
        """A uvicorn HTTP protocol instance that counts its connection's close."""
        config = self.config
        # As uvicorn's own startup builds it (its config types the class as a bare Protocol).
        proto: asyncio.Protocol = config.http_protocol_class(  # type: ignore[call-arg]
            config=config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
            _loop=asyncio.get_running_loop(),
        )
        lost: Callable[[Exception | None], None] = proto.connection_lost

        def connection_lost(exc: Exception | None) -> None:
            self._count_closed()
            lost(exc)

        # An instance attribute: asyncio's transport calls protocol.connection_lost by name.
        setattr(proto, "connection_lost", connection_lost)  # noqa: B010
        return proto

    def _receive(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self._channel, len(_TOKEN), 4)
            except BlockingIOError:
                return
            except OSError:
                data, fds = b"", []
            if not data and not fds:  # the supervisor closed the channel: stop serving
                with contextlib.suppress(ValueError, OSError):
                    loop.remove_reader(self._channel.fileno())
                self.should_exit = True
                return
            for fd in fds:
                task = loop.create_task(self._serve_connection(loop, fd))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

    async def _serve_connection(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        sock = socket.socket(fileno=fd)
        try:
            sock.setblocking(False)
            await loop.connect_accepted_socket(self._protocol, sock)
        except OSError as exc:
            # Closed before it could be served: it never reached a protocol, so count it here.
            logger.debug("serve.handed_connection_lost error=%s", exc)
            sock.close()
            self._count_closed()
