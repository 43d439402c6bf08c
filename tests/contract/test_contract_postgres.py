"""The PostgreSQL backend passes the same contract suite as every other backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memvault.backends.postgres import PostgresBackend
from memvault.protocols import Embedder
from memvault.testing import BackendContract, BackendFactory
from postgres_server import SchemaFactory

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    """Fresh schema names, all dropped after the test."""
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


class TestPostgresContract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, postgres_url: str, pg_schemas: SchemaFactory) -> BackendFactory:
        # Every backend gets its own schema: a fresh, isolated store in the shared server.
        return lambda embedder: PostgresBackend(postgres_url, embedder, schema=pg_schemas())
