"""``memvault migrate`` moves the operational records with the memories, counts verified."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from memvault.persistence import create_persistence
from memvault.persistence import models as pm


async def _seed(url: str) -> dict[str, int]:
    async with create_persistence(url=url) as ops:
        await ops.tasks.save_many(pm.Task(title=f"t{i}", assigned_to="a") for i in range(7))
        await ops.cost_records.save_many(
            pm.CostRecord(agent_id="a", model="m", input_tokens=i) for i in range(12_000)
        )
    return {"tasks": 7, "cost_records": 12_000}


def _pg(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue("postgres_url")
    schemas: Callable[[], str] = request.getfixturevalue("schemas")
    return f"{url}{'&' if '?' in url else '?'}schema={schemas()}"


def test_memvault_migrate_moves_operational_records_to_postgres(
    run, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    source = str(tmp_path / "store.db")
    assert run("--db", source, "add", "Prefers tabs", "--agent", "dev-1").code == 0
    expected = asyncio.run(_seed(source))
    target = _pg(request)
    done = run("migrate", "--from", source, "--to", target)
    assert done.code == 0, done.err
    assert "cost_records: 12000 records, 12000 in the destination" in done.out
    assert f"operational records: {sum(expected.values())} copied and verified" in done.out

    async def count() -> int:
        async with create_persistence(url=target) as dst:
            return await dst.cost_records.count()

    assert asyncio.run(count()) == 12_000
    plain = str(tmp_path / "plain.db")
    assert run("--db", plain, "add", "x", "--agent", "a").code == 0
    skipped = run("migrate", "--from", plain, "--to", str(tmp_path / "plain2.db"))
    assert skipped.code == 0 and "operational records" not in skipped.out
