"""Compaction through the public API: pressure, soft marks, hard summaries, anchoring, probe."""

from __future__ import annotations

import json

import pytest

from memvault.conversation import CompactionConfig, SQLConversationStore
from memvault.conversation.compaction import Compactor, extract_summary, tool_pairs
from memvault.llm import ProviderError
from memvault.llm.scripted import ScriptedLLM

CONFIG = CompactionConfig(token_budget=200, keep_recent=2)
TASK = "Fix the crash in src/app/main.py reported in ticket PROJ-42. Should we keep retry_policy?"


async def _turns(store: SQLConversationStore, pairs: int) -> None:
    await store.append("dev", "s", [{"role": "user", "content": TASK}])
    for i in range(pairs):
        await store.append(
            "dev",
            "s",
            [
                {"role": "assistant", "content": f"calling grep step {i}"},
                {"role": "tool", "content": "src/app/main.py:10: raise KeyError " * 5},
            ],
        )


def test_config_thresholds_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="target_ratio < soft_threshold < hard_threshold"):
        CompactionConfig(soft_threshold=0.95, hard_threshold=0.9)


async def test_pressure_levels_follow_the_thresholds(store: SQLConversationStore) -> None:
    compactor = Compactor(store, CONFIG)
    await store.append("dev", "s", [{"role": "user", "content": "x" * 400}])  # 100 tokens
    assert (await compactor.pressure("dev", "s")).level == "ok"
    await store.append("dev", "s", [{"role": "assistant", "content": "y" * 100}])  # 125
    pressure = await compactor.pressure("dev", "s")
    assert (pressure.tokens, pressure.level) == (125, "soft")
    await store.append("dev", "s", [{"role": "user", "content": "z" * 240}])  # 185
    assert (await compactor.pressure("dev", "s")).level == "hard"


async def test_soft_threshold_marks_tool_pairs_without_summarising(
    store: SQLConversationStore,
) -> None:
    await _turns(store, 3)
    compactor = Compactor(store, CONFIG)
    report = await compactor.prepare("dev", "s")
    assert report.before.level == "soft"
    assert report.summaries == ()
    view = await store.messages("dev", "s")
    marked = [m for m in view if m.pending_summary]
    # The two older pairs are marked; the last pair is within keep_recent.
    assert [m.role for m in marked] == ["assistant", "tool", "assistant", "tool"]
    assert report.marked == 4
    assert len(tool_pairs(view)) == 3


async def test_hard_threshold_applies_anchored_summaries_before_the_next_call(
    store: SQLConversationStore,
) -> None:
    await _turns(store, 5)
    compactor = Compactor(store, CONFIG)  # no LLM: the deterministic extractor
    report = await compactor.prepare("dev", "s")
    assert report.before.level == "hard"
    assert report.summaries
    assert report.after.tokens < report.before.tokens
    view = await store.messages("dev", "s")
    summaries = [m for m in view if m.kind == "summary"]
    assert summaries
    text = "\n".join(m.content for m in summaries)
    assert "src/app/main.py" in text  # identifiers anchored verbatim
    assert "Identifiers:" in text
    assert all(p.passed for p in report.probes)
    # Nothing was deleted: every original is still in the store, marked compacted.
    everything = await store.messages("dev", "s", view="all")
    assert len([m for m in everything if m.kind == "message"]) == 11
    assert len([m for m in everything if m.compacted_at is not None]) == report.compacted
    assert view[-1].content.startswith("src/app/main.py:10")  # the recent turn is untouched


def test_the_deterministic_summary_keeps_decisions_identifiers_and_open_questions() -> None:
    from memvault.models import ChatMessage

    summary = extract_summary(
        [
            ChatMessage(role="user", content=TASK),
            ChatMessage(role="assistant", content="We decided to switch to the v3.2 parser."),
        ]
    )
    assert summary.goal.startswith("Fix the crash")
    assert {"src/app/main.py", "PROJ-42", "retry_policy", "v3.2"} <= set(summary.identifiers)
    assert any("switch to the v3.2 parser" in d for d in summary.decisions)
    assert summary.open_questions == ["Should we keep retry_policy?"]


