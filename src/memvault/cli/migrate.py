"""``memvault migrate``: copy a whole store (memories, vectors, extra tables) into another."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Annotated

import typer

from memvault.cli._common import err_console, out, progress_bar, state
from memvault.config import load_config
from memvault.migrate import DEFAULT_BATCH_SIZE, migrate_urls
from memvault.models import MemoryLevel

__all__ = ["register"]

# Exit status of a run stopped with Ctrl-C (128 + SIGINT), as shells report it.
_INTERRUPTED = 130


def migrate(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            help="Store to copy from: a path, sqlite:///x.db, postgresql://..., memory://.",
        ),
    ],
    dest: Annotated[
        str,
        typer.Option("--to", help="Store to copy into (created if missing; may hold a part)."),
    ],
    batch_size: Annotated[
        int,
        typer.Option("--batch-size", min=1, help="Memories per destination transaction."),
    ] = DEFAULT_BATCH_SIZE,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            help="Embedding model of both stores, e.g. hashing:256 (default: configuration).",
        ),
    ] = None,
) -> None:
    """Copy a whole store into another one, then verify the copy.

    Every memory moves with its vector (not re-embedded, so both stores use one embedding
    model). Running the same command again after an interruption resumes: memories already
    copied are skipped.
    """
    cfg = load_config(state.config, default_level=MemoryLevel.PERSISTENT)
    if embedder is not None:
        cfg = cfg.model_copy(update={"embedder": embedder})
    with progress_bar() as bar:
        try:
            report = asyncio.run(
                migrate_urls(
                    source,
                    dest,
                    config=cfg,
                    batch_size=batch_size,
                    progress=partial(bar, "migrating"),
                )
            )
        except KeyboardInterrupt:
            err_console.print(
                "interrupted: run the same command again to resume the migration", markup=False
            )
            raise typer.Exit(_INTERRUPTED) from None
    out.print(report.summary(), markup=False)


def register(app: typer.Typer) -> None:
    """Attach the command to ``app``."""
    app.command()(migrate)
