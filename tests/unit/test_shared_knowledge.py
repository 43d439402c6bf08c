"""Shared knowledge beyond the backend contract: the front door, ranking, tenant naming, upgrades.

The behaviour every backend must show (publish, search_shared, retract, audit, isolation) is in
:class:`memvault.testing.SharedKnowledgeContract`; this file covers what sits around it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from memvault import Memory, MemoryCapabilityError, MemoryValidationError, MemvaultConfig
from memvault.backends.factory import (
    check_tenant,
    create_memory_backend,
    open_backend,
    tenant_schema,
    tenant_slug,
)
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.postgres import PostgresBackend
from memvault.backends.postgres.schema import M001_INITIAL as PG_M001
from memvault.backends.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from memvault.backends.postgres.schema import migration_sql
from memvault.backends.sqlite import SQLiteBackend
from memvault.backends.sqlite.schema import M001_INITIAL as SQLITE_M001
from memvault.backends.sqlite.schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from memvault.config import MemoryOptionsConfig, MemoryStorageConfig
from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryConfigError
from memvault.models import MemoryCategory, MemoryQuery, MemoryScope, MemoryStoreRequest
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig
from memvault.retrieval.text import index_text
from postgres_server import SchemaFactory

# -- the front door ---------------------------------------------------------------------------


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(str(tmp_path / "m.db"), embedder=minilm) as m:
        yield m


def test_publish_search_shared_and_retract(mem: Memory) -> None:
    own = mem.add("I keep the deploy checklist in my notes", agent_id="dev-2")
    pub = mem.publish(
        "Deploys need a green canary for 30 minutes",
        agent_id="dev-1",
        category="procedural",
        tags=["non-inferable"],
        metadata={"source_task": "T-9"},
    )
    hits = mem.search_shared("how do we deploy?")
    assert [h.id for h in hits] == [pub]
    assert hits[0].scope is MemoryScope.SHARED
    assert hits[0].category is MemoryCategory.PROCEDURAL
    assert hits[0].tags == ("non-inferable",)
    assert hits[0].metadata.extra == {"source_task": "T-9"}
    assert hits[0].score is None  # like search() without explain
    assert mem.search_shared("how do we deploy?", exclude_agent="dev-1") == []
    # dev-2's private search does not see it unless asked; then both, best first.
    assert [h.id for h in mem.search("deploy", agent_id="dev-2")] == [own]
    both = mem.search("deploy canary", agent_id="dev-2", include_shared=True)
    assert [h.id for h in both] == [pub, own]
    assert not mem.retract(pub, agent_id="dev-2")
    assert mem.retract(pub, agent_id="dev-1")
    assert mem.search_shared("how do we deploy?") == []
    assert mem.get(pub, agent_id="dev-1").retracted_at is not None


def test_shared_hits_do_not_count_as_the_searchers_accesses(mem: Memory) -> None:
    pub = mem.publish("The office closes at 6pm", agent_id="a")
    own = mem.add("I leave the office at 5pm", agent_id="a")
    hits = mem.search("office", agent_id="a", include_shared=True)
    assert {h.id for h in hits} == {pub, own}
    assert mem.get(own, agent_id="a").access_count == 1
    assert mem.get(pub, agent_id="a").access_count == 0  # shared rows are append-only


def test_empty_shared_query_is_rejected(mem: Memory) -> None:
    with pytest.raises(MemoryValidationError):
        mem.search_shared("  ")


def test_disabled_shared_knowledge_is_a_capability_error(tmp_path: Path, minilm: Embedder) -> None:
    cfg = MemvaultConfig(options=MemoryOptionsConfig(shared_knowledge_base=False))
    with Memory(str(tmp_path / "m.db"), config=cfg, embedder=minilm) as m:
        assert not m.backend.supports_shared_access
        for call in (
            lambda: m.publish("x", agent_id="a"),
            lambda: m.search_shared("x"),
            lambda: m.retract("01900000-0000-7000-8000-000000000000", agent_id="a"),
            lambda: m.search("x", agent_id="a", include_shared=True),
        ):
            with pytest.raises(MemoryCapabilityError, match="shared_knowledge_base"):
                call()


async def test_disabled_backend_refuses_shared_calls(minilm: Embedder) -> None:
    backend = open_backend(
        "memory://",
        embedder=minilm,
        config=MemvaultConfig(options=MemoryOptionsConfig(shared_knowledge_base=False)),
    )
    assert isinstance(backend, InMemoryBackend)
    await backend.connect()
    assert not backend.supports_shared_access
    with pytest.raises(MemoryCapabilityError):
        await backend.publish("a", MemoryStoreRequest(content="x"))
    with pytest.raises(MemoryCapabilityError):
        await backend.search_shared(MemoryQuery(text="x"))
    with pytest.raises(MemoryCapabilityError):
        await backend.retrieve("a", MemoryQuery(text="x", include_shared=True))


# -- ranking ----------------------------------------------------------------------------------


async def test_shared_entries_get_no_personal_boost(minilm: Embedder) -> None:
    backend = InMemoryBackend(minilm, preset=RetrievalConfig(personal_boost=0.3))
    await backend.connect()
    own = await backend.store("b", MemoryStoreRequest(content="Our team standup is at 9:30"))
    pub = await backend.publish("a", MemoryStoreRequest(content="Company standup is at 10:00"))
    hits = await backend.retrieve("b", MemoryQuery(text="when is standup?", include_shared=True))
    boost = {h.id: h.score.boost for h in hits if h.score is not None}
    assert boost[own] > 0.0
    assert boost[pub] == 0.0
    alone = await backend.search_shared(MemoryQuery(text="when is standup?"))
    assert [(h.id, h.score.boost if h.score else None) for h in alone] == [(pub, 0.0)]


# -- tenants ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "tab\there", "x" * 101])
def test_bad_tenant_names_are_config_errors(bad: str) -> None:
    with pytest.raises(MemoryConfigError, match="tenant"):
        check_tenant(bad)


def test_tenant_slugs_are_distinct_even_on_case_insensitive_file_systems() -> None:
    names = ["acme", "Acme", "ACME", "a/b", "a_b", "a.b", "a b", "acme.0123456789", "ünï"]
    slugs = [tenant_slug(n) for n in names]
    assert tenant_slug("acme") == "acme"  # plain names keep their existing file
    assert len({s.lower() for s in slugs}) == len(names)
    assert all("/" not in s and "\\" not in s for s in slugs)


def test_tenant_schemas_are_distinct_short_and_safe() -> None:
    names = ["acme", "Acme", "a-b", "a_b", "x" * 100, "ünï", "pg_catalog"]
    schemas = [tenant_schema(n) for n in names]
    assert len(set(schemas)) == len(names)
    for s in schemas:
        assert s.startswith("t_")
        assert len(s.encode()) <= 63
        assert s == s.lower()
    assert tenant_schema("acme", "memvault").startswith("memvault_acme_")


def test_tenant_postgres_url_gets_its_own_schema(minilm: Embedder) -> None:
    base = "postgresql://u:secret@db.example/mem?sslmode=disable&schema=prod"
    cfg = MemvaultConfig(storage=MemoryStorageConfig(url=base))
    backend = create_memory_backend(cfg, embedder=minilm, tenant="Acme Corp")
    assert isinstance(backend, PostgresBackend)
    assert backend.schema == tenant_schema("Acme Corp", "prod")
    assert "secret" not in backend.location
    assert "sslmode=disable" in backend.location
    other = create_memory_backend(cfg, embedder=minilm, tenant="acme corp")
    assert isinstance(other, PostgresBackend)
    assert other.schema != backend.schema


def test_memory_tenants_are_separate_objects(minilm: Embedder) -> None:
    cfg = MemvaultConfig(storage=MemoryStorageConfig(url="memory://"))
    a = create_memory_backend(cfg, embedder=minilm, tenant="a")
    b = create_memory_backend(cfg, embedder=minilm, tenant="b")
    assert a is not b


# -- upgrades from m001 -----------------------------------------------------------------------


async def test_sqlite_store_of_m001_is_upgraded_in_place(tmp_path: Path) -> None:
    embedder = HashingEmbedder(dimension=8)
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    try:
        conn.executescript(SQLITE_M001)
        conn.execute(
            "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)"
        )
        conn.execute("INSERT INTO schema_migrations VALUES ('m001_initial', 0)")
        conn.executemany(
            "INSERT INTO store_meta VALUES (?, ?)",
            [
                ("schema_version", "1"),
                ("generation", "0"),
                ("embedding_model", embedder.model_id),
                ("dimension", "8"),
            ],
        )
        text = "The old store remembers that tea is served at four"
        conn.execute(
            "INSERT INTO memories (id, agent_id, category, content, created_at, updated_at)"
            " VALUES ('01900000-0000-7000-8000-000000000001', 'a', 'semantic', ?, 1, 1)",
            (text,),
        )
        vector = np.asarray(embedder.embed_documents([text])[0], dtype="<f4").tobytes()
        conn.execute("INSERT INTO memory_vectors VALUES (1, ?)", (vector,))
        conn.execute("INSERT INTO memories_fts (rowid, body) VALUES (1, ?)", (index_text(text),))
        conn.commit()
    finally:
        conn.close()
    backend = SQLiteBackend(path, embedder)
    await backend.connect()
    try:
        assert await backend.schema_version() == SQLITE_SCHEMA_VERSION >= 2
        old = await backend.get("a", "01900000-0000-7000-8000-000000000001")
        assert old is not None
        assert old.retracted_at is None
        assert old.scope is MemoryScope.PRIVATE
        assert await backend.count("a") == 1
        hits = await backend.retrieve("a", MemoryQuery(text="when is tea served?"))
        assert [h.id for h in hits] == [old.id]
        pub = await backend.publish("a", MemoryStoreRequest(content="Tea is served at four"))
        assert [h.id for h in await backend.search_shared(MemoryQuery(text="tea"))] == [pub]
        assert [r.action for r in await backend.audit_log()] == ["shared.publish"]
    finally:
        await backend.disconnect()


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


@pytest.mark.postgres
async def test_postgres_store_of_m001_is_upgraded_in_place(
    postgres_url: str, pg_schemas: SchemaFactory
) -> None:
    embedder = HashingEmbedder(dimension=8)
    schema = pg_schemas()
    text = "The old store remembers that tea is served at four"
    vector = "[" + ",".join(repr(float(x)) for x in embedder.embed_documents([text])[0]) + "]"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
        conn.execute(migration_sql(PG_M001, 8))
        conn.execute(
            'CREATE TABLE schema_migrations (name text COLLATE "C" PRIMARY KEY,'
            " applied_at timestamptz NOT NULL)"
        )
        conn.execute("INSERT INTO schema_migrations VALUES ('m001_initial', now())")
        conn.execute(
            "INSERT INTO store_meta VALUES ('schema_version', '1'), (%s, %s), ('dimension', '8')",
            ["embedding_model", embedder.model_id],
        )
        terms: dict[str, Any] = {}
        conn.execute(
            "INSERT INTO memories (id, agent_id, category, content, tags, confidence, importance,"
            " extra, scope, created_at, updated_at, embedding, lexemes, term_freqs, doc_len)"
            " VALUES ('01900000-0000-7000-8000-000000000001', 'a', 'semantic', %s, '{}', 1, 0.5,"
            " '{}', 'private', now(), now(), %s::vector, ''::tsvector, %s::jsonb, 0)",
            [text, vector, json.dumps(terms)],
        )
        conn.execute("INSERT INTO agent_stats VALUES ('a', 1)")
        conn.execute("UPDATE store_stats SET n = 1")
    backend = PostgresBackend(postgres_url, embedder, schema=schema)
    await backend.connect()
    try:
        assert await backend.schema_version() == PG_SCHEMA_VERSION == 6
        old = await backend.get("a", "01900000-0000-7000-8000-000000000001")
        assert old is not None
        assert old.retracted_at is None
        assert await backend.count("a") == 1
        hits = await backend.retrieve("a", MemoryQuery(text="when is tea served?"))
        assert [h.id for h in hits] == [old.id]  # found densely
        pub = await backend.publish("a", MemoryStoreRequest(content="Tea is served at four"))
        assert [h.id for h in await backend.search_shared(MemoryQuery(text="tea"))] == [pub]
        assert await backend.retract("a", pub)
        assert [r.action for r in await backend.audit_log(memory_id=pub)] == [
            "shared.publish",
            "shared.retract",
        ]
    finally:
        await backend.disconnect()
