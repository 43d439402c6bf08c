"""``memvault reindex`` against real SQLite stores, with the real bundled model as the target.

Stores are built with the hashing embedder (what a user had configured before); the configured
embedder of the CLI runs is all-MiniLM-L6-v2, named (``MEMVAULT_EMBEDDER=minilm``: a store opens
with its own model when none is named), so such a store is refused until reindexed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memvault import Memory
from memvault.embeddings.hashing import HashingEmbedder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
FACTS = (
    "Alice drinks a double espresso every morning before standup",
    "The staging database runs PostgreSQL with pgvector",
    "Bob is allergic to peanuts so order lunch accordingly",
)


@pytest.fixture(autouse=True)
def _configured_minilm(_isolated_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI runs name all-MiniLM-L6-v2 (after the conftest cleared MEMVAULT_*)."""
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "minilm")


@pytest.fixture
def old_store(db: str) -> str:
    """A store of 3 memories of agent alice and 2 of bob, built with hashing:256."""
    with Memory(db, embedder=HashingEmbedder(256)) as mem:
        for text in FACTS:
            mem.add(text, agent_id="alice")
        mem.add("Bob maintains the nightly backup job", agent_id="bob")
        mem.add("Bob moved to the Lisbon office", agent_id="bob")
    return db


def _meta(db: str) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT key, value FROM store_meta").fetchall())


def test_reindex_moves_the_store_to_the_configured_model(run, old_store: str) -> None:
    refused = run("--db", old_store, "search", "coffee", "-a", "alice")
    assert refused.code == 2
    assert "memvault reindex" in refused.err

    result = run("--db", old_store, "reindex")
    assert result.code == 0, result.err
    line = result.out.strip()
    assert "\n" not in line
    assert line.startswith(f"reindexed 5 memories in {old_store}")
    assert f"hashing-v1-256 (256d) -> {MINILM} (384d)" in line
    assert _meta(old_store)["embedding_model"] == MINILM
    assert _meta(old_store)["dimension"] == "384"

    found = run("--db", old_store, "search", "what coffee does she like", "-a", "alice")
    assert found.code == 0, found.err
    assert "espresso" in found.out.splitlines()[0]

    again = run("--db", old_store, "reindex")
    assert again.code == 0
    assert "nothing to reindex" in again.out


def test_reindex_json_report(run, old_store: str) -> None:
    result = run("--db", old_store, "reindex", "--json", "--batch-size", "2")
    assert result.code == 0, result.err
    report = result.json()
    assert report["swapped"] is True and report["dry_run"] is False
    assert (report["total"], report["embedded"], report["resumed"]) == (5, 5, 0)
    assert report["source_model"] == "hashing-v1-256" and report["source_dimension"] == 256
    assert report["target_model"] == MINILM and report["target_dimension"] == 384
    assert report["stores"] == [old_store]


def test_dry_run_counts_and_estimates_without_writing(run, old_store: str) -> None:
    result = run("--db", old_store, "reindex", "--dry-run")
    assert result.code == 0, result.err
    assert result.out.startswith(f"dry run: 5 of 5 memories in {old_store} would be re-embedded")
    assert "/s" in result.out
    assert _meta(old_store)["embedding_model"] == "hashing-v1-256"

    report = run("--db", old_store, "reindex", "--dry-run", "--json").json()
    assert report["dry_run"] is True and report["swapped"] is False
    assert report["pending"] == 5
    assert report["rate"] > 0
    assert report["estimated_seconds"] == pytest.approx(5 / report["rate"])
    with sqlite3.connect(old_store) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "reindex_vectors" not in tables


def test_embedder_option_picks_the_target_model(run, old_store: str) -> None:
    result = run("--db", old_store, "reindex", "--embedder", "hashing:64", "--json")
    assert result.code == 0, result.err
    assert result.json()["target_model"] == "hashing-v1-64"
    assert _meta(old_store)["dimension"] == "64"
    with Memory(old_store, embedder=HashingEmbedder(64)) as mem:
        hits = mem.search("peanuts", agent_id="alice", limit=1)
        assert "peanuts" in hits[0].content

    forced = run("--db", old_store, "reindex", "--embedder", "hashing:64", "--force", "--json")
    assert forced.code == 0, forced.err
    assert forced.json()["embedded"] == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("reindex", "--embedder", "bogus"), "unknown embedder spec 'bogus'"),
        (("reindex", "--batch-size", "0"), "--batch-size"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(run, old_store: str, args, message) -> None:
    result = run("--db", old_store, *args)
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert message in result.err
    assert _meta(old_store)["embedding_model"] == "hashing-v1-256"


def test_a_missing_store_or_a_server_url_is_refused(run, tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    result = run("--db", str(missing), "reindex")
    assert result.code == 2
    assert result.err_lines == [f"error: store {missing} does not exist"]
    assert not missing.exists()

    remote = run("--db", "http://127.0.0.1:9", "reindex")
    assert remote.code == 2
    assert len(remote.err_lines) == 1
    assert "not through a server" in remote.err

    in_process = run("--db", "memory://", "reindex")
    assert in_process.code == 2
    assert len(in_process.err_lines) == 1
    assert "needs a durable store" in in_process.err


def test_reindex_has_help(run) -> None:
    result = run("reindex", "--help")
    assert result.code == 0
    for option in ("--embedder", "--batch-size", "--dry-run", "--force", "--json"):
        assert option in result.out
