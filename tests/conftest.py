"""Shared fixtures: the real bundled embedding model (loaded once per test session), the
PostgreSQL server, throwaway schemas, conversation stores of every kind, and an environment
cleared of the machine's memvault settings."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memvault.backends.sqlite import _blas
from memvault.embeddings import default_embedder
from memvault.protocols import Embedder

if TYPE_CHECKING:
    from memvault.conversation import SQLConversationStore

ConversationStoreFactory = Callable[[str, Callable[[], datetime] | None], "SQLConversationStore"]
"""``conversation_stores(kind, clock)``: a fresh conversation store of ``kind``."""


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model (onnxruntime int8), the default, shared by every test."""
    return default_embedder()


@pytest.fixture(scope="session")
def postgres_url(request: pytest.FixtureRequest) -> str:
    """A PostgreSQL server with pgvector: ``MEMVAULT_TEST_POSTGRES_URL``, else a private pgserver.

    The tests that use it fail (never skip) when no server can be had, so the PostgreSQL suite
    always runs. Tests isolate themselves in throwaway schemas (see ``tests/postgres_server.py``).
    """
    from postgres_server import postgres_server

    server = postgres_server()
    problem = None
    try:
        url = server.__enter__()
    except RuntimeError as exc:
        problem = str(exc)
    if problem is not None:
        pytest.fail(f"PostgreSQL tests cannot run: {problem}", pytrace=False)
    request.addfinalizer(lambda: server.__exit__(None, None, None))
    return url


@pytest.fixture
def schemas(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """Fresh PostgreSQL schema names (dropped afterwards); starts the server on first use."""
    from postgres_server import SchemaFactory

    factory: SchemaFactory | None = None

    def new() -> str:
        nonlocal factory
        if factory is None:
            factory = SchemaFactory(request.getfixturevalue("postgres_url"))
        return factory()

    yield new
    if factory is not None:
        factory.drop_all()


@pytest.fixture
async def conversation_stores(
    request: pytest.FixtureRequest, tmp_path: Path, schemas: Callable[[], str]
) -> AsyncIterator[ConversationStoreFactory]:
    """Builds fresh, empty conversation stores: ``conversation_stores(kind, clock)``.

    ``kind`` is ``sqlite`` (a new file), ``memory`` (in process) or ``postgres`` (a new schema
    of the test server); every store built is closed after the test.
    """
    from memvault.conversation import InMemoryConversationStore
    from memvault.conversation.sqlite import SQLiteConversationStore

    built: list[SQLConversationStore] = []

    def make(kind: str, clock: Callable[[], datetime] | None) -> SQLConversationStore:
        store: SQLConversationStore
        if kind == "sqlite":
            store = SQLiteConversationStore(tmp_path / f"conv{len(built)}.db", clock=clock)
        elif kind == "memory":
            store = InMemoryConversationStore(clock=clock)
        elif kind == "postgres":
            from memvault.conversation.postgres import PostgresConversationStore

            url = request.getfixturevalue("postgres_url")
            store = PostgresConversationStore(url, schema=schemas(), clock=clock)
        else:
            msg = f"unknown conversation store kind {kind!r}"
            raise ValueError(msg)
        built.append(store)
        return store

    yield make
    for store in built:
        await store.close()


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No MEMVAULT_* setting and no ./memvault.yaml of the machine leaks into a test: the
    variables are removed (but the model cache's) and the test runs in ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """numpy's OpenBLAS set to two threads for the test (restored after), as a machine's
    default would be; skipped where numpy does not use OpenBLAS."""
    api = _blas._api()
    if api is None:
        pytest.skip("numpy is not using OpenBLAS here")
    setter, getter = api
    before = getter()
    setter(2)
    try:
        yield
    finally:
        setter(before)
