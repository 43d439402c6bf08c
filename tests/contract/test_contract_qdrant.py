"""The Qdrant backend (local on-disk mode, real qdrant-client) passes the full contract suite."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.protocols import Embedder
from memvault.testing import BackendContract, BackendFactory

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")

from memvault.backends.qdrant import QdrantBackend


class TestQdrantContract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        counter = iter(range(1000))
        return lambda embedder: QdrantBackend(tmp_path / f"qdrant-{next(counter)}", embedder)
