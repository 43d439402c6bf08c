"""Run a consolidation strategy over an agent's entries and apply it through callbacks.

:func:`consolidate` is backend-agnostic: it receives the entries and three callbacks (store new
entries, archive-and-delete originals, mark episodes consolidated) and enforces the order that
keeps a crash from losing data:

- group strategies (``simple``, ``dual_mode``, ``llm``): synthesise -> store the new entry ->
  only then archive and delete the entries it represents. A crash after the store leaves a
  duplicate, never a gap.
- ``extract``: store every extracted fact -> only then mark the episodes consolidated. A crash
  in between re-extracts the episodes next time rather than forgetting their facts.

Failures of one group (an op failure, a callback raising a memvault error) are recorded in the
result and the run moves on to the next group; nothing of a failed group is deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memvault._ids import utc_now
from memvault.consolidation._text import truncate
from memvault.consolidation.density import DensityClassifier
from memvault.consolidation.extraction import EpisodicExtractor, select_episodes
from memvault.consolidation.ops import (
    AbstractiveSummarizationOp,
    ArchivalMode,
    ConcatenationOp,
    ConsolidationOp,
    DensityRoutingOp,
    ExtractivePreservationOp,
    LLMSynthesisOp,
    OpOutcome,
)
from memvault.consolidation.selectors import (
    ConsolidationSelector,
    EntryGroup,
    HighestRelevanceSelector,
    eligible_entries,
)
from memvault.errors import LLMNotConfiguredError, MemoryConfigError, MemvaultError
from memvault.models import MemoryCategory, MemoryEntry, MemoryStoreRequest, aware_utc
from memvault.protocols import LLMProvider

__all__ = [
    "ArchiveCallback",
    "ConsolidationConfig",
    "ConsolidationResult",
    "ConsolidationStrategy",
    "GroupReport",
    "GroupStatus",
    "MarkCallback",
    "StoreCallback",
    "build_op",
    "consolidate",
    "split_by_age",
]

logger = logging.getLogger(__name__)

MIN_GROUP_THRESHOLD = 3
"""The design's floor for ``group_threshold``: with one entry kept, a smaller group leaves a
single entry to merge, which cannot be deduplicated against anything."""
DEFAULT_MIN_AGE_DAYS = 30.0
"""Consolidation compresses *old* memories: an entry younger than this is never merged."""
DEFAULT_MAX_GROUP_SIZE = 5
"""At most this many originals go into one new entry, so the new entry stays short enough
for each original's own words to find it (its embedding covers all of them)."""
MAX_CONCURRENT_GROUPS = 4
"""How many groups the ``llm`` strategy synthesises at once. The design runs groups in
parallel; the bound keeps a large run from flooding the provider with requests (and its rate
limit). Writes stay serialised whatever this is."""
DISTILLATION_TAG = "distillation"
MAX_DISTILLATION_ENTRIES = 5
"""At most this many recent ``distillation`` entries go into the synthesis prompt."""
MAX_DISTILLATION_CHARS = 500
"""Each of them cut to this many characters."""

StoreCallback = Callable[[list[MemoryStoreRequest]], Awaitable[list[str]]]
"""Stores new entries (all or nothing) and returns their ids in input order."""
ArchiveCallback = Callable[[list[MemoryEntry], str], Awaitable[dict[str, str]]]
"""Archives and deletes entries replaced by the entry whose id is the second argument;
returns original id -> archive id for every entry it removed."""
MarkCallback = Callable[[list[str]], Awaitable[None]]
"""Sets ``consolidated_at`` on the given episode ids."""


class ConsolidationStrategy(StrEnum):
    """The consolidation strategies memvault ships."""

    SIMPLE = "simple"
    """Concatenate each group into dated bullets (no LLM)."""
    DUAL_MODE = "dual_mode"
    """Density routing: dense groups preserved verbatim, sparse ones summarised by the LLM."""
    LLM = "llm"
    """LLM synthesis of each group, entries wrapped as data."""
    EXTRACT = "extract"
    """Episodic -> semantic fact extraction; episodes are marked, not deleted."""


