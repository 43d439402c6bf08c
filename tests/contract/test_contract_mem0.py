"""The mem0 backend (mem0ai's local mode: embedded Qdrant plus SQLite history) passes the full
contract suite, and mem0's own API reads what memvault wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.protocols import Embedder
from memvault.testing import BackendContract, BackendFactory

pytest.importorskip("mem0", reason="the mem0 extra is not installed")

from memvault.backends.mem0 import Mem0Backend


class TestMem0Contract(BackendContract):
    @pytest.fixture
    def embedder(self, minilm: Embedder) -> Embedder:
        return minilm

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        counter = iter(range(1000))
        return lambda embedder: Mem0Backend(tmp_path / f"mem0-{next(counter)}", embedder)
