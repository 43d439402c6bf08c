"""PostgreSQL-specific behaviour: migrations, model tracking, errors, atomicity, and rankings
that agree with the SQLite backend on the same data."""

from __future__ import annotations

import asyncio
import importlib
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from memvault.backends.factory import open_backend
from memvault.backends.postgres import PostgresBackend
from memvault.backends.postgres._candidates import exact_scans
from memvault.backends.postgres._dsn import parse_dsn
from memvault.backends.postgres._rows import _PRIVATE_SCOPE, _where
from memvault.backends.postgres.schema import HNSW_INDEX, MIGRATIONS, SCHEMA_VERSION
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings import HashingEmbedder
from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryConfigError,
    MemoryConnectionError,
    MemoryError,
    MemoryRetrievalError,
    MemoryStoreError,
)
from memvault.models import (
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import Embedder
from postgres_server import SchemaFactory

pytestmark = pytest.mark.postgres

NOW = datetime(2025, 9, 1, 12, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    return NOW


class RenamedEmbedder:
    """The hashing embedder under another model id (same dimension)."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder(dimension=64)

    @property
    def model_id(self) -> str:
        return "some-other-model"

    @property
    def dimension(self) -> int:
        return 64

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)


class CachingEmbedder:
    """Wraps an embedder and remembers every vector, so two stores embed a corpus once."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._cache: dict[str, np.ndarray] = {}

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for text, vec in zip(missing, self._inner.embed_documents(missing), strict=True):
                self._cache[text] = np.asarray(vec, dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._inner.embed_query(text), dtype=np.float32)


def req(text: str, **kw: Any) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=text, **kw)


@pytest.fixture
def schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


@pytest.fixture
def make(postgres_url: str, schemas: SchemaFactory) -> Callable[..., PostgresBackend]:
    """``make(embedder=None, schema=None, **kw)``: a backend on a fresh (or the given) schema."""

    def build(
        embedder: Embedder | None = None, schema: str | None = None, **kw: Any
    ) -> PostgresBackend:
        return PostgresBackend(
            postgres_url,
            embedder or HashingEmbedder(dimension=64),
            schema=schema or schemas(),
            **kw,
        )

    return build


@pytest.fixture
async def backend(make: Callable[..., PostgresBackend]) -> AsyncIterator[PostgresBackend]:
    b = make()
    await b.connect()
    try:
        yield b
    finally:
        await b.disconnect()


def raw(url: str, schema: str) -> psycopg.Connection[Any]:
    """A plain connection with ``search_path`` on the store's schema (for inspection)."""
    conn = psycopg.connect(url, autocommit=True)
    conn.execute(sql.SQL("SET search_path TO {}, public").format(sql.Identifier(schema)))
    return conn


# -- migrations and model tracking -----------------------------------------------------------


async def test_migrations_apply_once_even_when_connects_race(
    make: Callable[..., PostgresBackend], postgres_url: str, schemas: SchemaFactory
) -> None:
    schema = schemas()
    racers = [make(schema=schema) for _ in range(4)]
    await asyncio.gather(*(b.connect() for b in racers))  # the advisory lock serialises them
    for b in racers:
        assert await b.schema_version() == SCHEMA_VERSION
        await b.disconnect()
    again = make(schema=schema)
    await again.connect()
    await again.disconnect()
    with raw(postgres_url, schema) as conn:
        rows = conn.execute("SELECT name FROM schema_migrations ORDER BY name").fetchall()
        meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
    assert [r[0] for r in rows] == [name for name, _ in MIGRATIONS]
    assert meta == {
        "schema_version": str(SCHEMA_VERSION),
        "embedding_model": "hashing-v1-64",
        "dimension": "64",
    }


async def test_data_survives_reconnect(make: Callable[..., PostgresBackend]) -> None:
    b = make()
    await b.connect()
    mid = await b.store("a", req("The staging database lives in eu-west-1"))
    await b.disconnect()
    assert not await b.health_check()
    b2 = make(schema=b.schema)
    await b2.connect()
    try:
        got = await b2.get("a", mid)
        assert got is not None and got.content == "The staging database lives in eu-west-1"
        hits = await b2.retrieve("a", MemoryQuery(text="staging database region"))
        assert [h.id for h in hits] == [mid]
    finally:
        await b2.disconnect()


async def test_other_model_same_dimension_raises_model_changed(
    make: Callable[..., PostgresBackend],
) -> None:
    b = make()
    await b.connect()
    await b.store("a", req("hello"))
    await b.disconnect()
    with pytest.raises(EmbeddingModelChangedError) as info:
        await make(RenamedEmbedder(), schema=b.schema).connect()
    assert not isinstance(info.value, DimensionMismatchError)
    assert info.value.stored_model == "hashing-v1-64"
    assert "reindex" in str(info.value)


async def test_other_dimension_raises_dimension_mismatch(
    make: Callable[..., PostgresBackend],
) -> None:
    b = make()
    await b.connect()
    await b.store("a", req("hello"))
    await b.disconnect()
    with pytest.raises(DimensionMismatchError) as info:
        await make(HashingEmbedder(dimension=32), schema=b.schema).connect()
    assert (info.value.stored_dimension, info.value.configured_dimension) == (64, 32)


async def test_empty_store_adopts_a_new_model(make: Callable[..., PostgresBackend]) -> None:
    b = make()
    await b.connect()
    mid = await b.store("a", req("hello"))
    await b.delete("a", mid)
    await b.disconnect()
    b2 = make(HashingEmbedder(dimension=32), schema=b.schema)
    await b2.connect()  # nothing stored: the vector column is retyped to the new dimension
    try:
        await b2.store("a", req("hello again in 32 dimensions"))
        hits = await b2.retrieve("a", MemoryQuery(text="hello again"))
        assert len(hits) == 1
        assert (await b2.stats()).dimension == 32
    finally:
        await b2.disconnect()


async def test_foreign_memories_table_is_not_modified(
    make: Callable[..., PostgresBackend], postgres_url: str, schemas: SchemaFactory
) -> None:
    schema = schemas()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE TABLE {}.memories (x int)").format(sql.Identifier(schema)))
    with pytest.raises(MemoryConnectionError, match="another application"):
        await make(schema=schema).connect()
    with raw(postgres_url, schema) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            [schema],
        ).fetchall()
    assert [t[0] for t in tables] == ["memories"]


