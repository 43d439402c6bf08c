"""The data of the learning layer: task outcomes, lessons, approvals, profiles, org facts.

Everything here is a frozen pydantic model (it crosses the REST, MCP and CLI boundaries) or a
``StrEnum`` of a closed set. Nothing here does I/O.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "ORG_POOL",
    "AgentProfile",
    "ApprovalItem",
    "ApprovalKind",
    "ApprovalStatus",
    "EvolverReport",
    "FailureAnalysisPayload",
    "LearnReport",
    "OrgFact",
    "OrgFactAuthor",
    "OrgFactKind",
    "OrgFactWriteRequest",
    "OrgMemoryQuery",
    "ProceduralMemoryProposal",
    "ProceduralMemoryScope",
    "PruneReport",
    "Seniority",
    "SupersessionVerdict",
    "TaskOutcome",
    "ToolCallRecord",
    "Trajectory",
    "department_pool",
    "is_pool_id",
    "role_pool",
]

ORG_POOL = "_org"
"""The pseudo-agent whose memories are the organisation's extended store and skill pool."""
_ROLE_PREFIX = "_role:"
_DEPT_PREFIX = "_dept:"

LESSON_TAG = "procedural-lesson"
NON_INFERABLE = "non-inferable"
SUCCESS_TAG = "success-derived"
FAILURE_TAG = "failure-derived"
SKILL_TAG = "skill"


def role_pool(role: str) -> str:
    """The pseudo-agent holding the skills shared by every agent of ``role``."""
    return f"{_ROLE_PREFIX}{role}"


def department_pool(department: str) -> str:
    """The pseudo-agent holding the skills shared by every agent of ``department``."""
    return f"{_DEPT_PREFIX}{department}"


def is_pool_id(agent_id: str) -> bool:
    """True for the reserved pseudo-agents of the skill pool (never a real agent's id)."""
    return agent_id == ORG_POOL or agent_id.startswith((_ROLE_PREFIX, _DEPT_PREFIX))


_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
_NAME_RE = re.compile(r"^[^\x00-\x1f\x7f]{1,100}$")


