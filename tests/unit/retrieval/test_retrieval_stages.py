"""Pure retrieval stages: tokenisation, BM25, RRF, ranking, packing."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault.backends.inmemory import InMemoryBackend
from memvault.backends.sqlite import SQLiteBackend
from memvault.embeddings import HashingEmbedder
from memvault.models import (
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.retrieval.bm25 import bm25_scores, idf
from memvault.retrieval.fusion import min_max, rrf
from memvault.retrieval.packing import build_context, estimate_tokens, pack
from memvault.retrieval.pipeline import rank, recency
from memvault.retrieval.presets import PRESETS, RetrievalConfig, get_preset
from memvault.retrieval.text import index_text, query_terms, tokenize

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def entry(i: str, *, age_hours: float = 0.0, content: str = "x") -> MemoryEntry:
    t = NOW - timedelta(hours=age_hours)
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=MemoryCategory.SEMANTIC,
        content=content,
        created_at=t,
        updated_at=t,
    )


def test_tokenize_lowercases_stems_and_drops_stop_words() -> None:
    assert tokenize("The Runners were running quickly to the Stations!") == [
        "runner",
        "run",
        "quick",
        "station",
    ]
    assert tokenize("v2 x 3") == ["v2", "3"]
    assert query_terms("cats cat CATS dog") == ["cat", "dog"]
    assert index_text("Caroline's adoption") == "carolin adopt"


def test_idf_matches_fts5_floor() -> None:
    assert idf(10, 1) == pytest.approx(math.log(9.5 / 1.5))
    assert idf(2, 1) == 1e-6  # log(1) is floored like FTS5 does


def test_bm25_prefers_rarer_terms_and_shorter_docs() -> None:
    docs = [
        ("d1", {"appl": 1, "pie": 1}, 2),
        ("d2", {"appl": 1}, 8),
        ("d3", {"banana": 1}, 1),
        ("d4", {"cherri": 1}, 1),
    ]
    df = {"appl": 2, "pie": 1, "banana": 1, "cherri": 1}
    scores = bm25_scores(["appl", "pie"], docs, doc_count=4, avg_len=3.0, doc_freq=df)
    assert [d for d, _ in scores] == ["d1", "d2"]
    assert scores[0][1] > scores[1][1] > 0


def test_rrf_and_min_max() -> None:
    fused = rrf([["a", "b", "c"], ["b", "a"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    norm = min_max(fused)
    assert norm["c"] == 0.0 and norm["a"] == pytest.approx(1.0)
    assert min_max({"only": 0.3}) == {"only": 1.0}
    with pytest.raises(ValueError):
        rrf([["a"]], k=-1)
    weighted = rrf([["a"], ["b"]], k=0, weights=[2.0, 1.0])
    assert weighted == {"a": 2.0, "b": 1.0}


def test_recency_decays_exponentially() -> None:
    assert recency(NOW, NOW, 0.1) == 1.0
    assert recency(NOW - timedelta(hours=10), NOW, 0.1) == pytest.approx(math.exp(-1))
    assert recency(NOW + timedelta(hours=5), NOW, 0.1) == 1.0


def test_rank_combines_relevance_recency_boost_and_threshold() -> None:
    cands = CandidateSet(
        dense=[("old", 0.9), ("new", 0.8)],
        lexical=[("old", 5.0), ("new", 4.0)],
        entries={"old": entry("old", age_hours=1000), "new": entry("new", age_hours=0)},
    )
    relevance_only = rank(cands, RetrievalConfig(), now=NOW, limit=5)
    assert [e.id for e in relevance_only] == ["old", "new"]
    recency_heavy = RetrievalConfig(relevance_weight=0.2, recency_weight=1.0, decay_rate=0.01)
    assert [e.id for e in rank(cands, recency_heavy, now=NOW, limit=5)] == ["new", "old"]
    boosted = rank(cands, RetrievalConfig(personal_boost=0.5), now=NOW, limit=5, shared_ids={"new"})
    assert boosted[0].score is not None and boosted[0].score.boost == 0.0  # capped at 1.0
    assert boosted[1].id == "new" and boosted[1].score is not None and boosted[1].score.boost == 0.0
    strict = rank(cands, RetrievalConfig(min_relevance=0.5), now=NOW, limit=5)
    assert [e.id for e in strict] == ["old"]
    assert len(rank(cands, RetrievalConfig(), now=NOW, limit=1)) == 1


def test_single_source_presets_ignore_the_other_list() -> None:
    cands = CandidateSet(
        dense=[("a", 0.9), ("b", 0.1)],
        lexical=[("b", 9.0)],
        entries={"a": entry("a"), "b": entry("b")},
    )
    assert [e.id for e in rank(cands, get_preset("dense"), now=NOW, limit=5)] == ["a", "b"]
    assert [e.id for e in rank(cands, get_preset("bm25"), now=NOW, limit=5)] == ["b"]
    assert "default" in PRESETS
    with pytest.raises(KeyError, match="known"):
        get_preset("nope")


def test_packing_is_greedy_within_budget() -> None:
    entries = [entry(str(i), content="word " * (80 if i == 1 else 5)) for i in range(5)]
    chosen = pack(entries, token_budget=120)
    # The big one does not fit and is skipped; the smaller ones after it still do.
    assert [e.id for e in chosen] == ["0", "2", "3", "4"]
    ctx = build_context(entries, token_budget=120)
    assert ctx.tokens <= 120
    assert build_context(entries, token_budget=5).entries == ()
    assert estimate_tokens("abcd" * 10) == 10


async def test_inmemory_and_sqlite_rank_identically(tmp_path: Path) -> None:
    emb = HashingEmbedder(dimension=64)
    rng = random.Random(11)
    vocab = (
        "apple pear rust compiler python typing coffee deploy cache leak login token "
        "database index query latency budget sprint review meeting berlin office garden "
        "bicycle concert painting novel hiking camping kitchen recipe"
    ).split()
    texts = [" ".join(rng.choices(vocab, k=rng.randint(4, 14))) for _ in range(300)]
    mem, lite = InMemoryBackend(emb), SQLiteBackend(tmp_path / "r.db", emb)
    for b in (mem, lite):
        await b.connect()
    try:
        reqs = [MemoryStoreRequest(content=t) for t in texts]
        # Same ids in both stores: import the entries the first store created.
        await mem.store_many("a", reqs)
        exported = [e async for e in mem.export_entries()]
        await lite.import_entries(exported)
        for q in ["apple and pear", "python typing review", "coffee deploy latency", "rust"]:
            a = await mem.retrieve("a", MemoryQuery(text=q, limit=10))
            b = await lite.retrieve("a", MemoryQuery(text=q, limit=10))
            assert [e.id for e in a] == [e.id for e in b], q
            ca = await mem.search_candidates("a", MemoryQuery(text=q), pool=20)
            cb = await lite.search_candidates("a", MemoryQuery(text=q), pool=20)
            assert [s for _, s in ca.lexical] == pytest.approx([s for _, s in cb.lexical], rel=1e-6)
    finally:
        for b in (mem, lite):
            await b.disconnect()


def test_common_terms_are_pruned_only_in_big_stores() -> None:
    from memvault.retrieval.bm25 import prune_common_terms

    df = {"the_common": 9_000, "rare": 12, "mid": 400}
    assert prune_common_terms(["the_common", "rare"], df, 1_000) == ["the_common", "rare"]
    assert prune_common_terms(["the_common", "rare", "mid"], df, 50_000) == ["rare", "mid"]
    # When every term is common the rarest one is kept, so the lexical side is never empty.
    assert prune_common_terms(
        ["the_common", "mid"], {"the_common": 9_000, "mid": 8_000}, 50_000
    ) == ["mid"]
    assert prune_common_terms(["only"], {"only": 49_000}, 50_000) == ["only"]


def test_bounded_scan_scores_the_rarest_terms_within_the_bound() -> None:
    from memvault.retrieval.bm25 import bounded_scan

    # Rows of every term fit: no bound (score them all).
    assert bounded_scan([10, 20, 30], 60) is None
    assert bounded_scan([10_000, 20_000], 0) is None
    # The rarest terms whose rows add up to the bound are essential; the rest are paired.
    assert bounded_scan([3_000, 40, 900, 8_000], 1_000) == ([1, 2], [0, 3])
    # A term no row has costs nothing and is never paired.
    assert bounded_scan([0, 7_000, 6_000], 5_000) == ([], [1, 2])
    # One other term cannot form a pair; at most max_paired are paired.
    assert bounded_scan([10, 9_000], 100) == ([0], [])
    dfs = [1_000 + i for i in range(10)]
    assert bounded_scan(dfs, 500, max_paired=3) == ([], [0, 1, 2])


def test_analyse_gives_the_distinct_terms_and_length_of_tokenize() -> None:
    from memvault.retrieval.text import analyse

    texts = [
        "",
        "the of and",
        "Running runners ran 5 km on 2023-05-08, café naïve résumé; x y z!",
        "snake_case words_and CamelCase ALLCAPS 123abc 42 42 42",
        "Ünïcödé ÉCOLE straße 東京 タワー",
    ]
    for text in texts:
        words = tokenize(text)
        assert analyse(text) == (frozenset(words), len(words))


def test_a_text_mentions_a_time_by_its_words_or_a_year() -> None:
    from memvault.retrieval.temporal import mentions_time

    for text in ("We met YESTERDAY.", "back in 2019", "on Monday's call", "two weeks ago"):
        assert mentions_time(text), text
    # "may" is mostly the modal verb; 1850 and 20234 are not years of ours; "weekly" is a word.
    for text in ("You may go", "built in 1850", "id 20234", "a weekly digest", ""):
        assert not mentions_time(text), text
