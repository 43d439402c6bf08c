"""Every built-in backend passes the same contract suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.protocols import Embedder
from memvault.testing import BackendContract, BackendFactory


class TestInMemoryContract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        return lambda embedder: InMemoryBackend(embedder)


class TestSQLiteContract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        counter = iter(range(1000))
        return lambda embedder: SQLiteBackend(tmp_path / f"store-{next(counter)}.db", embedder)
