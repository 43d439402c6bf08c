"""``memvault serve``: the REST API (and MCP over streamable HTTP at ``/mcp``) with uvicorn."""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import os
import signal
import socket
import threading
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memvault.cli._common import err_console, missing_extra, state
from memvault.config import MemvaultConfig, load_config
from memvault.embeddings.minilm_onnx import THREADS_ENV
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.models import MemoryLevel

if TYPE_CHECKING:
    from memvault.server.keys import KeyStore

__all__ = [
    "app_factory",
    "bind_tcp",
    "build_app",
    "forget_dead_workers",
    "is_loopback",
    "prepare_workers",
    "register",
]

DEFAULT_MAX_BODY = 4 * 1024 * 1024


def is_loopback(host: str) -> bool:
    """True if ``host`` only accepts connections from this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port to listen on.")] = 8765,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            help="Accept requests without an API key (local use; loopback hosts only).",
        ),
    ] = False,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option("--cors-origin", help="Allow browser requests from this origin (repeat)."),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", help="Largest accepted request body in bytes.")
    ] = DEFAULT_MAX_BODY,
    rate_limit: Annotated[
        float,
        typer.Option(
            "--rate-limit",
            help="Requests/s allowed per API key (per client address without a key), per "
            "worker process; over it: 429 with Retry-After. 0: no limit.",
        ),
    ] = 0.0,
    rate_burst: Annotated[
        int | None,
        typer.Option("--rate-burst", help="Requests a key may send at once [2 x --rate-limit]."),
    ] = None,
    shared_rate_limit: Annotated[
        bool,
        typer.Option(
            "--shared-rate-limit",
            help="Keep --rate-limit's buckets in the store, one limit across every worker and "
            "server over it (a write per request).",
        ),
    ] = False,
    tenant_rate_limit: Annotated[
        float,
        typer.Option(
            "--tenant-rate-limit",
            help="Requests/s allowed per tenant, whatever its keys (shared like --rate-limit "
            "with --shared-rate-limit). 0: no limit.",
        ),
    ] = 0.0,
    tenant_rate_burst: Annotated[
        int | None,
        typer.Option(
            "--tenant-rate-burst", help="Requests a tenant may send at once [2 x the limit]."
        ),
    ] = None,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level (info, warning, error).")
    ] = "info",
    workers: Annotated[
        int,
        typer.Option(
            "--workers", help="Server processes (each loads the model); use the core count."
        ),
    ] = 1,
) -> None:
    """Serve the REST API (and MCP over HTTP at /mcp) for the store --db names."""
    try:
        import uvicorn

        import memvault.server.rest  # noqa: F401  (fails early without fastapi)
    except ImportError as exc:
        raise missing_extra("serve", "server", exc) from None

    if not 0 < port < 65536:
        msg = f"--port must be between 1 and 65535, got {port}"
        raise MemoryValidationError(msg)
    if max_body_bytes < 1024:
        msg = "--max-body-bytes must be at least 1024"
        raise MemoryValidationError(msg)
    _check_limit("--rate-limit", rate_limit, "--rate-burst", rate_burst)
    _check_limit("--tenant-rate-limit", tenant_rate_limit, "--tenant-rate-burst", tenant_rate_burst)
    if shared_rate_limit and no_auth:
        msg = "--shared-rate-limit needs API keys (the state lives beside them), not --no-auth"
        raise MemoryValidationError(msg)
    if not 1 <= workers <= 64:
        msg = f"--workers must be between 1 and 64, got {workers}"
        raise MemoryValidationError(msg)
    if no_auth and not is_loopback(host):
        msg = f"--no-auth is only allowed on a loopback host (127.0.0.1, ::1), not {host!r}"
        raise MemoryValidationError(msg)
    options = {
        "db": state.db,
        "config": state.config,
        "no_auth": no_auth,
        "max_body_bytes": max_body_bytes,
        "rate_limit": rate_limit,
        "rate_burst": rate_burst,
        "shared_rate_limit": shared_rate_limit,
        "tenant_rate_limit": tenant_rate_limit,
        "tenant_rate_burst": tenant_rate_burst,
        "cors_origins": list(cors_origin or ()),
    }
    _warn_without_mcp()
    logging.basicConfig(level=log_level.upper() if log_level else "INFO")
    if workers == 1:
        app = build_app(options, warn=True)
        uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)
        return
    # Several processes: Python runs one thread of Python at a time per process, so this is how
    # a server uses more than one core. Each loads its own model and opens its own store
    # connections; uvicorn's supervisor (see _supervise) runs them over one listening socket.
    # Bad options fail here, once, not in every worker.
    preflight = _open_keys(options, _load(options), warn=True)
    if preflight is not None:
        preflight.close()
    listener = bind_tcp(host, port)  # the port is taken now, or a clear error
    listener.listen(2048)
    prepare_workers(options, workers)
    raise typer.Exit(_supervise(workers, listener, log_level))


def _check_limit(name: str, rate: float, burst_name: str, burst: int | None) -> None:
    """A requests/s option is 0 (off) or positive and finite; its burst at least 1."""
    if not 0 <= rate < math.inf:
        msg = f"{name} must be 0 (off) or a positive number, got {rate}"
        raise MemoryValidationError(msg)
    if burst is not None and burst < 1:
        msg = f"{burst_name} must be at least 1, got {burst}"
        raise MemoryValidationError(msg)


def prepare_workers(options: dict[str, Any], workers: int) -> None:
    """Set up this process's environment for ``workers`` server processes started from it.

    The workers inherit it: :func:`app_factory` reads ``options`` from it, every worker counts
    its metrics into one shared directory (so ``/metrics`` on any worker shows them all), and
    each embeds with its share of the cores, not all of them.
    """
    os.environ[_OPTIONS_ENV] = json.dumps(options)
    from memvault.server.metrics import prepare_multiprocess

    prepare_multiprocess(workers)
    os.environ.setdefault(THREADS_ENV, str(max(1, (os.cpu_count() or 1) // workers)))


def _warn_without_mcp() -> None:
    """One line on stderr when the 'mcp' extra is missing: REST is served, /mcp is not."""
    try:
        import memvault.server.mcp  # noqa: F401
    except ImportError as exc:
        fix = str(missing_extra("serve", "mcp", exc)).split(": ", 1)[-1]
        err_console.print(
            f"warning: MCP at /mcp is off (the 'mcp' extra is not installed): {fix}",
            markup=False,
        )


def _supervise(workers: int, listener: socket.socket, log_level: str) -> int:
    """Run ``workers`` server processes on ``listener`` until SIGINT/SIGTERM; the exit code.

    uvicorn's own multiprocess supervisor (what ``uvicorn --workers N`` runs): the workers are
    spawned and all accept on this one socket; one that dies or stops answering its health
    check is replaced, and the others serve meanwhile; SIGHUP replaces them all one at a time,
    SIGTTIN / SIGTTOU add or remove one. Measured against the connection dispatcher it
    replaced in ``benchmarks/results/serving.md`` section 5. It is given the socket rather
    than a port (``uvicorn.run`` would bind its own) so a taken port fails in :func:`bind_tcp`
    with one clear line, and so the exit code says when a worker could not start: uvicorn then
    stops the server instead of restarting a worker that would fail the same way.
    """
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        f"{__name__}:app_factory",
        factory=True,
        workers=workers,
        log_level=log_level,
        access_log=False,
        lifespan="on",
    )
    supervisor = Multiprocess(config, sockets=[listener])
    supervisor.run()
    if any(proc.exitcode == STARTUP_FAILURE for proc in supervisor.processes):
        err_console.print("error: a server worker could not start; stopped", markup=False)
        return 1
    return 0


def _exit_with_supervisor() -> None:
    """In a worker: stop when the supervisor is gone.

    A supervisor killed outright (SIGKILL) cannot stop its workers, and they would go on
    serving the port they inherited, unsupervised; each one watches its parent instead.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's graceful shutdown

    threading.Thread(target=watch, name="memvault-supervisor-watch", daemon=True).start()


