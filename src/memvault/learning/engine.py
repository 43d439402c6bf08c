"""``LearningEngine``: the learning layer over one tenant's memory.

It ties the parts together for :class:`memvault.AsyncMemory` (and so for REST, MCP and the CLI
through the service):

* :meth:`learn_from` is the one call a framework makes after each task: it counts the skills
  the agent applied, records the trajectory, lets the capture strategy propose a lesson through
  a separate LLM call, stores it (PROCEDURAL, ``non-inferable``), optionally writes its
  SKILL.md, propagates it to peers and prunes. It never raises into the agent's loop;
* :meth:`pool_entries` and :meth:`policies` feed context injection: the skills of the org pool
  and of the agent's role and department pools, and the core policies;
* :meth:`evolve` runs the skill evolver; :meth:`approve` / :meth:`reject` decide its
  proposals (the service lets only human and admin actors do that);
* :meth:`prune` archives lessons by the configured pruning strategy.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from memvault._actor import acting_as
from memvault._ids import new_id, utc_now
from memvault.config import MemvaultConfig
from memvault.errors import (
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.injection.memory_api import MemoryAPI
from memvault.learning.capture import capture_strategy
from memvault.learning.evolver import AutonomousSkillEvolver, ExistingSkill
from memvault.learning.models import (
    LESSON_TAG,
    NON_INFERABLE,
    ORG_POOL,
    SKILL_TAG,
    AgentProfile,
    ApprovalItem,
    ApprovalStatus,
    EvolverReport,
    FailureAnalysisPayload,
    LearnReport,
    OrgFactAuthor,
    OrgFactKind,
    OrgFactWriteRequest,
    ProceduralMemoryProposal,
    ProceduralMemoryScope,
    PruneReport,
    Seniority,
    SupersessionVerdict,
    TaskOutcome,
    Trajectory,
    department_pool,
    is_pool_id,
    role_pool,
)
from memvault.learning.org import ORG_TAG, HybridPromptRetrievalOrgMemory, kind_tag
from memvault.learning.propagation import propagation_strategy, propagation_tag
from memvault.learning.pruning import pruning_strategy
from memvault.learning.sanitize import error_category
from memvault.learning.skill_md import write_skill_md
from memvault.learning.store import (
    ApprovalQueue,
    InMemoryLearningStore,
    LearningRow,
    LearningStore,
    ProfileRepository,
    SkillUsage,
    TrajectoryLog,
)
from memvault.llm._protocol import with_model
from memvault.models import MemoryCategory, MemoryEntry, MemoryScope
from memvault.protocols import LLMProvider
from memvault.validation import check_agent, model_error

__all__ = ["AuditFn", "LearningEngine", "PooledSkill", "open_learning"]

logger = logging.getLogger(__name__)

AuditFn = Callable[[str, str, str | None, dict[str, Any]], Awaitable[None]]
"""``audit(action, agent_id, memory_id, details)``: appends one record to the store's audit log."""

_PROCEDURAL_KEY = "procedural"
_POOL_CACHE_SECONDS = 2.0
_RECENT_SCORES = 50
_PRUNE_PAGE = 500
# Skills injected into contexts and not yet followed by an outcome: at most this many agents
# (least recently injected dropped first; in process), this many skills per agent, and for this
# long (a context older than this belongs to some earlier, unreported task). A durable learning
# store also keeps them (kind "injection"), so an outcome reported to another process or server
# counts them, exactly once.
_INJECTED_AGENTS = 10_000
_INJECTED_PER_AGENT = 64
_INJECTED_TTL_SECONDS = 3600.0
_INJECTION = "injection"
_PENDING, _APPLIED = "pending", "applied"


def _proposal_of(entry: MemoryEntry) -> ProceduralMemoryProposal | None:
    raw = entry.metadata.extra.get(_PROCEDURAL_KEY)
    if not isinstance(raw, Mapping):
        return None
    try:
        return ProceduralMemoryProposal.model_validate(raw)
    except ValidationError:
        return None


