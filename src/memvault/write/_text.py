"""Text normalisation shared by dedup and contradiction detection (pure, cached).

Noise that does not change what a memory says is removed before texts are compared: letter case,
punctuation, runs of white space, apostrophes, articles, and filler such as "fyi" or "note:".
Numbers are kept exactly (``1,000`` becomes ``1000``; ``UTC+1`` keeps its sign; ``3.11`` keeps
its dot), because "budget is 500" and "budget is 600" are different statements.
"""

from __future__ import annotations

import re
from collections.abc import KeysView
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

__all__ = [
    "FILLER_WORDS",
    "NEGATIONS",
    "TYPO_MIN_LENGTH",
    "Analysed",
    "align_typos",
    "analyse",
    "clause_grams",
    "is_number",
    "may_align_fully",
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


def _phrase_pattern(phrases: tuple[str, ...]) -> str:
    # Noise puts commas and runs of spaces between a filler's words ("Just, so  you know").
    return "|".join(r"[\s,]+".join(re.escape(w) for w in p.split()) for p in phrases)


_FILLER_ALT = _phrase_pattern(_FILLER_PHRASES)
_TRAILING_ALT = _phrase_pattern(_TRAILING_PHRASES)
_SEP = r"[\s:;,.!\-–—()\[\]]*"
_LEADING_FILLER = re.compile(rf"^\s*(?:(?:{_FILLER_ALT})\b{_SEP})+", re.IGNORECASE)
_TRAILING_FILLER = re.compile(rf"(?:{_SEP}\b(?:{_TRAILING_ALT}))+{_SEP}$", re.IGNORECASE)
# Single-word fillers that never carry content, dropped wherever they appear.
FILLER_WORDS = frozenset({"fyi", "btw", "imo", "imho", "basically", "honestly", "literally"})
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
    # Letters and digits are disjoint Unicode classes, so an all-letter token (most of them)
    # is answered by one C call instead of a generator over its characters.
    if token.isalpha():
        return False
    return token.isdigit() or any(ch.isdigit() for ch in token)


def words(text: str) -> list[str]:
    """Normalised tokens of ``text``: lower-case words and numbers, articles and fillers dropped."""
    prepared = _THOUSANDS.sub("", _APOSTROPHE.sub("", text.casefold()))
    return [t for t in _TOKEN.findall(prepared) if t not in _ARTICLES and t not in FILLER_WORDS]


@dataclass(frozen=True, slots=True)
class Analysed:
    """A text prepared for comparison.

    ``clauses`` are the normalised tokens of each clause; ``tokens`` all of them in order;
    ``vocab`` the distinct tokens; ``numbers`` the numeric tokens; ``negated`` whether any
    negation word occurs.
    """

    clauses: tuple[tuple[str, ...], ...]
    tokens: tuple[str, ...]
    vocab: frozenset[str]
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
        vocab=frozenset(tokens),
        numbers=frozenset(filter(is_number, tokens)),
        negated=not NEGATIONS.isdisjoint(tokens),
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
"""Shortest word a one-letter change is read as a typo of (in shorter ones it makes another word).

The misspelt form may be one letter shorter ("mode" -> "mod"), never shorter than three letters.
"""


def typo_of(a: str, b: str) -> bool:
    """True if one of ``a`` and ``b`` looks like a one-letter typo of the other (never numbers)."""
    la, lb = len(a), len(b)
    # Cheapest tests first: this runs for every pair of unmatched words of every comparison.
    return (
        abs(la - lb) <= 1
        and max(la, lb) >= TYPO_MIN_LENGTH
        and min(la, lb) >= TYPO_MIN_LENGTH - 1
        and one_edit_apart(a, b)
        and not is_number(a)
        and not is_number(b)
    )


@lru_cache(maxsize=65_536)
def _deletions(word: str) -> frozenset[str]:
    """``word`` and every string one letter shorter that it contains (its typo signatures).

    Two words one edit apart always share one: a substitution at ``i`` leaves both equal without
    letter ``i``; an insertion or deletion makes the shorter word one of the longer one's
    deletions; a swap of letters ``i`` and ``i + 1`` leaves them equal without ``i`` in one and
    ``i + 1`` in the other.
    """
    return frozenset((word, *(word[:i] + word[i + 1 :] for i in range(len(word)))))


@lru_cache(maxsize=4096)
def _typo_index(vocab: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """The words of ``vocab`` that can take part in a typo, by typo signature (cached: the
    same texts meet many new ones on the write path)."""
    index: dict[str, list[str]] = {}
    for word in vocab:
        if len(word) >= TYPO_MIN_LENGTH - 1 and not is_number(word):
            for sig in _deletions(word):
                index.setdefault(sig, []).append(word)
    return {sig: tuple(found) for sig, found in index.items()}


def _may_have_partner(word: str, signatures: KeysView[str]) -> bool:
    """Whether ``word`` shares a typo signature with a word of an indexed vocabulary (whose
    index's keys are ``signatures``): no typo partner without one."""
    # Most words: one C-level pass over ~8 signatures.
    return len(word) >= TYPO_MIN_LENGTH - 1 and not signatures.isdisjoint(_deletions(word))


def _typo_partner(word: str, index: dict[str, tuple[str, ...]]) -> str | None:
    """The one word of an indexed vocabulary ``word`` is a typo of, if exactly one.

    Only the words that share a typo signature with ``word`` are tried: comparing every pair of
    two long texts' words (hundreds each) made write-time dedup of conversation turns spend
    most of its time here.
    """
    if not _may_have_partner(word, index.keys()):
        return None
    seen = {v for sig in _deletions(word) for v in index.get(sig, ())}
    matches = [v for v in seen if typo_of(v, word)]
    return matches[0] if len(matches) == 1 else None


def may_align_fully(a: Analysed, b: Analysed) -> bool:
    """False when no typo alignment can give ``a`` and ``b`` the same words (a cheap bound).

    Every word one text lacks must then be a typo of a word of the other: a word with no such
    neighbour stays as it is, and the other text never spells it. True means "maybe".
    """
    for one, other in ((a.vocab, b.vocab), (b.vocab, a.vocab)):
        keys: KeysView[str] | None = None
        for word in one:
            if word in other:
                continue
            if len(word) < TYPO_MIN_LENGTH - 1:
                return False  # no typo partner, and no need to build ``other``'s typo index
            if keys is None:
                keys = _typo_index(other).keys()
            if not _may_have_partner(word, keys):
                return False
    return True


def align_typos(
    a: Analysed, b: Analysed
) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """The clauses of ``a`` and ``b`` with one-letter typos made consistent between them.

    A word of one text that the other lacks is replaced by the other's word a typo away from it
    (when exactly one is), so whichever side holds the misspelling, both end up spelling the
    word the same way. An ambiguous misspelling is left alone (it counts as another word).
    """
    vocab_a, vocab_b = a.vocab, b.vocab
    only_a, only_b = vocab_a - vocab_b, vocab_b - vocab_a
    if not only_a and not only_b:
        return a.clauses, b.clauses
    index_a, index_b = _typo_index(vocab_a), _typo_index(vocab_b)
    map_a: dict[str, str] = {}
    for word in only_a:
        partner = _typo_partner(word, index_b)
        if partner is not None:
            map_a[word] = partner
    renamed = set(map_a)
    map_b: dict[str, str] = {}
    for word in only_b:
        if word in map_a.values():
            continue  # ``a``'s spelling was already changed to this one
        partner = _typo_partner(word, index_a)
        if partner is not None and partner not in renamed:
            map_b[word] = partner
    clauses_a = tuple(tuple(map_a.get(t, t) for t in c) for c in a.clauses) if map_a else a.clauses
    clauses_b = tuple(tuple(map_b.get(t, t) for t in c) for c in b.clauses) if map_b else b.clauses
    return clauses_a, clauses_b


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
