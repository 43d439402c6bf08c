"""The autonomous skill evolver: organisation-wide skill proposals from many agents' failures.

One cycle (run on the consolidation schedule, or on demand):

1. :class:`TrajectoryAggregator` collects the trajectories of every agent in the window and
   groups failures by error category and by tool-call sequence;
2. patterns seen by fewer than ``min_agents_seen_pattern`` distinct agents are dropped;
3. each remaining pattern becomes an ORG-scope proposal (built from the lessons the agents
   already learned for it) whose confidence is the pattern's failure rate; proposals under
   ``min_confidence_for_org_promotion`` are dropped;
4. :func:`check_supersession` compares it with the existing org skills: CONFLICT (same
   situation, contradicting action; checked first) is not proposed but escalated to a human as
   an approval item of kind ``conflict`` (approving it replaces the contradicted skill,
   rejecting it keeps that skill), FULL (a superset of the condition, a compatible action,
   more confidence) supersedes once approved, PARTIAL coexists;
5. at most ``max_proposals_per_cycle`` items (proposals and escalations together, the load
   a cycle puts on the humans) go into the approval queue.

Every proposal is ORG-scoped, as the seed's evolver builds them ("org-scope proposals"): a
pattern must be seen by ``min_agents_seen_pattern`` distinct agents whatever their roles or
departments. Role and department pools are filled by propagation and by approving items that
name such a pool, never by the evolver on its own.

Proposal-only by construction: the evolver is given a read-only view of the org skills and the
approval queue, nothing that writes org memory (``EvolverConfig.requires_human_approval`` is
``Literal[True]``). Every step logs the design's events as structured records.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from memvault._ids import new_id, utc_now
from memvault.config import EvolverConfig
from memvault.learning.models import (
    ApprovalItem,
    ApprovalKind,
    ApprovalStatus,
    EvolverReport,
    ProceduralMemoryProposal,
    ProceduralMemoryScope,
    SupersessionVerdict,
    Trajectory,
)
from memvault.learning.store import ApprovalQueue, TrajectoryLog

__all__ = [
    "AutonomousSkillEvolver",
    "ExistingSkill",
    "Pattern",
    "TrajectoryAggregator",
    "check_supersession",
]

logger = logging.getLogger(__name__)

SKILL_EVOLVER_CYCLE_START = "SKILL_EVOLVER_CYCLE_START"
SKILL_EVOLVER_CYCLE_COMPLETE = "SKILL_EVOLVER_CYCLE_COMPLETE"
SKILL_EVOLVER_CYCLE_FAILED = "SKILL_EVOLVER_CYCLE_FAILED"
SKILL_EVOLVER_PROPOSAL_EMITTED = "SKILL_EVOLVER_PROPOSAL_EMITTED"
SKILL_EVOLVER_CONFLICT_DETECTED = "SKILL_EVOLVER_CONFLICT_DETECTED"
ORG_SKILL_SUPERSEDED = "ORG_SKILL_SUPERSEDED"
SKILL_EVOLVER_DISABLED = "SKILL_EVOLVER_DISABLED"

_CONFLICT_CONDITION = 0.6
_CONFLICT_ACTION = 0.2
_FULL_CONTAINMENT = 0.8
_FULL_ACTION = 0.5
_SAME_CATEGORY_OVERLAP = 0.8
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and the to of in on for with when is are be it this that or do if".split())


def _event(name: str, **fields: object) -> None:
    logger.info(name, extra={"event": name, **fields})


def _tokens(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _containment(inner: set[str], outer: set[str]) -> float:
    return len(inner & outer) / len(inner) if inner else 1.0


@dataclass(frozen=True, slots=True)
class ExistingSkill:
    """An org skill already in the pool: its memory id and its lesson."""

    id: str
    proposal: ProceduralMemoryProposal


def check_supersession(
    new: ProceduralMemoryProposal, existing: ProceduralMemoryProposal
) -> SupersessionVerdict:
    """How ``new`` relates to ``existing``: CONFLICT first, then FULL, else PARTIAL."""
    new_cond, old_cond = _tokens(new.condition), _tokens(existing.condition)
    overlap = _jaccard(new_cond, old_cond)
    if new.error_category is not None and new.error_category == existing.error_category:
        overlap = max(overlap, _SAME_CATEGORY_OVERLAP)
    action = _jaccard(_tokens(new.action), _tokens(existing.action))
    # Checked first: a contradicting action must never pass as a supersession.
    if overlap >= _CONFLICT_CONDITION and action < _CONFLICT_ACTION:
        return SupersessionVerdict.CONFLICT
    superset = _containment(old_cond, new_cond) >= _FULL_CONTAINMENT or (
        new.error_category is not None and new.error_category == existing.error_category
    )
    if superset and action >= _FULL_ACTION and new.confidence > existing.confidence:
        return SupersessionVerdict.FULL
    return SupersessionVerdict.PARTIAL


@dataclass(slots=True)
class Pattern:
    """A recurring failure: its key, the agents that hit it, counts and their lessons."""

    key: str
    kind: str
    agents: set[str] = field(default_factory=set)
    failures: int = 0
    total: int = 0
    error_category: str | None = None
    lessons: list[ProceduralMemoryProposal] = field(default_factory=list)
    trajectory_ids: set[str] = field(default_factory=set)

    def overlaps(self, ids: set[str]) -> bool:
        """True if at least half of this pattern's failures are among ``ids``."""
        return len(self.trajectory_ids & ids) * 2 >= len(self.trajectory_ids)

    @property
    def failure_rate(self) -> float:
        """Failures over every trajectory of the same task types in the window."""
        return self.failures / self.total if self.total else 0.0


