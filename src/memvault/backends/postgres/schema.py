"""Named, ordered migrations of the PostgreSQL store (``m001_...``), applied once each.

Every table lives in the backend's schema (the connection's ``search_path`` puts it first, then
the schema holding the ``vector`` extension). Identifier-like text columns use the "C" collation
so ids and agent ids sort bytewise, exactly as in SQLite, whatever the database's locale.

The lexical index mirrors SQLite's FTS5 table: each memory keeps the analysed terms of its text
(:func:`memvault.retrieval.text.index_text`) as a ``tsvector`` without positions (GIN-indexed, to
find candidate rows) and as a ``term -> frequency`` map plus its length in terms (to score them).
``term_stats`` (document frequency per term) and the single ``store_stats`` row (row count and
total length) are the collection statistics FTS5 keeps; ``agent_stats`` counts rows per agent so
the dense planner knows how selective an agent filter is. All of them are maintained in the
transaction that inserts or deletes the rows.
"""

from __future__ import annotations

from psycopg import sql

__all__ = ["HNSW_INDEX", "MIGRATIONS", "SCHEMA_VERSION", "hnsw_index_sql", "migration_sql"]

# ``{dimension}`` is the only placeholder (filled with a literal integer); the text holds no other
# braces, which psycopg.sql would read as placeholders too.
M001_INITIAL = """
CREATE TABLE IF NOT EXISTS store_meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE IF NOT EXISTS memories (
    rowid            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               text COLLATE "C" NOT NULL UNIQUE,
    agent_id         text COLLATE "C" NOT NULL,
    category         text COLLATE "C" NOT NULL,
    content          text NOT NULL,
    tags             text[] NOT NULL,
    label            text COLLATE "C",
    source           text,
    confidence       double precision NOT NULL,
    importance       double precision NOT NULL,
    extra            text NOT NULL,
    scope            text COLLATE "C" NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    expires_at       timestamptz,
    valid_from       timestamptz,
    valid_to         timestamptz,
    superseded_by    text COLLATE "C",
    consolidated_at  timestamptz,
    access_count     integer NOT NULL DEFAULT 0,
    last_accessed_at timestamptz,
    embedding        vector({dimension}) NOT NULL,
    lexemes          tsvector NOT NULL,
    term_freqs       jsonb NOT NULL,
    doc_len          integer NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_agent_created
    ON memories (agent_id, created_at, id);
CREATE INDEX IF NOT EXISTS memories_agent_category_created
    ON memories (agent_id, category, created_at);
CREATE INDEX IF NOT EXISTS memories_agent_rowid
    ON memories (agent_id, rowid);
CREATE INDEX IF NOT EXISTS memories_created
    ON memories (created_at, id);
CREATE INDEX IF NOT EXISTS memories_lexemes
    ON memories USING gin (lexemes);
CREATE INDEX IF NOT EXISTS memories_tags
    ON memories USING gin (tags);
CREATE TABLE IF NOT EXISTS term_stats (
    term text COLLATE "C" PRIMARY KEY,
    df   bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS store_stats (
    id        smallint PRIMARY KEY CHECK (id = 1),
    n         bigint NOT NULL,
    total_len bigint NOT NULL
);
INSERT INTO store_stats (id, n, total_len) VALUES (1, 0, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS agent_stats (
    agent_id text COLLATE "C" PRIMARY KEY,
    n        bigint NOT NULL
)
"""

# Shared knowledge: retraction marks a row (``retracted_at``) instead of deleting it, and every
# publish and retraction leaves a row in ``audit``, the store's general append-only log, written
# in the transaction of the change. ``store_stats.shared_n`` counts shared rows for the dense
# planner (as ``agent_stats`` does per agent); partial indexes serve the shared-scope scans.
M002_SHARED_KNOWLEDGE = """
ALTER TABLE memories ADD COLUMN IF NOT EXISTS retracted_at timestamptz;
ALTER TABLE store_stats ADD COLUMN IF NOT EXISTS shared_n bigint NOT NULL DEFAULT 0;
UPDATE store_stats SET shared_n = (SELECT count(*) FROM memories WHERE scope = 'shared')
    WHERE id = 1;
CREATE INDEX IF NOT EXISTS memories_shared_rowid
    ON memories (rowid) WHERE scope = 'shared';
CREATE INDEX IF NOT EXISTS memories_shared_created
    ON memories (created_at, id) WHERE scope = 'shared';
CREATE TABLE IF NOT EXISTS audit (
    id        text COLLATE "C" PRIMARY KEY,
    at        timestamptz NOT NULL,
    actor     text COLLATE "C" NOT NULL,
    action    text COLLATE "C" NOT NULL,
    agent_id  text COLLATE "C",
    memory_id text COLLATE "C",
    details   jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_memory ON audit (memory_id, at);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at, id)
"""

