"""The learning records in the SQLite file the memories use (a ``learning_items`` table).

Like the session store it has its own connection (WAL, ``busy_timeout``) and runs its calls in a
worker thread, one at a time: it works beside an open memory backend on the same file, or in
another process. The table is made by the named migrations of
:data:`memvault.learning.store.LEARNING_TABLES`, applied on first use.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memvault._sidetables import SQLiteSide, from_us, to_us
from memvault.backends.sqlite._connect import immediate
from memvault.errors import MemoryRetrievalError
from memvault.learning.store import LEARNING_TABLES, LearningRow

__all__ = ["SQLiteLearningStore"]

_WHAT = "learning store"
_COLUMNS = "kind, id, agent_id, status, at, n, data"


class SQLiteLearningStore:
    """Learning records in a SQLite file (normally the memory store's own file)."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self._path = Path(path).expanduser()
        self._db = SQLiteSide(
            self._path, what=_WHAT, busy_timeout_ms=busy_timeout_ms, migrations=LEARNING_TABLES
        )

    @property
    def location(self) -> str:
        """The database file's path."""
        return str(self._path)

    def _row(self, raw: Sequence[Any]) -> LearningRow:
        kind, item_id, agent_id, status, at, n, data = raw
        try:
            decoded = json.loads(data)
        except ValueError as exc:
            msg = f"{_WHAT} {self._path}: record {kind}/{item_id} is not JSON: {exc}"
            raise MemoryRetrievalError(msg) from None
        return LearningRow(kind, item_id, agent_id, status, from_us(at), n, decoded)

    async def put(self, row: LearningRow) -> None:
        """Insert or replace a record (its counter is kept)."""
        values = (
            row.kind,
            row.id,
            row.agent_id,
            row.status,
            to_us(row.at),
            row.n,
            json.dumps(row.data, ensure_ascii=False),
        )

        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                conn.execute(
                    f"INSERT INTO learning_items ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (kind, id) DO UPDATE SET agent_id = excluded.agent_id,"
                    " status = excluded.status, at = excluded.at, data = excluded.data",
                    values,
                )

        await self._db.run(run, write=True)

    async def get(self, kind: str, item_id: str) -> LearningRow | None:
        """One record, or None."""

        def run(conn: sqlite3.Connection) -> LearningRow | None:
            raw = conn.execute(
                f"SELECT {_COLUMNS} FROM learning_items WHERE kind = ? AND id = ?", (kind, item_id)
            ).fetchone()
            return None if raw is None else self._row(raw)

        return await self._db.run(run, write=False)

    async def find(
        self,
        kind: str,
        *,
        status: str | None = None,
        agent_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> builtins.list[LearningRow]:
        """Records of ``kind`` matching the filters, by time (then id)."""
        where, args = ["kind = ?"], [kind]
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if agent_id is not None:
            where.append("agent_id = ?")
            args.append(agent_id)
        params: list[Any] = list(args)
        if since is not None:
            where.append("at >= ?")
            params.append(to_us(since))
        order = "DESC" if newest_first else "ASC"
        params.append(-1 if limit is None else limit)
        sql = (
            f"SELECT {_COLUMNS} FROM learning_items WHERE {' AND '.join(where)}"
            f" ORDER BY at {order}, id {order} LIMIT ?"
        )

        def run(conn: sqlite3.Connection) -> builtins.list[LearningRow]:
            return [self._row(r) for r in conn.execute(sql, params).fetchall()]

        return await self._db.run(run, write=False)

    async def transition(self, row: LearningRow, *, expected_status: str) -> bool:
        """Replace the record only if its status is still ``expected_status``."""

        def run(conn: sqlite3.Connection) -> bool:
            with immediate(conn):
                cur = conn.execute(
                    "UPDATE learning_items SET agent_id = ?, status = ?, at = ?, data = ?"
                    " WHERE kind = ? AND id = ? AND status = ?",
                    (
                        row.agent_id,
                        row.status,
                        to_us(row.at),
                        json.dumps(row.data, ensure_ascii=False),
                        row.kind,
                        row.id,
                        expected_status,
                    ),
                )
                return cur.rowcount > 0

        return await self._db.run(run, write=True)

    async def bump(self, kind: str, ids: Sequence[str], at: datetime) -> None:
        """Add one to each record's counter (created when missing) and set its time."""
        stamp = to_us(at)

        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                conn.executemany(
                    f"INSERT INTO learning_items ({_COLUMNS})"
                    " VALUES (?, ?, NULL, NULL, ?, 1, '{}')"
                    " ON CONFLICT (kind, id) DO UPDATE SET n = n + 1, at = excluded.at",
                    [(kind, i, stamp) for i in ids],
                )

        await self._db.run(run, write=True)

    async def close(self) -> None:
        """Close the connection; later calls raise :class:`MemoryConnectionError`."""
        await self._db.aclose()