class TrajectoryAggregator:
    """Collects a window of trajectories and groups failures into patterns."""

    def __init__(self, log: TrajectoryLog) -> None:
        self._log = log

    async def collect(self, since: datetime) -> list[Trajectory]:
        """Every agent's trajectories since ``since``."""
        return await self._log.since(since)

    @staticmethod
    def group(trajectories: Sequence[Trajectory]) -> list[Pattern]:
        """Patterns by error category and by tool-call sequence (of two calls or more)."""
        by_type: Counter[str] = Counter(t.task_type for t in trajectories)
        groups: dict[str, Pattern] = {}
        types: defaultdict[str, set[str]] = defaultdict(set)
        for t in trajectories:
            if t.success:
                continue
            keys: list[tuple[str, str]] = []
            if t.error_category:
                keys.append((f"error:{t.error_category}", "error"))
            if len(t.tool_sequence) >= 2:
                keys.append(("tools:" + ">".join(t.tool_sequence), "tools"))
            for key, kind in keys:
                pattern = groups.setdefault(key, Pattern(key=key, kind=kind))
                pattern.agents.add(t.agent_id)
                pattern.failures += 1
                pattern.trajectory_ids.add(t.id)
                types[key].add(t.task_type)
                if t.error_category and pattern.error_category is None:
                    pattern.error_category = t.error_category
                if t.lesson is not None:
                    pattern.lessons.append(t.lesson)
        for key, pattern in groups.items():
            if pattern.kind == "tools":
                sequence = tuple(key.removeprefix("tools:").split(">"))
                pattern.total = sum(1 for t in trajectories if t.tool_sequence == sequence)
            else:
                pattern.total = sum(by_type[task_type] for task_type in types[key])
        return sorted(groups.values(), key=lambda p: (-len(p.agents), -p.failures, p.key))


def _representative(pattern: Pattern) -> ProceduralMemoryProposal | None:
    """The lesson most agents converged on (by action), the most confident among equals."""
    if not pattern.lessons:
        return None
    votes: Counter[frozenset[str]] = Counter(frozenset(_tokens(p.action)) for p in pattern.lessons)
    return max(
        pattern.lessons,
        key=lambda p: (votes[frozenset(_tokens(p.action))], p.confidence),
    )


SkillReader = Callable[[], Awaitable[Sequence[ExistingSkill]]]


