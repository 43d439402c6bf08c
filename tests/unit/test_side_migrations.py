"""The side stores' tables under named migrations (``memvault._sidetables.SideSchema``), on SQLite.

A contract over every side store with a SQLite driver: a fresh file gets the same tables and
indexes the code before the migrations made (their DDL is copied below, verbatim, as it was
released), opening twice applies each migration once, and a file made by that older code (tables,
a row, no ledger) opens unchanged, keeps its row and records the migrations. Then the mechanism on
a made-up store (a later migration, a failing one, concurrent opens, the naming rules), and the
names of every declared store: unique, and every declaration in the source is covered here.

The PostgreSQL variant is ``test_side_migrations_postgres.py``.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memvault._sidetables import LEDGER, Migration, SideSchema, SQLiteSide, migrate_sqlite, to_us
from memvault.backends.sqlite.schema import apply_migrations
from memvault.conversation.session_sqlite import SQLiteSessionStore
from memvault.conversation.session_store import SESSION_TABLES
from memvault.conversation.sqlite import SQLiteConversationStore
from memvault.conversation.store import CONVERSATION_TABLES, InMemoryConversationStore
from memvault.errors import MemoryConnectionError
from memvault.graph.store import GRAPH_TABLES, open_graph_store
from memvault.learning.sqlite import SQLiteLearningStore
from memvault.learning.store import LEARNING_TABLES
from memvault.maintenance.state import MAINTENANCE_TABLES, SQLiteMaintenanceState
from memvault.persistence._tables import SCHEMA as PERSISTENCE_TABLES
from memvault.server.keys import KEY_TABLES, SQLiteKeyStore
from memvault.server.state import SERVER_TABLES

SRC = Path(__file__).resolve().parents[2] / "src"

# Every declared side store, by the module that declares it (see test_every_declaration_is_here).
SCHEMAS: dict[str, SideSchema] = {
    "memvault.conversation.session_store": SESSION_TABLES,
    "memvault.conversation.store": CONVERSATION_TABLES,
    "memvault.graph.store": GRAPH_TABLES,
    "memvault.learning.store": LEARNING_TABLES,
    "memvault.maintenance.state": MAINTENANCE_TABLES,
    "memvault.server.keys": KEY_TABLES,
    "memvault.persistence._tables": PERSISTENCE_TABLES,
    "memvault.server.state": SERVER_TABLES,
}

BORN_WITH_THE_LEDGER = {"persistence", "server"}
"""Stores first released with named migrations: no older file to adopt, so no Case."""


# -- the stores, with the DDL of the release before the migrations --------------------------------


async def _read_session(path: Path) -> bool:
    store = SQLiteSessionStore(path)
    try:
        return await store.get("dev-1", "s-1") is not None
    finally:
        await store.close()


async def _read_conversation(path: Path) -> bool:
    store = SQLiteConversationStore(path)
    try:
        found = await store.latest("dev-1")
        return found is not None and found.session_id == "s-1"
    finally:
        await store.close()


async def _read_graph(path: Path) -> bool:
    store = open_graph_store(str(path))
    try:
        return [e.key for e in await store.all_entities("dev-1")] == ["alice"]
    finally:
        await store.close()


async def _read_learning(path: Path) -> bool:
    store = SQLiteLearningStore(path)
    try:
        return await store.get("approval", "a-1") is not None
    finally:
        await store.close()


async def _read_maintenance(path: Path) -> bool:
    state = SQLiteMaintenanceState(path)
    try:
        return await state.last_run("decay") is not None
    finally:
        await state.close()


async def _read_key(path: Path) -> bool:
    def run() -> bool:
        store = SQLiteKeyStore(path)
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
    old_ddl: tuple[str, ...]
    insert: tuple[str, tuple[Any, ...]]
    read: Callable[[Path], Awaitable[bool]]

    @property
    def table(self) -> str:
        return self.insert[0].split()[2]


CASES = [
    Case(
        "sessions",
        SESSION_TABLES,
        (
            """