# -- URLs, configuration and error translation ---------------------------------------------------


def test_location_never_shows_the_password() -> None:
    parsed = parse_dsn("postgresql+psycopg://bob:s3cr%40t@db.example:5433/mem?sslmode=require")
    assert parsed.location == "postgresql://bob@db.example:5433/mem?sslmode=require"
    assert parsed.conninfo.startswith("postgresql://bob:s3cr%40t@db.example:5433/mem")
    assert "s3cr@t" in parsed.secrets
    in_query = parse_dsn("postgresql://db/mem?password=hunter2&schema=tenant_a&application_name=x")
    assert in_query.schema == "tenant_a"
    assert "hunter2" not in in_query.location and "schema=" not in in_query.conninfo
    assert in_query.location == "postgresql://db/mem?application_name=x&schema=tenant_a"
    keywords = parse_dsn("host=db dbname=mem user=bob password=hunter2")
    assert "hunter2" not in keywords.location and "dbname=mem" in keywords.location
    backend = PostgresBackend(
        "postgresql://bob:pw@db/mem", HashingEmbedder(dimension=8), schema="tenant-b"
    )
    assert backend.location == "postgresql://bob@db/mem?schema=tenant-b"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"schema": ""}, "schema name"),
        ({"schema": "pg_catalog"}, "reserved"),
        ({"schema": "x" * 64}, "63 bytes"),
        ({"schema": "bad\nname"}, "schema name"),
        ({"pool_min": 5, "pool_max": 2}, "pool_min"),
    ],
)
def test_bad_configuration_is_a_config_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(MemoryConfigError, match=match):
        PostgresBackend("postgresql://db/mem", HashingEmbedder(dimension=8), **kwargs)


def test_unparseable_url_is_a_config_error_without_password() -> None:
    with pytest.raises(MemoryConfigError) as info:
        PostgresBackend("postgresql://u:topsecret@db/mem?nonsense=1", HashingEmbedder())
    assert "topsecret" not in str(info.value)


async def test_unreachable_server_is_a_connection_error_without_password() -> None:
    b = PostgresBackend(
        "postgresql://bob:topsecret@127.0.0.1:1/mem", HashingEmbedder(), connect_timeout=2
    )
    with pytest.raises(MemoryConnectionError) as info:
        await b.connect()
    assert "topsecret" not in str(info.value)
    assert "127.0.0.1" in str(info.value)
    assert not b.is_connected
    with pytest.raises(MemoryConnectionError):
        await b.store("a", req("never stored"))


def test_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name.startswith("memvault.backends.postgres"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MemoryConfigError, match=r"memvault\[postgres\]"):
        importlib.import_module("memvault.backends.postgres")


async def test_factory_opens_postgresql_urls(postgres_url: str, schemas: SchemaFactory) -> None:
    schema = schemas()
    sep = "&" if "?" in postgres_url else "?"
    b = open_backend(f"{postgres_url}{sep}schema={schema}", embedder=HashingEmbedder())
    assert isinstance(b, PostgresBackend)
    assert b.schema == schema
    await b.connect()
    try:
        assert await b.health_check()
        assert (await b.stats()).backend == "postgresql"
    finally:
        await b.disconnect()


