"""Rows of the PostgreSQL store: the SQL statements, and conversion between rows and entries.

The column list, the insert, delete and statistics statements, the BM25 query, the filter
clauses equivalent to ``MemoryQuery.matches``, the pgvector and tsquery literals, the lexical
analysis of a row, row to :class:`MemoryEntry` conversion, and the writers of the audit and
archive rows. They hold no connection state, and are kept apart from the backend class so that
its modules (:mod:`.backend`, :mod:`._candidates`, :mod:`._side`, :mod:`._export`) share one
definition of each.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memvault.backends._base import Vectors
from memvault.backends._common import SCOPE_KEYS
from memvault.backends.postgres._driver import Conn, Jsonb, sql
from memvault.models import (
    LOGICAL_OPS,
    RANGE_OPS,
    ArchivedEntry,
    AuditRecord,
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryScope,
    MetadataFilter,
)
from memvault.retrieval.text import tokenize

_COLUMNS = (
    "m.rowid, m.id, m.agent_id, m.category, m.content, m.tags, m.label, m.source, m.confidence,"
    " m.importance, m.extra, m.scope, m.created_at, m.updated_at, m.expires_at, m.valid_from,"
    " m.valid_to, m.superseded_by, m.consolidated_at, m.access_count, m.last_accessed_at,"
    " m.retracted_at"
)
_PAGE = 500
# Longer terms cannot be tsvector lexemes (2 KiB) or btree keys (~2.7 KiB): such "words" (think
# base64 blobs) still count towards the document's length but are not searchable lexically.
_MAX_TERM_BYTES = 2000

_INSERT = (
    "INSERT INTO memories (id, agent_id, category, content, tags, label, source, confidence,"
    " importance, extra, scope, created_at, updated_at, expires_at, valid_from, valid_to,"
    " superseded_by, consolidated_at, access_count, last_accessed_at, retracted_at, embedding,"
    " lexemes, term_freqs, doc_len, static) VALUES (%s, %s, %s, %s, %s::text[], %s, %s, %s, %s,"
    " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector, array_to_tsvector(%s::text[]),"
    " %s, %s, %s)"
    " ON CONFLICT (id) DO NOTHING RETURNING id"
)
# Statistics rows are locked in one global order (terms sorted, then agents sorted, then the
# store row) by every writer, so concurrent writers queue instead of deadlocking.
_TERM_DELTAS = (
    "INSERT INTO term_stats AS t (term, df)"
    " SELECT d.term, d.df FROM unnest(%s::text[], %s::bigint[]) AS d(term, df) ORDER BY d.term"
    " ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df"
)
_AGENT_DELTAS = (
    "INSERT INTO agent_stats AS a (agent_id, n)"
    " SELECT d.agent_id, d.n FROM unnest(%s::text[], %s::bigint[]) AS d(agent_id, n)"
    " ORDER BY d.agent_id"
    " ON CONFLICT (agent_id) DO UPDATE SET n = a.n + excluded.n"
)
_DELETE = (
    "WITH gone AS (DELETE FROM memories m WHERE {cond}"
    " RETURNING m.agent_id, m.doc_len, m.term_freqs),"
    " terms AS (SELECT k.term, count(*) AS df FROM gone,"
    " jsonb_object_keys(gone.term_freqs) AS k(term) GROUP BY k.term),"
    " agents AS (SELECT agent_id, count(*) AS n FROM gone GROUP BY agent_id)"
    " SELECT (SELECT count(*) FROM gone), (SELECT COALESCE(sum(doc_len), 0) FROM gone),"
    " ARRAY(SELECT term FROM terms ORDER BY term), ARRAY(SELECT df FROM terms ORDER BY term),"
    " ARRAY(SELECT agent_id FROM agents ORDER BY agent_id),"
    " ARRAY(SELECT n FROM agents ORDER BY agent_id)"
)
_STATS = (
    "SELECT s.n, s.total_len,"
    " COALESCE((SELECT a.n FROM agent_stats a WHERE a.agent_id = %s), 0),"
    " ARRAY(SELECT COALESCE(t.df, 0) FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)"
    " LEFT JOIN term_stats t ON t.term = q.term ORDER BY q.ord)"
    " FROM store_stats s WHERE s.id = 1"
)
# The same for the shared scope: its row count instead of an agent's.
_SHARED_STATS = (
    "SELECT s.n, s.total_len, s.shared_n,"
    " ARRAY(SELECT COALESCE(t.df, 0) FROM unnest(%s::text[]) WITH ORDINALITY AS q(term, ord)"
    " LEFT JOIN term_stats t ON t.term = q.term ORDER BY q.ord)"
    " FROM store_stats s WHERE s.id = 1"
)
# Which rows a per-scope query covers (alias m). Literals, not parameters, so the planner can
# match the partial indexes on scope = 'shared'.
_PRIVATE_SCOPE = "m.agent_id = %s AND m.scope = 'private'"
_SHARED_SCOPE = "m.scope = 'shared' AND m.retracted_at IS NULL"
# FTS5's bm25(), term for term: score = sum over query terms, in query order, of
#   idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)))
# with the same operation order, so the double-precision result is identical to SQLite's (a
# term a row lacks adds 0.0, which changes no double). See bm25_query.
_BM25_NORM = " CROSS JOIN LATERAL (SELECT %s * (%s + %s * (s.doc_len + %s) / %s) AS norm) n"
# The longest column name PostgreSQL keeps (NAMEDATALEN - 1 bytes); see bm25_query.
_MAX_NAME_BYTES = 63


def bm25_query(
    terms: Sequence[str],
    idfs: Sequence[float],
    constants: Sequence[float],
    sources: Sequence[tuple[str, Sequence[Any]]],
    limit: int,
) -> tuple[sql.Composed, list[Any]]:
    """The BM25 top-``limit`` rows among ``sources``, as (statement, parameters).

    Each source is a query (with its parameters) selecting ``rowid, doc_len, term_freqs`` of
    some rows; a row found by several sources gets the same score from each, so UNION keeps it
    once. ``constants`` are k1 + 1, k1, 1 - b, b, the extra tokens of a row and avgdl. Rows
    holding none of ``terms`` are left out.

    A row's term counts are read with one ``jsonb_to_record`` call whose columns are named after
    the terms: the counts of a long text are compressed (and often moved out of line), and
    reading them term by term with ``->>`` decompressed them once per term, which made BM25 over
    a few thousand long conversation turns cost 100-270 ms instead of 20-30. A term longer than a
    column name can be is read with ``->>``. Names are quoted identifiers, never SQL text.
    """
    k1p1, k1, one_minus_b, b, extra, avgdl = constants
    # Each distinct term's count in a row: a column of the record, or read with ->> (with the
    # term as its parameter) when the term is too long to name a column.
    counts: dict[str, tuple[sql.Composable, list[Any]]] = {}
    for term in terms:
        if term not in counts:
            long = len(term.encode()) > _MAX_NAME_BYTES
            counts[term] = (
                (sql.SQL("(s.term_freqs ->> %s)::float8"), [term])
                if long
                else (sql.SQL("x.") + sql.Identifier(term), [])
            )
    # Per query term, in query order (a repeated term counts again, as in FTS5).
    scored: list[tuple[sql.Composable, list[Any]]] = []
    for term, weight in zip(terms, idfs, strict=True):
        count, count_args = counts[term]
        part = (
            sql.SQL("COALESCE(%s * ((")
            + count
            + sql.SQL(" * %s) / (")
            + count
            + sql.SQL(" + n.norm)), 0)")
        )
        scored.append((part, [weight, *count_args, k1p1, *count_args]))
    present = [count for count, _ in counts.values()]
    present_args = [arg for _, args in counts.values() for arg in args]
    named = [t for t, (_, args) in counts.items() if not args]
    record: sql.Composable = sql.SQL("")
    if named:
        record = (
            sql.SQL(" CROSS JOIN LATERAL jsonb_to_record(s.term_freqs) AS x(")
            + sql.SQL(", ").join(sql.Identifier(t) + sql.SQL(" float8") for t in named)
            + sql.SQL(")")
        )
    blocks: list[sql.Composable] = []
    args: list[Any] = []
    for source, source_args in sources:
        blocks.append(
            sql.SQL("SELECT s.rowid, ")
            + sql.SQL(" + ").join(part for part, _ in scored)
            + sql.SQL(" AS score FROM (")
            + sql.SQL(source)
            + sql.SQL(") s")
            + record
            + sql.SQL(_BM25_NORM)
            + sql.SQL(" WHERE COALESCE(")
            + sql.SQL(", ").join(present)
            + sql.SQL(") IS NOT NULL")
        )
        for _, part_args in scored:
            args += part_args
        args += [*source_args, k1, one_minus_b, b, extra, avgdl, *present_args]
    statement = (
        sql.SQL("SELECT rowid, score FROM (")
        + sql.SQL(" UNION ").join(blocks)
        + sql.SQL(") u ORDER BY score DESC, rowid DESC LIMIT %s")
    )
    return statement, [*args, limit]


def _row_entry(row: Sequence[Any]) -> MemoryEntry:
    # Rows were validated when written; model_construct skips re-validation on the read path.
    meta = MemoryMetadata.model_construct(
        tags=tuple(row[5]),
        label=row[6],
        source=row[7],
        confidence=row[8],
        importance=row[9],
        extra=json.loads(row[10]),
    )
    return MemoryEntry.model_construct(
        id=row[1],
        agent_id=row[2],
        category=MemoryCategory(row[3]),
        content=row[4],
        metadata=meta,
        scope=MemoryScope(row[11]),
        created_at=row[12],
        updated_at=row[13],
        expires_at=row[14],
        valid_from=row[15],
        valid_to=row[16],
        superseded_by=row[17],
        consolidated_at=row[18],
        access_count=row[19],
        last_accessed_at=row[20],
        retracted_at=row[21],
        relevance_score=None,
        score=None,
    )


def _vector_literal(vector: Vectors) -> str:
    # pgvector's text form. repr() of a float32 widened to float64 parses back (strtof) to the
    # very same float32, so vectors arrive bit-exact without a binary dumper or extra package.
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def _vector_from_send(data: bytes) -> Vectors:
    # vector_send(): int16 dimension, int16 unused, then big-endian float32 values.
    return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def _analysed(text: str) -> tuple[Counter[str], int]:
    """Term frequencies (searchable terms only) and length in terms, as FTS5 sees ``text``."""
    terms = tokenize(text)
    freqs = Counter(t for t in terms if len(t.encode()) <= _MAX_TERM_BYTES)
    return freqs, len(terms)


def _tsquery(terms: Sequence[str], paired: Sequence[str] = ()) -> str:
    """Rows with any of ``terms`` or at least two of ``paired``, as tsquery input.

    Every term is quoted (quotes doubled, backslashes escaped), so no term is ever read as an
    operator; analysed terms are letters and digits anyway.
    """
    quoted = ["'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in (*terms, *paired)]
    alone = quoted[: len(terms)]
    pairs = quoted[len(terms) :]
    both = [f"({a} & {b})" for k, a in enumerate(pairs) for b in pairs[k + 1 :]]
    return " | ".join(alone + both)


def _where(query: MemoryQuery, now: datetime) -> tuple[str, list[Any]]:
    """SQL filter clauses (on alias ``m``) equivalent to ``MemoryQuery.matches``."""
    clauses = ["(m.expires_at IS NULL OR m.expires_at > %s)"]
    params: list[Any] = [now]
    if query.categories is not None:
        clauses.append("m.category = ANY(%s::text[])")
        params.append(sorted(c.value for c in query.categories))
    if query.since is not None:
        clauses.append("m.created_at >= %s")
        params.append(query.since)
    if query.until is not None:
        clauses.append("m.created_at <= %s")
        params.append(query.until)
    if query.label is not None:
        clauses.append("m.label = %s")
        params.append(query.label)
    if query.tags:
        # Every tag must be present; the GIN index on tags answers @> directly.
        clauses.append("m.tags @> %s::text[]")
        params.append(list(query.tags))
    if query.as_of is not None:
        clauses.append("COALESCE(m.valid_from, m.created_at) <= %s")
        clauses.append("(m.valid_to IS NULL OR m.valid_to > %s)")
        params.extend([query.as_of, query.as_of])
    elif not query.include_superseded:
        clauses.append("m.superseded_by IS NULL AND (m.valid_to IS NULL OR m.valid_to > %s)")
        params.append(now)
    for f in query.filters:
        clause, values = _filter_sql(f)
        clauses.append(clause)
        params.extend(values)
    return " AND ".join(clauses), params


# -- metadata filters (MetadataFilter's semantics in SQL, on alias ``m``) -------------------------

_SIGNS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _logical_sql(f: MetadataFilter) -> tuple[str, list[Any]]:
    """A logical filter: its clauses' conditions joined (NULL, like false, is no match)."""
    parts = [_filter_sql(c) for c in f.clauses]
    params = [value for _, values in parts for value in values]
    if f.op == "and":
        return "(" + " AND ".join(c for c, _ in parts) + ")", params
    any_of = "(" + " OR ".join(c for c, _ in parts) + ")"
    if f.op == "or":
        return any_of, params
    # NOT: a clause that is NULL (a missing key) did not match, so the entry passes.
    return f"NOT COALESCE({any_of}, false)", params


