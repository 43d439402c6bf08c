"""Tiered recall, importance at write and the five-signal preset, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from memvault.config import MemoryOptionsConfig
from memvault.config.graph import GraphConfig, ImportanceConfig, TieredRecallConfig
from memvault.errors import MemoryValidationError
from memvault.llm.errors import ProviderError
from memvault.llm.scripted import ScriptedLLM
from memvault.retrieval.tiered import RecallTier, classify_tier

from .conftest import OpenMemory

FACTS = (
    "Alice works at Acme Corp as a designer.",
    "Acme Corp moved its office to Berlin in March.",
    "Alice said the move to Berlin was because of the new design studio.",
    "Bob prefers tea over coffee.",
)
ON = TieredRecallConfig(enabled=True)
NO_LLM_WRITES = MemoryOptionsConfig(llm_supersession=False)


async def _load(mem: object) -> None:
    for text in FACTS:
        await mem.add(text, agent_id="a")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("query", "tier"),
    [
        ("What is Alice's job?", RecallTier.SHALLOW),
        ("Who is Bob?", RecallTier.SHALLOW),
        ("Why did Acme Corp move to Berlin?", RecallTier.DEEP),
        ("How has Alice's work changed over time?", RecallTier.DEEP),
        ("Tell me about the design studio in Berlin", RecallTier.TARGETED),
        ("", RecallTier.TARGETED),
    ],
)
def test_heuristic_classifier(query: str, tier: RecallTier) -> None:
    assert classify_tier(query) is tier


async def test_recall_tiered_off_is_a_plain_search(open_memory: OpenMemory) -> None:
    mem = open_memory()
    await _load(mem)
    got = await mem.recall_tiered("Why did Acme Corp move to Berlin?", agent_id="a")
    assert got.tier is RecallTier.TARGETED and got.classified_by == "off"
    plain = await mem.search("Why did Acme Corp move to Berlin?", agent_id="a")
    assert [e.id for e in got.entries] == [e.id for e in plain]


async def test_recall_tiered_picks_the_tier_by_heuristic(open_memory: OpenMemory) -> None:
    mem = open_memory(tiered_recall=ON, graph=GraphConfig(enabled=True))
    await _load(mem)
    shallow = await mem.recall_tiered("What is Alice's job?", agent_id="a", limit=3)
    assert shallow.tier is RecallTier.SHALLOW and shallow.classified_by == "heuristic"
    assert "designer" in shallow.entries[0].content
    deep = await mem.recall_tiered("Why did Acme Corp move to Berlin?", agent_id="a", limit=3)
    assert deep.tier is RecallTier.DEEP
    assert any("design studio" in e.content for e in deep.entries)
    forced = await mem.recall_tiered("What is Alice's job?", agent_id="a", tier="deep")
    assert forced.tier is RecallTier.DEEP and forced.classified_by == "caller"
    with pytest.raises(MemoryValidationError, match="tier"):
        await mem.recall_tiered("x", agent_id="a", tier="bottomless")


async def test_llm_classifier_and_validator_fail_open(open_memory: OpenMemory) -> None:
    cfg = TieredRecallConfig(enabled=True, classifier="llm", validate_results=True)
    llm = ScriptedLLM(["deep", "yes", ProviderError("down"), ProviderError("down"), "banana", "no"])
    # llm_supersession off: the script is for recall; the writes must not consume it.
    mem = open_memory(tiered_recall=cfg, llm=llm, options=NO_LLM_WRITES)
    await _load(mem)
    first = await mem.recall_tiered("What is Alice's job?", agent_id="a")
    assert (first.tier, first.classified_by, first.validated) == (RecallTier.DEEP, "llm", True)
    # Classifier down: the heuristic tier; validator down: the results are accepted.
    second = await mem.recall_tiered("What is Alice's job?", agent_id="a")
    assert (second.tier, second.classified_by) == (RecallTier.SHALLOW, "fallback")
    assert second.validated is True and not second.escalated
    # An unreadable tier falls back too; a "no" from the validator escalates to deep.
    third = await mem.recall_tiered("What is Alice's job?", agent_id="a")
    assert third.classified_by == "fallback"
    assert third.escalated and third.tier is RecallTier.DEEP and third.validated is False
    assert llm.remaining == 0


async def test_importance_is_scored_at_write_when_enabled(open_memory: OpenMemory) -> None:
    mem = open_memory(importance=ImportanceConfig(enabled=True))
    marked = await mem.add("Remember: Alice is allergic to peanuts!", agent_id="a")
    small = await mem.add("ok thanks", agent_id="a")
    given = await mem.add("Bob prefers tea.", agent_id="a", importance=0.9)
    again = await mem.add(
        "Remember: Alice is allergic to peanuts, always!", agent_id="a", dedup=False
    )
    imp = {i: (await mem.get(i, agent_id="a")).metadata.importance for i in (marked, small, given)}
    assert imp[marked] > 0.6 > imp[small]
    assert imp[given] == 0.9
    repeat = (await mem.get(again, agent_id="a")).metadata.importance
    assert repeat < imp[marked]  # near-duplicate of a stored memory: less novel
    off = open_memory()
    plain = await off.add("Remember: Alice is allergic to peanuts!", agent_id="a")
    assert (await off.get(plain, agent_id="a")).metadata.importance == 0.5


async def test_five_signal_preset_ranks_with_graph_and_access(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=GraphConfig(enabled=True))
    await _load(mem)
    hits = await mem.search("Where does Alice work?", agent_id="a", preset="five_signal")
    assert hits and all(0.0 <= (h.relevance_score or 0.0) <= 1.0 for h in hits)
    assert "Acme Corp" in hits[0].content
    default = await mem.search("Where does Alice work?", agent_id="a")
    assert [h.relevance_score for h in hits] != [h.relevance_score for h in default]
