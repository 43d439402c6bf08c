"""Search in the PostgreSQL store: dense (pgvector HNSW or exact) and BM25 candidates.

``search_candidates`` with its ``exact`` switch, the per-scope candidate query (one snapshot for
the statistics and the rows they score), the planner settings that pick the HNSW walk or the
exact scan, the FTS5-identical BM25 scoring, and thread adjacency. This is
:class:`PostgresCandidatesMixin`, mixed into :class:`~memvault.backends.postgres.PostgresBackend`,
which owns the pool; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memvault.backends._base import BaseBackend, Vectors
from memvault.backends._common import analysed_from_counts
from memvault.backends.postgres._driver import Conn
from memvault.backends.postgres._rows import (
    _COLUMNS,
    _PRIVATE_SCOPE,
    _STATS,
    _hydrate_sides,
    _row_entry,
    _tsquery,
    _vector_from_send,
    _vector_literal,
    _where,
    bm25_query,
)
from memvault.models import CandidateSet, MemoryEntry, MemoryQuery
from memvault.retrieval._textcache import LONG_TEXT_CHARS
from memvault.retrieval.bm25 import (
    K1,
    ROW_EXTRA_TOKENS,
    B,
    bounded_scan,
    idf,
    prune_common_terms,
)

T = TypeVar("T")

__all__ = ["PostgresCandidatesMixin", "exact_scans"]

# pgvector caps hnsw.ef_search at 1000; a scan needing more is done exactly instead.
_MAX_EF_SEARCH = 1000
_MIN_EF_SEARCH = 40
# The graph walk must keep at least twice the pool (measured on 1M rows, m 16, ef_construction
# 64, blends of real MiniLM vectors: dense recall@10 against exact 0.913 with ef_search = pool
# and 0.962 with twice it); below that share of the table an agent is scanned exactly.
_EF_PER_POOL = 2
# Where pgvector's cap allows, it keeps twice that again: the lexical side rescores the dense
# candidates in big stores (bounded BM25), so the whole pool's recall shows in the results.
# Default search at 1M, recall@10 against exact scans: 0.936 (ef 2 x pool), 0.968 (4 x pool)
# at p95 27 and 36 ms (benchmarks/results/ann.md).
_EF_MARGIN = 2
_EXACT: ContextVar[bool] = ContextVar("memvault_postgres_exact", default=False)


@contextlib.contextmanager
def exact_scans() -> Iterator[None]:
    """Within this block (this task and what it awaits), dense candidate searches scan exactly
    instead of walking the HNSW graph: the reference for a whole search's recall@10."""
    token = _EXACT.set(True)
    try:
        yield
    finally:
        _EXACT.reset(token)


if TYPE_CHECKING:
    _MixinBase = BaseBackend
else:
    _MixinBase = object


