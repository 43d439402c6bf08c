"""Which embedding model a SQLite store was built with, read without changing anything."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from memvault.errors import MemoryConnectionError

__all__ = ["recorded_sqlite_model"]


def recorded_sqlite_model(path: str | Path) -> str | None:
    """The ``embedding_model`` the store at ``path`` records, or None for a new or empty store.

    Opens the file read-only (``mode=ro``): a missing file stays missing, nothing is written, and
    a file that is not a memvault store (no ``store_meta``/``memories`` table) is None too.

    Raises:
        MemoryConnectionError: the file exists but SQLite cannot read it.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{file.absolute()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        msg = f"cannot read memvault store {file}: {exc}"
        raise MemoryConnectionError(msg) from exc
    with contextlib.closing(conn):
        try:
            tables = {
                str(r[0])
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND name IN ('store_meta', 'memories')"
                )
            }
            if tables != {"store_meta", "memories"}:
                return None
            if conn.execute("SELECT EXISTS (SELECT 1 FROM memories)").fetchone()[0] == 0:
                return None  # an empty store adopts any model (no vectors to mix up)
            row = conn.execute(
                "SELECT value FROM store_meta WHERE key = 'embedding_model'"
            ).fetchone()
        except sqlite3.Error as exc:
            msg = f"cannot read memvault store {file}: {exc}"
            raise MemoryConnectionError(msg) from exc
    return str(row[0]) if row is not None and row[0] else None
