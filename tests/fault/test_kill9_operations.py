"""kill -9 during operational writes loses no acknowledged record (SQLite file, PostgreSQL).

A child process writes tasks, cost records and messages in a loop and prints each id once its
``save``/``save_many`` returned (acknowledged); the parent kills it with SIGKILL mid-stream,
then reopens the store: every acknowledged id is there, the SQLite file passes
``PRAGMA integrity_check``, and a task transition in flight left the task in one of its two
states.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memvault.persistence import create_persistence
from memvault.persistence import models as pm

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from memvault.persistence import create_persistence
    from memvault.persistence import models as pm

    async def main(url):
        async with create_persistence(url=url) as ops:
            n = 0
            while True:
                n += 1
                task = pm.Task(title=f"t{n}", assigned_to="w")
                await ops.tasks.save(task)
                print("task", task.id, flush=True)
                await ops.tasks.transition(task.id, pm.TaskStatus.IN_PROGRESS)
                print("moved", task.id, flush=True)
                batch = [pm.CostRecord(agent_id="w", model="m", input_tokens=i) for i in range(20)]
                await ops.cost_records.save_many(batch)
                for r in batch:
                    print("cost", r.id, flush=True)
                msg = pm.Message(channel="c", sender="w", content=str(n))
                await ops.messages.save(msg)
                print("message", msg.id, flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


def _kill_midway(url: str, tmp_path: Path, after: int) -> dict[str, list[str]]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    child = subprocess.Popen(
        [sys.executable, str(script), url], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    acked: dict[str, list[str]] = {"task": [], "moved": [], "cost": [], "message": []}
    assert child.stdout is not None
    for lines, line in enumerate(child.stdout, start=1):
        kind, _, ident = line.strip().partition(" ")
        acked[kind].append(ident)
        if lines >= after:
            child.send_signal(signal.SIGKILL)
            break
    child.wait(timeout=30)
    # Lines already in the pipe were acknowledged before the kill too.
    for line in child.stdout:
        kind, _, ident = line.strip().partition(" ")
        if ident:
            acked[kind].append(ident)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return acked


async def _check(url: str, acked: dict[str, list[str]]) -> None:
    async with create_persistence(url=url) as ops:
        tasks = {t.id: t for t in await ops.tasks.list_tasks()}
        assert set(acked["task"]) <= set(tasks)
        for ident in acked["moved"]:
            assert tasks[ident].status is pm.TaskStatus.IN_PROGRESS
        for ident in set(tasks) - set(acked["moved"]):
            assert tasks[ident].status in (pm.TaskStatus.CREATED, pm.TaskStatus.IN_PROGRESS)
        costs = {r.id for r in await ops.cost_records.query()}
        assert set(acked["cost"]) <= costs
        assert len(costs) % 20 == 0  # a batch is one transaction: all of it or none
        messages = {m.id for m in await ops.messages.get_history("c")}
        assert set(acked["message"]) <= messages


@pytest.mark.parametrize("after", [7, 61, 250])
def test_sqlite_keeps_every_acknowledged_record(tmp_path: Path, after: int) -> None:
    db = tmp_path / "ops.db"
    acked = _kill_midway(str(db), tmp_path, after)
    assert sum(map(len, acked.values())) >= after
    asyncio.run(_check(str(db), acked))
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_postgres_keeps_every_acknowledged_record(
    tmp_path: Path, postgres_url: str, pg_schemas
) -> None:
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={pg_schemas()}"
    acked = _kill_midway(url, tmp_path, 120)
    asyncio.run(_check(url, acked))