def _short(value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value if len(value) <= limit else value[: limit - 1] + "…"


# -- what a framework reports after a task ----------------------------------------------------


class ToolCallRecord(BaseModel):
    """One tool call an agent made during a task: its name and whether it succeeded."""

    model_config = _FROZEN

    name: str = Field(min_length=1, max_length=200)
    ok: bool = True
    error: str | None = Field(default=None, max_length=2000)


class TaskOutcome(BaseModel):
    """What happened in one task, as an agent framework reports it to ``learn_from``.

    Deliberately no conversation: the lesson is built from task metadata, the error, the tool
    calls and the counts only (the privacy boundary of the design). ``error_category`` groups
    failures across agents (e.g. ``rate_limit``); without it one is derived from the error.
    ``quality_score`` (0-10) drives success capture. ``applied_skills`` names the injected
    skills (memory ids) the agent actually used, which counts their applications; without it,
    the skills and lessons context injection gave this agent since its previous outcome are
    counted (see :meth:`memvault.learning.LearningEngine.note_injected`).
    """

    model_config = _FROZEN

    success: bool
    task_id: str | None = Field(default=None, max_length=200)
    task_type: str = Field(default="task", min_length=1, max_length=200)
    description: str = Field(default="", max_length=4000)
    error: str | None = Field(default=None, max_length=8000)
    error_category: str | None = Field(default=None, max_length=100)
    tool_calls: tuple[ToolCallRecord, ...] = Field(default=(), max_length=500)
    retry_count: int = Field(default=0, ge=0)
    turn_count: int = Field(default=0, ge=0)
    quality_score: float | None = Field(default=None, ge=0.0, le=10.0)
    applied_skills: tuple[str, ...] = Field(default=(), max_length=100)
    metadata: dict[str, Any] = Field(default_factory=dict)


class FailureAnalysisPayload(BaseModel):
    """What the proposer LLM sees of a task: metadata, sanitised error, tool calls, counts.

    Built by :meth:`from_outcome`; it never carries conversation messages.
    """

    model_config = _FROZEN

    task_id: str | None = None
    task_type: str
    task_description: str
    success: bool
    error_message: str | None = None
    error_category: str | None = None
    tool_calls: tuple[str, ...] = ()
    failed_tools: tuple[str, ...] = ()
    retry_count: int = 0
    turn_count: int = 0
    quality_score: float | None = None

    @classmethod
    def from_outcome(
        cls, outcome: TaskOutcome, *, error_category: str | None
    ) -> FailureAnalysisPayload:
        """The payload for ``outcome`` with its error sanitised and its text bounded."""
        from memvault.learning.sanitize import sanitize_error

        return cls(
            task_id=outcome.task_id,
            task_type=outcome.task_type,
            task_description=_short(outcome.description, 1000) or "",
            success=outcome.success,
            error_message=None if outcome.error is None else sanitize_error(outcome.error),
            error_category=error_category,
            tool_calls=tuple(c.name for c in outcome.tool_calls[:50]),
            failed_tools=tuple(dict.fromkeys(c.name for c in outcome.tool_calls if not c.ok)),
            retry_count=outcome.retry_count,
            turn_count=outcome.turn_count,
            quality_score=outcome.quality_score,
        )


# -- lessons and the skill pool ---------------------------------------------------------------


class ProceduralMemoryScope(StrEnum):
    """Who a procedural lesson is for: one agent, a role, a department, or the organisation."""

    AGENT = "agent"
    ROLE = "role"
    DEPARTMENT = "department"
    ORG = "org"


class ProceduralMemoryProposal(BaseModel):
    """A lesson in three tiers of progressive disclosure, plus its skill-pool lifecycle.

    * discovery: a short summary (about 100 tokens) that retrieval ranks on;
    * activation: ``condition`` (when), ``action`` (what) and ``rationale`` (why);
    * execution: ``execution_steps``, the ordered steps to apply it.

    ``supersedes`` names entries this one replaces once approved; ``superseded_by`` is the
    tombstone of a replaced one (filtered from retrieval). ``application_count`` and
    ``last_applied_at`` count the times an agent used it after it was injected.
    """

    model_config = _FROZEN

    name: str = Field(default="", max_length=64)
    discovery: str = Field(min_length=1, max_length=800)
    condition: str = Field(min_length=1, max_length=1000)
    action: str = Field(min_length=1, max_length=1000)
    rationale: str = Field(default="", max_length=1000)
    execution_steps: tuple[str, ...] = Field(default=(), max_length=20)
    confidence: float = Field(ge=0.0, le=1.0)
    source: Literal["failure", "success", "evolver", "manual"] = "failure"
    error_category: str | None = None
    scope: ProceduralMemoryScope = ProceduralMemoryScope.AGENT
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None
    application_count: int = Field(default=0, ge=0)
    last_applied_at: AwareDatetime | None = None

    def render(self) -> str:
        """The lesson as the text stored and injected: discovery, activation, steps."""
        lines = [
            self.discovery.strip(),
            f"When: {self.condition.strip()}",
            f"Do: {self.action.strip()}",
        ]
        if self.rationale.strip():
            lines.append(f"Why: {self.rationale.strip()}")
        if self.execution_steps:
            lines.append(
                "Steps: "
                + " ".join(f"{i}. {s.strip()}" for i, s in enumerate(self.execution_steps, 1))
            )
        return "\n".join(lines)

    def slug(self) -> str:
        """A file-system-safe name (lowercase letters, digits, hyphens; at most 64 chars)."""
        base = self.name or self.discovery
        slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")[:64].strip("-")
        return slug or "skill"


class LearnReport(BaseModel):
    """What ``learn_from`` did with one outcome; ``error`` is set when something failed."""

    model_config = _FROZEN

    agent_id: str
    captured: bool = False
    strategy: str = "none"
    reason: str = ""
    lesson_id: str | None = None
    proposal: ProceduralMemoryProposal | None = None
    propagated_to: tuple[str, ...] = ()
    skill_file: str | None = None
    applications_recorded: int = 0
    applied_skills: tuple[str, ...] = ()
    """The skills counted as applied: the ones the outcome named, else the ones injected into
    the agent's context since its previous outcome."""
    trajectory_id: str | None = None
    error: str | None = None


class Trajectory(BaseModel):
    """One recorded task outcome (no conversation), as the evolver aggregates them."""

    model_config = _FROZEN

    id: str
    agent_id: str
    at: AwareDatetime
    task_type: str
    success: bool
    error_category: str | None = None
    tool_sequence: tuple[str, ...] = ()
    quality_score: float | None = None
    lesson: ProceduralMemoryProposal | None = None


class PruneReport(BaseModel):
    """Procedural lessons pruned (archived) for one agent, by rule."""

    model_config = _FROZEN

    agent_id: str
    strategy: str
    expired: tuple[str, ...] = ()
    dominated: tuple[str, ...] = ()

    @property
    def pruned(self) -> int:
        """How many lessons went to the archive."""
        return len(self.expired) + len(self.dominated)


# -- agent profiles ---------------------------------------------------------------------------


class Seniority(StrEnum):
    """An agent's seniority, which decides what it may write to org memory."""

    JUNIOR = "junior"
    MID = "mid"
    SENIOR = "senior"
    LEAD = "lead"
    C_SUITE = "c_suite"


class AgentProfile(BaseModel):
    """An agent's place in the organisation: role, department and seniority (per tenant)."""

    model_config = _FROZEN

    agent_id: str
    role: str | None = Field(default=None, max_length=100)
    department: str | None = Field(default=None, max_length=100)
    seniority: Seniority = Seniority.MID
    updated_at: AwareDatetime | None = None

    @field_validator("role", "department", mode="after")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not _NAME_RE.match(value):
            msg = "must be 1-100 printable characters"
            raise ValueError(msg)
        return value


# -- the approval queue -----------------------------------------------------------------------


class ApprovalStatus(StrEnum):
    """Where an approval item stands: waiting for a human, approved, or rejected."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


class ApprovalKind(StrEnum):
    """What an approval item asks for.

    ``skill_proposal``: add the proposed skill (superseding the old one on a FULL verdict).
    ``conflict``: the evolver's proposal contradicts an existing org skill for the same
    situation (seed: "skipped, escalated to human"); approving it replaces the existing skill
    with the proposal, rejecting it keeps the existing skill.
    """

    SKILL_PROPOSAL = "skill_proposal"
    CONFLICT = "conflict"


class SupersessionVerdict(StrEnum):
    """How a proposal relates to an existing org entry (checked CONFLICT first)."""

    FULL = "full"
    PARTIAL = "partial"
    CONFLICT = "conflict"


class ApprovalItem(BaseModel):
    """A proposal waiting for (or past) a human decision; kept after the decision."""

    model_config = _FROZEN

    id: str
    kind: ApprovalKind = ApprovalKind.SKILL_PROPOSAL
    status: ApprovalStatus = ApprovalStatus.PENDING
    created_at: AwareDatetime
    proposal: ProceduralMemoryProposal
    pattern_key: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    verdict: SupersessionVerdict = SupersessionVerdict.PARTIAL
    decided_at: AwareDatetime | None = None
    decided_by: str | None = None
    reason: str | None = None
    applied_id: str | None = None


class EvolverReport(BaseModel):
    """One cycle of the skill evolver: what it saw, emitted, skipped and why."""

    model_config = _FROZEN

    started_at: AwareDatetime
    finished_at: AwareDatetime | None = None
    enabled: bool = True
    trajectories: int = 0
    patterns: int = 0
    qualifying: int = 0
    emitted: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    """The patterns whose proposal contradicted an existing org skill (not emitted)."""
    escalated: tuple[str, ...] = ()
    """The ``conflict`` approval items those contradictions were escalated to humans as."""
    skipped_low_confidence: int = 0
    skipped_known: int = 0
    pruned: int = 0
    error: str | None = None


# -- org memory -------------------------------------------------------------------------------


class OrgFactKind(StrEnum):
    """The kinds of organisational knowledge."""

    POLICY = "policy"
    ADR = "adr"
    PROCEDURE = "procedure"
    CONVENTION = "convention"


class OrgFactAuthor(BaseModel):
    """Who writes an org fact: a human, or an agent of some seniority."""

    model_config = _FROZEN

    kind: Literal["human", "agent"]
    name: str = Field(min_length=1, max_length=200)
    seniority: Seniority | None = None

    @property
    def label(self) -> str:
        """How audit records name the author (``human:alice``, ``agent:dev-1``)."""
        return f"{self.kind}:{self.name}"


class OrgFactWriteRequest(BaseModel):
    """A new org fact; ``supersedes`` names the one it replaces (append-only: never edited)."""

    model_config = _FROZEN

    kind: OrgFactKind
    content: str = Field(min_length=1, max_length=8000)
    tags: tuple[str, ...] = ()
    supersedes: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class OrgMemoryQuery(BaseModel):
    """A search of the extended org store; ``limit`` defaults to ``max_retrieved_per_query``."""

    model_config = _FROZEN

    text: str = Field(min_length=1, max_length=4000)
    kinds: tuple[OrgFactKind, ...] | None = None
    limit: int | None = Field(default=None, ge=1, le=100)


class OrgFact(BaseModel):
    """One piece of organisational knowledge (core policies included)."""

    model_config = _FROZEN

    id: str
    kind: OrgFactKind
    content: str
    author: str
    created_at: datetime | None = None
    tags: tuple[str, ...] = ()
    superseded_by: str | None = None
    relevance_score: float | None = None
    from_config: bool = False
