"""``memvault backup``, ``restore-backup``, ``check`` and ``repair``: keeping the only copy safe.

All four work on the store itself (a SQLite file or a PostgreSQL schema), never through a
server, and show a progress bar on a terminal. ``check`` exits with status 1 when it finds
anything (and prints each finding), so it can gate a script or a cron job.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memvault.cli._common import emit_json, load_cli_config, out, progress_bar, state

if TYPE_CHECKING:
    from memvault.config import MemvaultConfig

__all__ = ["register"]

# Exit status of a check that found problems (usage errors and failures exit with 2).
_FINDINGS = 1


def _url() -> tuple[str, MemvaultConfig]:
    cfg = load_cli_config()
    return state.db or cfg.resolved_url(), cfg


def backup(
    target: Annotated[Path, typer.Argument(help="The backup file to write (must not exist).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Write a consistent copy of the store while it stays in use (SQLite, PostgreSQL)."""
    from memvault.backup import backup_store

    url, _ = _url()
    with progress_bar() as progress:  # one bar per stage
        report = backup_store(url, target, progress=progress)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        out.print(report.summary(), markup=False)


def restore_backup(
    source: Annotated[Path, typer.Argument(help="A file written by memvault backup.")],
    replace: Annotated[
        bool,
        typer.Option(
            "--replace", help="Replace the store if it exists already (its data is lost)."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Restore a backup as the store named by --db (a new file or an empty schema)."""
    from memvault.backup import restore_backup as restore

    url, _ = _url()
    with progress_bar() as progress:  # one bar per stage
        report = restore(source, url, replace=replace, progress=progress)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        out.print(report.summary(), markup=False)


def check(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check the store: file integrity, full-text and vector indexes against the rows,
    archive/live exclusivity, audit coverage, embedding model. Exit status 1 on any finding."""
    from memvault.backends.embedder import build_embedder
    from memvault.integrity import check_store

    url, cfg = _url()
    embedder = build_embedder(cfg, url=url)
    with progress_bar() as progress:  # one bar per stage
        report = check_store(url, embedder=embedder, progress=progress)
    if as_json:
        emit_json({**report.model_dump(mode="json"), "ok": report.ok})
    else:
        out.print(report.summary(), markup=False)
    if not report.ok:
        raise typer.Exit(_FINDINGS)


def repair(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Rebuild every derived structure (full-text index, vectors, ANN index, statistics) from
    the stored rows. Safe to run any time; never drops a memory."""
    from memvault.backends.embedder import build_embedder
    from memvault.integrity import repair_store

    url, cfg = _url()
    embedder = build_embedder(cfg, url=url)
    with progress_bar() as progress:  # one bar per stage
        report = repair_store(url, embedder, progress=progress)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        out.print(report.summary(), markup=False)


def register(app: typer.Typer) -> None:
    """Attach the commands to ``app``."""
    app.command()(backup)
    app.command("restore-backup")(restore_backup)
    app.command()(check)
    app.command()(repair)
