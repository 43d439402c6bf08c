"""Shared fixtures: the real bundled embedding model, loaded once per test session."""

from __future__ import annotations

import pytest

from memvault.embeddings import default_embedder
from memvault.protocols import Embedder


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model (onnxruntime int8), shared by every test."""
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
