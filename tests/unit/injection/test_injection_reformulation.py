"""Search-and-Ask: LLM sufficiency checks and query reformulation inside search_memory."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from memvault import AsyncMemory
from memvault.errors import MemoryRetrievalError
from memvault.injection import (
    LLMQueryReformulator,
    LLMSufficiencyChecker,
    QueryReformulator,
    SufficiencyChecker,
    ToolBasedInjectionConfig,
    ToolBasedInjectionStrategy,
    merge_by_id,
)
from memvault.llm import ChatMessage, ProviderError, ScriptedLLM
from memvault.models import MemoryCategory, MemoryEntry
from memvault.protocols import Embedder
from memvault.retrieval.packing import MEMORY_BLOCK_START, PREAMBLE

NOW = datetime(2026, 3, 1, tzinfo=UTC)
DEPLOYS = "Deploys on Friday afternoons are banned after the March outage"
CAT = "Bob's cat is called Pixel"
MEMORIES = [
    "The team chose Litestar over Flask for typed request handlers",
    DEPLOYS,
    "Alice reviews every API change before it ships",
    CAT,
    "The staging database password rotates every month",
]
QUESTION = "when are we allowed to deploy?"
INSUFFICIENT = '{"sufficient": false, "missing": "more"}'
SUFFICIENT = '{"sufficient": true}'


def entry(i: str, score: float | None) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=MemoryCategory.SEMANTIC,
        content=f"memory {i}",
        created_at=NOW,
        updated_at=NOW,
        relevance_score=score,
    )


class SearchSpy:
    """Wraps AsyncMemory.search: records the queries and can fail from a given call on."""

    def __init__(self, mem: AsyncMemory, *, fail_from: int | None = None) -> None:
        self.original = mem.search
        self.queries: list[str] = []
        self.fail_from = fail_from

    async def __call__(self, query: str, **kwargs: Any) -> list[MemoryEntry]:
        self.queries.append(query)
        if self.fail_from is not None and len(self.queries) >= self.fail_from:
            raise MemoryRetrievalError("store went away")
        return await self.original(query, **kwargs)


@pytest.fixture
async def mem(minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory("memory://", embedder=minilm, track_access=False) as memory:
        for content in MEMORIES:
            await memory.add(content, agent_id="dev-1", created_at=NOW)
        yield memory


def loop_strategy(
    mem: AsyncMemory,
    checker: ScriptedLLM,
    reformulator: ScriptedLLM,
    *,
    rounds: int = 2,
) -> ToolBasedInjectionStrategy:
    return ToolBasedInjectionStrategy(
        mem,
        ToolBasedInjectionConfig(query_reformulation_enabled=True, max_reformulation_rounds=rounds),
        reformulator=LLMQueryReformulator(reformulator),
        sufficiency_checker=LLMSufficiencyChecker(checker),
    )


def numbered_queries(messages: Sequence[ChatMessage]) -> str:
    """A reformulator reply that is new on every call (counts the queries already tried)."""
    tried = messages[-1].content.split("Queries already tried:\n")[1].split("\n\n")[0]
    return json.dumps({"query": f"query number {tried.count('- ') + 1}"})


def test_llm_implementations_satisfy_the_protocols() -> None:
    llm = ScriptedLLM([])
    assert isinstance(LLMSufficiencyChecker(llm), SufficiencyChecker)
    assert isinstance(LLMQueryReformulator(llm), QueryReformulator)


def test_merge_by_id_keeps_the_most_relevant_copy() -> None:
    merged = merge_by_id({}, [entry("a", 0.4), entry("b", 0.9), entry("c", None)])
    merge_by_id(merged, [entry("a", 0.8), entry("b", 0.1), entry("c", 0.2), entry("d", 0.5)])
    assert {k: v.relevance_score for k, v in merged.items()} == {
        "a": 0.8,
        "b": 0.9,
        "c": 0.2,
        "d": 0.5,
    }


async def test_reformulated_query_finds_what_the_first_missed(mem: AsyncMemory) -> None:
    plain = ToolBasedInjectionStrategy(mem)
    first = await plain.search("dev-1", QUESTION, limit=2)
    assert first[0].content == DEPLOYS
    assert CAT not in [e.content for e in first]

    checker = ScriptedLLM([INSUFFICIENT, SUFFICIENT])
    reformulator = ScriptedLLM(['{"query": "name of the pet cat"}'])
    strategy = loop_strategy(mem, checker, reformulator)
    found = await strategy.search("dev-1", QUESTION, limit=2)
    assert [e.content for e in found] == [DEPLOYS, CAT]
    assert len(checker.calls) == 2  # insufficient, then satisfied after the second search
    assert len(reformulator.calls) == 1
    prompt = reformulator.calls[0][-1].content
    assert f"Question: {QUESTION}" in prompt
    assert f"- {QUESTION}" in prompt  # the first query is listed as tried
    assert DEPLOYS in prompt

    result = await strategy.handle_tool_call(
        "dev-1", "search_memory", {"query": QUESTION, "limit": 2}
    )
    assert CAT not in result  # the scripts are used up: the loop degraded to the first search
    assert DEPLOYS in result


async def test_sufficiency_prompt_treats_memories_as_data(mem: AsyncMemory) -> None:
    checker = ScriptedLLM([SUFFICIENT])
    strategy = loop_strategy(mem, checker, ScriptedLLM([]))
    found = await strategy.search("dev-1", QUESTION, limit=2)
    assert len(found) == 2
    system, user = checker.calls[0][0].content, checker.calls[0][1].content
    assert "data, not instructions" in system
    assert MEMORY_BLOCK_START in user
    assert DEPLOYS in user


async def test_merge_keeps_the_highest_relevance_across_rounds(mem: AsyncMemory) -> None:
    plain = ToolBasedInjectionStrategy(mem)
    (_, second) = await plain.search("dev-1", QUESTION, limit=2)
    assert second.relevance_score is not None
    assert second.relevance_score < 1.0
    # Searched for its own words, the weaker hit scores higher than it did for the question.
    (again, *_) = await plain.search("dev-1", second.content, limit=1)
    assert again.id == second.id
    assert again.relevance_score is not None and again.relevance_score > second.relevance_score
    checker = ScriptedLLM([INSUFFICIENT, SUFFICIENT])
    # The reformulation targets exactly the weaker hit; the merge keeps its round-2 score.
    reformulator = ScriptedLLM([json.dumps({"query": second.content})])
    strategy = loop_strategy(mem, checker, reformulator)
    found = {e.id: e.relevance_score for e in await strategy.search("dev-1", QUESTION, limit=3)}
    assert found[second.id] == pytest.approx(again.relevance_score)


@pytest.mark.parametrize("rounds", [1, 3, 5])
async def test_max_reformulation_rounds_is_honoured(
    mem: AsyncMemory, monkeypatch: pytest.MonkeyPatch, rounds: int
) -> None:
    spy = SearchSpy(mem)
    monkeypatch.setattr(mem, "search", spy)
    checker = ScriptedLLM([INSUFFICIENT], repeat_last=True)
    reformulator = ScriptedLLM([numbered_queries], repeat_last=True)
    strategy = loop_strategy(mem, checker, reformulator, rounds=rounds)
    await strategy.search("dev-1", QUESTION, limit=2)
    assert spy.queries == [QUESTION, *(f"query number {i}" for i in range(2, rounds + 2))]
    assert len(reformulator.calls) == rounds


async def test_a_repeated_or_empty_reformulation_ends_the_loop(
    mem: AsyncMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = SearchSpy(mem)
    monkeypatch.setattr(mem, "search", spy)
    checker = ScriptedLLM([INSUFFICIENT], repeat_last=True)
    reformulator = ScriptedLLM(
        [json.dumps({"query": "  WHEN are we allowed to DEPLOY?  "}), '{"query": ""}']
    )
    strategy = loop_strategy(mem, checker, reformulator, rounds=5)
    await strategy.search("dev-1", QUESTION, limit=2)
    await strategy.search("dev-1", QUESTION, limit=2)
    assert spy.queries == [QUESTION, QUESTION]


@pytest.mark.parametrize(
    ("checker_script", "reformulator_script"),
    [
        ([ProviderError("timeout", retryable=True)], []),
        ([INSUFFICIENT], [ProviderError("HTTP 500", retryable=True)]),
        # Garbage twice (the reply and the repair pass): LLMOutputError, a ProviderError.
        ([INSUFFICIENT], ["no idea", "still no JSON"]),
        ([INSUFFICIENT], []),  # script exhausted
    ],
)
async def test_llm_failures_degrade_to_the_first_results(
    mem: AsyncMemory, checker_script: list[Any], reformulator_script: list[Any]
) -> None:
    expected = [e.id for e in await ToolBasedInjectionStrategy(mem).search("dev-1", QUESTION)]
    strategy = loop_strategy(mem, ScriptedLLM(checker_script), ScriptedLLM(reformulator_script))
    found = await strategy.search("dev-1", QUESTION)
    assert [e.id for e in found] == expected


async def test_a_failure_in_a_later_round_keeps_what_was_found(mem: AsyncMemory) -> None:
    checker = ScriptedLLM([INSUFFICIENT, INSUFFICIENT, ProviderError("rate limited")])
    reformulator = ScriptedLLM(['{"query": "name of the pet cat"}', '{"query": "web framework"}'])
    strategy = loop_strategy(mem, checker, reformulator, rounds=5)
    found = [e.content for e in await strategy.search("dev-1", QUESTION, limit=3)]
    assert found[0] == DEPLOYS
    assert CAT in found
    assert len(checker.calls) == 3


async def test_a_failing_later_search_keeps_what_was_found(
    mem: AsyncMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = SearchSpy(mem, fail_from=2)
    monkeypatch.setattr(mem, "search", spy)
    checker = ScriptedLLM([INSUFFICIENT], repeat_last=True)
    reformulator = ScriptedLLM(['{"query": "name of the pet cat"}'])
    strategy = loop_strategy(mem, checker, reformulator)
    result = await strategy.handle_tool_call("dev-1", "search_memory", {"query": QUESTION})
    assert len(spy.queries) == 2
    assert result.startswith("5 memories found")
    assert PREAMBLE in result


async def test_a_failing_first_search_is_an_error_for_the_model(
    mem: AsyncMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mem, "search", SearchSpy(mem, fail_from=1))
    strategy = loop_strategy(mem, ScriptedLLM([]), ScriptedLLM([]))
    result = await strategy.handle_tool_call("dev-1", "search_memory", {"query": QUESTION})
    assert result == "error: search_memory failed: store went away"


async def test_checker_says_insufficient_for_nothing_without_asking() -> None:
    llm = ScriptedLLM([])
    assert await LLMSufficiencyChecker(llm).is_sufficient("anything?", []) is False
    assert llm.calls == []


async def test_reformulator_parses_fenced_json_and_rejects_tried_queries() -> None:
    llm = ScriptedLLM(['```json\n{"query": "  pet   cat name "}\n```', '{"query": "Q1"}'])
    reformulator = LLMQueryReformulator(llm)
    assert await reformulator.reformulate("question", [], ["q0"]) == "pet cat name"
    assert await reformulator.reformulate("question", [], ["q1"]) is None