CREATE TABLE IF NOT EXISTS sessions (
    agent_id      TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    messages      TEXT NOT NULL,
    PRIMARY KEY (agent_id, session_id)
) WITHOUT ROWID
""",
            "CREATE INDEX IF NOT EXISTS idx_sessions_agent_seq ON sessions (agent_id, seq)",
        ),
        (
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("dev-1", "s-1", 1, 0, 0, 1, '[{"role": "user", "content": "hello"}]'),
        ),
        _read_session,
    ),
    Case(
        "conversations",
        CONVERSATION_TABLES,
        (
            "CREATE TABLE IF NOT EXISTS conversations ("
            " conversation_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, session_id TEXT NOT NULL,"
            " seq BIGINT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,"
            " archived_at BIGINT, UNIQUE (agent_id, session_id))",
            "CREATE INDEX IF NOT EXISTS idx_conversations_agent_seq ON conversations"
            " (agent_id, seq)",
            "CREATE TABLE IF NOT EXISTS conversation_messages ("
            " message_id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " conversation_id TEXT NOT NULL, position INTEGER NOT NULL, role TEXT NOT NULL,"
            " content TEXT NOT NULL, name TEXT, kind TEXT NOT NULL,"
            " agent_visible INTEGER NOT NULL, user_visible INTEGER NOT NULL,"
            " focus_pinned INTEGER NOT NULL, created_at BIGINT NOT NULL, compacted_at BIGINT,"
            " summary_id BIGINT, pending_summary INTEGER NOT NULL DEFAULT 0,"
            " tokens INTEGER NOT NULL, superseded_at BIGINT,"
            " embedding BLOB, embedding_model TEXT, embedded_at BIGINT,"
            " UNIQUE (conversation_id, position))",
            "CREATE INDEX IF NOT EXISTS idx_conversation_messages_unembedded ON"
            " conversation_messages (message_id) WHERE embedded_at IS NULL",
        ),
        (
            "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("c-1", "dev-1", "s-1", 1, 0, 0, None),
        ),
        _read_conversation,
    ),
    Case(
        "graph",
        GRAPH_TABLES,
        (
            "CREATE TABLE IF NOT EXISTS graph_entities ("
            " agent_id TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,"
            " mentions INTEGER NOT NULL, first_seen BIGINT NOT NULL, PRIMARY KEY (agent_id, key))",
            "CREATE TABLE IF NOT EXISTS graph_mentions ("
            " agent_id TEXT NOT NULL, key TEXT NOT NULL, memory_id TEXT NOT NULL,"
            " at BIGINT NOT NULL, PRIMARY KEY (agent_id, key, memory_id))",
            "CREATE INDEX IF NOT EXISTS graph_mentions_memory ON graph_mentions"
            " (agent_id, memory_id)",
            "CREATE TABLE IF NOT EXISTS graph_edges ("
            " agent_id TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL,"
            " relation TEXT NOT NULL, target TEXT NOT NULL, weight DOUBLE PRECISION NOT NULL,"
            " valid_from BIGINT NOT NULL, valid_to BIGINT, memory_id TEXT,"
            " PRIMARY KEY (agent_id, id))",
            "CREATE INDEX IF NOT EXISTS graph_edges_source ON graph_edges"
            " (agent_id, source, relation)",
            "CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (agent_id, target)",
            "CREATE TABLE IF NOT EXISTS graph_episode_links ("
            " agent_id TEXT NOT NULL, cause TEXT NOT NULL, effect TEXT NOT NULL,"
            " relation TEXT NOT NULL, weight DOUBLE PRECISION NOT NULL, at BIGINT NOT NULL,"
            " PRIMARY KEY (agent_id, cause, effect))",
            "CREATE INDEX IF NOT EXISTS graph_episode_links_effect ON graph_episode_links"
            " (agent_id, effect)",
        ),
        (
            "INSERT INTO graph_entities VALUES (?, ?, ?, ?, ?, ?)",
            ("dev-1", "alice", "Alice", "person", 3, 0),
        ),
        _read_graph,
    ),
    Case(
        "learning",
        LEARNING_TABLES,
        (
            """