class GroupStatus(StrEnum):
    """What happened to one group."""

    APPLIED = "applied"
    PLANNED = "planned"
    FAILED = "failed"


class ConsolidationConfig(BaseModel):
    """Tuning knobs of consolidation; the defaults follow the design documents."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_threshold: int = MIN_GROUP_THRESHOLD
    """A category group needs at least this many eligible entries to be consolidated (>= 3)."""
    min_age_days: float = Field(default=DEFAULT_MIN_AGE_DAYS, ge=0.0, le=36_500.0)
    """The group strategies (``simple``, ``dual_mode``, ``llm``) merge only entries created at
    least this many days before the run; younger ones are not eligible and stay untouched.
    0 makes every entry eligible (``memvault consolidate --min-age-days 0``). ``extract`` is
    not held back: it archives nothing (the episodes stay, marked consolidated)."""
    max_group_size: int = Field(default=DEFAULT_MAX_GROUP_SIZE, ge=2, le=1_000)
    """At most this many originals are merged into one new entry; a larger category group is
    split (oldest first) into several new entries of near-equal size."""
    keep: int = Field(default=1, ge=0)
    """How many of the most relevant entries of a group stay untouched."""
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_summary_tokens: int = Field(default=500, ge=1)
    max_prompt_entries: int = Field(default=30, ge=1)
    max_entry_input_chars: int = Field(default=2_000, ge=20)
    max_total_user_content_chars: int = Field(default=20_000, ge=20)
    max_episodes_per_run: int = Field(default=20, ge=1)
    density_threshold: float = Field(default=0.3, gt=0.0, le=1.0)
    extractive_max_facts: int = Field(default=10, ge=0)
    """``dual_mode``: key facts kept verbatim per dense entry, besides its three anchors."""
    extractive_unit_chars: int = Field(default=300, ge=20)
    """``dual_mode``: length of each anchor and fact unit kept verbatim."""
    concat_bullet_chars: int = Field(default=500, ge=20)
    max_summary_chars: int = Field(default=16_000, ge=200)
    include_distillation_context: bool = True
    """``llm`` strategy: put the agent's most recent ``distillation`` entries (at most 5, each
    cut to 500 characters) into the synthesis system prompt as context."""

    @field_validator("group_threshold")
    @classmethod
    def _threshold_floor(cls, value: int) -> int:
        # MemoryConfigError is not a ValueError, so pydantic lets it through unwrapped.
        if value < MIN_GROUP_THRESHOLD:
            msg = (
                f"consolidation.group_threshold must be at least {MIN_GROUP_THRESHOLD} "
                f"(got {value}): a smaller group has nothing to deduplicate against"
            )
            raise MemoryConfigError(msg)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.keep >= self.group_threshold:
            raise ValueError("keep must be smaller than group_threshold")
        if self.max_total_user_content_chars < self.max_entry_input_chars:
            raise ValueError("max_total_user_content_chars must be >= max_entry_input_chars")
        if self.max_summary_chars < self.concat_bullet_chars:
            raise ValueError("max_summary_chars must be >= concat_bullet_chars")
        return self


class GroupReport(BaseModel):
    """One group of a run: what was kept, what the new entries are, what was consumed.

    ``consolidated_ids`` are the entries represented by ``outputs`` (removed, or for
    ``extract`` marked consolidated; in a dry run, those that would be); ``created_ids`` are
    the ids the store returned (empty in a dry run or when the store failed).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: MemoryCategory
    status: GroupStatus
    kept_ids: tuple[str, ...] = ()
    consolidated_ids: tuple[str, ...] = ()
    created_ids: tuple[str, ...] = ()
    outputs: tuple[MemoryStoreRequest, ...] = ()
    method: str = ""
    mode: ArchivalMode | None = None
    error: str | None = None