class PostgresCandidatesMixin(_MixinBase):
    """Dense and lexical candidate search of the PostgreSQL backend."""

    if TYPE_CHECKING:
        # Provided by PostgresBackend (memvault.backends.postgres.backend).
        _hnsw: bool
        _exact_below: int
        _lexical_scan_rows: int
        _lexical_bound_min_rows: int

        def _connection(
            self, op: str, *, write: bool = False
        ) -> contextlib.AbstractAsyncContextManager[Conn]: ...

        async def _read(self, op: str, fn: Callable[[Conn], Awaitable[T]]) -> T: ...

    async def search_candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        pool: int,
        dense: bool = True,
        neighbours: int = 0,
        hops: int = 1,
        terms: Sequence[str] | None = None,
        vector: Sequence[float] | Vectors | None = None,
        exact: bool = False,
    ) -> CandidateSet:
        """Dense and lexical top-``pool`` candidates for ``query.text`` passing the filters.

        ``exact=True`` scans every matching row for the dense side instead of walking the HNSW
        graph (index scans off for the query), e.g. to measure the index's recall; so does a call
        made inside :func:`exact_scans` (for a whole search, end to end).
        """
        token = _EXACT.set(exact or _EXACT.get())
        try:
            return await super().search_candidates(
                agent_id,
                query,
                pool=pool,
                dense=dense,
                neighbours=neighbours,
                hops=hops,
                terms=terms,
                vector=vector,
            )
        finally:
            _EXACT.reset(token)

    async def _candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        return await self._scoped_candidates(
            _PRIVATE_SCOPE, [agent_id], _STATS, [agent_id, terms], query, vector, terms, pool, now
        )

    async def _scoped_candidates(
        self,
        scope: str,
        scope_params: list[Any],
        stats_sql: str,
        stats_params: list[Any],
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        """Candidates among the rows ``scope`` selects; ``stats_sql`` gives the collection
        statistics and the scope's row count (for the dense planner)."""
        exact = _EXACT.get()
        where, params = _where(query, now)
        where, params = f"{scope} AND {where}", [*scope_params, *params]

        async def run(conn: Conn) -> tuple[Any, ...]:
            qterms = terms  # pruned below: a retry on the primary starts from the query's
            async with conn.transaction():
                # One snapshot for the statistics and the rows they score, as FTS5 has; the
                # dense side reads the same snapshot, so no search sees half of a write.
                await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                cur = await conn.execute(stats_sql, stats_params)
                stats = await cur.fetchone()
                assert stats is not None
                n_total, total_len = int(stats[0]), int(stats[1])
                n_agent, dfs = int(stats[2]), stats[3]
                dense: list[tuple[int, float]] = []
                if vector is not None and n_agent:
                    dense = await self._dense(
                        conn, where, params, vector, pool, n_total, n_agent, exact
                    )
                lexical: list[tuple[int, float]] = []
                kept = prune_common_terms(qterms, dict(zip(qterms, dfs, strict=True)), n_total)
                if len(kept) < len(qterms):
                    dfs = [df for t, df in zip(qterms, dfs, strict=True) if t in kept]
                    qterms = kept
                if qterms and any(dfs):
                    lexical = await self._lexical(
                        conn,
                        where,
                        params,
                        qterms,
                        dfs,
                        pool,
                        n_total,
                        total_len,
                        [r for r, _ in dense],
                    )
                rowids = sorted({r for r, _ in dense} | {r for r, _ in lexical})
                by_rowid: dict[int, tuple[MemoryEntry, Vectors]] = {}
                analysed: dict[str, str] = {}
                static: dict[str, bytes] = {}
                if rowids:
                    # Long texts' term counts come along: ranking reads a candidate's terms
                    # from them instead of analysing its text again (tens of microseconds per
                    # long turn that its memo misses). Short texts stay with the memo, which
                    # holds many of them; parsing their counts would cost more than it saves.
                    # The static vectors stored at insert come along too when ranking reads
                    # them (with the dense side; it would otherwise tokenise every candidate it
                    # has not seen before).
                    static_col = "m.static" if vector is not None else "NULL"
                    cur = await conn.execute(
                        f"SELECT {_COLUMNS}, vector_send(m.embedding),"
                        f" CASE WHEN length(m.content) > {LONG_TEXT_CHARS}"
                        " THEN m.term_freqs END,"
                        f" {static_col} FROM memories m WHERE m.rowid = ANY(%s::bigint[])",
                        [rowids],
                    )
                    for row in await cur.fetchall():
                        entry = _row_entry(row)
                        by_rowid[int(row[0])] = (entry, _vector_from_send(row[-3]))
                        if row[-2] is not None:
                            text = analysed_from_counts(entry, row[-2])
                            if text is not None:
                                analysed[entry.id] = text
                        if row[-1] is not None:
                            static[entry.id] = bytes(row[-1])
            return n_agent, dense, lexical, by_rowid, analysed, static

        n_agent, dense, lexical, by_rowid, analysed, static = await self._read("search", run)
        # The scope's row count before the other filters: counting what they leave would cost
        # a scan, and the gate needs only the order of magnitude.
        cands = CandidateSet(query_vector=vector, searched=n_agent if vector is not None else None)
        cands.dense = [(by_rowid[r][0].id, s) for r, s in dense if r in by_rowid]
        cands.lexical = [(by_rowid[r][0].id, s) for r, s in lexical if r in by_rowid]
        for entry, vec in by_rowid.values():
            cands.entries[entry.id] = entry
            cands.vectors[entry.id] = vec
        cands.analysed = analysed
        cands.static = static
        return cands

    async def _adjacent(
        self, agent_id: str, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        if not ids:
            return {}

        async def run(conn: Conn) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
            # Insertion order per agent is rowid order (the identity column only grows).
            cur = await conn.execute(
                "SELECT t.id,"
                " ARRAY(SELECT p.rowid FROM memories p WHERE p.agent_id = t.agent_id"
                "  AND p.scope = 'private' AND p.rowid < t.rowid ORDER BY p.rowid DESC LIMIT %s),"
                " ARRAY(SELECT n.rowid FROM memories n WHERE n.agent_id = t.agent_id"
                "  AND n.scope = 'private' AND n.rowid > t.rowid ORDER BY n.rowid LIMIT %s)"
                " FROM memories t"
                " WHERE t.agent_id = %s AND t.scope = 'private' AND t.id = ANY(%s::text[])",
                [hops, hops, agent_id, list(ids)],
            )
            return await _hydrate_sides(conn, await cur.fetchall())

        return await self._read("search", run)

    def _ef_search(self, *, exact: bool, n_total: int, n_agent: int, pool: int) -> int | None:
        """``hnsw.ef_search`` for a dense query, or None to scan exactly.

        HNSW filters *after* walking the graph: of ``ef_search`` nearest rows of the whole
        table only the agent's survive. So the walk needed (``max(40, 2 * pool)``) grows with
        the inverse of the agent's share of the table; past pgvector's limit of 1000, or for
        agents small enough that a scan is cheap, the exact scan is both faster and complete.
        Otherwise the walk keeps ``_EF_MARGIN`` times what it needs, up to that limit.
        """
        if exact or not self._hnsw or n_agent <= self._exact_below:
            return None
        need = max(_MIN_EF_SEARCH, _EF_PER_POOL * pool) * n_total / n_agent
        if need > _MAX_EF_SEARCH:
            return None
        return min(_MAX_EF_SEARCH, math.ceil(need * _EF_MARGIN))

    async def _dense(
        self,
        conn: Conn,
        where: str,
        params: list[Any],
        vector: Vectors,
        pool: int,
        n_total: int,
        n_agent: int,
        exact: bool,
    ) -> list[tuple[int, float]]:
        literal = _vector_literal(vector)
        ef = self._ef_search(exact=exact, n_total=n_total, n_agent=n_agent, pool=pool)
        rows = await self._dense_query(conn, where, params, literal, pool, ef)
        if ef is not None and len(rows) < min(pool, n_agent):
            # The other filters (category, time, tags, supersession) cut the graph walk's rows
            # below the pool: rows may be missing, so scan exactly instead.
            rows = await self._dense_query(conn, where, params, literal, pool, None)
        scored = [(int(r[0]), 1.0 - float(r[1])) for r in rows]
        # Best first; ties go to the newer row, as in the other backends.
        scored.sort(key=lambda p: (-p[1], -p[0]))
        return scored

    @staticmethod
    async def _dense_query(
        conn: Conn,
        where: str,
        params: list[Any],
        literal: str,
        pool: int,
        ef: int | None,
    ) -> list[tuple[Any, ...]]:
        # SET LOCAL through set_config(), which takes parameters (SET does not). Exact: with
        # index scans off the planner reads the agent's rows through the btree on agent_id (or
        # the shared rows through their partial index) in a bitmap scan and sorts them by
        # distance. HNSW: sorting is switched off instead, so
        # the plan that walks the index (which yields rows in distance order) wins even when
        # the table's statistics are stale; agent_stats already told us the index fits.
        exact = ef is None
        await conn.execute(
            "SELECT set_config('enable_indexscan', %s, true),"
            " set_config('enable_sort', %s, true), set_config('hnsw.ef_search', %s, true)",
            ["off" if exact else "on", "on" if exact else "off", str(ef or _MIN_EF_SEARCH)],
        )
        # Never prepared: a cached plan ignores the planner settings above, so a plan made for
        # one mode would be reused for the other.
        cur = await conn.execute(
            "SELECT m.rowid, m.embedding <=> %s::vector AS distance FROM memories m"
            f" WHERE {where} ORDER BY distance LIMIT %s",
            [literal, *params, pool],
            prepare=False,
        )
        return await cur.fetchall()

    async def _lexical(
        self,
        conn: Conn,
        where: str,
        params: list[Any],
        terms: list[str],
        dfs: Sequence[int],
        pool: int,
        n_total: int,
        total_len: int,
        held: list[int],
    ) -> list[tuple[int, float]]:
        """BM25 top-``pool`` rows; ``held`` are rowids this search already has (dense side).

        Every matching row is scored unless the store has ``lexical_bound_min_rows`` or more and
        the terms' rows exceed ``lexical_scan_rows``: each costs a heap fetch and reading its
        term counts (a few microseconds; a term in 10% of a million rows would make a search
        take most of a second).
        Then only the rows of the rarest terms within that bound, rows with two of the other
        terms, and the ``held`` rows are scored (see :func:`~memvault.retrieval.bm25.bounded_scan`);
        scores stay FTS5's, only rows matching a single common term can be missed.
        """
        # Collection statistics exactly as FTS5 derives them: avgdl = total tokens / rows, and
        # idf floored at 1e-6, both computed here in double precision as SQLite does. Rows
        # count ROW_EXTRA_TOKENS more than their text, as in SQLite (see bm25_query).
        avgdl = (total_len + ROW_EXTRA_TOKENS * n_total) / n_total
        dfs = [int(df) for df in dfs]
        weights = [idf(n_total, df) for df in dfs]
        constants = [K1 + 1.0, K1, 1 - B, B, ROW_EXTRA_TOKENS, avgdl]
        rows = f"SELECT m.rowid, m.doc_len, m.term_freqs FROM memories m WHERE {where}"
        plan = None
        if n_total >= self._lexical_bound_min_rows:
            plan = bounded_scan(dfs, self._lexical_scan_rows)
        sources: list[tuple[str, list[Any]]]
        if plan is None:
            searchable = [t for t, df in zip(terms, dfs, strict=True) if df]
            sources = [(rows + " AND m.lexemes @@ %s::tsquery", [*params, _tsquery(searchable)])]
        else:
            essential, paired = plan
            bound = self._lexical_scan_rows
            if not essential and not paired and not held:
                # Nothing else to score (a lexical-only search of one common term): its first
                # rows, at most the bound, stand in for all of them.
                essential = [min(range(len(terms)), key=lambda i: (dfs[i] or n_total, i))]
            # Every row of the essential terms (their document frequencies add up to at most
            # the bound), then rows with two paired terms within what is left of it, scored
            # as the bitmap scan yields them (no second lookup); then the rows held already.
            left = bound - sum(dfs[i] for i in essential)
            sources = []
            for alone, two, limit in (
                ([terms[i] for i in essential], [], bound),
                ([], [terms[i] for i in paired], left),
            ):
                match = _tsquery(alone, two)
                if match and limit > 0:
                    sources.append(
                        (rows + " AND m.lexemes @@ %s::tsquery LIMIT %s", [*params, match, limit])
                    )
            if held:
                sources.append((rows + " AND m.rowid = ANY(%s::bigint[])", [*params, held]))
            if not sources:
                return []
        statement, args = bm25_query(terms, weights, constants, sources, pool)
        cur = await conn.execute(statement, args)
        return [(int(r[0]), float(r[1])) for r in await cur.fetchall()]
