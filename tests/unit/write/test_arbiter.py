"""Contested supersessions: the planner marks them, an LLM (here scripted) settles them.

Without ``mark_contested`` the plan is exactly what it was; with it, a plain ADD lists the close
neighbours the rules could not settle, and :class:`SupersessionArbiter` turns the LLM's yes into
a SUPERSEDE and anything else (no, garbage, an unknown id, a provider error) into the ADD.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from memvault.llm.errors import ProviderError
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage, MemoryCategory, MemoryEntry, MemoryStoreRequest
from memvault.write.arbiter import SupersessionArbiter, prompt
from memvault.write.dedup import DedupConfig
from memvault.write.pipeline import WriteDecision, WriteKind, plan_batch, plan_write

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
OLD = "Works the late rota at the depot"
NEW = "Switched to the early rota at the depot"
CLOSE = np.array([1.0, 0.2, 0.0], dtype=np.float32)  # cosine ~0.98 with V
FAR = np.array([0.0, 0.0, 1.0], dtype=np.float32)
V = np.array([1.0, 0.0, 0.0], dtype=np.float32)
MARK = DedupConfig(mark_contested=True)


def entry(i: str, content: str, *, days_ago: float = 1.0) -> MemoryEntry:
    at = NOW - timedelta(days=days_ago)
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=MemoryCategory.SEMANTIC,
        content=content,
        created_at=at,
        updated_at=at,
    )


def plan(
    content: str,
    neighbours: Sequence[tuple[MemoryEntry, np.ndarray | None]],
    dedup: DedupConfig = MARK,
) -> WriteDecision:
    return plan_write(
        MemoryStoreRequest(content=content),
        V,
        neighbours=neighbours,
        admission=None,
        dedup=dedup,
        now=NOW,
        agent_id="a",
    )


def answer(supersedes: str | None, reason: str = "the rota changed") -> str:
    return json.dumps({"supersedes": supersedes, "reason": reason})


# -- contested, in the pure plan ----------------------------------------------------------------


def test_without_mark_contested_the_plan_is_as_before() -> None:
    decision = plan(NEW, [(entry("old", OLD), CLOSE)], dedup=DedupConfig())
    assert decision == WriteDecision(kind=WriteKind.ADD, reason="new")


def test_a_close_neighbour_and_a_change_marker_are_contested() -> None:
    decision = plan(NEW, [(entry("old", OLD), CLOSE)])
    assert decision.kind is WriteKind.ADD
    assert decision.contested == ("old",)


def test_contested_needs_closeness_a_marker_or_a_related_slot_and_no_question() -> None:
    old = entry("old", OLD)
    assert plan(NEW, [(old, FAR)]).contested == ()
    assert plan(NEW, [(old, None)]).contested == ()
    assert plan("Works the late rota at the depot on Sundays too", [(old, CLOSE)]).contested == ()
    assert plan("Did I switch to the early rota?", [(old, CLOSE)]).contested == ()
    # No marker, but statements on a related slot of one subject: contested.
    tea = entry("tea", "The user prefers tea")
    assert plan("The user prefers coffee in the morning", [(tea, CLOSE)]).contested == ("tea",)


def test_contested_skips_dead_newer_and_batch_entries_and_caps_the_count() -> None:
    closed = entry("closed", OLD).model_copy(update={"superseded_by": "x"})
    newer = entry("newer", OLD, days_ago=-1)
    many = [(entry(f"e{i}", f"{OLD} {i}"), CLOSE) for i in range(5)]
    decision = plan(NEW, [(closed, CLOSE), (newer, CLOSE), *many])
    assert decision.contested == ("e0", "e1", "e2")
    batch = plan_batch(
        [MemoryStoreRequest(content=OLD), MemoryStoreRequest(content=NEW)],
        [V, CLOSE],
        neighbours=[[], []],
        admission=None,
        dedup=MARK,
        now=NOW,
        agent_id="a",
    )
    assert [d.contested for d in batch] == [(), ()]


def test_a_rule_supersession_is_not_contested() -> None:
    decision = plan("The user now prefers coffee", [(entry("tea", "The user prefers tea"), CLOSE)])
    assert decision.kind is WriteKind.SUPERSEDE and decision.old_id == "tea"
    assert decision.contested == ()


# -- the arbiter ------------------------------------------------------------------------------


async def test_yes_supersedes_the_named_candidate() -> None:
    llm = ScriptedLLM([answer("old")])
    [decision] = await SupersessionArbiter(llm).settle(
        [MemoryStoreRequest(content=NEW)],
        [plan(NEW, [(entry("old", OLD), CLOSE)])],
        [[(entry("old", OLD), CLOSE)]],
    )
    assert decision.kind is WriteKind.SUPERSEDE
    assert decision.old_id == "old" and decision.detected
    assert decision.reason.startswith("llm") and "the rota changed" in decision.reason
    assert len(llm.calls) == 1


async def test_no_garbage_unknown_id_and_provider_errors_stay_an_add() -> None:
    near = [(entry("old", OLD), CLOSE)]
    for step in [
        answer(None),
        "I think it probably does, yes.",
        '{"supersedes": 3}',
        answer("not-a-candidate"),
        ProviderError("down", retryable=True),
        RuntimeError("a bug in a provider"),
    ]:
        llm = ScriptedLLM([step])
        [decision] = await SupersessionArbiter(llm).settle(
            [MemoryStoreRequest(content=NEW)], [plan(NEW, near)], [near]
        )
        assert decision.kind is WriteKind.ADD, step
        assert decision.old_id is None
        assert len(llm.calls) == 1  # one call, no repair pass


async def test_the_prompt_holds_both_texts_and_the_candidate_ids() -> None:
    seen: list[Sequence[ChatMessage]] = []

    def reply(messages: Sequence[ChatMessage]) -> str:
        seen.append(messages)
        return answer(None)

    near = [(entry("old-1", OLD), CLOSE), (entry("old-2", "Parks in bay 4 at the depot"), CLOSE)]
    verdict = await SupersessionArbiter(ScriptedLLM([reply])).choose(NEW, [e for e, _ in near])
    assert verdict is None
    text = "\n".join(m.content for m in seen[0])
    for part in (NEW, OLD, "Parks in bay 4", "old-1", "old-2", "supersedes"):
        assert part in text
    assert prompt(NEW, [near[0][0]])[1].content.startswith(f"New memory: {NEW}")


async def test_nothing_contested_asks_nothing() -> None:
    llm = ScriptedLLM([])
    decisions = [WriteDecision(kind=WriteKind.ADD, reason="new")]
    out = await SupersessionArbiter(llm).settle([MemoryStoreRequest(content=NEW)], decisions, [[]])
    assert out == decisions and llm.calls == []


async def test_a_batch_supersedes_an_entry_once() -> None:
    near = [(entry("old", OLD), CLOSE)]
    first = plan(NEW, near)
    second = plan("Now on the early rota at the depot", near)
    assert first.contested == second.contested == ("old",)
    llm = ScriptedLLM([answer("old")], repeat_last=True)
    out = await SupersessionArbiter(llm).settle(
        [MemoryStoreRequest(content=NEW), MemoryStoreRequest(content="Now on the early rota")],
        [first, second],
        [near, near],
    )
    assert [d.kind for d in out] == [WriteKind.SUPERSEDE, WriteKind.ADD]
    assert len(llm.calls) == 1  # the second had no candidate left to ask about
