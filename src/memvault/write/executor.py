"""Carry out write plans against a store: fetch neighbours, plan, then store, confirm or supersede.

:func:`memvault.write.plan_write` is pure; this module is the I/O around it that
:class:`memvault.AsyncMemory` runs for ``add`` and ``add_many``. It works on any
:class:`~memvault.protocols.MemoryStore` through its public methods, so every backend gets the
same dedup and supersession behaviour.

Neighbours of a request are the same agent's live entries of the same category: the dense and
lexical top 10 of its text, plus a lexical search on its statement's subject and slot words
(:func:`~memvault.write.contradiction_query`), which finds the older statement a new value
contradicts even when the two texts are worded differently.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

import numpy as np

from memvault._actor import audit_actor
from memvault._ids import new_id
from memvault._inline import run_blocking
from memvault.models import (
    AuditRecord,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import MemoryStore, Vectors
from memvault.retrieval.text import query_terms
from memvault.write.admission import AdmissionController
from memvault.write.dedup import DedupConfig, Vector
from memvault.write.pipeline import WriteDecision, WriteKind, batch_index, plan_batch
from memvault.write.supersession import contradiction_query

__all__ = ["NEIGHBOUR_POOL", "Settler", "WriteOutcome", "execute_writes"]


class Settler(Protocol):
    """What settles the contested decisions of a plan before it is stored (an LLM-backed
    :class:`memvault.write.arbiter.SupersessionArbiter`; it sits a layer up, as it calls a
    provider through :mod:`memvault.llm`)."""

    async def settle(
        self,
        requests: Sequence[MemoryStoreRequest],
        decisions: Sequence[WriteDecision],
        neighbours: Sequence[Sequence[tuple[MemoryEntry, Vector | None]]],
    ) -> list[WriteDecision]:
        """``decisions`` with the contested ones settled, one per request, in order."""
        ...


NEIGHBOUR_POOL = 10
"""How many dense and lexical neighbours each request is compared with."""

NEIGHBOUR_CONCURRENCY = 8
"""How many neighbour searches of one batch are in flight at once."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What one write did: the id that now holds the memory, and the decision behind it.

    ``id`` is the new entry's id (ADD, SUPERSEDE), the existing entry's id (NOOP: the memory
    was already known), or None (REJECT: nothing stored; ``decision.reason`` says why).
    """

    id: str | None
    decision: WriteDecision

    @property
    def stored(self) -> bool:
        """True if a new entry was written."""
        return self.decision.kind in (WriteKind.ADD, WriteKind.SUPERSEDE)


async def _statement_neighbours(
    store: MemoryStore, agent_id: str, request: MemoryStoreRequest
) -> dict[str, MemoryEntry]:
    """The agent's live entries of the request's category found by a lexical search on its
    statement's subject and slot words (:func:`~memvault.write.contradiction_query`): the older
    statement a new value contradicts, even when the two texts are worded differently.

    Empty when the text states nothing. Lexical only, so it needs no embedding: the write path
    runs it while the batch is being embedded.
    """
    extra = contradiction_query(request.content)
    if extra is None or not query_terms(extra):
        return {}
    more = await store.search_candidates(
        agent_id,
        MemoryQuery(text=extra, categories=frozenset({request.category})),
        pool=NEIGHBOUR_POOL,
        dense=False,
    )
    return dict(more.entries)


async def _neighbours(
    store: MemoryStore,
    agent_id: str,
    request: MemoryStoreRequest,
    vector: Vectors,
    statement_entries: dict[str, MemoryEntry],
) -> list[tuple[MemoryEntry, Vector | None]]:
    """The agent's nearest live entries of the request's category, with their vectors.

    ``vector`` is the request's embedding from the batch, so the text is not embedded again;
    ``statement_entries`` are its :func:`_statement_neighbours`, joined to the dense and lexical
    top ``NEIGHBOUR_POOL`` of its text.
    """
    query = MemoryQuery(text=request.content, categories=frozenset({request.category}))
    cands = await store.search_candidates(agent_id, query, pool=NEIGHBOUR_POOL, vector=vector)
    entries = dict(cands.entries)
    vectors: dict[str, Vector | None] = dict(cands.vectors)
    for entry_id, entry in statement_entries.items():
        entries.setdefault(entry_id, entry)
    missing = [i for i in entries if vectors.get(i) is None]
    if missing:
        vectors.update(await store.export_vectors(missing))
    return [(entry, vectors.get(entry_id)) for entry_id, entry in entries.items()]


async def _bounded(jobs: Sequence[Awaitable[T]]) -> list[T]:
    """Await ``jobs`` concurrently, at most ``NEIGHBOUR_CONCURRENCY`` at a time, in order.

    A batch's neighbour searches are independent reads of the store as it was before the
    batch: awaited one after another, each waits for its round trip to the store's thread
    (or connection) to come back before the next is even queued.
    """
    if len(jobs) <= 1:
        return [await job for job in jobs]
    gate = asyncio.Semaphore(NEIGHBOUR_CONCURRENCY)

    async def one(job: Awaitable[T]) -> T:
        async with gate:
            return await job

    tasks = [asyncio.ensure_future(one(job)) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        # The first failure is raised; the other searches are stopped and their outcomes
        # collected, so none is left running or logged as never retrieved.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for job in jobs:
            if inspect.iscoroutine(job):
                job.close()  # one cancelled before it started: never awaited, not a warning
        raise


async def execute_writes(
    store: MemoryStore,
    agent_id: str,
    requests: Sequence[MemoryStoreRequest],
    *,
    dedup: DedupConfig,
    admission: AdmissionController | None,
    now: datetime,
    arbiter: Settler | None = None,
) -> list[WriteOutcome]:
    """Plan and carry out ``requests`` for ``agent_id``; one outcome per request, in order.

    New entries (ADD and SUPERSEDE) are written in one ``store_many`` transaction, so a failure
    stores none of them. Confirmations (NOOP) bump the existing entry's access count after that.
    A request that a batch-mate supersedes or duplicates refers to it by position; those
    references are resolved to the stored ids here. ``arbiter`` (with ``dedup.mark_contested``)
    settles the contested ADDs of the plan with an LLM before anything is stored.
    """
    if not requests:
        return []
    check = getattr(store, "check_request", None)
    if check is not None:
        # Refuse bad input before planning: a too-long text must fail, not match a duplicate.
        for request in requests:
            check(request, now)
    # The lexical searches on statements need no vector: they run while the texts embed (on a
    # worker thread; a lone sync caller does both on its loop's thread, one after the other).
    embedding = asyncio.ensure_future(
        run_blocking(store.embedder.embed_documents, [r.content for r in requests])
    )
    try:
        statements = await _bounded([_statement_neighbours(store, agent_id, r) for r in requests])
    except BaseException:
        # Never leave the embedding behind unawaited (its error, if any, would be logged as
        # never retrieved); the search's error is the one to raise.
        with contextlib.suppress(BaseException):
            await embedding
        raise
    vectors = np.asarray(await embedding, dtype=np.float32)
    near = await _bounded(
        [
            _neighbours(store, agent_id, r, v, found)
            for r, v, found in zip(requests, vectors, statements, strict=True)
        ]
    )
    decisions = plan_batch(
        requests,
        list(vectors),
        neighbours=near,
        admission=admission,
        dedup=dedup,
        now=now,
        agent_id=agent_id,
    )
    if arbiter is not None:
        decisions = await arbiter.settle(requests, decisions, near)
    to_store: list[MemoryStoreRequest] = []
    to_store_vectors: list[Vectors] = []
    stored_at: dict[int, int] = {}
    # Requests older than the stored entry that contradicts them are kept, closed at once;
    # the plain store API cannot write a closed entry, so they go through import_with_vectors.
    outdated: list[tuple[int, MemoryStoreRequest, str]] = []
    for position, (request, decision) in enumerate(zip(requests, decisions, strict=True)):
        if decision.kind is WriteKind.ADD and decision.outdated_by is not None:
            outdated.append((position, request, decision.outdated_by))
        elif decision.kind in (WriteKind.ADD, WriteKind.SUPERSEDE):
            stored_at[position] = len(to_store)
            # The planner's embeddings are stored as they are: embedding again is the
            # slowest step of a write.
            to_store_vectors.append(vectors[position])
            if decision.kind is WriteKind.SUPERSEDE:
                request = request.model_copy(update={"supersedes": decision.old_id})
            to_store.append(request)

    def resolve(ref: str | None, ids: Sequence[str]) -> str | None:
        index = batch_index(ref)
        return ref if index is None else ids[stored_at[index]]

    # A supersession of a batch-mate can only be written once the batch-mate has its id, so
    # requests superseding an earlier request of the batch go in a second, dependent pass.
    first = [r for r in to_store if batch_index(r.supersedes) is None]
    if len(first) == len(to_store):
        ids = (
            await store.store_many(agent_id, to_store, vectors=to_store_vectors) if to_store else []
        )
    else:
        ids = []
        for request, vector in zip(to_store, to_store_vectors, strict=True):
            request = request.model_copy(update={"supersedes": resolve(request.supersedes, ids)})
            ids.extend(await store.store_many(agent_id, [request], vectors=[vector]))

    outdated_ids: dict[int, str] = {}
    if outdated:
        entries: list[MemoryEntry] = []
        for position, request, newer_ref in outdated:
            newer_id = resolve(newer_ref, ids)
            newer = await store.get(agent_id, newer_id) if newer_id is not None else None
            created = request.created_at or now
            closed_at = (newer.valid_from or newer.created_at) if newer is not None else now
            entry = MemoryEntry(
                id=new_id(),
                agent_id=agent_id,
                category=request.category,
                content=request.content,
                metadata=request.metadata,
                created_at=created,
                updated_at=now,
                expires_at=request.expires_at,
                valid_from=request.valid_from,
                valid_to=max(closed_at, created),
                superseded_by=newer_id,
            )
            entries.append(entry)
            outdated_ids[position] = entry.id
        given = {outdated_ids[position]: vectors[position] for position, _, _ in outdated}
        await store.import_with_vectors(entries, given)
        # Imports are not audited by the store (they copy history); these are new writes.
        record = getattr(store, "record_audit", None)
        if record is not None:
            await record(
                [
                    AuditRecord(
                        id=new_id(),
                        at=now,
                        actor=audit_actor(agent_id),
                        action="memory.store",
                        agent_id=agent_id,
                        memory_id=e.id,
                        details={"category": e.category.value, "outdated_by": e.superseded_by},
                    )
                    for e in entries
                ]
            )

    confirmations: list[str] = []
    outcomes: list[WriteOutcome] = []
    for position, decision in enumerate(decisions):
        if decision.kind is WriteKind.NOOP:
            existing = resolve(decision.duplicate_of, ids)
            if existing is not None and batch_index(decision.duplicate_of) is None:
                confirmations.append(existing)
            outcomes.append(WriteOutcome(existing, decision))
        elif decision.kind is WriteKind.REJECT:
            outcomes.append(WriteOutcome(None, decision))
        elif position in outdated_ids:
            outcomes.append(WriteOutcome(outdated_ids[position], decision))
        else:
            outcomes.append(WriteOutcome(ids[stored_at[position]], decision))
    records = _unstored_audit(agent_id, requests, outcomes, now)
    record = getattr(store, "record_audit", None)
    # A store that can bump and audit in one transaction does (SQLite); WORKING memories live
    # in process beside such a store (see WorkingOverlay), so their confirmations go the long way.
    both = getattr(store, "record_access_audited", None)
    if both is not None and all(r.category is not MemoryCategory.WORKING for r in requests):
        if confirmations or records:
            await both(agent_id, confirmations, now, records)
        return outcomes
    if confirmations:
        await store.record_access(agent_id, confirmations, now)
    if records and record is not None:
        await record(records)
    return outcomes


def _unstored_audit(
    agent_id: str,
    requests: Sequence[MemoryStoreRequest],
    outcomes: Sequence[WriteOutcome],
    now: datetime,
) -> list[AuditRecord]:
    """The audit records of the writes that stored nothing: ``memory.duplicate`` (a
    confirmation of the memory that already held the fact) and ``memory.reject`` (refused by
    admission control).

    They change no row, but an operator asking "what did this agent try to write, and what
    became of it" (the dashboard's writes-by-decision chart) needs them; the store's own audit
    records only what it stored. The content is not copied into the log, only its category.
    """
    records: list[AuditRecord] = []
    for request, outcome in zip(requests, outcomes, strict=True):
        kind = outcome.decision.kind
        if kind not in (WriteKind.NOOP, WriteKind.REJECT):
            continue
        details: dict[str, object] = {
            "category": request.category.value,
            "reason": outcome.decision.reason,
        }
        if outcome.decision.admission is not None:
            details["admission"] = round(outcome.decision.admission.total, 4)
        records.append(
            AuditRecord(
                id=new_id(),
                at=now,
                actor=audit_actor(agent_id),
                action="memory.duplicate" if kind is WriteKind.NOOP else "memory.reject",
                agent_id=agent_id,
                memory_id=outcome.id,
                details=details,
            )
        )
    return records
