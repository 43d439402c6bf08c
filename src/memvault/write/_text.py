"""Text normalisation shared by dedup and contradiction detection (pure, cached).

Noise that does not change what a memory says is removed before texts are compared: letter case,
punctuation, runs of white space, apostrophes, articles, and filler such as "fyi" or "note:".
Numbers are kept exactly (``1,000`` becomes ``1000``; ``UTC+1`` keeps its sign; ``3.11`` keeps
its dot), because "budget is 500" and "budget is 600" are different statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

__all__ = [
    "NEGATIONS",
    "TYPO_MIN_LENGTH",
    "Analysed",
    "align_typos",
    "analyse",
    "clause_grams",
    "is_number",
    "one_edit_apart",
    "strip_filler",
    "typo_of",
    "words",
]

# Conversational filler that adds nothing to a memory when it opens or closes it. Multi-word
# phrases only count at the edges; inside a sentence "note" or "reminder" can be content.
_FILLER_PHRASES = (
    "just so you know",
    "for the record",
    "for your information",
    "as a reminder",
    "by the way",
    "heads up",
    "quick note",
    "just a note",
    "note that",
    "reminder",
    "note",
    "fyi",
    "btw",
    "nb",
    "ps",
)
# Only phrases that cannot end a real sentence are stripped at the end ("left a note" must stay).
_TRAILING_PHRASES = (
    "just so you know",
    "for the record",
    "for your information",
    "as a reminder",
    "by the way",
    "fyi",
    "btw",
)
_FILLER_ALT = "|".join(re.escape(p) for p in _FILLER_PHRASES)
_TRAILING_ALT = "|".join(re.escape(p) for p in _TRAILING_PHRASES)
_SEP = r"[\s:;,.!\-–—()\[\]]*"
_LEADING_FILLER = re.compile(rf"^\s*(?:(?:{_FILLER_ALT})\b{_SEP})+", re.IGNORECASE)
_TRAILING_FILLER = re.compile(rf"(?:{_SEP}\b(?:{_TRAILING_ALT}))+{_SEP}$", re.IGNORECASE)
# Single-word fillers that never carry content, dropped wherever they appear.
_FILLER_WORDS = frozenset({"fyi", "btw", "imo", "imho"})
_ARTICLES = frozenset({"a", "an", "the"})

NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "without",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "wont",
        "cant",
        "cannot",
        "couldnt",
        "shouldnt",
        "hasnt",
        "havent",
        "hadnt",
    }
)
"""Words that flip a statement's polarity (apostrophes are removed before the lookup)."""

_APOSTROPHE = re.compile(r"['’‘`]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# Clause boundaries: sentence punctuation and the conjunctions that join two statements. Commas
# and colons are not boundaries: noise adds and removes them freely.
_CLAUSE_SPLIT = re.compile(r"[.;!?]+(?!\d)|\b(?:and|but)\b", re.IGNORECASE)
# A number (a sign only when no digit precedes it, so dates split on '-'; a decimal dot kept) or
# a run of letters. Everything else is a separator.
_TOKEN = re.compile(r"(?:(?<!\d)[+-])?\d+(?:\.\d+)*|[^\W\d_]+")


def strip_filler(text: str) -> str:
    """``text`` without leading and trailing filler ("FYI", "Note:", ", btw"), stripped."""
    stripped = _LEADING_FILLER.sub("", text)
    stripped = _TRAILING_FILLER.sub("", stripped)
    # A text that is nothing but filler keeps its words: an empty memory compares to nothing.
    return stripped.strip() or text.strip()


def is_number(token: str) -> bool:
    """True if ``token`` (a normalised token) contains a digit."""
    return any(ch.isdigit() for ch in token)


def words(text: str) -> list[str]:
    """Normalised tokens of ``text``: lower-case words and numbers, articles and fillers dropped."""
    prepared = _THOUSANDS.sub("", _APOSTROPHE.sub("", text.casefold()))
    return [t for t in _TOKEN.findall(prepared) if t not in _ARTICLES and t not in _FILLER_WORDS]


@dataclass(frozen=True, slots=True)
class Analysed:
    """A text prepared for comparison.

    ``clauses`` are the normalised tokens of each clause; ``tokens`` all of them in order;
    ``numbers`` the numeric tokens; ``negated`` whether any negation word occurs.
    """

    clauses: tuple[tuple[str, ...], ...]
    tokens: tuple[str, ...]
    numbers: frozenset[str]
    negated: bool

    @property
    def normalised(self) -> str:
        """The normalised text: tokens joined by single spaces."""
        return " ".join(self.tokens)


@lru_cache(maxsize=65_536)
def analyse(text: str) -> Analysed:
    """Normalise ``text`` into clauses of tokens (cached: neighbours recur across writes)."""
    body = strip_filler(text)
    prepared = _THOUSANDS.sub("", _APOSTROPHE.sub("", body))
    clauses: list[tuple[str, ...]] = []
    for part in _CLAUSE_SPLIT.split(prepared):
        toks = tuple(words(part))
        if toks:
            clauses.append(toks)
    tokens = tuple(t for c in clauses for t in c)
    return Analysed(
        clauses=tuple(clauses),
        tokens=tokens,
        numbers=frozenset(t for t in tokens if is_number(t)),
        negated=any(t in NEGATIONS for t in tokens),
    )


def one_edit_apart(a: str, b: str) -> bool:
    """True if ``a`` and ``b`` differ by exactly one insertion, deletion, substitution or swap."""
    if a == b:
        return False
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        # Adjacent transposition ("teh" for "the") counts as one typo.
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if la < lb else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1 :]


TYPO_MIN_LENGTH = 4
"""Shortest word a one-letter difference is read as a typo in (shorter: another word)."""


def typo_of(a: str, b: str) -> bool:
    """True if ``b`` looks like a one-letter typo of ``a`` (words only, never numbers)."""
    return (
        len(a) >= TYPO_MIN_LENGTH
        and len(b) >= TYPO_MIN_LENGTH
        and not is_number(a)
        and not is_number(b)
        and one_edit_apart(a, b)
    )


def align_typos(reference: Analysed, other: Analysed) -> tuple[tuple[str, ...], ...]:
    """``other``'s clauses with each word that is a typo of a ``reference`` word replaced by it.

    A word is replaced only when exactly one unmatched reference word is one edit away, so an
    ambiguous misspelling is left alone (it then counts as a different word).
    """
    ref_vocab = set(reference.tokens)
    other_vocab = set(other.tokens)
    unmatched_ref = [w for w in ref_vocab - other_vocab]
    mapping: dict[str, str] = {}
    for word in other_vocab - ref_vocab:
        matches = [r for r in unmatched_ref if typo_of(r, word)]
        if len(matches) == 1:
            mapping[word] = matches[0]
    if not mapping:
        return other.clauses
    return tuple(tuple(mapping.get(t, t) for t in clause) for clause in other.clauses)


def clause_grams(clauses: tuple[tuple[str, ...], ...]) -> frozenset[tuple[str, ...]]:
    """Word bigrams within each clause (a one-word clause yields its word as a one-tuple).

    Bigrams never cross a clause boundary, so swapping two clauses leaves the set unchanged while
    swapping the words of one clause ("Alice manages Bob") does not.
    """
    grams: set[tuple[str, ...]] = set()
    for clause in clauses:
        if len(clause) == 1:
            grams.add(clause)
        else:
            grams.update(pairwise(clause))
    return frozenset(grams)
