"""The ``memvault`` command: global options, command registration, and error handling.

Every failure memvault raises on purpose (and every usage error) prints one line on stderr and
exits with code 2; nothing prints a traceback at a user.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup
from typer.exceptions import TyperException

from memvault.cli._common import close_memory, err_console, state
from memvault.errors import MemoryError

__all__ = ["COMMANDS", "app", "main"]

# Every command of the root, in the order ``memvault --help`` lists them: (name, the module of
# memvault.cli whose ``register(app)`` adds it, the first paragraph of its help). A command's
# module is imported only when the command runs (or something reads the root's ``commands``), so
# ``memvault --help`` loads none of them; tests/cli/test_cli_lazy.py keeps this table true.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("add", "memories", "Store one memory and print its id."),
    ("search", "memories", "Hybrid search of an agent's memories."),
    ("list", "memories", "List an agent's memories, newest first."),
    ("get", "memories", "Show one memory."),
    ("delete", "memories", "Delete one memory (audited under your user name)."),
    ("clear", "memories", "Delete all of an agent's memories (or one type of them); audited."),
    (
        "chat",
        "chat",
        "Chat with an agent that has memory tools; the session is saved after every turn.",
    ),
    ("export", "transfer", "Export memories as a JSON array."),
    (
        "import",
        "transfer",
        "Import memories from an export file (ids already present are skipped).",
    ),
    (
        "stats",
        "transfer",
        "Show counts of the store (and of its conversations, when it holds any).",
    ),
    ("migrate", "migrate", "Copy a whole store into another one, then verify the copy."),
    (
        "audit",
        "lifecycle",
        "Show the append-only audit log (store, delete, supersede, evict, restore ...).",
    ),
    (
        "sweep",
        "lifecycle",
        "Enforce retention now: archive expired memories and evict over the caps.",
    ),
    (
        "consolidate",
        "lifecycle",
        "Consolidate memories: merge older ones (archived), or with --facts turn episodes "
        "into facts.",
    ),
    (
        "mcp",
        "mcp_cmd",
        "Serve memvault's memory tools over MCP on stdin/stdout (until the client disconnects).",
    ),
    ("serve", "serve", "Serve the REST API (and MCP over HTTP at /mcp) for the store --db names."),
    (
        "learn",
        "learning",
        "Report a finished task; a failure (or a good success) becomes a lesson.",
    ),
    (
        "evolve",
        "learning",
        "Run one skill-evolver cycle now: recurring failures become proposals to approve.",
    ),
    (
        "backup",
        "admin",
        "Write a consistent copy of the store while it stays in use (SQLite, PostgreSQL).",
    ),
    (
        "restore-backup",
        "admin",
        "Restore a backup as the store named by --db (a new file or an empty schema).",
    ),
    (
        "check",
        "admin",
        "Check the store: file integrity, full-text and vector indexes against the rows, "
        "archive/live exclusivity, audit coverage, embedding model. Exit status 1 on any "
        "finding.",
    ),
    (
        "repair",
        "admin",
        "Rebuild every derived structure (full-text index, vectors, ANN index, statistics) "
        "from the stored rows. Safe to run any time; never drops a memory.",
    ),
    (
        "init",
        "config_cmd",
        "Write a commented memvault.yaml (templates: local, postgres, synthorg, initrunner).",
    ),
    ("reindex", "reindex", "Re-embed every memory of the store with a new embedding model."),
    (
        "maintain",
        "maintain",
        "Run the maintenance jobs that are due: consolidation, retention sweeps, skill evolver.",
    ),
    (
        "bench",
        "bench",
        "Run retrieval benchmarks (LoCoMo, LongMemEval) on a downloaded dataset, or speed at "
        "scale (scale).",
    ),
    (
        "archive",
        "lifecycle",
        "Archived memories (evicted, expired, consolidated): list and restore.",
    ),
    (
        "sessions",
        "sessions",
        "Saved conversation sessions of an agent: list, show, clear; conversation store stats"
        " and embedding backfill.",
    ),
    ("keys", "keys", "API keys of the memvault server: create, list, revoke."),
    (
        "costs",
        "costs",
        "Show tokens and cost of model calls, summed per agent, task, model or day.",
    ),
    (
        "api",
        "api",
        "Every memvault operation, one command each, with the fields of its REST body as "
        "options; prints JSON. Runs as the local user (admin of the store).",
    ),
    (
        "approvals",
        "learning",
        "The human approval queue of skill proposals: list, show, approve, reject.",
    ),
    ("profile", "learning", "Agent profiles (role, department, seniority): set, show."),
    ("config", "config_cmd", "The resolved configuration and where each value came from."),
    (
        "embedders",
        "embedders",
        "Evaluate embedders per memory category, and show what 'embedder: auto' picks.",
    ),
    (
        "finetune",
        "finetune",
        "Fine-tune the embedder on your documents (generate, mine, train, evaluate, deploy).",
    ),
)


def _module_commands(module: str) -> dict[str, Any]:
    """The click commands that ``memvault.cli.<module>.register`` adds to an app."""
    holder = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    importlib.import_module(f"memvault.cli.{module}").register(holder)
    return dict(typer.main.get_group(holder).commands)


class _LazyCommands(MutableMapping[str, Any]):
    """The root's commands: those of :data:`COMMANDS` are built on first lookup, by module."""

    def __init__(self, loaded: MutableMapping[str, Any]) -> None:
        self._loaded = dict(loaded)
        self._pending = {name: module for name, module, _ in COMMANDS if name not in loaded}

    def _fetch(self, name: str) -> None:
        module = self._pending.pop(name, None)
        if module is None:
            return
        for found, command in _module_commands(module).items():
            if self._pending.get(found) == module:
                del self._pending[found]
            self._loaded.setdefault(found, command)

    def _fetch_all(self) -> None:
        while self._pending:
            self._fetch(next(iter(self._pending)))

    def loaded(self) -> list[str]:
        """The names built so far (or added directly), in the order they came."""
        return list(self._loaded)

    def is_loaded(self, name: str) -> bool:
        """Whether ``name`` is built (or not one of the lazy commands)."""
        return name not in self._pending

    def __getitem__(self, name: str) -> Any:
        self._fetch(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._pending.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._fetch(name)
        del self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._pending or name in self._loaded

    def __iter__(self) -> Iterator[str]:
        self._fetch_all()
        return iter(list(self._loaded))

    def __len__(self) -> int:
        self._fetch_all()
        return len(self._loaded)


class _LazyGroup(TyperGroup):
    """The root group: lists and documents every command, imports one when it is used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _LazyCommands(self.commands)

    def list_commands(self, ctx: Any) -> list[str]:
        listed = [name for name, _, _ in COMMANDS]
        commands = self.commands
        loaded = commands.loaded() if isinstance(commands, _LazyCommands) else list(commands)
        table = set(listed)
        return listed + [name for name in loaded if name not in table]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # The help of a command not built yet comes from COMMANDS (a stand-in with the same first
        # paragraph gives the same short help), so the listing builds nothing.
        commands = self.commands
        if not isinstance(commands, _LazyCommands):  # pragma: no cover - set in __init__
            super().format_commands(ctx, formatter)
            return
        known = {name: text for name, _, text in COMMANDS}
        rows: list[tuple[str, Any]] = []
        for name in self.list_commands(ctx):
            if commands.is_loaded(name):
                command = commands.get(name)
            else:
                command = TyperCommand(name, help=known[name])
            if command is not None and not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, c.get_short_help_str(limit)) for name, c in rows])


app = typer.Typer(
    name="memvault",
    help="Durable, typed memory for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=_LazyGroup,
    # -h as well as --help, on every command (click passes it down to each subcommand).
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from memvault._version import __version__

        typer.echo(f"memvault {__version__}")
        raise typer.Exit(0)


@app.callback()
def _global(
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="MEMVAULT_URL",
            help="Store URL: a path, sqlite:///x.db, postgresql://..., memory://, or a server http://host:port.",
        ),
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", envvar="MEMVAULT_CONFIG", help="memvault.yaml path.")
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="MEMVAULT_API_KEY",
            help="API key for a server URL given as --db (http://host:8765).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print memvault's version and exit.",
        ),
    ] = False,
) -> None:
    """Durable, typed memory for LLM agents."""
    state.db = db
    state.config = config
    state.api_key = api_key


def _error(text: str) -> None:
    # Messages echo user input; print them literally, never as rich markup.
    err_console.print("error: " + " ".join(str(text).split()), markup=False)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 not done, 2 bad input or failure)."""
    try:
        # Without standalone mode, click returns typer.Exit's code instead of raising it.
        rv = app(args=argv, standalone_mode=False, prog_name="memvault")
        return rv if isinstance(rv, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        return 1
    except TyperException as exc:
        # Usage errors (missing argument, bad option value): typer's own click exceptions.
        fmt = getattr(exc, "format_message", None)
        text = fmt() if callable(fmt) else str(exc)
        _error(text)
        return int(getattr(exc, "exit_code", 2) or 2)
    except MemoryError as exc:
        _error(str(exc))
        return 2
    finally:
        close_memory()


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
