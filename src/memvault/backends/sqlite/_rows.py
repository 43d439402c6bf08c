"""Rows of the SQLite store: conversion between rows and entries, and the SQL fragments.

Timestamps as integer microseconds, ``memories`` rows to :class:`MemoryEntry` (and the LRU of
hydrated entries), the filter clauses equivalent to ``MemoryQuery.matches``, the per-scope row
selection, the FTS5 scope keys and query syntax, and the writers of the audit and archive rows.
They are plain functions with no connection state, kept apart from the backend class so that
its modules (:mod:`.backend`, :mod:`._candidates`, :mod:`._side`) share one definition of each.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memvault.backends._base import SHARED_KEY
from memvault.backends._common import SCOPE_KEYS
from memvault.models import (
    LOGICAL_OPS,
    RANGE_OPS,
    ArchivedEntry,
    AuditRecord,
    FilterScalar,
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryScope,
    MetadataFilter,
    trusted,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CATEGORY_CODE = {c: i for i, c in enumerate(MemoryCategory)}
_CATEGORIES = {c.value: c for c in MemoryCategory}
_SCOPES = {s.value: s for s in MemoryScope}
_COLUMNS = (
    "m.rowid, m.id, m.agent_id, m.category, m.content, m.tags, m.label, m.source, m.confidence,"
    " m.importance, m.extra, m.scope, m.created_at, m.updated_at, m.expires_at, m.valid_from,"
    " m.valid_to, m.superseded_by, m.consolidated_at, m.access_count, m.last_accessed_at,"
    " m.retracted_at"
)
_PAGE = 500


def to_us(value: datetime) -> int:
    """Microseconds since the epoch of an aware datetime (exact)."""
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _opt_us(value: datetime | None) -> int | None:
    return None if value is None else to_us(value)


def from_us(value: int | None) -> datetime | None:
    """The aware UTC datetime of a microsecond timestamp."""
    return None if value is None else _EPOCH + timedelta(microseconds=value)


def _json(text: str, empty: Any) -> Any:
    # Most rows carry no tags or extra metadata; skip the parser for the empty literals.
    return empty if text in ("[]", "{}") else json.loads(text)


def _row_entry(row: sqlite3.Row | tuple[Any, ...]) -> MemoryEntry:
    # Rows were validated when written; `trusted` skips re-validation on the read path, which
    # would otherwise dominate search latency.
    meta = trusted(
        MemoryMetadata,
        {
            "tags": tuple(_json(row[5], ())),
            "source": row[7],
            "label": row[6],
            "confidence": row[8],
            "importance": row[9],
            "extra": _json(row[10], {}),
        },
    )
    return trusted(
        MemoryEntry,
        {
            "id": row[1],
            "agent_id": row[2],
            "category": _CATEGORIES[row[3]],
            "content": row[4],
            "metadata": meta,
            "created_at": _EPOCH + timedelta(microseconds=row[12]),
            "updated_at": _EPOCH + timedelta(microseconds=row[13]),
            "expires_at": from_us(row[14]),
            "valid_from": from_us(row[15]),
            "valid_to": from_us(row[16]),
            "superseded_by": row[17],
            "consolidated_at": from_us(row[18]),
            "access_count": row[19],
            "last_accessed_at": from_us(row[20]),
            "scope": _SCOPES[row[11]],
            "retracted_at": from_us(row[21]),
            "consolidated_into": None,  # live rows never carry it (archived copies do)
            "relevance_score": None,
            "score": None,
        },
    )


ENTRY_CACHE_BYTES = 96 * 2**20
"""Estimated bytes the SQLite entry cache may hold (see :class:`_EntryCache`)."""
ENTRY_OVERHEAD_BYTES = 2_500
"""Estimated bytes of a parsed entry besides its text (model object, metadata, timestamps)."""


class _EntryCache:
    """A bounded LRU of hydrated entries by rowid (entries are immutable; writes invalidate).

    Search hydrates hundreds of candidates per query and the same popular entries recur, so
    keeping the parsed objects saves most of the read path. Access counters updated by
    *another* process are not seen until that process's next write bumps the generation.

    Bounded by count (``size``) and by an estimate of the bytes held (``max_bytes``: a fixed
    cost per parsed entry plus its text), so a store of long chunks cannot grow it past what a
    store of short facts would hold.

    Beside an entry it may keep the entry's analysed content (``CandidateSet.analysed``), read
    from the full-text index when a search first needs it, and its stored static word-embedding
    vector (``CandidateSet.static``); they live and go with the entry.
    """

    def __init__(self, size: int, max_bytes: int = ENTRY_CACHE_BYTES) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._items: OrderedDict[int, MemoryEntry] = OrderedDict()
        self._rowid: dict[str, int] = {}
        self._analysed: dict[int, str] = {}
        self._static: dict[int, bytes] = {}

    @staticmethod
    def _cost(entry: MemoryEntry) -> int:
        return ENTRY_OVERHEAD_BYTES + len(entry.content)

    def analysed(self, rowid: int) -> str | None:
        """The analysed content kept beside a cached entry, if any."""
        return self._analysed.get(rowid)

    def put_analysed(self, rowid: int, analysed: str) -> None:
        """Keep ``analysed`` beside the cached entry of ``rowid`` (nothing if it is not cached)."""
        if rowid in self._items and rowid not in self._analysed:
            self._analysed[rowid] = analysed
            self._bytes += len(analysed)
            self._shrink()

    def static(self, rowid: int) -> bytes | None:
        """The stored static vector (raw bytes) kept beside a cached entry, if any."""
        return self._static.get(rowid)

    def put_static(self, rowid: int, vector: bytes) -> None:
        """Keep ``vector`` beside the cached entry of ``rowid`` (nothing if it is not cached)."""
        if rowid in self._items and rowid not in self._static:
            self._static[rowid] = vector
            self._bytes += len(vector)
            self._shrink()

    def _forget(self, rowid: int, entry: MemoryEntry) -> None:
        self._rowid.pop(entry.id, None)
        self._bytes -= (
            self._cost(entry)
            + len(self._analysed.pop(rowid, ""))
            + len(self._static.pop(rowid, b""))
        )

    def _shrink(self) -> None:
        while len(self._items) > 1 and (
            len(self._items) > self._size or self._bytes > self._max_bytes
        ):
            rowid, old = self._items.popitem(last=False)
            self._forget(rowid, old)

    @property
    def held_bytes(self) -> int:
        """The estimated bytes the cached entries hold."""
        return self._bytes

    def get(self, rowid: int) -> MemoryEntry | None:
        entry = self._items.get(rowid)
        if entry is not None:
            self._items.move_to_end(rowid)
        return entry

    def put(self, rowid: int, entry: MemoryEntry) -> None:
        if self._size <= 0:
            return
        previous = self._items.pop(rowid, None)
        if previous is not None:
            self._forget(rowid, previous)
        self._items[rowid] = entry
        self._rowid[entry.id] = rowid
        self._bytes += self._cost(entry)
        self._shrink()

    def drop_rowids(self, rowids: Iterable[int]) -> None:
        for rowid in rowids:
            entry = self._items.pop(rowid, None)
            if entry is not None:
                self._forget(rowid, entry)

    def drop_ids(self, ids: Iterable[str]) -> None:
        self.drop_rowids([r for r in (self._rowid.get(i) for i in ids) if r is not None])

    def touch(self, agent_id: str, ids: Iterable[str], when: datetime, times: int = 1) -> None:
        """Apply an access-counter bump to the cached copies (instead of dropping them:
        popular entries are the ones searches touch, and they would be re-read every time)."""
        for i in dict.fromkeys(ids):  # SQL's IN bumps a repeated id once
            rowid = self._rowid.get(i)
            entry = None if rowid is None else self._items.get(rowid)
            if rowid is not None and entry is not None and entry.agent_id == agent_id:
                self._items[rowid] = entry.model_copy(
                    update={"access_count": entry.access_count + times, "last_accessed_at": when}
                )

    def clear(self) -> None:
        self._items.clear()
        self._rowid.clear()
        self._analysed.clear()
        self._bytes = 0


def _fts_scope_key(agent_id: str, scope: MemoryScope = MemoryScope.PRIVATE) -> str:
    """The FTS ``scope_key`` of a row: ``a`` + hex of the agent id (one token, exact for any
    id), or ``shared`` (not hex, so never an agent's key) for shared knowledge."""
    if scope is MemoryScope.SHARED:
        return "shared"
    return "a" + agent_id.encode("utf-8").hex()


def _where(query: MemoryQuery, now_us: int) -> tuple[str, list[Any]]:
    """SQL filter clauses (on alias ``m``) equivalent to ``MemoryQuery.matches``."""
    clauses = ["(m.expires_at IS NULL OR m.expires_at > ?)"]
    params: list[Any] = [now_us]
    if query.categories is not None:
        cats = sorted(c.value for c in query.categories)
        clauses.append(f"m.category IN ({','.join('?' * len(cats))})")
        params.extend(cats)
    if query.since is not None:
        clauses.append("m.created_at >= ?")
        params.append(to_us(query.since))
    if query.until is not None:
        clauses.append("m.created_at <= ?")
        params.append(to_us(query.until))
    if query.label is not None:
        clauses.append("m.label = ?")
        params.append(query.label)
    for tag in query.tags:
        clauses.append(
            "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_rowid = m.rowid AND t.tag = ?)"
        )
        params.append(tag)
    if query.as_of is not None:
        as_of = to_us(query.as_of)
        clauses.append("COALESCE(m.valid_from, m.created_at) <= ?")
        clauses.append("(m.valid_to IS NULL OR m.valid_to > ?)")
        params.extend([as_of, as_of])
    elif not query.include_superseded:
        clauses.append("m.superseded_by IS NULL AND (m.valid_to IS NULL OR m.valid_to > ?)")
        params.append(now_us)
    for f in query.filters:
        clause, values = _filter_sql(f)
        clauses.append(clause)
        params.extend(values)
    return " AND ".join(clauses), params


# -- metadata filters (MetadataFilter's semantics in SQL, on alias ``m``) -------------------------

# Keys json.dumps writes verbatim (printable ASCII but the quote and the backslash, which it
# escapes): SQLite (before 3.45) matches a path label against the *raw* text of the key, so only
# these are addressed by a JSON path; any other key is found through json_each, which decodes.
_PATH_KEY = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e]+")
_NUMBER_TYPES = "('integer', 'real')"
_INT64 = (-(2**63), 2**63 - 1)


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
    return f"NOT COALESCE({any_of}, 0)", params