class ConsolidationResult(BaseModel):
    """The outcome of one :func:`consolidate` run.

    ``removed_ids`` are the entries the archive callback reported as removed;
    ``archival_index`` maps each to its archive id so it can be restored by id;
    ``marked_ids`` are episodes marked consolidated by ``extract``; ``archival_modes`` records
    the dual-mode choice per removed entry. ``errors`` has one line per failed group.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_id: str
    strategy: ConsolidationStrategy
    dry_run: bool = False
    groups: tuple[GroupReport, ...] = ()
    created_ids: tuple[str, ...] = ()
    removed_ids: tuple[str, ...] = ()
    marked_ids: tuple[str, ...] = ()
    archival_index: dict[str, str] = Field(default_factory=dict)
    archival_modes: dict[str, ArchivalMode] = Field(default_factory=dict)
    errors: tuple[str, ...] = ()
    min_age_days: float = 0.0
    """The minimum age the run merged at (``ConsolidationConfig.min_age_days``)."""
    too_young: int = 0
    """How many of the agent's eligible entries were left alone for being younger than that."""

    @property
    def failed_groups(self) -> tuple[GroupReport, ...]:
        """The groups that produced nothing (their entries are untouched)."""
        return tuple(g for g in self.groups if g.status is GroupStatus.FAILED)


def build_op(
    strategy: ConsolidationStrategy | str,
    *,
    llm: LLMProvider | None,
    config: ConsolidationConfig | None = None,
    distillation_context: Sequence[str] = (),
) -> ConsolidationOp:
    """The op of a group strategy; ``llm`` and ``dual_mode`` need ``llm``.

    ``distillation_context`` is handed to the ``llm`` strategy's synthesis prompt.

    Raises:
        LLMNotConfiguredError: ``llm`` or ``dual_mode`` without an LLM (a MemoryConfigError).
        ValueError: ``strategy`` is unknown or is ``extract`` (which is not a group op).
    """
    cfg = config or ConsolidationConfig()
    kind = _strategy(strategy)
    concat = ConcatenationOp(bullet_chars=cfg.concat_bullet_chars, max_chars=cfg.max_summary_chars)
    if kind is ConsolidationStrategy.SIMPLE:
        return concat
    if kind is ConsolidationStrategy.EXTRACT:
        raise ValueError(
            "the extract strategy has no group op; use consolidate(strategy='extract')"
        )
    if llm is None:
        msg = (
            f"consolidation strategy {kind.value!r} needs an LLM; pass llm= (or configure one: "
            "llm.base_url or MEMVAULT_LLM_BASE_URL) or use strategy 'simple'"
        )
        raise LLMNotConfiguredError(msg)
    if kind is ConsolidationStrategy.LLM:
        return _llm_op(LLMSynthesisOp, llm, concat, cfg, distillation_context)
    if kind is ConsolidationStrategy.DUAL_MODE:
        return DensityRoutingOp(
            classifier=DensityClassifier(threshold=cfg.density_threshold),
            extractive=ExtractivePreservationOp(
                max_facts=cfg.extractive_max_facts,
                unit_chars=cfg.extractive_unit_chars,
                max_chars=cfg.max_summary_chars,
            ),
            abstractive=_llm_op(AbstractiveSummarizationOp, llm, concat, cfg),
        )
    raise AssertionError(f"unhandled strategy {kind}")  # pragma: no cover


def distillation_context(entries: Sequence[MemoryEntry], *, agent_id: str) -> list[str]:
    """The agent's most recent ``distillation`` entries, newest first, each cut to length."""
    found = [
        e
        for e in entries
        if e.agent_id == agent_id and DISTILLATION_TAG in e.metadata.tags and e.content.strip()
    ]
    found.sort(key=lambda e: (e.created_at, e.id), reverse=True)
    return [
        truncate(e.content.strip(), MAX_DISTILLATION_CHARS)
        for e in found[:MAX_DISTILLATION_ENTRIES]
    ]


