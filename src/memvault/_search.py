"""One search procedure for every front door: candidates -> feedback pass -> ranking.

It composes a store's candidate generation (I/O) with the pure ranking stages, so
:meth:`AsyncMemory.search` and every backend's ``retrieve`` rank identically.

Shared knowledge joins at the candidate stage: the agent's private candidates and the shared
candidates are fetched in parallel, merged into one :class:`CandidateSet` and ranked once, with
the shared ones exempt from the personal boost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memvault.errors import MemoryCapabilityError
from memvault.models import CandidateSet, MemoryEntry, MemoryQuery, QueryPeriod
from memvault.protocols import MemoryStore, SharedMemoryStore
from memvault.retrieval.expansion import expansion_terms, merge_feedback
from memvault.retrieval.filters import MemoryFilterStrategy
from memvault.retrieval.pipeline import rank
from memvault.retrieval.presets import RetrievalConfig, for_embedder
from memvault.retrieval.temporal import (
    EventCue,
    NamedPeriod,
    TimeRange,
    event_cue,
    named_period,
    query_time_range,
    stated_period,
    with_event_date,
    with_year,
    without_period,
)
from memvault.retrieval.text import query_terms

__all__ = [
    "DatedQuery",
    "add_candidates",
    "date_query",
    "hybrid_search",
    "merge_candidates",
    "query_candidates",
]


async def hybrid_search(
    store: MemoryStore,
    agent_id: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    *,
    now: datetime,
    shared_ids: Collection[str] = (),
    filter_strategy: MemoryFilterStrategy | None = None,
    include_shared: bool = False,
    exclude_agent: str | None = None,
) -> list[MemoryEntry]:
    """Search ``store`` for ``query`` with ``config``; best first, at most ``query.limit``.

    ``agent_id`` None searches shared knowledge only. ``include_shared`` adds the store's
    shared knowledge to the agent's memories; ``exclude_agent`` leaves one author's shared
    entries out.

    Raises:
        MemoryCapabilityError: shared knowledge asked of a store that does not keep it.
    """
    shared_store: SharedMemoryStore | None = None
    if include_shared or agent_id is None:
        if not isinstance(store, SharedMemoryStore) or not store.supports_shared_access:
            msg = f"the {store.backend_name} backend offers no shared knowledge"
            raise MemoryCapabilityError(msg)
        shared_store = store
    shared = set(shared_ids)
    text = query.text or ""
    # The default evidence model was fitted on one embedder's cosines; a store indexed with
    # another model for which coefficients were fitted ranks with those.
    config = for_embedder(config, store.embedder.model_id)
    dated = await date_query(
        store,
        agent_id,
        query,
        config,
        now=now,
        shared_store=shared_store,
        exclude_agent=exclude_agent,
    )
    # Ranking reads the query with an event's phrase replaced by the event's date ("before
    # the wedding" -> "before 2026-06-14"), so that it favours the memories of that period.
    text = dated.text
    cands = await query_candidates(
        store,
        agent_id,
        query,
        config,
        now=now,
        shared=shared,
        shared_store=shared_store,
        exclude_agent=exclude_agent,
        dated=dated,
    )
    if config.feedback_weight > 0 and config.use_lexical and cands.lexical:
        first = rank(
            cands,
            config,
            now=now,
            limit=config.feedback_docs,
            shared_ids=shared,
            query_text=text,
        )
        words = expansion_terms(
            first, query_terms(without_period(text, now)), n_terms=config.feedback_terms
        )
        if words:
            extra = await _candidates(
                store,
                agent_id,
                shared_store,
                exclude_agent,
                query,
                config,
                feedback=words,
                shared=shared,
            )
            merge_feedback(cands, extra, weight=config.feedback_weight)
    ranked = rank(
        cands,
        config,
        now=now,
        limit=query.limit,
        min_relevance=query.min_relevance,
        shared_ids=shared,
        filter_strategy=filter_strategy,
        query_text=text,
    )
    if dated.period is None or dated.range is None:
        return ranked
    if dated.period.anchor is not None:
        ranked = _report_after_period(ranked, dated.period.anchor, dated.range)
    # The breakdown (``explain``) says which period ranking used.
    return [
        e
        if e.score is None
        else e.model_copy(update={"score": e.score.model_copy(update={"period": dated.period})})
        for e in ranked
    ]


def _report_after_period(
    ranked: list[MemoryEntry], anchor: str, period: TimeRange
) -> list[MemoryEntry]:
    """``ranked`` with the memory that dated the event (``anchor``) moved behind the other
    memories of the period: it says when the wedding was, not what happened before it, but
    stays among the results (context for an answer). Scores are left as they are; only the
    order changes (as MMR's does)."""
    at = next((n for n, e in enumerate(ranked) if e.id == anchor), None)
    if at is None:
        return ranked
    inside = [n for n in range(at + 1, len(ranked)) if period.contains(ranked[n].created_at)]
    if not inside:
        return ranked
    last = inside[-1]
    return [*ranked[:at], *ranked[at + 1 : last + 1], ranked[at], *ranked[last + 1 :]]


@dataclass(frozen=True, slots=True)
class DatedQuery:
    """A query's text as ranking reads it, and the period it names (None: none): as the
    explanation shows it (``period``) and as ranking tests dates against it (``range``)."""

    text: str
    period: QueryPeriod | None = None
    range: TimeRange | None = None


async def date_query(
    store: MemoryStore,
    agent_id: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    *,
    now: datetime,
    shared_store: SharedMemoryStore | None = None,
    exclude_agent: str | None = None,
) -> DatedQuery:
    """The period ``query`` names, resolved against ``now`` (the moment it is asked).

    A period of the calendar ("last week", "in April 2026", "on Monday") is read from the text
    alone. One relative to an event ("before the wedding", "after I moved") is dated by the
    memory that reports the event: the best match of the event's words among those holding
    all of them, one that states a date first ("Our wedding is on June 14, 2026"), its date
    being the one it states, else the day it was stored. The text ranking reads then names
    that date instead of the event ("until 2026-06-14"). An event no memory reports names no
    period. A month, season or holiday without a year ("in May") is the most recent one, or,
    if the store holds no memory of it, the most recent earlier one that it does hold memories
    of ("in May 2023" for a store whose memories stop in 2024), named by its year.
    """
    text = query.text or ""
    if not text:
        return DatedQuery(text)
    named = named_period(text, now)
    if named is not None:
        phrase = named.phrase
        if named.yearless and not await _holds_memories(
            store, agent_id, shared_store, exclude_agent, query, config, named.range
        ):
            # "In May" of a store whose memories stop before this May: the last May it holds.
            text, named = await _earlier_year(
                store, agent_id, shared_store, exclude_agent, query, config, named, now=now
            )
        return DatedQuery(text, _described(named.range, phrase), named.range)
    cue = event_cue(text)
    if cue is None:
        return DatedQuery(text)
    found = await _event_anchor(store, agent_id, shared_store, exclude_agent, query, config, cue)
    if found is None:
        return DatedQuery(text)
    anchor, when, exact = found
    dated = with_event_date(text, cue, when, anchor.created_at.astimezone(UTC), exact=exact)
    period = None if dated is None else query_time_range(dated, now)
    if dated is None or period is None:  # e.g. an event dated after the question
        return DatedQuery(text)
    phrase = text[cue.span[0] : cue.span[1]]
    return DatedQuery(dated, _described(period, phrase, anchor=anchor.id), period)


_YEARS_BACK = 10
"""How many years back a month, season or holiday named without a year may lie."""


async def _earlier_year(
    store: MemoryStore,
    agent_id: str | None,
    shared_store: SharedMemoryStore | None,
    exclude_agent: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    named: NamedPeriod,
    *,
    now: datetime,
) -> tuple[str, NamedPeriod]:
    """The query naming the most recent earlier occurrence of ``named`` (a month, season or
    holiday without a year) that holds memories, by its year; as it was if none does."""
    text = query.text or ""
    for back in range(1, _YEARS_BACK + 1):
        try:
            moment = now.replace(year=now.year - back)
        except ValueError:  # February 29
            moment = now.replace(year=now.year - back, day=28)
        earlier = named_period(text, moment)
        if earlier is None:
            break
        if await _holds_memories(
            store, agent_id, shared_store, exclude_agent, query, config, earlier.range
        ):
            said = with_year(text, named, earlier)
            if said is None:
                break
            return said, earlier
    return text, named


async def _holds_memories(
    store: MemoryStore,
    agent_id: str | None,
    shared_store: SharedMemoryStore | None,
    exclude_agent: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    period: TimeRange,
) -> bool:
    """True if a memory the query may find was created in ``period``."""
    within = _within(query, period).model_copy(update={"limit": 1})
    found = await _candidates(
        store, agent_id, shared_store, exclude_agent, within, config, shared=set()
    )
    return bool(found.dense or found.lexical)


def _within(query: MemoryQuery, period: TimeRange) -> MemoryQuery:
    """``query`` narrowed to the memories created in ``period``."""
    return query.model_copy(
        update={
            "since": None if period.open_start else period.start,
            "until": None if period.open_end else period.end - timedelta(microseconds=1),
        }
    )


def _described(period: TimeRange, phrase: str, *, anchor: str | None = None) -> QueryPeriod:
    return QueryPeriod(
        start=None if period.open_start else period.start,
        end=None if period.open_end else period.end,
        phrase=phrase,
        anchor=anchor,
    )


async def _event_anchor(
    store: MemoryStore,
    agent_id: str | None,
    shared_store: SharedMemoryStore | None,
    exclude_agent: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    cue: EventCue,
) -> tuple[MemoryEntry, TimeRange, bool] | None:
    """The memory that reports the event of ``cue``, when the event took place, and whether
    the memory says so with the year ("on June 14, 2026"). None if no memory holds all of the
    event's words, or if those that do were stored on different days and none says the date
    with its year (a conversation mentions "the party" in many sessions: which one?).
    """
    probe = query.model_copy(update={"text": cue.event})
    found = await _candidates(
        store, agent_id, shared_store, exclude_agent, probe, config, shared=set()
    )
    dense = dict(found.dense)
    lexical = dict(found.lexical)
    wanted = set(cue.terms)
    reports: list[tuple[tuple[bool, float], MemoryEntry, TimeRange]] = []
    for entry_id in dict.fromkeys([*lexical, *dense]):
        entry = found.entries.get(entry_id)
        if entry is None or not wanted.issubset(query_terms(entry.content)):
            continue
        when = stated_period(entry.content, entry.created_at)
        bm25 = lexical.get(entry_id, 0.0)
        reports.append(
            ((when.exact, dense.get(entry_id, 0.0) + bm25 / (bm25 + 1.0)), entry, when.range)
        )
    if not reports:
        return None
    (exact, _), entry, period = max(reports, key=lambda r: r[0])
    if not exact and len({r[1].created_at.astimezone(UTC).date() for r in reports}) > 1:
        return None
    return entry, period, exact


async def query_candidates(
    store: MemoryStore,
    agent_id: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    *,
    now: datetime,
    shared: set[str],
    shared_store: SharedMemoryStore | None = None,
    exclude_agent: str | None = None,
    dated: DatedQuery | None = None,
) -> CandidateSet:
    """The candidates a search of ``query`` ranks (before any feedback pass): the dense and
    lexical top of the store, plus those of the period the query names, if any.

    ``agent_id`` None (with ``shared_store``) searches shared knowledge only; the ids of shared
    candidates are added to ``shared``. ``dated`` is the query as :func:`date_query` dated it
    (dated here if not given).
    """
    if dated is None:
        dated = await date_query(
            store,
            agent_id,
            query,
            config,
            now=now,
            shared_store=shared_store,
            exclude_agent=exclude_agent,
        )
    text = query.text or ""
    # Words naming a period ("two weeks ago", "in April 2026", "before the wedding") are
    # matched by date, not as text.
    lexical_text = without_period(dated.text, now)
    lexical = query_terms(lexical_text) if lexical_text != text else None
    cands = await _candidates(
        store, agent_id, shared_store, exclude_agent, query, config, shared=shared, lexical=lexical
    )
    period = dated.range
    if period is not None and query.since is None and query.until is None:
        # The query names a period ("two weeks ago", "in May 2023"): its memories join the
        # candidates even when the whole store holds better matches of the words, so that
        # ranking, which prefers memories of the named period, gets to see them.
        within = _within(query, period)
        extra = await _candidates(
            store,
            agent_id,
            shared_store,
            exclude_agent,
            within,
            config,
            shared=shared,
            lexical=lexical,
        )
        add_candidates(cands, extra)
    return cands


async def _candidates(
    store: MemoryStore,
    agent_id: str | None,
    shared_store: SharedMemoryStore | None,
    exclude_agent: str | None,
    query: MemoryQuery,
    config: RetrievalConfig,
    *,
    shared: set[str],
    feedback: list[str] | None = None,
    lexical: list[str] | None = None,
) -> CandidateSet:
    """Private and/or shared candidates; the ids of shared ones are added to ``shared``.

    ``lexical`` replaces the query's analysed words on the lexical side; ``feedback`` makes
    this the lexical-only pass of feedback words.
    """
    pool = config.pool_size(query.limit)
    # The feedback pass is lexical only: the dense side does not change with new words.
    dense = config.use_dense and feedback is None
    terms = feedback if feedback is not None else lexical
    neighbours = config.neighbour_window(query.limit)
    hops = config.neighbour_hops
    private = None
    if agent_id is not None:
        private = store.search_candidates(
            agent_id,
            query,
            pool=pool,
            dense=dense,
            neighbours=neighbours,
            hops=hops,
            terms=terms,
        )
    if shared_store is None:
        assert private is not None  # hybrid_search sets one of the two
        return await private
    public = shared_store.search_shared_candidates(
        query,
        pool=pool,
        dense=dense,
        neighbours=neighbours,
        hops=hops,
        terms=terms,
        exclude_agent=exclude_agent,
    )
    if private is None:
        found = await public
        shared.update(found.entries)
        return found
    # In parallel: on PostgreSQL these are two connections, each reading one snapshot.
    mine, found = await asyncio.gather(private, public)
    shared.update(found.entries)
    return merge_candidates([mine, found], pool=pool)


def merge_candidates(parts: list[CandidateSet], *, pool: int) -> CandidateSet:
    """One candidate set from several disjoint ones (e.g. private and shared), top ``pool`` each.

    Scores of the parts are comparable: the same embedder gives the cosines and every backend
    computes BM25 over the statistics of the whole store. So the top ``pool`` of the merged
    lists are exactly the candidates one query over the union of the scopes would return.
    """
    out = CandidateSet(
        query_vector=next((p.query_vector for p in parts if p.query_vector is not None), None)
    )
    # Ties go to the larger id (the newer entry), as inside every backend.
    out.dense = sorted((c for p in parts for c in p.dense), key=_score_id, reverse=True)[:pool]
    out.lexical = sorted((c for p in parts for c in p.lexical), key=_score_id, reverse=True)[:pool]
    for p in parts:
        out.entries.update(p.entries)
        out.vectors.update(p.vectors)
        out.neighbours.update(p.neighbours)
        out.analysed.update(p.analysed)
        out.static.update(p.static)
    # The dense side compared the query with every part's rows; unknown if any part cannot tell.
    counts = [p.searched for p in parts if p.query_vector is not None]
    if counts and all(c is not None for c in counts):
        out.searched = sum(c for c in counts if c is not None)
    return out


def add_candidates(cands: CandidateSet, extra: CandidateSet) -> None:
    """Add to ``cands`` the candidates of ``extra`` (another search of the same store and
    query, e.g. narrowed by a filter) that it does not hold, keeping each list best first."""
    for name in ("dense", "lexical"):
        have: list[tuple[str, float]] = getattr(cands, name)
        known = {i for i, _ in have}
        new = [c for c in getattr(extra, name) if c[0] not in known]
        if new:
            setattr(cands, name, sorted([*have, *new], key=_score_id, reverse=True))
    cands.adopt_rows(extra)


def _score_id(candidate: tuple[str, float]) -> tuple[float, str]:
    return candidate[1], candidate[0]


async def retrieve_entries(
    store: MemoryStore, agent_id: str, query: MemoryQuery, config: RetrievalConfig, *, now: datetime
) -> tuple[MemoryEntry, ...]:
    """``MemoryBackend.retrieve`` for any store: hybrid search, or newest first without text.

    ``query.include_shared`` adds the store's shared knowledge (the caller has checked that the
    store keeps it).
    """
    if not query.text or not query.text.strip():
        rows = await store.list_entries(agent_id, query)
        if query.include_shared and isinstance(store, SharedMemoryStore):
            rows.extend(await store.search_shared(query.model_copy(update={"text": None})))
            rows.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        return tuple(rows[: query.limit])
    ranked = await hybrid_search(
        store, agent_id, query, config, now=now, include_shared=query.include_shared
    )
    return tuple(ranked)
