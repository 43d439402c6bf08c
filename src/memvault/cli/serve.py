"""``memvault serve``: the REST API (and MCP over streamable HTTP at ``/mcp``) with uvicorn."""

from __future__ import annotations

import ipaddress
import logging
from typing import Annotated

import typer

from memvault.cli._common import err_console, state
from memvault.config import load_config
from memvault.errors import MemoryConfigError, MemoryValidationError

__all__ = ["is_loopback", "register"]


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
    ] = 4 * 1024 * 1024,
    log_level: Annotated[
        str, typer.Option("--log-level", help="uvicorn log level (info, warning, error).")
    ] = "info",
) -> None:
    """Serve the REST API (and MCP over HTTP at /mcp) for the store --db names."""
    try:
        import uvicorn

        from memvault.server.rest import ServerSettings, create_app
    except ImportError as exc:
        msg = f"the server needs the 'server' extra: pip install 'memvault[server]' ({exc.name})"
        raise MemoryConfigError(msg) from None
    from memvault.server.keys import open_key_store
    from memvault.service import MemoryService

    if not 0 < port < 65536:
        msg = f"--port must be between 1 and 65535, got {port}"
        raise MemoryValidationError(msg)
    if max_body_bytes < 1024:
        msg = "--max-body-bytes must be at least 1024"
        raise MemoryValidationError(msg)
    if no_auth and not is_loopback(host):
        msg = f"--no-auth is only allowed on a loopback host (127.0.0.1, ::1), not {host!r}"
        raise MemoryValidationError(msg)
    config = load_config(state.config, url=state.db)
    url = state.db or config.resolved_url()
    if url.startswith(("http://", "https://")):
        msg = "serve needs a local store (a path or postgresql:// URL), not another server"
        raise MemoryValidationError(msg)
    keys = None
    if not no_auth:
        keys = open_key_store(url)
        if not keys.list():
            err_console.print(
                "warning: no API keys yet; every request will be refused. Create one with "
                "'memvault keys create --name NAME'.",
                markup=False,
            )
    service = MemoryService(config)
    app = create_app(
        service,
        keys=keys,
        settings=ServerSettings(
            max_body_bytes=max_body_bytes, cors_origins=tuple(cors_origin or ())
        ),
    )
    logging.basicConfig(level=log_level.upper() if log_level else "INFO")
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False)


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the CLI."""
    app.command("serve")(serve)
