"""Fixtures of the graph tests: stores on SQLite and PostgreSQL with graph memory switched on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memvault import AsyncMemory
from memvault.config import MemvaultConfig
from memvault.protocols import Embedder, LLMProvider
from postgres_server import SchemaFactory

OpenMemory = Callable[..., AsyncMemory]


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    """Fresh PostgreSQL schema names, dropped at the end of the test."""
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


def with_schema(url: str, schema: str) -> str:
    """``url`` pointed at ``schema``."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes URLs of fresh, empty stores of one kind (a file, or a throwaway schema)."""
    if request.param == "sqlite":
        counter = iter(range(1000))
        return lambda: str(tmp_path / f"store-{next(counter)}.db")
    schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
    base: str = request.getfixturevalue("postgres_url")
    return lambda: with_schema(base, schemas())


@pytest.fixture
async def open_memory(store_url: Callable[[], str], minilm: Embedder) -> AsyncIterator[OpenMemory]:
    """Opens memories on fresh stores of the parametrised kind; all closed at the end."""
    opened: list[AsyncMemory] = []

    def make(
        url: str | None = None, llm: LLMProvider | None = None, **sections: Any
    ) -> AsyncMemory:
        config = MemvaultConfig(**sections)
        mem = AsyncMemory(url or store_url(), config=config, embedder=minilm, llm=llm)
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        await mem.close()
