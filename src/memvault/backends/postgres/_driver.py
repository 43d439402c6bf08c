"""The one place the PostgreSQL backend imports its driver (psycopg 3 and psycopg-pool).

They are an optional extra (``memvault[postgres]``): importing them here, before anything else
of the backend, turns their absence into a :class:`MemoryConfigError` naming the extra,
whichever of the backend's modules is imported first. The backend's modules take the driver's
names from here.
"""

from __future__ import annotations

from memvault.errors import MemoryConfigError

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.rows import TupleRow
    from psycopg.types.json import Jsonb
    from psycopg_pool import AsyncConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = (
        'the PostgreSQL backend needs psycopg 3 and psycopg-pool: pip install "memvault[postgres]"'
    )
    raise MemoryConfigError(_msg) from exc

__all__ = [
    "AsyncConnectionPool",
    "Conn",
    "Jsonb",
    "TupleRow",
    "conninfo_to_dict",
    "pg_errors",
    "psycopg",
    "sql",
]

Conn = psycopg.AsyncConnection[TupleRow]
