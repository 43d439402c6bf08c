"""Tokenisation shared by every lexical index (FTS5, PostgreSQL, in-memory BM25).

Every backend indexes the output of :func:`index_text` and queries with :func:`query_terms`, so
BM25 sees the same terms everywhere: lower-cased Unicode words, English stop words removed,
Snowball (Porter 2) stems. Each word's term is cached because the same words recur constantly.

Ranking analyses every candidate's text that its memos miss (in big stores of long turns, dozens
per search), so this is on the search path: words come from one ``findall``, each distinct word's
fate (dropped, or its stem) is memoised, and stems come from PyStemmer's C build of the same
Snowball algorithm when it is installed (it is a dependency; snowballstemmer picks it up, and
falls back to its pure-Python stemmer, 12x slower, with identical stems).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from functools import lru_cache
from typing import Any

import snowballstemmer

__all__ = ["STOP_WORDS", "analyse", "index_text", "query_terms", "stem", "tokenize", "words"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# A conventional English stop list (articles, pronouns, auxiliaries, prepositions). Kept short on
# purpose: question words such as "when" or "where" are stop words for BM25 because they never
# occur in the answer's text, while content words are always kept.
STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "couldn",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "hadn",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "ll",
        "me",
        "more",
        "most",
        "mustn",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "ought",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "re",
        "same",
        "shan",
        "she",
        "should",
        "shouldn",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "ve",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "wouldn",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "d",
        "m",
        "o",
        "y",
        "also",
        "did",
        "does",
        "done",
        "get",
        "got",
        "like",
        "really",
        "yeah",
        "oh",
        "hey",
        "hi",
    ]
)

# A stemmer object keeps the word it is working on (in C or in Python), so two threads must not
# share one: backends analyse text on worker threads while ranking runs on the event loop.
_local = threading.local()


def _stemmer() -> Any:
    found = getattr(_local, "stemmer", None)
    if found is None:
        found = _local.stemmer = snowballstemmer.stemmer("english")
    return found


def stem(word: str) -> str:
    """Snowball stem of one lower-case word."""
    return str(_stemmer().stemWord(word))


@lru_cache(maxsize=200_000)
def _term(word: str) -> str:
    """The index term of one lower-case, non-numeric word; empty if the word is not indexed
    (cached: the same words recur constantly; the one memo of the word-to-term step)."""
    if word in STOP_WORDS or len(word) == 1:
        return ""
    return stem(word)


def words(text: str) -> list[str]:
    """The lower-cased words of ``text`` in order (before stop words and stemming)."""
    return _WORD.findall(text.lower())


def tokenize(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stop words, stemmed, in order (repeats kept)."""
    out: list[str] = []
    for word in words(text):
        # Numbers (ids, years, amounts) are never changed by the stemmer and are mostly unique,
        # so they bypass the memo instead of filling it with misses.
        if word.isdigit():
            out.append(word)
            continue
        term = _term(word)
        if term:
            out.append(term)
    return out


def analyse(text: str) -> tuple[frozenset[str], int]:
    """``(terms, length)`` of ``text``: its distinct index terms and how many terms it has
    (repeats counted), equal to ``frozenset(tokenize(text)), len(tokenize(text))`` but looking
    at each distinct word once, which is what ranking needs of a candidate's text."""
    counts = Counter(words(text))
    terms: set[str] = set()
    length = 0
    for word, n in counts.items():
        term = word if word.isdigit() else _term(word)
        if term:
            terms.add(term)
            length += n
    return frozenset(terms), length


def index_text(text: str) -> str:
    """The space-joined terms a lexical index stores for ``text``."""
    return " ".join(tokenize(text))


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in first-seen order."""
    seen: dict[str, None] = {}
    for term in tokenize(text):
        seen.setdefault(term, None)
    return list(seen)
