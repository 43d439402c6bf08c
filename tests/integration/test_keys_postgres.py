"""PostgresKeyStore on the real PostgreSQL server: round trip, hash-only storage, schemas."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import psycopg
import pytest

from memvault.backends.postgres import PostgresBackend
from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryConfigError, MemoryConnectionError, MemoryValidationError
from memvault.server.keys import KeyStore, PostgresKeyStore, Scope, open_key_store
from postgres_server import SchemaFactory

pytestmark = pytest.mark.postgres


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture
def store(postgres_url: str, pg_schemas: SchemaFactory) -> Iterator[PostgresKeyStore]:
    """A key store in a fresh schema, opened through the storage URL as the CLI does."""
    opened = open_key_store(_with_schema(postgres_url, pg_schemas()))
    assert isinstance(opened, PostgresKeyStore)
    yield opened
    opened.close()


def test_round_trip(store: KeyStore) -> None:
    key, secret = store.create(name="ci", tenant="acme", scopes=["write"], agent_id="dev-1")
    assert store.authenticate(secret) == key
    assert store.get(key.id) == key
    assert store.list() == [key]
    assert key.allows(Scope.READ) and not key.allows(Scope.ADMIN)
    assert store.authenticate(secret[:-1] + ("x" if secret[-1] != "x" else "y")) is None
    assert store.authenticate("mvk_000000000000_" + secret[17:]) is None
    assert store.authenticate("") is None
    assert store.authenticate("mvk_" + "é" * 56) is None


def test_revoke_and_list(store: KeyStore) -> None:
    a, a_secret = store.create(name="a", tenant="acme")
    b, _ = store.create(name="b", tenant="globex")
    c, _ = store.create(name="c", tenant="acme")
    assert store.revoke(a.id) is True
    assert store.revoke(a.id) is False
    assert store.revoke("k_000000000000") is False
    assert store.authenticate(a_secret) is None
    assert store.list() == [b, c]
    assert store.list(tenant="acme") == [c]
    listed = store.list(tenant="acme", include_revoked=True)
    assert [k.id for k in listed] == [a.id, c.id]
    assert listed[0].revoked_at is not None and listed[0].revoked_at.utcoffset() is not None
    with pytest.raises(MemoryValidationError):
        store.revoke("nope")
    with pytest.raises(MemoryValidationError, match="unknown scope"):
        store.create(name="x", scopes=["root"])


def test_only_the_hash_is_stored_in_the_schema_the_url_names(
    postgres_url: str, pg_schemas: SchemaFactory
) -> None:
    schema = pg_schemas()
    store = PostgresKeyStore(postgres_url, schema=schema)
    assert store.location.endswith(f"schema={schema}")
    try:
        key, secret = store.create(name="ci", scopes=["admin"], agent_id="dev-1")
    finally:
        store.close()
    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute(
            psycopg.sql.SQL("SELECT * FROM {}").format(psycopg.sql.Identifier(schema, "api_keys"))
        ).fetchall()
        tables = conn.execute(
            "SELECT table_schema FROM information_schema.tables WHERE table_name = 'api_keys'"
            " AND table_schema = %s",
            [schema],
        ).fetchall()
    assert tables == [(schema,)]
    (row,) = rows
    for value in row:
        assert secret not in str(value) and secret[17:] not in str(value)
    assert hashlib.sha256(secret.encode()).hexdigest() in row
    assert key.id in row


def test_keys_persist_and_are_shared_between_stores(
    postgres_url: str, pg_schemas: SchemaFactory
) -> None:
    schema = pg_schemas()
    first = PostgresKeyStore(postgres_url, schema=schema)
    key, secret = first.create(name="ci")
    first.close()
    second = open_key_store(_with_schema(postgres_url, schema))
    other = PostgresKeyStore(postgres_url, schema=pg_schemas())
    try:
        assert second.authenticate(secret) == key
        assert other.authenticate(secret) is None  # another schema, another set of keys
        assert other.list() == []
    finally:
        second.close()
        other.close()


async def test_keys_and_memories_share_one_schema(
    postgres_url: str, pg_schemas: SchemaFactory
) -> None:
    schema = pg_schemas()
    store = PostgresKeyStore(postgres_url, schema=schema)
    backend = PostgresBackend(postgres_url, HashingEmbedder(dimension=64), schema=schema)
    try:
        _, secret = store.create(name="ci")
        await backend.connect()
        assert await backend.count("dev-1") == 0
        assert store.authenticate(secret) is not None
    finally:
        await backend.disconnect()
        store.close()


def test_a_lost_connection_is_reopened(store: PostgresKeyStore, postgres_url: str) -> None:
    key, secret = store.create(name="ci")
    assert store._conn is not None
    pid = store._conn.info.backend_pid
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        # With a timeout, pg_terminate_backend waits until the backend has gone.
        row = admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid]).fetchone()
    assert row == (True,)
    with pytest.raises(MemoryConnectionError, match="unreachable"):
        store.authenticate(secret)
    assert store.authenticate(secret) == key  # the next call connects again


def test_an_unreachable_server_is_a_connection_error_without_the_password() -> None:
    store = PostgresKeyStore("postgresql://agent:s3cr3t-pw@127.0.0.1:1/memvault", connect_timeout=2)
    assert "s3cr3t-pw" not in store.location
    with pytest.raises(MemoryConnectionError) as info:
        store.list()
    assert "s3cr3t-pw" not in str(info.value)
    with pytest.raises(MemoryConnectionError):
        store.authenticate("mvk_000000000000_" + "a" * 43)
    store.close()
    with pytest.raises(MemoryConnectionError, match="closed"):
        store.list()


def test_conflicting_schemas_are_refused() -> None:
    with pytest.raises(MemoryConfigError, match="conflicts"):
        PostgresKeyStore("postgresql://u@localhost/db?schema=a", schema="b")