class PooledSkill:
    """A skill of a pool (org, role or department) with its lifecycle filled in."""

    __slots__ = ("content", "id", "pool", "proposal")

    def __init__(
        self, id: str, pool: str, content: str, proposal: ProceduralMemoryProposal
    ) -> None:
        self.id = id
        self.pool = pool
        self.content = content
        self.proposal = proposal

    def to_json(self) -> dict[str, Any]:
        """The skill as JSON (id, pool, content and the proposal's fields)."""
        return {
            "id": self.id,
            "pool": self.pool,
            "content": self.content,
            **self.proposal.model_dump(mode="json"),
        }


class LearningEngine:
    """Lessons, skill pool, approvals and org memory over one tenant's memory and records.

    Args:
        memory: the tenant's memory (an :class:`~memvault.AsyncMemory`).
        store: the tenant's learning records (approvals, profiles, trajectories, usage).
        config: the configuration (``procedural`` and ``org_memory`` sections).
        llm: the proposer's LLM; without one no lesson is proposed (outcomes are still
            recorded for the evolver).
        audit: appends audit records for approval decisions.
    """

    def __init__(
        self,
        memory: MemoryAPI,
        store: LearningStore,
        config: MemvaultConfig,
        *,
        llm: LLMProvider | None = None,
        audit: AuditFn | None = None,
    ) -> None:
        self._memory = memory
        self._store = store
        self._config = config
        self._llm = llm
        self._audit = audit
        self.queue = ApprovalQueue(store)
        self.profiles = ProfileRepository(store)
        self.trajectories = TrajectoryLog(store)
        self.usage = SkillUsage(store)
        self._pool_seen: dict[str, tuple[float, bool]] = {}
        self._injected: OrderedDict[str, dict[str, float]] = OrderedDict()
        # Injections written behind (note_injected is called from a synchronous hook).
        self._injection_writes: set[asyncio.Task[None]] = set()
        self._shared_injections = not isinstance(store, InMemoryLearningStore)
        # Every org write (REST org_write, publish(scope="org"), approvals) forgets the cached
        # "is the org pool empty?" answer, so the next context sees the new fact at once.
        self.org = HybridPromptRetrievalOrgMemory(
            memory, config.org_memory, on_write=lambda: self._pools_changed(ORG_POOL)
        )

    @property
    def store(self) -> LearningStore:
        """The learning records of this tenant."""
        return self._store

    @property
    def llm(self) -> LLMProvider | None:
        """The proposer's LLM, if any."""
        return self._llm

    async def close(self) -> None:
        """Close the learning records' store (after the injections written behind)."""
        await self.flush_injections()
        await self._store.close()

    # -- learn_from -----------------------------------------------------------------------------

    async def learn_from(
        self, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str
    ) -> LearnReport:
        """Learn from one finished task of ``agent_id``; never raises.

        Every problem (bad input, an LLM failure, a storage error) is logged at WARNING and
        returned in the report's ``error``, so an agent loop can call this unguarded.
        """
        try:
            agent = check_agent(agent_id)
            if is_pool_id(agent):
                msg = f"{agent!r} is a reserved skill-pool id, not an agent"
                raise MemoryValidationError(msg)
            task = (
                outcome
                if isinstance(outcome, TaskOutcome)
                else TaskOutcome.model_validate(dict(outcome))
            )
        except (ValidationError, MemoryValidationError, TypeError) as exc:
            logger.warning(
                "memory.learn.invalid", extra={"event": "memory.learn.invalid", "error": str(exc)}
            )
            return LearnReport(agent_id=str(agent_id), reason="invalid outcome", error=str(exc))
        report: dict[str, Any] = {"agent_id": agent}
        try:
            await self._learn(agent, task, report)
        except Exception as exc:  # learning is non-critical: log and report, never propagate
            logger.warning(
                "memory.learn.failed",
                exc_info=True,
                extra={"event": "memory.learn.failed", "agent_id": agent, "error": str(exc)},
            )
            report["error"] = f"{type(exc).__name__}: {exc}"
        return LearnReport.model_validate(report)

    async def _learn(self, agent: str, task: TaskOutcome, report: dict[str, Any]) -> None:
        now = utc_now()
        # The task is over: what its context injected is either named by the outcome or,
        # when the framework names nothing, taken as applied (the seed's "counted when a
        # skill is injected and used"). Either way the pending injections are consumed.
        injected = await self._take_injected(agent)
        applied = tuple(dict.fromkeys(task.applied_skills)) or injected
        if applied:
            report["applications_recorded"] = await self.usage.record(applied, now)
            report["applied_skills"] = applied
        category = None if task.success else error_category(task.error, task.error_category)
        payload = FailureAnalysisPayload.from_outcome(task, error_category=category)
        proposal = await self._propose(agent, task, payload, report)
        trajectory = Trajectory(
            id=new_id(),
            agent_id=agent,
            at=now,
            task_type=task.task_type,
            success=task.success,
            error_category=category,
            tool_sequence=tuple(c.name for c in task.tool_calls[:20]),
            quality_score=task.quality_score,
            lesson=proposal,
        )
        await self.trajectories.record(trajectory)
        report["trajectory_id"] = trajectory.id

    async def _propose(
        self, agent: str, task: TaskOutcome, payload: FailureAnalysisPayload, report: dict[str, Any]
    ) -> ProceduralMemoryProposal | None:
        cfg = self._config.procedural
        if not cfg.enabled:
            report["reason"] = "procedural memory is disabled (procedural.enabled: false)"
            return None
        if self._llm is None:
            report["reason"] = "no LLM configured for the proposer"
            return None
        # procedural.model, when written, is the model the proposer asks.
        llm = with_model(
            self._llm,
            cfg.model if "model" in cfg.model_fields_set else None,
            key="procedural.model",
        )
        strategy = capture_strategy(llm, cfg)
        report["strategy"] = strategy.name
        recent: list[float] = []
        if task.success and task.quality_score is not None:
            past = await self.trajectories.since(None, agent_id=agent, limit=_RECENT_SCORES)
            recent = [t.quality_score for t in past if t.success and t.quality_score is not None]
        result = await strategy.capture(task, payload, recent_scores=recent)
        if result.proposal is None:
            report["reason"] = result.reason
            return None
        proposal = result.proposal
        if proposal.confidence < cfg.min_confidence:
            report["reason"] = (
                f"proposal confidence {proposal.confidence:.2f} below "
                f"min_confidence {cfg.min_confidence}"
            )
            logger.info(
                "memory.learn.discarded",
                extra={"event": "memory.learn.discarded", "agent_id": agent},
            )
            return None
        lesson_id = await self._store_lesson(
            agent, proposal, result.tag, payload, model=llm.model_id
        )
        report.update(captured=True, reason=result.reason, lesson_id=lesson_id, proposal=proposal)
        if cfg.skill_md_directory:
            report["skill_file"] = str(write_skill_md(cfg.skill_md_directory, proposal, lesson_id))
        report["propagated_to"] = await self._propagate(agent, proposal, result.tag, payload)
        await self._prune_if_full(agent)
        logger.info(
            "memory.learn.captured",
            extra={"event": "memory.learn.captured", "agent_id": agent, "memory_id": lesson_id},
        )
        return proposal

    def _lesson_tags(self, tag: str, category: str | None, *extra: str) -> tuple[str, ...]:
        tags = [NON_INFERABLE, LESSON_TAG, tag, *extra]
        if category:
            tags.append(f"error:{category[:90]}")
        return tuple(dict.fromkeys(tags))

    async def _store_lesson(
        self,
        agent: str,
        proposal: ProceduralMemoryProposal,
        tag: str,
        payload: FailureAnalysisPayload,
        *extra_tags: str,
        model: str | None = None,
    ) -> str:
        return await self._memory.add(
            proposal.render(),
            agent_id=agent,
            category=MemoryCategory.PROCEDURAL,
            tags=self._lesson_tags(tag, proposal.error_category, *extra_tags),
            metadata={
                _PROCEDURAL_KEY: proposal.model_dump(
                    mode="json", exclude={"application_count", "last_applied_at", "superseded_by"}
                ),
                "task_type": payload.task_type,
                "proposer_model": model or self._config.procedural.model,
            },
            label="lesson",
            source=f"learning:{proposal.source}",
            importance=proposal.confidence,
        )

    async def _propagate(
        self,
        agent: str,
        proposal: ProceduralMemoryProposal,
        tag: str,
        payload: FailureAnalysisPayload,
    ) -> tuple[str, ...]:
        strategy = propagation_strategy(self._config.procedural.propagation)
        if strategy.name == "none":
            return ()
        source = await self.profiles.get(agent)
        targets = strategy.targets(source, await self.profiles.list())
        for target in targets:
            await self._store_lesson(target, proposal, tag, payload, propagation_tag(agent))
        return targets

    # -- pruning --------------------------------------------------------------------------------

    async def _lessons(self, agent: str) -> builtins.list[MemoryEntry]:
        found: list[MemoryEntry] = []
        while True:
            page = await self._memory.list(
                agent_id=agent,
                category=MemoryCategory.PROCEDURAL,
                tags=[LESSON_TAG],
                limit=_PRUNE_PAGE,
                offset=len(found),
            )
            found.extend(page)
            if len(page) < _PRUNE_PAGE:
                return found

    async def _prune_if_full(self, agent: str) -> None:
        cfg = self._config.procedural.pruning
        if (
            cfg.strategy.value != "none"
            and await self._memory.count(agent_id=agent, category=MemoryCategory.PROCEDURAL)
            > cfg.max_entries
        ):
            await self.prune(agent)

    async def prune(self, agent_id: str, *, now: datetime | None = None) -> PruneReport:
        """Archive the agent's lessons the pruning strategy drops (restorable from the archive)."""
        agent = check_agent(agent_id)
        strategy = pruning_strategy(self._config.procedural.pruning)
        decision = strategy.select(await self._lessons(agent), now=now or utc_now())
        if decision.expired:
            await self._memory.archive(list(decision.expired), agent_id=agent, reason="pruned:ttl")
        if decision.dominated:
            await self._memory.archive(
                list(decision.dominated), agent_id=agent, reason="pruned:pareto"
            )
        return PruneReport(
            agent_id=agent,
            strategy=strategy.name,
            expired=decision.expired,
            dominated=decision.dominated,
        )

    # -- context: pools and policies ------------------------------------------------------------

    async def _pool_has_entries(self, pool: str) -> bool:
        # Only "the pool has entries" is cached (briefly): wrong, it costs a search that finds
        # nothing. "Empty" is asked again every time (one indexed count), because an entry
        # written through another process or server must reach the very next context there
        # too; this process's own writes forget the cache at once (_pools_changed).
        seen = self._pool_seen.get(pool)
        now = time.monotonic()
        if seen is not None and now - seen[0] < _POOL_CACHE_SECONDS:
            return True
        has = await self._memory.count(agent_id=pool) > 0
        if has:
            self._pool_seen[pool] = (now, True)
        return has

    def _pools_changed(self, pool: str) -> None:
        self._pool_seen.pop(pool, None)

    async def pools_of(self, agent_id: str) -> builtins.list[str]:
        """The skill pools an agent draws from: org, its role's and its department's."""
        pools = [ORG_POOL]
        profile = await self.profiles.get(agent_id)
        if profile is not None:
            if profile.role:
                pools.append(role_pool(profile.role))
            if profile.department:
                pools.append(department_pool(profile.department))
        return pools

    async def pool_entries(self, agent_id: str, query: str) -> builtins.list[MemoryEntry]:
        """Org knowledge and pooled skills relevant to ``query`` for ``agent_id``, best first.

        At most ``org_memory.extended_store.max_retrieved_per_query`` entries; core policies
        are left out (they are injected separately, always).
        """
        limit = self._config.org_memory.extended_store.max_retrieved_per_query
        if limit < 1 or is_pool_id(agent_id):
            return []
        found: list[MemoryEntry] = []
        policy = kind_tag(OrgFactKind.POLICY)
        for pool in await self.pools_of(agent_id):
            if not await self._pool_has_entries(pool):
                continue
            hits = await self._memory.search(query, agent_id=pool, limit=limit * 2)
            # Stored as rows of the reserved pseudo-agent, shown as what they are: org
            # knowledge (role and department pools are not organisation-wide, so they keep
            # their pseudo-agent id as the only mark).
            found.extend(
                h.model_copy(update={"scope": MemoryScope.ORG}) if pool == ORG_POOL else h
                for h in hits
                if policy not in h.metadata.tags
            )
        found.sort(key=lambda e: e.relevance_score or 0.0, reverse=True)
        return found[:limit]

    async def policies(self) -> builtins.list[str]:
        """The core policies' texts (configured first), for every injection strategy."""
        if not self._config.org_memory.core_policies and not await self._pool_has_entries(ORG_POOL):
            return []
        return [p.content for p in await self.org.list_policies()]

    # -- skill applications from injection ------------------------------------------------------

    def note_injected(self, agent_id: str, entries: Sequence[MemoryEntry]) -> int:
        """Remember which skills a context just put in front of ``agent_id``; returns how many.

        Skills are pooled skills (org, role, department) and the agent's own lessons, i.e.
        entries tagged ``skill`` or ``procedural-lesson``. The next :meth:`learn_from` of the
        agent that names no ``applied_skills`` counts one application of each (success or
        failure alike: the skill was injected for that task and the task was carried out).

        Bounded (agents, skills per agent, age). With a durable learning store (SQLite,
        PostgreSQL) they are also written to it, behind the call, so an outcome reported to
        another process or server over the same store counts them, once; frameworks that know
        which skills were used can still name them in ``applied_skills``.
        """
        if is_pool_id(agent_id):
            return 0
        ids = [e.id for e in entries if {SKILL_TAG, LESSON_TAG} & set(e.metadata.tags)]
        if not ids:
            return 0
        now = time.monotonic()
        pending = self._injected.pop(agent_id, None) or {}
        for skill_id in ids:
            pending.pop(skill_id, None)  # re-insert: the newest stay when trimming
            pending[skill_id] = now
        while len(pending) > _INJECTED_PER_AGENT:
            del pending[next(iter(pending))]
        self._injected[agent_id] = pending
        while len(self._injected) > _INJECTED_AGENTS:
            self._injected.popitem(last=False)
        if self._shared_injections:
            self._write_injections(agent_id, ids)
        return len(ids)

    def _write_injections(self, agent_id: str, ids: Sequence[str]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): this process's record only
            return
        at = utc_now()
        rows = [
            LearningRow(
                kind=_INJECTION,
                id=f"{agent_id}:{skill_id}",
                agent_id=agent_id,
                status=_PENDING,
                at=at,
                data={"skill_id": skill_id},
            )
            for skill_id in dict.fromkeys(ids)
        ]

        async def write() -> None:
            for row in rows:
                try:
                    await self._store.put(row)
                except Exception as exc:  # counting is best effort, never the context's failure
                    logger.warning("memory.learn.injection_unsaved: %s", exc)
                    return

        task = loop.create_task(write())
        self._injection_writes.add(task)
        task.add_done_callback(self._injection_writes.discard)

    async def flush_injections(self) -> None:
        """Wait for the injections :meth:`note_injected` is writing behind to be stored."""
        if self._injection_writes:
            await asyncio.gather(*list(self._injection_writes), return_exceptions=True)

    async def _take_injected(self, agent_id: str) -> tuple[str, ...]:
        pending = self._injected.pop(agent_id, None) or {}
        if not self._shared_injections:
            oldest = time.monotonic() - _INJECTED_TTL_SECONDS
            return tuple(skill_id for skill_id, at in pending.items() if at >= oldest)
        await self.flush_injections()
        # Whichever process prepared the context: claim each pending injection of the agent
        # (pending -> applied, conditional), so two outcomes never count one injection twice.
        since = utc_now() - timedelta(seconds=_INJECTED_TTL_SECONDS)
        rows = await self._store.find(
            _INJECTION,
            status=_PENDING,
            agent_id=agent_id,
            since=since,
            limit=_INJECTED_PER_AGENT,
            newest_first=True,
        )
        claimed = []
        for row in reversed(rows):  # oldest first, as the in-process record orders them
            done = replace(row, status=_APPLIED)
            if await self._store.transition(done, expected_status=_PENDING):
                claimed.append(str(row.data.get("skill_id", "")))
        return tuple(c for c in claimed if c)

    # -- profiles -------------------------------------------------------------------------------

    async def set_profile(
        self,
        agent_id: str,
        *,
        role: str | None = None,
        department: str | None = None,
        seniority: Seniority | str = Seniority.MID,
    ) -> AgentProfile:
        """Create or replace an agent's profile.

        Raises:
            MemoryValidationError: a bad agent id, role, department or seniority.
        """
        agent = check_agent(agent_id)
        if is_pool_id(agent):
            msg = f"{agent!r} is a reserved skill-pool id, not an agent"
            raise MemoryValidationError(msg)
        try:
            profile = AgentProfile(
                agent_id=agent, role=role, department=department, seniority=Seniority(seniority)
            )
        except (ValidationError, ValueError) as exc:
            msg = f"invalid agent profile: {exc}".splitlines()[0]
            raise MemoryValidationError(msg) from None
        return await self.profiles.set(profile)

    async def get_profile(self, agent_id: str) -> AgentProfile:
        """The agent's profile (a default one when none was set)."""
        agent = check_agent(agent_id)
        return await self.profiles.get(agent) or AgentProfile(agent_id=agent)

    # -- MemoryScope.ORG ------------------------------------------------------------------------

    async def publish_org(
        self,
        content: str,
        *,
        agent_id: str,
        kind: OrgFactKind | str | None = None,
        category: MemoryCategory = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Append an org fact authored by the agent ``agent_id`` (``MemoryScope.ORG``).

        This is where ``publish(..., scope="org")`` lands: the fact goes through org memory's
        write path, so ``org_memory.write_access`` decides by the agent's seniority (from its
        profile; policies are human-only, so an agent never writes one), the write is
        append-only and audited under ``agent:<id>``, and every agent of the tenant then gets it
        in its context (extended org knowledge) and from ``org_search``. ``kind`` defaults to
        ``procedure`` for a PROCEDURAL ``category`` and ``convention`` otherwise.

        Raises:
            MemoryValidationError: a bad agent id (or a skill-pool id), kind or content.
            MemoryPermissionError: the agent's seniority may not write this kind of fact.
        """
        agent = check_agent(agent_id)
        if is_pool_id(agent):
            msg = f"{agent!r} is a reserved skill-pool id, not an agent"
            raise MemoryValidationError(msg)
        if kind is None:
            kind = (
                OrgFactKind.PROCEDURE
                if category is MemoryCategory.PROCEDURAL
                else OrgFactKind.CONVENTION
            )
        try:
            fact_kind = OrgFactKind(kind)
        except ValueError:
            names = ", ".join(k.value for k in OrgFactKind)
            msg = f"unknown org fact kind {kind!r} (choose from {names})"
            raise MemoryValidationError(msg) from None
        try:
            request = OrgFactWriteRequest(
                kind=fact_kind, content=content, tags=tuple(tags), metadata=dict(metadata or {})
            )
        except ValidationError as exc:
            raise model_error(exc) from None
        profile = await self.get_profile(agent)
        author = OrgFactAuthor(kind="agent", name=agent, seniority=profile.seniority)
        return await self.org.write(request, author=author)

    # -- skill pool -----------------------------------------------------------------------------

    async def skill(self, entry: MemoryEntry, pool: str) -> PooledSkill | None:
        """The pooled skill stored as ``entry``, lifecycle included; None if it is not one."""
        proposal = _proposal_of(entry)
        if proposal is None:
            return None
        count, last = await self.usage.get(entry.id)
        filled = proposal.model_copy(
            update={
                "application_count": count,
                "last_applied_at": last,
                "superseded_by": entry.superseded_by,
            }
        )
        return PooledSkill(entry.id, pool, entry.content, filled)

    async def skills(
        self, *, pool: str = ORG_POOL, include_superseded: bool = False
    ) -> builtins.list[PooledSkill]:
        """The skills of one pool (org by default), newest first."""
        entries = await self._memory.list(
            agent_id=pool, tags=[SKILL_TAG], limit=1000, include_superseded=include_superseded
        )
        found = [await self.skill(e, pool) for e in entries]
        return [s for s in found if s is not None]

    async def _existing_org_skills(self) -> builtins.list[ExistingSkill]:
        return [ExistingSkill(s.id, s.proposal) for s in await self.skills()]

    # -- evolver and approvals ------------------------------------------------------------------

    async def evolve(self, *, force: bool = False, now: datetime | None = None) -> EvolverReport:
        """One evolver cycle (``force`` runs it even when ``procedural.evolver.enabled`` is off).

        Never raises; see :class:`~memvault.learning.evolver.AutonomousSkillEvolver`.
        """
        evolver = AutonomousSkillEvolver(
            self._config.procedural.evolver,
            trajectories=self.trajectories,
            queue=self.queue,  # the evolver may only enqueue: it gets no org-memory writer
            org_skills=self._existing_org_skills,
        )
        return await evolver.run_cycle(now=now, force=force)

    async def approve(self, item_id: str, *, actor: str, reason: str | None = None) -> ApprovalItem:
        """Approve a pending proposal and apply it (FULL verdicts supersede the old skill, and so
        does an approved ``conflict`` escalation: the human chose the new action).

        ``actor`` is the human's audit label (``human:alice``); the service makes sure only a
        human or admin actor gets here.

        Raises:
            MemoryNotFoundError: no such item.
            MemoryConflictError: the item was already decided.
        """
        item = await self.queue.get(item_id)
        decided = self._decided(item, ApprovalStatus.APPROVED, actor, reason)
        if item.status is not ApprovalStatus.PENDING or not await self.queue.decide(decided):
            msg = f"approval item {item_id!r} is already {item.status.value}"
            raise MemoryConflictError(msg)
        try:
            applied = await self._apply(decided, actor)
        except BaseException:
            await self.queue.update(item)  # back to pending: the decision did not take effect
            raise
        done = decided.model_copy(update={"applied_id": applied})
        await self.queue.update(done)
        await self._audit_decision("approval.approve", done, actor)
        return done

    async def reject(self, item_id: str, *, actor: str, reason: str) -> ApprovalItem:
        """Reject a pending proposal (kept for the record, with the reason).

        Raises:
            MemoryValidationError: a blank reason.
            MemoryNotFoundError: no such item.
            MemoryConflictError: the item was already decided.
        """
        if not reason or not reason.strip():
            msg = "rejecting a proposal needs a reason"
            raise MemoryValidationError(msg)
        item = await self.queue.get(item_id)
        decided = self._decided(item, ApprovalStatus.REJECTED, actor, reason)
        if item.status is not ApprovalStatus.PENDING or not await self.queue.decide(decided):
            msg = f"approval item {item_id!r} is already {item.status.value}"
            raise MemoryConflictError(msg)
        await self._audit_decision("approval.reject", decided, actor)
        return decided

    @staticmethod
    def _decided(
        item: ApprovalItem, status: ApprovalStatus, actor: str, reason: str | None
    ) -> ApprovalItem:
        return item.model_copy(
            update={
                "status": status,
                "decided_at": utc_now(),
                "decided_by": actor,
                "reason": reason.strip() if reason else None,
            }
        )

    async def _apply(self, item: ApprovalItem, actor: str) -> str:
        proposal = item.proposal
        supersedes = None
        # FULL: the better skill replaces the old one. CONFLICT (an escalation a human
        # approved): the human chose the new action over the contradicted skill.
        replaces = item.verdict in (SupersessionVerdict.FULL, SupersessionVerdict.CONFLICT)
        if replaces and proposal.supersedes:
            supersedes = proposal.supersedes[0]
        metadata = {
            _PROCEDURAL_KEY: proposal.model_dump(
                mode="json", exclude={"application_count", "last_applied_at", "superseded_by"}
            ),
            "approval_id": item.id,
        }
        if proposal.scope is ProceduralMemoryScope.ORG:
            name = actor.split(":", 1)[-1] or "human"
            fact = OrgFactWriteRequest(
                kind=OrgFactKind.PROCEDURE,
                content=proposal.render(),
                tags=(SKILL_TAG, LESSON_TAG),
                supersedes=supersedes,
                metadata=metadata,
            )
            applied = await self.org.write(fact, author=OrgFactAuthor(kind="human", name=name))
            self._pools_changed(ORG_POOL)
        else:
            pool = item.evidence.get("pool")
            if not isinstance(pool, str) or not is_pool_id(pool):
                msg = f"approval item {item.id!r} names no pool for scope {proposal.scope.value}"
                raise MemoryValidationError(msg)
            with acting_as(actor):
                applied = await self._memory.add(
                    proposal.render(),
                    agent_id=pool,
                    category=MemoryCategory.PROCEDURAL,
                    tags=(ORG_TAG, SKILL_TAG, LESSON_TAG, NON_INFERABLE),
                    metadata=metadata,
                    supersedes=supersedes,
                    dedup=False,
                )
            self._pools_changed(pool)
        if supersedes is not None:
            logger.info(
                "ORG_SKILL_SUPERSEDED",
                extra={"event": "ORG_SKILL_SUPERSEDED", "old": supersedes, "new": applied},
            )
        return applied

    async def _audit_decision(self, action: str, item: ApprovalItem, actor: str) -> None:
        if self._audit is None:
            return
        with acting_as(actor, item.reason):
            await self._audit(
                action,
                ORG_POOL,
                item.applied_id,
                {
                    "approval_id": item.id,
                    "pattern": item.pattern_key,
                    "verdict": item.verdict.value,
                },
            )

    async def approval(self, item_id: str) -> ApprovalItem:
        """One approval item.

        Raises:
            MemoryNotFoundError: no such item.
        """
        return await self.queue.get(item_id)

    async def approvals(
        self, *, status: ApprovalStatus | str | None = None, limit: int = 100
    ) -> builtins.list[ApprovalItem]:
        """Approval items, newest first (of one status)."""
        try:
            wanted = None if status is None else ApprovalStatus(status)
        except ValueError:
            names = ", ".join(s.value for s in ApprovalStatus)
            msg = f"unknown approval status {status!r} (choose from {names})"
            raise MemoryValidationError(msg) from None
        return await self.queue.list(status=wanted, limit=limit)

    async def record_applications(self, skill_ids: Sequence[str]) -> int:
        """Count one application of each skill (ids of pooled skills or lessons)."""
        for skill_id in skill_ids:
            if not isinstance(skill_id, str):
                raise MemoryNotFoundError(f"no skill {skill_id!r}")
        return await self.usage.record(skill_ids)


def open_learning(
    memory: MemoryAPI,
    store: LearningStore | None,
    url: str | None,
    config: MemvaultConfig,
    *,
    llm: LLMProvider | None = None,
    audit: AuditFn | None = None,
) -> LearningEngine:
    """The learning layer of ``memory``: over ``store``, else over the records beside the
    memories at ``url`` (same SQLite file or PostgreSQL schema; None: in process)."""
    if store is None:
        from memvault.learning.factory import open_learning_store
        from memvault.learning.store import InMemoryLearningStore

        store = InMemoryLearningStore() if url is None else open_learning_store(url)
    return LearningEngine(memory, store, config, llm=llm, audit=audit)
