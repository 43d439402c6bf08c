"""Fixtures of the integration tests: a fresh store of each kind (SQLite, PostgreSQL, memory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.backends._base import BaseBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.postgres import PostgresBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.protocols import Embedder
from postgres_server import SchemaFactory


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    """Fresh PostgreSQL schema names, dropped at the end of the test."""
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


@pytest.fixture(params=["sqlite", "postgres", "inmemory"])
def any_backend(request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder) -> BaseBackend:
    """An unconnected, empty store of each kind, with the real embedding model."""
    if request.param == "sqlite":
        return SQLiteBackend(tmp_path / "store.db", minilm)
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
        return PostgresBackend(url, minilm, schema=schemas())
    return InMemoryBackend(minilm)
