"""The write plan: admission -> dedup -> supersession, for single requests and batches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memvault.models import MemoryCategory, MemoryEntry, MemoryMetadata, MemoryStoreRequest
from memvault.write.admission import AdmissionConfig, AdmissionController
from memvault.write.dedup import DedupConfig
from memvault.write.pipeline import (
    BATCH_ID_PREFIX,
    WriteDecision,
    WriteKind,
    batch_index,
    plan_batch,
    plan_write,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
V1 = np.array([1.0, 0.0, 0.0], dtype=np.float32)
V2 = np.array([0.0, 1.0, 0.0], dtype=np.float32)
DEDUP = DedupConfig()


def entry(
    i: str,
    content: str,
    *,
    created: datetime = NOW - timedelta(days=1),
    category: MemoryCategory = MemoryCategory.SEMANTIC,
    agent: str = "dev-1",
) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id=agent,
        category=category,
        content=content,
        created_at=created,
        updated_at=created,
    )


def request(content: str, **kwargs: object) -> MemoryStoreRequest:
    return MemoryStoreRequest(content=content, **kwargs)


def plan(
    content: str,
    neighbours: Sequence[tuple[MemoryEntry, np.ndarray | None]],
    *,
    vector: np.ndarray | None = V1,
    admission: AdmissionController | None = None,
    dedup: DedupConfig = DEDUP,
    **kwargs: object,
) -> WriteDecision:
    return plan_write(
        request(content, **kwargs),
        vector,
        neighbours=neighbours,
        admission=admission,
        dedup=dedup,
        now=NOW,
        agent_id="dev-1",
    )


def test_new_fact_is_added() -> None:
    decision = plan("Prefers dark mode", [(entry("m1", "Alice lives in Paris"), V2)])
    assert decision.kind is WriteKind.ADD
    assert decision.reason == "new"
    assert plan("Prefers dark mode", []).kind is WriteKind.ADD


def test_duplicate_is_a_noop() -> None:
    old = entry("m1", "Prefers dark mode")
    decision = plan("FYI: prefers DARK mode!", [(old, V1)])
    assert decision.kind is WriteKind.NOOP
    assert decision.duplicate_of == "m1"
    assert decision.text_similarity == 1.0
    assert "m1" in decision.reason


def test_dark_then_light_mode_supersedes() -> None:
    old = entry("m1", "Prefers dark mode")
    decision = plan("Now prefers light mode", [(old, V1)])
    assert decision.kind is WriteKind.SUPERSEDE
    assert decision.old_id == "m1"
    assert decision.detected
    assert "'dark mode' -> 'light mode'" in decision.reason


def test_numbers_supersede_instead_of_dedup() -> None:
    old = entry("m1", "The budget is 500")
    decision = plan("The budget is 600", [(old, V1)])  # identical vectors on purpose
    assert decision.kind is WriteKind.SUPERSEDE
    assert decision.old_id == "m1"


def test_near_duplicate_with_a_new_value_is_superseded() -> None:
    old = entry("m1", "The user prefers dark mode for the code editor at work")
    new = "The user prefers light mode for the code editor at work"
    decision = plan(new, [(old, V1)])
    assert decision.kind is WriteKind.SUPERSEDE
    assert decision.old_id == "m1"


def test_same_words_about_another_subject_are_not_duplicates() -> None:
    old = entry("m1", "Xavier prefers a window seat on flights")
    decision = plan("Prefers a window seat on flights", [(old, V1)])
    assert decision.kind is WriteKind.ADD


def test_unrelated_statements_do_not_supersede() -> None:
    neighbours = [(entry("m1", "Prefers dark mode"), V2), (entry("m2", "Alice lives in Paris"), V2)]
    assert plan("Prefers tabs for indentation", neighbours).kind is WriteKind.ADD
    assert plan("Bob lives in Berlin", neighbours).kind is WriteKind.ADD


def test_explicit_supersedes_wins() -> None:
    old = entry("m1", "Prefers dark mode")
    # Even an identical text, or one admission would reject, supersedes when asked to.
    strict = AdmissionController(AdmissionConfig(threshold=1.0))
    decision = plan("prefers dark mode", [(old, V1)], supersedes="m7", admission=strict)
    assert decision.kind is WriteKind.SUPERSEDE
    assert decision.old_id == "m7"
    assert not decision.detected


def test_admission_rejects_chatter_with_a_reason() -> None:
    decision = plan("ok thanks", [], admission=AdmissionController())
    assert decision.kind is WriteKind.REJECT
    assert decision.admission is not None
    assert "< threshold" in decision.reason


def test_admission_score_is_kept_on_admitted_writes() -> None:
    controller = AdmissionController()
    decision = plan("Alice lives in Paris", [], admission=controller)
    assert decision.kind is WriteKind.ADD
    assert decision.admission is not None
    assert controller.entity_memory("dev-1").weight("paris", NOW) == 1.0


def test_admission_fails_open() -> None:
    decision = plan("ok", [], vector=np.array([np.nan, 0.0]), admission=AdmissionController())
    # No context vector: relevance is skipped, so scoring works and chatter is rejected...
    assert decision.kind is WriteKind.REJECT
    broken = plan_write(
        request("ok"),
        np.array([np.nan, 0.0]),
        neighbours=[],
        admission=AdmissionController(),
        dedup=DEDUP,
        now=NOW,
        context_vector=np.array([1.0, 0.0]),
    )
    # ...while a failure inside scoring admits.
    assert broken.kind is WriteKind.ADD
    assert broken.admission is None


def test_episodic_entries_are_not_checked_for_contradictions() -> None:
    old = entry("m1", "Budget: 500", category=MemoryCategory.EPISODIC)
    decision = plan("Budget: 600", [(old, V1)], category=MemoryCategory.EPISODIC)
    assert decision.kind is WriteKind.ADD
    off = DedupConfig(detect_contradictions=False)
    assert plan(
        "Now prefers light mode", [(entry("m2", "Prefers dark mode"), V1)], dedup=off
    ).kind is (WriteKind.ADD)


def test_dedup_can_be_disabled() -> None:
    old = entry("m1", "Prefers dark mode")
    assert (
        plan("Prefers dark mode", [(old, V1)], dedup=DedupConfig(enabled=False)).kind
        is WriteKind.ADD
    )


def test_neighbours_of_other_categories_or_agents_are_ignored() -> None:
    social = entry("m1", "Prefers dark mode", category=MemoryCategory.SOCIAL)
    other = entry("m2", "Prefers dark mode", agent="dev-2")
    assert plan("Prefers dark mode", [(social, V1), (other, V1)]).kind is WriteKind.ADD
    assert plan("Now prefers light mode", [(social, V1), (other, V1)]).kind is WriteKind.ADD


def test_older_news_is_added_as_outdated() -> None:
    newer = entry("m1", "Alice lives in Berlin", created=NOW)
    decision = plan("Alice lives in Paris", [(newer, V2)], created_at=NOW - timedelta(days=30))
    assert decision.kind is WriteKind.ADD
    assert decision.outdated_by == "m1"


def test_plan_batch_sees_earlier_items() -> None:
    stored = entry("m1", "Prefers dark mode")
    requests = [
        request("Alice lives in Paris", created_at=NOW - timedelta(hours=3)),
        request("alice lives in paris!!", created_at=NOW - timedelta(hours=2)),
        request("Alice moved to Rome", created_at=NOW - timedelta(hours=1)),
        request("Now prefers light mode"),
        request("ok", metadata=MemoryMetadata()),
        request("Prefers dark mode again"),
    ]
    vectors = [V1, V1, V2, V2, V2, V1]
    near = [[(stored, V1)] for _ in requests]
    decisions = plan_batch(
        requests, vectors, neighbours=near, admission=None, dedup=DEDUP, now=NOW, agent_id="dev-1"
    )
    kinds = [d.kind for d in decisions]
    assert kinds == [
        WriteKind.ADD,
        WriteKind.NOOP,
        WriteKind.SUPERSEDE,
        WriteKind.SUPERSEDE,
        WriteKind.ADD,
        WriteKind.ADD,
    ]
    assert decisions[1].duplicate_of == f"{BATCH_ID_PREFIX}0"
    assert batch_index(decisions[1].duplicate_of) == 0
    assert batch_index(decisions[2].old_id) == 0
    assert decisions[3].old_id == "m1"
    # m1 is superseded by item 3, so item 5 is not its duplicate.
    assert batch_index("m1") is None
    assert batch_index(None) is None
    assert batch_index(f"{BATCH_ID_PREFIX}x") is None


def test_plan_batch_checks_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        plan_batch(
            [request("x")], [], neighbours=[[]], admission=None, dedup=DEDUP, now=NOW, agent_id="a"
        )
