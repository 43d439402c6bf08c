"""``memvault consolidate --facts``: InitRunner's ``memory consolidate`` (episodes -> facts) as
one obvious command, next to the seed-000 strategies; plus the new operations in ``memvault api``
(issue 17 items 5 and 6). Real SQLite files, the real embedding model, no LLM."""

from __future__ import annotations

from pathlib import Path

EPISODES = (
    "Deployed v2.1 to staging on 3 March; the release took 14 minutes.",
    "Rolled back v2.1 in production because of a memory leak in the worker.",
    "Met Dana from Acme: they need the export API by 1 April.",
)


def _episodes(run, db: str) -> list[str]:
    return [run.add(db, text, "-a", "u", "-t", "episodic") for text in EPISODES]


def test_facts_extracts_semantic_facts_and_marks_the_episodes(run, db) -> None:
    episodes = _episodes(run, db)
    done = run("--db", db, "consolidate", "--agent", "u", "--facts", "--json")
    assert done.code == 0, done.err
    [result] = done.json()
    assert result["strategy"] == "extract"
    assert result["created_ids"] and set(result["marked_ids"]) == set(episodes)
    assert result["removed_ids"] == []  # the episodes stay (marked consolidated)
    semantic = run.list(db, "-a", "u", "--type", "semantic")
    assert {m["id"] for m in semantic} == set(result["created_ids"])
    assert len(run.list(db, "-a", "u", "--type", "episodic")) == 3
    # A second run finds no unconsolidated episode left.
    again = run("--db", db, "consolidate", "--agent", "u", "--facts", "--json")
    assert again.code == 0 and again.json()[0]["created_ids"] == []
    text = run("--db", db, "consolidate", "--agent", "u", "--facts")
    assert text.code == 0 and "u: 0 facts from 0 episodes" in text.out


def test_bare_consolidate_keeps_the_configured_strategy(run, db, tmp_path: Path) -> None:
    _episodes(run, db)
    plain = run("--db", db, "consolidate", "--agent", "u", "--json")
    assert plain.code == 0, plain.err
    assert plain.json()[0]["strategy"] == "simple"
    cfg = tmp_path / "facts.yaml"
    cfg.write_text("memory:\n  consolidation:\n    strategy: extract\n")
    db2 = str(tmp_path / "two.db")
    _episodes(run, db2)
    configured = run("--config", str(cfg), "--db", db2, "consolidate", "--agent", "u", "--json")
    assert configured.code == 0, configured.err
    assert configured.json()[0]["strategy"] == "extract"


def test_facts_conflicts_with_another_strategy(run, db) -> None:
    _episodes(run, db)
    bad = run("--db", db, "consolidate", "--agent", "u", "--facts", "--strategy", "simple")
    assert bad.code == 2 and len(bad.err_lines) == 1
    assert "--facts means --strategy extract" in bad.err
    same = run("--db", db, "consolidate", "--agent", "u", "--facts", "--strategy", "extract")
    assert same.code == 0, same.err


def test_help_names_both_meanings(run) -> None:
    shown = run("consolidate", "--help")
    assert shown.code == 0
    flat = " ".join(shown.out.split())
    assert "--facts" in flat and "InitRunner" in flat and "episodes" in flat
    assert "simple concatenates older memories" in flat


def test_new_operations_are_memvault_api_commands(run, db) -> None:
    captured = run("--db", db, "api", "capture-episode", "--agent-id", "u", "--summary", "ok",
                   "--trigger-type", "cron")  # fmt: skip
    assert captured.code == 0, captured.err
    assert captured.json()["captured"] is True
    note = run("--db", db, "api", "working-note", "--task-id", "T-1", "--agent-id", "u",
               "--content", "Plan first")  # fmt: skip
    assert note.code == 0, note.err
    # Working memory lives in process: a new CLI process starts with an empty one.
    pad = run("--db", db, "api", "working", "--task-id", "T-1", "--agent-id", "u")
    assert pad.code == 0 and pad.json()["notes"] == []
    ask = run("--db", db, "api", "search-and-ask", "--agent-id", "u", "--query", "what ran?")
    assert ask.code == 0, ask.err  # no LLM: the first search alone
    assert [e["content"] for e in ask.json()["results"]] == ["ok"]
    bad = run("--db", db, "api", "search-and-ask", "--agent-id", "u", "--query", "x",
              "--max-rounds", "9")  # fmt: skip
    assert bad.code == 2 and len(bad.err_lines) == 1


def test_cli_add_refuses_a_working_memory_that_would_vanish(run, db, tmp_path: Path) -> None:
    # Issue 17: WORKING lives in process; a one-shot CLI process would lose it at exit.
    bad = run("--db", db, "add", "Currently editing report.md", "-a", "u", "-t", "working")
    assert bad.code == 2 and len(bad.err_lines) == 1
    assert "working memories live in process only" in bad.err
    assert run.list(db, "-a", "u") == []
    # Routed to a store, it is kept.
    cfg = tmp_path / "routed.yaml"
    cfg.write_text(
        f"memory:\n  backend: composite\n  storage:\n    url: {db}\n"
        f"  composite:\n    routes:\n      working: {db}\n"
    )
    ok = run("--config", str(cfg), "add", "Currently editing report.md", "-a", "u", "-t", "working")
    assert ok.code == 0, ok.err
    assert [m["category"] for m in run.list(db, "-a", "u")] == ["working"]


def test_cli_add_under_level_none_says_nothing_was_stored(run, tmp_path: Path) -> None:
    cfg = tmp_path / "none.yaml"
    cfg.write_text("memory:\n  level: none\n")
    result = run("--config", str(cfg), "add", "Prefers dark mode", "-a", "u")
    assert result.code == 1
    assert "not stored: memory level 'none' stores nothing" in result.err