def forget_dead_workers(directory: str | None = None) -> list[int]:
    """Drop the live-gauge files of server processes that are gone; returns their pids.

    In prometheus_client's multiprocess mode a ``livesum`` gauge (requests in flight) adds up
    one file per process, and a worker killed with requests in flight leaves its count behind
    for good unless someone calls ``mark_process_dead`` for it. A supervisor that restarts
    workers has no hook for that, so each new worker does it when it starts.
    """
    from prometheus_client.multiprocess import mark_process_dead

    from memvault.server.metrics import MULTIPROC_ENV

    path = directory or os.environ.get(MULTIPROC_ENV)
    if not path or not os.path.isdir(path):
        return []
    gone: set[int] = set()
    for name in os.listdir(path):
        # gauge_livesum_<pid>.db, gauge_liveall_<pid>.db, ...
        stem, _, ext = name.rpartition(".")
        pid_text = stem.rpartition("_")[2]
        if ext != "db" or not name.startswith("gauge_live") or not pid_text.isdigit():
            continue
        pid = int(pid_text)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            gone.add(pid)
        except PermissionError:
            pass  # alive, someone else's
    for pid in sorted(gone):
        mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
    return sorted(gone)


_OPTIONS_ENV = "MEMVAULT_SERVE_OPTIONS"


