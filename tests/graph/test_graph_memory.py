"""Graph memory through the public API, on SQLite and PostgreSQL: extraction at write, typed
temporal edges, BFS / spreading recall, graph-ranked search, co-access, isolation."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.backends.postgres import PostgresBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.config.graph import GraphConfig
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.graph.extract import LLMExtractor, RuleExtractor
from memvault.graph.models import CO_OCCURS
from memvault.llm.errors import ProviderError
from memvault.llm.scripted import ScriptedLLM
from memvault.protocols import Embedder

from .conftest import OpenMemory

T0 = datetime(2024, 1, 1, tzinfo=UTC)
ON = GraphConfig(enabled=True)


async def _facts(mem: AsyncMemory, agent: str = "a") -> None:
    await mem.add("Alice works at Acme Corp in the design team.", agent_id=agent, created_at=T0)
    await mem.add(
        "Acme Corp has its headquarters in Berlin.", agent_id=agent, created_at=T0 + timedelta(1)
    )
    await mem.add(
        "Berlin hosts the Lighthouse Festival every June.",
        agent_id=agent,
        created_at=T0 + timedelta(2),
    )
    await mem.add(
        "Carol moved to Lisbon last spring.", agent_id=agent, created_at=T0 + timedelta(3)
    )


def test_rule_extractor_finds_entities_and_typed_edges() -> None:
    found = RuleExtractor().extract_sync("Melanie: I moved to Boston in 2022 and work at Google.")
    keys = {e.key: e.kind for e in found.entities}
    assert keys["melanie"] == "person" and "boston" in keys and keys["2022"] == "time"
    edges = {(e.source, e.relation, e.target) for e in found.edges}
    assert ("melanie", "lives_in", "boston") in edges
    assert ("melanie", "works_at", "google") in edges
    assert RuleExtractor().extract_sync("ok, thanks!").entities == ()


async def test_llm_extractor_reads_the_model_and_falls_back_to_rules() -> None:
    reply = json.dumps(
        {
            "entities": [{"name": "Dana", "kind": "person"}, {"name": "Oslo", "kind": "place"}],
            "edges": [{"source": "Dana", "relation": "lives in", "target": "Oslo"}],
        }
    )
    llm = ScriptedLLM([reply, ProviderError("down")])
    got = await LLMExtractor(llm).extract("Dana lives up north, in Oslo.")
    assert {(e.source, e.relation, e.target) for e in got.edges} == {("dana", "lives_in", "oslo")}
    fallback = await LLMExtractor(llm).extract("Erik works at Nordic Labs.")
    assert ("erik", "works_at", "nordic labs") in {
        (e.source, e.relation, e.target) for e in fallback.edges
    }
    assert len(llm.calls) == 2


async def test_graph_off_costs_nothing_and_says_so(open_memory: OpenMemory) -> None:
    mem = open_memory()
    await _facts(mem)
    with pytest.raises(MemoryConfigError, match=r"graph\.enabled"):
        _ = mem.graph
    plain = await mem.search("Where is Alice's company based?", agent_id="a")
    graphy = await mem.search("Where is Alice's company based?", agent_id="a", preset="graph")
    assert [e.id for e in graphy] == [e.id for e in plain]


def test_sqlite_and_postgres_backends_report_graph_support(
    tmp_path: Path, minilm: Embedder
) -> None:
    assert SQLiteBackend(tmp_path / "x.db", minilm).supports_graph
    assert PostgresBackend("postgresql://localhost/x", minilm).supports_graph


async def test_edges_are_typed_and_newer_facts_close_older_ones(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    await mem.add("Alice works at Acme Corp.", agent_id="a", created_at=T0, dedup=False)
    await mem.add(
        "Alice works at Globex these days.",
        agent_id="a",
        created_at=T0 + timedelta(days=30),
        dedup=False,
    )
    # An out-of-order write of an older fact is stored already closed by the newer one.
    await mem.add(
        "Alice works at Initech, her first job.",
        agent_id="a",
        created_at=T0 - timedelta(days=300),
        dedup=False,
    )
    jobs = [
        e
        for e in await mem.graph.edges("a", "Alice", include_closed=True)
        if e.relation == "works_at"
    ]
    spans = {e.target: (e.valid_from, e.valid_to) for e in jobs}
    assert spans["acme corp"] == (T0, T0 + timedelta(days=30))
    assert spans["globex"] == (T0 + timedelta(days=30), None)
    assert spans["initech"] == (T0 - timedelta(days=300), T0)
    now = {e.target for e in await mem.graph.edges("a", "Alice") if e.relation == "works_at"}
    assert now == {"globex"}
    then = await mem.graph.edges("a", "Alice", as_of=T0 + timedelta(days=1))
    assert {e.target for e in then if e.relation == "works_at"} == {"acme corp"}


async def test_bfs_and_spreading_recall_reach_second_hop_memories(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    await _facts(mem)
    for mode in ("bfs", "spreading"):
        hits = await mem.graph_recall("Tell me about Alice", agent_id="a", mode=mode, hops=2)
        contents = [h.content for h in hits]
        assert contents[0].startswith("Alice works at Acme Corp"), mode
        assert any("headquarters in Berlin" in c for c in contents), mode  # one hop away
        assert not any("Lisbon" in c for c in contents), mode  # not connected
        assert all(0.0 < (h.relevance_score or 0) <= 1.0 for h in hits)
    one_hop = await mem.graph_recall("Alice", agent_id="a", mode="bfs", hops=1)
    assert not any("Festival" in h.content for h in one_hop)
    two_hops = await mem.graph_recall("Alice", agent_id="a", mode="bfs", hops=3)
    assert any("Festival" in h.content for h in two_hops)


async def test_as_of_recall_ignores_later_memories(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    await _facts(mem)
    early = await mem.graph_recall("Berlin", agent_id="a", as_of=T0 + timedelta(hours=36))
    contents = [h.content for h in early]
    assert contents[0] == "Acme Corp has its headquarters in Berlin."
    assert not any("Festival" in c for c in contents)  # written after as_of
    later = await mem.graph_recall("Berlin", agent_id="a")
    assert any("Festival" in h.content for h in later)


async def test_graph_is_private_to_its_agent_and_store(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    await _facts(mem, agent="a")
    await mem.add("Zed likes Berlin techno.", agent_id="b")
    assert await mem.graph_recall("Alice", agent_id="b") == []
    b_hits = await mem.graph_recall("Berlin", agent_id="b")
    assert [h.content for h in b_hits] == ["Zed likes Berlin techno."]
    assert {e.key for e in await mem.graph.entities("b")} >= {"zed", "berlin"}
    assert "alice" not in {e.key for e in await mem.graph.entities("b")}
    other = open_memory(graph=ON)  # another store (tenant): its own empty graph
    assert await other.graph_recall("Alice", agent_id="a") == []


async def test_graph_preset_merges_graph_into_ranking_and_strengthens_links(
    open_memory: OpenMemory,
) -> None:
    mem = open_memory(graph=ON)
    await _facts(mem)
    before = {e.id: e.weight for e in await mem.graph.edges("a", include_closed=True)}
    hits = await mem.search("Which city is Alice's employer in?", agent_id="a", preset="graph")
    assert hits and hits[0].relevance_score is not None
    assert any("Berlin" in h.content for h in hits[:3])
    await mem.close()  # waits for the co-access strengthening behind the search
    reopened = open_memory(mem.location, graph=ON)
    after = {e.id: e.weight for e in await reopened.graph.edges("a", include_closed=True)}
    grown = [i for i in after if after[i] > before.get(i, 0.0)]
    assert grown
    assert all(e.relation == CO_OCCURS for e in await reopened.graph.edges("a") if e.id in grown)


async def test_expand_search_uses_the_graph_with_any_preset(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=GraphConfig(enabled=True, expand_search=True, expand_weight=1.0))
    await _facts(mem)
    plain = open_memory(graph=ON)
    await _facts(plain)
    q = "What happens in Alice's company city?"
    graphy = [h.relevance_score for h in await mem.search(q, agent_id="a")]
    base = [h.relevance_score for h in await plain.search(q, agent_id="a")]
    assert graphy != base


async def test_graph_recall_rejects_bad_input(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=ON)
    with pytest.raises(MemoryValidationError):
        await mem.graph_recall("  ", agent_id="a")
    with pytest.raises(MemoryValidationError, match="mode"):
        await mem.graph_recall("Alice", agent_id="a", mode="dfs")
    with pytest.raises(MemoryValidationError, match="hops"):
        await mem.graph_recall("Alice", agent_id="a", hops=9)


async def test_llm_extractor_is_used_when_configured(open_memory: OpenMemory) -> None:
    reply = json.dumps(
        {"entities": [{"name": "Project Falcon"}], "edges": []}, separators=(",", ":")
    )
    llm = ScriptedLLM([reply], repeat_last=True)
    mem = open_memory(graph=GraphConfig(enabled=True, extractor="llm"), llm=llm)
    await mem.add("the falcon thing ships friday", agent_id="a")
    assert [e.key for e in await mem.graph.entities("a")] == ["project falcon"]
    assert llm.calls