async def test_driver_errors_are_translated(backend: PostgresBackend, postgres_url: str) -> None:
    mid = await backend.store("a", req("kept memory about apples"))
    with raw(postgres_url, backend.schema) as conn:
        conn.execute("ALTER TABLE memories RENAME COLUMN content TO body")
    with pytest.raises(MemoryRetrievalError, match="content") as read_info:
        await backend.get("a", mid)
    with pytest.raises(MemoryStoreError, match="content") as write_info:
        await backend.store("a", req("another memory"))
    for info in (read_info, write_info):
        assert not isinstance(info.value, psycopg.Error)
        assert isinstance(info.value.__cause__, psycopg.Error)
    with raw(postgres_url, backend.schema) as conn:
        conn.execute("ALTER TABLE memories RENAME COLUMN body TO content")
    assert await backend.get("a", mid) is not None


async def test_lost_connections_are_connection_errors_then_recover(
    postgres_url: str, schemas: SchemaFactory
) -> None:
    # A name of its own, so only this backend's sessions are terminated on a shared server.
    name = f"memvault-test-{schemas()}"
    sep = "&" if "?" in postgres_url else "?"
    backend = PostgresBackend(
        f"{postgres_url}{sep}application_name={name}", HashingEmbedder(), schema=schemas()
    )
    await backend.connect()
    try:
        await backend.store("a", req("survives a server-side disconnect"))
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            killed = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = %s",
                [name],
            ).fetchone()
        assert killed is not None and killed[0] >= 1
        with pytest.raises(MemoryConnectionError):
            await backend.count("a")
        # The pool drops the broken connection and opens a new one.
        assert await backend.count("a") == 1
        assert await backend.health_check()
    finally:
        await backend.disconnect()


# -- atomicity, statistics and isolation ---------------------------------------------------------


def lexical_state(url: str, schema: str) -> tuple[Any, ...]:
    """The collection statistics, checked against a recount from the rows themselves."""
    with raw(url, schema) as conn:
        stats = conn.execute("SELECT n, total_len FROM store_stats").fetchone()
        recount = conn.execute(
            "SELECT count(*), COALESCE(sum(doc_len), 0) FROM memories"
        ).fetchone()
        dfs = dict(conn.execute("SELECT term, df FROM term_stats WHERE df <> 0").fetchall())
        recount_dfs = dict(
            conn.execute(
                "SELECT k, count(*) FROM memories, jsonb_object_keys(term_freqs) AS k GROUP BY k"
            ).fetchall()
        )
        agents = dict(conn.execute("SELECT agent_id, n FROM agent_stats").fetchall())
        recount_agents = dict(
            conn.execute("SELECT agent_id, count(*) FROM memories GROUP BY agent_id").fetchall()
        )
    assert stats == recount
    assert dfs == recount_dfs
    assert agents == recount_agents
    return stats, dfs, agents


async def test_failed_batch_leaves_nothing(backend: PostgresBackend, postgres_url: str) -> None:
    first = await backend.store("a", req("kept memory about apples"))
    before = lexical_state(postgres_url, backend.schema)
    scores = (await backend.search_candidates("a", MemoryQuery(text="apples"), pool=5)).lexical
    with raw(postgres_url, backend.schema) as conn:
        # The third row of the batch fails inside the transaction.
        conn.execute(
            "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " IF NEW.content = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF;"
            " RETURN NEW; END $$"
        )
        conn.execute(
            "CREATE TRIGGER boom BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION boom()"
        )
    with pytest.raises(MemoryStoreError, match="poisoned"):
        await backend.store_many("a", [req("apples one"), req("apples two"), req("poison")])
    assert await backend.count("a") == 1
    assert lexical_state(postgres_url, backend.schema) == before
    cands = await backend.search_candidates("a", MemoryQuery(text="apples"), pool=5)
    assert cands.lexical == scores
    assert [i for i, _ in cands.dense] == [first]


async def test_statistics_follow_deletes_and_clears(
    backend: PostgresBackend, postgres_url: str
) -> None:
    ids = await backend.store_many(
        "a",
        [req(f"apples and pears number {i}", category=MemoryCategory.EPISODIC) for i in range(8)],
    )
    await backend.store_many("b", [req("pears only"), req("kiwis and apples")])
    await backend.delete("a", ids[0])
    await backend.clear("a", category=MemoryCategory.EPISODIC)
    _, _, agents = lexical_state(postgres_url, backend.schema)
    assert agents == {"b": 2}
    assert await backend.agent_ids() == ["b"]
    await backend.clear("b")
    stats, dfs, agents = lexical_state(postgres_url, backend.schema)
    assert stats == (0, 0) and dfs == {} and agents == {}
    assert (await backend.stats()).total == 0