def _filter_sql(f: MetadataFilter) -> tuple[str, list[Any]]:
    """One filter as a SQL condition and its parameters (NULL, like false, means no match).

    ``extra`` is JSON text; ``m.extra::jsonb -> key`` is the stored value (SQL NULL when the key
    is missing). jsonb equality is JSON equality (same type and value; ``1`` = ``1.0``), so
    ``eq``/``in`` compare with jsonb values; ranges check ``jsonb_typeof`` first, inside a CASE
    so the cast never sees another type. The scope keys use literal keys so the planner matches
    the expression indexes of migration m004.
    """
    if f.op in LOGICAL_OPS:
        return _logical_sql(f)
    key = f.key
    kparams: list[Any]
    if key in SCOPE_KEYS:
        # Constants of SCOPE_KEYS, never caller text.
        val, text, kparams = f"(m.extra::jsonb -> '{key}')", f"(m.extra::jsonb ->> '{key}')", []
    else:
        val, text, kparams = "(m.extra::jsonb -> %s::text)", "(m.extra::jsonb ->> %s::text)", [key]
    op, value = f.op, f.value
    if op == "exists":
        return f"{val} IS {'NOT ' if value else ''}NULL", list(kparams)
    if op in RANGE_OPS:
        assert not isinstance(value, tuple)  # MetadataFilter checked: one value for a range
        sign = _SIGNS[op]
        if isinstance(value, str):
            test = f'{text} COLLATE "C" {sign} %s::text'
            bound: Any = value
            kind = "string"
        else:
            # As text, read by numeric: exact (Python's repr of a float round-trips).
            test = f"{text}::numeric {sign} %s::numeric"
            bound = repr(value) if isinstance(value, float) else str(value)
            kind = "number"
        return (
            f"CASE WHEN jsonb_typeof({val}) = '{kind}' THEN {test} ELSE false END",
            [*kparams, *kparams, bound],
        )
    if op in ("eq", "ne"):
        literal = json.dumps(value)
        if op == "eq":
            return f"{val} = %s::jsonb", [*kparams, literal]
        return f"{val} IS DISTINCT FROM %s::jsonb", [*kparams, literal]
    assert isinstance(value, tuple)
    values = json.dumps(list(value))
    cond = f"{val} IN (SELECT jsonb_array_elements(%s::jsonb))"
    if op == "in":
        return cond, [*kparams, values]
    return f"NOT COALESCE({cond}, false)", [*kparams, values]


