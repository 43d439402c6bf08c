"""The ``memvault`` command: global options, command registration, and error handling.

Every failure memvault raises on purpose (and every usage error) prints one line on stderr and
exits with code 2; nothing prints a traceback at a user.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from typer.exceptions import TyperException

import memvault.cli.admin as admin_cmd
import memvault.cli.api as api_cmd
import memvault.cli.bench as bench
import memvault.cli.chat as chat_cmd
import memvault.cli.config_cmd as config_cmd
import memvault.cli.embedders as embedders
import memvault.cli.finetune as finetune
import memvault.cli.maintain as maintain_cmd
import memvault.cli.mcp_cmd as mcp_cmd
import memvault.cli.reindex as reindex_cmd
import memvault.cli.serve as serve_cmd
from memvault.cli import keys, learning, lifecycle, memories, migrate, sessions, transfer
from memvault.cli._common import close_memory, err_console, state
from memvault.errors import MemoryError

__all__ = ["app", "main"]

app = typer.Typer(
    name="memvault",
    help="Durable, typed memory for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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
) -> None:
    """Durable, typed memory for LLM agents."""
    state.db = db
    state.config = config
    state.api_key = api_key


memories.register(app)
chat_cmd.register(app)
transfer.register(app)
migrate.register(app)
bench.register(app)
lifecycle.register(app)
sessions.register(app)
mcp_cmd.register(app)
serve_cmd.register(app)
keys.register(app)
api_cmd.register(app)
learning.register(app)
admin_cmd.register(app)
config_cmd.register(app)
reindex_cmd.register(app)
embedders.register(app)
finetune.register(app)
maintain_cmd.register(app)


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
