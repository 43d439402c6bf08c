"""Near-duplicate detection: normalisation, text similarity, and the duplicate rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from pydantic import ValidationError

from memvault.models import MemoryCategory, MemoryEntry
from memvault.write._text import (
    align_typos,
    analyse,
    may_align_fully,
    one_edit_apart,
    strip_filler,
    typo_of,
)
from memvault.write.dedup import (
    DedupConfig,
    cosine,
    find_duplicate,
    find_duplicate_match,
    normalise_text,
    text_similarity,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def entry(
    i: str,
    content: str,
    *,
    category: MemoryCategory = MemoryCategory.SEMANTIC,
    agent: str = "dev-1",
    created: datetime = NOW,
    **extra: object,
) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id=agent,
        category=category,
        content=content,
        created_at=created,
        updated_at=created,
        **extra,
    )


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


SAME = unit(1.0, 0.0, 0.0)
CLOSE = unit(1.0, 0.2, 0.0)  # cosine ~0.98 with SAME
FAR = unit(0.0, 1.0, 0.0)


# -- normalisation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Prefers DARK mode!!", "prefers dark mode"),
        ("  FYI:   prefers dark   mode. ", "prefers dark mode"),
        ("Note: the budget is $1,000.", "budget is 1000"),
        ("Just, so you know, Alice's in Paris", "alices in paris"),
        ("Timezone is UTC+1", "timezone is utc +1"),
        ("Meeting on 2026-03-01", "meeting on 2026 03 01"),
        ("Uses Python 3.11", "uses python 3.11"),
        ("prefers dark mode, btw", "prefers dark mode"),
        ("Alice left a note", "alice left note"),  # "note" at the end is content, not filler
        ("fyi", ""),  # nothing but filler: nothing to compare
    ],
)
def test_normalise_text(text: str, expected: str) -> None:
    assert normalise_text(text) == expected


def test_strip_filler_tolerates_noise_inside_the_phrase() -> None:
    assert strip_filler("Just, So  You Know, Zoe works at Acme") == "Zoe works at Acme"
    assert strip_filler("Zoe works at Acme - for the   record!\t") == "Zoe works at Acme"
    assert strip_filler("Reminder: update: X") == "update: X"  # "update" is not filler
    assert strip_filler("FYI") == "FYI"  # nothing but filler: kept as it is


def test_one_edit_apart_and_typos() -> None:
    assert one_edit_apart("mode", "mod")
    assert one_edit_apart("mode", "mdoe")  # transposition
    assert one_edit_apart("mode", "mose")
    assert one_edit_apart("mode", "moode")
    assert not one_edit_apart("mode", "mode")
    assert not one_edit_apart("mode", "dome")
    assert typo_of("mode", "mod")
    assert not typo_of("in", "on")  # two-letter words: another word, not a typo
    assert not typo_of("500", "600")  # numbers never count as typos
    assert not typo_of("cat", "car")  # three letters both: another word


def test_typo_alignment_finds_every_kind_of_one_letter_slip_in_long_texts() -> None:
    # Partners are looked up by one-letter-shorter signatures, not by trying every word pair:
    # each kind of edit must still meet its word among a long text's hundreds of others.
    filler = " ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(300))
    base = f"deployed ledger to production yesterday {filler}"
    for slip in ("prdouction", "productio", "productiion", "prodiction"):
        clauses, _ = align_typos(analyse(base.replace("production", slip)), analyse(base))
        assert "production" in clauses[0] and slip not in clauses[0], slip
    # An ambiguous slip ("mod" is one letter from both "mode" and "mold") stays as it is.
    clauses, _ = align_typos(analyse("switch mod"), analyse("switch mode mold"))
    assert clauses == (("switch", "mod"),)


def test_may_align_fully_is_false_only_when_texts_cannot_match() -> None:
    assert may_align_fully(
        analyse("Deployed ledger to prdouction"), analyse("deployed ledger to production")
    )
    assert may_align_fully(analyse("Bob met Carol"), analyse("Carol, Bob met"))
    assert not may_align_fully(
        analyse("Deployed ledger to staging"), analyse("deployed ledger to production")
    )
    assert not may_align_fully(analyse("Deployed ledger"), analyse("deployed ledger to production"))
    # Never False where the aligned texts are the same (text similarity 1.0).
    pairs = [
        ("Bob met Caroil at the meetup", "bob met carol at the meetup"),
        ("mode is dark", "mod is dark"),
        ("the budgte is 500", "the budget is 500"),
    ]
    for left, right in pairs:
        assert text_similarity(left, right) == 1.0
        assert may_align_fully(analyse(left), analyse(right))


def test_typo_copy_is_a_duplicate_even_when_vectors_disagree() -> None:
    old = entry("a", "Deployed the ledger service to production on the blue cluster")
    far = np.array([1.0, 0.0])  # the cosine of these two is 0: only the text rule can match
    match = find_duplicate_match(
        "Deployed the ledger service to prdouction on the blue cluster",
        far,
        [(old, np.array([0.0, 1.0]))],
        now=NOW,
    )
    assert match is not None and match.rule == "text" and match.cosine == 0.0
    other = entry("b", "Deployed the ledger service to staging on the blue cluster")
    assert (
        find_duplicate(
            "Deployed the ledger service to production on the blue cluster",
            far,
            [(other, np.array([0.0, 1.0]))],
            now=NOW,
        )
        is None
    )


def test_clauses_split_on_conjunctions_not_commas() -> None:
    a = analyse("Alice, fyi, lives in Paris and Bob works at Acme.")
    assert a.clauses == (("alice", "lives", "in", "paris"), ("bob", "works", "at", "acme"))
    assert not a.negated
    assert analyse("Alice doesn't live in Paris").negated


# -- text similarity ---------------------------------------------------------------------------


def test_similarity_of_noisy_copies_is_one() -> None:
    base = "Bob met Carol at the meetup and Carol introduced Bob to the team"
    assert text_similarity(base, base.upper() + "!!") == 1.0
    assert (
        text_similarity(base, "Carol introduced Bob to the team and Bob met Carol at the meetup")
        == 1.0
    )
    assert (
        text_similarity(base, "Bob met Caroil at the meetup and Carol introduced Bob to the team")
        == 1.0
    )
    assert (
        text_similarity("Deployed ledger v2.0 to production", "deployed ledger v2.0 to prdouction")
        == 1.0
    )


def test_numbers_matter() -> None:
    assert text_similarity("The budget is 500", "The budget is 600") == 0.0
    assert text_similarity("The budget is 500", "the budget is 500!") == 1.0
    assert text_similarity("Timezone UTC+1", "Timezone UTC-1") == 0.0


def test_negation_matters() -> None:
    assert text_similarity("Alice likes coffee", "Alice doesn't like coffee") == 0.0


def test_word_order_within_a_clause_matters() -> None:
    assert text_similarity("Alice manages Bob", "Bob manages Alice") == 0.0
    assert 0.0 < text_similarity("Alice prefers dark mode", "Alice prefers light mode") < 0.8


def test_cosine() -> None:
    assert cosine(SAME, SAME) == pytest.approx(1.0)
    assert cosine(SAME, FAR) == pytest.approx(0.0)
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([1.0, 0.0], [1.0, 0.0, 0.0]) == 0.0


# -- find_duplicate ----------------------------------------------------------------------------


def test_exact_normalised_duplicate_needs_no_vector() -> None:
    old = entry("m1", "Prefers dark mode")
    assert find_duplicate("FYI: prefers DARK mode!", None, [(old, None)]) == old
    match = find_duplicate_match("prefers dark mode", FAR, [(old, SAME)])
    assert match is not None
    assert match.rule == "exact"


def test_vector_and_text_rule() -> None:
    old = entry("m1", "The user prefers dark mode in the editor at work")
    new = "The user prefers dark mode in the editor at work today"
    assert 0.8 <= text_similarity(new, old.content) < 1.0
    match = find_duplicate_match(new, CLOSE, [(old, SAME)])
    assert match is not None
    assert match.rule == "vector+text"
    assert match.cosine == pytest.approx(cosine(CLOSE, SAME))
    # Without agreement of the vectors the same text is not a duplicate.
    assert find_duplicate(new, FAR, [(old, SAME)]) is None
    assert find_duplicate(new, None, [(old, None)]) is None


def test_text_only_rule_can_be_disabled() -> None:
    old = entry("m1", "Carol introduced Bob to the team and Bob met Carol")
    new = "Bob met Carol and Carol introduced Bob to the team"
    assert find_duplicate(new, FAR, [(old, SAME)]) == old
    strict = DedupConfig(text_only_threshold=None)
    assert find_duplicate(new, FAR, [(old, SAME)], config=strict) is None


def test_numbers_are_never_duplicates_even_with_identical_vectors() -> None:
    old = entry("m1", "The budget is 500")
    assert find_duplicate("The budget is 600", SAME, [(old, SAME)]) is None


def test_disabled_config_finds_nothing() -> None:
    old = entry("m1", "Prefers dark mode")
    assert (
        find_duplicate("Prefers dark mode", SAME, [(old, SAME)], config=DedupConfig(enabled=False))
        is None
    )


def test_mismatched_and_dead_candidates_are_skipped() -> None:
    other_agent = entry("m1", "Prefers dark mode", agent="dev-2")
    other_category = entry("m2", "Prefers dark mode", category=MemoryCategory.PROCEDURAL)
    superseded = entry("m3", "Prefers dark mode", superseded_by="m9")
    closed = entry("m4", "Prefers dark mode", valid_to=NOW - timedelta(hours=1))
    expired = entry("m5", "Prefers dark mode", expires_at=NOW - timedelta(hours=1))
    candidates = [(e, SAME) for e in (other_agent, other_category, superseded, closed, expired)]
    found = find_duplicate(
        "Prefers dark mode",
        SAME,
        candidates,
        agent_id="dev-1",
        category=MemoryCategory.SEMANTIC,
        now=NOW,
    )
    assert found is None
    # Without agent/category filters the first two count.
    assert find_duplicate("Prefers dark mode", SAME, candidates, now=NOW) in (
        other_agent,
        other_category,
    )


def test_episodic_window_keeps_recurring_events_apart() -> None:
    monday = entry(
        "m1", "Went for a run along the river", category=MemoryCategory.EPISODIC, created=NOW
    )
    later_same_day = NOW + timedelta(hours=3)
    two_days_later = NOW + timedelta(days=2)
    text = "went for a run along the river!"
    assert find_duplicate(text, None, [(monday, None)], created_at=later_same_day) == monday
    assert find_duplicate(text, None, [(monday, None)], created_at=two_days_later) is None
    no_window = DedupConfig(episodic_window=None)
    assert (
        find_duplicate(text, None, [(monday, None)], created_at=two_days_later, config=no_window)
        == monday
    )


def test_best_duplicate_wins() -> None:
    near = entry("m1", "The user prefers dark mode in the editor at work today")
    exact = entry("m2", "The user prefers dark mode in the editor at work")
    found = find_duplicate(
        "the user prefers dark mode in the editor at work", CLOSE, [(near, SAME), (exact, FAR)]
    )
    assert found == exact


def test_config_validation() -> None:
    with pytest.raises(ValidationError):
        DedupConfig(text_threshold=1.5)
    with pytest.raises(ValidationError):
        DedupConfig(unknown=True)  # type: ignore[call-arg]
