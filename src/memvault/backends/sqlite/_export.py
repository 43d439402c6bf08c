"""Store-wide reads of the SQLite store: exports, agent ids and statistics.

``export_entries``, ``export_in_storage_order`` and ``export_vectors`` (what ``memvault
migrate`` and re-indexing read, in pages), ``agent_ids`` and ``stats``. This is
:class:`SQLiteExportMixin`, mixed into :class:`~memvault.backends.sqlite.SQLiteBackend`, which
owns the connection; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memvault.backends._base import Vectors, check_agent
from memvault.backends.sqlite._candidates import SQLiteCandidatesMixin
from memvault.backends.sqlite._rows import _COLUMNS, _PAGE, _row_entry, to_us
from memvault.models import MemoryEntry, StoreStats

__all__ = ["SQLiteExportMixin"]

if TYPE_CHECKING:
    _MixinBase = SQLiteCandidatesMixin
else:
    _MixinBase = object


class SQLiteExportMixin(_MixinBase):
    """Exports, agent ids and statistics of the SQLite backend."""

    async def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all), oldest first, read in pages."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        last: tuple[int, str] = (-(2**62), "")
        while True:

            def page(after: tuple[int, str] = last) -> list[MemoryEntry]:
                sql = f"SELECT {_COLUMNS} FROM memories m WHERE (m.created_at, m.id) > (?, ?)"
                params: list[Any] = [after[0], after[1]]
                if agent is not None:
                    sql += " AND m.agent_id = ?"
                    params.append(agent)
                sql += " ORDER BY m.created_at, m.id LIMIT ?"
                params.append(_PAGE)
                return [_row_entry(r) for r in self._db.execute(sql, params)]

            rows = await self._run(page)
            for entry in rows:
                yield entry
            if len(rows) < _PAGE:
                return
            last = (to_us(rows[-1].created_at), rows[-1].id)

    async def agent_ids(self) -> list[str]:
        """Every agent id with at least one memory."""
        rows = await self._run(
            lambda: self._db.execute(
                "SELECT DISTINCT agent_id FROM memories ORDER BY agent_id"
            ).fetchall()
        )
        return [r[0] for r in rows]

    async def stats(self) -> StoreStats:
        """Counts and file size."""

        def run() -> StoreStats:
            conn = self._db
            by_cat = Counter(
                dict(conn.execute("SELECT category, COUNT(*) FROM memories GROUP BY category"))
            )
            agents = conn.execute("SELECT COUNT(DISTINCT agent_id) FROM memories").fetchone()[0]
            size = sum(
                p.stat().st_size for p in (self._path, Path(f"{self._path}-wal")) if p.exists()
            )
            return StoreStats(
                backend=self.backend_name,
                location=str(self._path),
                total=sum(by_cat.values()),
                by_category=dict(by_cat),
                agents=int(agents),
                embedding_model=self._embedder.model_id,
                dimension=self._embedder.dimension,
                size_bytes=size,
            )

        return await self._run(run)

    # -- bulk transfer (``memvault migrate``) ---------------------------------------------------

    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``ids`` (any agent), bit-exact; unknown ids are left out."""
        self._require_connected()
        wanted = list(dict.fromkeys(ids))

        def run() -> dict[str, Vectors]:
            out: dict[str, Vectors] = {}
            for start in range(0, len(wanted), _PAGE):
                chunk = wanted[start : start + _PAGE]
                rows = self._db.execute(
                    "SELECT m.id, v.vector FROM memories m"
                    " JOIN memory_vectors v ON v.memory_rowid = m.rowid"
                    f" WHERE m.id IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                for mid, blob in rows:
                    # Copied out of the BLOB's buffer: callers may keep or modify the arrays.
                    out[mid] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            return out

        return await self._run(run)

    async def export_in_storage_order(
        self, agent_id: str | None = None
    ) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all) in insertion (rowid) order, read in pages."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        last = 0
        while True:

            def page(after: int = last) -> list[tuple[int, MemoryEntry]]:
                sql = f"SELECT {_COLUMNS} FROM memories m WHERE m.rowid > ?"
                params: list[Any] = [after]
                if agent is not None:
                    sql += " AND m.agent_id = ?"
                    params.append(agent)
                sql += " ORDER BY m.rowid LIMIT ?"
                params.append(_PAGE)
                return [(int(r[0]), _row_entry(r)) for r in self._db.execute(sql, params)]

            rows = await self._run(page)
            for _, entry in rows:
                yield entry
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]