async def test_agents_and_schemas_are_isolated(make: Callable[..., PostgresBackend]) -> None:
    one, two = make(), make()
    await one.connect()
    await two.connect()
    try:
        a_ids = await one.store_many("a", [req("alpha likes green tea"), req("alpha ships v2")])
        b_id = await one.store("b", req("beta likes green tea too"))
        await two.store("a", req("a different store entirely: green tea"))
        hits = await one.retrieve("a", MemoryQuery(text="green tea", limit=10))
        assert hits
        assert {h.id for h in hits} <= set(a_ids)
        assert await one.get("a", b_id) is None
        assert not await one.delete("a", b_id)
        assert await one.agent_ids() == ["a", "b"]
        assert await two.count("a") == 1
        assert await two.get("a", a_ids[0]) is None
        assert [e.content for e in await two.list_entries("a", MemoryQuery())] == [
            "a different store entirely: green tea"
        ]
    finally:
        await one.disconnect()
        await two.disconnect()


def test_ef_search_grows_with_the_agents_share() -> None:
    b = PostgresBackend("postgresql://db/mem", HashingEmbedder(dimension=8), exact_below=100)
    # Twice what the walk needs (2 x pool, at least 40, over the agent's share), up to 1000.
    assert b._ef_search(exact=False, n_total=10_000, n_agent=10_000, pool=50) == 200
    assert b._ef_search(exact=False, n_total=10_000, n_agent=10_000, pool=10) == 80
    assert b._ef_search(exact=False, n_total=10_000, n_agent=2_500, pool=50) == 800
    assert b._ef_search(exact=False, n_total=10_000, n_agent=2_000, pool=50) == 1000
    assert b._ef_search(exact=False, n_total=100_000, n_agent=10_000, pool=50) == 1000
    assert b._ef_search(exact=False, n_total=100_000, n_agent=9_000, pool=50) is None  # > 1000
    assert b._ef_search(exact=False, n_total=100_000, n_agent=1_000, pool=50) is None
    assert b._ef_search(exact=False, n_total=10_000, n_agent=100, pool=50) is None
    assert b._ef_search(exact=True, n_total=10_000, n_agent=10_000, pool=50) is None
    off = PostgresBackend("postgresql://db/mem", HashingEmbedder(dimension=8), hnsw=False)
    assert off._ef_search(exact=False, n_total=10_000, n_agent=10_000, pool=50) is None


# -- ranking agreement with SQLite ---------------------------------------------------------------

PEOPLE = ["Priya", "Marco", "Chen", "Amara", "Lukas", "Sofia", "Kenji", "Olu", "Ines", "Tomas"]
NOUNS = [
    "database",
    "migration",
    "deploy",
    "rollback",
    "invoice",
    "dashboard",
    "latency",
    "cache",
    "kubernetes",
    "terraform",
    "budget",
    "roadmap",
    "onboarding",
    "vacation",
    "marathon",
    "recipe",
    "sourdough",
    "guitar",
    "apartment",
    "passport",
    "dentist",
    "garden",
    "bicycle",
    "concert",
    "birthday",
    "conference",
    "laptop",
    "keyboard",
    "espresso",
    "newsletter",
    "pipeline",
    "certificate",
    "firewall",
    "backup",
    "sprint",
    "retrospective",
    "contract",
    "mortgage",
    "painting",
    "telescope",
]
VERBS = [
    "reviewed",
    "postponed",
    "fixed",
    "discussed",
    "bought",
    "cancelled",
    "planned",
    "shipped",
    "recommended",
    "complained about",
    "finished",
    "booked",
]
ADJECTIVES = ["urgent", "flaky", "expensive", "quiet", "broken", "new", "old", "shared", "slow"]
TEMPLATES = [
    "{p} {v} the {a} {n1} after the {n2} meeting.",
    "Ticket {t} tracks the {a} {n1} in the {n2} service.",
    "{p} says the {n1} is {a} because of the {n2}.",
    "Reminder: {p} {v} a {n1} and wants to talk about the {n2} and the {n3}.",
    "We {v} the {n1} {n2}; {p} will follow up on the {a} {n3} next week.",
]
QUERIES = [
    "database migration rollback",
    "Priya guitar concert",
    "who booked the vacation?",
    "flaky pipeline ticket",
    "sourdough recipe",
    "what did Marco say about the budget?",
    "kubernetes latency cache",
    "expensive laptop keyboard",
    "dentist appointment",
    "marathon training",
    "terraform firewall certificate",
    "what happened in March 2025",
    "Kenji newsletter",
    "mortgage contract apartment",
    "telescope painting garden",
    "broken backup",
    "retrospective sprint roadmap",
    "espresso conference",
    "Sofia bicycle passport",
    "onboarding dashboard invoice",
]
T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def corpus(n: int = 1_050, seed: int = 7) -> list[MemoryStoreRequest]:
    """A fixed, generated corpus: varied sentences, rare ticket ids, months of timestamps."""
    rng = random.Random(seed)
    out: list[MemoryStoreRequest] = []
    categories = list(MemoryCategory)
    for i in range(n):
        text = rng.choice(TEMPLATES).format(
            p=rng.choice(PEOPLE),
            v=rng.choice(VERBS),
            a=rng.choice(ADJECTIVES),
            n1=rng.choice(NOUNS),
            n2=rng.choice(NOUNS),
            n3=rng.choice(NOUNS),
            t=f"XK-{rng.randrange(1000, 9999)}",
        )
        out.append(
            MemoryStoreRequest(
                content=text,
                category=categories[i % len(categories)],
                # Strictly increasing: export order is insertion order, so rowids agree.
                created_at=T0 + timedelta(hours=3 * i),
            )
        )
    return out


