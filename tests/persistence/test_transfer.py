"""Operational records move from SQLite to PostgreSQL with the memories, counts verified."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memvault.errors import MemoryStoreError
from memvault.persistence import create_persistence
from memvault.persistence import models as pm
from memvault.persistence.transfer import copy_operations


async def _seed(url: str) -> dict[str, int]:
    async with create_persistence(url=url) as ops:
        await ops.tasks.save_many(pm.Task(title=f"t{i}", assigned_to="a") for i in range(7))
        await ops.cost_records.save_many(
            pm.CostRecord(agent_id="a", model="m", input_tokens=i) for i in range(12_000)
        )
        await ops.messages.save_many(
            pm.Message(channel="c", sender="u", content=str(i)) for i in range(30)
        )
        await ops.checkpoints.save(
            pm.Checkpoint(thread_id="t", checkpoint_id="1", type="msgpack", data=b"\x00\x01")
        )
        await ops.settings.set("ui", "theme", "dark")
    return {"tasks": 7, "cost_records": 12_000, "messages": 30, "checkpoints": 1, "settings": 1}


def _pg(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("postgres_url")
    schemas: Callable[[], str] = request.getfixturevalue("schemas")
    return f"{url}{'&' if '?' in url else '?'}schema={schemas()}"


async def test_copy_is_complete_ordered_and_idempotent(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source_url = str(tmp_path / "src.db")
    expected = await _seed(source_url)
    target_url = _pg(request)
    async with create_persistence(url=source_url) as src, create_persistence(url=target_url) as dst:
        counts = await copy_operations(src, dst)
        for name, n in expected.items():
            assert counts[name] == (n, n), name
        assert counts["users"] == (0, 0)
        again = await copy_operations(src, dst)  # nothing twice
        assert again == counts
        history = await dst.messages.get_history("c", limit=3)
        assert [m.content for m in history] == ["27", "28", "29"]  # insertion order kept
        assert (await dst.checkpoints.get("t")).data == b"\x00\x01"  # type: ignore[union-attr]
        # A record the target lost after the copy is a verified failure, never silent.
        first = (await dst.tasks.list_tasks(limit=1))[0]
        await dst.tasks.delete(first.id)
        await src.tasks.save(pm.Task(title="new"))
        counts = await copy_operations(src, dst)  # the missing one comes back, the new one too
        assert counts["tasks"] == (8, 8)
        await src.tasks.save(pm.Task(title="x"))
        assert (await copy_operations(src, dst))["tasks"] == (9, 9)


async def test_a_shortfall_after_the_copy_raises(tmp_path: Path) -> None:
    async with (
        create_persistence(url=str(tmp_path / "a.db")) as src,
        create_persistence(url=str(tmp_path / "b.db")) as dst,
    ):
        await src.tasks.save(pm.Task(title="kept"))
        real_add = dst.tasks.add_new

        async def refuse(records):  # type: ignore[no-untyped-def]
            list(records)
            return 0

        dst.tasks.add_new = refuse  # type: ignore[method-assign]
        with pytest.raises(MemoryStoreError, match="only 0"):
            await copy_operations(src, dst)
        dst.tasks.add_new = real_add  # type: ignore[method-assign]
