"""Speakers of memories and whether a query is about them (``retrieval.speakers``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memvault.models import CandidateSet, MemoryCategory, MemoryEntry, MemoryMetadata
from memvault.retrieval.evidence import FEATURES, evidence_features
from memvault.retrieval.speakers import addressed, entry_speaker

NOW = datetime(2026, 6, 15, tzinfo=UTC)


def entry(i: str, content: str, **extra: object) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=MemoryCategory.EPISODIC,
        content=content,
        metadata=MemoryMetadata(extra=extra),
        created_at=NOW,
        updated_at=NOW,
    )


@pytest.mark.parametrize(
    ("content", "extra", "speaker"),
    [
        ("Caroline: I went to the support group.", {}, "caroline"),
        ("user: I bought a new bike.", {}, "user"),
        ("Dr Ruiz: take two a day.", {}, "dr ruiz"),
        ("I bought a new bike.", {"role": "user"}, "user"),  # what add_messages records
        ("Hi!", {"role": "user", "name": "Priya"}, "priya"),  # a named participant
        ("The deploy needs two approvals.", {}, None),
        ("Remember this: the key rotates monthly.", {}, None),  # not a speaker's name
        ("Note 12 about the car: tyres", {}, None),
        ("Note: the key rotates monthly.", {}, None),  # a label, not a speaker
        ("TODO: rotate the key", {}, None),
        ("Next Steps: ship it", {}, None),
    ],
)
def test_the_speaker_of_an_entry(content: str, extra: dict[str, object], speaker: str) -> None:
    assert entry_speaker(entry("x", content, **extra)) == speaker


def test_a_query_naming_a_party_is_about_their_turns() -> None:
    speakers = ["caroline", "melanie", None, "caroline"]
    assert addressed("What did Caroline research?", speakers) == [1.0, 0.0, 1.0, 1.0]
    assert addressed("What did Caroline and Melanie paint?", speakers) == [1.0] * 4
    # Naming no speaker of the candidates says nothing about any of them.
    assert addressed("What was painted at the museum?", speakers) == [1.0] * 4


def test_the_user_asks_in_the_first_person_and_calls_the_assistant_you() -> None:
    speakers = ["user", "assistant", None]
    assert addressed("What did I buy for my sister?", speakers) == [1.0, 0.0, 1.0]
    assert addressed("Which hotel did you recommend?", speakers) == [0.0, 1.0, 1.0]
    assert addressed("Can you remind me what I asked?", speakers) == [1.0, 1.0, 1.0]
    assert addressed("Which hotel is near the station?", speakers) == [1.0, 1.0, 1.0]


def test_the_feature_reaches_the_evidence_matrix() -> None:
    cands = CandidateSet(
        dense=[("u", 0.5), ("a", 0.5), ("f", 0.5)],
        lexical=[],
        entries={
            "u": entry("u", "I bought a red bike.", role="user"),
            "a": entry("a", "A red bike is a fine choice.", role="assistant"),
            "f": entry("f", "Bikes need new tyres every 3,000 km."),
        },
    )
    feats = evidence_features(cands, query_text="What bike did I buy?", now=NOW)
    column = dict(zip(feats.ids, feats.matrix[:, FEATURES.index("addressed")], strict=True))
    assert column == {"u": 1.0, "a": 0.0, "f": 1.0}
