"""The write plan: admission -> dedup -> supersession, as one pure decision per request.

:func:`plan_write` decides what storing one request should do, given the nearest existing entries
of the same agent and category (which the caller fetched); the caller carries the decision out:

``ADD``
    store the request as a new entry (if ``outdated_by`` is set, an existing newer entry already
    contradicts it: store it closed, ``valid_to`` = that entry's start, ``superseded_by`` = its id);
``NOOP``
    store nothing; bump the access count and last access of ``duplicate_of`` (a confirmation);
``SUPERSEDE``
    store the request with ``supersedes = old_id`` (the old entry gets ``valid_to`` and
    ``superseded_by`` and stays for as-of queries);
``REJECT``
    store nothing; report ``reason`` (admission control said the text is not worth keeping).

Order of the checks: an explicit ``request.supersedes`` is a deliberate correction and wins
outright (never rejected or deduplicated). Otherwise admission runs first (when a controller is
given), then dedup, then contradiction detection. A near-duplicate whose statement contradicts the
new one ("budget is 500" against "budget is 600" with a long shared context) is superseded, not
deduplicated.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from memvault.models import MemoryEntry, MemoryStoreRequest
from memvault.write.admission import AdmissionContext, AdmissionController, AdmissionScore
from memvault.write.dedup import DedupConfig, Vector, cosine, find_duplicate_match
from memvault.write.supersession import (
    conflicts,
    different_topic,
    extract_statement,
    extract_statements,
    find_contradiction,
    marks_change,
    related,
)

__all__ = [
    "BATCH_ID_PREFIX",
    "WriteDecision",
    "WriteKind",
    "batch_index",
    "plan_batch",
    "plan_write",
]

BATCH_ID_PREFIX = "batch-"
"""Prefix of the ids :func:`plan_batch` gives requests of the same batch (``batch-3``)."""


class WriteKind(StrEnum):
    """What a write does: store a new entry, nothing, a replacement, or nothing (rejected)."""

    ADD = "add"
    NOOP = "noop"
    SUPERSEDE = "supersede"
    REJECT = "reject"


class WriteDecision(BaseModel):
    """The outcome of :func:`plan_write` for one request.

    ``duplicate_of`` is set for NOOP, ``old_id`` for SUPERSEDE (``detected`` tells a contradiction
    found in the text from an explicit ``supersedes``), ``outdated_by`` optionally for ADD.
    ``reason`` explains every decision in one line; ``admission`` holds the admission score when
    one was computed; ``cosine``/``text_similarity`` the duplicate's similarities for NOOP.
    ``contested`` (only with ``DedupConfig.mark_contested``, on a plain ADD) lists the ids of
    live neighbours, closest first, that the new text may replace but the rules cannot settle;
    the caller may have an LLM decide (:mod:`memvault.write.arbiter`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: WriteKind
    duplicate_of: str | None = None
    old_id: str | None = None
    outdated_by: str | None = None
    detected: bool = False
    reason: str = ""
    admission: AdmissionScore | None = None
    cosine: float | None = None
    text_similarity: float | None = None
    contested: tuple[str, ...] = ()


def _start(entry: MemoryEntry) -> datetime:
    return entry.valid_from or entry.created_at


def plan_write(
    request: MemoryStoreRequest,
    vector: Vector | None,
    *,
    neighbours: Sequence[tuple[MemoryEntry, Vector | None]],
    admission: AdmissionController | None,
    dedup: DedupConfig,
    now: datetime,
    agent_id: str | None = None,
    context_vector: Vector | None = None,
) -> WriteDecision:
    """Decide what storing ``request`` (embedded as ``vector``) should do (see module docstring).

    ``neighbours`` are the nearest existing entries of the same agent and category with their
    vectors (e.g. the dense and lexical top 10); entries of another category, of another agent
    than ``agent_id`` (when given), or no longer live at ``now`` are ignored. ``admission`` is
    None to skip admission control (the default for explicit ``add``); ``context_vector`` is the
    agent's current goal or context embedding for the admission relevance factor. Pure apart
    from the admission controller's entity memory, which an admitted request updates.
    """
    if request.supersedes is not None:
        return WriteDecision(
            kind=WriteKind.SUPERSEDE,
            old_id=request.supersedes,
            reason=f"explicit supersedes={request.supersedes}",
        )
    score: AdmissionScore | None = None
    if admission is not None:
        verdict = admission.decide(
            request.content,
            now=now,
            context=AdmissionContext(
                agent_id=agent_id,
                vector=vector,
                context_vector=context_vector,
                created_at=request.created_at,
                metadata=request.metadata,
            ),
        )
        if not verdict.admitted:
            return WriteDecision(
                kind=WriteKind.REJECT, reason=verdict.reason, admission=verdict.score
            )
        score = verdict.score

    same = [
        (entry, vec)
        for entry, vec in neighbours
        if entry.category is request.category and (agent_id is None or entry.agent_id == agent_id)
    ]
    created = request.valid_from or request.created_at or now
    detect = dedup.detect_contradictions and request.category in dedup.contradiction_categories

    new_statement = extract_statement(request.content)
    dedup_candidates = same
    if new_statement is not None:
        # Texts about another subject or slot are never duplicates, however alike they read:
        # "Prefers a window seat" (the user) and "Xavier prefers a window seat" differ by a word.
        dedup_candidates = [
            (entry, vec)
            for entry, vec in same
            if not different_topic(new_statement, extract_statement(entry.content))
        ]
    match = find_duplicate_match(
        request.content, vector, dedup_candidates, config=dedup, created_at=created, now=now
    )
    if match is not None:
        if detect and new_statement is not None:
            old_statement = extract_statement(match.entry.content)
            if (
                old_statement is not None
                and conflicts(new_statement, old_statement)
                and _start(match.entry) <= created
            ):
                return WriteDecision(
                    kind=WriteKind.SUPERSEDE,
                    old_id=match.entry.id,
                    detected=True,
                    reason=(
                        f"near-duplicate with a new value for {old_statement.slot}: "
                        f"{old_statement.value!r} -> {new_statement.value!r}"
                    ),
                    admission=score,
                )
        return WriteDecision(
            kind=WriteKind.NOOP,
            duplicate_of=match.entry.id,
            reason=f"duplicate of {match.entry.id} ({match.rule})",
            admission=score,
            cosine=match.cosine,
            text_similarity=match.text_similarity,
        )

    if detect:
        found = find_contradiction(request.content, [entry for entry, _ in same], now=now)
        if found is not None:
            change = f"{found.old.slot}: {found.old.value!r} -> {found.new.value!r}"
            if _start(found.entry) > created:
                # The request is older news than the entry that contradicts it (e.g. importing
                # history out of order): keep it, but as already superseded.
                return WriteDecision(
                    kind=WriteKind.ADD,
                    outdated_by=found.entry.id,
                    reason=f"outdated by newer {found.entry.id} ({change})",
                    admission=score,
                )
            return WriteDecision(
                kind=WriteKind.SUPERSEDE,
                old_id=found.entry.id,
                detected=True,
                reason=f"contradicts {found.entry.id} ({change})",
                admission=score,
            )
    contested: tuple[str, ...] = ()
    if detect and dedup.mark_contested:
        contested = contested_ids(
            request.content, vector, same, now=now, created=created, dedup=dedup
        )
    return WriteDecision(kind=WriteKind.ADD, reason="new", admission=score, contested=contested)


def contested_ids(
    text: str,
    vector: Vector | None,
    neighbours: Sequence[tuple[MemoryEntry, Vector | None]],
    *,
    now: datetime,
    created: datetime,
    dedup: DedupConfig,
) -> tuple[str, ...]:
    """The live neighbours ``text`` may replace that the rules could not settle, closest first.

    A neighbour is contested when its vector's cosine with ``vector`` is at least
    ``dedup.contested_cosine`` and either ``text`` marks a change ("now", "switched", "no
    longer", "since"...; :func:`~memvault.write.supersession.marks_change`) and the rules do
    not read both texts as statements, or the two texts state something about a related slot
    of one subject (:func:`~memvault.write.supersession.related`). Questions, entries newer
    than the request, entries of the same batch and neighbours without a vector are never
    contested; at most ``dedup.max_contested`` are returned.
    """
    if vector is None or dedup.max_contested <= 0 or text.rstrip().endswith("?"):
        return ()
    marked = marks_change(text)
    news = extract_statements(text)
    scored: list[tuple[float, str]] = []
    for entry, vec in neighbours:
        if vec is None or batch_index(entry.id) is not None:
            continue
        if not entry.is_live(now) or _start(entry) > created:
            continue
        cos = cosine(vector, vec)
        if cos < dedup.contested_cosine:
            continue
        olds = extract_statements(entry.content)
        if any(related(new, old) for new in news for old in olds) or (
            # A marked change is contested unless the rules read both texts and found them
            # about different subjects or slots.
            marked and not (news and olds)
        ):
            scored.append((cos, entry.id))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return tuple(entry_id for _, entry_id in scored[: dedup.max_contested])


def batch_index(ref: str | None) -> int | None:
    """The batch position a :func:`plan_batch` id refers to, or None for a stored entry's id."""
    if ref is None or not ref.startswith(BATCH_ID_PREFIX):
        return None
    tail = ref[len(BATCH_ID_PREFIX) :]
    return int(tail) if tail.isdigit() else None


def plan_batch(
    requests: Sequence[MemoryStoreRequest],
    vectors: Sequence[Vector | None],
    *,
    neighbours: Sequence[Sequence[tuple[MemoryEntry, Vector | None]]],
    admission: AdmissionController | None,
    dedup: DedupConfig,
    now: datetime,
    agent_id: str,
) -> list[WriteDecision]:
    """Plan a batch (``add_many``): :func:`plan_write` per request, in order, seeing earlier ones.

    ``neighbours[i]`` are the stored neighbours of ``requests[i]``. A request is also compared
    with the earlier requests of the batch that will be stored, under ids ``batch-<position>``
    (see :func:`batch_index`), so a batch that repeats itself stores one copy; a stored
    neighbour or batch entry superseded by an earlier request is no longer a candidate.
    """
    if not len(requests) == len(vectors) == len(neighbours):
        msg = "requests, vectors and neighbours must have the same length"
        raise ValueError(msg)
    decisions: list[WriteDecision] = []
    pending: list[tuple[MemoryEntry, Vector | None]] = []
    closed: set[str] = set()
    for position, (request, vector, near) in enumerate(
        zip(requests, vectors, neighbours, strict=True)
    ):
        candidates = [(e, v) for e, v in [*near, *pending] if e.id not in closed]
        decision = plan_write(
            request,
            vector,
            neighbours=candidates,
            admission=admission,
            dedup=dedup,
            now=now,
            agent_id=agent_id,
        )
        decisions.append(decision)
        if decision.kind is WriteKind.SUPERSEDE and decision.old_id is not None:
            closed.add(decision.old_id)
        if decision.kind in (WriteKind.ADD, WriteKind.SUPERSEDE):
            created = request.created_at or now
            entry = MemoryEntry(
                id=f"{BATCH_ID_PREFIX}{position}",
                agent_id=agent_id,
                category=request.category,
                content=request.content,
                metadata=request.metadata,
                created_at=created,
                updated_at=now,
                valid_from=request.valid_from,
                superseded_by=decision.outdated_by,
            )
            pending.append((entry, vector))
    return decisions