@pytest.fixture(scope="module")
def corpus_embedder(minilm: Embedder) -> CachingEmbedder:
    """The real model behind a cache shared by this module's tests."""
    return CachingEmbedder(minilm)


def overlap(a: Sequence[MemoryEntry], b: Sequence[MemoryEntry]) -> int:
    return len({e.id for e in a} & {e.id for e in b})


async def test_rankings_agree_with_sqlite(
    tmp_path: Path, make: Callable[..., PostgresBackend], corpus_embedder: CachingEmbedder
) -> None:
    requests = corpus()
    lite = SQLiteBackend(tmp_path / "ref.db", corpus_embedder, clock=fixed_clock)
    # The HNSW index is not needed here (these agents are searched exactly); skipping it keeps
    # the bulk import fast. test_hnsw_search_finds_the_exact_neighbours covers the index.
    pg = make(corpus_embedder, hnsw=False, clock=fixed_clock)
    await lite.connect()
    await pg.connect()
    try:
        # Three agents share the store, so collection statistics span agents (as in FTS5).
        for k, agent in enumerate(("agent-0", "agent-1", "agent-2")):
            await lite.store_many(agent, requests[k::3])
        exported = [e async for e in lite.export_entries()]
        assert len(exported) == len(requests)
        assert await pg.import_entries(exported) == len(exported)
        again = [e async for e in pg.export_entries()]  # two pages of keyset pagination
        assert [e.to_json() for e in again] == [e.to_json() for e in exported]

        for text in QUERIES:
            for agent in ("agent-0", "agent-2"):
                q = MemoryQuery(text=text, limit=5)
                want = await lite.retrieve(agent, q)
                got = await pg.retrieve(agent, q)
                assert len(got) == len(want) == 5
                assert overlap(got, want) >= 4, (text, agent)

                lq = MemoryQuery(text=text)
                ref = await lite.search_candidates(agent, lq, pool=100, dense=False)
                ours = await pg.search_candidates(agent, lq, pool=100, dense=False)
                assert [i for i, _ in ours.lexical] == [i for i, _ in ref.lexical], text
                for (_, s_ours), (_, s_ref) in zip(ours.lexical, ref.lexical, strict=True):
                    assert s_ours == pytest.approx(s_ref, rel=1e-6, abs=0)

                near_ref = await lite.search_candidates(agent, lq, pool=20, neighbours=5)
                near = await pg.search_candidates(agent, lq, pool=20, neighbours=5)
                assert near.neighbours == near_ref.neighbours
                dense_ref = [i for i, _ in near_ref.dense[:10]]
                assert len(set(dense_ref) & {i for i, _ in near.dense[:10]}) >= 9
    finally:
        await lite.disconnect()
        await pg.disconnect()


async def test_hnsw_search_finds_the_exact_neighbours(
    make: Callable[..., PostgresBackend], corpus_embedder: CachingEmbedder, postgres_url: str
) -> None:
    # exact_below=0 forces the index for every agent, however small.
    pg = make(corpus_embedder, exact_below=0, clock=fixed_clock)
    await pg.connect()
    try:
        await pg.store_many("a", corpus()[:400])
        await pg.store_many("b", corpus(n=50, seed=8))
        rows = [e async for e in pg.export_entries("a")]
        matrix = corpus_embedder.embed_documents([e.content for e in rows])
        recall: list[float] = []
        for text in QUERIES:
            q = MemoryQuery(text=text)
            approx = await pg.search_candidates("a", q, pool=10)
            exact = await pg.search_candidates("a", q, pool=10, exact=True)
            # exact=True is brute force: it agrees with numpy over every row of the agent.
            sims = matrix @ corpus_embedder.embed_query(text)
            best = {rows[i].id: float(sims[i]) for i in np.argsort(-sims, kind="stable")[:10]}
            assert len({i for i, _ in exact.dense} & set(best)) >= 9
            for entry_id, score in exact.dense:
                if entry_id in best:
                    assert score == pytest.approx(best[entry_id], abs=1e-5)
            recall.append(len({i for i, _ in approx.dense} & {i for i, _ in exact.dense}) / 10)
            assert all(pg_entry.agent_id == "a" for pg_entry in approx.entries.values())
        assert sum(recall) / len(recall) >= 0.9
        # exact_scans() makes every dense search inside it exact (benchmarks use it for a whole
        # search's recall); outside it the graph is walked again.
        asked: list[bool] = []
        walk = pg._ef_search

        def spy(*, exact: bool, **kwargs: Any) -> int | None:
            asked.append(exact)
            return walk(exact=exact, **kwargs)

        pg._ef_search = spy  # type: ignore[method-assign]
        q = MemoryQuery(text=QUERIES[0])
        with exact_scans():
            scoped = await pg.search_candidates("a", q, pool=10)
        await pg.search_candidates("a", q, pool=10)
        del pg._ef_search
        assert asked == [True, False]
        reference = await pg.search_candidates("a", q, pool=10, exact=True)
        assert scoped.dense == reference.dense
        # The approximate searches really walked the HNSW index. Closing the pool ends its
        # server processes, which flushes their statistics (idle ones wait up to 10 s).
        await pg.disconnect()
        deadline = time.monotonic() + 5
        scans = 0
        while time.monotonic() < deadline:
            with psycopg.connect(postgres_url, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT idx_scan FROM pg_stat_user_indexes"
                    " WHERE schemaname = %s AND indexrelname = %s",
                    [pg.schema, HNSW_INDEX],
                ).fetchone()
            scans = int(row[0]) if row else 0
            if scans:
                break
            await asyncio.sleep(0.2)
        assert scans > 0
    finally:
        await pg.disconnect()


