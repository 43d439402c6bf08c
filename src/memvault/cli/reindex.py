"""``memvault reindex``: re-embed every memory of the store with a new embedding model."""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from memvault.cli._common import emit_json, err_console, load_cli_config, out, progress_bar, state
from memvault.errors import MemoryCapabilityError, MemoryConfigError
from memvault.reindex import DEFAULT_BATCH_SIZE, ReindexReport
from memvault.reindex import reindex as reindex_store

__all__ = ["register"]

# Exit status of a run stopped with Ctrl-C (128 + SIGINT), as shells report it.
_INTERRUPTED = 130


def reindex(
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            help="Embedding model to move the store to, e.g. default, minilm-l3, hashing:256 "
            "(default: the configured one).",
        ),
    ] = None,
    batch_size: Annotated[
        int,
        typer.Option("--batch-size", min=1, help="Memories embedded and saved at a time."),
    ] = DEFAULT_BATCH_SIZE,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Only say how many memories would be re-embedded, and how long."
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Re-embed even if the store already uses this model."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-embed every memory of the store with a new embedding model.

    New vectors are saved beside the old ones batch by batch; only when every memory has one
    are they swapped in, in one transaction. Until then the store keeps working with the old
    model. Run the same command again after an interruption to resume where it stopped.
    """
    cfg = load_cli_config()
    url = state.db or cfg.resolved_url()
    _check_url(url)
    from memvault.backends.factory import open_backend
    from memvault.embeddings import create_embedder

    target = create_embedder(embedder if embedder is not None else cfg.embedder)
    store = open_backend(url, embedder=target, config=cfg)
    with progress_bar() as bar:
        # A dry run only counts: no bar.
        on_progress = None if dry_run else partial(bar, "re-embedding")

        async def run() -> ReindexReport:
            try:
                return await reindex_store(
                    store,
                    target,
                    batch_size=batch_size,
                    progress=on_progress,
                    dry_run=dry_run,
                    force=force,
                )
            finally:
                # Closing is best effort: what was staged is committed already.
                with contextlib.suppress(Exception):
                    await store.disconnect()

        try:
            report = asyncio.run(run())
        except KeyboardInterrupt:
            err_console.print(
                "interrupted: the store still uses its old model; run the same command again "
                "to resume the reindex",
                markup=False,
            )
            raise typer.Exit(_INTERRUPTED) from None
    if as_json:
        emit_json(report.to_json())
    else:
        out.print(report.summary(), markup=False)


def _check_url(url: str) -> None:
    """Refuse what reindex cannot work on: a server URL, a store file that does not exist."""
    from memvault.backends.factory import parse_url

    if url.strip().startswith(("http://", "https://")):
        msg = (
            f"memvault reindex works on the store itself, not through a server ({url}): "
            "run it where the store lives, with --db naming the file or database"
        )
        raise MemoryCapabilityError(msg)
    kind, target = parse_url(url)
    if kind == "memory":
        msg = (
            "memvault reindex needs a durable store: memory:// lives only inside one process "
            "(name the store with --db, or configure one)"
        )
        raise MemoryCapabilityError(msg)
    if kind == "sqlite" and not Path(target).expanduser().exists():
        # Opening a missing file would create an empty store and "reindex" nothing.
        msg = f"store {target} does not exist"
        raise MemoryConfigError(msg)


def register(app: typer.Typer) -> None:
    """Attach the command to ``app``."""
    app.command()(reindex)
