"""PostgresSessionStore on a real server: schemas, sharing a schema with the memories, errors."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

from memvault.backends.postgres import PostgresBackend
from memvault.conversation.session_postgres import PostgresSessionStore
from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryConfigError, MemoryConnectionError
from memvault.models import ChatMessage
from memvault.sessions import open_session_store

pytestmark = pytest.mark.postgres

SID = "0123456789ab"
HISTORY = [ChatMessage(role="user", content="hello"), ChatMessage(role="assistant", content="hi")]


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


async def test_the_table_lives_in_the_schema_the_url_names(
    postgres_url: str, schemas: Callable[[], str]
) -> None:
    one, two = schemas(), schemas()
    store_one = open_session_store(_with_schema(postgres_url, one))
    store_two = PostgresSessionStore(postgres_url, schema=two)
    try:
        await store_one.save("dev-1", SID, HISTORY)
        assert await store_two.latest("dev-1") is None
        assert f"schema={one}" in store_one.location
    finally:
        await store_one.close()
        await store_two.close()
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_schema = %s AND table_name = 'sessions'",
            [one],
        ).fetchone()
    assert row == (1,)


async def test_sessions_and_memories_share_one_schema(
    postgres_url: str, schemas: Callable[[], str]
) -> None:
    schema = schemas()
    store = PostgresSessionStore(postgres_url, schema=schema)
    backend = PostgresBackend(postgres_url, HashingEmbedder(dimension=64), schema=schema)
    try:
        await store.save("dev-1", SID, HISTORY)
        await backend.connect()
        assert await backend.count("dev-1") == 0
        latest = await store.latest("dev-1")
        assert latest is not None and latest.messages == tuple(HISTORY)
    finally:
        await backend.disconnect()
        await store.close()


async def test_an_unreachable_server_is_a_connection_error_without_the_password() -> None:
    store = PostgresSessionStore(
        "postgresql://agent:s3cr3t-pw@127.0.0.1:1/memvault", connect_timeout=2
    )
    assert "s3cr3t-pw" not in store.location
    with pytest.raises(MemoryConnectionError) as info:
        await store.save("dev-1", SID, HISTORY)
    assert "s3cr3t-pw" not in str(info.value)
    await store.close()


def test_conflicting_schemas_are_refused() -> None:
    with pytest.raises(MemoryConfigError, match="conflicts"):
        PostgresSessionStore("postgresql://u@localhost/db?schema=a", schema="b")
