"""Commands on the lifecycle of memories: the archive, the audit log, retention sweeps and
consolidation (``memvault consolidate``, ``--facts`` for InitRunner's episodes -> facts)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memvault.api.requests import ArchivedParams, AuditParams, ConsolidateBody
from memvault.cli._common import (
    AgentOption,
    JsonOption,
    bounds,
    emit_json,
    entry_json,
    open_service,
    out,
)
from memvault.consolidation import ConsolidationResult, ConsolidationStrategy
from memvault.errors import MemoryValidationError

__all__ = ["register"]

archive_app = typer.Typer(
    help="Archived memories (evicted, expired, consolidated): list and restore.",
    no_args_is_help=True,
)

# The limits of the operations' request models, so a command allows what its REST route does.
ArchiveLimit = typer.Option(
    "--limit", "-n", **bounds(ArchivedParams, "limit"), help="At most this many rows."
)
AuditLimit = typer.Option(
    "--limit", "-n", **bounds(AuditParams, "limit"), help="At most this many rows."
)


@archive_app.command("list")
def archive_list(
    agent: str = AgentOption,
    limit: Annotated[int, ArchiveLimit] = 50,
    as_json: bool = JsonOption,
) -> None:
    """List an agent's archived memories, newest first."""
    svc = open_service()
    rows = svc.run(svc.service.call(svc.actor, "archived", {"agent_id": agent, "limit": limit}))
    if as_json:
        emit_json(
            [
                {
                    "archive_id": r.archive_id,
                    "reason": r.reason,
                    "archived_at": r.archived_at.isoformat(),
                    "entry": entry_json(r.entry),
                }
                for r in rows
            ]
        )
        return
    if not rows:
        out.print(f"no archived memories for agent {agent!r}")
        return
    table = Table()
    table.add_column("id", style="dim", no_wrap=True)
    table.add_column("reason")
    table.add_column("archived")
    table.add_column("content")
    for r in rows:
        table.add_row(
            r.memory_id, r.reason, f"{r.archived_at:%Y-%m-%d %H:%M}", escape(r.entry.content)
        )
    out.print(table)


@archive_app.command("restore")
def archive_restore(
    memory_id: Annotated[str, typer.Argument(help="The archived memory's original id.")],
    agent: str = AgentOption,
) -> None:
    """Bring an archived memory back under its original id."""
    svc = open_service()
    params = {"memory_id": memory_id, "agent_id": agent}
    entry = svc.run(svc.service.call(svc.actor, "restore", params))
    out.print(f"restored {entry.id}")


_STRATEGIES = ", ".join(s.value for s in ConsolidationStrategy)


def audit(
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Only this agent's records.")
    ] = None,
    memory_id: Annotated[
        str | None, typer.Option("--memory", help="Only records of this memory id.")
    ] = None,
    limit: Annotated[int, AuditLimit] = 100,
    as_json: bool = JsonOption,
) -> None:
    """Show the append-only audit log (store, delete, supersede, evict, restore ...)."""
    svc = open_service()
    params = {"agent_id": agent, "memory_id": memory_id, "limit": limit}
    records = svc.run(svc.service.call(svc.actor, "audit", params))
    if as_json:
        emit_json([r.model_dump(mode="json") for r in records])
        return
    for r in records:
        target = r.memory_id or "-"
        extra = " ".join(f"{k}={v}" for k, v in sorted(r.details.items()))
        out.print(escape(f"{r.at:%Y-%m-%d %H:%M:%S} {r.actor} {r.action} {target} {extra}"))
    if not records:
        out.print("no audit records")


def sweep(
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Only this agent (default: all).")
    ] = None,
    as_json: bool = JsonOption,
) -> None:
    """Enforce retention now: archive expired memories and evict over the caps."""
    svc = open_service()
    report = svc.run(svc.service.call(svc.actor, "sweep", {"agent_id": agent}))
    if as_json:
        emit_json({"expired": report.expired, "evicted": report.evicted})
        return
    out.print(f"archived {len(report.expired)} expired, {len(report.evicted)} evicted")


