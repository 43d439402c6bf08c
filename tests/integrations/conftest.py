"""Fixtures of the framework adapter tests: real SQLite stores with the bundled embedding model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memvault import AsyncMemory, Memory
from memvault.protocols import Embedder


@pytest.fixture
def memory(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    """A sync memory on a fresh SQLite file."""
    with Memory(str(tmp_path / "mem.db"), embedder=minilm) as mem:
        yield mem


@pytest.fixture
async def amemory(tmp_path: Path, minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    """An async memory on a fresh SQLite file, opened on the test's event loop."""
    async with AsyncMemory(str(tmp_path / "mem.db"), embedder=minilm) as mem:
        yield mem
