"""``memvault maintain`` on real SQLite files: one pass, --force, --json, --daemon, the lease."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memvault.maintenance import SQLiteMaintenanceState


@pytest.fixture
def config(tmp_path: Path) -> Path:
    cfg = tmp_path / "memvault.yaml"
    cfg.write_text(
        "memory:\n"
        "  options:\n"
        "    consolidation_interval: daily\n"
        "  maintenance:\n"
        "    poll_seconds: 0.01\n"
    )
    return cfg


def _episodes(run, db: str, n: int) -> None:
    for i in range(n):
        run.add(
            db,
            f"Standup {i}: reviewed ticket PROJ-{100 + i} with the team.",
            "-a",
            "u",
            "-t",
            "episodic",
        )


def test_one_pass_runs_what_is_due_and_remembers_it(run, db: str, config: Path) -> None:
    _episodes(run, db, 4)
    base = ("--config", str(config), "--db", db)
    first = run(*base, "maintain", "--json")
    assert first.code == 0, first.err
    report = first.json()
    assert report["ran"] is True
    assert [c["agent_id"] for c in report["consolidated"]] == ["u"]
    assert report["consolidated"][0]["created"] == 1
    assert [s["agent_id"] for s in report["swept"]] == ["u"]

    # The last runs are in the store: a second run (a new process would see the same) has
    # nothing due, and says so.
    second = run(*base, "maintain")
    assert second.code == 0, second.err
    assert "consolidation not due" in second.out and "sweep not due" in second.out

    forced = run(*base, "maintain", "--force", "--json").json()
    assert forced["forced"] is True and [c["agent_id"] for c in forced["consolidated"]] == ["u"]


def test_daemon_repeats_passes(run, db: str, config: Path) -> None:
    _episodes(run, db, 1)
    result = run(
        "--config", str(config), "--db", db, "maintain", "--daemon", "--json", "--passes", "3"
    )
    assert result.code == 0, result.err
    reports = [json.loads(line) for line in result.out.splitlines()]
    assert len(reports) == 3
    assert reports[0]["consolidated"] != [] and reports[1]["consolidated"] == []


def test_a_lease_held_elsewhere_skips_the_pass(run, db: str, config: Path) -> None:
    _episodes(run, db, 1)

    async def hold() -> None:
        state = SQLiteMaintenanceState(db)
        assert await state.acquire("server-b", datetime.now(UTC), 3600)
        await state.close()

    asyncio.run(hold())
    result = run("--config", str(config), "--db", db, "maintain")
    assert result.code == 1
    assert "skipped (lease held by server-b)" in result.out


def test_a_server_url_is_refused(run) -> None:
    result = run("--db", "http://127.0.0.1:9", "maintain")
    assert result.code == 2 and len(result.err_lines) == 1
    assert "local store" in result.err