async def test_filters_apply_to_the_index_path(make: Callable[..., PostgresBackend]) -> None:
    pg = make(exact_below=0)
    await pg.connect()
    try:
        ids = await pg.store_many(
            "a",
            [req(f"note {i} about the garden", category=MemoryCategory.EPISODIC) for i in range(30)]
            + [req("semantic fact about the garden", category=MemoryCategory.SEMANTIC)],
        )
        q = MemoryQuery(text="garden", categories=frozenset({MemoryCategory.SEMANTIC}))
        # The graph walk's rows are almost all filtered out: the exact fallback still finds it.
        cands = await pg.search_candidates("a", q, pool=5)
        assert [i for i, _ in cands.dense] == [ids[-1]]
    finally:
        await pg.disconnect()


async def test_errors_are_memvault_errors_only(backend: PostgresBackend) -> None:
    await backend.disconnect()
    for call in (
        backend.count("a"),
        backend.get("a", "01900000-0000-7000-8000-000000000000"),
        backend.list_entries("a", MemoryQuery()),
    ):
        with pytest.raises(MemoryError):
            await call


# -- metadata filters: migration m004, the scope-key indexes, the HNSW path -----------------------


async def test_metadata_filters_apply_to_the_index_path(
    make: Callable[..., PostgresBackend],
) -> None:
    pg = make(exact_below=0)
    await pg.connect()
    try:
        ids = await pg.store_many(
            "a",
            [req(f"note {i} about the garden") for i in range(30)]
            + [req("one more garden note", metadata=MemoryMetadata(extra={"user_id": "u1"}))],
        )
        q = MemoryQuery(text="garden", filters={"user_id": "u1"})
        cands = await pg.search_candidates("a", q, pool=5)
        assert [i for i, _ in cands.dense] == [ids[-1]]
        assert [i for i, _ in cands.lexical] == [ids[-1]]
    finally:
        await pg.disconnect()


async def test_m004_repairs_non_json_metadata_and_indexes_the_scope_keys(
    make: Callable[..., PostgresBackend], postgres_url: str, schemas: SchemaFactory
) -> None:
    schema = schemas()
    b = make(schema=schema)
    await b.connect()
    nan = await b.store("a", req("written with NaN by an older version"))
    nul = await b.store("a", req("written with a NUL escape"))
    banana = await b.store("a", req("valid JSON that mentions NaN", metadata=_extra(f="BaNaNa")))
    fine = await b.store("a", req("fine", metadata=_extra(user_id="u1")))
    await b.disconnect()
    with raw(postgres_url, schema) as conn:
        # Roll the store back to before m004, with what older versions could leave in ``extra``.
        conn.execute("DELETE FROM schema_migrations WHERE name = 'm004_metadata_filters'")
        for key in ("user_id", "session_id", "run_id", "namespace"):
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(f"memories_agent_{key}")))
        conn.execute(
            "UPDATE memories SET extra = %s WHERE id = %s",
            ['{"score": NaN, "user_id": "u1", "worst": -Infinity}', nan],
        )
        conn.execute("UPDATE memories SET extra = %s WHERE id = %s", ['{"s": "a\\u0000b"}', nul])
    b = make(schema=schema)
    await b.connect()
    try:
        repaired = await b.get("a", nan)
        assert repaired is not None
        assert repaired.metadata.extra == {"score": None, "user_id": "u1", "worst": None}
        cleaned = await b.get("a", nul)
        assert cleaned is not None and cleaned.metadata.extra == {"s": "ab"}
        untouched = await b.get("a", banana)
        assert untouched is not None and untouched.metadata.extra == {"f": "BaNaNa"}
        q = MemoryQuery(limit=10, filters={"user_id": "u1"})
        assert {e.id for e in await b.list_entries("a", q)} == {nan, fine}
        assert await b.count("a", filters=q.filters) == 2
    finally:
        await b.disconnect()
    with raw(postgres_url, schema) as conn:
        conn.execute("SET enable_seqscan = off")
        for key in ("user_id", "session_id", "run_id", "namespace"):
            where, params = _where(MemoryQuery(filters={key: "x"}), NOW)
            plan = " ".join(
                r[0]
                for r in conn.execute(
                    f"EXPLAIN SELECT m.rowid FROM memories m WHERE {_PRIVATE_SCOPE} AND {where}",
                    ["a", *params],
                )
            )
            assert f"memories_agent_{key}" in plan, plan


