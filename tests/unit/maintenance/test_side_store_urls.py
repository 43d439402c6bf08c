"""Side tables of qdrant/mem0 stores live in a SQLite file inside the store's directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.errors import MemoryConfigError
from memvault.learning.factory import open_learning_store
from memvault.learning.sqlite import SQLiteLearningStore
from memvault.maintenance.state import SQLiteMaintenanceState, open_maintenance_state


@pytest.mark.parametrize("scheme", ["qdrant", "mem0"])
def test_local_adapter_stores_keep_side_tables_in_their_directory(
    tmp_path: Path, scheme: str
) -> None:
    url = f"{scheme}://{tmp_path}/store"
    state = open_maintenance_state(url)
    learning = open_learning_store(url)
    assert isinstance(state, SQLiteMaintenanceState)
    assert isinstance(learning, SQLiteLearningStore)
    side = tmp_path / "store" / "memvault-side.db"
    assert Path(state.location) == side
    assert Path(learning.location) == side


def test_a_qdrant_server_store_has_no_place_for_side_tables() -> None:
    with pytest.raises(MemoryConfigError, match="side tables"):
        open_maintenance_state("qdrant+http://localhost:6333")
