"""A composite store (working memory in process, the rest in SQLite) passes the contract suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.backends.composite import CompositeBackend
from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.models import MemoryCategory
from memvault.protocols import Embedder
from memvault.testing import BackendContract, BackendFactory


class TestCompositeContract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        counter = iter(range(1000))

        def make(embedder: Embedder) -> CompositeBackend:
            return CompositeBackend(
                {MemoryCategory.WORKING: InMemoryBackend(embedder)},
                SQLiteBackend(tmp_path / f"store-{next(counter)}.db", embedder),
            )

        return make