def _extra(**extra: Any) -> MemoryMetadata:
    return MemoryMetadata(extra=extra)


def test_tsquery_matches_any_term_or_two_paired_ones() -> None:
    from memvault.backends.postgres._rows import _tsquery

    assert _tsquery(["a", "o'k"]) == "'a' | 'o''k'"
    assert _tsquery(["r"], ["x", "y", "z"]) == "'r' | ('x' & 'y') | ('x' & 'z') | ('y' & 'z')"
    assert _tsquery([], ["x", "y"]) == "('x' & 'y')"
    assert _tsquery([]) == ""


async def test_bm25_reads_every_kind_of_term_as_sqlite_does(
    tmp_path: Path, make: Callable[..., PostgresBackend]
) -> None:
    # Terms become column names of one jsonb_to_record call: a term of exactly 63 bytes is
    # the longest name PostgreSQL keeps, longer ones are read with ->> instead, a repeated
    # query term counts twice (as in FTS5), non-ASCII terms and SQL-looking words are names
    # like any other. Scores match SQLite's in every case (to rounding: the two sum the same
    # terms in a different order).
    long63, long70 = "q" * 63, "z" * 70
    texts = [
        f"{long63} alpha beta",
        f"{long70} beta gamma",
        f"{long70} {long63} alpha alpha",
        "Ärger über straße select drop from",
        "beta beta beta delta",
        "unrelated words only",
    ]
    lite = SQLiteBackend(tmp_path / "ref.db", HashingEmbedder(dimension=64), clock=fixed_clock)
    pg = make(hnsw=False, clock=fixed_clock)
    await lite.connect()
    await pg.connect()
    try:
        await lite.store_many("a", [req(t) for t in texts])
        await pg.import_entries([e async for e in lite.export_entries()])
        for text in (
            f"{long63} beta",
            f"{long70} alpha",
            f"{long70} {long63}",
            "alpha alpha beta",
            "ärger straße",
            'select "from" drop',
            "nothing matches here",
        ):
            q = MemoryQuery(text=text)
            ref = (await lite.search_candidates("a", q, pool=10, dense=False)).lexical
            got = (await pg.search_candidates("a", q, pool=10, dense=False)).lexical
            assert [i for i, _ in got] == [i for i, _ in ref], text
            assert [s for _, s in got] == pytest.approx([s for _, s in ref], rel=1e-12), text
        assert (await pg.search_candidates("a", MemoryQuery(text=long70), pool=10)).lexical
    finally:
        await lite.disconnect()
        await pg.disconnect()