CREATE TABLE IF NOT EXISTS learning_items (
    kind     TEXT NOT NULL,
    id       TEXT NOT NULL,
    agent_id TEXT,
    status   TEXT,
    at       INTEGER NOT NULL,
    n        INTEGER NOT NULL DEFAULT 0,
    data     TEXT NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID
""",
            "CREATE INDEX IF NOT EXISTS idx_learning_kind_status_at ON learning_items"
            " (kind, status, at)",
            "CREATE INDEX IF NOT EXISTS idx_learning_kind_agent_at ON learning_items"
            " (kind, agent_id, at)",
        ),
        (
            "INSERT INTO learning_items VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("approval", "a-1", "dev-1", "pending", 0, 0, "{}"),
        ),
        _read_learning,
    ),
    Case(
        "maintenance",
        MAINTENANCE_TABLES,
        (
            """
CREATE TABLE IF NOT EXISTS maintenance_runs (
    job      TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    at       INTEGER NOT NULL,
    holder   TEXT,
    PRIMARY KEY (job, agent_id)
) WITHOUT ROWID
""",
        ),
        ("INSERT INTO maintenance_runs VALUES (?, ?, ?, ?)", ("decay", "", 0, None)),
        _read_maintenance,
    ),
    Case(
        "keys",
        KEY_TABLES,
        (
            """
CREATE TABLE IF NOT EXISTS api_keys (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    tenant      TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    agent_id    TEXT,
    secret_hash TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
)
""",
            "CREATE INDEX IF NOT EXISTS idx_api_keys_tenant_seq ON api_keys (tenant, seq)",
        ),
        (
            "INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (1, "k_0123456789ab", "ci", "default", "read", None, "0" * 64, 0, None),
        ),
        _read_key,
    ),
]


def _old_file(path: Path, case: Case) -> None:
    """A file as the release before the migrations left it: memory schema, the tables, a row."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        apply_migrations(conn, to_us(datetime.now(UTC)))
        for statement in case.old_ddl:
            conn.execute(statement)
        conn.execute(*case.insert)
    finally:
        conn.close()


def _ledger(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as conn:
        return list(conn.execute(f"SELECT name, applied_at FROM {LEDGER} ORDER BY name"))


def _shape(path: Path, tables: set[str]) -> dict[str, Any]:
    """Columns (name, type, not null, default, pk) and indexes (name, unique, columns, partial)."""
    out: dict[str, Any] = {}
    with sqlite3.connect(path) as conn:
        for table in sorted(tables):
            indexes = []
            for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list({table})"):
                cols = [r[2] for r in conn.execute(f"PRAGMA index_info({name})")]
                indexes.append((name, unique, origin, partial, cols))
            out[table] = (
                [r[1:] for r in conn.execute(f"PRAGMA table_info({table})")],
                sorted(indexes),
                conn.execute(
                    "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = ?", (table,)
                ).fetchone(),
            )
    return out


def _side_tables(path: Path) -> set[str]:
    core = {"store_meta", "schema_migrations", "sqlite_sequence", LEDGER}
    with sqlite3.connect(path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return {n for n in names if n not in core and not n.startswith(("memor", "audit", "archive"))}


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    result: Case = request.param
    return result


# -- the contract ----------------------------------------------------------------------------------


async def test_a_new_file_gets_the_tables_the_old_ddl_made(tmp_path: Path, case: Case) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    _old_file(old, case)
    assert await case.read(new) is False  # opens (and migrates) a new file; no row there
    tables = _side_tables(old)
    assert case.schema.table in tables
    assert _side_tables(new) == tables
    assert _shape(new, tables) == _shape(old, tables)


async def test_opening_twice_applies_each_migration_once(tmp_path: Path, case: Case) -> None:
    path = tmp_path / "store.db"
    await case.read(path)
    first = _ledger(path)
    assert [name for name, _ in first] == sorted(case.schema.names("sqlite"))
    with sqlite3.connect(path) as conn:
        conn.execute(*case.insert)
    assert await case.read(path) is True
    assert _ledger(path) == first  # nothing applied (or recorded) again
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert migrate_sqlite(conn, case.schema.sqlite, 0) == []
    finally:
        conn.close()


async def test_a_file_of_the_previous_release_keeps_its_row(tmp_path: Path, case: Case) -> None:
    path = tmp_path / "store.db"
    _old_file(path, case)
    with sqlite3.connect(path) as conn:
        before = list(conn.execute(f"SELECT * FROM {case.table}"))
        shape = _shape(path, _side_tables(path))
    assert await case.read(path) is True
    with sqlite3.connect(path) as conn:
        assert list(conn.execute(f"SELECT * FROM {case.table}")) == before
    assert _shape(path, _side_tables(path)) == shape  # adopted, not rebuilt
    assert [name for name, _ in _ledger(path)] == sorted(case.schema.names("sqlite"))


async def test_in_process_stores_run_the_same_migrations() -> None:
    # memory:// keeps the tables in an in-process database, made by the declared migrations too.
    store = InMemoryConversationStore()
    assert await store.latest("dev-1") is None
    await store.close()
    graph = open_graph_store(None)
    assert await graph.all_entities("dev-1") == []
    await graph.close()


# -- the mechanism, on a made-up store -------------------------------------------------------------

_NOTES_1 = Migration(
    "notes_0001_table",
    ("CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY, body TEXT NOT NULL)",),
)
_NOTES_2 = Migration("notes_0002_tags", ("ALTER TABLE notes ADD COLUMN tags TEXT",))


def _notes(*migrations: Migration) -> SideSchema:
    return SideSchema(
        store="notes",
        sqlite=migrations,
        postgres=(),
        table="notes",
        columns=frozenset({"id", "body"}),
    )


def _side(path: Path, schema: SideSchema) -> SQLiteSide:
    return SQLiteSide(path, what="notes store", busy_timeout_ms=5_000, migrations=schema)


def _columns(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[1] for r in conn.execute("PRAGMA table_info(notes)")]


def test_a_later_migration_is_applied_to_a_store_at_an_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    side = _side(path, _notes(_NOTES_1))
    side.call(lambda c: c.execute("INSERT INTO notes VALUES ('n1', 'kept')"), write=True)
    side.close()
    side = _side(path, _notes(_NOTES_1, _NOTES_2))
    rows = side.call(
        lambda c: c.execute("SELECT id, body, tags FROM notes").fetchall(), write=False
    )
    side.close()
    assert rows == [("n1", "kept", None)]
    assert [name for name, _ in _ledger(path)] == ["notes_0001_table", "notes_0002_tags"]


def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    _side(path, _notes(_NOTES_1)).call(lambda c: None, write=False)
    broken = Migration(
        "notes_0002_broken",
        ("ALTER TABLE notes ADD COLUMN half TEXT", "ALTER TABLE no_such_table ADD COLUMN x TEXT"),
    )
    side = _side(path, _notes(_NOTES_1, broken))
    with pytest.raises(MemoryConnectionError, match="no_such_table"):
        side.call(lambda c: None, write=False)
    side.close()
    assert _columns(path) == ["id", "body"]  # the first statement was rolled back with it
    assert [name for name, _ in _ledger(path)] == ["notes_0001_table"]


def test_concurrent_opens_of_a_new_file_apply_each_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    schema = _notes(_NOTES_1, _NOTES_2)  # an ALTER applied twice would fail: duplicate column
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_one() -> None:
        side = _side(path, schema)
        try:
            start.wait()
            side.call(lambda c: None, write=False)
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)
        finally:
            side.close()

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [name for name, _ in _ledger(path)] == ["notes_0001_table", "notes_0002_tags"]
    assert _columns(path) == ["id", "body", "tags"]


def test_a_table_of_that_name_without_the_columns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, 0)
    conn.execute("CREATE TABLE notes (id TEXT PRIMARY KEY, other TEXT)")
    conn.close()
    side = _side(path, _notes(_NOTES_1))
    with pytest.raises(MemoryConnectionError, match="other columns"):
        side.call(lambda c: None, write=False)
    side.close()


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (("notes_1_table",), "expected notes_0001_"),
        (("notes_0002_table",), "expected notes_0001_"),
        (("other_0001_table",), "expected notes_0001_"),
        (("notes_0001_table", "notes_0001_again"), "expected notes_0002_"),
        (("notes_0001_Table",), "expected notes_0001_"),
    ],
)
def test_migration_names_follow_the_rule(names: tuple[str, ...], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        _notes(*(Migration(n, ("SELECT 1",)) for n in names))


def test_both_engines_list_the_same_migrations() -> None:
    with pytest.raises(ValueError, match="other migrations on SQLite than on PostgreSQL"):
        SideSchema(
            store="notes",
            sqlite=(_NOTES_1, _NOTES_2),
            postgres=(_NOTES_1,),
            table="notes",
            columns=frozenset({"id"}),
        )


# -- the declared names ----------------------------------------------------------------------------


def test_migration_names_are_unique_across_stores() -> None:
    stores = [s.store for s in SCHEMAS.values()]
    assert len(set(stores)) == len(stores)
    for engine in ("sqlite", "postgres"):
        names = [n for s in SCHEMAS.values() for n in s.names(engine)]
        assert len(set(names)) == len(names), engine
        assert all(s.names(engine) for s in SCHEMAS.values()), engine


def test_every_declaration_is_here() -> None:
    # A new side store's SideSchema must join SCHEMAS (and so the uniqueness check above).
    declared = set()
    for path in (SRC / "memvault").rglob("*.py"):
        if path.name == "_sidetables.py":
            continue
        if re.search(r"^\w+ = SideSchema\(", path.read_text(encoding="utf-8"), re.MULTILINE):
            declared.add(".".join(path.relative_to(SRC).with_suffix("").parts))
    assert declared == set(SCHEMAS)
    adopted = {s.store for s in SCHEMAS.values()} - BORN_WITH_THE_LEDGER
    assert {c.schema.store for c in CASES} == adopted
