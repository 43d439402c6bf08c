"""``memvault check`` and ``memvault repair``: is the store whole, and rebuild what is derived.

The base rows (``memories``, ``audit``, ``archive``, ``store_meta``) are the truth; everything
else is derived from them and can be rebuilt: SQLite's FTS5 index, the stored vectors (they are
the embedding of each row's text), the HNSW graphs beside the file (``<db>.ann/``) and the
in-process matrices; PostgreSQL's lexical columns (``lexemes``, ``term_freqs``, ``doc_len``), its
statistics tables (``term_stats``, ``store_stats``, ``agent_stats``) and its HNSW index.

:func:`check_store` reports every disagreement as a :class:`Finding`:

* ``integrity``: SQLite's ``PRAGMA integrity_check`` is not ``ok`` (the file itself is damaged);
* ``fts_missing`` / ``fts_orphan`` / ``fts_stale``: a memory without its full-text row, a
  full-text row without its memory, or one whose text or scope key is not the memory's;
* ``vector_missing`` / ``vector_bad``: a memory without a vector, or one of the wrong size or
  with NaN/infinite values;
* ``lexical_stale`` / ``stats_stale`` (PostgreSQL): lexical columns or statistics that are not
  what the rows give;
* ``archived_and_live``: an id both live and archived (an interrupted ``restore``);
* ``audit_missing``: an archive row or a shared entry without its audit record;
* ``model``: the store was written by another embedding model (id or dimension) than the one
  configured.

:func:`repair_store` rebuilds every derived structure from the base rows (re-embedding rows
whose vector is missing or broken) and finishes interrupted restores; it never drops a memory.
``check`` after ``repair`` is clean unless the file itself is damaged (``integrity``): then
restore a backup (``memvault restore-backup``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from memvault.errors import MemoryCapabilityError, MemoryConfigError, MemoryConnectionError
from memvault.protocols import Embedder

__all__ = [
    "CheckReport",
    "Finding",
    "Progress",
    "RepairReport",
    "check_store",
    "repair_store",
]

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``."""

_PAGE = 500


