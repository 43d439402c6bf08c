"""Thread neighbours, the thread prior, temporal cues and feedback expansion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memvault.models import CandidateSet, MemoryCategory, MemoryEntry, MemoryMetadata
from memvault.retrieval.expansion import expansion_terms, merge_feedback
from memvault.retrieval.pipeline import adjust, fuse, rank, spread_to_neighbours
from memvault.retrieval.presets import PRESETS, RetrievalConfig
from memvault.retrieval.temporal import (
    asks_when,
    mentions_time,
    query_time_range,
    without_relative_time,
)
from memvault.retrieval.threads import same_thread, thread_id, thread_key

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


def entry(
    i: str,
    content: str = "x",
    *,
    session: object = None,
    created: datetime = NOW,
    category: MemoryCategory = MemoryCategory.EPISODIC,
) -> MemoryEntry:
    extra = {} if session is None else {"session": session}
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=category,
        content=content,
        metadata=MemoryMetadata(extra=extra),
        created_at=created,
        updated_at=created,
    )


def test_spread_gives_each_entry_part_of_its_neighbours_scores() -> None:
    # Thread order: a b c d; only b scored.
    neighbours = {"b": (("a",), ("c", "d"))}
    out = spread_to_neighbours({"b": 1.0}, neighbours, prev_weights=(0.5, 0.3), next_weights=(0.2,))
    # c is right after b: inherits prev_weights[0]; d two after: prev_weights[1];
    # a is right before b: inherits next_weights[0].
    assert out == pytest.approx({"b": 1.0, "c": 0.5, "d": 0.3, "a": 0.2})


def test_spread_accumulates_from_several_sources() -> None:
    neighbours = {"a": ((), ("b",)), "c": (("b",), ())}
    out = spread_to_neighbours(
        {"a": 1.0, "c": 2.0}, neighbours, prev_weights=(0.5,), next_weights=(0.25,)
    )
    assert out["b"] == pytest.approx(0.5 * 1.0 + 0.25 * 2.0)


def test_fuse_spreads_lexical_scores_before_linear_fusion() -> None:
    cands = CandidateSet(
        dense=[("q", 0.9), ("ans", 0.2), ("other", 0.1)],
        lexical=[("q", 8.0), ("other", 1.0)],
        entries={k: entry(k) for k in ("q", "ans", "other")},
        neighbours={"q": ((), ("ans",))},
    )
    plain = RetrievalConfig(fusion="linear")
    spread = plain.model_copy(update={"neighbour_prev_weights": (0.6,)})
    assert fuse(cands, plain)["ans"] < fuse(cands, plain)["other"] + 0.2
    assert fuse(cands, spread)["ans"] > fuse(cands, spread)["other"]


def test_thread_prior_lifts_entries_of_the_best_thread() -> None:
    cands = CandidateSet(
        entries={
            "s1a": entry("s1a", session=1),
            "s1b": entry("s1b", session=1),
            "s2a": entry("s2a", session=2),
            "s2b": entry("s2b", session=2),
        }
    )
    relevance = {"s1a": 1.0, "s1b": 0.3, "s2a": 0.35, "s2b": 0.0}
    cfg = RetrievalConfig(thread_boost=0.3, thread_top_k=2)
    out = adjust(relevance, cands, cfg, query_text="q", now=NOW)
    # s1b's thread holds the best hit, so it overtakes s2a.
    assert out["s1b"] > out["s2a"]
    assert max(out.values()) == pytest.approx(1.0) and min(out.values()) == 0.0
    assert adjust(relevance, cands, RetrievalConfig(), query_text="q", now=NOW) == relevance


def test_temporal_intent_prefers_entries_that_say_when() -> None:
    cands = CandidateSet(
        entries={
            "dated": entry("dated", "We adopted the dog last Saturday"),
            "plain": entry("plain", "We adopted the dog"),
        }
    )
    relevance = {"dated": 0.8, "plain": 1.0}
    cfg = RetrievalConfig(temporal_intent_boost=0.3)
    asked = adjust(relevance, cands, cfg, query_text="When did they adopt the dog?", now=NOW)
    assert asked["dated"] > asked["plain"]
    other = adjust(relevance, cands, cfg, query_text="Which dog did they adopt?", now=NOW)
    assert other == relevance


def test_time_range_boost_prefers_entries_of_the_named_period() -> None:
    cands = CandidateSet(
        entries={
            "may": entry("may", created=datetime(2023, 5, 20, tzinfo=UTC)),
            "june": entry("june", created=datetime(2023, 6, 2, tzinfo=UTC)),
        }
    )
    cfg = RetrievalConfig(time_range_boost=0.5)
    out = adjust({"may": 0.5, "june": 0.9}, cands, cfg, query_text="trips in May 2023", now=NOW)
    assert out["may"] > out["june"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Caroline go to the support group?", True),
        ("what year did we migrate?", True),
        ("Where is the office?", False),
        ("Tell me when you are ready", False),
    ],
)
def test_asks_when(query: str, expected: bool) -> None:
    assert asks_when(query) is expected


def test_mentions_time() -> None:
    assert mentions_time("I went there yesterday")
    assert mentions_time("the 2022 roadmap")
    assert not mentions_time("I like painting")
    assert not mentions_time("Maybe we can try")  # "may" alone is too ambiguous to count


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what happened in May 2023", datetime(2023, 5, 1), datetime(2023, 6, 1)),
        ("events of December, 2022", datetime(2022, 12, 1), datetime(2023, 1, 1)),
        ("anything in 2021?", datetime(2021, 1, 1), datetime(2022, 1, 1)),
        ("what did I do yesterday", datetime(2026, 6, 14), datetime(2026, 6, 15)),
        # "Last week": the week before this one, or 7 to 13 days back (NOW is a Monday).
        ("notes from last week", datetime(2026, 6, 2), datetime(2026, 6, 15)),
        # "N units ago": a window around that day, a quarter of the distance on each side (at
        # least a day), twice that for vague counts.
        ("what did I do two weeks ago?", datetime(2026, 5, 28, 12), datetime(2026, 6, 5, 12)),
        ("the call 5 days ago", datetime(2026, 6, 8, 18), datetime(2026, 6, 12, 6)),
        ("cooked a couple of days ago", datetime(2026, 6, 11), datetime(2026, 6, 16)),
        ("One month ago", datetime(2026, 5, 8, 12), datetime(2026, 5, 24, 12)),
        # "the past / last N units": from then until today.
        ("trips in the past three months", datetime(2026, 3, 17), datetime(2026, 6, 16)),
        ("during the last few weeks", datetime(2026, 5, 25), datetime(2026, 6, 16)),
        ("in the last week", datetime(2026, 6, 8), datetime(2026, 6, 16)),
    ],
)
def test_query_time_range(query: str, start: datetime, end: datetime) -> None:
    got = query_time_range(query, NOW)
    assert got is not None
    assert (got.start, got.end) == (start.replace(tzinfo=UTC), end.replace(tzinfo=UTC))


@pytest.mark.parametrize(
    "query",
    [
        "How many days ago did I watch the Super Bowl?",  # asks for a duration
        "how many weeks ago did we meet",
        "the last day of school",  # a part of something, not a period back from now
        "airlines I flew with before today",  # bounded on one side only
        "what is the past tense of run",
    ],
)
def test_phrases_that_name_no_period(query: str) -> None:
    assert query_time_range(query, NOW) is None
    assert without_relative_time(query) == query


def test_relative_period_words_are_left_out_of_the_text_to_match() -> None:
    assert without_relative_time("What gardening did I do two weeks ago?") == (
        "What gardening did I do ?"
    )
    assert without_relative_time("trips I took in the past three months, in order") == (
        "trips I took in , in order"
    )
    assert without_relative_time("what did I cook yesterday") == "what did I cook"
    # Explicit dates stay: the lexical index holds each memory's month and year as words.
    assert without_relative_time("what happened in May 2023") == "what happened in May 2023"


def test_query_without_time_has_no_range() -> None:
    assert query_time_range("who owns the cluster?", NOW) is None


def test_threads_from_metadata_or_time() -> None:
    a = entry("a", session=3)
    b = entry("b", session=3)
    c = entry("c", session=4)
    assert thread_key(a) == "session=3"
    assert same_thread(a, b) and not same_thread(a, c)
    near = entry("n1", created=NOW)
    later = entry("n2", created=NOW + timedelta(minutes=30))
    far = entry("n3", created=NOW + timedelta(hours=5))
    assert same_thread(near, later) and not same_thread(near, far)
    assert not same_thread(near, entry("s", created=NOW, category=MemoryCategory.SEMANTIC))
    assert not same_thread(a, near)  # one has a thread key, the other not
    assert thread_id(near) == thread_id(later)  # same hour bucket
    # Facts stored together are not a conversation: no thread without a key.
    f1 = entry("f1", created=NOW, category=MemoryCategory.SEMANTIC)
    f2 = entry("f2", created=NOW, category=MemoryCategory.SEMANTIC)
    assert not same_thread(f1, f2)
    assert thread_id(f1) != thread_id(f2)
    keyed = entry("k1", session=9, category=MemoryCategory.SEMANTIC)
    assert same_thread(keyed, entry("k2", session=9, category=MemoryCategory.SEMANTIC))


def test_expansion_terms_are_shared_words_the_query_lacks() -> None:
    docs = [
        entry("1", "Melanie painted a lake sunrise"),
        entry("2", "the lake sunrise painting hangs in the hall"),
        entry("3", "pottery class on Tuesday"),
    ]
    words = expansion_terms(docs, ["paint"], n_terms=2)
    assert words == ["lake", "sunris"]
    assert "paint" not in expansion_terms(docs, ["paint"], n_terms=50)


def test_merge_feedback_adds_weighted_scores_and_new_entries() -> None:
    cands = CandidateSet(lexical=[("a", 4.0)], entries={"a": entry("a")})
    extra = CandidateSet(
        lexical=[("b", 10.0), ("a", 2.0)],
        entries={"a": entry("a"), "b": entry("b")},
        neighbours={"b": ((), ())},
    )
    merge_feedback(cands, extra, weight=0.5)
    assert cands.lexical == [("b", 5.0), ("a", 5.0)]
    assert set(cands.entries) == {"a", "b"}
    assert "b" in cands.neighbours


def test_default_preset_uses_every_stage() -> None:
    cfg = PRESETS["default"]
    assert cfg.fusion == "evidence" and cfg.evidence is not None
    assert cfg.uses_neighbours and cfg.neighbour_hops == 2
    model = cfg.evidence
    # Each stage takes part in the score: its own weight or a pairwise term (the quadratic model
    # trades the two off, so a linear weight alone may be negative while the stage still helps).
    for name in ("thread", "when", "answers", "ctx_prev", "ctx_next", "period"):
        used = model.weights.get(name, 0.0) != 0.0 or any(
            name in key.split("*") and w != 0.0 for key, w in model.interactions.items()
        )
        assert used, name
    assert cfg.neighbour_window(10) == 20 and cfg.neighbour_window(50) == 100
    legacy = PRESETS["legacy"]
    assert legacy.fusion == "linear" and legacy.uses_neighbours and legacy.neighbour_hops == 2
    assert legacy.thread_boost > 0 and legacy.temporal_intent_boost > 0
    with pytest.raises(ValueError, match="neighbour weights"):
        RetrievalConfig(neighbour_prev_weights=(3.0,))


def test_rank_returns_filtered_and_diverse_results() -> None:
    from memvault.retrieval.filters import NonInferableFilter

    e = {
        "a": entry("a", "the deploy failed because of a memory leak").model_copy(
            update={"metadata": MemoryMetadata(tags=("non-inferable",))}
        ),
        "b": entry("b", "the deploy failed because of a memory leak"),
        "c": entry("c", "lunch is at noon").model_copy(
            update={"metadata": MemoryMetadata(tags=("non-inferable",))}
        ),
    }
    cands = CandidateSet(dense=[("a", 0.9), ("b", 0.89), ("c", 0.1)], entries=e)
    got = rank(
        cands,
        RetrievalConfig(use_lexical=False, fusion="linear"),
        now=NOW,
        limit=5,
        filter_strategy=NonInferableFilter(),
    )
    assert [x.id for x in got] == ["a", "c"]
    mmr_cfg = RetrievalConfig(use_lexical=False, fusion="linear", mmr_enabled=True, mmr_lambda=0.5)
    diverse = rank(cands, mmr_cfg, now=NOW, limit=2)
    assert [x.id for x in diverse] == ["a", "c"]  # b duplicates a