def _llm_op(
    cls: type[LLMSynthesisOp] | type[AbstractiveSummarizationOp],
    llm: LLMProvider,
    fallback: ConsolidationOp,
    cfg: ConsolidationConfig,
    context: Sequence[str] = (),
) -> ConsolidationOp:
    return cls(
        llm,
        fallback=fallback,
        temperature=cfg.temperature,
        max_summary_tokens=cfg.max_summary_tokens,
        max_entries=cfg.max_prompt_entries,
        max_entry_chars=cfg.max_entry_input_chars,
        max_total_chars=cfg.max_total_user_content_chars,
        distillation_context=context,
    )


def split_by_age(
    entries: Sequence[MemoryEntry], *, agent_id: str, now: datetime, cfg: ConsolidationConfig
) -> tuple[list[MemoryEntry], int]:
    """The agent's eligible entries old enough to merge, and how many were too young.

    An entry is old enough when it was created ``cfg.min_age_days`` or more before ``now``.
    """
    cutoff = now - timedelta(days=cfg.min_age_days)
    eligible = eligible_entries(entries, agent_id=agent_id, now=now)
    old = [e for e in eligible if e.created_at <= cutoff]
    return old, len(eligible) - len(old)


def _strategy(value: ConsolidationStrategy | str) -> ConsolidationStrategy:
    try:
        return ConsolidationStrategy(value)
    except ValueError:
        names = ", ".join(s.value for s in ConsolidationStrategy)
        raise ValueError(f"unknown consolidation strategy {value!r}; use one of {names}") from None


async def consolidate(
    entries: Sequence[MemoryEntry],
    *,
    agent_id: str,
    strategy: ConsolidationStrategy | str,
    llm: LLMProvider | None,
    store: StoreCallback,
    archive_and_delete: ArchiveCallback,
    mark_consolidated: MarkCallback | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    config: ConsolidationConfig | None = None,
    selector: ConsolidationSelector | None = None,
    vectors: Mapping[str, Any] | None = None,
) -> ConsolidationResult:
    """Consolidate ``agent_id``'s ``entries`` with ``strategy`` and apply it via the callbacks.

    ``entries`` may contain anything; only the agent's private, live, unconsolidated entries
    are considered. ``dry_run`` computes the groups and the new entries (the LLM is still
    asked) but calls no callback. Errors of the callbacks that are memvault errors are recorded
    per group; any other exception propagates.

    The group strategies merge only entries at least ``config.min_age_days`` old, at most
    ``config.max_group_size`` into one new entry; ``vectors`` (entry id -> stored embedding,
    optional) makes the default selector put similar entries together.

    Groups of the ``llm`` strategy are synthesised concurrently (at most
    :data:`MAX_CONCURRENT_GROUPS` at once); the result lists them in selection order either way.

    Raises:
        MemoryConfigError: ``llm`` or ``dual_mode`` without ``llm``.
        ValueError: unknown strategy, a naive ``now``, or ``extract`` without
            ``mark_consolidated`` outside a dry run.
    """
    kind = _strategy(strategy)
    at = aware_utc(now) or utc_now()
    cfg = config or ConsolidationConfig()
    too_young = 0
    if kind is ConsolidationStrategy.EXTRACT:
        if mark_consolidated is None and not dry_run:
            raise ValueError("the extract strategy needs a mark_consolidated callback")
        report = await _extract(
            entries,
            agent_id=agent_id,
            llm=llm,
            store=store,
            mark_consolidated=mark_consolidated,
            dry_run=dry_run,
            now=at,
            cfg=cfg,
        )
        reports = [report] if report is not None else []
        archival_index: dict[str, str] = {}
        modes: dict[str, ArchivalMode] = {}
    else:
        context = (
            distillation_context(entries, agent_id=agent_id)
            if kind is ConsolidationStrategy.LLM and cfg.include_distillation_context
            else []
        )
        op = build_op(kind, llm=llm, config=cfg, distillation_context=context)
        chooser = selector or HighestRelevanceSelector(
            group_threshold=cfg.group_threshold,
            keep=cfg.keep,
            max_group_size=cfg.max_group_size,
            vectors=vectors,
        )
        old_enough, too_young = split_by_age(entries, agent_id=agent_id, now=at, cfg=cfg)
        groups = chooser.select(old_enough, agent_id=agent_id, now=at)
        parallel = MAX_CONCURRENT_GROUPS if kind is ConsolidationStrategy.LLM else 1
        done = await _run_groups(
            groups,
            op,
            now=at,
            limit=parallel,
            store=store,
            archive_and_delete=archive_and_delete,
            dry=dry_run,
        )
        reports = []
        archival_index = {}
        modes = {}
        for report, index, mode in done:
            reports.append(report)
            archival_index.update(index)
            if mode is not None:
                modes.update(dict.fromkeys(index, mode))
    result = ConsolidationResult(
        agent_id=agent_id,
        strategy=kind,
        dry_run=dry_run,
        min_age_days=cfg.min_age_days,
        too_young=too_young,
        groups=tuple(reports),
        created_ids=tuple(i for r in reports for i in r.created_ids),
        removed_ids=tuple(archival_index),
        marked_ids=tuple(
            i
            for r in reports
            if kind is ConsolidationStrategy.EXTRACT and r.status is GroupStatus.APPLIED
            for i in r.consolidated_ids
        ),
        archival_index=archival_index,
        archival_modes=modes,
        errors=tuple(f"{r.category.value}: {r.error}" for r in reports if r.error),
    )
    logger.info(
        "memory.consolidate agent=%s strategy=%s groups=%d created=%d removed=%d dry_run=%s",
        agent_id,
        kind.value,
        len(result.groups),
        len(result.created_ids),
        len(result.removed_ids),
        dry_run,
        extra={"event": "memory.consolidate", "agent_id": agent_id, "strategy": kind.value},
    )
    return result


