"""The off-topic gate end to end: real SQLite file, real MiniLM model, the default preset.

A store of a dozen facts (the shape of ``examples/demo.py``): questions about them, task-like
ones with no word in common included, inject their memory; questions about anything else inject
nothing, and their results carry a relevance below the ``context()`` default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.injection.context import CONTEXT_MIN_RELEVANCE
from memvault.protocols import Embedder

FACTS = [
    "The user prefers Litestar over Flask for new web services.",
    "Code reviews on this team need two approvals before merging.",
    "The QA lead, Priya, wants detailed test plans attached to every PR.",
    "Project Atlas stores its data in PostgreSQL 16 with pgvector.",
    "Always run `make test` before pushing; CI takes about 12 minutes.",
    "Deployed v2.1 to production; rolled back after 20 minutes because of a memory leak.",
    "Fixed the cache memory leak by bounding the LRU to 10,000 entries; v2.1.1 deployed.",
    "Sprint 14 retro: the team chose JWT access tokens over server-side sessions for the API.",
    "The user's timezone is Europe/Berlin; schedule meetings after 10:00.",
    "Staging deploys go through the `deploy-staging` GitHub Actions workflow.",
    "Customer Acme reported slow search on accounts with more than 50k documents.",
    "Marco from the platform team owns the Kubernetes cluster and on-call rota.",
]

ON_TOPIC = {
    "implement the auth endpoint": "JWT",
    "which web framework should I use?": "Litestar",
    "who should I ask about the cluster?": "Marco",
    "what database does Atlas use?": "PostgreSQL",
}

OFF_TOPIC = [
    "quantum chromodynamics lattice gauge",
    "what is the capital of France?",
    "recipe for banana bread",
    "best hiking trails in Colorado",
]


@pytest.fixture
async def mem(tmp_path: Path, minilm: Embedder) -> AsyncMemory:
    memory = AsyncMemory(str(tmp_path / "facts.db"), embedder=minilm)
    await memory.__aenter__()
    await memory.add_many([{"content": f} for f in FACTS], agent_id="dev")
    yield memory  # type: ignore[misc]
    await memory.close()


@pytest.mark.parametrize(("query", "word"), ON_TOPIC.items())
async def test_on_topic_questions_inject_their_memory(
    mem: AsyncMemory, query: str, word: str
) -> None:
    ctx = await mem.context(query, agent_id="dev", token_budget=200)
    assert ctx.entries and word in ctx.entries[0].content
    hits = await mem.search(query, agent_id="dev", limit=3, explain=True)
    top = hits[0]
    assert top.score is not None and top.score.on_topic is not None
    assert top.relevance_score is not None and top.relevance_score >= CONTEXT_MIN_RELEVANCE


@pytest.mark.parametrize("query", OFF_TOPIC)
async def test_off_topic_questions_inject_nothing(mem: AsyncMemory, query: str) -> None:
    ctx = await mem.context(query, agent_id="dev", token_budget=200)
    assert ctx.entries == () and ctx.tokens == 0
    # Search still answers, best first, but says how little the best hit is worth.
    hits = await mem.search(query, agent_id="dev", limit=3, explain=True)
    assert hits
    assert all((h.relevance_score or 0.0) < CONTEXT_MIN_RELEVANCE for h in hits)
    top = hits[0].score
    assert top is not None and top.on_topic is not None and top.on_topic < 0.5
    assert top.fused == hits[0].relevance_score
