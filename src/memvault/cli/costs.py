"""``memvault costs``: what memvault's own model calls (and any an application records) cost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from memvault.api.records import CostSummaryParams
from memvault.cli._common import JsonOption, bounds, emit_json, open_service, out
from memvault.persistence.models import CostGroup

__all__ = ["register"]


def costs(
    by: Annotated[
        CostGroup, typer.Option("--by", help="Sum per agent, task, model or UTC day.")
    ] = CostGroup.AGENT,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Only this agent's calls.")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only this task's calls.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model's calls.")] = None,
    days: Annotated[
        int | None,
        typer.Option("--days", min=1, max=3650, help="Only the last N days (default: all)."),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", help="At most this many groups.", **bounds(CostSummaryParams, "limit")
        ),
    ] = 100,
    as_json: bool = JsonOption,
) -> None:
    """Show tokens and cost of model calls, summed per agent, task, model or day.

    Every LLM and embedding call memvault makes for an agent (extraction, consolidation,
    learning, reformulation, remote embedders) writes a cost record; the cost is filled in
    when ``persistence.costs.prices`` has the model.
    """
    svc = open_service()
    since = None if days is None else datetime.now(UTC) - timedelta(days=days)
    params = {
        "by": by.value,
        "agent_id": agent,
        "task_id": task,
        "model": model,
        "since": since,
        "limit": limit,
    }
    groups = svc.run(svc.service.call(svc.actor, "cost_summary", params))
    if as_json:
        emit_json([g.model_dump(mode="json") for g in groups])
        return
    if not groups:
        out.print("no cost records")
        return
    table = Table(box=None, pad_edge=False)
    table.add_column(by.value, overflow="fold")
    for name in ("calls", "tokens in", "tokens out", "cost", "mean ms"):
        table.add_column(name, justify="right", no_wrap=True)
    for g in groups:
        table.add_row(
            escape(g.group or "(none)"),
            str(g.calls),
            str(g.input_tokens),
            str(g.output_tokens),
            f"{g.cost:.4f}",
            f"{g.latency_ms:.0f}",
        )
    out.print(table)
    total = sum(g.cost for g in groups)
    out.print(f"total {total:.4f} over {sum(g.calls for g in groups)} calls")


def register(app: typer.Typer) -> None:
    """Attach the command to ``app``."""
    app.command()(costs)
