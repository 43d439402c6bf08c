"""Content over the store's limit is stored as overlapping, linked chunks instead of refused."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from memvault import Memory
from memvault.config import MemoryOptionsConfig, load_config
from memvault.protocols import Embedder
from memvault.write.chunking import chunk_text


def _doc(n: int) -> str:
    return "\n\n".join(
        f"Section {i}. The service number {i} listens on port {8000 + i}. It logs to stdout."
        for i in range(n)
    )


def test_chunks_are_bounded_overlapping_and_lose_nothing() -> None:
    text = _doc(400)
    chunks = chunk_text(text, size=500, overlap=100)
    assert all(0 < len(c) <= 500 for c in chunks)
    for i in range(400):  # every fact is whole in some chunk
        assert any(f"service number {i} listens on port {8000 + i}" in c for c in chunks)
    # Neighbouring chunks share text (the overlap), and cuts fall between sentences here.
    assert all(a[-40:].split(". ")[-1][:10] in b for a, b in itertools.pairwise(chunks))
    assert chunk_text("short text") == ["short text"]
    assert chunk_text("x" * 1200, size=500, overlap=0) == ["x" * 500, "x" * 500, "x" * 200]
    with pytest.raises(ValueError, match="invalid chunking"):
        chunk_text("abc", size=10, overlap=6)


def test_a_long_memory_is_chunked_and_found(tmp_path: Path, minilm: Embedder) -> None:
    cfg = load_config(url=str(tmp_path / "c.db")).model_copy(
        update={"options": MemoryOptionsConfig(max_content_chars=4000)}
    )
    with Memory(config=cfg, embedder=minilm) as mem:
        text = _doc(300)  # about 24,000 characters: over the 4,000 limit
        head = mem.add(text, agent_id="a", category="episodic", metadata={"doc": "runbook"})
        stored = mem.list(agent_id="a", limit=1000)
        assert len(stored) > 6
        group = {e.metadata.extra["chunk_group"] for e in stored}
        assert len(group) == 1
        assert {e.metadata.extra["doc"] for e in stored} == {"runbook"}
        first = mem.get(head, agent_id="a")
        assert first.metadata.extra["chunk_index"] == 0
        assert first.metadata.extra["chunk_count"] == len(stored)
        hits = mem.search("which port does service number 217 listen on?", agent_id="a")
        assert "port 8217" in hits[0].content
        # add_many: one id per item (the first chunk of a long one), in input order.
        ids = mem.add_many([{"content": "A short note."}, {"content": _doc(100)}], agent_id="b")
        assert len(ids) == 2
        assert mem.get(ids[1], agent_id="b").metadata.extra["chunk_index"] == 0
        assert mem.count(agent_id="b") > 2
