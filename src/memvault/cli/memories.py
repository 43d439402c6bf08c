"""Commands on individual memories: add, search, list, get, delete, clear.

One name per concept on every command: ``--type``/``-t`` is the memory type (semantic,
episodic, ...), ``--label`` the free-form sub-category, ``--tag`` a tag. ``--category``/``-c``
is kept on ``add`` and ``list`` as a deprecated alias of ``--type`` (it warns on stderr).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memvault._inputs import parse_category
from memvault.api.requests import ListParams, SearchBody
from memvault.cli._common import (
    AgentOption,
    JsonOption,
    bounds,
    emit_json,
    entry_json,
    err_console,
    open_service,
    out,
    parse_datetime,
)
from memvault.errors import MemoryCapabilityError, MemoryValidationError
from memvault.memory import Memory
from memvault.models import MemoryCategory, MemoryEntry

__all__ = ["register"]


def _table(entries: list[MemoryEntry]) -> Table:
    table = Table(show_lines=False)
    table.add_column("id", style="dim", no_wrap=True)
    table.add_column("type")
    table.add_column("created")
    table.add_column("content")
    for e in entries:
        table.add_row(e.id, e.category.value, f"{e.created_at:%Y-%m-%d}", escape(e.content))
    return table


def _print_hits(hits: list[MemoryEntry], *, explain: bool) -> None:
    period = next((e.score.period for e in hits if e.score is not None), None)
    if explain and period is not None:
        # The period the question names, as ranking resolved it (the same for every result).
        out.print(f"[dim]period: {escape(period.describe())}[/dim]")
    for rank, e in enumerate(hits, start=1):
        out.print(
            f"{rank:>2}. [bold]{e.relevance_score or 0.0:.3f}[/bold] "
            + escape(f"[{e.category.value} | {e.created_at:%Y-%m-%d}] {e.content}")
        )
        out.print(f"    [dim]{e.id}[/dim]")
        if explain and e.score is not None:
            s = e.score
            rank_d = "" if s.dense_rank is None else f" (#{s.dense_rank})"
            dense = "-" if s.dense is None else f"{s.dense:.3f}{rank_d}"
            bm25 = "-" if s.bm25 is None else f"{s.bm25:.2f} (#{s.bm25_rank})"
            rerank = "" if s.rerank is None else f" rerank={s.rerank:.3f}"
            # Raw values first (cosine, BM25), then the relevance they calibrate to.
            fused = "relevance" if s.evidence is not None else "fused"
            out.print(
                f"    cosine={dense} bm25={bm25} {fused}={s.fused:.3f} recency={s.recency:.3f} "
                f"boost={s.boost:.3f} mmr={s.mmr_penalty:.3f}{rerank} final={s.final:.3f}"
            )
            if s.evidence:
                parts = " ".join(f"{k}={v:+.2f}" for k, v in s.evidence.items())
                out.print(f"    [dim]evidence: {escape(parts)}[/dim]")
            if s.on_topic is not None:
                # The off-topic gate: relevance is the evidence's probability times this.
                out.print(f"    [dim]on topic: {s.on_topic:.3f}[/dim]")


_TYPES = "working, episodic, semantic, procedural or social"

DEPRECATED_CATEGORY = (
    "warning: --category is deprecated: use --type for the memory type "
    "(--label for the free-form label)"
)

CategoryAlias = typer.Option(
    "--category", "-c", hidden=True, help="Deprecated alias of --type (warns)."
)


def _parsed(memory_type: str | None) -> MemoryCategory | None:
    """A ``--type`` value as its memory type.

    Case-insensitive, and a bad one is quoted in the error (the request models only list the
    valid ones).
    """
    return None if memory_type is None else parse_category(memory_type)


def _memory_type(memory_type: str | None, category: str | None) -> MemoryCategory | None:
    """``--type``, or the deprecated ``--category`` (with a warning on stderr)."""
    if category is None:
        return _parsed(memory_type)
    err_console.print(DEPRECATED_CATEGORY, markup=False)
    if memory_type is not None and memory_type != category:
        msg = (
            f"--category is the old name of --type: give one of them, not --type "
            f"{memory_type!r} and --category {category!r}"
        )
        raise MemoryValidationError(msg)
    return _parsed(category)


def add(
    content: Annotated[str, typer.Argument(help="The text to remember.")],
    agent: str = AgentOption,
    memory_type: Annotated[
        str | None,
        typer.Option("--type", "-t", help=f"Memory type: {_TYPES} [default: semantic]."),
    ] = None,
    category: Annotated[str | None, CategoryAlias] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="Free-form label (sub-category).")
    ] = None,
    created_at: Annotated[
        str | None, typer.Option("--created-at", help="ISO 8601 time (default now, UTC).")
    ] = None,
    json_out: bool = JsonOption,
) -> None:
    """Store one memory and print its id.

    A working memory (``--type working``) lives in the process that stores it (the design
    documents: WORKING is in-context, never persisted), so this command refuses one unless the
    configuration routes ``working`` to a store (``memory.composite.routes``) or the store is a
    server, which keeps it for as long as it runs. A write that stores nothing (level ``none``)
    says why on stderr and exits with code 1.
    """
    kind = _memory_type(memory_type, category) or MemoryCategory.SEMANTIC
    svc = open_service()
    if kind == "working" and _working_ends_with_this_run(svc.memory):
        msg = (
            "working memories live in process only and would be gone when this command exits; "
            "route them to a store to keep them (memory.backend: composite, "
            "composite.routes: {working: <url>})"
        )
        raise MemoryCapabilityError(msg)
    body = {
        "agent_id": agent,
        "content": content,
        "category": kind,
        "tags": tag or [],
        "label": label,
        "created_at": parse_datetime(created_at, "--created-at"),
    }
    outcome = svc.run(svc.service.call(svc.actor, "store", body))
    new_id = outcome.id or ""
    if json_out:
        emit_json({"id": new_id})
    else:
        out.print(new_id)
    if outcome.id is None:
        err_console.print(f"not stored: {outcome.decision.reason}", markup=False)
        raise typer.Exit(1)


def _working_ends_with_this_run(memory: Memory) -> bool:
    """True if a WORKING memory stored now would vanish when the CLI process exits."""
    if memory.location.startswith(("http://", "https://")):
        return False  # a server keeps it in its own (long-lived) process
    cfg = memory.config
    route = cfg.composite.routes.get(MemoryCategory.WORKING) if cfg.backend == "composite" else None
    return route is None or route.strip().startswith(("memory:", ":memory:"))


def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    agent: str = AgentOption,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", **bounds(SearchBody, "limit"), help="How many results at most."
        ),
    ] = 10,
    memory_type: Annotated[
        list[str] | None,
        typer.Option("--type", "-t", help="Only this memory type (repeatable)."),
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Required tag.")] = None,
    preset: Annotated[str | None, typer.Option(help="Retrieval preset.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show the score breakdown.")] = False,
    asked_at: Annotated[
        str | None,
        typer.Option(
            "--asked-at",
            help="When the question is asked (ISO 8601; default now): 'last week' counts back "
            "from it.",
        ),
    ] = None,
    json_out: bool = JsonOption,
) -> None:
    """Hybrid search of an agent's memories."""
    asked = parse_datetime(asked_at, "--asked-at")
    svc = open_service()
    body = {
        "agent_id": agent,
        "query": query,
        "limit": limit,
        "categories": [_parsed(t) for t in memory_type] if memory_type else None,
        "tags": tag or None,
        "preset": preset,
        "explain": explain,
        "asked_at": asked,
    }
    hits = svc.run(svc.service.call(svc.actor, "search", body))
    if json_out:
        emit_json([entry_json(h) for h in hits])
    elif not hits:
        out.print("no memories found")
    else:
        _print_hits(hits, explain=explain)


