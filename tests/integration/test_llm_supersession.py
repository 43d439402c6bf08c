"""Supersession with an LLM on a real SQLite file and the bundled embedder (issue 41, item 4).

The rules settle the ordinary changes of fact without asking anyone ("Works the night shift"
then "Switched to day shifts"); a plausible change they cannot read ("the late rota" then "the
early rota") is asked of the LLM (scripted here), whose yes supersedes. Without an LLM the same
writes behave as the rules say.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from memvault import AsyncMemory
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder
from memvault.write import WriteKind

AGENT = "a"
NIGHT = "Works the night shift at the depot"
DAY = "Switched to day shifts this month"
LATE = "Works the late rota at the depot"
EARLY = "Switched to the early rota at the depot"


class Judge:
    """A scripted LLM that answers "the listed memory ``target`` is replaced"."""

    def __init__(self) -> None:
        self.target: str | None = None
        self.llm = ScriptedLLM([self.reply], repeat_last=True)

    def reply(self, messages: Sequence[ChatMessage]) -> str:
        return json.dumps({"supersedes": self.target, "reason": "the rota changed"})


async def _current_first(mem: AsyncMemory, query: str, new: str, old: str) -> None:
    live = await mem.search(query, agent_id=AGENT)
    assert live and live[0].id == new
    assert old not in [e.id for e in live]
    everything = await mem.search(query, agent_id=AGENT, include_superseded=True)
    ids = [e.id for e in everything]
    assert ids[0] == new and old in ids


async def test_rules_settle_the_shift_change_before_any_llm(
    tmp_path: Path, minilm: Embedder
) -> None:
    judge = Judge()
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=minilm, llm=judge.llm) as mem:
        old = await mem.add(NIGHT, agent_id=AGENT)
        new = await mem.write(DAY, agent_id=AGENT)
        assert new.decision.kind is WriteKind.SUPERSEDE and new.decision.old_id == old
        assert not new.decision.reason.startswith("llm")
        assert judge.llm.calls == []  # the rules decided; nothing was contested
        closed = await mem.get(old, agent_id=AGENT)
        assert closed is not None and closed.superseded_by == new.id
        await _current_first(mem, "which shift do I work?", new.id or "", old)


async def test_without_an_llm_the_shift_change_is_the_rules_supersession(
    tmp_path: Path, minilm: Embedder
) -> None:
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=minilm) as mem:
        old = await mem.add(NIGHT, agent_id=AGENT)
        new = await mem.write(DAY, agent_id=AGENT)
        assert new.decision.kind is WriteKind.SUPERSEDE and new.decision.old_id == old
        assert new.decision.contested == ()
        await _current_first(mem, "which shift do I work?", new.id or "", old)


async def test_the_llm_settles_a_change_the_rules_cannot_read(
    tmp_path: Path, minilm: Embedder
) -> None:
    judge = Judge()
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=minilm, llm=judge.llm) as mem:
        old = await mem.add(LATE, agent_id=AGENT)
        judge.target = old
        new = await mem.write(EARLY, agent_id=AGENT)
        assert new.decision.kind is WriteKind.SUPERSEDE and new.decision.old_id == old
        assert new.decision.reason.startswith("llm")
        assert len(judge.llm.calls) == 1
        prompt = "\n".join(m.content for m in judge.llm.calls[0])
        assert LATE in prompt and EARLY in prompt and old in prompt
        closed = await mem.get(old, agent_id=AGENT)
        assert closed is not None and closed.superseded_by == new.id
        await _current_first(mem, "which rota do I work?", new.id or "", old)


async def test_an_llm_no_or_failure_stores_the_write_as_new(
    tmp_path: Path, minilm: Embedder
) -> None:
    llm = ScriptedLLM(["not json at all"], repeat_last=True)
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=minilm, llm=llm) as mem:
        old = await mem.add(LATE, agent_id=AGENT)
        new = await mem.write(EARLY, agent_id=AGENT)
        assert new.decision.kind is WriteKind.ADD and new.id
        assert len(llm.calls) == 1
        kept = await mem.get(old, agent_id=AGENT)
        assert kept is not None and kept.superseded_by is None


async def test_without_an_llm_or_with_the_key_off_nothing_is_asked(
    tmp_path: Path, minilm: Embedder
) -> None:
    async with AsyncMemory(str(tmp_path / "a.db"), embedder=minilm) as mem:
        await mem.add(LATE, agent_id=AGENT)
        new = await mem.write(EARLY, agent_id=AGENT)
        assert new.decision.kind is WriteKind.ADD and new.decision.contested == ()

    judge = Judge()
    config = MemvaultConfig(options=MemoryOptionsConfig(llm_supersession=False))
    async with AsyncMemory(
        str(tmp_path / "b.db"), embedder=minilm, llm=judge.llm, config=config
    ) as mem:
        judge.target = await mem.add(LATE, agent_id=AGENT)
        new = await mem.write(EARLY, agent_id=AGENT)
        assert new.decision.kind is WriteKind.ADD
        assert judge.llm.calls == []
