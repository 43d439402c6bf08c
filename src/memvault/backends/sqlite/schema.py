"""Named, ordered migrations of the SQLite store (``m001_...``), applied once each.

Timestamps are INTEGER microseconds since the Unix epoch (UTC): exact, compact, and comparable in
SQL. Vectors are little-endian float32 BLOBs. ``memories_fts`` holds the analysed terms of each
memory (see :mod:`memvault.retrieval.text`) under the memory's rowid.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "apply_migrations"]

M001_INITIAL = """
CREATE TABLE IF NOT EXISTS store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memories (
    rowid            INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    agent_id         TEXT NOT NULL,
    category         TEXT NOT NULL,
    content          TEXT NOT NULL,
    tags             TEXT NOT NULL DEFAULT '[]',
    label            TEXT,
    source           TEXT,
    confidence       REAL NOT NULL DEFAULT 1.0,
    importance       REAL NOT NULL DEFAULT 0.5,
    extra            TEXT NOT NULL DEFAULT '{}',
    scope            TEXT NOT NULL DEFAULT 'private',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    expires_at       INTEGER,
    valid_from       INTEGER,
    valid_to         INTEGER,
    superseded_by    TEXT,
    consolidated_at  INTEGER,
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed_at INTEGER
);
CREATE INDEX IF NOT EXISTS idx_memories_agent_created
    ON memories (agent_id, created_at);
CREATE INDEX IF NOT EXISTS idx_memories_agent_category_created
    ON memories (agent_id, category, created_at);