async def test_an_llm_summary_is_probed_and_accepted(store: SQLConversationStore) -> None:
    await _turns(store, 5)
    summary = {
        "goal": "fix the crash of ticket PROJ-42",
        "decisions": ["grep the KeyError"],
        "identifiers": ["src/app/main.py"],
        "open_questions": ["keep retry_policy?"],
        "facts": ["main.py line 10 raises KeyError"],
    }
    questions = {"items": [{"question": "Which line raises?", "answer": "line 10 KeyError"}]}
    answers = {"answers": ["line 10 raises a KeyError"]}
    llm = ScriptedLLM(
        [json.dumps(summary), json.dumps(questions), json.dumps(answers)], repeat_last=False
    )
    compactor = Compactor(store, CONFIG.model_copy(update={"probe_questions": 1}), llm=llm)
    # One summary round for the marked pairs needs exactly the three scripted replies; the
    # oldest-turns step then falls back (script exhausted) and still works.
    report = await compactor.prepare("dev", "s")
    assert report.probes[0].method == "llm"
    assert report.probes[0].passed
    assert report.repaired == 0
    first = next(m for m in await store.messages("dev", "s") if m.kind == "summary")
    assert "fix the crash of ticket PROJ-42" in first.content
    assert "Which line raises" not in first.content


async def test_a_summary_failing_the_probe_is_repaired_with_what_it_missed(
    store: SQLConversationStore,
) -> None:
    await _turns(store, 5)
    summary = {"goal": "some debugging", "decisions": [], "identifiers": [], "facts": []}
    questions = {"items": [{"question": "Which ticket is it?", "answer": "PROJ-42 crash"}]}
    answers = {"answers": ["unknown"]}
    llm = ScriptedLLM([json.dumps(summary), json.dumps(questions), json.dumps(answers)])
    compactor = Compactor(store, CONFIG.model_copy(update={"probe_questions": 1}), llm=llm)
    report = await compactor.prepare("dev", "s")
    assert not report.probes[0].passed
    assert report.probes[0].score == 0.0
    assert report.repaired >= 1
    first = next(m for m in await store.messages("dev", "s") if m.kind == "summary")
    assert "Which ticket is it? PROJ-42 crash" in first.content


async def test_a_failing_llm_falls_back_to_the_deterministic_summary(
    store: SQLConversationStore,
) -> None:
    await _turns(store, 5)
    llm = ScriptedLLM([ProviderError("down", retryable=False)], repeat_last=True)
    report = await Compactor(store, CONFIG, llm=llm).prepare("dev", "s")
    assert report.summaries
    assert all(p.method == "identifiers" for p in report.probes)
    text = "\n".join(m.content for m in await store.messages("dev", "s") if m.kind == "summary")
    assert "src/app/main.py" in text


async def test_pinned_messages_survive_the_hard_threshold(store: SQLConversationStore) -> None:
    from memvault.conversation import MessageMetadata

    await store.append(
        "dev",
        "s",
        [{"role": "user", "content": "PINNED RULE " * 30}],
        metadata=MessageMetadata(focus_pinned=True),
    )
    for i in range(8):
        await store.append("dev", "s", [{"role": "user", "content": f"chatter {i} " * 12}])
    await Compactor(store, CONFIG).prepare("dev", "s")
    view = await store.messages("dev", "s")
    assert view[0].content.startswith("PINNED RULE")
    assert view[0].compacted_at is None


async def test_a_summary_longer_than_what_it_replaces_is_not_applied(
    store: SQLConversationStore,
) -> None:
    # Terse tool pairs past the hard threshold: an anchored summary (header, identifiers, tool
    # facts) would be longer than the pair it replaces, so compaction must leave them be.
    config = CompactionConfig(token_budget=64, keep_recent=1)
    for i in range(14):  # 5 tokens a pair: 70 tokens, past 90% of 64
        await store.append(
            "dev",
            "s",
            [
                {"role": "assistant", "content": f"run job_{i}"},
                {"role": "tool", "content": f"ok job_{i}"},
            ],
        )
    report = await Compactor(store, config).prepare("dev", "s")
    assert report.before.level == "hard"
    assert report.after.tokens <= report.before.tokens
    view = await store.messages("dev", "s")
    for summary in (m for m in view if m.kind == "summary"):
        replaced = [m for m in await store.messages("dev", "s", view="all")
                    if m.summary_id == summary.message_id]  # fmt: skip
        assert summary.tokens < sum(m.tokens for m in replaced)