def _filter_sql(f: MetadataFilter) -> tuple[str, list[Any]]:
    """One filter as a SQL condition and its parameters (NULL, like false, means no match).

    ``json_type`` tells the stored JSON type (``null``, ``true``, ``false``, ``integer``,
    ``real``, ``text``, ``array``, ``object``; SQL NULL when the key is missing), so every
    comparison is type-sensitive; ``json_extract`` gives the value to compare. The scope keys
    use literal paths so the planner matches the expression indexes of migration m006.
    """
    if f.op in LOGICAL_OPS:
        return _logical_sql(f)
    key = f.key
    kparams: list[Any]
    if key in SCOPE_KEYS:
        path = f"'$.{key}'"  # a constant of SCOPE_KEYS, never caller text
        typ, val, kparams = f"json_type(m.extra, {path})", f"json_extract(m.extra, {path})", []
    elif _PATH_KEY.fullmatch(key):
        typ, val, kparams = "json_type(m.extra, ?)", "json_extract(m.extra, ?)", [f'$."{key}"']
    else:
        typ = "(SELECT j.type FROM json_each(m.extra) j WHERE j.key = ?)"
        val = "(SELECT j.atom FROM json_each(m.extra) j WHERE j.key = ?)"
        kparams = [key]
    op, value = f.op, f.value
    if op == "exists":
        return f"{typ} IS {'NOT ' if value else ''}NULL", list(kparams)
    if op in RANGE_OPS:
        sign = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
        kind = "= 'text'" if isinstance(value, str) else f"IN {_NUMBER_TYPES}"
        assert not isinstance(value, tuple)  # MetadataFilter checked: one value for a range
        return f"({typ} {kind} AND {val} {sign} ?)", [*kparams, *kparams, _bind(value)]
    wanted = value if isinstance(value, tuple) else (value,)
    cond, cparams = _one_of(typ, val, kparams, wanted)
    if op in ("ne", "nin"):
        # A missing key makes the condition NULL, which NOT would keep NULL (no match).
        return f"NOT COALESCE({cond}, 0)", cparams
    # Bare (NULL counts as no match in WHERE), so the planner sees the index-able terms.
    return cond, cparams