def bind_tcp(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (a clear :class:`MemoryConfigError` if taken).

    Without ``SO_REUSEPORT``: a socket with it would bind next to another server's and silently
    split the traffic with it. Created with ``IPPROTO_TCP`` explicitly, and every accepted
    connection gets TCP_NODELAY: without it every keep-alive response waits ~40 ms for a
    delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        msg = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        raise MemoryConfigError(msg) from None
    return sock


def _open_keys(options: dict[str, Any], config: MemvaultConfig, *, warn: bool) -> KeyStore | None:
    """The key store of the served store (None with ``no_auth``)."""
    from memvault.server.keys import open_key_store

    url = options.get("db") or config.resolved_url()
    if url.startswith(("http://", "https://")):
        msg = "serve needs a local store (a path or postgresql:// URL), not another server"
        raise MemoryValidationError(msg)
    if options.get("no_auth"):
        return None
    keys = open_key_store(url)
    if warn and not keys.list():
        err_console.print(
            "warning: no API keys yet; every request will be refused. Create one with "
            "'memvault keys create --name NAME'.",
            markup=False,
        )
    return keys


def _load(options: dict[str, Any]) -> MemvaultConfig:
    # A server is a process whose whole point is a durable store: with no level and no store
    # configured it serves ~/.memvault/memvault.db, like the rest of the CLI (not the library's
    # in-process session default).
    return load_config(
        options.get("config"), url=options.get("db"), default_level=MemoryLevel.PERSISTENT
    )


def build_app(options: dict[str, Any], *, warn: bool = False) -> Any:
    """The REST app for ``serve``'s options (the store, auth, limits, the maintenance task)."""
    from memvault.server.rest import ServerSettings, create_app
    from memvault.service import MemoryService

    _one_blas_thread()
    # A server's heap is large and long-lived: full collections would stall every request.
    from memvault.server import gc_pauses

    gc_pauses.install()
    config = _load(options)
    keys = _open_keys(options, config, warn=warn)
    settings = ServerSettings(
        max_body_bytes=int(options.get("max_body_bytes") or DEFAULT_MAX_BODY),
        cors_origins=tuple(options.get("cors_origins") or ()),
        # Per process unless --shared-rate-limit: with --workers N (or N servers) each keeps
        # its own buckets.
        rate_limit=float(options.get("rate_limit") or 0) or None,
        rate_burst=options.get("rate_burst"),
        shared_rate_limit=bool(options.get("shared_rate_limit")),
        tenant_rate_limit=float(options.get("tenant_rate_limit") or 0) or None,
        tenant_rate_burst=options.get("tenant_rate_burst"),
    )
    # Dashboard sessions (and shared limits) live beside the API keys, so every worker and
    # every server over the store knows them; without keys (--no-auth, loopback) in process.
    state = None
    if keys is not None:
        from memvault.server.state import open_server_state

        state = open_server_state(options.get("db") or config.resolved_url())
    service = MemoryService(config)
    app = create_app(service, keys=keys, settings=settings, state=state)
    if config.maintenance.enabled:
        # The app's lifespan runs it: consolidation, sweeps and the evolver when due, for every
        # tenant served; the store's lease lets one worker (or server) at a time run a pass.
        from memvault.maintenance import ServiceMaintenance

        app.state.memvault_maintenance = ServiceMaintenance(service)
    return app


def _one_blas_thread() -> None:
    """Run this server process's numpy (OpenBLAS) on one thread, unless the user chose a count.

    A search's products are small (a query against a few hundred candidates): OpenBLAS splits
    any over 9,216 elements across every core, and its idle threads then spin on the cores the
    embedder and the other requests (and the other workers) need.
    """
    from memvault.backends.sqlite._blas import BLAS_THREAD_ENV, limit_threads

    if not any(os.environ.get(name, "").strip() for name in BLAS_THREAD_ENV):
        limit_threads(1)


def app_factory() -> Any:
    """The app of one ``serve --workers N`` process (options from the environment).

    uvicorn calls it in each worker as it starts, a replacement for a dead one included.
    """
    _exit_with_supervisor()
    forget_dead_workers()
    return build_app(json.loads(os.environ[_OPTIONS_ENV]))


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the CLI."""
    app.command("serve")(serve)
