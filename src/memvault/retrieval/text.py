"""Tokenisation shared by every lexical index (FTS5, PostgreSQL, in-memory BM25).

Every backend indexes the output of :func:`index_text` and queries with :func:`query_terms`, so
BM25 sees the same terms everywhere: lower-cased Unicode words, English stop words removed,
Snowball (Porter 2) stems. Stemming is cached because the same words recur constantly.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

__all__ = ["STOP_WORDS", "index_text", "query_terms", "stem", "tokenize"]

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

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball stem of one lower-case word (cached)."""
    return str(_stemmer.stemWord(word))


def tokenize(text: str) -> list[str]:
    """Lower-cased words of ``text`` without stop words, stemmed, in order (repeats kept)."""
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group()
        if word in STOP_WORDS:
            continue
        if word.isdigit():
            # Numbers (ids, years, amounts) are never changed by the stemmer and are mostly
            # unique, so passing them through it only fills its cache with misses.
            out.append(word)
            continue
        if len(word) == 1:
            continue
        out.append(stem(word))
    return out


def index_text(text: str) -> str:
    """The space-joined terms a lexical index stores for ``text``."""
    return " ".join(tokenize(text))


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in first-seen order."""
    seen: dict[str, None] = {}
    for term in tokenize(text):
        seen.setdefault(term, None)
    return list(seen)
