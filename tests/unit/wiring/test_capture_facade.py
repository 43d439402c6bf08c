"""Issue 17 item 6: capture and working memory on ``Memory``/``AsyncMemory``, with InitRunner's
metadata names, and admission control that never drops a run summary (real SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault import Memory
from memvault.agent import DISTILLATION_TAG, TurnRecord
from memvault.agent.capture import episode_trigger
from memvault.errors import MemoryValidationError
from memvault.models import MemoryCategory
from memvault.protocols import Embedder


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(str(tmp_path / "cap.db"), embedder=minilm) as m:
        yield m


def test_capture_episode_writes_initrunners_metadata(mem: Memory, tmp_path: Path) -> None:
    mid = mem.capture_episode(
        "Nightly sync imported 1,204 invoices from Acme's SFTP; 3 were rejected.",
        agent_id="ops",
        trigger_type="cron",
    )
    assert mid is not None
    entry = mem.get(mid, agent_id="ops")
    assert entry.category is MemoryCategory.EPISODIC
    assert entry.metadata.label == "autonomous_run" and entry.metadata.source == "auto_capture"
    assert entry.metadata.extra == {"trigger_type": "cron"}
    assert episode_trigger(entry) == "cron"
    with Memory(str(tmp_path / "cap.db"), embedder=mem.backend.embedder) as again:
        assert again.get(mid, agent_id="ops").metadata.extra == {"trigger_type": "cron"}


def test_old_trigger_key_is_still_read(mem: Memory) -> None:
    old = mem.add("Webhook run finished", agent_id="ops", category="episodic",
                  metadata={"trigger": "webhook"})  # fmt: skip
    assert episode_trigger(mem.get(old, agent_id="ops")) == "webhook"


@pytest.mark.parametrize("summary", ["ok", "Done.", "No new files."])
def test_admission_never_drops_a_run_summary(mem: Memory, summary: str) -> None:
    # The same texts as ordinary automatic capture are below the admission threshold ...
    assert mem.write(summary, agent_id="chat", category="episodic", admission=True).id is None
    # ... but a run summary is always kept, with the admission score reported.
    mid = mem.capture_episode(summary, agent_id="ops", trigger_type="file_watch")
    assert mid is not None
    outcome = mem.write(summary, agent_id="ops2", category="episodic", admission=True,
                        source="auto_capture", dedup=False)  # fmt: skip
    # Scored below the threshold, and stored all the same.
    assert outcome.stored and outcome.decision.admission is not None
    assert outcome.decision.admission.total < 0.35


def test_capture_distillation_from_the_facade(mem: Memory) -> None:
    mid = mem.capture_distillation(
        agent_id="bot",
        task_id="T-42",
        outcome="completed",
        turns=[TurnRecord(tokens=1200, tool_calls=("search_memory",)), {"tokens": 300}],
    )
    assert mid is not None
    entry = mem.get(mid, agent_id="bot")
    assert DISTILLATION_TAG in entry.metadata.tags
    assert "2 turns, 1500 tokens" in entry.content
    # Bad input never raises: nothing is stored and None says so.
    assert mem.capture_distillation(agent_id="bot", task_id="T-43", outcome="") is None
    assert mem.capture_distillation(agent_id="bot", task_id="T-44", outcome="error",
                                    turns=[{"tokens": -1}]) is None  # fmt: skip


def test_working_memory_is_per_agent_and_task_and_never_stored(mem: Memory) -> None:
    pad = mem.working_memory("T-1", agent_id="a", token_budget=40)
    assert mem.working_memory("T-1", agent_id="a") is pad
    first = mem.working_note("T-1", "Plan: fetch invoices, then reconcile.", agent_id="a")
    mem.working_note("T-1", "Other agent's note", agent_id="b")
    assert [n.id for n in mem.working("T-1", agent_id="a").notes] == [first]
    assert mem.working("T-1", agent_id="a").render().startswith("## Working memory (task T-1)")
    assert mem.working("T-2", agent_id="a").notes == ()
    with pytest.raises(MemoryValidationError):
        mem.working_note("T-1", "   ", agent_id="a")
    assert mem.count(agent_id="a") == 0  # scratchpads are not memories of the store
    assert mem.clear_working("T-1", agent_id="a") == 1
    assert mem.working("T-1", agent_id="a").notes == ()
    assert mem.clear_working("T-9", agent_id="a") == 0
