"""``memvault export/import/stats`` against real SQLite stores."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memvault import Memory, MemvaultConfig
from memvault.config import CompositeStorageConfig, MemoryStorageConfig
from memvault.models import MemoryCategory


@pytest.fixture
def source(run, tmp_path: Path) -> str:
    """A store with two agents, every category, tags, labels, metadata and odd timestamps."""
    path = str(tmp_path / "source.db")
    run.add(
        path,
        "Moved from Berlin to Lisbon in March 2023",
        "--agent",
        "alice",
        "--type",
        "episodic",
        "--created-at",
        "2023-03-14T15:09:26.535897+00:00",
        "--tag",
        "relocation",
        "--tag",
        "non-inferable",
        "--label",
        "life-events",
    )
    run.add(path, "Café orders: naïve flat white ☕, 日本茶 on Fridays", "--agent", "alice")
    run.add(path, "Escalate P1 incidents to the on-call SRE", "-a", "bob", "-t", "procedural")
    run.add(path, "Bob and Carol share an office", "-a", "bob", "-t", "social")
    # Working memories live in process unless routed to a store (issue 17): route them here.
    routed = MemvaultConfig(
        backend="composite",
        storage=MemoryStorageConfig(url=path),
        composite=CompositeStorageConfig(routes={MemoryCategory.WORKING: path}),
    )
    with Memory(config=routed) as mem:
        mem.add("Currently editing report.md", agent_id="bob", category="working")
    # The CLI cannot set metadata, source, importance or expiry: add one such memory directly.
    with Memory(path) as mem:
        mem.add(
            "Budget approvals above 10k EUR need the CFO",
            agent_id="bob",
            metadata={"doc": "policy.pdf", "page": 12, "nested": {"ok": True, "list": [1, 2.5]}},
            source="handbook",
            importance=0.9,
            label="finance",
            tags=["policy"],
            created_at=datetime(2022, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            expires_at=datetime(2099, 1, 1, tzinfo=UTC),
        )
    return path


def export_stdout(run, db: str, *options: str) -> list[dict[str, Any]]:
    result = run("--db", db, "export", *options)
    assert result.code == 0, result.err
    assert result.err == ""
    data: list[dict[str, Any]] = json.loads(result.out)
    return data


def by_id(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in entries}


def test_export_to_file_and_import_round_trip_losslessly(run, source, tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    exported = run("--db", source, "export", "-o", str(dump))
    assert exported.code == 0
    assert exported.out == ""
    assert exported.err.strip() == f"exported 6 memories to {dump}"
    original = json.loads(dump.read_text(encoding="utf-8"))
    assert len(original) == 6

    target = str(tmp_path / "target.db")
    imported = run("--db", target, "import", str(dump))
    assert imported.code == 0, imported.err
    assert imported.out.strip() == "imported 6 memories"

    copy = export_stdout(run, target)
    assert by_id(copy) == by_id(original)  # every field of every memory
    # Spot-check the fields most likely to be mangled on the way.
    originals = {e["content"]: e for e in original}
    moved = by_id(copy)[originals["Moved from Berlin to Lisbon in March 2023"]["id"]]
    assert moved["created_at"] == "2023-03-14T15:09:26.535897+00:00"
    assert moved["tags"] == ["relocation", "non-inferable"]
    assert moved["label"] == "life-events"
    budget = by_id(copy)[originals["Budget approvals above 10k EUR need the CFO"]["id"]]
    assert budget["metadata"] == {
        "doc": "policy.pdf",
        "page": 12,
        "nested": {"ok": True, "list": [1, 2.5]},
    }
    assert budget["created_at"] == "2022-12-31T23:59:59.999999+00:00"
    assert budget["expires_at"] == "2099-01-01T00:00:00+00:00"
    assert (budget["source"], budget["importance"], budget["label"]) == ("handbook", 0.9, "finance")
    assert "Café orders: naïve flat white ☕, 日本茶 on Fridays" in {e["content"] for e in copy}


def test_imported_memories_are_searchable(run, source, tmp_path: Path, monkeypatch) -> None:
    dump = tmp_path / "dump.json"
    run("--db", source, "export", "-o", str(dump))
    # The copy names all-MiniLM-L6-v2: "who to page for a major outage" -> "Escalate P1
    # incidents to the on-call SRE" is a paraphrase paraphrase-MiniLM-L3-v2 (the default now)
    # ranks below an unrelated memory.
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "minilm")
    target = str(tmp_path / "target.db")
    run("--db", target, "import", str(dump))
    hits = run("--db", target, "search", "who to page for a major outage", "-a", "bob", "--json")
    assert hits.json()[0]["content"] == "Escalate P1 incidents to the on-call SRE"


def test_import_twice_adds_nothing_the_second_time(run, source, tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    run("--db", source, "export", "-o", str(dump))
    target = str(tmp_path / "target.db")
    first = run("--db", target, "import", str(dump))
    second = run("--db", target, "import", str(dump))
    assert first.out.strip() == "imported 6 memories"
    assert second.code == 0
    assert second.out.strip() == "imported 0 memories"
    assert len(export_stdout(run, target)) == 6


def test_import_into_the_source_store_adds_nothing(run, source, tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    run("--db", source, "export", "-o", str(dump))
    result = run("--db", source, "import", str(dump))
    assert result.out.strip() == "imported 0 memories"
    assert by_id(export_stdout(run, source)) == by_id(json.loads(dump.read_text("utf-8")))


def test_import_agent_option_reassigns_every_memory(run, source, tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    run("--db", source, "export", "-o", str(dump))
    target = str(tmp_path / "target.db")
    result = run("--db", target, "import", str(dump), "--agent", "carol")
    assert result.out.strip() == "imported 6 memories"
    assert {e["agent_id"] for e in export_stdout(run, target)} == {"carol"}
    assert len(run.list(target, "--agent", "carol")) == 6
    assert run.list(target, "--agent", "bob") == []


def test_export_to_stdout_is_valid_json_with_all_agents(run, source) -> None:
    data = export_stdout(run, source)
    assert isinstance(data, list)
    assert len(data) == 6
    assert {e["agent_id"] for e in data} == {"alice", "bob"}
    for entry in data:
        assert {"id", "agent_id", "category", "content", "tags", "metadata", "created_at"} <= set(
            entry
        )


def test_export_agent_option_exports_one_agent(run, source) -> None:
    data = export_stdout(run, source, "--agent", "alice")
    assert len(data) == 2
    assert {e["agent_id"] for e in data} == {"alice"}


def test_export_of_an_empty_store_is_an_empty_array(run, db) -> None:
    assert export_stdout(run, db) == []


def test_export_to_an_unwritable_path_fails_cleanly(run, source, tmp_path: Path) -> None:
    result = run("--db", source, "export", "-o", str(tmp_path / "missing-dir" / "dump.json"))
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert result.err.startswith("error: ")
    assert not (tmp_path / "missing-dir").exists()


def _bad_import(run, db: str, path: Path) -> str:
    """Run an import that must fail; return its one stderr line."""
    result = run("--db", db, "import", str(path))
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    assert "Traceback" not in result.err
    line = result.err_lines[0]
    assert line.startswith("error: ")
    return line


def test_import_of_malformed_json_fails_with_one_line(run, db, tmp_path: Path) -> None:
    run.add(db, "Already here")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": "x", "content": ', encoding="utf-8")
    line = _bad_import(run, db, bad)
    assert "not valid JSON" in line
    assert "bad.json" in line
    assert len(run.list(db)) == 1


def test_import_of_a_json_object_is_rejected(run, db, tmp_path: Path) -> None:
    bad = tmp_path / "object.json"
    bad.write_text('{"memories": []}', encoding="utf-8")
    assert "JSON array" in _bad_import(run, db, bad)


def test_import_of_a_missing_file_is_rejected(run, db, tmp_path: Path) -> None:
    assert "missing.json" in _bad_import(run, db, tmp_path / "missing.json")


def test_import_with_one_invalid_item_writes_nothing(run, source, db, tmp_path: Path) -> None:
    items = export_stdout(run, source)
    items[3] = {**items[3], "created_at": "not a date"}
    dump = tmp_path / "partly-bad.json"
    dump.write_text(json.dumps(items), encoding="utf-8")
    line = _bad_import(run, db, dump)
    assert "item 3" in line
    assert export_stdout(run, db) == []


def test_import_rejects_an_item_without_content(run, db, tmp_path: Path) -> None:
    dump = tmp_path / "no-content.json"
    item = {"id": "abc-1", "agent_id": "a", "created_at": "2024-01-01T00:00:00+00:00"}
    dump.write_text(json.dumps([item]), encoding="utf-8")
    assert "item 0" in _bad_import(run, db, dump)


def test_import_of_a_binary_file_fails_with_one_line(run, db, tmp_path: Path) -> None:
    bad = tmp_path / "binary.json"
    bad.write_bytes(b"\xff\xfe[\x00\x81garbage")
    _bad_import(run, db, bad)


def test_import_error_is_exactly_one_line_on_stderr(run, db, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{bad", encoding="utf-8")
    result = run("--db", db, "import", str(bad))
    assert result.code == 2
    assert result.err.startswith("error: ")
    assert result.err.count("\n") == 1


def test_stats_json_counts_categories_and_agents(run, source) -> None:
    result = run("--db", source, "stats", "--json")
    assert result.code == 0
    stats = result.json()
    assert stats["backend"] == "sqlite"
    assert stats["total"] == 6
    assert stats["agents"] == 2
    assert stats["by_category"] == {
        "episodic": 1,
        "semantic": 2,
        "procedural": 1,
        "social": 1,
        "working": 1,
    }
    assert stats["dimension"] == 384
    assert stats["embedding_model"]
    assert stats["size_bytes"] > 0


def test_stats_follow_deletes(run, source) -> None:
    run("--db", source, "clear", "--agent", "alice", "--force")
    stats = run("--db", source, "stats", "--json").json()
    assert stats["total"] == 4
    assert stats["agents"] == 1
    assert "episodic" not in {k for k, v in stats["by_category"].items() if v}


def test_stats_table_shows_the_counts(run, source) -> None:
    result = run("--db", source, "stats")
    assert result.code == 0
    lines = [" ".join(line.replace("│", " ").split()) for line in result.out.splitlines()]
    assert "backend sqlite" in lines
    assert "memories 6" in lines
    assert "agents 2" in lines
    assert "semantic 2" in lines
