"""The one SQL implementation of every repository, over a four-method database seam.

:class:`SQLDatabase` is what an engine provides (SQLite and PostgreSQL here; MariaDB would be a
third): run a statement, fetch rows, run a statement for many rows, with ``?`` placeholders and
errors already translated into the memvault tree. :class:`SQLRepository` turns an
:class:`~memvault.persistence._tables.Entity` into save/get/delete/find/count on it; the named
repositories of :mod:`memvault.persistence.repositories` add the key queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from memvault._sidetables import to_us
from memvault.errors import MemoryStoreError, MemoryValidationError
from memvault.persistence._tables import Entity

__all__ = ["MAX_LIMIT", "SQLDatabase", "SQLRepository", "check_limit", "sql_value"]

M = TypeVar("M", bound=BaseModel)

MAX_LIMIT = 100_000
"""The most records one query returns (a larger ``limit`` is refused; page with ``offset``)."""


class SQLDatabase(Protocol):
    """What an SQL engine gives the repositories (see the module docstring)."""

    @property
    def engine(self) -> Literal["sqlite", "postgres"]:
        """Which SQL dialect details apply (none differ in the statements used today)."""
        ...

    async def fetch(
        self, op: str, sql: str, params: Sequence[Any] = (), *, write: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of a query (``op`` names it in error messages; ``write``: it changes rows,
        as ``DELETE ... RETURNING`` does, and runs in a transaction)."""
        ...

    async def execute(self, op: str, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in a transaction of its own; the rows it changed."""
        ...

    async def execute_many(self, op: str, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement for each of ``rows``, all in one transaction; the rows given."""
        ...


def sql_value(value: Any) -> Any:
    """A Python value as the tables hold it (enum values, microsecond timestamps)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            msg = "timestamps must be timezone-aware (e.g. datetime.now(UTC))"
            raise MemoryValidationError(msg)
        return to_us(value)
    return value


def check_limit(limit: int | None, offset: int = 0) -> None:
    """Refuse a negative or oversized ``limit`` or a negative ``offset``."""
    if limit is not None and not 0 <= limit <= MAX_LIMIT:
        msg = f"limit must be between 0 and {MAX_LIMIT}, got {limit}"
        raise MemoryValidationError(msg)
    if offset < 0:
        msg = f"offset must be >= 0, got {offset}"
        raise MemoryValidationError(msg)


class SQLRepository(Generic[M]):
    """save/get/delete/find/count for one record kind on one database."""

    def __init__(self, entity: Entity, db: SQLDatabase) -> None:
        self._entity = entity
        self._db = db
        e = entity
        cols = (*e.column_names, "body")
        updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in e.key)
        self._upsert = (
            f"INSERT INTO {e.table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            f" ON CONFLICT ({', '.join(e.key)}) DO UPDATE SET {updates}"
        )
        self._insert_new = (
            f"INSERT INTO {e.table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            f" ON CONFLICT ({', '.join(e.key)}) DO NOTHING"
        )
        self._by_key = " AND ".join(f"{k} = ?" for k in e.key)

    @property
    def entity(self) -> Entity:
        """The record kind this repository stores."""
        return self._entity

    # -- rows ----------------------------------------------------------------------------------

    def _check(self, record: M) -> None:
        if not isinstance(record, self._entity.model):
            msg = (
                f"{self._entity.name} stores {self._entity.model.__name__} records, "
                f"got {type(record).__name__}"
            )
            raise MemoryValidationError(msg)

    def _row(self, record: M) -> tuple[Any, ...]:
        self._check(record)
        values = [
            sql_value(col.derive(record) if col.derive else getattr(record, col.name))
            for col in self._entity.columns
        ]
        return (*values, record.model_dump_json())

    def _load(self, body: str) -> M:
        try:
            return self._entity.model.model_validate_json(body)  # type: ignore[return-value]
        except ValidationError as exc:
            msg = f"a stored {self._entity.name} record no longer validates: {exc}"
            raise MemoryStoreError(msg) from exc

    def _key(self, key: Sequence[Any]) -> list[Any]:
        if len(key) != len(self._entity.key):
            msg = f"{self._entity.name} are keyed by {', '.join(self._entity.key)}"
            raise MemoryValidationError(msg)
        for n, part in enumerate(key):
            # The leading part is an id (never blank); later ones may be empty (LangGraph's
            # root checkpoint namespace is "").
            blank = isinstance(part, str) and not part.strip() and n == 0
            if not isinstance(part, str | int) or blank:
                msg = f"invalid {self._entity.name} key {tuple(key)!r}"
                raise MemoryValidationError(msg)
        return [sql_value(k) for k in key]

    # -- the common operations -----------------------------------------------------------------

    async def save(self, record: M) -> None:
        """Insert ``record``, or replace the stored one with the same key."""
        await self._db.execute(f"{self._entity.name} save", self._upsert, self._row(record))

    async def save_many(self, records: Iterable[M]) -> int:
        """:meth:`save` for every record, in one transaction; how many were given."""
        rows = [self._row(r) for r in records]
        if not rows:
            return 0
        return await self._db.execute_many(f"{self._entity.name} save", self._upsert, rows)

    async def add_new(self, records: Iterable[M]) -> int:
        """Insert the records whose key is not stored yet (others are left as they are)."""
        rows = [self._row(r) for r in records]
        if not rows:
            return 0
        return await self._db.execute_many(f"{self._entity.name} insert", self._insert_new, rows)

    async def _get(self, *key: Any) -> M | None:
        rows = await self._db.fetch(
            f"{self._entity.name} get",
            f"SELECT body FROM {self._entity.table} WHERE {self._by_key}",
            self._key(key),
        )
        return self._load(rows[0][0]) if rows else None

    async def _delete(self, *key: Any) -> bool:
        changed = await self._db.execute(
            f"{self._entity.name} delete",
            f"DELETE FROM {self._entity.table} WHERE {self._by_key}",
            self._key(key),
        )
        return changed > 0

    def _where(
        self,
        where: Mapping[str, Any],
        since: datetime | None,
        until: datetime | None,
        extra: Sequence[tuple[str, Sequence[Any]]],
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for name, value in where.items():
            if value is None:
                continue
            self._entity.column(name)  # an unknown column is a bug, not a filter
            if isinstance(value, tuple | list | frozenset | set):
                listed = [sql_value(v) for v in value]
                if not listed:
                    clauses.append("1 = 0")
                    continue
                clauses.append(f"{name} IN ({', '.join('?' * len(listed))})")
                params.extend(listed)
            else:
                clauses.append(f"{name} = ?")
                params.append(sql_value(value))
        time = self._entity.time
        if since is not None:
            clauses.append(f"{time} >= ?")
            params.append(sql_value(since))
        if until is not None:
            clauses.append(f"{time} < ?")
            params.append(sql_value(until))
        for condition, values in extra:
            clauses.append(condition)
            params.extend(values)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    async def find(
        self,
        *,
        where: Mapping[str, Any] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
        extra: Sequence[tuple[str, Sequence[Any]]] = (),
    ) -> tuple[M, ...]:
        """The records matching every filter, oldest first (by the time column, then insertion).

        ``where`` maps a column to a value or a collection of values (``None``: no filter);
        ``since`` is inclusive, ``until`` exclusive; ``extra`` are further ``(clause, params)``.
        """
        check_limit(limit, offset)
        clause, params = self._where(where or {}, since, until, extra)
        direction = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT body FROM {self._entity.table}{clause}"
            f" ORDER BY {self._entity.time} {direction}, seq {direction}"
        )
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [MAX_LIMIT if limit is None else limit, offset]
        rows = await self._db.fetch(f"{self._entity.name} query", sql, params)
        return tuple(self._load(r[0]) for r in rows)

    async def count(
        self,
        *,
        where: Mapping[str, Any] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> int:
        """How many records match (same filters as :meth:`find`)."""
        clause, params = self._where(where or {}, since, until, ())
        rows = await self._db.fetch(
            f"{self._entity.name} count",
            f"SELECT COUNT(*) FROM {self._entity.table}{clause}",
            params,
        )
        return int(rows[0][0])

    async def all_rows(self, *, after_seq: int = 0, limit: int = 5000) -> list[tuple[int, M]]:
        """Records in insertion order after ``after_seq``, with their ``seq`` (for copying)."""
        rows = await self._db.fetch(
            f"{self._entity.name} scan",
            f"SELECT seq, body FROM {self._entity.table} WHERE seq > ? ORDER BY seq LIMIT ?",
            [after_seq, limit],
        )
        return [(int(r[0]), self._load(r[1])) for r in rows]

    async def _pop(self, *key: Any) -> M | None:
        """Delete the record with ``key`` and return it (None if there was none), atomically."""
        rows = await self._db.fetch(
            f"{self._entity.name} take",
            f"DELETE FROM {self._entity.table} WHERE {self._by_key} RETURNING body",
            self._key(key),
            write=True,
        )
        return self._load(rows[0][0]) if rows else None


def older_than(age: timedelta | datetime, now: datetime) -> datetime:
    """The cut-off time of ``age`` (an age before ``now``, or a time as it is)."""
    return now - age if isinstance(age, timedelta) else age
