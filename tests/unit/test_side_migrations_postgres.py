"""The side stores' tables under named migrations, on PostgreSQL (see test_side_migrations.py).

Every side store with a PostgreSQL driver, each in a fresh schema: it gets the tables and indexes
the release before the migrations made (that DDL is copied below, verbatim, with the schema
quoted in place of ``{s}``), opening twice applies each migration once, a schema made by that
older code keeps its row and records the migrations, and all the stores opening a new schema at
once share one ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memvault._sidetables import LEDGER, SideSchema, advisory_key, migrate_postgres
from memvault.conversation.postgres import PostgresConversationStore
from memvault.conversation.session_postgres import PostgresSessionStore
from memvault.conversation.session_store import SESSION_TABLES
from memvault.conversation.store import CONVERSATION_TABLES
from memvault.graph.store import GRAPH_TABLES, open_graph_store
from memvault.learning.postgres import PostgresLearningStore
from memvault.learning.store import LEARNING_TABLES
from memvault.maintenance.state import MAINTENANCE_TABLES, PostgresMaintenanceState
from memvault.server.keys import KEY_TABLES, PostgresKeyStore

pytestmark = pytest.mark.postgres

Read = Callable[[str, str], Awaitable[bool]]  # (server URL, schema) -> whether the row was seen


async def _read_session(url: str, schema: str) -> bool:
    store = PostgresSessionStore(url, schema=schema)
    try:
        return await store.get("dev-1", "s-1") is not None
    finally:
        await store.close()


async def _read_conversation(url: str, schema: str) -> bool:
    store = PostgresConversationStore(url, schema=schema)
    try:
        found = await store.latest("dev-1")
        return found is not None and found.session_id == "s-1"
    finally:
        await store.close()


async def _read_graph(url: str, schema: str) -> bool:
    store = open_graph_store(url, schema=schema)
    try:
        return [e.key for e in await store.all_entities("dev-1")] == ["alice"]
    finally:
        await store.close()


async def _read_learning(url: str, schema: str) -> bool:
    store = PostgresLearningStore(url, schema=schema)
    try:
        return await store.get("approval", "a-1") is not None
    finally:
        await store.close()


async def _read_maintenance(url: str, schema: str) -> bool:
    state = PostgresMaintenanceState(url, schema=schema)
    try:
        return await state.last_run("decay") is not None
    finally:
        await state.close()


async def _read_key(url: str, schema: str) -> bool:
    def run() -> bool:
        store = PostgresKeyStore(url, schema=schema)
        try:
            return store.get("k_0123456789ab") is not None
        finally:
            store.close()

    return await asyncio.to_thread(run)


@dataclass(frozen=True)
class Case:
    """A side store: its declaration, the DDL released before it, a row, a read of that row."""

    id: str
    schema: SideSchema
    lock: bytes
    old_ddl: tuple[str, ...]
    insert: tuple[str, tuple[Any, ...]]
    read: Read

    @property
    def table(self) -> str:
        return self.insert[0].split()[2].removeprefix("{s}.")


_T0 = datetime(2026, 1, 1, tzinfo=UTC)

CASES = [
    Case(
        "sessions",
        SESSION_TABLES,
        b"memvault.sessions",
        (
            "CREATE TABLE IF NOT EXISTS {s}.sessions ("
            ' agent_id text COLLATE "C" NOT NULL, session_id text COLLATE "C" NOT NULL,'
            " seq bigint NOT NULL, created_at timestamptz NOT NULL,"
            " updated_at timestamptz NOT NULL, message_count integer NOT NULL,"
            " messages jsonb NOT NULL, PRIMARY KEY (agent_id, session_id))",
            "CREATE INDEX IF NOT EXISTS sessions_agent_seq ON {s}.sessions (agent_id, seq)",
        ),
        (
            "INSERT INTO {s}.sessions VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)",
            ("dev-1", "s-1", 1, _T0, _T0, 1, '[{"role": "user", "content": "hello"}]'),
        ),
        _read_session,
    ),
    Case(
        "conversations",
        CONVERSATION_TABLES,
        b"memvault.conversations",
        (
            "CREATE TABLE IF NOT EXISTS {s}.conversations ("
            " conversation_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, session_id TEXT NOT NULL,"
            " seq BIGINT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,"
            " archived_at BIGINT, UNIQUE (agent_id, session_id))",
            "CREATE INDEX IF NOT EXISTS conversations_agent_seq ON {s}.conversations"
            " (agent_id, seq)",
            "CREATE TABLE IF NOT EXISTS {s}.conversation_messages ("
            " message_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " conversation_id TEXT NOT NULL, position INTEGER NOT NULL, role TEXT NOT NULL,"
            " content TEXT NOT NULL, name TEXT, kind TEXT NOT NULL,"
            " agent_visible INTEGER NOT NULL, user_visible INTEGER NOT NULL,"
            " focus_pinned INTEGER NOT NULL, created_at BIGINT NOT NULL, compacted_at BIGINT,"
            " summary_id BIGINT, pending_summary INTEGER NOT NULL DEFAULT 0,"
            " tokens INTEGER NOT NULL, superseded_at BIGINT,"
            " embedding bytea, embedding_model TEXT, embedded_at BIGINT,"
            " UNIQUE (conversation_id, position))",
            "CREATE INDEX IF NOT EXISTS conversation_messages_unembedded ON"
            " {s}.conversation_messages (message_id) WHERE embedded_at IS NULL",
        ),
        (
            "INSERT INTO {s}.conversations VALUES (%s, %s, %s, %s, %s, %s, %s)",
            ("c-1", "dev-1", "s-1", 1, 0, 0, None),
        ),
        _read_conversation,
    ),
    Case(
        "graph",
        GRAPH_TABLES,
        b"memvault.graph",
        (
            "CREATE TABLE IF NOT EXISTS {s}.graph_entities ("
            " agent_id TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,"
            " mentions INTEGER NOT NULL, first_seen BIGINT NOT NULL, PRIMARY KEY (agent_id, key))",
            "CREATE TABLE IF NOT EXISTS {s}.graph_mentions ("
            " agent_id TEXT NOT NULL, key TEXT NOT NULL, memory_id TEXT NOT NULL,"
            " at BIGINT NOT NULL, PRIMARY KEY (agent_id, key, memory_id))",
            "CREATE INDEX IF NOT EXISTS graph_mentions_memory ON {s}.graph_mentions"
            " (agent_id, memory_id)",
            "CREATE TABLE IF NOT EXISTS {s}.graph_edges ("
            " agent_id TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL,"
            " relation TEXT NOT NULL, target TEXT NOT NULL, weight DOUBLE PRECISION NOT NULL,"
            " valid_from BIGINT NOT NULL, valid_to BIGINT, memory_id TEXT,"
            " PRIMARY KEY (agent_id, id))",
            "CREATE INDEX IF NOT EXISTS graph_edges_source ON {s}.graph_edges"
            " (agent_id, source, relation)",
            "CREATE INDEX IF NOT EXISTS graph_edges_target ON {s}.graph_edges (agent_id, target)",
            "CREATE TABLE IF NOT EXISTS {s}.graph_episode_links ("
            " agent_id TEXT NOT NULL, cause TEXT NOT NULL, effect TEXT NOT NULL,"
            " relation TEXT NOT NULL, weight DOUBLE PRECISION NOT NULL, at BIGINT NOT NULL,"
            " PRIMARY KEY (agent_id, cause, effect))",
            "CREATE INDEX IF NOT EXISTS graph_episode_links_effect ON {s}.graph_episode_links"
            " (agent_id, effect)",
        ),
        (
            "INSERT INTO {s}.graph_entities VALUES (%s, %s, %s, %s, %s, %s)",
            ("dev-1", "alice", "Alice", "person", 3, 0),
        ),
        _read_graph,
    ),
    Case(
        "learning",
        LEARNING_TABLES,
        b"memvault.learning",
        (
            "CREATE TABLE IF NOT EXISTS {s}.learning_items ("
            ' kind text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL,'
            ' agent_id text COLLATE "C", status text, at timestamptz NOT NULL,'
            " n bigint NOT NULL DEFAULT 0, data jsonb NOT NULL, PRIMARY KEY (kind, id))",
            'CREATE INDEX IF NOT EXISTS "learning_kind_status_at" ON {s}.learning_items'
            " (kind, status, at)",
            'CREATE INDEX IF NOT EXISTS "learning_kind_agent_at" ON {s}.learning_items'
            " (kind, agent_id, at)",
        ),
        (
            "INSERT INTO {s}.learning_items VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)",
            ("approval", "a-1", "dev-1", "pending", _T0, 0, "{}"),
        ),
        _read_learning,
    ),
    Case(
        "maintenance",
        MAINTENANCE_TABLES,
        b"memvault.maintenance",
        (
            "CREATE TABLE IF NOT EXISTS {s}.maintenance_runs ("
            ' job text COLLATE "C" NOT NULL, agent_id text COLLATE "C" NOT NULL,'
            " at timestamptz NOT NULL, holder text, PRIMARY KEY (job, agent_id))",
        ),
        ("INSERT INTO {s}.maintenance_runs VALUES (%s, %s, %s, %s)", ("decay", "", _T0, None)),
        _read_maintenance,
    ),
    Case(
        "keys",
        KEY_TABLES,
        b"memvault.api_keys",
        (
            "CREATE TABLE IF NOT EXISTS {s}.api_keys ("
            ' seq bigint GENERATED ALWAYS AS IDENTITY, id text COLLATE "C" PRIMARY KEY,'
            " name text NOT NULL, tenant text NOT NULL, scopes text NOT NULL, agent_id text,"
            " secret_hash text NOT NULL, created_at timestamptz NOT NULL,"
            " revoked_at timestamptz)",
            "CREATE INDEX IF NOT EXISTS api_keys_tenant_seq ON {s}.api_keys (tenant, seq)",
        ),
        (
            "INSERT INTO {s}.api_keys (id, name, tenant, scopes, agent_id, secret_hash,"
            " created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            ("k_0123456789ab", "ci", "default", "read", None, "0" * 64, _T0),
        ),
        _read_key,
    ),
]


def _q(text: str, schema: str) -> bytes:
    return text.replace("{s}", sql.Identifier(schema).as_string(None)).encode()


def _old_schema(url: str, schema: str, case: Case) -> None:
    """A schema as the release before the migrations left it: the tables and a row."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        for statement in case.old_ddl:
            conn.execute(_q(statement, schema))
        conn.execute(_q(case.insert[0], schema), case.insert[1])


