"""Per-text memos are bounded by text length: many short texts, few long ones."""

from __future__ import annotations

from memvault.retrieval._textcache import LONG_TEXT_CHARS, TextMemo
from memvault.retrieval.evidence import LENGTH_CAP, _terms_of
from memvault.retrieval.temporal import mentions_time


def test_long_texts_live_in_the_small_cache_and_values_are_the_functions() -> None:
    calls: list[str] = []

    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    memo = TextMemo(length, short=100, long=3)
    short = [f"fact {i}" for i in range(50)]
    long = [f"{i} " + "x" * LONG_TEXT_CHARS for i in range(10)]
    for text in short + long:
        assert memo(text) == len(text)
    # Every short text stays; only the three newest long ones do.
    assert memo.cache_sizes() == (50, 3)
    calls.clear()
    for text in short + long[-3:]:
        memo(text)
    assert calls == []
    memo(long[0])  # evicted long ago: computed again
    assert calls == [long[0]]
    memo.cache_clear()
    assert memo.cache_sizes() == (0, 0)


def test_ranking_reads_a_texts_terms_and_a_memo_hands_out_its_function() -> None:
    text = "Caroline went to the LGBTQ support group yesterday. " * 20
    assert len(text) > LONG_TEXT_CHARS
    padded, length = _terms_of(text, None)
    assert all(f" {t} " in padded for t in ("carolin", "support", "group"))  # stemmed terms
    assert " the " not in padded and length == LENGTH_CAP  # stop words out; length capped
    # Ranking keeps these per entry (evidence._profile) and calls the memoised functions'
    # own bodies there, so a text is not held twice.
    mentions_time.cache_clear()
    assert mentions_time.uncached(text) is True
    assert mentions_time.cache_sizes() == (0, 0)
    assert mentions_time(text) is True and mentions_time.cache_sizes() == (0, 1)
