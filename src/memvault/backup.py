"""Online, consistent backups of a store, and restoring them (``memvault backup`` /
``memvault restore-backup``).

* **SQLite**: the SQLite online backup API copies the database page by page from inside one
  read transaction, so the copy is the store as of one instant even while other connections
  (a running ``memvault serve``) keep writing: WAL mode lets them commit meanwhile without
  disturbing the reader's snapshot. The copy goes to a temporary file beside the target, is
  checked (``PRAGMA integrity_check``) and synced, and only then renamed into place: a crash
  midway never leaves a half-written file under the backup's name. The HNSW graphs beside the
  store (``<db>.ann/``) are derived data and not copied; they are rebuilt when needed.
* **PostgreSQL**: every table of the store's schema (the tenant) is exported with ``COPY ...
  TO STDOUT`` inside one ``REPEATABLE READ READ ONLY`` transaction (one snapshot for all
  tables) to a gzip file: a JSON header (schema version, embedding model, table definitions),
  then each table's rows in COPY text format, then a trailer with the row counts (a truncated
  file is refused on restore). ``pg_dump`` is not needed.

Restoring writes a new store: the target must not exist (SQLite) or be an empty schema
(PostgreSQL) unless ``replace=True``. A backup restores into the same kind of store it came
from; between kinds, use ``memvault migrate``.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict

from memvault.errors import (
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConnectionError,
    MemoryStoreError,
)

__all__ = [
    "BACKUP_FORMAT",
    "BackupReport",
    "Progress",
    "backup_store",
    "restore_backup",
]

BACKUP_FORMAT = "memvault-backup"
"""The ``format`` field of a PostgreSQL backup file's header."""
_VERSION = 1
_PAGES_PER_STEP = 1024
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as a backup or restore advances."""


class BackupReport(BaseModel):
    """What a backup or restore did."""

    model_config = ConfigDict(frozen=True)

    kind: str
    """``sqlite`` or ``postgresql``."""
    source: str
    target: str
    memories: int
    """Memory rows in the copy (live, superseded and shared)."""
    tables: dict[str, int]
    """Rows per table (PostgreSQL; SQLite: the main tables)."""
    bytes: int
    """Size of the backup file."""
    seconds: float

    def summary(self) -> str:
        """One line for people."""
        return (
            f"{self.kind} {self.source} -> {self.target}: {self.memories} memories, "
            f"{len(self.tables)} tables, {self.bytes} bytes in {self.seconds:.1f}s"
        )


def _noop(stage: str, done: int, total: int) -> None:
    return None


def _kind(url: str) -> tuple[str, str]:
    from memvault.backends.factory import parse_url

    if url.strip().startswith(("http://", "https://")):
        msg = f"backups are made where the store lives, not through a server ({url})"
        raise MemoryCapabilityError(msg)
    kind, target = parse_url(url)
    if kind not in ("sqlite", "postgresql"):
        msg = (
            f"memvault backup supports SQLite and PostgreSQL stores, not {kind} "
            "(use memvault export, or the store's own snapshots)"
        )
        raise MemoryCapabilityError(msg)
    return kind, target


def backup_store(url: str, target: str | Path, *, progress: Progress | None = None) -> BackupReport:
    """Write a consistent copy of the store at ``url`` to ``target`` while it stays in use.

    Raises:
        MemoryCapabilityError: the store is not SQLite or PostgreSQL.
        MemoryConfigError: the store does not exist, or ``target`` exists already.
        MemoryConnectionError: the store cannot be read (unreachable, corrupt).
        MemoryStoreError: the backup file cannot be written (disk full, read-only).
    """
    kind, where = _kind(url)
    out = Path(target).expanduser()
    if out.exists():
        msg = f"backup file {out} exists already: choose a new name (backups are never overwritten)"
        raise MemoryConfigError(msg)
    if not out.parent.is_dir():
        msg = f"directory {out.parent} does not exist"
        raise MemoryConfigError(msg)
    start = time.monotonic()
    report = progress or _noop
    if kind == "sqlite":
        memories, tables = _backup_sqlite(Path(where).expanduser(), out, report)
    else:
        memories, tables = _backup_postgres(where, out, report)
    return BackupReport(
        kind=kind,
        source=_shown(url),
        target=str(out),
        memories=memories,
        tables=tables,
        bytes=out.stat().st_size,
        seconds=round(time.monotonic() - start, 3),
    )


def restore_backup(
    source: str | Path, url: str, *, replace: bool = False, progress: Progress | None = None
) -> BackupReport:
    """Restore the backup file ``source`` as the store at ``url``.

    Raises:
        MemoryConfigError: no such backup file, not a memvault backup of this kind of store,
            a truncated backup, or a target that holds a store already (without ``replace``).
        MemoryCapabilityError: the store is not SQLite or PostgreSQL.
    """
    kind, where = _kind(url)
    src = Path(source).expanduser()
    if not src.is_file():
        msg = f"backup file {src} does not exist"
        raise MemoryConfigError(msg)
    start = time.monotonic()
    report = progress or _noop
    if kind == "sqlite":
        memories, tables = _restore_sqlite(src, Path(where).expanduser(), replace, report)
    else:
        memories, tables = _restore_postgres(src, where, replace, report)
    return BackupReport(
        kind=kind,
        source=str(src),
        target=_shown(url),
        memories=memories,
        tables=tables,
        bytes=src.stat().st_size,
        seconds=round(time.monotonic() - start, 3),
    )


def _shown(url: str) -> str:
    if url.strip().startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from memvault.backends.postgres._dsn import parse_dsn

        return parse_dsn(url).location
    return url


# -- SQLite ----------------------------------------------------------------------------------------


def _sqlite_error(exc: sqlite3.Error, what: str) -> MemoryConnectionError | MemoryStoreError:
    text = str(exc)
    if "full" in text or "readonly" in text or "read-only" in text or "disk I/O" in text:
        return MemoryStoreError(f"{what} failed: {text}")
    return MemoryConnectionError(f"{what} failed: {text}")


def _sqlite_counts(conn: sqlite3.Connection) -> dict[str, int]:
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    wanted = ("memories", "memory_vectors", "audit", "archive", "store_meta")
    return {
        t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
        for t in wanted
        if t in names
    }


def _check_sqlite_store(conn: sqlite3.Connection, path: Path) -> None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "store_meta" not in tables or "memories" not in tables:
        msg = f"{path} is not a memvault store (no store_meta/memories tables)"
        raise MemoryConfigError(msg)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_sqlite(
    src: sqlite3.Connection, dst_path: Path, stage: str, progress: Progress
) -> dict[str, int]:
    """Copy the database of ``src`` to ``dst_path`` (a new file), checked and synced."""
    tmp = dst_path.with_name(f".{dst_path.name}.{os.getpid()}.part")
    tmp.unlink(missing_ok=True)
    try:
        dst = sqlite3.connect(tmp)
        try:
            # One read transaction around the whole copy: every page comes from one snapshot.
            src.execute("BEGIN")
            src.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            try:
                src.backup(
                    dst,
                    pages=_PAGES_PER_STEP,
                    progress=lambda _status, remaining, total: progress(
                        stage, total - remaining, total
                    ),
                )
            finally:
                src.execute("COMMIT")
            # A backup is one self-contained file: no WAL beside it.
            dst.execute("PRAGMA journal_mode = DELETE")
            status = dst.execute("PRAGMA integrity_check").fetchone()[0]
            if status != "ok":
                msg = f"the copy failed its integrity check: {status}"
                raise MemoryStoreError(msg)
            counts = _sqlite_counts(dst)
        finally:
            dst.close()
        _fsync(tmp)
        os.replace(tmp, dst_path)
        with contextlib.suppress(OSError):
            _fsync(dst_path.parent)
        return counts
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, f"writing {dst_path}") from exc
    except OSError as exc:
        msg = f"writing {dst_path} failed: {exc}"
        raise MemoryStoreError(msg) from exc
    finally:
        tmp.unlink(missing_ok=True)


def _backup_sqlite(path: Path, out: Path, progress: Progress) -> tuple[int, dict[str, int]]:
    if not path.is_file():
        msg = f"store {path} does not exist"
        raise MemoryConfigError(msg)
    try:
        src = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise _sqlite_error(exc, f"opening {path}") from exc
    try:
        try:
            src.execute("PRAGMA busy_timeout = 10000")
            _check_sqlite_store(src, path)
        except sqlite3.Error as exc:
            msg = f"cannot read store {path}: {exc}"
            raise MemoryConnectionError(msg) from exc
        counts = _copy_sqlite(src, out, "backup", progress)
    finally:
        src.close()
    return counts.get("memories", 0), counts


def _restore_sqlite(
    src_path: Path, path: Path, replace: bool, progress: Progress
) -> tuple[int, dict[str, int]]:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{src_path}?mode=ro", uri=True)) as probe:
            _check_sqlite_store(probe, src_path)
            status = probe.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.Error as exc:
        msg = f"{src_path} is not a SQLite memvault backup: {exc}"
        raise MemoryConfigError(msg) from exc
    if status != "ok":
        msg = f"backup {src_path} is damaged: {status}"
        raise MemoryConfigError(msg)
    if path.exists() and not replace:
        msg = f"store {path} exists already: restore to a new path, or pass --replace"
        raise MemoryConfigError(msg)
    if not path.parent.is_dir():
        msg = f"directory {path.parent} does not exist"
        raise MemoryConfigError(msg)
    src = sqlite3.connect(f"file:{src_path}?mode=ro", uri=True, isolation_level=None)
    try:
        if path.exists():
            # Through the backup API into the live file: open connections of other processes
            # see the restored store at their next transaction, never a half-copied file.
            try:
                dst = sqlite3.connect(path, isolation_level=None)
                try:
                    dst.execute("PRAGMA busy_timeout = 10000")
                    src.backup(
                        dst,
                        pages=_PAGES_PER_STEP,
                        progress=lambda _s, remaining, total: progress(
                            "restore", total - remaining, total
                        ),
                    )
                    dst.execute("PRAGMA journal_mode = WAL")
                    counts = _sqlite_counts(dst)
                finally:
                    dst.close()
            except sqlite3.Error as exc:
                raise _sqlite_error(exc, f"restoring into {path}") from exc
        else:
            counts = _copy_sqlite(src, path, "restore", progress)
    finally:
        src.close()
    # The HNSW graphs beside the old file describe other rows: drop them (they are rebuilt).
    import shutil

    shutil.rmtree(path.with_name(path.name + ".ann"), ignore_errors=True)
    return counts.get("memories", 0), counts


# -- PostgreSQL ------------------------------------------------------------------------------------


def _pg_connect(url: str) -> tuple[Any, str]:
    import psycopg

    from memvault.backends.postgres._dsn import parse_dsn

    dsn = parse_dsn(url)
    schema = dsn.schema or "public"
    try:
        conn = psycopg.connect(dsn.conninfo, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        msg = f"cannot connect to PostgreSQL store {dsn.location}: {exc}"
        raise MemoryConnectionError(msg) from exc
    return conn, schema


def _pg_tables(conn: Any, schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY c.relname",
        [schema],
    ).fetchall()
    return [str(r[0]) for r in rows]


def _pg_table_def(conn: Any, schema: str, table: str) -> dict[str, Any]:
    """Columns (name, type, not null, identity, generated), primary key and index DDL."""
    oid = conn.execute(
        "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = %s",
        [schema, table],
    ).fetchone()[0]
    cols = conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod), attnotnull, attidentity, attgenerated"
        " FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped"
        " ORDER BY attnum",
        [oid],
    ).fetchall()
    pk = conn.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a"
        " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
        " WHERE i.indrelid = %s AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)",
        [oid],
    ).fetchall()
    indexes = conn.execute(
        "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s AND NOT indisprimary",
        [oid],
    ).fetchall()
    return {
        "name": table,
        "columns": [
            {
                "name": c[0],
                "type": c[1],
                "not_null": bool(c[2]),
                "identity": c[3] or "",
                "generated": c[4] or "",
            }
            for c in cols
        ],
        "primary_key": [p[0] for p in pk],
        "indexes": [i[0] for i in indexes],
    }


def _copyable(table: dict[str, Any]) -> list[str]:
    return [c["name"] for c in table["columns"] if not c["generated"]]


def _backup_postgres(url: str, out: Path, progress: Progress) -> tuple[int, dict[str, int]]:
    import psycopg
    from psycopg import sql

    conn, schema = _pg_connect(url)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.part")
    counts: dict[str, int] = {}
    try:
        with conn:
            conn.autocommit = False
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            # Unqualified names in the definitions: they are replayed into another schema.
            conn.execute(
                sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema))
            )
            tables = _pg_tables(conn, schema)
            if "memories" not in tables or "store_meta" not in tables:
                msg = f"schema {schema!r} holds no memvault store"
                raise MemoryConfigError(msg)
            defs = [_pg_table_def(conn, schema, t) for t in tables]
            meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
            header = {
                "format": BACKUP_FORMAT,
                "version": _VERSION,
                "kind": "postgresql",
                "schema": schema,
                "created_at": datetime.now(UTC).isoformat(),
                "store_meta": meta,
                "tables": defs,
            }
            with gzip.open(tmp, "wt", encoding="utf-8", newline="\n") as f:
                f.write(json.dumps(header) + "\n")
                for i, table in enumerate(defs):
                    progress("backup", i, len(defs))
                    cols = _copyable(table)
                    f.write(f"\\table {table['name']}\n")
                    query = sql.SQL("COPY {}.{} ({}) TO STDOUT").format(
                        sql.Identifier(schema),
                        sql.Identifier(table["name"]),
                        sql.SQL(", ").join(sql.Identifier(c) for c in cols),
                    )
                    rows = 0
                    with conn.cursor().copy(query) as copy:
                        pending = ""
                        for chunk in copy:
                            text = pending + bytes(chunk).decode("utf-8")
                            lines = text.split("\n")
                            pending = lines.pop()
                            rows += len(lines)
                            for line in lines:
                                f.write(line + "\n")
                        if pending:
                            rows += 1
                            f.write(pending + "\n")
                    f.write("\\.\n")
                    counts[table["name"]] = rows
                progress("backup", len(defs), len(defs))
                f.write("\\end " + json.dumps({"tables": counts}) + "\n")
            conn.rollback()
        _fsync(tmp)
        os.replace(tmp, out)
    except psycopg.Error as exc:
        msg = f"backup of PostgreSQL schema {schema!r} failed: {exc}"
        raise MemoryConnectionError(msg) from exc
    except OSError as exc:
        msg = f"writing {out} failed: {exc}"
        raise MemoryStoreError(msg) from exc
    finally:
        tmp.unlink(missing_ok=True)
    return counts.get("memories", 0), counts


def _read_backup(src: Path) -> tuple[dict[str, Any], Iterator[tuple[str, list[str]]], IO[str]]:
    try:
        f = gzip.open(src, "rt", encoding="utf-8", newline="\n")  # noqa: SIM115 - returned
        header = json.loads(f.readline())
    except (OSError, ValueError, EOFError) as exc:
        msg = f"{src} is not a memvault PostgreSQL backup: {exc}"
        raise MemoryConfigError(msg) from exc
    if not isinstance(header, dict) or header.get("format") != BACKUP_FORMAT:
        f.close()
        msg = f"{src} is not a memvault PostgreSQL backup"
        raise MemoryConfigError(msg)

    def sections() -> Iterator[tuple[str, list[str]]]:
        try:
            for line in f:
                if line.startswith("\\table "):
                    name = line[len("\\table ") :].rstrip("\n")
                    rows: list[str] = []
                    for row in f:
                        if row == "\\.\n":
                            break
                        rows.append(row)
                    else:
                        msg = f"backup {src} is truncated (in table {name})"
                        raise MemoryConfigError(msg)
                    yield name, rows
                elif line.startswith("\\end "):
                    trailer = json.loads(line[len("\\end ") :])
                    yield "\\end", [json.dumps(trailer)]
                    return
            msg = f"backup {src} is truncated (no end marker)"
            raise MemoryConfigError(msg)
        except (OSError, EOFError) as exc:
            msg = f"backup {src} is damaged: {exc}"
            raise MemoryConfigError(msg) from exc

    return header, sections(), f


def _create_table(conn: Any, schema: str, table: dict[str, Any]) -> None:
    from psycopg import sql

    parts: list[sql.Composable] = []
    for c in table["columns"]:
        piece = sql.SQL("{} {}").format(sql.Identifier(c["name"]), sql.SQL(c["type"]))
        if c["identity"] == "a":
            piece = sql.SQL("{} GENERATED ALWAYS AS IDENTITY").format(piece)
        elif c["identity"] == "d":
            piece = sql.SQL("{} GENERATED BY DEFAULT AS IDENTITY").format(piece)
        if c["not_null"]:
            piece = sql.SQL("{} NOT NULL").format(piece)
        parts.append(piece)
    if table["primary_key"]:
        parts.append(
            sql.SQL("PRIMARY KEY ({})").format(
                sql.SQL(", ").join(sql.Identifier(k) for k in table["primary_key"])
            )
        )
    conn.execute(
        sql.SQL("CREATE TABLE {}.{} ({})").format(
            sql.Identifier(schema), sql.Identifier(table["name"]), sql.SQL(", ").join(parts)
        )
    )
    for ddl in table["indexes"]:
        conn.execute(ddl)  # unqualified: created in the schema first on the search path


def _restore_postgres(
    src: Path, url: str, replace: bool, progress: Progress
) -> tuple[int, dict[str, int]]:
    import asyncio

    import psycopg
    from psycopg import sql

    from memvault.backends.postgres import PostgresBackend
    from memvault.embeddings.hashing import HashingEmbedder

    header, sections, f = _read_backup(src)
    with f:
        defs = {t["name"]: t for t in header["tables"]}
        meta = header.get("store_meta", {})
        conn, schema = _pg_connect(url)
        with conn:
            existing = _pg_tables(conn, schema)
            if "memories" in existing:
                has_rows = conn.execute(
                    sql.SQL("SELECT EXISTS (SELECT 1 FROM {}.memories)").format(
                        sql.Identifier(schema)
                    )
                ).fetchone()[0]
                if has_rows and not replace:
                    msg = (
                        f"schema {schema!r} holds a store already: restore into a new schema "
                        "(?schema=NAME in the URL), or pass --replace"
                    )
                    raise MemoryConfigError(msg)
            if replace or existing:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )
        # memvault's own tables come from the backend's migrations (indexes, HNSW included),
        # with the backed-up model's dimension; the rows follow.
        dim = int(meta.get("dimension", "384"))
        store = PostgresBackend(url, HashingEmbedder(dim), schema=schema)

        async def create() -> None:
            await store.connect()
            await store.disconnect()

        asyncio.run(create())
        conn, schema = _pg_connect(url)
        counts: dict[str, int] = {}
        try:
            with conn:
                conn.autocommit = False
                conn.execute(
                    sql.SQL("SET LOCAL search_path TO {}, public").format(sql.Identifier(schema))
                )
                present = set(_pg_tables(conn, schema))
                for name in present & set(defs):
                    conn.execute(
                        sql.SQL("TRUNCATE {}.{}").format(
                            sql.Identifier(schema), sql.Identifier(name)
                        )
                    )
                trailer: dict[str, Any] | None = None
                for done, (name, rows) in enumerate(sections, start=1):
                    if name == "\\end":
                        trailer = json.loads(rows[0])
                        break
                    table = defs[name]
                    if name not in present:
                        _create_table(conn, schema, table)
                    cols = _copyable(table)
                    query = sql.SQL("COPY {}.{} ({}) FROM STDIN").format(
                        sql.Identifier(schema),
                        sql.Identifier(name),
                        sql.SQL(", ").join(sql.Identifier(c) for c in cols),
                    )
                    with conn.cursor().copy(query) as copy:
                        for row in rows:
                            copy.write(row.encode("utf-8"))
                    counts[name] = len(rows)
                    for c in table["columns"]:
                        if c["identity"]:
                            conn.execute(
                                sql.SQL(
                                    "SELECT setval(pg_get_serial_sequence({}, {}),"
                                    " COALESCE((SELECT max({}) FROM {}.{}), 0) + 1, false)"
                                ).format(
                                    sql.Literal(f'"{schema}"."{name}"'),
                                    sql.Literal(c["name"]),
                                    sql.Identifier(c["name"]),
                                    sql.Identifier(schema),
                                    sql.Identifier(name),
                                )
                            )
                    progress("restore", done, len(defs))
                if trailer is None or trailer.get("tables") != counts:
                    msg = f"backup {src} is incomplete: row counts do not match its trailer"
                    raise MemoryConfigError(msg)
                conn.commit()
        except psycopg.Error as exc:
            msg = f"restoring into PostgreSQL schema {schema!r} failed: {exc}"
            raise MemoryStoreError(msg) from exc
    return counts.get("memories", 0), counts
