"""Fixtures of the fault tests: throwaway PostgreSQL schemas, and the campaign's summary file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from postgres_server import SchemaFactory


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    """Fresh PostgreSQL schema names, dropped at the end of the test."""
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()