def list_(
    agent: str = AgentOption,
    memory_type: Annotated[
        str | None, typer.Option("--type", "-t", help=f"Only this memory type: {_TYPES}.")
    ] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="Only this free-form label (sub-category).")
    ] = None,
    category: Annotated[str | None, CategoryAlias] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", **bounds(ListParams, "limit"), help="How many memories at most."
        ),
    ] = 20,
    json_out: bool = JsonOption,
) -> None:
    """List an agent's memories, newest first."""
    kind = _memory_type(memory_type, category)
    svc = open_service()
    params = {"agent_id": agent, "category": kind, "label": label, "limit": limit}
    rows = svc.run(svc.service.call(svc.actor, "list", params))
    if json_out:
        emit_json([entry_json(e) for e in rows])
    elif not rows:
        out.print("no memories")
    else:
        out.print(_table(rows))


def get(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    agent: str = AgentOption,
    json_out: bool = JsonOption,
) -> None:
    """Show one memory."""
    svc = open_service()
    entry = svc.run(svc.service.call(svc.actor, "get", {"memory_id": memory_id, "agent_id": agent}))
    if json_out:
        emit_json(entry_json(entry))
    else:
        for key, value in entry_json(entry).items():
            out.print(f"[bold]{key}[/bold]: " + escape(str(value)))


def delete(
    memory_id: Annotated[str, typer.Argument(help="The memory's id.")],
    agent: str = AgentOption,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (kept in the audit log).")
    ] = None,
) -> None:
    """Delete one memory (audited under your user name)."""
    from memvault.errors import MemoryNotFoundError

    svc = open_service()
    params = {"memory_id": memory_id, "agent_id": agent, "reason": reason}
    if not svc.run(svc.service.call(svc.actor, "delete", params)):
        msg = f"memory {memory_id} not found for agent {agent!r}"
        raise MemoryNotFoundError(msg)
    out.print(f"deleted {memory_id}")


def clear(
    agent: str = AgentOption,
    memory_type: Annotated[
        str | None, typer.Option("--type", "-t", help="Only this memory type.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Do not ask.")] = False,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why (kept in the audit log).")
    ] = None,
) -> None:
    """Delete all of an agent's memories (or one type of them); audited."""
    kind = _parsed(memory_type)
    svc = open_service()
    what = f"{memory_type} memories" if memory_type else "memories"
    if not force:
        counted = {"agent_id": agent, "category": kind}
        n = svc.run(svc.service.call(svc.actor, "count", counted))
        if not typer.confirm(f"Delete {n} {what} of agent {agent!r}?", default=False):
            out.print("aborted")
            raise typer.Exit(1)
    params = {"agent_id": agent, "category": kind, "reason": reason}
    removed = svc.run(svc.service.call(svc.actor, "clear", params))
    out.print(f"deleted {removed} {what}")


def register(app: typer.Typer) -> None:
    """Attach the commands to ``app``."""
    app.command()(add)
    app.command()(search)
    app.command("list")(list_)
    app.command()(get)
    app.command()(delete)
    app.command()(clear)