class Finding(BaseModel):
    """One problem :func:`check_store` found."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    count: int = 1
    examples: tuple[str, ...] = ()
    """Up to five affected ids (memory ids, archive ids)."""


class CheckReport(BaseModel):
    """What :func:`check_store` looked at and found."""

    model_config = ConfigDict(frozen=True)

    kind: str
    location: str
    checked: dict[str, int]
    """How many of each thing were looked at (memories, audit records ...)."""
    findings: tuple[Finding, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        """True when nothing was found."""
        return not self.findings

    def summary(self) -> str:
        """Lines for people: what was checked, then one line per finding."""
        counted = ", ".join(f"{v} {k}" for k, v in self.checked.items())
        head = f"{self.kind} {self.location}: checked {counted} in {self.seconds:.1f}s"
        if self.ok:
            return f"{head}: no problems found"
        lines = [f"{head}: {len(self.findings)} problem(s)"]
        for f in self.findings:
            more = f" (e.g. {', '.join(f.examples)})" if f.examples else ""
            lines.append(f"  {f.code}: {f.message} [{f.count}]{more}")
        return "\n".join(lines)


class RepairReport(BaseModel):
    """What :func:`repair_store` rebuilt."""

    model_config = ConfigDict(frozen=True)

    kind: str
    location: str
    rebuilt: dict[str, int]
    seconds: float

    def summary(self) -> str:
        """One line for people."""
        done = ", ".join(f"{k}: {v}" for k, v in self.rebuilt.items())
        return f"{self.kind} {self.location}: rebuilt {done} in {self.seconds:.1f}s"


def _noop(stage: str, done: int, total: int) -> None:
    return None


def _kind(url: str) -> tuple[str, str]:
    from memvault.backends.factory import parse_url

    if url.strip().startswith(("http://", "https://")):
        msg = f"check and repair run where the store lives, not through a server ({url})"
        raise MemoryCapabilityError(msg)
    kind, target = parse_url(url)
    if kind not in ("sqlite", "postgresql"):
        msg = f"memvault check/repair support SQLite and PostgreSQL stores, not {kind}"
        raise MemoryCapabilityError(msg)
    if kind == "sqlite" and not Path(target).expanduser().is_file():
        msg = f"store {target} does not exist"
        raise MemoryConfigError(msg)
    return kind, target


def check_store(
    url: str, *, embedder: Embedder | None = None, progress: Progress | None = None
) -> CheckReport:
    """Check the store at ``url`` (read-only); ``embedder`` is the configured model.

    Raises:
        MemoryCapabilityError: not a SQLite or PostgreSQL store.
        MemoryConfigError: the SQLite file does not exist.
        MemoryConnectionError: the store cannot be opened at all.
    """
    kind, target = _kind(url)
    start = time.monotonic()
    report = progress or _noop
    if kind == "sqlite":
        checked, findings = _check_sqlite(Path(target).expanduser(), embedder, report)
    else:
        checked, findings = asyncio.run(_check_postgres(target, embedder, report))
    return CheckReport(
        kind=kind,
        location=_shown(url),
        checked=checked,
        findings=tuple(findings),
        seconds=round(time.monotonic() - start, 3),
    )


def repair_store(url: str, embedder: Embedder, *, progress: Progress | None = None) -> RepairReport:
    """Rebuild every derived structure of the store at ``url`` from its base rows.

    ``embedder`` must be the store's model: rows without a usable vector are re-embedded.

    Raises:
        MemoryCapabilityError: not a SQLite or PostgreSQL store.
        EmbeddingModelChangedError / MemoryConfigError: ``embedder`` is not the store's model.
        MemoryConnectionError: the store cannot be opened (a damaged file: restore a backup).
    """
    kind, target = _kind(url)
    start = time.monotonic()
    report = progress or _noop
    if kind == "sqlite":
        rebuilt = _repair_sqlite(Path(target).expanduser(), embedder, report)
    else:
        rebuilt = asyncio.run(_repair_postgres(target, embedder, report))
    return RepairReport(
        kind=kind,
        location=_shown(url),
        rebuilt=rebuilt,
        seconds=round(time.monotonic() - start, 3),
    )


def _shown(url: str) -> str:
    if url.strip().startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from memvault.backends.postgres._dsn import parse_dsn

        return parse_dsn(url).location
    return url


class _Collector:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, code: str, message: str, ids: list[str]) -> None:
        if ids:
            self.findings.append(
                Finding(code=code, message=message, count=len(ids), examples=tuple(ids[:5]))
            )


def _model_findings(meta: dict[str, str], embedder: Embedder | None, out: _Collector) -> None:
    if embedder is None:
        return
    stored, dim = meta.get("embedding_model"), meta.get("dimension")
    if stored is not None and stored != embedder.model_id:
        out.add(
            "model",
            f"the store holds vectors of {stored!r}, the configuration uses "
            f"{embedder.model_id!r} (run memvault reindex, or configure {stored!r})",
            [stored],
        )
    elif dim is not None and int(dim) != embedder.dimension:
        out.add(
            "model",
            f"the store's vectors have {dim} dimensions, the model gives {embedder.dimension}",
            [dim],
        )


# -- SQLite ----------------------------------------------------------------------------------------


def _sqlite_rows(conn: sqlite3.Connection, sql: str) -> Iterator[Any]:
    cur = conn.execute(sql)
    while True:
        rows = cur.fetchmany(_PAGE)
        if not rows:
            return
        yield from rows


def _expected_fts(row: Any) -> tuple[str, str]:
    from memvault.backends._base import lexical_text
    from memvault.backends.sqlite._rows import _fts_scope_key, _row_entry
    from memvault.retrieval.text import index_text

    entry = _row_entry(row)
    return index_text(lexical_text(entry)), _fts_scope_key(entry.agent_id, entry.scope)


def _check_sqlite(
    path: Path, embedder: Embedder | None, progress: Progress
) -> tuple[dict[str, int], list[Finding]]:
    from memvault.backends.sqlite._rows import _COLUMNS

    out = _Collector()
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        msg = f"cannot open store {path}: {exc}"
        raise MemoryConnectionError(msg) from exc
    try:
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            status = [r[0] for r in conn.execute("PRAGMA integrity_check(20)")]
        except sqlite3.DatabaseError as exc:
            return {"files": 1}, [
                Finding(code="integrity", message=f"not a usable SQLite database: {exc}")
            ]
        if status != ["ok"]:
            out.add("integrity", "PRAGMA integrity_check: " + "; ".join(status[:3]), status)
        try:
            conn.execute("BEGIN")  # one snapshot for every check below
            meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
            total = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            out.add("integrity", f"the base tables cannot be read: {exc}", [str(path)])
            return {"memories": 0}, out.findings
        _model_findings(meta, embedder, out)
        dim = int(meta.get("dimension", embedder.dimension if embedder else 0) or 0)
        fts = {
            int(r[0]): (r[1], r[2])
            for r in conn.execute("SELECT rowid, body, scope_key FROM memories_fts")
        }
        vectors: dict[int, bytes] = dict(
            conn.execute("SELECT memory_rowid, vector FROM memory_vectors").fetchall()
        )
        missing: list[str] = []
        stale: list[str] = []
        no_vec: list[str] = []
        bad_vec: list[str] = []
        seen: set[int] = set()
        for i, row in enumerate(_sqlite_rows(conn, f"SELECT {_COLUMNS} FROM memories m")):
            rowid, mid = int(row[0]), str(row[1])
            seen.add(rowid)
            got = fts.get(rowid)
            if got is None:
                missing.append(mid)
            elif got != _expected_fts(row):
                stale.append(mid)
            blob = vectors.get(rowid)
            if blob is None:
                no_vec.append(mid)
            else:
                vec = np.frombuffer(blob, dtype="<f4") if len(blob) % 4 == 0 else None
                if vec is None or (dim and vec.shape != (dim,)) or not np.isfinite(vec).all():
                    bad_vec.append(mid)
            if i % _PAGE == 0:
                progress("check memories", i, total)
        progress("check memories", total, total)
        out.add("fts_missing", "memories without their full-text row", missing)
        out.add(
            "fts_orphan",
            "full-text rows without a memory",
            [str(r) for r in sorted(set(fts) - seen)],
        )
        out.add("fts_stale", "full-text rows whose text is not the memory's", stale)
        out.add("vector_missing", "memories without a vector", no_vec)
        out.add("vector_bad", f"vectors that are not {dim} finite floats", bad_vec)
        both = [
            r[0]
            for r in conn.execute(
                "SELECT a.memory_id FROM archive a JOIN memories m ON m.id = a.memory_id"
            )
        ]
        out.add(
            "archived_and_live",
            "ids both live and archived (an interrupted restore; repair finishes it)",
            both,
        )
        unaudited_archive = [
            r[0]
            for r in conn.execute(
                "SELECT a.id FROM archive a WHERE NOT EXISTS (SELECT 1 FROM audit u"
                " WHERE u.memory_id = a.memory_id AND json_extract(u.details, '$.archive_id')"
                " = a.id)"
            )
        ]
        out.add("audit_missing", "archive rows without their audit record", unaudited_archive)
        unaudited_shared = [
            r[0]
            for r in conn.execute(
                "SELECT m.id FROM memories m WHERE m.scope = 'shared' AND NOT EXISTS"
                " (SELECT 1 FROM audit u WHERE u.memory_id = m.id AND u.action = 'shared.publish')"
            )
        ]
        out.add("audit_missing", "shared entries without their publish record", unaudited_shared)
        audits = conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
        archived = conn.execute("SELECT COUNT(*) FROM archive").fetchone()[0]
        conn.execute("COMMIT")
    finally:
        conn.close()
    checked = {"memories": total, "audit records": audits, "archive rows": archived}
    return checked, out.findings


def _repair_sqlite(path: Path, embedder: Embedder, progress: Progress) -> dict[str, int]:
    from memvault.backends._base import embedding_text
    from memvault.backends.sqlite import SQLiteBackend
    from memvault.backends.sqlite._rows import _COLUMNS, _row_entry

    # Opening through the backend checks the file and the model (a wrong model is refused).
    store = SQLiteBackend(path, embedder)

    async def opened() -> None:
        await store.connect()
        await store.disconnect()

    asyncio.run(opened())
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            dim = embedder.dimension
            total = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            conn.execute("DELETE FROM memories_fts")
            fts = 0
            needs_vector: list[tuple[int, Any]] = []
            vectors = dict(conn.execute("SELECT memory_rowid, vector FROM memory_vectors"))
            for i, row in enumerate(_sqlite_rows(conn, f"SELECT {_COLUMNS} FROM memories m")):
                body, key = _expected_fts(row)
                conn.execute(
                    "INSERT INTO memories_fts (rowid, body, scope_key) VALUES (?, ?, ?)",
                    (int(row[0]), body, key),
                )
                fts += 1
                blob = vectors.get(int(row[0]))
                vec = None if blob is None or len(blob) != 4 * dim else np.frombuffer(blob, "<f4")
                if vec is None or not np.isfinite(vec).all():
                    needs_vector.append((int(row[0]), _row_entry(row)))
                if i % _PAGE == 0:
                    progress("full-text index", i, total)
            progress("full-text index", total, total)
            for start in range(0, len(needs_vector), 64):
                chunk = needs_vector[start : start + 64]
                fresh = np.asarray(
                    embedder.embed_documents([embedding_text(e) for _, e in chunk]),
                    dtype="<f4",
                )
                conn.executemany(
                    "INSERT INTO memory_vectors (memory_rowid, vector) VALUES (?, ?)"
                    " ON CONFLICT (memory_rowid) DO UPDATE SET vector = excluded.vector",
                    [(rowid, fresh[j].tobytes()) for j, (rowid, _) in enumerate(chunk)],
                )
                progress("vectors", start + len(chunk), len(needs_vector))
            # An interrupted restore left the entry live and archived: finish it.
            finished = conn.execute(
                "DELETE FROM archive WHERE memory_id IN (SELECT id FROM memories)"
            ).rowcount
            conn.execute(
                "INSERT INTO store_meta (key, value) VALUES ('embedding_model', ?), "
                "('dimension', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (embedder.model_id, str(dim)),
            )
            # Other processes reload their matrices and term statistics.
            conn.execute(
                "UPDATE store_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
    finally:
        conn.close()
    ann = path.with_name(path.name + ".ann")
    graphs = len(list(ann.glob("*.usearch"))) if ann.is_dir() else 0
    shutil.rmtree(ann, ignore_errors=True)  # rebuilt from the vectors when next needed
    return {
        "full-text rows": fts,
        "vectors re-embedded": len(needs_vector),
        "ANN graphs dropped": graphs,
        "restores finished": finished,
    }


# -- PostgreSQL ------------------------------------------------------------------------------------


async def _pg(url: str, embedder: Embedder | None) -> Any:
    from memvault.backends.postgres import PostgresBackend
    from memvault.embeddings.hashing import HashingEmbedder

    store = PostgresBackend(url, embedder or HashingEmbedder(384), pool_max=2)
    if embedder is None:
        # Check without a model: only the rows are needed, the model check is skipped.
        store._check_meta = _skip_meta  # type: ignore[method-assign]
    await store.connect()
    return store


async def _skip_meta(conn: Any) -> None:
    return None


async def _check_postgres(
    url: str, embedder: Embedder | None, progress: Progress
) -> tuple[dict[str, int], list[Finding]]:
    from memvault.backends._base import lexical_text
    from memvault.backends.postgres._rows import _COLUMNS, _analysed, _row_entry

    out = _Collector()
    store = await _pg(url, embedder)
    try:
        async with store._connection("check") as conn, conn.transaction():
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cur = await conn.execute("SELECT key, value FROM store_meta")
            meta = {str(k): str(v) for k, v in await cur.fetchall()}
            _model_findings(meta, embedder, out)
            cur = await conn.execute("SELECT COUNT(*) FROM memories")
            total = int((await cur.fetchone())[0])
            stale: list[str] = []
            df: dict[str, int] = {}
            n = total_len = shared_n = 0
            per_agent: dict[str, int] = {}
            cur = conn.cursor(name="memvault_check")
            await cur.execute(
                f"SELECT {_COLUMNS}, m.term_freqs, m.doc_len FROM memories m ORDER BY m.rowid"
            )
            i = 0
            while rows := await cur.fetchmany(_PAGE):
                for row in rows:
                    entry = _row_entry(row[:-2])
                    freqs, length = _analysed(lexical_text(entry))
                    stored = row[-2] if isinstance(row[-2], dict) else json.loads(row[-2])
                    if dict(freqs) != stored or length != row[-1]:
                        stale.append(entry.id)
                    for term in freqs:
                        df[term] = df.get(term, 0) + 1
                    n += 1
                    total_len += length
                    if entry.scope.value == "shared":
                        shared_n += 1
                    per_agent[entry.agent_id] = per_agent.get(entry.agent_id, 0) + 1
                    i += 1
                progress("check memories", i, total)
            await cur.close()
            out.add("lexical_stale", "lexical columns that are not the memory's text", stale)
            cur = await conn.execute("SELECT n, total_len, shared_n FROM store_stats WHERE id = 1")
            stats = await cur.fetchone()
            if stats is None or tuple(stats) != (n, total_len, shared_n):
                out.add(
                    "stats_stale",
                    f"store_stats is {stats}, the rows give {(n, total_len, shared_n)}",
                    ["store_stats"],
                )
            cur = await conn.execute("SELECT term, df FROM term_stats WHERE df > 0")
            stored_df = {str(t): int(d) for t, d in await cur.fetchall()}
            wrong_terms = sorted(
                t for t in set(df) | set(stored_df) if df.get(t) != stored_df.get(t)
            )
            out.add("stats_stale", "term_stats rows that are not what the rows give", wrong_terms)
            cur = await conn.execute("SELECT agent_id, n FROM agent_stats WHERE n > 0")
            stored_agents = {str(a): int(c) for a, c in await cur.fetchall()}
            wrong_agents = sorted(
                a
                for a in set(per_agent) | set(stored_agents)
                if per_agent.get(a) != stored_agents.get(a)
            )
            out.add("stats_stale", "agent_stats rows that are not what the rows give", wrong_agents)
            cur = await conn.execute(
                "SELECT a.memory_id FROM archive a JOIN memories m ON m.id = a.memory_id"
            )
            out.add(
                "archived_and_live",
                "ids both live and archived (an interrupted restore; repair finishes it)",
                [r[0] for r in await cur.fetchall()],
            )
            cur = await conn.execute(
                "SELECT a.id FROM archive a WHERE NOT EXISTS (SELECT 1 FROM audit u"
                " WHERE u.memory_id = a.memory_id AND u.details ->> 'archive_id' = a.id)"
            )
            out.add(
                "audit_missing",
                "archive rows without their audit record",
                [r[0] for r in await cur.fetchall()],
            )
            cur = await conn.execute(
                "SELECT m.id FROM memories m WHERE m.scope = 'shared' AND NOT EXISTS"
                " (SELECT 1 FROM audit u WHERE u.memory_id = m.id AND u.action = 'shared.publish')"
            )
            out.add(
                "audit_missing",
                "shared entries without their publish record",
                [r[0] for r in await cur.fetchall()],
            )
            cur = await conn.execute(
                "SELECT (SELECT COUNT(*) FROM audit), (SELECT COUNT(*) FROM archive)"
            )
            audits, archived = await cur.fetchone()
    finally:
        await store.disconnect()
    checked = {"memories": total, "audit records": int(audits), "archive rows": int(archived)}
    return checked, out.findings


async def _repair_postgres(url: str, embedder: Embedder, progress: Progress) -> dict[str, int]:
    from psycopg import sql

    from memvault.backends._base import lexical_text
    from memvault.backends.postgres._rows import _COLUMNS, _analysed, _row_entry
    from memvault.backends.postgres.schema import HNSW_INDEX

    store = await _pg(url, embedder)
    rebuilt: dict[str, int] = {}
    try:

        async def run(conn: Any) -> None:
            cur = await conn.execute("SELECT COUNT(*) FROM memories")
            total = int((await cur.fetchone())[0])
            cur = await conn.execute(f"SELECT {_COLUMNS} FROM memories m ORDER BY m.rowid")
            fixed = 0
            rows = await cur.fetchall()
            for i, row in enumerate(rows, start=1):
                entry = _row_entry(row)
                freqs, length = _analysed(lexical_text(entry))
                await conn.execute(
                    "UPDATE memories SET lexemes = array_to_tsvector(%s::text[]),"
                    " term_freqs = %s::jsonb, doc_len = %s WHERE id = %s",
                    [sorted(freqs), json.dumps(dict(freqs)), length, entry.id],
                )
                fixed += 1
                if i % _PAGE == 0:
                    progress("lexical columns", i, total)
            progress("lexical columns", total, total)
            await conn.execute("DELETE FROM term_stats")
            await conn.execute(
                "INSERT INTO term_stats (term, df) SELECT k, count(*) FROM memories,"
                " jsonb_object_keys(term_freqs) AS k GROUP BY k"
            )
            await conn.execute("DELETE FROM agent_stats")
            await conn.execute(
                "INSERT INTO agent_stats (agent_id, n) SELECT agent_id, count(*) FROM memories"
                " GROUP BY agent_id"
            )
            await conn.execute(
                "UPDATE store_stats SET n = (SELECT count(*) FROM memories),"
                " total_len = (SELECT COALESCE(sum(doc_len), 0) FROM memories),"
                " shared_n = (SELECT count(*) FROM memories WHERE scope = 'shared') WHERE id = 1"
            )
            cur = await conn.execute(
                "DELETE FROM archive WHERE memory_id IN (SELECT id FROM memories)"
            )
            rebuilt["lexical rows"] = fixed
            rebuilt["restores finished"] = max(cur.rowcount, 0)

        await store._write("repair", run)
        async with store._connection("repair", write=True) as conn:
            cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", [HNSW_INDEX])
            if (await cur.fetchone())[0]:
                await conn.execute(sql.SQL("REINDEX INDEX {}").format(sql.Identifier(HNSW_INDEX)))
                rebuilt["HNSW indexes"] = 1
            else:
                rebuilt["HNSW indexes"] = 0
    finally:
        await store.disconnect()
    return rebuilt
