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
    operations: Annotated[
        bool,
        typer.Option(
            "--operations/--no-operations",
            help="Also copy the operational records (tasks, costs, messages...), with counts.",
        ),
    ] = True,
) -> None:
    """Copy a whole store into another one, then verify the copy.

    Every memory moves with its vector (not re-embedded, so both stores use one embedding
    model). The operational records (tasks, cost records, messages, audit entries, runtime
    state, checkpoints) move too, table by table, with their counts compared. Running the same
    command again after an interruption resumes: memories and records already copied are
    skipped.
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
    if operations and _has_operations(source):
        counts = asyncio.run(_copy_operations(source, dest))
        kept = {name: pair for name, pair in counts.items() if pair[0]}
        for name, (have, made) in kept.items():
            out.print(f"  {name}: {have} records, {made} in the destination", markup=False)
        total = sum(have for have, _ in kept.values())
        out.print(f"operational records: {total} copied and verified", markup=False)


def _has_operations(url: str) -> bool:
    """Whether the source holds operational tables (a SQLite file is checked read-only, so a
    store without them is not given empty ones by its own migration)."""
    import sqlite3
    from pathlib import Path

    from memvault.backends._urls import parse_url

    kind, target = parse_url(url)
    if kind == "postgresql":
        return True  # opening creates the (empty) tables if missing: the copy is then empty
    if kind != "sqlite":
        return False
    path = Path(target).expanduser()
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ops_tasks'"
        ).fetchone()
    finally:
        conn.close()
    return found is not None


async def _copy_operations(source: str, dest: str) -> dict[str, tuple[int, int]]:
    from memvault.persistence import create_persistence
    from memvault.persistence.transfer import copy_operations

    async with create_persistence(url=source) as src, create_persistence(url=dest) as dst:
        return await copy_operations(src, dst)


def register(app: typer.Typer) -> None:
    """Attach the command to ``app``."""
    app.command()(migrate)
