"""Cost records of memvault's own LLM calls, and the per-agent budget that falls back offline."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.config import MemvaultConfig
from memvault.config.persistence import CostsConfig, ModelPrice, PersistenceConfig
from memvault.llm.metered import MeteredLLM, estimate_tokens
from memvault.llm.scripted import ScriptedLLM
from memvault.persistence import models as pm
from memvault.protocols import Embedder

TRIP = [{"role": "user", "content": "My flight to Tokyo leaves on 12 March at 08:40."}]
MOVE = [{"role": "user", "content": "My passport X1234567 expires on 4 June 2029."}]
FACTS = "semantic: The flight to Tokyo leaves on 12 March at 08:40"


def _config(**costs: object) -> MemvaultConfig:
    return MemvaultConfig(persistence=PersistenceConfig(costs=CostsConfig(**costs)))  # type: ignore[arg-type]


async def test_an_infer_add_writes_one_priced_cost_record(tmp_path: Path, minilm: Embedder) -> None:
    config = _config(prices={"small": ModelPrice(input=1000.0, output=2000.0)})
    llm = ScriptedLLM([FACTS], model_id="small")
    async with AsyncMemory(str(tmp_path / "m.db"), config=config, embedder=minilm, llm=llm) as mem:
        await mem.add(TRIP, agent_id="travel", infer=True)
        records = await mem.operations.cost_records.query()
    assert len(records) == 1
    rec = records[0]
    assert (rec.agent_id, rec.model, rec.operation, rec.kind) == (
        "travel",
        "small",
        "extraction",
        pm.CostKind.LLM,
    )
    assert rec.input_tokens > 0 and rec.output_tokens == len(FACTS.split())
    assert rec.cost == pytest.approx((rec.input_tokens * 1000 + rec.output_tokens * 2000) / 1e6)
    assert rec.latency_ms >= 0


async def test_consolidation_and_learning_calls_are_recorded(
    tmp_path: Path, minilm: Embedder
) -> None:
    llm = ScriptedLLM(["The user drinks tea and coffee."], repeat_last=True)
    async with AsyncMemory(str(tmp_path / "c.db"), embedder=minilm, llm=llm) as mem:
        for text in ("The user drinks tea", "The user drinks tea daily", "The user drinks coffee"):
            await mem.add(text, agent_id="dev", category="episodic")
        await mem.consolidate(agent_id="dev", strategy="llm", min_age_days=0)
        ops = {r.operation for r in await mem.operations.cost_records.query(agent_id="dev")}
    assert llm.calls, "the llm strategy made no call: the test no longer covers consolidation"
    assert ops == {"consolidation"}


async def test_a_spent_budget_falls_back_offline_with_one_warning(
    tmp_path: Path, minilm: Embedder
) -> None:
    config = _config(agent_token_budget=1)
    llm = ScriptedLLM([FACTS], repeat_last=True)
    async with AsyncMemory(str(tmp_path / "b.db"), config=config, embedder=minilm, llm=llm) as mem:
        await mem.add(TRIP, agent_id="a", infer=True)  # within budget: the LLM extracts
        assert len(llm.calls) == 1
        with pytest.warns(RuntimeWarning, match="budget"):
            ids = await mem.add(MOVE, agent_id="a", infer=True)
        assert len(llm.calls) == 1  # no second call: the offline extractor ran
        assert [(await mem.get(i, agent_id="a")).content for i in ids] == [MOVE[0]["content"]]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # warned once per agent and day
            await mem.add(TRIP, agent_id="a", infer=True)
        # Another agent has its own budget.
        await mem.add(TRIP, agent_id="b", infer=True)
        assert len(llm.calls) == 2
        assert len(await mem.operations.cost_records.query()) == 2


async def test_record_false_writes_nothing_but_the_budget_still_counts(
    tmp_path: Path, minilm: Embedder
) -> None:
    config = _config(record=False)
    llm = ScriptedLLM([FACTS], repeat_last=True)
    async with AsyncMemory(str(tmp_path / "r.db"), config=config, embedder=minilm, llm=llm) as mem:
        await mem.add(TRIP, agent_id="a", infer=True)
        assert await mem.operations.cost_records.count() == 0


async def test_a_failing_cost_store_never_fails_the_add(tmp_path: Path, minilm: Embedder) -> None:
    llm = ScriptedLLM([FACTS], repeat_last=True)
    async with AsyncMemory(str(tmp_path / "f.db"), embedder=minilm, llm=llm) as mem:
        await mem.operations.disconnect()  # every cost write now fails
        ids = await mem.add(TRIP, agent_id="a", infer=True)
        assert len(ids) == 1 and len(llm.calls) == 1


async def test_unreported_usage_is_estimated() -> None:
    class Silent(ScriptedLLM):
        async def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
            reply = await super().complete(messages, **kwargs)
            return reply.model_copy(update={"prompt_tokens": 0, "completion_tokens": 0})

    seen = []

    class Meter:
        async def allow(self, scope):  # type: ignore[no-untyped-def]
            return True

        async def record(self, call):  # type: ignore[no-untyped-def]
            seen.append(call)

    from memvault.models import ChatMessage

    metered = MeteredLLM(Silent(["twelve chars"]), Meter())
    await metered.complete([ChatMessage(role="user", content="x" * 40)])
    assert seen[0].estimated and seen[0].input_tokens == estimate_tokens("x" * 40) == 10
    assert seen[0].output_tokens == 3


async def test_two_processes_over_one_store_enforce_one_budget(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two memories over one file stand in for two servers: what one spends, the other's meter
    # reads back from the cost records once its cached spend is older than REFRESH_SECONDS.
    from memvault.memory import _costs

    monkeypatch.setattr(_costs, "REFRESH_SECONDS", 0.0)
    budget = 250  # one extraction call spends between half of it and all of it (checked below)
    config = _config(agent_token_budget=budget)
    first_llm = ScriptedLLM([FACTS], repeat_last=True)
    second_llm = ScriptedLLM([FACTS], repeat_last=True)
    path = str(tmp_path / "shared.db")
    async with (
        AsyncMemory(path, config=config, embedder=minilm, llm=first_llm) as first,
        AsyncMemory(path, config=config, embedder=minilm, llm=second_llm) as second,
    ):
        await second.add(MOVE, agent_id="a", infer=True)  # the second meter now holds one call
        (record,) = await second.operations.cost_records.query(agent_id="a")
        assert budget / 2 <= record.input_tokens + record.output_tokens < budget
        await first.add(TRIP, agent_id="a", infer=True)  # together: over the budget
        assert len(first_llm.calls) == 1
        with pytest.warns(RuntimeWarning, match="budget"):
            await second.add(MOVE, agent_id="a", infer=True)
        # Counting only its own call the second meter would have allowed this one.
        assert len(second_llm.calls) == 1