def _one_of(
    typ: str, val: str, kparams: list[Any], wanted: Sequence[FilterScalar]
) -> tuple[str, list[Any]]:
    """The stored value equals one of ``wanted`` (JSON equality: same type, same value)."""
    atoms: list[str] = []  # JSON types matched by type alone: null, true, false
    numbers: list[Any] = []
    texts: list[str] = []
    for v in wanted:
        if v is None:
            atoms.append("null")
        elif isinstance(v, bool):
            atoms.append("true" if v else "false")
        elif isinstance(v, str):
            texts.append(v)
        else:
            numbers.append(_bind(v))
    parts: list[str] = []
    params: list[Any] = []
    if atoms:
        unique = sorted(set(atoms))
        parts.append(f"{typ} IN ({','.join('?' * len(unique))})")
        params.extend([*kparams, *unique])
    for kind, values in ((f"IN {_NUMBER_TYPES}", numbers), ("= 'text'", texts)):
        if values:
            test = f"{val} = ?" if len(values) == 1 else f"{val} IN ({','.join('?' * len(values))})"
            parts.append(f"({typ} {kind} AND {test})")
            params.extend([*kparams, *kparams, *values])
    if not parts:
        return "0", []  # 'in' an empty list
    return (parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"), params


def _bind(value: FilterScalar) -> Any:
    # SQLite integers are 64-bit; a bigger Python int is compared as a float (as SQLite stores
    # a JSON number that big).
    big = isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]
    return float(value) if big else value  # type: ignore[arg-type]