async def test_bounded_lexical_scan_scores_exactly_within_scope(
    make: Callable[..., PostgresBackend],
) -> None:
    requests = corpus()
    full = make(hnsw=False, lexical_scan_rows=0)
    await full.connect()
    # The same store, scoring at most 40 rows by term match (a few percent of the corpus, as
    # the default 5,000 is of a store of 100k+): from the default store size, and at any size.
    small = make(schema=full.schema, hnsw=False, lexical_scan_rows=40)
    await small.connect()
    bounded = make(schema=full.schema, hnsw=False, lexical_scan_rows=40, lexical_bound_min_rows=0)
    await bounded.connect()
    try:
        for k, agent in enumerate(("a", "b", "c")):
            await full.store_many(agent, requests[k::3])
        # Stores under 20,000 rows are never bounded: every list is the unbounded one.
        for text in QUERIES[:5]:
            q = MemoryQuery(text=text)
            want = await full.search_candidates("a", q, pool=20)
            assert (await small.search_candidates("a", q, pool=20)).lexical == want.lexical
        own = {e.id: e async for e in full.export_entries("a")}
        ticket = next(
            r.content.split()[1] for r in requests[0::3] if r.content.startswith("Ticket")
        )
        changed = 0
        for text in [*QUERIES, f"which ticket is {ticket}?"]:
            q = MemoryQuery(text=text)
            all_rows = await full.search_candidates("a", q, pool=5_000, dense=False)
            everything = dict(all_rows.lexical)
            got = await bounded.search_candidates("a", q, pool=20)
            scores = [s for _, s in got.lexical]
            assert scores == sorted(scores, reverse=True)
            assert len(got.lexical) <= 20
            for entry_id, score in got.lexical:
                # Only this agent's rows, each with FTS5's score over every query term.
                assert entry_id in own
                assert score == pytest.approx(everything[entry_id], rel=1e-12)
            # The dense candidates are always scored: none that matches a term and beats the
            # last row kept is missing.
            floor = scores[-1] if len(scores) == 20 else 0.0
            kept = {i for i, _ in got.lexical}
            for entry_id, _ in got.dense:
                if everything.get(entry_id, 0.0) > floor:
                    assert entry_id in kept, (text, entry_id)
            changed += [i for i, _ in got.lexical] != [i for i, _ in all_rows.lexical[:20]]
        # The bound was reached (the lists differ from the unbounded ones) for most queries.
        assert changed >= len(QUERIES) // 2
        # A rare term's rows fit the bound, so they are all scored: the ticket's row leads.
        q = MemoryQuery(text=f"which ticket is {ticket}?")
        got = await bounded.search_candidates("a", q, pool=20)
        assert ticket.lower() in own[got.lexical[0][0]].content.lower()
        # Lexical-only searches of common terms still get rows (the first ones within the
        # bound), and filters apply on the bounded path too.
        flt = MemoryQuery(text="the meeting", categories=frozenset({MemoryCategory.SEMANTIC}))
        alone = await bounded.search_candidates("a", flt, pool=10, dense=False)
        assert 0 < len(alone.lexical) <= 10
        assert all(own[i].category is MemoryCategory.SEMANTIC for i, _ in alone.lexical)
        assert all("meeting" in own[i].content for i, _ in alone.lexical)
    finally:
        await bounded.disconnect()
        await small.disconnect()
        await full.disconnect()


async def test_candidates_carry_the_analysed_content_of_long_entries(
    backend: PostgresBackend,
) -> None:
    """Long candidates come with their terms (from ``term_freqs``), so ranking need not analyse
    their text again: exactly the terms of ``index_text(content)``, each as often, date terms
    excluded; short ones are left to ranking's memo."""
    from memvault.retrieval._textcache import LONG_TEXT_CHARS
    from memvault.retrieval.text import index_text

    may = datetime(2023, 5, 8, tzinfo=UTC)
    long_texts = [
        "Zebra herds migrate in May 2023 across the plains. " * 12,  # its own month and year
        "Zebras, zebras and more zebra stripes; the of and 42 42. " * 12,
    ]
    assert all(len(t) > LONG_TEXT_CHARS for t in long_texts)
    for text in [*long_texts, "A short zebra fact."]:
        await backend.store("a", MemoryStoreRequest(content=text, created_at=may))
    cands = await backend.search_candidates("a", MemoryQuery(text="zebra stripes"), pool=10)
    assert len(cands.entries) == 3
    long_ids = {i for i, e in cands.entries.items() if len(e.content) > LONG_TEXT_CHARS}
    assert set(cands.analysed) == long_ids and len(long_ids) == 2
    for entry_id in long_ids:
        expected = index_text(cands.entries[entry_id].content).split()
        assert sorted(cands.analysed[entry_id].split()) == sorted(expected)


async def test_static_vectors_are_stored_and_a_row_without_one_ranks_the_same(
    make: Callable[..., PostgresBackend],
    postgres_url: str,
    schemas: SchemaFactory,
    minilm: Embedder,
) -> None:
    from memvault.retrieval import evidence
    from memvault.retrieval.evidence import static_vectors

    turns = [
        "Alice: I made spaghetti carbonara for my friend Sam on Friday night.",
        "Bob: The staging database lives in eu-west-1 and is backed up hourly.",
        "Alice: I planted tomatoes and basil in the balcony garden.",
    ]
    schema = schemas()
    b = make(embedder=minilm, schema=schema)
    await b.connect()
    try:
        for t in turns:
            await b.store("a", req(t))
        with raw(postgres_url, schema) as conn:
            stored = dict(conn.execute("SELECT content, static FROM memories").fetchall())
        # One float16 vector per memory, exactly what ranking computes from the content.
        for t, vec in zip(turns, static_vectors(turns), strict=True):
            assert bytes(stored[t]) == np.ascontiguousarray(vec, dtype="<f2").tobytes()
        query = MemoryQuery(text="What did Alice cook for her friend?", limit=3)
        before = [(h.id, h.relevance_score) for h in await b.retrieve("a", query)]
        # Rows written before the column existed hold NULL: ranking computes their vectors
        # (ranking's memo is emptied so that it must) and ranks them the same.
        with raw(postgres_url, schema) as conn:
            conn.execute("UPDATE memories SET static = NULL")
            conn.commit()
        evidence._profiles.clear()
        after = [(h.id, h.relevance_score) for h in await b.retrieve("a", query)]
        assert after == before and before[0][1] is not None
    finally:
        await b.disconnect()
