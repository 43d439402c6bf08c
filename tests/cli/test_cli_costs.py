"""``memvault costs`` and ``memvault api`` over the operational records of a store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from memvault.persistence import create_persistence
from memvault.persistence import models as pm


def _seed(db: str) -> None:
    async def go() -> None:
        now = datetime.now(UTC)
        async with create_persistence(url=db) as ops:
            await ops.cost_records.save_many(
                [
                    pm.CostRecord(agent_id="dev-1", model="m-a", input_tokens=100,
                                  output_tokens=20, cost=0.25, timestamp=now),
                    pm.CostRecord(agent_id="dev-1", model="m-b", input_tokens=50, cost=None,
                                  timestamp=now - timedelta(days=10)),
                    pm.CostRecord(agent_id="dev-2", model="m-a", input_tokens=7, cost=1.0,
                                  timestamp=now),
                ]
            )  # fmt: skip

    asyncio.run(go())


def test_costs_sums_per_group_and_window(run, db) -> None:
    _seed(db)
    table = run("--db", db, "costs")
    assert table.code == 0, table.err
    assert "total 1.2500 over 3 calls" in table.out
    by_model = run("--db", db, "costs", "--by", "model", "--json")
    assert [(g["group"], g["calls"], g["cost"]) for g in by_model.json()] == [
        ("m-a", 2, 1.25),
        ("m-b", 1, 0.0),
    ]
    recent = run("--db", db, "costs", "--agent", "dev-1", "--days", "3", "--json")
    assert [(g["group"], g["input_tokens"]) for g in recent.json()] == [("dev-1", 100)]


def test_costs_refuses_bad_input_in_one_line(run, db) -> None:
    for args in (("--by", "week"), ("--days", "0"), ("--limit", "0")):
        bad = run("--db", db, "costs", *args)
        assert bad.code == 2, args
        assert len(bad.err_lines) == 1, bad.err


def test_an_empty_store_has_no_cost_records(run, db) -> None:
    empty = run("--db", db, "costs")
    assert empty.code == 0 and "no cost records" in empty.out


def test_tasks_through_memvault_api(run, db) -> None:
    made = run("--db", db, "api", "create-task", "--title", "ship it", "--agent-id", "dev-1")
    assert made.code == 0, made.err
    task_id = made.json()["id"]
    moved = run(
        "--db", db, "api", "set-task-status", "--task-id", task_id, "--status", "in_progress"
    )
    assert moved.code == 0 and moved.json()["status"] == "in_progress"
    wrong = run("--db", db, "api", "set-task-status", "--task-id", task_id, "--status", "created")
    assert wrong.code == 2 and "cannot go from in_progress" in wrong.err
    listed = run("--db", db, "api", "tasks", "--status", "in_progress")
    assert [t["id"] for t in listed.json()["tasks"]] == [task_id]