def consolidate(
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Only this agent (default: all).")
    ] = None,
    facts: Annotated[
        bool,
        typer.Option(
            "--facts",
            help=(
                "InitRunner's `memory consolidate`: extract semantic facts from the "
                "unconsolidated episodes (the episodes are kept, marked consolidated). "
                "Same as --strategy extract."
            ),
        ),
    ] = False,
    strategy: Annotated[
        str | None,
        typer.Option(
            "--strategy",
            "-s",
            help=(
                f"{_STRATEGIES}: simple concatenates older memories, extract turns episodes "
                "into facts (see --facts). Default: memory.consolidation.strategy of the "
                "configuration (simple unless it says otherwise)."
            ),
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="List every memory a run would merge, group by group; write nothing.",
        ),
    ] = False,
    min_age_days: Annotated[
        float | None,
        typer.Option(
            "--min-age-days",
            **bounds(ConsolidateBody, "min_age_days"),
            help=(
                "Merge only memories at least this many days old (default: "
                "memory.consolidation.min_age_days, 30). 0 merges memories of any age."
            ),
        ),
    ] = None,
    llm_url: Annotated[
        str | None,
        typer.Option(
            "--llm-url",
            envvar="MEMVAULT_LLM_BASE_URL",
            help="OpenAI-compatible base URL (e.g. http://localhost:11434/v1) for LLM strategies.",
        ),
    ] = None,
    llm_model: Annotated[
        str, typer.Option("--llm-model", envvar="MEMVAULT_LLM_MODEL", help="Model name.")
    ] = "gpt-4o-mini",
    as_json: bool = JsonOption,
) -> None:
    """Consolidate memories: merge older ones (archived), or with --facts turn episodes into facts.

    Two meanings share this name. The SynthOrg design documents consolidate by merging an
    agent's older memories into fewer ones (strategies simple, dual_mode, llm; the originals go
    to the archive); InitRunner's ``memory consolidate`` extracts durable semantic facts from
    unconsolidated episodes (strategy extract). Merging touches only memories older than
    ``memory.consolidation.min_age_days`` (30 days unless configured; ``--min-age-days``
    overrides it for one run), at most ``max_group_size`` (5) per new memory, and every merged
    original's id still answers ``memvault get`` (its archived copy, with ``consolidated_into``
    naming the new memory). Changing what the bare command does would
    silently change existing scripts, so the bare command keeps following the configured
    strategy, and InitRunner's meaning gets one obvious flag of its own: ``--facts``. With an
    LLM (``--llm-url``) the facts are extracted by the model, else the key-fact sentences of
    each episode are kept verbatim.
    """
    if facts and strategy is not None and strategy != ConsolidationStrategy.EXTRACT.value:
        msg = f"--facts means --strategy extract; it cannot be combined with --strategy {strategy}"
        raise MemoryValidationError(msg)
    chosen = ConsolidationStrategy.EXTRACT.value if facts else strategy
    if chosen is not None and chosen not in {s.value for s in ConsolidationStrategy}:
        # Said in the option's words before anything opens (the request model would refuse
        # it too, naming the field instead).
        msg = f"unknown consolidation strategy {chosen!r} (choose from {_STRATEGIES})"
        raise MemoryValidationError(msg)
    llm = None
    if llm_url:
        from memvault.llm import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(llm_url, llm_model)
    svc = open_service(llm)
    agents = [agent] if agent is not None else svc.run(svc.service.call(svc.actor, "agents", {}))
    asked = {"strategy": chosen, "dry_run": dry_run, "min_age_days": min_age_days}
    results = [
        svc.run(svc.service.call(svc.actor, "consolidate", {"agent_id": a, **asked}))
        for a in agents
    ]
    if as_json:
        emit_json([r.model_dump(mode="json") for r in results])
        return
    verb = "would merge" if dry_run else "merged"
    for r in results:
        if r.strategy is ConsolidationStrategy.EXTRACT:
            out.print(escape(_facts_line(r, dry_run=dry_run)))
            continue
        groups = [g for g in r.groups if g.consolidated_ids]
        merged = sum(len(g.consolidated_ids) for g in groups)
        out.print(
            escape(
                f"{r.agent_id}: {verb} {merged} memories in {len(groups)} groups, "
                f"created {len(r.created_ids)}, archived {len(r.removed_ids)}, "
                f"marked {len(r.marked_ids)}" + (f", {len(r.errors)} errors" if r.errors else "")
            )
        )
        for line in _group_lines(r, dry_run=dry_run):
            out.print(escape(line))


def _group_lines(result: ConsolidationResult, *, dry_run: bool) -> list[str]:
    """One line per new memory: its category, the originals it merges and (real run) its id."""
    lines: list[str] = []
    groups = [g for g in result.groups if g.consolidated_ids]
    for number, group in enumerate(groups, 1):
        into = f" into {group.created_ids[0]}" if len(group.created_ids) == 1 else ""
        verb = "would merge" if dry_run else ("merged" if into else group.status.value)
        ids = ", ".join(group.consolidated_ids)
        lines.append(
            f"  group {number} ({group.category.value}): {verb} "
            f"{len(group.consolidated_ids)}{into}: {ids}"
        )
    if result.too_young:
        lines.append(
            f"  {result.too_young} memories younger than {result.min_age_days:g} days left alone"
        )
    return lines


def _facts_line(result: ConsolidationResult, *, dry_run: bool) -> str:
    """One line for an episodes-to-facts run: episodes read, facts stored."""
    episodes = sum(len(g.consolidated_ids) for g in result.groups)
    if dry_run:
        return f"{result.agent_id}: would extract facts from {episodes} episodes"
    errors = f", {len(result.errors)} errors" if result.errors else ""
    return (
        f"{result.agent_id}: {len(result.created_ids)} facts from {len(result.marked_ids)} "
        f"episodes (marked consolidated){errors}"
    )


def register(app: typer.Typer) -> None:
    """Attach the commands to ``app``."""
    app.add_typer(archive_app, name="archive")
    app.command()(audit)
    app.command()(sweep)
    app.command()(consolidate)
