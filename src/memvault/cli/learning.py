"""``memvault learn``, ``memvault approvals``, ``memvault profile``, ``memvault evolve``.

The learning layer from the command line: report a finished task, review the approval queue
(list, show, approve, reject), set agent profiles and run the skill evolver. Each command runs
the declared operation (:mod:`memvault.api.operations`): through the local service as the
local user (an admin of the store) for a store, or through the server for a server URL, where
the API key decides what is allowed (an agent key cannot approve).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from memvault.api.operations import get_operation
from memvault.cli._common import JsonOption, emit_json, open_memory, open_service, out
from memvault.errors import MemoryValidationError
from memvault.remote import RemoteAsyncMemory

__all__ = ["approvals_app", "profile_app", "register"]

approvals_app = typer.Typer(
    name="approvals",
    help="The human approval queue of skill proposals: list, show, approve, reject.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
profile_app = typer.Typer(
    name="profile",
    help="Agent profiles (role, department, seniority): set, show.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

LlmUrl = typer.Option(
    "--llm-url",
    envvar="MEMVAULT_LLM_BASE_URL",
    help="OpenAI-compatible base URL of the proposer LLM (without one, outcomes are recorded).",
)
LlmModel = typer.Option("--llm-model", envvar="MEMVAULT_LLM_MODEL", help="Model name.")


def _call(name: str, fields: dict[str, Any], *, llm_url: str | None = None, model: str = "") -> Any:
    """Run operation ``name`` and return its JSON answer (locally or on the server)."""
    op = get_operation(name)
    memory = open_memory()
    if isinstance(memory.aio, RemoteAsyncMemory):
        remote = memory.aio
        return memory._run(remote.call(name, **fields))
    llm = None
    if llm_url:
        from memvault.llm import OpenAICompatibleLLM

        llm = OpenAICompatibleLLM(llm_url, model)
    svc = open_service(llm)
    result = svc.run(svc.service.call(svc.actor, op, fields))
    return op.render(result, op.parse(fields))


def _outcome_file(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"--outcome: cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        raise MemoryValidationError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"--outcome: {path} is not valid JSON ({exc.msg}, line {exc.lineno})"
        raise MemoryValidationError(msg) from None
    if not isinstance(data, dict):
        msg = f"--outcome: {path} must hold a JSON object (a task outcome)"
        raise MemoryValidationError(msg)
    return data


def learn(
    agent: Annotated[str, typer.Option("--agent", "-a", help="The agent that ran the task.")],
    success: Annotated[
        bool | None, typer.Option("--success/--failure", help="Whether the task succeeded.")
    ] = None,
    outcome: Annotated[
        str | None, typer.Option("--outcome", help="A JSON file with the whole task outcome.")
    ] = None,
    task_type: Annotated[str | None, typer.Option("--task-type", help="Kind of task.")] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="What the task was.")
    ] = None,
    error: Annotated[str | None, typer.Option("--error", help="The error it ended with.")] = None,
    tools: Annotated[
        list[str] | None, typer.Option("--tool", help="A tool call made, in order (repeat).")
    ] = None,
    failed_tools: Annotated[
        list[str] | None, typer.Option("--failed-tool", help="A tool call that failed (repeat).")
    ] = None,
    quality: Annotated[
        float | None, typer.Option("--quality", help="Quality score 0-10 of a success.")
    ] = None,
    applied: Annotated[
        list[str] | None, typer.Option("--applied-skill", help="Id of a skill used (repeat).")
    ] = None,
    llm_url: Annotated[str | None, LlmUrl] = None,
    llm_model: Annotated[str, LlmModel] = "gpt-4o-mini",
    as_json: bool = JsonOption,
) -> None:
    """Report a finished task; a failure (or a good success) becomes a lesson."""
    fields: dict[str, Any] = _outcome_file(outcome) if outcome else {}
    given = {
        "success": success,
        "task_type": task_type,
        "description": description,
        "error": error,
        "quality_score": quality,
    }
    fields.update({k: v for k, v in given.items() if v is not None})
    calls = [{"name": t} for t in tools or []] + [
        {"name": t, "ok": False} for t in failed_tools or []
    ]
    if calls:
        fields["tool_calls"] = calls
    if applied:
        fields["applied_skills"] = list(applied)
    if "success" not in fields:
        msg = "say whether the task succeeded: --success or --failure (or --outcome FILE)"
        raise MemoryValidationError(msg)
    report = _call("learn_from", {**fields, "agent_id": agent}, llm_url=llm_url, model=llm_model)
    if as_json:
        emit_json(report)
        return
    if report.get("error"):
        out.print(escape(f"not learned: {report['error']}"))
    elif report.get("captured"):
        proposal = report.get("proposal") or {}
        out.print(escape(f"learned {report['lesson_id']}: {proposal.get('discovery', '')}"))
    else:
        out.print(escape(f"recorded (no lesson: {report.get('reason') or 'nothing to learn'})"))


def _item_line(item: dict[str, Any]) -> tuple[str, ...]:
    proposal = item["proposal"]
    return (
        item["id"],
        item["status"],
        item["verdict"],
        f"{proposal['confidence']:.2f}",
        proposal["discovery"][:70],
    )


@approvals_app.command("list")
def approvals_list(
    status: Annotated[
        str | None, typer.Option("--status", help="pending, approved or rejected.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many.")] = 100,
    as_json: bool = JsonOption,
) -> None:
    """Approval items, newest first."""
    fields: dict[str, Any] = {"limit": limit}
    if status is not None:
        fields["status"] = status
    items = _call("approvals", fields)["approvals"]
    if as_json:
        emit_json(items)
        return
    if not items:
        out.print("no approval items")
        return
    table = Table("id", "status", "verdict", "confidence", "proposal")
    for item in items:
        table.add_row(*(escape(c) for c in _item_line(item)))
    out.print(table)


@approvals_app.command("show")
def approvals_show(
    item_id: Annotated[str, typer.Argument(help="The approval item's id.")],
    as_json: bool = JsonOption,
) -> None:
    """One approval item in full."""
    item = _call("approval", {"item_id": item_id})
    if as_json:
        emit_json(item)
        return
    proposal = item["proposal"]
    out.print(escape(f"{item['id']}  {item['status']}  ({item['verdict']})"))
    out.print(escape(f"pattern: {item['pattern_key']}  evidence: {json.dumps(item['evidence'])}"))
    out.print(escape(f"when: {proposal['condition']}\ndo:   {proposal['action']}"))
    if proposal.get("rationale"):
        out.print(escape(f"why:  {proposal['rationale']}"))
    for i, step in enumerate(proposal.get("execution_steps") or [], 1):
        out.print(escape(f"  {i}. {step}"))
    if item.get("decided_by"):
        out.print(escape(f"decided by {item['decided_by']}: {item.get('reason') or ''}"))


@approvals_app.command("approve")
def approvals_approve(
    item_id: Annotated[str, typer.Argument(help="The approval item's id.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why (audited).")] = None,
    as_json: bool = JsonOption,
) -> None:
    """Approve a proposal: it joins org memory (humans and admins only)."""
    fields: dict[str, Any] = {"item_id": item_id}
    if reason is not None:
        fields["reason"] = reason
    item = _call("approve", fields)
    if as_json:
        emit_json(item)
        return
    out.print(escape(f"approved {item['id']}: org skill {item['applied_id']}"))


@approvals_app.command("reject")
def approvals_reject(
    item_id: Annotated[str, typer.Argument(help="The approval item's id.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (required, audited).")],
    as_json: bool = JsonOption,
) -> None:
    """Reject a proposal (kept for the record, with the reason)."""
    item = _call("reject", {"item_id": item_id, "reason": reason})
    if as_json:
        emit_json(item)
        return
    out.print(escape(f"rejected {item['id']}"))


@profile_app.command("set")
def profile_set(
    agent: Annotated[str, typer.Argument(help="The agent's id.")],
    role: Annotated[str | None, typer.Option("--role", help="The agent's role.")] = None,
    department: Annotated[
        str | None, typer.Option("--department", help="The agent's department.")
    ] = None,
    seniority: Annotated[
        str, typer.Option("--seniority", help="junior, mid, senior, lead or c_suite.")
    ] = "mid",
    as_json: bool = JsonOption,
) -> None:
    """Set an agent's role, department and seniority."""
    fields: dict[str, Any] = {"agent_id": agent, "seniority": seniority}
    if role is not None:
        fields["role"] = role
    if department is not None:
        fields["department"] = department
    profile = _call("set_profile", fields)
    if as_json:
        emit_json(profile)
        return
    out.print(escape(_profile_line(profile)))