class AutonomousSkillEvolver:
    """Proposes org-scope skills from recurring cross-agent failures; never writes org memory.

    Args:
        config: the evolver's safety rails.
        trajectories: where ``learn_from`` recorded every outcome.
        queue: the approval queue proposals are emitted into.
        org_skills: reads the org skills that exist now (for the supersession check).
    """

    def __init__(
        self,
        config: EvolverConfig,
        *,
        trajectories: TrajectoryLog,
        queue: ApprovalQueue,
        org_skills: SkillReader,
    ) -> None:
        self._config = config
        self._aggregator = TrajectoryAggregator(trajectories)
        self._queue = queue
        self._org_skills = org_skills

    async def run_cycle(self, *, now: datetime | None = None, force: bool = False) -> EvolverReport:
        """One cycle; never raises (a failure is logged and reported in ``error``).

        ``force`` runs even when ``enabled`` is false (an explicit request by an operator).
        """
        started = now or utc_now()
        cfg = self._config
        if not cfg.enabled and not force:
            _event(SKILL_EVOLVER_DISABLED)
            return EvolverReport(started_at=started, finished_at=started, enabled=False)
        _event(SKILL_EVOLVER_CYCLE_START, window_days=cfg.window_days)
        try:
            report = await self._cycle(started)
        except Exception as exc:  # the cycle is background work: report, never propagate
            logger.warning(
                SKILL_EVOLVER_CYCLE_FAILED,
                exc_info=True,
                extra={"event": SKILL_EVOLVER_CYCLE_FAILED, "error": str(exc)},
            )
            return EvolverReport(started_at=started, finished_at=utc_now(), error=str(exc))
        _event(
            SKILL_EVOLVER_CYCLE_COMPLETE,
            emitted=len(report.emitted),
            conflicts=len(report.conflicts),
            escalated=len(report.escalated),
            patterns=report.patterns,
        )
        return report

    async def _cycle(self, started: datetime) -> EvolverReport:
        cfg = self._config
        window = await self._aggregator.collect(started - timedelta(days=cfg.window_days))
        patterns = self._aggregator.group(window)
        qualifying = [p for p in patterns if len(p.agents) >= cfg.min_agents_seen_pattern]
        known: set[str] = set()
        for item in await self._queue.list():
            known.add(item.pattern_key)
            related = item.evidence.get("related_patterns", [])
            known.update(k for k in related if isinstance(k, str))
        covered: set[str] = set()  # failures a proposal of this cycle already explains
        existing = list(await self._org_skills())
        emitted: list[str] = []
        conflicts: list[str] = []
        escalated: list[str] = []
        low = skipped_known = 0
        for pattern in qualifying:
            if len(emitted) + len(escalated) >= cfg.max_proposals_per_cycle:
                break
            if pattern.key in known or pattern.overlaps(covered):
                # One failure is grouped twice (by error and by tool sequence): one proposal.
                skipped_known += 1
                continue
            confidence = round(pattern.failure_rate, 4)
            if confidence < cfg.min_confidence_for_org_promotion:
                low += 1
                continue
            base = _representative(pattern)
            if base is None:
                low += 1  # nothing learned about it yet: no content to propose
                continue
            proposal = base.model_copy(
                update={
                    "scope": ProceduralMemoryScope.ORG,
                    "source": "evolver",
                    "confidence": confidence,
                    "error_category": pattern.error_category or base.error_category,
                    "supersedes": (),
                    "application_count": 0,
                    "last_applied_at": None,
                }
            )
            verdict, supersedes, duplicate = SupersessionVerdict.PARTIAL, [], False
            contradicted: ExistingSkill | None = None
            for skill in existing:
                found = check_supersession(proposal, skill.proposal)
                if found is SupersessionVerdict.CONFLICT:
                    verdict, contradicted = found, skill
                    break
                if found is SupersessionVerdict.FULL:
                    verdict = found
                    supersedes.append(skill.id)
                elif _jaccard(_tokens(proposal.action), _tokens(skill.proposal.action)) >= 0.9 and (
                    proposal.error_category == skill.proposal.error_category
                ):
                    duplicate = True
            evidence = {
                "agents": sorted(pattern.agents),
                "failures": pattern.failures,
                "trajectories": pattern.total,
                "failure_rate": confidence,
                "kind": pattern.kind,
                "related_patterns": sorted(
                    q.key
                    for q in patterns
                    if q is not pattern and q.overlaps(pattern.trajectory_ids)
                ),
            }
            if contradicted is not None:
                # Seed: CONFLICT is "skipped, escalated to human". Not a proposal, so nothing
                # reaches the pool unless a human decides the new action is the right one.
                conflict = ApprovalItem(
                    id=new_id(),
                    kind=ApprovalKind.CONFLICT,
                    status=ApprovalStatus.PENDING,
                    created_at=utc_now(),
                    proposal=proposal.model_copy(update={"supersedes": (contradicted.id,)}),
                    pattern_key=pattern.key,
                    verdict=SupersessionVerdict.CONFLICT,
                    evidence={
                        **evidence,
                        "conflicts_with": contradicted.id,
                        "existing_condition": contradicted.proposal.condition,
                        "existing_action": contradicted.proposal.action,
                    },
                )
                await self._queue.add(conflict)
                known.add(pattern.key)
                covered |= pattern.trajectory_ids
                conflicts.append(pattern.key)
                escalated.append(conflict.id)
                _event(
                    SKILL_EVOLVER_CONFLICT_DETECTED,
                    pattern=pattern.key,
                    approval_id=conflict.id,
                    conflicts_with=contradicted.id,
                )
                continue
            if duplicate and verdict is not SupersessionVerdict.FULL:
                skipped_known += 1
                continue
            item = ApprovalItem(
                id=new_id(),
                status=ApprovalStatus.PENDING,
                created_at=utc_now(),
                proposal=proposal.model_copy(update={"supersedes": tuple(supersedes)}),
                pattern_key=pattern.key,
                verdict=verdict,
                evidence=evidence,
            )
            await self._queue.add(item)
            known.add(pattern.key)
            covered |= pattern.trajectory_ids
            emitted.append(item.id)
            _event(
                SKILL_EVOLVER_PROPOSAL_EMITTED,
                approval_id=item.id,
                pattern=pattern.key,
                verdict=verdict.value,
                confidence=confidence,
            )
        return EvolverReport(
            started_at=started,
            finished_at=utc_now(),
            trajectories=len(window),
            patterns=len(patterns),
            qualifying=len(qualifying),
            emitted=tuple(emitted),
            conflicts=tuple(conflicts),
            escalated=tuple(escalated),
            skipped_low_confidence=low,
            skipped_known=skipped_known,
        )
