"""``memvault maintain`` on real SQLite files: one pass, --force, --json, --daemon, the lease."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
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


OLD = (datetime.now(UTC) - timedelta(days=60)).isoformat()


def _episodes(run, db: str, n: int, *, when: str | None = OLD) -> list[str]:
    """``n`` episodes, two months old unless ``when`` says otherwise (None: now)."""
    dated = () if when is None else ("--created-at", when)
    return [
        run.add(
            db,
            f"Standup {i}: reviewed ticket PROJ-{100 + i} with the team.",
            "-a",
            "u",
            "-t",
            "episodic",
            *dated,
        )
        for i in range(n)
    ]


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


def test_a_default_pass_changes_no_memory_written_now(run, db: str, config: Path) -> None:
    # The reported bug: 26 facts written the same minute, 25 merged by one `maintain`.
    ids = [
        run.add(db, f"Fact {i}: service {i} listens on port {8000 + i}.", "-a", "u")
        for i in range(26)
    ]
    before = {m["id"]: m["content"] for m in run.list(db, "-a", "u")}
    done = run("--config", str(config), "--db", db, "maintain", "--json")
    assert done.code == 0, done.err
    (ran,) = done.json()["consolidated"]
    assert ran["created"] == 0 and ran["archived"] == 0 and ran["groups"] == []
    assert ran["too_young"] == 26
    after = {m["id"]: m["content"] for m in run.list(db, "-a", "u")}
    assert after == before and set(after) == set(ids)
    forced = run("--config", str(config), "--db", db, "maintain", "--force", "--json")
    assert forced.code == 0 and forced.json()["consolidated"][0]["created"] == 0
    for memory_id in ids:
        shown = run("--db", db, "get", memory_id, "-a", "u", "--json").json()
        assert shown["content"] == before[memory_id] and shown["consolidated_into"] is None


def test_dry_run_lists_exactly_what_the_pass_then_merges(run, db: str, config: Path) -> None:
    old = _episodes(run, db, 12)
    young = _episodes(run, db, 3, when=None)
    base = ("--config", str(config), "--db", db, "maintain")
    dry = run(*base, "--dry-run", "--json")
    assert dry.code == 0, dry.err
    report = dry.json()
    assert report["dry_run"] is True and report["swept"] == []
    (plan,) = report["consolidated"]
    planned = [tuple(g["merged_ids"]) for g in plan["groups"]]
    assert planned and all(2 <= len(g) <= 5 for g in planned)
    assert {i for g in planned for i in g} <= set(old)
    assert plan["too_young"] == 3 and all(g["into"] is None for g in plan["groups"])
    assert len(run.list(db, "-a", "u")) == 15  # nothing changed
    text = run(*base, "--dry-run")
    assert text.code == 0 and "dry run: consolidation of 1 would merge" in text.out
    for number, group in enumerate(planned, 1):
        assert f"u group {number} (episodic): would merge {len(group)}: " + ", ".join(group) in (
            text.out
        )

    real = run(*base, "--json")
    assert real.code == 0, real.err
    (done,) = real.json()["consolidated"]
    assert [tuple(g["merged_ids"]) for g in done["groups"]] == planned
    live = {m["id"] for m in run.list(db, "-a", "u")}
    assert set(young) <= live
    for group in done["groups"]:
        assert group["into"] in live
        for original in group["merged_ids"]:
            assert original not in live
            shown = run("--db", db, "get", original, "-a", "u", "--json")
            assert shown.code == 0, shown.err
            assert shown.json()["consolidated_into"] == group["into"]


def test_dry_run_and_daemon_do_not_combine(run, db: str, config: Path) -> None:
    bad = run("--config", str(config), "--db", db, "maintain", "--dry-run", "--daemon")
    assert bad.code == 2 and "--dry-run" in bad.err