# The archive: entries moved out of the live store (evicted, expired, consolidated) keep their
# whole JSON (``MemoryEntry.to_json``) so ``restore`` brings them back under the original id.
M003_ARCHIVE = """
CREATE TABLE IF NOT EXISTS archive (
    id          text COLLATE "C" PRIMARY KEY,
    memory_id   text COLLATE "C" NOT NULL,
    agent_id    text COLLATE "C" NOT NULL,
    reason      text NOT NULL,
    archived_at timestamptz NOT NULL,
    entry       jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS archive_agent ON archive (agent_id, archived_at);
CREATE INDEX IF NOT EXISTS archive_memory ON archive (memory_id)
"""

# Metadata filters read ``extra`` (JSON text) as jsonb, so every row must be JSON jsonb takes.
# Older versions could write Python's NaN/Infinity tokens, and ``\u0000`` or lone surrogates in
# strings, which jsonb refuses: such rows (found by a text scan, then tried) get the tokens
# replaced by null and those characters dropped, or, if still refused, keep their text under the
# key ``invalid_metadata``. Then the scope keys (``memvault.backends._common.SCOPE_KEYS``) get
# an expression index per agent, so an ``eq`` filter on them reads only the matching rows.
M004_METADATA_FILTERS = """
DO $fix$
DECLARE
    r record;
    fixed text;
BEGIN
    FOR r IN SELECT rowid, extra FROM memories
             WHERE extra LIKE '%NaN%' OR extra LIKE '%Infinity%'
                OR extra ~ '\\\\u(0000|[dD][89a-fA-F])'
    LOOP
        BEGIN
            PERFORM r.extra::jsonb;
        EXCEPTION WHEN others THEN
            fixed := replace(replace(replace(replace(r.extra, '-Infinity', 'null'),
                                     'Infinity', 'null'), 'NaN', 'null'), '\\u0000', '');
            BEGIN
                PERFORM fixed::jsonb;
            EXCEPTION WHEN others THEN
                fixed := jsonb_build_object('invalid_metadata', r.extra)::text;
            END;
            UPDATE memories SET extra = fixed WHERE rowid = r.rowid;
        END;
    END LOOP;
END
$fix$;
CREATE INDEX IF NOT EXISTS memories_agent_user_id
    ON memories (agent_id, ((extra::jsonb) -> 'user_id'), created_at);
CREATE INDEX IF NOT EXISTS memories_agent_session_id
    ON memories (agent_id, ((extra::jsonb) -> 'session_id'), created_at);
CREATE INDEX IF NOT EXISTS memories_agent_run_id
    ON memories (agent_id, ((extra::jsonb) -> 'run_id'), created_at);
CREATE INDEX IF NOT EXISTS memories_agent_namespace
    ON memories (agent_id, ((extra::jsonb) -> 'namespace'), created_at)
"""

# Audit trails of one agent are read by agent and time instead of scanning the whole log.
M005_AUDIT_AGENT = """
CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent_id, at, id)
"""

# Each memory's static word-embedding vector (memvault.retrieval.static, little-endian float16
# bytes), a pure function of its content kept so that ranking costs no tokenisation. Derived
# data: rows written before this column (NULL) are computed at ranking.
M006_STATIC_VECTORS = """
ALTER TABLE memories ADD COLUMN IF NOT EXISTS static bytea
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("m001_initial", M001_INITIAL),
    ("m002_shared_knowledge", M002_SHARED_KNOWLEDGE),
    ("m003_archive", M003_ARCHIVE),
    ("m004_metadata_filters", M004_METADATA_FILTERS),
    ("m005_audit_agent", M005_AUDIT_AGENT),
    ("m006_static_vectors", M006_STATIC_VECTORS),
)
SCHEMA_VERSION = len(MIGRATIONS)

HNSW_INDEX = "memories_embedding_hnsw"

# m and ef_construction are pgvector's defaults, spelled out so the index is the same everywhere.
_HNSW = (
    "CREATE INDEX IF NOT EXISTS {name} ON memories"
    " USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
)


def migration_sql(template: str, dimension: int) -> sql.Composed:
    """The statements of one migration with the embedding dimension filled in."""
    return sql.SQL(template.strip()).format(dimension=sql.Literal(int(dimension)))


def hnsw_index_sql() -> sql.Composed:
    """The statement that creates the HNSW cosine index (if it does not exist)."""
    return sql.SQL(_HNSW).format(name=sql.Identifier(HNSW_INDEX))
