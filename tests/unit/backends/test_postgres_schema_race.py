"""Subsystems that share a fresh PostgreSQL schema create it together without failing.

A server starting on a new schema opens the store (migrations), the key store and the
conversation store at about the same time; each serialises its own DDL under its own advisory
lock, and ``CREATE SCHEMA IF NOT EXISTS`` by two of them at once used to fail one with a unique
violation on ``pg_namespace`` (seen as a 503 on a server's first request). A real PostgreSQL
server; every round a fresh schema, all creators released together.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest

from memvault.backends.postgres import PostgresBackend
from memvault.conversation.factory import open_conversation_store
from memvault.protocols import Embedder
from memvault.server.keys import open_key_store

pytestmark = pytest.mark.postgres

ROUNDS = 6


@pytest.fixture
def schemas(postgres_url: str) -> Iterator[Callable[[], str]]:
    from postgres_server import SchemaFactory

    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


def _race(postgres_url: str, schema: str, embedder: Embedder) -> list[BaseException]:
    """Open the store twice, the key store and the conversation store on ``schema`` at once."""
    sep = "&" if "?" in postgres_url else "?"
    url = f"{postgres_url}{sep}schema={schema}"
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def store() -> None:
        async def run() -> None:
            backend = PostgresBackend(postgres_url, embedder, schema=schema)
            barrier.wait()
            await backend.connect()
            await backend.disconnect()

        asyncio.run(run())

    def keys() -> None:
        key_store = open_key_store(url)
        barrier.wait()
        assert key_store.authenticate("mv_not_a_key") is None
        key_store.close()

    def conversations() -> None:
        async def run() -> None:
            conv = open_conversation_store(url)
            barrier.wait()
            assert await conv.conversation("a", "s") is None
            await conv.close()

        asyncio.run(run())

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def go() -> None:
            try:
                fn()
            except BaseException as exc:  # reported by the test, with the round's schema
                errors.append(exc)

        return go

    threads = [threading.Thread(target=guarded(fn)) for fn in (store, store, keys, conversations)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_store_keys_and_conversations_create_one_fresh_schema_at_once(
    postgres_url: str, schemas: Callable[[], str], minilm: Embedder
) -> None:
    for _ in range(ROUNDS):
        schema = schemas()
        errors = _race(postgres_url, schema, minilm)
        assert not errors, (schema, errors)
