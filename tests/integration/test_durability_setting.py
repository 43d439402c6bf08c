"""``storage.durability`` maps onto SQLite's ``synchronous`` (and ``synchronous`` still wins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.backends.factory import open_backend
from memvault.backends.sqlite import SQLiteBackend
from memvault.config import MemoryStorageConfig, MemvaultConfig, load_config
from memvault.errors import MemoryConfigError
from memvault.protocols import Embedder


@pytest.mark.parametrize(
    ("storage", "pragma"),
    [
        ({}, 1),  # process-crash safe by default: NORMAL
        ({"durability": "process"}, 1),
        ({"durability": "power"}, 2),  # FULL: the WAL is synced at every commit
        ({"durability": "power", "synchronous": "normal"}, 1),  # the lower-level key wins
        ({"synchronous": "full"}, 2),
    ],
)
async def test_the_store_opens_with_the_setting_asked_for(
    tmp_path: Path, minilm: Embedder, storage: dict[str, str], pragma: int
) -> None:
    config = MemvaultConfig.model_validate({"storage": storage})
    store = open_backend(str(tmp_path / "store.db"), embedder=minilm, config=config)
    assert isinstance(store, SQLiteBackend)
    await store.connect()
    try:
        value = await store._run(lambda: store._db.execute("PRAGMA synchronous").fetchone()[0])
    finally:
        await store.disconnect()
    assert value == pragma


def test_an_unknown_durability_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="durability"):
        MemoryStorageConfig(durability="disk")
    path = tmp_path / "memvault.yaml"
    path.write_text("memory:\n  storage:\n    durability: sometimes\n")
    with pytest.raises(MemoryConfigError, match="durability"):
        load_config(path, env={})
