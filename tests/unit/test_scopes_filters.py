"""Scopes (user, session, run, namespace) and metadata filters through the public API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memvault import Memory
from memvault.errors import MemoryValidationError
from memvault.protocols import Embedder


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(str(tmp_path / "f.db"), embedder=minilm) as m:
        m.add("Alice prefers window seats on flights", agent_id="bot", user_id="alice")
        m.add("Bob prefers aisle seats on flights", agent_id="bot", user_id="bob")
        m.add(
            "Bob's flight to Oslo is on 3 May",
            agent_id="bot",
            user_id="bob",
            session_id="trip",
            metadata={"priority": 2, "due": datetime(2026, 5, 3, tzinfo=UTC)},
        )
        m.add(
            "Bob's hotel in Oslo is booked",
            agent_id="bot",
            user_id="bob",
            session_id="trip",
            metadata={"priority": 5, "due": datetime(2026, 5, 1, tzinfo=UTC)},
        )
        m.add("Alice prefers aisle seats too", agent_id="other-bot", user_id="alice")
        yield m


def test_scope_ids_narrow_search_list_and_count(mem: Memory) -> None:
    hits = mem.search("which seat does the user prefer?", agent_id="bot", user_id="alice")
    assert [h.content for h in hits] == ["Alice prefers window seats on flights"]
    assert mem.count(agent_id="bot", user_id="bob") == 3
    assert mem.count(agent_id="bot", user_id="bob", session_id="trip") == 2
    listed = mem.list(agent_id="bot", session_id="trip")
    assert {e.content for e in listed} == {
        "Bob's flight to Oslo is on 3 May",
        "Bob's hotel in Oslo is booked",
    }
    # A scope narrows within the agent; it never reaches another agent's memories.
    assert mem.count(agent_id="bot", user_id="alice") == 1
    assert mem.count(agent_id="other-bot", user_id="alice") == 1


def test_metadata_filters_compare_numbers_dates_and_sets(mem: Memory) -> None:
    def contents(**kwargs: object) -> set[str]:
        return {e.content for e in mem.list(agent_id="bot", **kwargs)}  # type: ignore[arg-type]

    assert contents(filters={"priority": {"gte": 3}}) == {"Bob's hotel in Oslo is booked"}
    assert contents(filters={"priority": {"in": [2, 5]}}) == {
        "Bob's flight to Oslo is on 3 May",
        "Bob's hotel in Oslo is booked",
    }
    assert contents(filters={"due": {"lt": datetime(2026, 5, 2, tzinfo=UTC)}}) == {
        "Bob's hotel in Oslo is booked"
    }
    assert contents(filters={"priority": "2"}) == set()  # type-sensitive: "2" is not 2
    hits = mem.search("Oslo", agent_id="bot", filters={"priority": {"lt": 3}})
    assert [h.content for h in hits] == ["Bob's flight to Oslo is on 3 May"]
    for bad in ({"priority": {"near": 3}}, {"priority": {"in": 3}}, ["priority"]):
        with pytest.raises(MemoryValidationError, match="filter"):
            mem.list(agent_id="bot", filters=bad)  # type: ignore[arg-type]


def test_context_injects_only_what_the_scope_allows(mem: Memory) -> None:
    ctx = mem.context("seat preference for flights", agent_id="bot", user_id="alice")
    assert "Alice prefers window seats" in ctx.text and "Bob" not in ctx.text
    strategy = mem.context_strategy(filters={"priority": {"gte": 5}})
    assert strategy is not None
    with pytest.raises(MemoryValidationError, match="filter"):
        mem.context_strategy(filters={"priority": {"near": 1}})
