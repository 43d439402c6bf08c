"""Commands that move many memories: export, import, stats."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

import annotated_types as at
import typer
from pydantic import BaseModel
from rich.table import Table

from memvault._inputs import load_export
from memvault.api.requests import ImportBody
from memvault.cli._common import (
    JsonOption,
    ProgressBar,
    emit_json,
    err_console,
    open_service,
    out,
    progress_bar,
)

__all__ = ["register"]


def export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Only this agent (default: all).")
    ] = None,
) -> None:
    """Export memories as a JSON array."""
    svc = open_service()
    params = {"agent_id": agent}
    if output is None:
        emit_json(svc.run(svc.service.call(svc.actor, "export", params)))
        return
    # ``path``: a local-only keyword of the export (the file is written atomically).
    data = svc.run(svc.service.call(svc.actor, "export", params, path=output))
    err_console.print(f"exported {len(data)} memories to {output}", markup=False)


def import_(
    path: Annotated[Path, typer.Argument(help="A JSON file written by `memvault export`.")],
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Assign every memory to this agent.")
    ] = None,
) -> None:
    """Import memories from an export file (ids already present are skipped)."""
    svc = open_service()
    items = list(load_export(path))
    # One request per chunk of what ImportBody allows (REST's limit); each chunk is validated
    # whole before any of it is written, and importing again skips what is already there.
    size = _max_items(ImportBody, "items")
    added = 0
    with progress_bar() as bar:
        for start in range(0, max(len(items), 1), size):
            report = partial(_report, bar, start, len(items))
            body = {"items": items[start : start + size], "agent_id": agent}
            added += svc.run(svc.service.call(svc.actor, "import", body, on_progress=report))
    out.print(f"imported {added} memories")


def _max_items(model: type[BaseModel], name: str) -> int:
    """The ``max_length`` the request model allows the list field ``name``."""
    for item in model.model_fields[name].metadata:
        if isinstance(item, at.MaxLen):
            return int(item.max_length)
    msg = f"{model.__name__}.{name} has no maximum length"
    raise AssertionError(msg)


def _report(bar: ProgressBar, start: int, total: int, done: int, _chunk_total: int) -> None:
    # A chunk's progress as the whole file's.
    bar("importing", start + done, total)


def stats(json_out: bool = JsonOption) -> None:
    """Show counts of the store (and of its conversations, when it holds any)."""
    from memvault.cli.sessions import conversation_stats_if_stored

    svc = open_service()
    s = svc.run(svc.service.call(svc.actor, "stats", {}))
    conversations = conversation_stats_if_stored()
    if json_out:
        data = s.model_dump()
        if conversations is not None:
            data["conversations"] = conversations.model_dump()
        emit_json(data)
        return
    table = Table(show_header=False)
    table.add_row("backend", s.backend)
    table.add_row("location", s.location)
    table.add_row("memories", str(s.total))
    table.add_row("agents", str(s.agents))
    for cat, n in sorted(s.by_category.items()):
        table.add_row(f"  {cat}", str(n))
    table.add_row("embedding model", f"{s.embedding_model} ({s.dimension} dims)")
    if s.size_bytes is not None:
        table.add_row("size", f"{s.size_bytes / 1_048_576:.1f} MiB")
    if conversations is not None:
        counts = conversations.model_dump()
        table.add_row("conversations", str(counts.pop("conversations")))
        for name, n in counts.items():
            table.add_row(f"  {name.replace('_', ' ')}", str(n))
    out.print(table)


def register(app: typer.Typer) -> None:
    """Attach the commands to ``app``."""
    app.command()(export)
    app.command("import")(import_)
    app.command()(stats)
