"""The write path embeds each new text once: dedup reuses the batch embedding for its search."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from counting_embedder import CountingEmbedder
from memvault import AsyncMemory
from memvault.protocols import Embedder


async def test_add_many_with_dedup_embeds_every_text_once(tmp_path: Path, minilm: Embedder) -> None:
    counting = CountingEmbedder(minilm)
    mem = AsyncMemory(str(tmp_path / "e.db"), embedder=counting)  # type: ignore[arg-type]
    try:
        await mem.add_many(
            [{"content": f"Fact number {i} about the system."} for i in range(20)], agent_id="a"
        )
        counting.calls.clear()
        texts = [f"Another fact, number {i}, about deploys." for i in range(30)]
        ids = await mem.add_many([{"content": t} for t in texts], agent_id="a", dedup=True)
        assert len(set(ids)) == 30
        assert counting.calls["texts"] == 30 and counting.calls["query"] == 0
        # The duplicate check still finds what is already there.
        again = await mem.add_many([{"content": texts[3]}], agent_id="a", dedup=True)
        assert again == [ids[3]]
        assert np.isfinite(np.asarray(counting.inner.embed_query("x"))).all()
    finally:
        await mem.close()
