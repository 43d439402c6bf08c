"""Opening a memvault SQLite file: the checks and pragmas every user of the file shares.

The memory backend and the session store open the same file with their own connections; both
must refuse a directory, a non-SQLite file, or another application's database, and both run in
WAL mode with a busy timeout so several connections (and processes) can share the file.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memvault.errors import (
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
)

__all__ = [
    "SQLITE_MAGIC",
    "check_foreign",
    "immediate",
    "open_sqlite",
    "translate_error",
]

SQLITE_MAGIC = b"SQLite format 3\x00"


def check_foreign(conn: sqlite3.Connection, path: Path, what: str) -> bool:
    """True if the file has no tables yet; raise if it is another application's database."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if tables and "store_meta" not in tables:
        msg = (
            f"cannot open {what} {path}: it is a SQLite database of another "
            "application (no store_meta table); refusing to modify it"
        )
        raise MemoryConnectionError(msg)
    return not tables


@contextlib.contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that takes the write lock up front (``BEGIN IMMEDIATE``): reads and
    the writes that depend on them never interleave with another writer's."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def open_sqlite(
    path: Path,
    *,
    what: str,
    busy_timeout_ms: int,
    synchronous: str = "NORMAL",
    prepare: Callable[[sqlite3.Connection], None],
    create_parent: bool = True,
    wrong_file: type[MemoryError] = MemoryConnectionError,
) -> sqlite3.Connection:
    """Open ``path`` (created if missing) in WAL mode and run ``prepare`` on the connection.

    ``what`` names the opener in error messages ("memvault store", "session store"). Any
    failure closes the connection and raises MemoryConnectionError (memvault errors raised by
    ``prepare`` pass through unchanged).

    ``create_parent=False`` refuses a path whose directory does not exist (MemoryConfigError)
    instead of creating it; ``wrong_file`` is the error for an existing file that is not a
    SQLite database.
    """
    if path.is_dir():
        msg = f"cannot open {what} {path}: it is a directory"
        raise MemoryConnectionError(msg)
    # The header is not peeked at with open(): closing any descriptor of a SQLite file drops
    # every POSIX lock this process holds on it (other connections' included), and another
    # process could then delete the live WAL. SQLite itself reports a foreign file below.
    try:
        if not path.exists():
            if not create_parent and not path.parent.is_dir():
                msg = (
                    f"cannot open {what} {path}: directory {path.parent} does not exist "
                    "(create it first, or check the path)"
                )
                raise MemoryConfigError(msg)
            path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = f"cannot open {what} {path}: {exc.strerror or exc}"
        raise MemoryConnectionError(msg) from exc
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(
            str(path),
            isolation_level=None,
            check_same_thread=False,  # used from worker threads, one at a time
            timeout=busy_timeout_ms / 1000,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        _enable_wal(conn, busy_timeout_ms / 1000)
        conn.execute(f"PRAGMA synchronous = {'FULL' if synchronous == 'FULL' else 'NORMAL'}")
        prepare(conn)
        return conn
    except MemoryError:
        if conn is not None:
            conn.close()
        raise
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        if "not a database" in str(exc):
            msg = (
                f"cannot open {what} {path}: it is not a SQLite database, so not a memvault "
                "store either (check the path); the file was left untouched"
            )
            raise wrong_file(msg) from exc
        msg = f"cannot open {what} {path}: {exc}"
        raise MemoryConnectionError(msg) from exc


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch to WAL, retrying while another connection holds the lock.

    Changing the journal mode can report "database is locked" at once instead of waiting for
    the busy timeout (two connections creating the same new file), so it is retried here.
    """
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def translate_error(exc: sqlite3.Error, *, write: bool, what: str, path: Path) -> MemoryError:
    """The memvault error for a SQLite failure: unusable file, failed write, or failed read.

    ``what`` names the user in the message ("sqlite store", "session store").
    """
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and ("not a database" in text or "malformed" in text):
        return MemoryConnectionError(f"{what} {path} is unusable: {text}")
    if isinstance(exc, sqlite3.DatabaseError) and (
        "disk is full" in text or "readonly" in text or "disk I/O" in text
    ):
        # The disk is full, read-only or failing: nothing was written (the transaction rolled
        # back), and the same connection works again once the fault is gone. Unavailable, not a
        # bad request: the server answers 503 with Retry-After.
        if write:
            msg = (
                f"{what} {path} cannot take writes now: {text} (disk full, read-only or failing"
                " storage); nothing was written, retry once the fault is fixed"
            )
        else:
            msg = f"{what} {path} cannot be read now: {text} (failing storage?)"
        return MemoryConnectionError(msg)
    if isinstance(exc, sqlite3.OperationalError) and "database is locked" in text:
        # Another writer held the lock past the busy timeout (a slow disk stretches every
        # commit): nothing was written and a retry later succeeds, so the store is busy, not
        # broken (503 with Retry-After from the server, not 500).
        verb = "write to" if write else "read from"
        msg = (
            f"{what} {path} is busy: could not {verb} it within the busy timeout ({text}); "
            "nothing was written, retry shortly"
        )
        return MemoryConnectionError(msg)
    verb = "write to" if write else "read from"
    kind = what.removesuffix(" store")
    error = MemoryStoreError if write else MemoryRetrievalError
    return error(f"{kind} {verb} {path} failed: {text}")
