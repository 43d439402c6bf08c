"""The evidence model: features, calibration, absolute relevance, explain, and the context gate."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from pydantic import ValidationError

from memvault.embeddings._model_files import MINILM_MODEL_ID
from memvault.injection.context import (
    CONTEXT_MIN_RELEVANCE,
    ContextInjectionConfig,
    ContextInjectionStrategy,
)
from memvault.models import CandidateSet, MemoryCategory, MemoryEntry, MemoryMetadata
from memvault.retrieval.evidence import (
    BM25_SATURATION,
    FEATURES,
    LENGTH_CAP,
    EvidenceModel,
    TopicGate,
    evidence_features,
    sigmoid,
)
from memvault.retrieval.intent import asks_for_many
from memvault.retrieval.pipeline import rank, spread_threads
from memvault.retrieval.presets import (
    DEFAULT,
    DEFAULT_EVIDENCE,
    DEFAULT_EVIDENCE_MODEL_ID,
    DEFAULT_TOPIC_GATE,
    LEGACY,
    MINILM_L3_EVIDENCE,
    PRESETS,
    RetrievalConfig,
    for_embedder,
)

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)
COL = {name: i for i, name in enumerate(FEATURES)}


def entry(
    i: str,
    content: str = "plain statement about things",
    *,
    session: object = None,
    created: datetime = NOW,
    category: MemoryCategory = MemoryCategory.EPISODIC,
    relevance: float | None = None,
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
        relevance_score=relevance,
    )


def feature(cands: CandidateSet, entry_id: str, name: str, query: str = "q") -> float:
    feats = evidence_features(cands, query_text=query, now=NOW)
    return float(feats.matrix[feats.ids.index(entry_id), COL[name]])


def test_raw_scores_map_to_absolute_features() -> None:
    cands = CandidateSet(
        dense=[("a", 0.62), ("b", 0.10)],
        lexical=[("a", BM25_SATURATION)],
        entries={"a": entry("a", "deploy the billing service"), "b": entry("b")},
    )
    assert feature(cands, "a", "cos") == pytest.approx(0.62)
    assert feature(cands, "a", "lex") == pytest.approx(0.5)  # s / (s + saturation)
    assert feature(cands, "b", "lex") == 0.0
    # Two of the query's three terms ("billing", "deploy"; "invoices" missing).
    assert feature(cands, "a", "coverage", "deploy billing invoices") == pytest.approx(2 / 3)


def test_cosine_of_a_lexical_only_candidate_comes_from_its_vector() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    cands = CandidateSet(
        dense=[("a", 0.9)],
        lexical=[("b", 3.0)],
        entries={"a": entry("a"), "b": entry("b")},
        query_vector=q,
        vectors={"b": np.array([0.6, 0.8], dtype=np.float32)},
    )
    assert feature(cands, "b", "cos") == pytest.approx(0.6)
    # Without a vector, the pool's weakest cosine stands in (never better than what was seen).
    del cands.vectors["b"]
    assert feature(cands, "b", "cos") == pytest.approx(0.9)


def test_context_features_read_the_neighbours_in_both_directions() -> None:
    # Thread order: ask, ans, after. Only "ask" matches; "ans" follows a matching question.
    entries = {
        "ask": entry("ask", "Did you go to the support group?", session=1),
        "ans": entry("ans", "Yes, last Tuesday, it was great.", session=1),
        "after": entry("after", "Glad to hear it.", session=1),
    }
    cands = CandidateSet(
        dense=[("ask", 0.5)],
        lexical=[("ask", 8.0)],
        entries=entries,
        neighbours={"ask": ((), ("ans", "after"))},
    )
    base = 0.5 + 0.5  # cosine + saturated BM25 of "ask"
    assert feature(cands, "ans", "ctx_prev") == pytest.approx(base)
    assert feature(cands, "after", "ctx_prev") == pytest.approx(base / 2)  # two hops back
    assert feature(cands, "ask", "ctx_next") > 0.0
    assert feature(cands, "ask", "question") == 1.0
    assert feature(cands, "ans", "question") == 0.0
    assert feature(cands, "ans", "answers") == pytest.approx(base)  # the question it answers


def test_thread_strength_is_the_mean_of_its_best_entries_and_a_fact_is_its_own_thread() -> None:
    entries = {
        "t1": entry("t1", session=7),
        "t2": entry("t2", session=7),
        "fact": entry("fact", category=MemoryCategory.SEMANTIC),
    }
    cands = CandidateSet(
        dense=[("t1", 0.8), ("t2", 0.2), ("fact", 0.4)], lexical=[], entries=entries
    )
    assert feature(cands, "t2", "thread") == pytest.approx((0.8 + 0.2) / 2)
    assert feature(cands, "fact", "thread") == pytest.approx(0.4)


def test_words_of_a_relative_period_are_not_covered_as_text() -> None:
    # "in the past three months" selects by date ("period"); a memory that merely says "three
    # months" covers none of what the question is about.
    entries = {
        "stamps": entry("stamps", "Collecting stamps for three months now", created=NOW),
        "trip": entry("trip", "Back from a camping trip in Yosemite", created=NOW),
    }
    cands = CandidateSet(dense=[("stamps", 0.3), ("trip", 0.3)], lexical=[], entries=entries)
    query = "What trip did I take in the past three months?"
    assert feature(cands, "stamps", "coverage", query) == 0.0
    assert feature(cands, "trip", "coverage", query) > 0.0
    assert feature(cands, "stamps", "period", query) == 1.0
    # Named as text instead of relative to now, the same words are content.
    assert feature(cands, "stamps", "coverage", "stamps over three months") > 0.0


def test_temporal_and_length_features() -> None:
    entries = {
        "dated": entry(
            "dated", "We moved to Berlin last May.", created=datetime(2023, 5, 8, tzinfo=UTC)
        ),
        "plain": entry("plain", "ok", created=datetime(2024, 1, 1, tzinfo=UTC)),
    }
    cands = CandidateSet(dense=[("dated", 0.3), ("plain", 0.3)], lexical=[], entries=entries)
    query = "When did we move in May 2023?"
    assert feature(cands, "dated", "when", query) == 1.0
    assert feature(cands, "plain", "when", query) == 0.0
    assert feature(cands, "dated", "period", query) == 1.0
    assert feature(cands, "plain", "period", query) == 0.0
    # Length scales the entry's own evidence (cosine 0.3 here), capped at LENGTH_CAP terms.
    assert feature(cands, "plain", "length") == pytest.approx(0.3 * math.log1p(1))
    long_text = " ".join(f"word{i}" for i in range(50))
    cands.entries["plain"] = entry("plain", long_text)
    assert feature(cands, "plain", "length") == pytest.approx(0.3 * math.log1p(LENGTH_CAP))
    cands.dense = [("dated", 0.3), ("plain", 0.0)]
    assert feature(cands, "plain", "length") == 0.0  # no evidence, nothing to lift


def test_a_question_naming_a_period_looks_for_entries_that_say_when() -> None:
    # "two weeks ago" is as temporal as "when ...": of the entries of those days, the one that
    # dates an event ("today") is the report; plain chat of the same days is not.
    two_weeks_ago = NOW - timedelta(days=14)
    entries = {
        "report": entry("report", "I planted 12 tomato saplings today", created=two_weeks_ago),
        "chat": entry("chat", "Any tips for a gardening app?", created=two_weeks_ago),
    }
    cands = CandidateSet(dense=[("report", 0.3), ("chat", 0.3)], lexical=[], entries=entries)
    query = "What gardening activity did I do two weeks ago?"
    assert feature(cands, "report", "period", query) == 1.0
    assert feature(cands, "chat", "period", query) == 1.0
    assert feature(cands, "report", "when", query) == 1.0
    assert feature(cands, "chat", "when", query) == 0.0
    # A question that is neither about a time nor a period leaves the feature off.
    assert feature(cands, "report", "when", "What gardening activity do I like?") == 0.0


def test_model_rejects_unknown_features_and_switches_features_off() -> None:
    with pytest.raises(ValidationError, match="unknown evidence features"):
        EvidenceModel(weights={"cosine": 1.0})
    model = EvidenceModel(weights={"cos": 2.0, "lex": 1.0})
    assert model.without("lex").vector()[COL["lex"]] == 0.0
    assert model.without("lex").vector()[COL["cos"]] == 2.0
    with pytest.raises(ValidationError, match="evidence model"):
        RetrievalConfig(fusion="evidence")


def test_interactions_are_validated_and_scored_as_pairwise_products() -> None:
    for bad in ("cos", "cos*nope", "cos*lex*when"):
        with pytest.raises(ValidationError, match="two evidence features"):
            EvidenceModel(weights={"cos": 1.0}, interactions={bad: 1.0})
    model = EvidenceModel(
        weights={"cos": 1.0, "lex": -0.5}, interactions={"cos*lex": 2.0, "lex*lex": 3.0}
    )
    matrix = np.zeros((3, len(FEATURES)))
    matrix[:, COL["cos"]] = [0.5, 0.5, 0.1]
    matrix[:, COL["lex"]] = [0.0, 0.4, 0.4]
    expected = [
        cos - 0.5 * lex + 2.0 * cos * lex + 3.0 * lex * lex
        for cos, lex in zip(matrix[:, COL["cos"]], matrix[:, COL["lex"]], strict=True)
    ]
    assert model.score(matrix).tolist() == pytest.approx(expected)
    # Same cosine, and the lexical match is worth more with it than without it.
    linear = EvidenceModel(weights=model.weights)
    gain = model.score(matrix) - linear.score(matrix)
    assert gain[0] == 0.0 and gain[1] > gain[2] > 0.0


def test_contributions_add_up_and_ablation_drops_a_features_interactions() -> None:
    model = EvidenceModel(
        weights={"cos": 1.0, "lex": -0.5, "when": 0.3},
        interactions={"cos*lex": 2.0, "lex*lex": 3.0, "cos*when": -1.0},
    )
    row = np.zeros(len(FEATURES))
    row[[COL["cos"], COL["lex"], COL["when"]]] = [0.5, 0.4, 1.0]
    shares = model.contributions(row)
    assert sum(shares.values()) == pytest.approx(float(model.score(row[None, :])[0]))
    # cos gets its own term and half of each of its two interactions.
    assert shares["cos"] == pytest.approx(0.5 + 0.5 * 2.0 * 0.5 * 0.4 + 0.5 * -1.0 * 0.5)
    assert model.without("lex").interactions == {"cos*when": -1.0}
    assert model.without("cos").interactions == {"lex*lex": 3.0}


@pytest.mark.parametrize("model_name", ["default", "minilm-l3"])
def test_more_of_an_entrys_own_evidence_never_lowers_its_score(model_name: str) -> None:
    # Twins that differ only in BM25 (or only in cosine): the one with more evidence must not
    # score lower. The pairwise terms were fitted with this constraint; left free they ranked a
    # chunk holding the query's rare term below one without it (tests/unit/write/test_chunking).
    model = DEFAULT_EVIDENCE if model_name == "default" else MINILM_L3_EVIDENCE
    contents = (
        "The billing service listens on port 8217.",
        "I think the billing team moved the service last week and it listens elsewhere now.",
    )
    queries = (
        "which port does the billing service listen on",
        "when did the billing service move?",
    )
    checked = 0
    for content in contents:
        for query in queries:
            for cos in (0.05, 0.2, 0.35, 0.5, 0.65, 0.75):
                for low, high in ((0.0, 2.0), (2.0, 5.0), (5.0, 10.0), (10.0, 25.0)):
                    for a, b in (((cos, low), (cos, high)), ((cos, low), (cos + 0.1, low))):
                        twins = {"a": a, "b": b}
                        cands = CandidateSet(
                            dense=[(i, c) for i, (c, _) in twins.items()],
                            lexical=[(i, bm) for i, (_, bm) in twins.items() if bm > 0],
                            entries={i: entry(i, content) for i in twins},
                        )
                        feats = evidence_features(cands, query_text=query, now=NOW)
                        score = dict(zip(feats.ids, model.score(feats.matrix), strict=True))
                        assert score["b"] >= score["a"] - 1e-9, (content, query, a, b)
                        checked += 1
    assert checked == 192


def test_relevance_is_absolute_not_rescaled_per_query() -> None:
    # One weak candidate alone: min-max fusion calls it 1.0, the evidence model does not.
    cands = CandidateSet(
        dense=[("a", 0.12)], lexical=[], entries={"a": entry("a", category=MemoryCategory.SEMANTIC)}
    )
    (legacy,) = rank(cands, LEGACY, now=NOW, limit=5, query_text="quantum chromodynamics")
    (default,) = rank(cands, DEFAULT, now=NOW, limit=5, query_text="quantum chromodynamics")
    assert legacy.relevance_score == 1.0
    assert default.relevance_score is not None and default.relevance_score < 0.05
    # min_relevance now rejects it.
    assert rank(cands, DEFAULT, now=NOW, limit=5, min_relevance=0.5, query_text="x") == []


def test_a_facts_relevance_does_not_depend_on_the_other_candidates() -> None:
    fact = entry(
        "fact", "Our Kubernetes cluster runs version 1.29", category=MemoryCategory.SEMANTIC
    )
    alone = CandidateSet(dense=[("fact", 0.7)], lexical=[("fact", 6.0)], entries={"fact": fact})
    crowd = CandidateSet(
        dense=[("fact", 0.7), *((f"o{i}", 0.6 - i / 100) for i in range(20))],
        lexical=[("fact", 6.0), ("o1", 9.0)],
        entries={
            "fact": fact,
            **{f"o{i}": entry(f"o{i}", category=MemoryCategory.SEMANTIC) for i in range(20)},
        },
    )
    query = "which kubernetes version runs in the cluster"
    (first,) = rank(alone, DEFAULT, now=NOW, limit=5, query_text=query)
    second = next(
        e for e in rank(crowd, DEFAULT, now=NOW, limit=25, query_text=query) if e.id == "fact"
    )
    assert first.relevance_score == pytest.approx(second.relevance_score)
    # Stronger evidence, higher relevance, in [0, 1].
    weaker = CandidateSet(dense=[("fact", 0.3)], lexical=[], entries={"fact": fact})
    (low,) = rank(weaker, DEFAULT, now=NOW, limit=5, query_text=query)
    assert 0.0 <= low.relevance_score < first.relevance_score <= 1.0


def test_explain_carries_raw_values_and_contributions() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    cands = CandidateSet(
        dense=[("a", 0.7)],
        lexical=[("a", 4.0), ("b", 2.0)],
        entries={"a": entry("a", "alpha beta"), "b": entry("b", "beta gamma")},
        query_vector=q,
        vectors={"b": np.array([0.2, 0.98], dtype=np.float32)},
    )
    ranked = rank(cands, DEFAULT, now=NOW, limit=5, query_text="alpha beta")
    top = ranked[0]
    assert top.id == "a" and top.score is not None
    assert top.score.dense == pytest.approx(0.7) and top.score.bm25 == pytest.approx(4.0)
    assert top.score.fused == top.relevance_score
    assert top.score.evidence is not None
    # The contributions add up to the score that calibrates to the relevance.
    evidence = DEFAULT.evidence
    assert evidence is not None
    logit = evidence.scale * sum(top.score.evidence.values()) + evidence.offset
    assert sigmoid(np.array([logit]))[0] == pytest.approx(top.relevance_score, abs=1e-3)
    # The lexical-only candidate shows its cosine from the stored vector.
    other = ranked[1]
    assert other.score is not None and other.score.dense == pytest.approx(0.2, abs=1e-6)


def test_every_evidence_preset_uses_known_features() -> None:
    for config in PRESETS.values():
        if config.uses_evidence:
            assert config.evidence is not None
            assert set(config.evidence.weights) <= set(FEATURES)
            assert config.uses_neighbours


async def test_context_gate_injects_nothing_below_min_relevance() -> None:
    hits = [entry("a", "weakly related", relevance=0.2), entry("b", "less", relevance=0.1)]

    async def search(agent_id: str, query_text: str, limit: int) -> list[MemoryEntry]:
        return hits[:limit]

    gated = ContextInjectionStrategy(search, ContextInjectionConfig(min_relevance=0.5))
    assert (await gated.prepare_context("a", "question", 500)).entries == ()
    passing = ContextInjectionStrategy(search, ContextInjectionConfig(min_relevance=0.15))
    # Each memory on its own score: the best passing does not bring the others along.
    assert [e.id for e in (await passing.prepare_context("a", "question", 500)).entries] == ["a"]
    everything = ContextInjectionStrategy(search, ContextInjectionConfig(min_relevance=0.05))
    assert [e.id for e in (await everything.prepare_context("a", "q", 500)).entries] == ["a", "b"]


def test_spread_threads_lets_each_pick_pay_for_its_threads_earlier_picks() -> None:
    thread = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "c1": "C"}
    ranked = [("a1", 10.0), ("a2", 9.8), ("a3", 9.6), ("b1", 9.0), ("c1", 7.0)]
    # a2 pays 1.0 for a1 (8.8 < b1's 9.0); after b1, a2 (8.8) still beats c1 (7.0).
    got = spread_threads(ranked, thread.__getitem__, penalty=1.0, k=3)
    assert got == ["a1", "b1", "a2", "a3", "c1"]
    assert spread_threads(ranked, thread.__getitem__, penalty=0.0, k=3) == [i for i, _ in ranked]
    # A strong penalty takes one from each thread first.
    assert spread_threads(ranked, thread.__getitem__, penalty=5.0, k=3)[:3] == ["a1", "b1", "c1"]


def test_aggregation_questions_are_recognised() -> None:
    assert asks_for_many("How many days did I spend in Japan in total?")
    assert asks_for_many("Which restaurants have I been to this year?")
    assert asks_for_many("list all the books I read")
    assert asks_for_many("What is the order of the three trips I took, from earliest to latest?")
    assert asks_for_many("In what order did I visit the museums?")
    assert asks_for_many("What subject have Caroline and Melanie both painted?")
    assert asks_for_many("How long did the two books take me combined?")
    assert not asks_for_many("Did my order of running shoes arrive?")
    assert not asks_for_many("Has the order from the bakery arrived?")
    assert not asks_for_many("What is my sister's name?")
    assert not asks_for_many("When did Caroline go to the support group?")


def test_only_aggregation_questions_are_spread_over_threads() -> None:
    # Two strong turns of one session and a weaker one of another.
    entries = {
        "s1a": entry("s1a", "I bought a red bike in May", session=1),
        "s1b": entry("s1b", "I bought a blue bike helmet too", session=1),
        "s2a": entry("s2a", "I bought another bike yesterday", session=2),
    }
    cands = CandidateSet(
        dense=[("s1a", 0.70), ("s1b", 0.69), ("s2a", 0.60)], lexical=[], entries=entries
    )
    plain = [e.id for e in rank(cands, DEFAULT, now=NOW, limit=2, query_text="what bike did I buy")]
    many = [
        e.id for e in rank(cands, DEFAULT, now=NOW, limit=2, query_text="how many bikes did I buy")
    ]
    # A plain question keeps the two strong turns of session 1 (in whichever order their own
    # evidence puts them); an aggregation question takes its second result from session 2.
    assert set(plain) == {"s1a", "s1b"}
    assert many[0] == plain[0] and many[1] == "s2a"


def _gated(searched: int | None, cos: float = 0.33) -> CandidateSet:
    """A chit-chat turn that half-matches a query, in a store of ``searched`` rows."""
    q = np.array([1.0, 0.0], dtype=np.float32)
    return CandidateSet(
        dense=[("a", cos), ("b", cos - 0.05)],
        lexical=[("a", 3.0)],
        entries={"a": entry("a", "we went hiking on saturday"), "b": entry("b", "nice weather")},
        query_vector=q,
        searched=searched,
    )


def test_topic_gate_threshold_rises_with_the_rows_searched_up_to_its_ceiling() -> None:
    gate = DEFAULT_TOPIC_GATE
    sizes = [2, 12, 100, 600, 1_000, 10_000, 1_000_000]
    bars = [gate.threshold(n) for n in sizes]
    assert bars == sorted(bars)
    assert bars[-1] == gate.ceiling and bars[1] < bars[3] < gate.ceiling
    # A match that is convincing among twelve facts is what chance gives among 600 turns.
    assert gate.probability(0.34, 12) > 0.5 > gate.probability(0.34, 600)
    # More of the best match, more likely on topic; never outside [0, 1].
    probs = [gate.probability(b, 600) for b in (-1.0, 0.3, 0.5, 0.53, 0.6, 2.0)]
    assert probs == sorted(probs) and probs[0] >= 0.0 and probs[-1] <= 1.0
    matrix = np.zeros((2, len(FEATURES)))
    matrix[0, COL["cos"]], matrix[1, COL["cos"]], matrix[1, COL["coverage"]] = 0.5, 0.45, 0.9
    matrix[0, COL["lex"]] = 0.9  # BM25 does not count (its idf collapses in tiny stores)
    assert gate.best_match(matrix) == pytest.approx(max(0.5, 0.45 + gate.coverage * 0.9))
    assert gate.best_match(np.zeros((0, len(FEATURES)))) == 0.0


def test_off_topic_gate_scales_relevance_without_reordering() -> None:
    ungated = rank(_gated(None), DEFAULT, now=NOW, limit=5, query_text="hiking trips")
    crowded = rank(_gated(600), DEFAULT, now=NOW, limit=5, query_text="hiking trips")
    small = rank(_gated(12), DEFAULT, now=NOW, limit=5, query_text="hiking trips")
    assert [e.id for e in ungated] == [e.id for e in crowded] == [e.id for e in small]
    for results in (crowded, small):
        for gated, plain in zip(results, ungated, strict=True):
            assert gated.score is not None and gated.score.on_topic is not None
            assert gated.relevance_score == pytest.approx(
                plain.relevance_score * gated.score.on_topic
            )
    assert ungated[0].score is not None and ungated[0].score.on_topic is None
    # The same best match passes in a store of twelve rows and fails among 600.
    assert small[0].relevance_score >= CONTEXT_MIN_RELEVANCE > crowded[0].relevance_score
    # No dense side, no gate: lexical-only rankings keep their relevance.
    lexical_only = DEFAULT.model_copy(update={"use_dense": False})
    (plain,) = rank(_gated(600), lexical_only, now=NOW, limit=1, query_text="hiking trips")
    assert plain.score is not None and plain.score.on_topic is None


def test_topic_gate_holds_only_for_the_embedder_it_was_fitted_on() -> None:
    assert for_embedder(DEFAULT, DEFAULT_EVIDENCE_MODEL_ID) is DEFAULT
    assert DEFAULT_EVIDENCE_MODEL_ID == MINILM_MODEL_ID
    for other in ("sentence-transformers/paraphrase-MiniLM-L3-v2", "openai/text-embedding-3"):
        swapped = for_embedder(DEFAULT, other)
        assert swapped.evidence is not None and swapped.evidence.topic is None
    other_model = for_embedder(DEFAULT, "openai/text-embedding-3").evidence
    assert other_model is not None and other_model.weights == DEFAULT_EVIDENCE.weights
    with pytest.raises(ValidationError):
        TopicGate(coverage=0.1, base=0.0, spread=0.1, width=0.0, ceiling=0.5)


def test_features_read_from_a_stores_analysed_content_equal_those_from_the_text() -> None:
    from memvault.retrieval.text import index_text

    texts = {
        "a": "Running late to the 2023 marathon in Berlin? I ran it twice, honestly.",
        "b": "ok",
        "c": "The the the and of",  # nothing but stop words: no terms at all
        "d": " ".join(f"Cities{i} runners" for i in range(30)) + " last week",
    }
    entries = {i: entry(i, t, session="s1") for i, t in texts.items()}
    cands = CandidateSet(
        dense=[("a", 0.4), ("b", 0.2), ("c", 0.1)],
        lexical=[("d", 3.0), ("a", 1.0)],
        entries=entries,
        neighbours={"a": (("b",), ("c",))},
    )
    for query in ("When did the runners run the Berlin marathon?", "cities honestly", "zzz"):
        plain = evidence_features(cands, query_text=query, now=NOW)
        cands.analysed = {i: index_text(t) for i, t in texts.items()}
        handed = evidence_features(cands, query_text=query, now=NOW)
        cands.analysed = {}
        assert handed.ids == plain.ids
        np.testing.assert_array_equal(handed.matrix, plain.matrix)
    # The coverage column really reads the terms: a query term the analysis lacks is not found.
    cands.analysed = {"a": "zzz"}
    got = evidence_features(cands, query_text="Berlin marathon", now=NOW)
    assert got.matrix[got.ids.index("a"), COL["coverage"]] == 0.0


def test_an_entry_rewritten_under_its_id_is_described_afresh() -> None:
    # Ranking memoises what it derives from each candidate (speaker, thread, sentences, terms)
    # by entry id; every input of those is checked, so a changed entry never reads stale ones.
    def features(e: MemoryEntry, query: str = "What did Caroline say?") -> dict[str, float]:
        cands = CandidateSet(dense=[(e.id, 0.5)], lexical=[(e.id, 2.0)], entries={e.id: e})
        other = entry("other", "Caroline: the lake was calm", session="s9")
        cands.entries["other"] = other
        cands.dense.append(("other", 0.1))
        feats = evidence_features(cands, query_text=query, now=NOW)
        row = feats.matrix[feats.ids.index(e.id)]
        return {name: float(row[COL[name]]) for name in FEATURES}

    base = entry("memo", "Melanie: I painted the lake at sunrise.", session="s1")
    first = features(base)
    assert first["addressed"] == 0.0 and first["question"] == 0.0 and first["when"] == 0.0
    asked = features(base.model_copy(update={"content": "Melanie: Did you paint the lake?"}))
    assert asked["question"] == 1.0
    by_caroline = base.model_copy(update={"content": "Caroline: I painted the lake at sunrise."})
    assert features(by_caroline)["addressed"] == 1.0
    named = base.model_copy(update={"metadata": MemoryMetadata(extra={"name": "Caroline"})})
    assert features(named)["addressed"] == 1.0
    dated = features(base, "When did Melanie paint the lake?")
    later = base.model_copy(update={"content": "Melanie: I painted the lake last Sunday."})
    assert dated["when"] == 0.0
    assert features(later, "When did Melanie paint the lake?")["when"] == 1.0
    # The thread: a fact of its own, or one conversation with "other".
    assert features(base.model_copy(update={"metadata": MemoryMetadata(extra={"session": "s9"})}))[
        "thread"
    ] != pytest.approx(first["thread"])
    # And back: the original entry reads as it did.
    assert features(base) == first
