"""Automatic capture (episodes, distillations) and the in-process working memory."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.agent import (
    DISTILLATION_TAG,
    DistillationRequest,
    TurnRecord,
    WorkingMemory,
    capture_distillation,
    capture_episode,
)
from memvault.errors import MemoryValidationError
from memvault.protocols import Embedder


@pytest.fixture
async def mem(tmp_path: Path, minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(str(tmp_path / "cap.db"), embedder=minilm) as memory:
        yield memory


async def test_capture_episode_stores_summary_with_trigger(mem: AsyncMemory) -> None:
    mid = await capture_episode(
        mem,
        agent_id="bot",
        summary="Nightly sync imported 1,204 invoices from Acme's SFTP; 3 were rejected.",
        trigger_type="cron",
    )
    assert mid is not None
    entry = await mem.get(mid, agent_id="bot")
    assert entry is not None
    assert entry.category.value == "episodic" and entry.metadata.label == "autonomous_run"
    # InitRunner's metadata key (issue 17); the old "trigger" key is no longer written.
    assert entry.metadata.extra["trigger_type"] == "cron"
    assert "trigger" not in entry.metadata.extra
    assert entry.metadata.source == "auto_capture"


async def test_capture_never_raises(mem: AsyncMemory, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="memvault.agent.capture"):
        assert await capture_episode(mem, agent_id="  ", summary="x" * 50) is None
        await mem.close()
        assert await capture_episode(mem, agent_id="bot", summary="Deployed v2.") is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


async def test_capture_keeps_even_a_low_value_run_summary(mem: AsyncMemory) -> None:
    # Issue 17: admission control never drops a run summary (it used to reject "ok"), since
    # every autonomous run or trigger execution must leave its episode.
    mid = await capture_episode(mem, agent_id="bot", summary="ok")
    assert mid is not None
    assert await mem.count(agent_id="bot") == 1
    # The same text written as plain automatic chatter is still rejected.
    outcome = await mem.write("ok", agent_id="bot", category="episodic", admission=True)
    assert outcome.id is None


async def test_distillation_records_the_trajectory(mem: AsyncMemory) -> None:
    request = DistillationRequest(
        agent_id="bot",
        task_id="T-42",
        turns=(
            TurnRecord(tokens=1200, tool_calls=("search_memory", "web_fetch")),
            TurnRecord(tokens=800, tool_calls=("search_memory", "recall_memory")),
            TurnRecord(tokens=300),
        ),
        outcome="completed",
    )
    mid = await capture_distillation(mem, request)
    assert mid is not None
    entry = await mem.get(mid, agent_id="bot")
    assert entry is not None and DISTILLATION_TAG in entry.metadata.tags
    assert "3 turns, 2300 tokens, 3 unique tools" in entry.content
    assert "4 tool calls" in entry.content
    assert entry.metadata.extra["memory_tool_invocations"] == {
        "recall_memory": 1,
        "search_memory": 2,
    }
    failed = DistillationRequest(agent_id="bot", task_id="T-43", outcome="error", error="timeout")
    other = await capture_distillation(mem, failed)
    assert other is not None and other != mid
    await mem.close()
    assert await capture_distillation(mem, failed) is None


def test_working_memory_drops_oldest_over_budget() -> None:
    wm = WorkingMemory("task-1", token_budget=30)
    first = wm.add("Plan: fetch the invoices, then reconcile against the ledger.")
    wm.add("Found 3 mismatches in March.")
    assert wm.notes[0].id == first
    wm.add("Mismatch 1 is a duplicate payment of 120 EUR to Globex on 3 March.")
    assert first not in {n.id for n in wm.notes} and wm.dropped >= 1
    assert wm.tokens <= 30
    assert wm.render().startswith("## Working memory (task task-1)")
    with pytest.raises(MemoryValidationError):
        wm.add("word " * 200)
    with pytest.raises(MemoryValidationError):
        wm.add("   ")
    wm.clear()
    assert wm.render() == "" and wm.notes == ()