def _filters_sql(filters: Sequence[MetadataFilter]) -> tuple[str, list[Any]]:
    """``AND`` of the filters' conditions (``true`` when there are none)."""
    if not filters:
        return "true", []
    clauses: list[str] = []
    params: list[Any] = []
    for f in filters:
        clause, values = _filter_sql(f)
        clauses.append(clause)
        params.extend(values)
    return " AND ".join(clauses), params


async def _insert_archive(
    conn: Conn, records: Sequence[ArchivedEntry], *, ignore: bool = False
) -> int:
    """Write archive rows (in the caller's transaction); returns how many were inserted."""
    inserted = 0
    for r in records:
        cur = await conn.execute(
            "INSERT INTO archive (id, memory_id, agent_id, reason, archived_at, entry)"
            " VALUES (%s, %s, %s, %s, %s, %s)" + (" ON CONFLICT (id) DO NOTHING" if ignore else ""),
            (
                r.archive_id,
                r.memory_id,
                r.agent_id,
                r.reason,
                r.archived_at,
                Jsonb(r.entry.to_json()),
            ),
        )
        inserted += max(cur.rowcount, 0)
    return inserted


async def _insert_audit(conn: Conn, records: Sequence[AuditRecord]) -> None:
    """Write audit records (in the caller's transaction)."""
    if not records:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO audit (id, at, actor, action, agent_id, memory_id, details)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            [
                (r.id, r.at, r.actor, r.action, r.agent_id, r.memory_id, Jsonb(r.details))
                for r in records
            ],
        )


async def _hydrate_sides(
    conn: Conn, rows: Sequence[Any]
) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
    """Entries for ``(id, rowids before, rowids after)`` rows of an adjacency query."""
    sides = {str(r[0]): ([int(x) for x in r[1]], [int(x) for x in r[2]]) for r in rows}
    wanted = sorted({r for b, a in sides.values() for r in (*b, *a)})
    by_rowid: dict[int, MemoryEntry] = {}
    if wanted:
        cur = await conn.execute(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid = ANY(%s::bigint[])", [wanted]
        )
        by_rowid = {int(r[0]): _row_entry(r) for r in await cur.fetchall()}
    return {
        entry_id: (
            [by_rowid[r] for r in before if r in by_rowid],
            [by_rowid[r] for r in after if r in by_rowid],
        )
        for entry_id, (before, after) in sides.items()
    }