async def _run_groups(
    groups: Sequence[EntryGroup],
    op: ConsolidationOp,
    *,
    now: datetime,
    limit: int,
    store: StoreCallback,
    archive_and_delete: ArchiveCallback,
    dry: bool,
) -> list[tuple[GroupReport, dict[str, str], ArchivalMode | None]]:
    """Run ``op`` over ``groups``, at most ``limit`` at once; results in group order.

    The ops (the LLM calls) overlap; each group's store-then-archive runs under one lock, so
    the backend sees one write sequence at a time and a group's originals are archived only
    after its own new entry is stored. If a task raises something that is not a memvault error
    the task group cancels the others: a cancelled group has at worst stored its new entry
    without archiving (a duplicate, never a loss).
    """
    gate = asyncio.Semaphore(max(1, limit))
    writes = asyncio.Lock()
    results: list[tuple[GroupReport, dict[str, str], ArchivalMode | None] | None] = [None] * len(
        groups
    )

    async def one(position: int, group: EntryGroup) -> None:
        async with gate:
            outcome = await op.apply(group, now=now)
        async with writes:
            report, index = await _apply_group(
                group, outcome, store=store, archive_and_delete=archive_and_delete, dry=dry
            )
        results[position] = (report, index, outcome.mode)

    async with asyncio.TaskGroup() as tasks:
        for position, group in enumerate(groups):
            tasks.create_task(one(position, group))
    return [r for r in results if r is not None]


