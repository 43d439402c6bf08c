"""Shared CLI plumbing: global options, opening the store, output helpers, error handling."""

from __future__ import annotations

import getpass
import importlib.metadata
import json
import re
import shlex
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console

from memvault.errors import MemoryConfigError, MemoryValidationError

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.progress import Progress, TaskID

    from memvault.config import MemvaultConfig
    from memvault.memory import Memory
    from memvault.models import MemoryEntry
    from memvault.protocols import LLMProvider
    from memvault.service import Actor, MemoryService

__all__ = [
    "LocalService",
    "ProgressBar",
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
    "progress_bar",
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
    from memvault.config import load_config
    from memvault.models import MemoryLevel

    return load_config(state.config, url=state.db, default_level=MemoryLevel.PERSISTENT)


def open_memory() -> Memory:
    """The store named by ``--db`` / ``--config`` / the environment (opened once per run)."""
    from memvault.memory import Memory

    if state.memory is None:
        cfg = load_cli_config()
        remote = bool(state.db) and str(state.db).startswith(("http://", "https://"))
        # The configured LLM (llm:, else MEMVAULT_LLM_*) for what the command runs (maintain's
        # consolidation, infer adds); a remote store's server uses its own.
        llm = None
        if not remote:
            from memvault.service import configured_llm

            llm = configured_llm(cfg)
        state.memory = Memory(state.db, config=cfg, api_key=state.api_key, llm=llm)
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
    from memvault.service import Actor, MemoryService

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


class ProgressBar:
    """The callback :func:`progress_bar` yields: ``bar(label, done, total)`` moves the bar of
    ``label`` (made on its first report) to ``done`` of ``total``."""

    def __init__(self, console: Console, *, enabled: bool, replace: bool) -> None:
        self._console = console
        self._enabled = enabled
        self._replace = replace
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}

    def __call__(self, label: str, done: int, total: int | None) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if not self._enabled:
            return  # a bar cannot animate in a log file; it would only leave blank lines
        if self._progress is None:
            # Started on the first report, which comes after the command checked its inputs:
            # a bad input fails with its one-line message and no bar around it.
            self._progress = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self._console,
                transient=True,
            )
            self._progress.start()
        if label not in self._tasks:
            if self._replace:
                for task in self._tasks.values():
                    self._progress.remove_task(task)
                self._tasks.clear()
            self._tasks[label] = self._progress.add_task(label, total=total or None)
        # A total of 0 (or None) is not known yet: the bar pulses until one comes.
        self._progress.update(self._tasks[label], completed=done, total=total or None)

    @property
    def labels(self) -> tuple[str, ...]:
        """The labels whose bars are shown, in the order they first reported."""
        return tuple(self._tasks)

    def stop(self) -> None:
        """Stop the bar (it is transient: it leaves nothing behind on the terminal)."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def progress_bar(*, console: Console | None = None, replace: bool = False) -> Iterator[ProgressBar]:
    """A progress bar on stderr for the duration of a command; yields its callback.

    Nothing is drawn until the first report, and nothing at all when ``console`` (the CLI's
    stderr by default) is not a terminal: a bar cannot animate in a log file or a pipe. A
    console forced to be one counts as one (``TTY_COMPATIBLE=1`` or ``FORCE_COLOR`` in the
    environment, ``force_terminal=True``). Each label gets its own bar (a stage of a backup, an
    embedder of a comparison); with ``replace`` a new label's bar takes the place of the
    previous one (steps of which only the current one matters). The bars are transient: they
    disappear when the block ends, so only the command's own output stays.
    """
    target = err_console if console is None else console
    bar = ProgressBar(target, enabled=target.is_terminal, replace=replace)
    try:
        yield bar
    finally:
        bar.stop()


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


def bounds(model: type[BaseModel], name: str) -> dict[str, Any]:
    """``min``/``max`` for a typer option from the request model's ``ge``/``le`` on ``name``.

    A hand-written command's option then has the limits of the operation's REST field; an
    out-of-range value is a usage error (exit code 2, one line), as ``memvault api`` has it.
    """
    import annotated_types as at  # here: every command pays for _common, few use this

    found: dict[str, Any] = {}
    for item in model.model_fields[name].metadata:
        if isinstance(item, at.Ge):
            found["min"] = item.ge
        elif isinstance(item, at.Le):
            found["max"] = item.le
    return found


AgentOption = typer.Option(
    "default", "--agent", "-a", envvar="MEMVAULT_AGENT", help="Agent id whose memories to use."
)
JsonOption = typer.Option(False, "--json", help="Print JSON instead of a table.")
