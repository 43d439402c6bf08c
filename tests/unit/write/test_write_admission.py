"""Admission control: the six factors, the threshold, entity memory, and failing open."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from pydantic import ValidationError

from memvault.models import MemoryMetadata
from memvault.write import admission as admission_module
from memvault.write.admission import (
    AdmissionConfig,
    AdmissionContext,
    AdmissionController,
    EntityMemory,
    extract_entities,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


@pytest.fixture
def controller() -> AdmissionController:
    return AdmissionController()


# -- decisions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "ok thanks",
        "lol",
        "sounds good to me",
        "Caroline: Thanks!",
        "yes",
        "Nice One",
        "THANK YOU SO MUCH",
        "Perfect",
    ],
)
def test_chatter_is_rejected(controller: AdmissionController, text: str) -> None:
    decision = controller.decide(text, now=NOW)
    assert not decision.admitted
    assert decision.score is not None
    assert decision.score.total < 0.35
    assert decision.reason.startswith("score ")
    assert "< threshold 0.350" in decision.reason


@pytest.mark.parametrize(
    "text",
    [
        "User prefers dark mode",
        "Prefers Litestar over Flask",
        "Deployed v2.1, rolled back: memory leak",
        "The budget is 500",
        "Meeting with Bob at 3pm about the API migration",
        "Kenji is engaged",
    ],
)
def test_facts_are_admitted(controller: AdmissionController, text: str) -> None:
    decision = controller.decide(text, now=NOW)
    assert decision.admitted, decision.reason
    assert decision.score is not None
    assert 0.35 <= decision.score.total <= 1.0


def test_score_breakdown_is_in_range(controller: AdmissionController) -> None:
    score = controller.score("Alice moved to Berlin on 2026-02-01", now=NOW)
    for name, value in score.factors().items():
        if name == "relevance":
            assert value is None  # no vectors: left out, not zero
        else:
            assert value is not None and 0.0 <= value <= 1.0
    assert 0.0 <= score.total <= 1.0
    assert "alice" not in score.entities  # sentence-initial capital is grammar
    assert "berlin" in score.entities


def test_recency_decays_with_age(controller: AdmissionController) -> None:
    fresh = controller.score(
        "Alice lives in Paris", now=NOW, context=AdmissionContext(created_at=NOW)
    )
    week = controller.score(
        "Alice lives in Paris",
        now=NOW,
        context=AdmissionContext(created_at=NOW - timedelta(days=7)),
    )
    future = controller.score(
        "Alice lives in Paris",
        now=NOW,
        context=AdmissionContext(created_at=NOW + timedelta(days=1)),
    )
    assert fresh.recency == 1.0
    assert week.recency == pytest.approx(0.5)
    assert future.recency == 1.0
    assert week.total < fresh.total


def test_relevance_uses_the_context_vector(controller: AdmissionController) -> None:
    on_topic = controller.score(
        "Alice lives in Paris",
        now=NOW,
        context=AdmissionContext(vector=[1.0, 0.0], context_vector=[1.0, 0.0]),
    )
    off_topic = controller.score(
        "Alice lives in Paris",
        now=NOW,
        context=AdmissionContext(vector=[1.0, 0.0], context_vector=[-1.0, 0.0]),
    )
    assert on_topic.relevance == pytest.approx(1.0)
    assert off_topic.relevance == 0.0  # clipped
    assert on_topic.total > off_topic.total


def test_tool_use_from_metadata_and_markers(controller: AdmissionController) -> None:
    plain = controller.score("the build finished", now=NOW)
    from_tool = controller.score(
        "the build finished",
        now=NOW,
        context=AdmissionContext(metadata=MemoryMetadata(source="tool")),
    )
    from_extra = controller.score(
        "the build finished",
        now=NOW,
        context=AdmissionContext(metadata=MemoryMetadata(extra={"tool_name": "pytest"})),
    )
    traceback = controller.score("Traceback (most recent call last): boom", now=NOW)
    fenced = controller.score("```\n$ make test\nexit code 2\n```", now=NOW)
    assert plain.tool_use == 0.0
    assert from_tool.tool_use == from_extra.tool_use == 1.0
    assert traceback.tool_use == fenced.tool_use == 0.7
    assert from_tool.total > plain.total


def test_length_factor(controller: AdmissionController) -> None:
    cfg = controller.config
    assert controller.score("ok", now=NOW).length == 0.0
    assert controller.score("deploy failed", now=NOW).length == pytest.approx(0.5)
    assert controller.score("deploy failed on staging", now=NOW).length == 1.0
    huge = " ".join(f"word{i}" for i in range(2 * cfg.max_useful_words))
    assert controller.score(huge, now=NOW).length == pytest.approx(0.7)


def test_entity_density() -> None:
    keys, entities, total = extract_entities(
        "Email alice@example.com or see https://x.org/a. Use foo_bar and fooBar in src/app.py, "
        "ticket T-12, AWS, version 3.11."
    )
    assert {
        "alice@example.com",
        "https://x.org/a",
        "foo_bar",
        "foobar",
        "src/app.py",
        "t-12",
        "aws",
    } <= set(keys)
    assert "use" not in keys  # opens a sentence after the URL
    assert "3.11" not in keys  # numbers count for density only
    assert entities >= 8
    assert total > entities
    assert extract_entities("") == ([], 0, 0)
    # A sentence-initial capital counts half and gets no key; shouting or Title Case marks
    # nothing.
    assert extract_entities("Kenji is engaged") == ([], 0.5, 3)
    assert extract_entities("KENJI IS ENGAGED")[1] == 0
    assert extract_entities("Nice One Today")[1] == 0


def test_frequency_rises_with_recent_mentions(controller: AdmissionController) -> None:
    ctx = AdmissionContext(agent_id="dev-1")
    first = controller.decide("Meeting with Quentin about Kestrel", now=NOW, context=ctx)
    assert first.admitted and first.score is not None
    assert first.score.frequency == 0.0
    again = controller.score("Quentin shipped Kestrel", now=NOW + timedelta(minutes=5), context=ctx)
    assert again.frequency == pytest.approx(0.5, abs=0.01)  # one fresh mention of each
    other_agent = controller.score(
        "Quentin shipped Kestrel", now=NOW, context=AdmissionContext(agent_id="dev-2")
    )
    assert other_agent.frequency == 0.0


def test_rejected_candidates_do_not_count_as_mentions() -> None:
    strict = AdmissionController(AdmissionConfig(threshold=1.0))
    ctx = AdmissionContext(agent_id="dev-1")
    assert not strict.decide("Quentin", now=NOW, context=ctx).admitted
    assert strict.entity_memory("dev-1").weight("quentin", NOW) == 0.0


def test_entity_memory_decay_and_order() -> None:
    memory = EntityMemory(half_life=timedelta(days=1))
    memory.record(["kestrel", "kestrel"], NOW)  # one mention per text
    assert memory.weight("kestrel", NOW) == 1.0
    assert memory.weight("kestrel", NOW + timedelta(days=1)) == pytest.approx(0.5)
    memory.record(["kestrel"], NOW + timedelta(days=1))
    assert memory.weight("kestrel", NOW + timedelta(days=1)) == pytest.approx(1.5)
    memory.record(["kestrel"], NOW - timedelta(days=1))  # late arrival of an older mention
    assert memory.weight("kestrel", NOW + timedelta(days=1)) == pytest.approx(1.75)
    assert memory.frequency([], NOW) == 0.0
    assert memory.frequency(["unknown"], NOW) == 0.0


def test_entity_memory_is_bounded() -> None:
    memory = EntityMemory(half_life=timedelta(days=1), max_entities=10)
    for i in range(25):
        memory.record([f"e{i}"], NOW + timedelta(minutes=i))
    assert len(memory) <= 10
    assert memory.weight("e24", NOW + timedelta(minutes=24)) == 1.0  # newest kept


def test_disabled_admits_everything() -> None:
    off = AdmissionController(AdmissionConfig(enabled=False))
    decision = off.decide("lol", now=NOW)
    assert decision.admitted
    assert decision.score is None
    assert decision.reason == "admission disabled"


def test_fail_open_on_bad_input(
    controller: AdmissionController, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memvault.write.admission"):
        decision = controller.decide(
            "lol", now=NOW, context=AdmissionContext(vector=[float("nan")], context_vector=[1.0])
        )
    assert decision.admitted
    assert decision.score is None
    assert decision.reason.startswith("scoring failed: ")
    assert [r.getMessage() for r in caplog.records] == ["memory.admission.failed"]


def test_fail_open_on_any_exception(
    controller: AdmissionController,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def boom(text: str) -> tuple[list[str], int, int]:
        raise RuntimeError("entity extractor exploded")

    monkeypatch.setattr(admission_module, "extract_entities", boom)
    with caplog.at_level(logging.WARNING, logger="memvault.write.admission"):
        decision = controller.decide("ok", now=NOW)
    assert decision.admitted
    assert "entity extractor exploded" in decision.reason
    assert caplog.records[0].levelno == logging.WARNING


def test_weights_are_renormalised_over_available_factors() -> None:
    only_length = AdmissionController(
        AdmissionConfig(
            recency_weight=0,
            relevance_weight=0,
            tool_use_weight=0,
            entity_density_weight=0,
            frequency_weight=0,
            length_weight=2.0,
        )
    )
    assert only_length.score("deploy failed on staging", now=NOW).total == 1.0
    vec = np.array([1.0, 0.0])
    only_relevance = AdmissionController(
        AdmissionConfig(
            recency_weight=0,
            tool_use_weight=0,
            entity_density_weight=0,
            frequency_weight=0,
            length_weight=0,
        )
    )
    # Relevance is the only weighted factor but unavailable: nothing to judge by, admit.
    assert only_relevance.score("x", now=NOW).total == 1.0
    assert (
        only_relevance.score(
            "x", now=NOW, context=AdmissionContext(vector=vec, context_vector=-vec)
        ).total
        == 0.0
    )


def test_config_validation() -> None:
    assert AdmissionConfig().threshold == 0.35
    assert not AdmissionConfig().apply_to_explicit_add
    with pytest.raises(ValidationError):
        AdmissionConfig(threshold=1.2)
    with pytest.raises(ValidationError):
        AdmissionConfig(length_weight=-1)
    with pytest.raises(ValidationError):
        AdmissionConfig(min_useful_words=10, max_useful_words=5)
    with pytest.raises(ValidationError):
        AdmissionConfig(recency_half_life=timedelta(0))
    with pytest.raises(ValidationError):
        AdmissionConfig(
            recency_weight=0,
            relevance_weight=0,
            tool_use_weight=0,
            entity_density_weight=0,
            length_weight=0,
            frequency_weight=0,
        )
    with pytest.raises(ValueError):
        EntityMemory(half_life=timedelta(0))