@profile_app.command("show")
def profile_show(
    agent: Annotated[str, typer.Argument(help="The agent's id.")],
    as_json: bool = JsonOption,
) -> None:
    """An agent's profile."""
    profile = _call("profile", {"agent_id": agent})
    if as_json:
        emit_json(profile)
        return
    out.print(escape(_profile_line(profile)))


def _profile_line(profile: dict[str, Any]) -> str:
    return (
        f"{profile['agent_id']}: role={profile.get('role') or '-'} "
        f"department={profile.get('department') or '-'} seniority={profile['seniority']}"
    )


def evolve(as_json: bool = JsonOption) -> None:
    """Run one skill-evolver cycle now: recurring failures become proposals to approve."""
    report = _call("evolve", {"force": True})
    if as_json:
        emit_json(report)
        return
    if report.get("error"):
        out.print(escape(f"evolver failed: {report['error']}"))
        return
    out.print(
        f"{report['trajectories']} trajectories, {report['patterns']} patterns, "
        f"{len(report['emitted'])} proposals emitted, {len(report['conflicts'])} conflicts "
        f"({len(report.get('escalated') or ())} escalated to the approval queue)"
    )


def register(app: typer.Typer) -> None:
    """Add the learning commands to the main app."""
    app.command("learn")(learn)
    app.command("evolve")(evolve)
    app.add_typer(approvals_app)
    app.add_typer(profile_app)