def _filters_sql(filters: Sequence[MetadataFilter]) -> tuple[str, list[Any]]:
    """``AND`` of the filters' conditions (``1`` when there are none)."""
    if not filters:
        return "1", []
    clauses: list[str] = []
    params: list[Any] = []
    for f in filters:
        clause, values = _filter_sql(f)
        clauses.append(clause)
        params.extend(values)
    return " AND ".join(clauses), params


def _scope_sql(key: str, exclude_agent: str | None = None) -> tuple[str, list[Any]]:
    """The rows a per-scope query covers (alias ``m``): an agent's private memories, or the
    live shared knowledge of every author but ``exclude_agent`` when ``key`` is SHARED_KEY."""
    if key != SHARED_KEY:
        return "m.agent_id = ? AND m.scope = 'private'", [key]
    if exclude_agent is None:
        return "m.scope = 'shared' AND m.retracted_at IS NULL", []
    return "m.scope = 'shared' AND m.retracted_at IS NULL AND m.agent_id <> ?", [exclude_agent]


def _index_key(agent_id: str, scope: str, retracted_at: Any) -> str | None:
    """Which in-process matrix holds a row: its agent's, the shared one, or none (retracted)."""
    if scope == MemoryScope.PRIVATE.value:
        return agent_id
    if scope == MemoryScope.SHARED.value and retracted_at is None:
        return SHARED_KEY
    return None


def _insert_audit(
    conn: sqlite3.Connection, records: Sequence[AuditRecord], *, ignore: bool = False
) -> None:
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    conn.executemany(
        f"{verb} INTO audit (id, at, actor, action, agent_id, memory_id, details)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.id,
                to_us(r.at),
                r.actor,
                r.action,
                r.agent_id,
                r.memory_id,
                json.dumps(r.details, sort_keys=True),
            )
            for r in records
        ],
    )


def _insert_archive(
    conn: sqlite3.Connection, records: Sequence[ArchivedEntry], *, ignore: bool = False
) -> None:
    verb = "INSERT OR IGNORE" if ignore else "INSERT"
    conn.executemany(
        f"{verb} INTO archive (id, memory_id, agent_id, reason, archived_at, entry)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                r.archive_id,
                r.memory_id,
                r.agent_id,
                r.reason,
                to_us(r.archived_at),
                json.dumps(r.entry.to_json(), sort_keys=True),
            )
            for r in records
        ],
    )