def _ledger(url: str, schema: str) -> list[tuple[str, datetime]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT name, applied_at FROM {} ORDER BY name").format(
                sql.Identifier(schema, LEDGER)
            )
        ).fetchall()
    return [(str(n), at) for n, at in rows]


def _shape(url: str, schema: str) -> dict[str, Any]:
    """Every table of ``schema`` but the ledger: its columns and its index definitions."""
    with psycopg.connect(url) as conn:
        cols = conn.execute(
            "SELECT table_name, column_name, ordinal_position, data_type, is_nullable,"
            " column_default, collation_name, is_identity, identity_generation"
            " FROM information_schema.columns WHERE table_schema = %s AND table_name <> %s"
            " ORDER BY table_name, ordinal_position",
            [schema, LEDGER],
        ).fetchall()
        indexes = conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes"
            " WHERE schemaname = %s AND tablename <> %s ORDER BY indexname",
            [schema, LEDGER],
        ).fetchall()
    quoted = sql.Identifier(schema).as_string(None)
    return {
        "columns": cols,
        "indexes": [
            (t, i, d.replace(f"{quoted}.", "").replace(f"{schema}.", "")) for t, i, d in indexes
        ],
    }


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    result: Case = request.param
    return result


async def test_a_new_schema_gets_the_tables_the_old_ddl_made(
    postgres_url: str, schemas: Callable[[], str], case: Case
) -> None:
    old, new = schemas(), schemas()
    _old_schema(postgres_url, old, case)
    assert await case.read(postgres_url, new) is False  # makes the new schema; no row there
    old_shape = _shape(postgres_url, old)
    assert case.table in {c[0] for c in old_shape["columns"]}
    assert _shape(postgres_url, new) == old_shape