CREATE TABLE IF NOT EXISTS memory_tags (
    tag          TEXT NOT NULL,
    memory_rowid INTEGER NOT NULL REFERENCES memories (rowid) ON DELETE CASCADE,
    PRIMARY KEY (tag, memory_rowid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idx_memory_tags_rowid ON memory_tags (memory_rowid);
CREATE TABLE IF NOT EXISTS memory_vectors (
    memory_rowid INTEGER PRIMARY KEY REFERENCES memories (rowid) ON DELETE CASCADE,
    vector       BLOB NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
    body,
    tokenize = 'unicode61 remove_diacritics 2'
);
"""

# Shared knowledge: retraction marks a row instead of deleting it; every publish and retraction
# leaves a row in ``audit``, the store's general append-only log (actor did action, on which
# memory of which agent, with JSON details), written in the transaction of the change itself.
M002_SHARED_KNOWLEDGE = """
ALTER TABLE memories ADD COLUMN retracted_at INTEGER;
CREATE INDEX IF NOT EXISTS idx_memories_scope_created
    ON memories (scope, created_at);
CREATE TABLE IF NOT EXISTS audit (
    id        TEXT PRIMARY KEY,
    at        INTEGER NOT NULL,
    actor     TEXT NOT NULL,
    action    TEXT NOT NULL,
    agent_id  TEXT,
    memory_id TEXT,
    details   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_audit_memory ON audit (memory_id, at);
CREATE INDEX IF NOT EXISTS idx_audit_at ON audit (at, id);
"""

# Document frequencies of FTS terms, for dropping very common query terms in big stores.
M003_FTS_VOCAB = """
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts_vocab USING fts5vocab (memories_fts, 'row');
"""

# The archive: entries moved out of the live store (evicted, expired, consolidated) keep their
# whole JSON (``MemoryEntry.to_json``) so ``restore`` brings them back under the original id.
M004_ARCHIVE = """
CREATE TABLE IF NOT EXISTS archive (
    id          TEXT PRIMARY KEY,
    memory_id   TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    reason      TEXT NOT NULL,
    archived_at INTEGER NOT NULL,
    entry       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_archive_agent ON archive (agent_id, archived_at);
CREATE INDEX IF NOT EXISTS idx_archive_memory ON archive (memory_id);
"""

# The full-text index learns which matrix a row belongs to (``scope_key``: ``a`` + the hex of the
# agent id for private rows, ``shared`` for shared knowledge), so a search matches only its own
# agent's rows inside FTS5 instead of scoring every agent's matches and filtering after the join.
# FTS5 tables cannot gain a column, so the index is rebuilt from the stored analysed text.
M005_FTS_SCOPE_KEY = """
CREATE VIRTUAL TABLE memories_fts_new USING fts5 (
    body,
    scope_key,
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts_new (rowid, body, scope_key)
    SELECT f.rowid, f.body,
           CASE WHEN m.scope = 'private' THEN 'a' || lower(hex(m.agent_id)) ELSE 'shared' END
    FROM memories_fts f JOIN memories m ON m.rowid = f.rowid;
DROP TABLE memories_fts_vocab;
DROP TABLE memories_fts;
ALTER TABLE memories_fts_new RENAME TO memories_fts;
CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab (memories_fts, 'row');
"""

# Metadata filters: ``extra`` is read with the JSON functions, so it must be strict JSON. Older
# versions wrote Python's ``NaN``/``Infinity`` tokens for such floats; those become ``null``
# (a row still invalid after that keeps its text under the key ``invalid_metadata``). Then the
# scope keys (``memvault.backends._common.SCOPE_KEYS``) get an index per agent, so an ``eq``
# filter on them (``search(..., user_id=...)``) reads only the matching rows.
M006_METADATA_FILTERS = """
UPDATE memories
    SET extra = replace(replace(replace(extra, '-Infinity', 'null'), 'Infinity', 'null'),
                        'NaN', 'null')
    WHERE json_valid(extra) = 0;
UPDATE memories SET extra = json_object('invalid_metadata', extra) WHERE json_valid(extra) = 0;
CREATE INDEX IF NOT EXISTS idx_memories_agent_user_id
    ON memories (agent_id, json_extract(extra, '$.user_id'), created_at);
CREATE INDEX IF NOT EXISTS idx_memories_agent_session_id
    ON memories (agent_id, json_extract(extra, '$.session_id'), created_at);
CREATE INDEX IF NOT EXISTS idx_memories_agent_run_id
    ON memories (agent_id, json_extract(extra, '$.run_id'), created_at);
CREATE INDEX IF NOT EXISTS idx_memories_agent_namespace
    ON memories (agent_id, json_extract(extra, '$.namespace'), created_at);
"""

# Audit trails of one agent (``audit_for_agent``, ``memvault check``'s coverage) are read by agent
# and time instead of scanning the whole log.
M007_AUDIT_AGENT = """
CREATE INDEX IF NOT EXISTS idx_audit_agent ON audit (agent_id, at, id);
"""

# Each memory's static word-embedding vector (memvault.retrieval.static, float16), a pure
# function of its content kept so that ranking a long turn costs no tokenisation. Derived data:
# rows written before this table (or by a path that does not fill it) are computed at ranking.
M008_STATIC_VECTORS = """
CREATE TABLE IF NOT EXISTS memory_static (
    memory_rowid INTEGER PRIMARY KEY REFERENCES memories (rowid) ON DELETE CASCADE,
    vector       BLOB NOT NULL
);
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("m001_initial", M001_INITIAL),
    ("m002_shared_knowledge", M002_SHARED_KNOWLEDGE),
    ("m003_fts_vocab", M003_FTS_VOCAB),
    ("m004_archive", M004_ARCHIVE),
    ("m005_fts_scope_key", M005_FTS_SCOPE_KEY),
    ("m006_metadata_filters", M006_METADATA_FILTERS),
    ("m007_audit_agent", M007_AUDIT_AGENT),
    ("m008_static_vectors", M008_STATIC_VECTORS),
)
SCHEMA_VERSION = len(MIGRATIONS)


def apply_migrations(conn: sqlite3.Connection, now_us: int) -> list[str]:
    """Apply every migration not yet recorded; returns the names applied.

    Runs under ``BEGIN IMMEDIATE`` so two connections opening a new file do not race: the
    bookkeeping table is created in the same transaction as the schema, so another connection
    never sees a half-made store (tables but no ``store_meta``) and refuses it as foreign.
    """
    applied: list[str] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, now_us)
            )
            applied.append(name)
        conn.execute(
            "INSERT INTO store_meta (key, value) VALUES ('schema_version', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )
        conn.execute("INSERT OR IGNORE INTO store_meta (key, value) VALUES ('generation', '0')")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied


def _statements(sql: str) -> list[str]:
    # Migrations hold no semicolons inside literals, so a plain split is exact here.
    return [s.strip() for s in sql.split(";") if s.strip()]
