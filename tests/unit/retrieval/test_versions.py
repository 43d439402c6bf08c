"""With superseded entries in a result, the current version comes before the one it replaced."""

from __future__ import annotations

from pathlib import Path

from memvault import Memory
from memvault.protocols import Embedder
from memvault.retrieval.pipeline import newest_versions_first


def test_superseded_entries_follow_their_successor() -> None:
    successor = {"old": "new", "new": None, "x": None}
    assert newest_versions_first(["old", "x", "new"], successor) == ["x", "new", "old"]
    # Chains come out newest first; an entry whose successor is absent keeps its place.
    chain = {"v1": "v2", "v2": "v3", "v3": None, "lone": "gone"}
    assert newest_versions_first(["v1", "lone", "v2", "v3"], chain) == ["lone", "v3", "v2", "v1"]
    # Already in order: unchanged. A cycle (never written by memvault) keeps the score order.
    assert newest_versions_first(["new", "old"], successor) == ["new", "old"]
    assert newest_versions_first(["a", "b"], {"a": "b", "b": "a"}) == ["a", "b"]


def test_include_superseded_ranks_the_current_value_first(tmp_path: Path, minilm: Embedder) -> None:
    with Memory(str(tmp_path / "v.db"), embedder=minilm) as mem:
        old = mem.add("The API gateway runs Kong version 2.8", agent_id="ops")
        new = mem.add("Gateway upgraded: now Envoy", agent_id="ops", supersedes=old)
        # The query matches the old wording far better than the new one.
        hits = mem.search("API gateway Kong version", agent_id="ops", include_superseded=True)
        assert [h.id for h in hits[:2]] == [new, old]
        assert [h.id for h in mem.search("API gateway Kong version", agent_id="ops")] == [new]
