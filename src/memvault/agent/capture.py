"""Automatic capture: episodes of autonomous runs and triggers, and task-end distillations.

Both helpers are best-effort by design: a capture that fails (embedding, storage, bad input) logs
a warning and returns None, so memory trouble never breaks an agent's run. Only failures of the
interpreter itself (the builtin ``MemoryError``, ``RecursionError``) propagate.
"""

from __future__ import annotations

import builtins
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memvault._ids import utc_now
from memvault.consolidation.triggers import consolidate_on
from memvault.models import ConsolidationInterval, MemoryCategory, MemoryEntry

if TYPE_CHECKING:
    from memvault.injection.memory_api import MemoryAPI

__all__ = [
    "DISTILLATION_TAG",
    "TRIGGER_KEY",
    "DistillationRequest",
    "TurnRecord",
    "capture_distillation",
    "capture_episode",
    "episode_trigger",
]

logger = logging.getLogger(__name__)

DISTILLATION_TAG = "distillation"
TRIGGER_KEY = "trigger_type"
"""The metadata key of what started a captured run (InitRunner's name)."""
_OLD_TRIGGER_KEY = "trigger"  # what memvault wrote before it followed InitRunner's name
MEMORY_TOOL_NAMES = frozenset(
    {
        "search_memory",
        "recall_memory",
        "recall",
        "remember",
        "list_memories",
        "learn_procedure",
        "record_episode",
        "core_memory_read",
        "core_memory_write",
        "archival_memory_search",
        "archival_memory_write",
        "recall_memory_read",
        "recall_memory_write",
    }
)
"""Tool names counted as memory-tool invocations in a distillation."""

_FATAL = (builtins.MemoryError, RecursionError)


async def capture_episode(
    memory: MemoryAPI,
    *,
    agent_id: str,
    summary: str,
    trigger_type: str | None = None,
    category: str = "autonomous_run",
    metadata: Mapping[str, Any] | None = None,
    trigger: str | None = None,
) -> str | None:
    """Store a run's result summary as an episodic memory; its id, or None on any failure.

    ``trigger_type`` names what started the run (``cron``, ``file_watch``, ``webhook`` ...) and
    goes into the metadata under InitRunner's key ``trigger_type``; ``category`` is the
    episode's label (``autonomous_run`` by default). ``trigger`` is the former name of
    ``trigger_type``, still accepted. Admission control runs, but a run summary is always
    admitted (:data:`memvault.write.admission.RUN_SUMMARY_SOURCES`): every run leaves one.
    With ``consolidation_interval: after_autonomous`` the agent is consolidated after the
    capture (best-effort too).
    """
    try:
        extra = dict(metadata or {})
        kind = trigger_type if trigger_type is not None else trigger
        if kind is not None:
            extra[TRIGGER_KEY] = kind
        outcome = await memory.write(
            summary,
            agent_id=agent_id,
            category=MemoryCategory.EPISODIC,
            label=category,
            metadata=extra,
            source="auto_capture",
            admission=True,
        )
    except _FATAL:
        raise
    except Exception as exc:
        logger.warning("episode capture failed for agent %s: %s", agent_id, exc)
        return None
    if outcome.id is None:
        logger.info("episode not captured for agent %s: %s", agent_id, outcome.decision.reason)
        return None
    # consolidation.interval: after_autonomous consolidates when an autonomous run has
    # finished; consolidate_on logs a failure and never raises into the run.
    await consolidate_on(memory, ConsolidationInterval.AFTER_AUTONOMOUS, agent_id=agent_id)
    return outcome.id


def episode_trigger(entry: MemoryEntry) -> str | None:
    """What started the run a captured episode records (``trigger_type``), or None.

    Episodes captured before memvault used InitRunner's key carry ``trigger`` instead; both
    are read, the new key first.
    """
    extra = entry.metadata.extra
    for key in (TRIGGER_KEY, _OLD_TRIGGER_KEY):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class TurnRecord(BaseModel):
    """One turn of an agent run, as far as a distillation needs it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int = Field(default=0, ge=0)
    tool_calls: tuple[str, ...] = ()


class DistillationRequest(BaseModel):
    """What a task's trajectory looked like, for a ``distillation`` episode."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_id: str
    task_id: str
    turns: tuple[TurnRecord, ...] = ()
    outcome: str = Field(min_length=1)
    error: str | None = None
    created_at: datetime | None = None

    @property
    def total_tokens(self) -> int:
        """Tokens over every turn."""
        return sum(t.tokens for t in self.turns)

    @property
    def tool_calls(self) -> list[str]:
        """Every tool call, in order."""
        return [name for t in self.turns for name in t.tool_calls]

    def memory_tool_invocations(self, names: Iterable[str] = MEMORY_TOOL_NAMES) -> dict[str, int]:
        """How often each memory tool was called (tool names, not memory ids)."""
        wanted = set(names)
        return dict(sorted(Counter(c for c in self.tool_calls if c in wanted).items()))

    def trajectory_summary(self) -> str:
        """One line: turns, tokens, unique tools, tool calls."""
        calls = self.tool_calls
        unique: Sequence[str] = sorted(set(calls))
        tools = ", ".join(unique) if unique else "none"
        return (
            f"{len(self.turns)} turns, {self.total_tokens} tokens, "
            f"{len(unique)} unique tools ({tools}), {len(calls)} tool calls"
        )


async def capture_distillation(memory: MemoryAPI, request: DistillationRequest) -> str | None:
    """Record a task's trajectory as an episodic memory tagged ``distillation``; id or None.

    Fires for any outcome (success, error, timeout, budget): every trajectory is context for
    later consolidation. Never raises except for interpreter failures (see module docstring).
    """
    try:
        invocations = request.memory_tool_invocations()
        used = ", ".join(f"{k} x{v}" for k, v in invocations.items()) or "none"
        outcome = request.outcome + (f" (error: {request.error})" if request.error else "")
        content = (
            f"Task {request.task_id}: {outcome}. Trajectory: {request.trajectory_summary()}. "
            f"Memory tools: {used}."
        )
        return await memory.add(
            content,
            agent_id=request.agent_id,
            category=MemoryCategory.EPISODIC,
            tags=[DISTILLATION_TAG],
            label="distillation",
            source="distillation",
            created_at=request.created_at or utc_now(),
            metadata={
                "task_id": request.task_id,
                "outcome": request.outcome,
                "error": request.error,
                "turns": len(request.turns),
                "tokens": request.total_tokens,
                "tool_calls": len(request.tool_calls),
                "memory_tool_invocations": invocations,
            },
            dedup=False,
        )
    except _FATAL:
        raise
    except Exception as exc:
        logger.warning("distillation capture failed for agent %s: %s", request.agent_id, exc)
        return None
