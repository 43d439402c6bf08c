"""``memvault archive list|restore``, ``memvault audit`` and ``memvault sweep`` on real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def capped(tmp_path: Path) -> Path:
    """A config with an episodic cap of 1 per agent."""
    cfg = tmp_path / "memvault.yaml"
    cfg.write_text("memory:\n  options:\n    max_per_category:\n      episodic: 1\n")
    return cfg


def test_evicted_memory_is_listed_and_restored(run, db, capped: Path) -> None:
    base = ("--config", str(capped))
    first = run.add(db, "Met Dana for coffee.", "-a", "u", "-t", "episodic")
    result = run(*base, "--db", db, "add", "Reviewed the Q3 plan.", "-a", "u", "-t", "episodic")
    assert result.code == 0, result.err
    listed = run(*base, "--db", db, "archive", "list", "-a", "u", "--json").json()
    assert [row["entry"]["id"] for row in listed] == [first]
    assert listed[0]["reason"] == "evict"

    restored = run("--db", db, "archive", "restore", first, "-a", "u")
    assert restored.code == 0 and first in restored.out
    assert first in {e["id"] for e in run.list(db, "-a", "u")}
    assert run("--db", db, "archive", "list", "-a", "u", "--json").json() == []

    again = run("--db", db, "archive", "restore", first, "-a", "u")
    assert again.code == 2 and len(again.err_lines) == 1 and "no archived memory" in again.err

    trail = run("--db", db, "audit", "--agent", "u", "--memory", first, "--json").json()
    assert [r["action"] for r in trail] == ["memory.store", "memory.evict", "memory.restore"]
    text = run("--db", db, "audit", "--agent", "u")
    assert text.code == 0 and "memory.restore" in text.out


def test_sweep_reports_and_audit_is_per_agent(run, db, tmp_path: Path) -> None:
    cfg = tmp_path / "r.yaml"
    cfg.write_text("memory:\n  options:\n    max_memories_per_agent: 1\n")
    run.add(db, "Alpha fact about the build.", "-a", "u")
    run.add(db, "Beta fact about the release.", "-a", "u")
    run.add(db, "Gamma fact for someone else.", "-a", "v")
    swept = run("--config", str(cfg), "--db", db, "sweep", "--json")
    assert swept.code == 0, swept.err
    assert len(swept.json()["evicted"]) == 1 and swept.json()["expired"] == {}
    assert len(run.list(db, "-a", "u")) == 1 and len(run.list(db, "-a", "v")) == 1
    only_v = run("--db", db, "audit", "--agent", "v", "--json").json()
    assert {r["agent_id"] for r in only_v} == {"v"}


def test_consolidate_dry_run_then_real(run, db) -> None:
    ids = [
        run.add(db, text, "-a", "u")
        for text in (
            "The API gateway runs on port 8443.",
            "Deploys need two approvals on the release PR.",
            "Staging uses the eu-west-1 region.",
        )
    ]
    # Written just now: younger than the default minimum age, so nothing is merged.
    young = run("--db", db, "consolidate", "--agent", "u")
    assert young.code == 0, young.err
    assert "merged 0 memories in 0 groups" in young.out
    assert "3 memories younger than 30 days left alone" in young.out
    assert len(run.list(db, "-a", "u")) == 3

    lifted = ("--db", db, "consolidate", "--agent", "u", "--min-age-days", "0")
    dry = run(*lifted, "--dry-run")
    assert dry.code == 0, dry.err
    assert "would merge 2 memories in 1 groups" in dry.out
    (line,) = [x for x in dry.out.splitlines() if "group 1" in x]
    planned = set(line.split(": ")[-1].split(", "))
    assert len(planned) == 2 and planned <= set(ids)
    assert len(run.list(db, "-a", "u")) == 3

    done = run(*lifted, "--json")
    assert done.code == 0, done.err
    [result] = done.json()
    assert len(result["created_ids"]) == 1 and set(result["removed_ids"]) == planned
    live = run.list(db, "-a", "u")
    assert len(live) == 2
    archived = run("--db", db, "archive", "list", "-a", "u", "--json").json()
    assert {row["entry"]["id"] for row in archived} == set(result["removed_ids"])
    # Every merged original still answers by its id, naming the memory that holds it now.
    for original in planned:
        shown = run("--db", db, "get", original, "-a", "u", "--json")
        assert shown.code == 0, shown.err
        assert shown.json()["consolidated_into"] == result["created_ids"][0]


def test_consolidate_rejects_an_unknown_strategy(run, db) -> None:
    run.add(db, "Something worth keeping.", "-a", "u")
    bad = run("--db", db, "consolidate", "--agent", "u", "--strategy", "magic")
    assert bad.code == 2 and len(bad.err_lines) == 1
    assert "unknown consolidation strategy" in bad.err