async def _apply_group(
    group: EntryGroup,
    outcome: OpOutcome,
    *,
    store: StoreCallback,
    archive_and_delete: ArchiveCallback,
    dry: bool,
) -> tuple[GroupReport, dict[str, str]]:
    """Store the group's new entry, then archive what it consumed; never the other way round."""
    kept = tuple(e.id for e in group.keep)
    if outcome.summary is None or not outcome.consumed:
        failed = GroupReport(
            category=group.category,
            status=GroupStatus.FAILED,
            kept_ids=kept,
            method=outcome.method,
            mode=outcome.mode,
            error=outcome.error or "op produced no entry",
        )
        return failed, {}
    planned = GroupReport(
        category=group.category,
        status=GroupStatus.PLANNED,
        kept_ids=kept,
        consolidated_ids=tuple(e.id for e in outcome.consumed),
        outputs=(outcome.summary,),
        method=outcome.method,
        mode=outcome.mode,
    )
    if dry:
        return planned, {}
    try:
        ids = await store([outcome.summary])
    except MemvaultError as exc:
        _log_failure(group, "store", exc)
        return _failed(planned, f"store failed: {exc}"), {}
    if len(ids) != 1:
        return _failed(planned, f"store returned {len(ids)} ids for 1 entry; originals kept"), {}
    try:
        index = await archive_and_delete(list(outcome.consumed), ids[0])
    except MemvaultError as exc:
        # The new entry is stored and the originals are still live: a duplicate, not a loss.
        _log_failure(group, "archive", exc)
        error = f"archive failed after storing {ids[0]}: {exc}"
        return _failed(planned, error, created=tuple(ids)), {}
    applied = planned.model_copy(update={"status": GroupStatus.APPLIED, "created_ids": tuple(ids)})
    return applied, dict(index)


def _failed(report: GroupReport, error: str, *, created: tuple[str, ...] = ()) -> GroupReport:
    return report.model_copy(
        update={"status": GroupStatus.FAILED, "error": error, "created_ids": created}
    )


async def _extract(
    entries: Sequence[MemoryEntry],
    *,
    agent_id: str,
    llm: LLMProvider | None,
    store: StoreCallback,
    mark_consolidated: MarkCallback | None,
    dry_run: bool,
    now: datetime,
    cfg: ConsolidationConfig,
) -> GroupReport | None:
    """Extract facts from episodes, store them all, then mark the episodes consolidated."""
    episodes = select_episodes(entries, agent_id=agent_id, now=now, limit=cfg.max_episodes_per_run)
    if not episodes:
        return None
    extractor = EpisodicExtractor(
        llm,
        max_entry_chars=cfg.max_entry_input_chars,
        max_total_chars=cfg.max_total_user_content_chars,
    )
    outcome = await extractor.extract(episodes, now=now)
    category = MemoryCategory.EPISODIC
    if outcome.error is not None:
        return GroupReport(
            category=category, status=GroupStatus.FAILED, method=outcome.method, error=outcome.error
        )
    planned = GroupReport(
        category=category,
        status=GroupStatus.PLANNED,
        consolidated_ids=tuple(e.id for e in outcome.episodes),
        outputs=outcome.requests,
        method=outcome.method,
    )
    if dry_run or mark_consolidated is None:
        return planned
    ids: list[str] = []
    try:
        if outcome.requests:
            ids = await store(list(outcome.requests))
    except MemvaultError as exc:
        logger.warning("memory.consolidate.failed step=store_facts error=%s", exc)
        return _failed(planned, f"store failed: {exc}")
    if len(ids) != len(outcome.requests):
        error = f"store returned {len(ids)} ids for {len(outcome.requests)} facts"
        return _failed(planned, error)
    try:
        await mark_consolidated([e.id for e in outcome.episodes])
    except MemvaultError as exc:
        # Facts are stored; the episodes stay unmarked and may be extracted again later.
        logger.warning("memory.consolidate.failed step=mark error=%s", exc)
        error = f"facts stored but marking episodes failed: {exc}"
        return _failed(planned, error, created=tuple(ids))
    return planned.model_copy(update={"status": GroupStatus.APPLIED, "created_ids": tuple(ids)})


def _log_failure(group: EntryGroup, step: str, exc: Exception) -> None:
    logger.warning(
        "memory.consolidate.failed category=%s step=%s error=%s",
        group.category.value,
        step,
        exc,
        extra={"event": "memory.consolidate.failed", "step": step},
    )