async def test_opening_twice_applies_each_migration_once(
    postgres_url: str, schemas: Callable[[], str], case: Case
) -> None:
    schema = schemas()
    await case.read(postgres_url, schema)
    first = _ledger(postgres_url, schema)
    assert [name for name, _ in first] == sorted(case.schema.names("postgres"))
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(_q(case.insert[0], schema), case.insert[1])
    assert await case.read(postgres_url, schema) is True
    assert _ledger(postgres_url, schema) == first
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        again = migrate_postgres(
            conn, schema=schema, lock=advisory_key(case.lock), migrations=case.schema.postgres
        )
    assert again == []


async def test_a_schema_of_the_previous_release_keeps_its_row(
    postgres_url: str, schemas: Callable[[], str], case: Case
) -> None:
    schema = schemas()
    _old_schema(postgres_url, schema, case)
    table = sql.Identifier(schema, case.table)
    with psycopg.connect(postgres_url) as conn:
        before = conn.execute(sql.SQL("SELECT * FROM {}").format(table)).fetchall()
    shape = _shape(postgres_url, schema)
    assert await case.read(postgres_url, schema) is True
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute(sql.SQL("SELECT * FROM {}").format(table)).fetchall() == before
    assert _shape(postgres_url, schema) == shape  # adopted, not rebuilt
    assert [name for name, _ in _ledger(postgres_url, schema)] == sorted(
        case.schema.names("postgres")
    )


async def test_every_store_opening_a_new_schema_at_once_shares_one_ledger(
    postgres_url: str, schemas: Callable[[], str]
) -> None:
    # Different stores take different advisory locks; the shared schema lock is what keeps
    # their first CREATE SCHEMA / ledger creation from racing.
    schema = schemas()
    seen = await asyncio.gather(*(c.read(postgres_url, schema) for c in CASES))
    assert seen == [False] * len(CASES)
    names = sorted(n for c in CASES for n in c.schema.names("postgres"))
    assert [name for name, _ in _ledger(postgres_url, schema)] == names
