"""Shared CLI plumbing: global options, opening the store, output helpers, error handling."""

from __future__ import annotations

import getpass
import importlib.metadata
import json
import re
import shlex
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import typer
from rich.console import Console

from memvault.config import MemvaultConfig, load_config
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.memory import Memory
from memvault.models import MemoryEntry, MemoryLevel
from memvault.protocols import LLMProvider
from memvault.service import Actor, MemoryService

__all__ = [
    "LocalService",
    "State",
    "emit_json",
    "err_console",
    "extra_requirements",
    "load_cli_config",
    "missing_extra",
    "open_memory",
    "open_service",
    "out",
    "parse_datetime",
    "state",
]

T = TypeVar("T")

out = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass
class State:
    """Options given before the command name."""

    db: str | None = None
    config: str | None = None
    api_key: str | None = None
    memory: Memory | None = None


state = State()


def load_cli_config() -> MemvaultConfig:
    """The configuration of ``--db`` / ``--config`` / the environment, as the CLI reads it.

    With no level and no store configured, the CLI (and ``memvault serve``) uses the durable
    default store ``~/.memvault/memvault.db``, where the library's default is in process.
    """
    return load_config(state.config, url=state.db, default_level=MemoryLevel.PERSISTENT)


def open_memory() -> Memory:
    """The store named by ``--db`` / ``--config`` / the environment (opened once per run)."""
    if state.memory is None:
        cfg = load_cli_config()
        state.memory = Memory(state.db, config=cfg, api_key=state.api_key)
    return state.memory


@dataclass
class LocalService:
    """The CLI's way into memvault: the :class:`MemoryService` over the ``--db`` store.

    Commands act as the local user, an admin of the store they opened (they own the file).
    Over a server URL the server authorises the API key instead, and the local actor only
    names the caller in error messages.
    """

    memory: Memory
    service: MemoryService
    actor: Actor

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run one service call on the memory's private event loop."""
        return self.memory._run(coro)


def local_user() -> str:
    """The operating-system user running the CLI (``local`` if it cannot be told)."""
    try:
        return getpass.getuser() or "local"
    except (KeyError, OSError):
        return "local"


def open_service(llm: LLMProvider | None = None) -> LocalService:
    """The service over the store ``--db`` names, acting as the local user (admin)."""
    mem = open_memory()
    return LocalService(
        memory=mem,
        service=MemoryService.for_memory(mem.aio, llm=llm),
        actor=Actor.admin(local_user()),
    )


def close_memory() -> None:
    """Close the store if this run opened one."""
    if state.memory is not None:
        state.memory.close()
        state.memory = None


def extra_requirements(extra: str) -> list[str]:
    """The requirements of memvault's optional ``extra`` for this platform, from the installed
    package's metadata (so they match the ``pyproject.toml`` it was installed from)."""
    try:
        requires = importlib.metadata.requires("memvault") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    wanted = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    found: list[str] = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        if not wanted.search(marker):
            continue
        try:
            from packaging.markers import Marker

            if not Marker(marker).evaluate({"extra": extra}):
                continue  # another platform's requirement (uvloop on Windows)
        except ImportError:  # pragma: no cover - packaging comes with pip
            pass
        found.append(spec.strip())
    return found


def missing_extra(command: str, extra: str, exc: ImportError) -> MemoryConfigError:
    """The one-line error of ``memvault COMMAND`` run without its optional ``extra``."""
    module = (exc.name or "").split(".")[0] or "a module it needs"
    requirements = extra_requirements(extra)
    if requirements:
        fix = "pip install " + " ".join(shlex.quote(r) for r in requirements)
    else:
        fix = f"pip install -e '.[{extra}]' in the memvault checkout"
    msg = f"memvault {command} needs the '{extra}' extra ({module} is not installed): {fix}"
    return MemoryConfigError(msg)


def emit_json(data: Any) -> None:
    """Print JSON to stdout (plain, so pipes get exactly the JSON)."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def entry_json(entry: MemoryEntry) -> dict[str, Any]:
    """The ``--json`` object of an entry."""
    return entry.to_json()


def parse_datetime(value: str | None, name: str) -> datetime | None:
    """An aware datetime from ISO 8601; a value without an offset is taken as UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        msg = f"{name}: {value!r} is not an ISO 8601 date/time (e.g. 2026-03-01T09:30:00Z)"
        raise MemoryValidationError(msg) from None
    if parsed.tzinfo is None:
        from datetime import UTC

        parsed = parsed.replace(tzinfo=UTC)
    return parsed


AgentOption = typer.Option(
    "default", "--agent", "-a", envvar="MEMVAULT_AGENT", help="Agent id whose memories to use."
)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")
