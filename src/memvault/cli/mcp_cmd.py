"""``memvault mcp``: serve the memory tools to an MCP client (Claude Desktop, an IDE) over stdio.

The client starts ``memvault mcp --agent ID`` as a subprocess and talks JSON-RPC over its
stdin/stdout until it closes stdin. Stdout carries the protocol only: logs go to stderr. The
store is the one ``--db`` / ``--config`` / the environment name, as for every other command.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Annotated

import typer

from memvault.cli._common import load_cli_config, missing_extra
from memvault.service import DEFAULT_TENANT, Actor, MemoryService, Scope

__all__ = ["register", "serve_mcp"]


def serve_mcp(
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            "-a",
            envvar="MEMVAULT_AGENT",
            help=(
                "Serve as this agent: tools reach only its memories (and the shared knowledge), "
                "and agent_id defaults to it. Without it the caller is the local operator, who "
                "reaches every agent but must name one in each call."
            ),
        ),
    ] = None,
    tenant: Annotated[
        str,
        typer.Option("--tenant", envvar="MEMVAULT_TENANT", help="Tenant whose store to serve."),
    ] = DEFAULT_TENANT,
    log_level: Annotated[
        str,
        typer.Option(
            "--log-level",
            help="Least severe log messages written to stderr (debug, info, warning, error).",
        ),
    ] = "warning",
) -> None:
    """Serve memvault's memory tools over MCP on stdin/stdout (until the client disconnects)."""
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        msg = f"unknown log level {log_level!r} (choose debug, info, warning or error)"
        raise typer.BadParameter(msg, param_hint="--log-level")
    try:
        from memvault.server.mcp import run_stdio
    except ImportError as exc:
        raise missing_extra("mcp", "mcp", exc) from None

    scopes = (Scope.READ, Scope.WRITE)
    if agent is not None:
        actor = Actor.agent(agent, tenant=tenant, scopes=scopes)
    else:
        actor = Actor.human("local", tenant=tenant, scopes=scopes)
    config = load_cli_config()

    async def serve() -> None:
        service = MemoryService(config)
        try:
            # Open the store now, so a bad store or tenant fails before serving, not mid-session.
            if agent is not None:
                await service.call(actor, "count", {"agent_id": actor.name})
            else:
                await service.call(actor, "agents", {})
            await run_stdio(service, actor)
        finally:
            await service.close()

    with _logging_to_stderr(level), suppress(KeyboardInterrupt):
        asyncio.run(serve())


@contextmanager
def _logging_to_stderr(level: int) -> Iterator[None]:
    """Send log records (memvault's and the SDK's) to stderr while serving; stdout is the wire."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def register(app: typer.Typer) -> None:
    """Attach the command to ``app``."""
    app.command("mcp")(serve_mcp)
