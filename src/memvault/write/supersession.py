"""Contradiction detection without an LLM: (subject, slot, value) statements from simple text.

A memory such as "Prefers dark mode" followed by "Now prefers light mode" states two values for one
slot of one subject; the newer one supersedes the older (the caller sets the old entry's
``valid_to`` and ``superseded_by``, keeping it for as-of queries).

The extractor is deliberately narrow. A false supersession hides a memory that is still true,
which is far worse than a missed one (both entries simply stay live), so any doubt yields no
statement: questions, negations, hedges ("maybe", "might", "used to"), pronoun subjects ("he",
"they"), multi-valued values ("tea and coffee") and everything the patterns below do not match
entirely.

Patterns (matched on the whole text after filler, update markers such as "Update:" or
"Actually," and stance adverbs such as "now", "currently" or "still" are removed; ``S`` is an
optional subject of one to three words, default "user" for "I", "my", "the user" or none):

========================================  ==============================  =====================
pattern                                   slot                            example
========================================  ==============================  =====================
``S switched|moved from X to Y [for C]``  ``uses:C`` (``residence`` for   "switched from vim to
                                          moved/relocated); also          neovim"
                                          replaces X
``S switched|changed to Y for C``         ``uses:C``                      "switched to uv for
                                                                          packaging"
``S prefers|favours X [over Y] [for C]``  ``preference:C``; else both     "prefers dark mode",
                                          one-word rivals ("coffee|tea"); "prefers tea over
                                          else the last word of a multi-  coffee"
                                          word X ("mode"); Y is replaced
``S prefers to V X``                      ``preference:to V``             "prefers to work
                                                                          remotely"
``S uses X [for|as|to C]``                ``uses:C``, else the head of X  "uses vim for editing"
``S lives|is based in X``,                ``residence`` (X a proper       "Alice lives in Paris"
``S moved|relocated to X``                name)
``S works at|for X``                      ``employer`` (X a proper name)  "works at Acme"
``S works as X``                          ``role``                        "works as a designer"
``[S's|my|the] SLOT is|changed to V``     SLOT, when its last word is a   "Alice's timezone is
                                          known slot noun (budget,        CET", "the budget is
                                          timezone, deadline, ...) or it  600"
                                          has a modifier such as
                                          "favourite" or "preferred"
``SLOT: V``                               SLOT (same rule)                "Timezone: UTC+1"
``S is STATUS``                           ``status`` / ``relationship``   "Project Atlas is on
                                          for a small closed vocabulary   hold"
========================================  ==============================  =====================

Two statements conflict when they have the same subject and different values for the same slot;
or when the new one explicitly replaces the old value ("switched from vim to neovim" against
"uses vim for editing"; "prefers Flask over Django" against "prefers Django"); or when the new
value is one the old statement displaced ("prefers Django" against "prefers Flask over Django").
Values that differ by a one-letter typo count as equal.

Changes of fact (:func:`extract_statements`, used by :func:`find_contradiction` on both the new
text and each candidate; :func:`extract_statement` above stays as it is for dedup):

* **Clauses.** A text is read clause by clause where "and", "so" or a comma opens a piece that
  starts with a verb or a subject; the first clause's subject carries over ("Ana lives in
  Lisbon and works as a data analyst" is a residence and a role of Ana; "Chen left Stripe and
  joined Airbnb" ends one employer and states another). A piece that starts otherwise stays in
  its clause, so "tea and coffee" is still a list that no rule accepts. A new value for *one*
  clause's slot supersedes the whole compound memory; the old entry is only closed, not
  deleted, so its other clauses stay available with ``include_superseded=True`` or ``as_of``.
* **Tails.** Time and manner tails do not change a value: "in June 2025", "since November",
  "last month", "after ...", "a year ago" and, for these rules, "again".
* **Families.** Residence (lives in / lives with ... in / moved into ... in / is based in /
  relocated to, "home city is"), diet (vegetarian, vegan, pescatarian, "eats meat", "on a keto
  diet"; "went / has gone / became vegan"), car ("drives a", "my car is"), commute ("commutes
  by", "takes the bus to work", "cycles to work"), pets ("has a dog named Biscuit"), tools (a
  small lexicon of editors, operating systems, phones, browsers and trackers, so "switched to
  VS Code" meets "uses Vim for editing code"), employer ("started working at", "joined", "got
  a job at", "was hired by"), role ("is now a midwife" for a known occupation, "was promoted
  to", "became a"), relationship ("got married / divorced / engaged", "is dating", "has a
  girlfriend called"), partner, team supported, habits ("plays tennis every Saturday"), shift
  pattern ("works night shifts", "switched to day shifts"), a workplace described rather than
  named ("works at a bakery": its own slot, which only an end statement naming it, such as
  "quit my job at the bakery", or "left her job" or "retired", displaces), and one-word rival
  preferences ("prefers tea" against "now prefers coffee").
* **End statements** (family ``end``) displace an old value without stating a new one, and
  only the old values they name: "sold her car" (any car, and driving to work), "got rid of
  her Fiat", "no longer vegan", "stopped eating meat", "left Stripe", "left her job" and
  "retired" (any employer; retired: any role), "graduated" (student), "broke up with Alex",
  "Sofia's dog Biscuit died", "quit smoking", "gave up coffee", "no longer plays tennis",
  "doesn't live in Leeds anymore".
* **Caution kept.** Values that only add detail after the old one ("lives in Cairo with his
  wife", "works at Stripe in Dublin") are the same fact. Tools, cars and teams are
  multi-valued (people use Vim and tmux), so a new value displaces an old one only when the
  text marks a change ("now", "switched", "these days", "since", ...) and no addition ("also",
  "too", "another"); so do shifts and rival preferences. Other people's facts ("Ana's sister
  sold her car"), hedges, plans, questions and negations still yield nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache

from memvault.models import MemoryCategory, MemoryEntry
from memvault.write._text import (
    FILLER_WORDS,
    NEGATIONS,
    is_number,
    strip_filler,
    typo_of,
    words,
)

__all__ = [
    "ANY_VALUE",
    "DEFAULT_SUBJECT",
    "END",
    "SLOT_MODIFIERS",
    "SLOT_NOUNS",
    "Contradiction",
    "Statement",
    "conflicts",
    "contradiction_query",
    "detect_contradiction",
    "different_topic",
    "extract_statement",
    "extract_statements",
    "find_contradiction",
    "marks_change",
    "related",
]

DEFAULT_SUBJECT = "user"
"""The subject of statements that name none, or name the user ("I", "my", "the user")."""

SLOT_NOUNS = frozenset(
    """
    address age availability birthday boss browser budget capacity city color company cost
    country database date deadline department diet distro drink editor email employer food
    font framework goal handle hometown hours ide interval language laptop lead length limit
    location manager mode name number os office owner partner phone plan port position price
    priority quota rate release role salary schedule seat shell size spouse stack status team
    theme threshold time timeout timezone title username version
    """.split()
)
"""Last words that make "<slot> is <value>" a single-valued attribute (e.g. "the budget")."""

SLOT_MODIFIERS = frozenset(
    "favorite preferred default current main primary usual home max maximum min minimum".split()
)
"""Words that make any noun a single-valued slot ("favourite band", "default branch")."""

_SPELLING = {"favourite": "favorite", "colour": "color", "organisation": "organization"}

_STATUS_VALUES = {
    "status": frozenset(
        {
            "active",
            "inactive",
            "on hold",
            "paused",
            "blocked",
            "done",
            "complete",
            "completed",
            "finished",
            "cancelled",
            "canceled",
            "in progress",
            "shipped",
            "launched",
            "deprecated",
            "archived",
            "planned",
            "delayed",
            "on track",
            "at risk",
        }
    ),
    "relationship": frozenset({"single", "married", "engaged", "divorced", "widowed"}),
}

# Hedges and habits: a statement containing one of these is not a plain current fact.
_UNCERTAIN = frozenset(
    """
    maybe might perhaps probably possibly if unless would could should considering
    thinking planning hope hopes hoping wish wishes want wants wanted used sometimes
    occasionally rarely
    """.split()
)
# Words that make a value a list or a clause rather than one value.
_NOT_ONE_VALUE = frozenset("and or but who which that because so though although".split())
_DEFAULT_SUBJECTS = frozenset({"i", "me", "my", "myself", "user", "the user", "our", "the"})
_PRONOUNS = frozenset(
    """
    he she they it this that him her them his their its someone somebody everyone everybody
    anyone nobody people there here
    """.split()
)

_DETERMINERS = frozenset("a an the my our his her their your some".split())
_GENERIC_PLACES = frozenset(
    """
    home apartment flat house room studio dorm village town city suburb suburbs area
    neighborhood neighbourhood building countryside startup company office school
    university hospital bank shop store restaurant agency firm remote remotely
    """.split()
)

_UPDATE_MARKERS = re.compile(
    r"^(?:update[ds]?|correction|actually|edit|change of plans?|as of (?:today|now)"
    r"|from now on|these days|nowadays|now|currently|so|ok|okay)\b[\s:,;\-–—]*",
    re.IGNORECASE,
)
_ADVERBS = re.compile(
    r"\s*\b(?:now|currently|actually|nowadays|instead|still|also|really|definitely|usually"
    r"|generally|always|mostly|officially|these days|from now on)\b",
    re.IGNORECASE,
)
# Filler inside a sentence goes with the commas or brackets around it: "Alice, fyi, lives".
_INNER_FILLER = re.compile(
    rf"[\s,(]*\b(?:{'|'.join(sorted(FILLER_WORDS))})\b[\s,)]*", re.IGNORECASE
)
_CONTRACTIONS = (
    (re.compile(r"\b(i|we|you|they)'ve\b", re.IGNORECASE), r"\1 have"),
    (re.compile(r"\bi'm\b", re.IGNORECASE), "i am"),
    (re.compile(r"\b(we|you|they)'re\b", re.IGNORECASE), r"\1 are"),
)

# A subject or owner of one to three words; auxiliaries are never part of it ("I have moved").
_WORD = r"(?!(?:has|have|had|is|am|are|was|were|been|be)\b)[^\W\d_][\w.-]*"
_NAME = rf"(?:the\s+)?{_WORD}(?:\s+{_WORD}){{0,2}}"
_S = rf"(?:(?P<subj>{_NAME})\s+)?"
_HAVE = r"(?:(?:has|have)\s+(?:been\s+)?)?"

_SWITCH_FROM = re.compile(
    rf"^{_S}{_HAVE}(?P<verb>switched|changed|migrated|moved|relocated|upgraded|went)\s+"
    r"from\s+(?P<old>.+?)\s+to\s+(?P<new>.+?)(?:\s+for\s+(?P<ctx>.+))?$",
    re.IGNORECASE,
)
_SWITCH_TO = re.compile(
    rf"^{_S}{_HAVE}(?:switched|changed|migrated)\s+to\s+(?P<new>.+?)\s+for\s+(?P<ctx>.+)$",
    re.IGNORECASE,
)
_PREFER = re.compile(rf"^{_S}(?:prefers?|favou?rs?)\s+(?P<rest>.+)$", re.IGNORECASE)
_USES = re.compile(
    rf"^{_S}{_HAVE}(?:uses?|(?:is|am|are)\s+using|using|relies\s+on|rely\s+on)\s+"
    r"(?P<val>.+?)(?:\s+(?:for|as|to)\s+(?P<ctx>.+))?$",
    re.IGNORECASE,
)
_RESIDENCE = re.compile(
    rf"^{_S}{_HAVE}(?:lives?\s+in|living\s+in|(?:is|am|are)\s+living\s+in|resides?\s+in"
    r"|(?:is|am|are)\s+based\s+in|based\s+in|moved\s+to|relocated\s+to)\s+(?P<val>.+)$",
    re.IGNORECASE,
)
_EMPLOYER = re.compile(
    rf"^{_S}{_HAVE}(?:works?|(?:is|am|are)\s+working|working|(?:is|am|are)\s+employed)\s+"
    r"(?:at|for|by)\s+(?P<val>.+)$",
    re.IGNORECASE,
)
_ROLE = re.compile(
    rf"^{_S}{_HAVE}(?:works?|(?:is|am|are)\s+working|working)\s+as\s+(?P<val>.+)$",
    re.IGNORECASE,
)
_ATTRIBUTE = re.compile(
    rf"^(?:(?P<owner>{_NAME})'s\s+|(?P<det>my|our|the|your)\s+)?"
    r"(?P<slot>[^\W\d_][\w\s-]{0,40}?)\s+"
    r"(?:is|are|was\s+changed\s+to|has\s+changed\s+to|changed\s+to|has\s+been\s+changed\s+to"
    r"|is\s+set\s+to|was\s+set\s+to|has\s+been\s+set\s+to|=)\s+(?P<val>.+)$",
    re.IGNORECASE,
)
_COLON = re.compile(r"^(?P<slot>[^\W\d_][\w\s'-]{0,40}?)\s*[:=]\s*(?P<val>.+)$", re.IGNORECASE)
_STATUS = re.compile(
    rf"^(?P<subj>{_NAME})\s+(?:is|am|are|has\s+been|was\s+marked(?:\s+as)?|is\s+marked(?:\s+as)?)"
    r"\s+(?P<val>.+)$",
    re.IGNORECASE,
)
_PREP_CTX = re.compile(
    r"^(?P<val>.+?)\s+(?:for|when|while|during|as)\s+(?P<ctx>.+)$", re.IGNORECASE
)
_ALTERNATIVE = re.compile(
    r"^(?P<val>.+?)\s+(?:over|rather\s+than|instead\s+of|to)\s+(?P<alt>.+)$", re.IGNORECASE
)

_MAX_VALUE_WORDS = 6


@dataclass(frozen=True, slots=True)
class Statement:
    """A (subject, slot, value) reading of one memory's text.

    ``family`` groups slots ("preference", "uses", "residence", "employer", "role", "attribute",
    "status"); ``replaces`` are values the statement explicitly displaces ("switched from X",
    "prefers Y over X"), applicable to old statements of a family in ``replaces_families``;
    ``pattern`` names the pattern that matched (for explanations); ``changed`` is set when
    the text marks a change ("now", "switched", "these days"), which multi-valued families
    (tools, cars: people use several) need before a new value displaces an old one.
    """

    subject: str
    slot: str
    value: str
    family: str
    pattern: str
    replaces: frozenset[str] = frozenset()
    replaces_families: frozenset[str] = frozenset()
    changed: bool = False


@dataclass(frozen=True, slots=True)
class Contradiction:
    """An existing entry the new text contradicts, with both statements."""

    entry: MemoryEntry
    new: Statement
    old: Statement


def _prepare(text: str) -> str | None:
    body = strip_filler(text).replace("’", "'").strip()
    if body.endswith("?"):
        return None
    body = body.rstrip(" .!\t\n")
    previous = None
    while previous != body:
        previous = body
        body = _UPDATE_MARKERS.sub("", body).strip()
    for pattern, repl in _CONTRACTIONS:
        body = pattern.sub(repl, body)
    body = _INNER_FILLER.sub(" ", body)
    body = _ADVERBS.sub("", body)
    body = re.sub(r"\s+", " ", body).strip(" ,;:")
    # "Alice, lives in Paris": a comma after a one-word subject is noise, not a clause.
    body = re.sub(r"^([^\W\d_][\w.'-]*),\s*", r"\1 ", body)
    tokens = set(words(body))
    if not tokens or tokens & NEGATIONS or tokens & _UNCERTAIN:
        return None
    return body


def _norm_words(text: str) -> list[str]:
    return [_SPELLING.get(w, w) for w in words(text)]


def _value(text: str | None) -> str | None:
    if text is None:
        return None
    toks = _norm_words(text)
    if not toks or len(toks) > _MAX_VALUE_WORDS or set(toks) & _NOT_ONE_VALUE:
        return None
    return " ".join(toks)


def _head(value: str) -> str:
    """The slot word of a multi-word value: its last word that is not a number."""
    toks = value.split()
    words_only = [t for t in toks if not is_number(t)]
    return words_only[-1] if words_only else toks[-1]


def _subject(raw: str | None, default: str) -> str | None:
    if raw is None:
        return default
    toks = _norm_words(raw)
    if not toks:
        return default
    name = " ".join(toks)
    if name in _DEFAULT_SUBJECTS:
        return default
    if toks[0] in _PRONOUNS or name in _PRONOUNS:
        return None
    if name in {"we", "us"}:
        return "we"
    if name in {"you", "your"}:
        return "you"
    return name


def _casing_informative(whole: str) -> bool:
    """True if capitals in ``whole`` can be trusted to mark names.

    All-lower or all-upper text, or text with a shouted word ("alice LIVES in paris"), says
    nothing about which words are names.
    """
    if whole.islower() or whole.isupper():
        return False
    return not any(len(w) > 3 and w.isupper() for w in re.findall(r"[^\W\d_]+", whole))


def _proper(raw: str, whole: str) -> bool:
    """True if ``raw`` can be a place or organisation name in ``whole``.

    A value opened by an article or possessive, or made of one generic noun ("a small
    apartment", "the hospital", "home"), is a description, not a name; otherwise, when the
    casing is informative, the value must start with a capital or a digit.
    """
    stripped = raw.strip()
    first = stripped.split(maxsplit=1)[0].lower() if stripped else ""
    toks = _norm_words(stripped)
    if not toks or first in _DETERMINERS or (len(toks) == 1 and toks[0] in _GENERIC_PLACES):
        return False
    if not _casing_informative(whole):
        return True
    return stripped[0].isupper() or stripped[0].isdigit()


def _slot(raw: str) -> str | None:
    toks = _norm_words(raw)
    if not 1 <= len(toks) <= 4:
        return None
    if toks[-1] in SLOT_NOUNS or set(toks) & SLOT_MODIFIERS:
        return " ".join(toks)
    return None


def _statement(
    subject: str | None,
    slot: str,
    value: str | None,
    family: str,
    pattern: str,
    *,
    replaces: frozenset[str] = frozenset(),
    replaces_families: frozenset[str] = frozenset(),
) -> Statement | None:
    if subject is None or value is None or not slot:
        return None
    return Statement(subject, slot, value, family, pattern, replaces, replaces_families)


def _preference(body: str, subject: str | None, rest: str) -> Statement | None:
    if rest.lower().startswith("to "):
        # "prefers to work remotely": the verb names the slot, the rest is the value.
        toks = _norm_words(rest)
        if len(toks) < 3:
            return None
        return _statement(
            subject, f"preference:to {toks[1]}", _value(" ".join(toks[2:])), "preference", "prefer"
        )
    alt_raw: str | None = None
    alt_match = _ALTERNATIVE.match(rest)
    if alt_match:
        rest, alt_raw = alt_match.group("val"), alt_match.group("alt")
    ctx_raw: str | None = None
    ctx_match = _PREP_CTX.match(rest)
    if ctx_match:
        rest, ctx_raw = ctx_match.group("val"), ctx_match.group("ctx")
    elif alt_raw is not None:
        alt_ctx = _PREP_CTX.match(alt_raw)
        if alt_ctx:
            alt_raw, ctx_raw = alt_ctx.group("val"), alt_ctx.group("ctx")
    value = _value(rest)
    if value is None:
        return None
    alternative = _value(alt_raw) if alt_raw is not None else None
    if alt_raw is not None and alternative is None:
        return None
    context = _value(ctx_raw) if ctx_raw is not None else None
    if ctx_raw is not None and context is None:
        return None
    if context is not None:
        slot = context
    elif alternative is not None and " " not in value and " " not in alternative:
        # "prefers tea over coffee": the two rivals together name the slot.
        slot = "|".join(sorted({value, alternative}))
    else:
        slot = _head(value) if " " in value else value
    replaced = frozenset({alternative}) if alternative else frozenset()
    return _statement(
        subject,
        f"preference:{slot}",
        value,
        "preference",
        "prefer",
        replaces=replaced,
        replaces_families=frozenset({"preference"}) if replaced else frozenset(),
    )


def _extract(body: str, default_subject: str) -> Statement | None:
    m = _SWITCH_FROM.match(body)
    if m:
        subject = _subject(m.group("subj"), default_subject)
        old, new = _value(m.group("old")), _value(m.group("new"))
        if old is None or new is None:
            return None
        if m.group("verb").lower() in {"moved", "relocated"} and m.group("ctx") is None:
            if not _proper(m.group("new"), body):
                return None
            return _statement(
                subject,
                "residence",
                new,
                "residence",
                "moved from",
                replaces=frozenset({old}),
                replaces_families=frozenset({"residence"}),
            )
        ctx = _value(m.group("ctx")) if m.group("ctx") else None
        if m.group("ctx") and ctx is None:
            return None
        return _statement(
            subject,
            f"uses:{ctx}" if ctx else f"uses:{_head(new)}",
            new,
            "uses",
            "switched from",
            replaces=frozenset({old}),
            replaces_families=frozenset({"uses", "preference"}),
        )
    m = _SWITCH_TO.match(body)
    if m:
        ctx = _value(m.group("ctx"))
        if ctx is None:
            return None
        return _statement(
            _subject(m.group("subj"), default_subject),
            f"uses:{ctx}",
            _value(m.group("new")),
            "uses",
            "switched to",
        )
    m = _PREFER.match(body)
    if m:
        return _preference(body, _subject(m.group("subj"), default_subject), m.group("rest"))
    for pattern, slot, phrase, needs_name in _SIMPLE_SLOTS:
        m = pattern.match(body)
        if m:
            if needs_name and not _proper(m.group("val"), body):
                return None
            return _statement(
                _subject(m.group("subj"), default_subject),
                slot,
                _value(m.group("val")),
                slot,
                phrase,
            )
    m = _USES.match(body)
    if m:
        value = _value(m.group("val"))
        ctx_raw = m.group("ctx")
        ctx = _value(ctx_raw) if ctx_raw else None
        if value is None or (ctx_raw and ctx is None):
            return None
        used_for = ctx if ctx else (_head(value) if " " in value else value)
        return _statement(
            _subject(m.group("subj"), default_subject), f"uses:{used_for}", value, "uses", "uses"
        )
    m = _ATTRIBUTE.match(body)
    if m:
        attribute = _slot(m.group("slot"))
        if attribute is not None:
            owner = m.group("owner")
            det = (m.group("det") or "").lower()
            subject = (
                _subject(owner, default_subject)
                if owner
                else ("you" if det == "your" else default_subject)
            )
            return _statement(subject, attribute, _value(m.group("val")), "attribute", "is")
    m = _COLON.match(body)
    if m:
        attribute = _slot(m.group("slot"))
        if attribute is not None:
            return _statement(
                default_subject, attribute, _value(m.group("val")), "attribute", "colon"
            )
    m = _STATUS.match(body)
    if m:
        value = _value(m.group("val"))
        for group, values in _STATUS_VALUES.items():
            if value in values:
                return _statement(
                    _subject(m.group("subj"), default_subject), group, value, "status", "is status"
                )
    return None


# One-value slots, tried in this order: (pattern, slot, canonical phrase, value must be a name).
_SIMPLE_SLOTS = (
    (_RESIDENCE, "residence", "lives in", True),
    (_ROLE, "role", "works as", False),
    (_EMPLOYER, "employer", "works at", True),
)


@lru_cache(maxsize=65_536)
def extract_statement(text: str, default_subject: str = DEFAULT_SUBJECT) -> Statement | None:
    """Read ``text`` as one (subject, slot, value) statement, or None when unsure.

    See the module docstring for the patterns. Subjects, slots and values are lower-cased word
    sequences without articles or punctuation (numbers kept exactly).
    """
    body = _prepare(text)
    if body is None:
        return None
    return _extract(body, default_subject)


_BRITISH = {american: british for british, american in _SPELLING.items()}


def _same_word(a: str, b: str) -> bool:
    # Values are stored with American spelling; a typo may have hit the British form.
    return (
        a == b or typo_of(a, b) or typo_of(_BRITISH.get(a, a), b) or typo_of(a, _BRITISH.get(b, b))
    )


_SYNTHETIC_SLOTS = frozenset({"residence", "employer", "role", "status", "relationship"})


def contradiction_query(text: str, default_subject: str = DEFAULT_SUBJECT) -> str | None:
    """A short lexical query that finds the entries ``text`` may contradict, or None.

    Generic neighbours (dense or BM25 on the whole text) favour texts of the same shape ("X
    lives in Y") over older statements about the same subject; a second, lexical search with
    the statement's subject and slot words ("lucia", "atlas budget", "indentation") finds those.
    None when ``text`` is not a statement (nothing to contradict).
    """
    statement = extract_statement(text, default_subject)
    if statement is None:
        # A change only the clause rules read ("Ana sold her car and now commutes by e-bike"):
        # the subject alone finds the older statements about it.
        changes = extract_statements(text, default_subject)
        subjects = [
            s.subject for s in changes if s.subject != default_subject and s.family != "activity"
        ]
        return subjects[0] if subjects else None
    parts: list[str] = []
    if statement.subject != default_subject:
        parts.append(statement.subject)
    slot = statement.slot.split(":", 1)[-1]
    if slot not in _SYNTHETIC_SLOTS:
        parts.append(slot.replace("|", " "))
    return " ".join(parts) or None


def _same_value(a: str, b: str) -> bool:
    """Equal word sequences, or equal but for a one-letter typo in one word."""
    if a == b:
        return True
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return False
    diffs = [(x, y) for x, y in zip(ta, tb, strict=True) if x != y]
    return len(diffs) == 1 and _same_word(*diffs[0])


def different_topic(new: Statement, old: Statement | None) -> bool:
    """True if ``old`` is about another subject or slot than ``new`` (typos forgiven).

    Such texts are never duplicates of each other, however alike they read. Note the asymmetry
    with :func:`conflicts`, which needs the exact subject: a typo may hide a duplicate, but it
    must not cause a supersession ("Dane" is not "Dave").
    """
    if old is None:
        return False
    return not (_same_value(new.subject, old.subject) and _same_value(new.slot, old.slot))


def _extends(longer: str, shorter: str) -> bool:
    """True if ``longer`` is ``shorter`` with more detail after it ("cairo with his wife")."""
    a, b = longer.split(), shorter.split()
    return len(a) > len(b) and a[: len(b)] == b


def _covers(value: str, replaced: str) -> bool:
    """True if ``replaced`` names ``value``: the same, any (``*``), or some of its words."""
    if replaced == ANY_VALUE or _same_value(value, replaced):
        return True
    return _stems(replaced) <= _stems(value)


def _same_slot(a: str, b: str) -> bool:
    if a == b:
        return True
    # A tool with a context ("tool:os@laptop") and one without ("tool:os") share the slot;
    # two different contexts do not ("VS Code for Python", "IntelliJ for Java").
    return a.startswith("tool:") and (a.split("@")[0] == b or b.split("@")[0] == a)


def _rivals(a: str, b: str) -> bool:
    """True if preference slots ``a`` and ``b`` are two one-word rivals ("tea", "coffee")."""
    kind = _PREFERENCE_KINDS.get(a.removeprefix("preference:"))
    return kind is not None and kind == _PREFERENCE_KINDS.get(b.removeprefix("preference:"))


def conflicts(new: Statement, old: Statement) -> bool:
    """True if ``new`` says something incompatible with ``old`` about the same subject.

    A value that only adds detail after the other ("lives in Cairo with his wife" against
    "lives in Cairo") is no conflict. An end statement (family ``end``) conflicts with the old
    statements of its families whose value it names ("sold her car", "left Stripe").
    """
    if new.subject != old.subject or _same_value(new.value, old.value):
        return False
    if _extends(new.value, old.value) or _extends(old.value, new.value):
        return False
    if new.family != END and old.family != END and _same_slot(new.slot, old.slot):
        return new.changed or new.family not in _MULTI_VALUED
    if new.changed and new.family == old.family == "preference" and _rivals(new.slot, old.slot):
        return True
    if old.family in new.replaces_families and any(_covers(old.value, r) for r in new.replaces):
        return True
    # "prefers Flask over Django" or "switched from Django to Flask" stored, "prefers Django"
    # arrives: the displaced value is back.
    return new.family in old.replaces_families and any(
        _covers(new.value, r) for r in old.replaces if r != ANY_VALUE
    )


def marks_change(text: str) -> bool:
    """True if ``text`` marks a change ("now", "switched", "no longer", "since", "moved"...)
    and no addition ("also", "too", "another")."""
    return bool(_CHANGE_MARKER.search(text)) and not _ADDITION.search(text)


def related(new: Statement, old: Statement) -> bool:
    """True if ``new`` is about ``old``'s subject and slot family (or ends it) and does not
    repeat its value: a change the caller may want settled elsewhere when :func:`conflicts`
    cannot tell ("prefers coffee in the morning" against "prefers tea")."""
    if new.subject != old.subject:
        return False
    if _same_slot(new.slot, old.slot) and _same_value(new.value, old.value):
        return False
    if new.family == END:
        return old.family in new.replaces_families
    return new.family == old.family or _same_slot(new.slot, old.slot)


def _live(entry: MemoryEntry, now: datetime | None) -> bool:
    if entry.superseded_by is not None or entry.retracted_at is not None:
        return False
    if now is None:
        return entry.valid_to is None
    return entry.is_live(now)


def find_contradiction(
    new_text: str,
    candidates: Sequence[MemoryEntry],
    *,
    now: datetime | None = None,
    default_subject: str = DEFAULT_SUBJECT,
    agent_id: str | None = None,
    category: MemoryCategory | None = None,
) -> Contradiction | None:
    """The most recent live candidate ``new_text`` contradicts, with both statements, or None.

    Candidates of another agent or category (when ``agent_id``/``category`` are given) and
    entries superseded, retracted, expired or closed at ``now`` are skipped. The most recent is
    the one with the latest ``created_at`` (then the greatest id).
    """
    news = extract_statements(new_text, default_subject)
    if not news:
        return None
    found: Contradiction | None = None
    for entry in candidates:
        if agent_id is not None and entry.agent_id != agent_id:
            continue
        if category is not None and entry.category is not category:
            continue
        if not _live(entry, now):
            continue
        pair = next(
            (
                (new, old)
                for new in news
                for old in extract_statements(entry.content, default_subject)
                if conflicts(new, old)
            ),
            None,
        )
        if pair is None:
            continue
        if found is None or (entry.created_at, entry.id) > (
            found.entry.created_at,
            found.entry.id,
        ):
            found = Contradiction(entry, *pair)
    return found


def detect_contradiction(
    new_text: str,
    candidates: Sequence[MemoryEntry],
    *,
    now: datetime | None = None,
    default_subject: str = DEFAULT_SUBJECT,
    agent_id: str | None = None,
    category: MemoryCategory | None = None,
) -> MemoryEntry | None:
    """The most recent live candidate that ``new_text`` contradicts, or None when unsure.

    See :func:`find_contradiction`; this returns only the entry.
    """
    match = find_contradiction(
        new_text,
        candidates,
        now=now,
        default_subject=default_subject,
        agent_id=agent_id,
        category=category,
    )
    return None if match is None else match.entry


# --- Changes of fact: clauses, slot families and end markers -------------------------------
#
# ``extract_statements`` reads a text as several clauses ("Ana lives in Lisbon and works as a
# data analyst"; "Chen left Stripe and joined Airbnb") and knows more slot families than
# ``extract_statement`` (which the dedup stage also uses and stays as it is): diet, car, commute,
# pets, tools, relationship, employer and role phrasings, habits; and *end* statements ("sold
# her car", "no longer vegan", "quit smoking", "retired") that displace an old value without
# stating a new one.

_MULTI_VALUED = frozenset({"uses", "car", "supports", "shift"})
# One-word preferences that are rivals of one another: "now prefers coffee" displaces "prefers
# tea" (with a change marker only, like the multi-valued families above).
_PREFERENCE_KINDS = {
    word: kind
    for kind, names in {
        "drink": "tea coffee espresso cocoa matcha",
        "pet": "cats dogs",
        "season": "summer winter spring autumn",
        "time": "mornings evenings nights",
    }.items()
    for word in names.split()
}
# An addition, not a replacement: "also uses Firefox for testing" marks no change.
_ADDITION = re.compile(r"\b(?:also|too|as\s+well|another|second|additionally)\b", re.IGNORECASE)
_CHANGE_MARKER = re.compile(
    r"\b(?:now|switched|changed|moved|migrated|these\s+days|nowadays|no\s+longer|any\s*more"
    r"|since|anymore|upgraded)\b",
    re.IGNORECASE,
)

END = "end"
"""The family of statements that only end an old value ("sold her car", "retired")."""

ANY_VALUE = "*"
"""In ``Statement.replaces``: any value of the families in ``replaces_families``."""

_DIETS = {
    "vegetarian": "vegetarian",
    "veggie": "vegetarian",
    "vegan": "vegan",
    "pescatarian": "pescatarian",
    "pescetarian": "pescatarian",
    "omnivore": "omnivore",
    "flexitarian": "flexitarian",
}
_OCCUPATIONS = frozenset(
    """
    analyst engineer developer programmer designer manager teacher headteacher nurse midwife
    doctor physician surgeon lawyer solicitor attorney paralegal accountant barista student
    writer author photographer recruiter planner consultant scientist researcher architect
    chef cook waiter waitress pharmacist dentist journalist artist musician director intern
    freelancer professor lecturer tutor mechanic electrician plumber pilot firefighter clerk
    cashier secretary assistant administrator ceo cto cfo founder therapist psychologist vet
    veterinarian librarian translator marketer specialist technician coordinator officer
    programmer copywriter carpenter builder farmer scientist economist banker trader
    paramedic caregiver carer hairdresser receptionist salesman saleswoman policeman
    policewoman soldier entrepreneur optician physiotherapist radiologist
    """.split()
)
_PETS = {
    "dog": "dog",
    "puppy": "dog",
    "labrador": "dog",
    "retriever": "dog",
    "poodle": "dog",
    "terrier": "dog",
    "spaniel": "dog",
    "beagle": "dog",
    "cat": "cat",
    "kitten": "cat",
    "rabbit": "rabbit",
    "hamster": "hamster",
    "parrot": "parrot",
}
_TOOL_KINDS = {
    "editor": "vim neovim emacs vscode vs+code sublime sublime+text intellij pycharm nano helix"
    " zed atom webstorm",
    "os": "windows linux macos mac+os ubuntu debian fedora arch+linux mint",
    "phone": "iphone pixel android galaxy oneplus",
    "browser": "chrome firefox safari edge brave opera chromium",
    "tracker": "jira linear trello asana youtrack",
}
_TOOL_OF = {
    tuple(name.split("+")): kind for kind, names in _TOOL_KINDS.items() for name in names.split()
}
# Contexts that only repeat the tool's kind ("Chrome as my browser", "Vim for editing code").
_GENERIC_CONTEXTS = {
    "editor": frozenset("editing edit code coding editor programming text".split()),
    "os": frozenset("os operating system".split()),
    "phone": frozenset("phone mobile".split()),
    "browser": frozenset("browser browsing web".split()),
    "tracker": frozenset("bugs issues tickets tracking".split()),
}
_PARTNER_SLOTS = frozenset(
    "partner spouse girlfriend boyfriend wife husband fiance fiancee".split()
)
_RESIDENCE_SLOTS = frozenset({"home city", "city", "current city", "location", "home town"})
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|spring|summer|autumn|fall|winter"
)
# Time and manner tails that date a change without changing its value.
_TAIL = re.compile(
    rf"(?:\s+(?:since\s+.+|after\s+.+|(?:in|during|by|over)\s+(?:early\s+|late\s+|mid\s+)?"
    rf"(?:the\s+)?(?:{_MONTHS}|\d{{4}})(?:\s+\d{{4}})?|last\s+\w+|this\s+(?:week|month|year)"
    r"|(?:a\s+few|a|\d+|two|three)\s+(?:days?|weeks?|months?|years?)\s+ago|yesterday"
    r"|today|recently|for\s+(?:a\s+)?new\s+job|(?:for\s+)?good))+$",
    re.IGNORECASE,
)
_AGAIN = re.compile(r"\s+again$", re.IGNORECASE)
_VERB_START = frozenset(
    """
    i we is am are has have was got gets left leaves joined joins moved moves lives live
    works work commutes commute drives drive takes take eats eat became become retired
    graduated quit quits sold sells switched switches started starts went goes gave uses use
    runs run cycles walks bikes prefers nolonger stopped broke split relocated
    """.split()
)
_CLAUSE_KEEP = re.compile(r"(,\s*(?:and\s+|so\s+)?|\s+(?:and|so)\s+)", re.IGNORECASE)
_WITH_PARTNER = re.compile(
    r"^([^\W\d_][\w.-]*) and (?:her|his|their) (?:husband|wife|partner|family|kids|children"
    r"|boyfriend|girlfriend|fiance|fiancee)\b",
    re.IGNORECASE,
)
_POSS = r"(?:(?:my|our|his|her|their|the)\s+)"
_DIET_WORDS = "|".join(_DIETS)


# The change rules take the shortest subject that lets the rest match ("Marco started working
# at": the subject is "Marco", not "Marco started").
_S_LAZY = rf"(?:(?P<subj>(?:the\s+)?{_WORD}(?:\s+{_WORD}){{0,2}}?)\s+)??"
# A subject that must be there and look like one: "I", "the user" or a capitalised name. Rules
# whose verb is any word need it ("Lena plays tennis": the subject is not "Lena plays").
_SUBJ_STRICT = r"(?P<subj>(?:[Tt]he\s+)?[Uu]ser|I|[A-Z][\w.-]*)"


def _rx(body: str) -> re.Pattern[str]:
    return re.compile(rf"^{_S_LAZY}{_HAVE}{body}$", re.IGNORECASE)


_R_DIET_IS = _rx(
    rf"(?:is|am|are|was|went|gone|turned|became|become|be)\s+(?:a\s+|an\s+)?"
    rf"(?:fully\s+|completely\s+|strict\s+|full\s+)?(?P<val>{_DIET_WORDS})"
)
_R_DIET_PLAN = _rx(
    r"(?:follows?|is\s+on|am\s+on|are\s+on|on|went\s+on|gone\s+on|switched\s+to|started)\s+"
    r"(?:a\s+|an\s+)?(?:strict\s+)?(?P<val>[^\W\d_]+(?:\s+[^\W\d_]+)?)\s+diet"
)
_R_EATS = _rx(r"(?:eats?|(?:started|begun|began)\s+eating|is\s+eating)\s+(?P<val>meat|fish)")
_R_STOP_EATING = _rx(r"(?:stopped|quit|gave\s+up|given\s+up)\s+eating\s+(?P<val>meat|fish)")
_R_NO_LONGER_IS = _rx(r"(?:is|am|are)\s+nolonger\s+(?:a\s+|an\s+)?(?P<val>.+)")
_R_DRIVES = _rx(r"(?:drives?|is\s+driving)\s+(?:a|an)\s+(?P<val>.+)")
_R_OWNS = _rx(r"owns?\s+(?:a|an|one)\s+(?P<val>.+)")
_R_COMMUTE_BY = _rx(r"(?:commutes?|goes|go|gets|get|travels?)\s+(?:to\s+work\s+)?by\s+(?P<val>.+)")
_R_COMMUTE_TAKES = _rx(
    r"(?:takes?|is\s+taking)\s+(?:the\s+|a\s+)?(?P<val>bus|train|tram|subway|metro|tube|ferry)"
    r"\s+(?:to\s+work|everywhere)"
)
_R_COMMUTE_VERB = _rx(r"(?P<val>drives?|cycles?|bikes?|walks?|runs?)\s+to\s+work")
_R_END_THING = _rx(
    rf"(?:sold|got\s+rid\s+of|gotten\s+rid\s+of|gave\s+up|given\s+up|gave\s+away|scrapped)\s+"
    rf"{_POSS}?(?P<val>[^\W\d_][\w-]*(?:\s+[^\W\d_][\w-]*)?)(?:\s+(?:away|to\s+.+))?"
)
_R_GAVE_TO = _rx(rf"gave\s+{_POSS}(?P<val>[^\W\d_]+)\s+(?:away|to\s+.+)")
_R_PET = _rx(
    r"(?:has|have|owns?)\s+(?:a|an|one|two|three|\d+)\s+(?P<val>[^\W\d_]+)"
    r"(?:\s+(?:named|called)\s+(?P<name>[^\W\d_]+))?"
)
_R_PET_DIED = re.compile(
    rf"^(?P<subj>{_NAME})'s\s+(?P<val>[^\W\d_]+)(?:\s+(?P<name>[^\W\d_]+))?\s+"
    r"(?:died|passed\s+away|was\s+put\s+down)$",
    re.IGNORECASE,
)
_R_NO_LONGER_HAS = _rx(r"nolonger\s+(?:has|have|owns?)\s+(?:a\s+|an\s+|any\s+)?(?P<val>.+)")
_R_JOINED = _rx(
    r"(?P<verb>(?:started|began)\s+(?:working|a\s+new\s+job)\s+(?:at|for)|joined"
    r"|got\s+(?:a\s+)?(?:new\s+)?job\s+(?:at|with)|(?:was\s+)?hired\s+by|works?\s+at"
    r"|works?\s+for|working\s+(?:at|for))\s+(?P<val>.+)"
)
_R_LEFT = _rx(r"(?:left|quit|resigned\s+from|quit\s+(?:her|his|their|my)\s+job\s+at)\s+(?P<val>.+)")
_R_RETIRED = _rx(r"(?:retired|is\s+retired|am\s+retired)")
_R_NO_LONGER_WORKS = _rx(r"nolonger\s+works?\s+(?:at|for)\s+(?P<val>.+)")
_R_ROLE = _rx(
    r"(?:is|am|are|became|become|(?:was\s+|got\s+)?promoted\s+to|got\s+(?:a\s+)?(?:new\s+)?job\s+as"
    r"|(?:started\s+)?working\s+as|works?\s+as)\s+(?:a\s+|an\s+)?(?P<val>[^\W\d_][\w\s-]*?)"
    r"(?:\s+(?:at|for|with)\s+(?P<org>.+))?"
)
_R_GRADUATED = _rx(r"graduated(?:\s+from\s+.+)?")
_R_REL = re.compile(
    rf"^(?P<subj>{_NAME}?)(?:\s+and\s+(?P<other>[^\W\d_][\w-]*))?\s+{_HAVE}"
    r"(?:got|gotten|is|am|are|just\s+got|became)\s+(?P<val>married|divorced|engaged|separated"
    r"|single|widowed)(?:\s+to\s+(?P<partner>.+))?$",
    re.IGNORECASE,
)
_R_DATING = _rx(r"(?:is|am|are)\s+(?:dating|seeing|going\s+out\s+with)\s+(?P<partner>.+)")
_R_HAS_PARTNER = _rx(
    r"(?:has|have)\s+(?:a\s+)?(?:girlfriend|boyfriend|partner|wife|husband|fiance|fiancee)"
    r"(?:\s+(?:called|named))?\s+(?P<partner>.+)"
)
_R_BROKE_UP = re.compile(
    rf"^(?P<subj>{_NAME}?)(?:\s+and\s+(?P<other>[^\W\d_][\w-]*))?\s+{_HAVE}"
    r"(?:broke|broken|split|splitted)\s+up(?:\s+with\s+(?P<partner>.+))?$",
    re.IGNORECASE,
)
_R_RUNS = _rx(r"(?:runs?|is\s+running)\s+(?P<val>.+?)(?:\s+on\s+(?P<ctx>.+))?")
_R_SWITCH_TOOL = _rx(
    r"(?:switched|changed|migrated|moved|went)\s+(?:over\s+)?to\s+(?:a\s+|an\s+)?(?P<val>.+)"
)
# "works night shifts at the hospital", "switched to day shifts": the shift pattern, one slot
# (multi-valued: people work several shifts, so only a marked change displaces the old one).
_R_SHIFT = _rx(
    r"(?:works?|is\s+working|working|(?:is|am|are)\s+on|(?:switched|changed|moved|went)\s+"
    r"(?:over\s+|back\s+)?to)\s+(?:the\s+|a\s+)?(?P<val>night|day|morning|evening|afternoon"
    r"|late|early|graveyard|weekend)\s+shifts?(?:\s+(?:at|in|for|on)\s+.+)?"
)
_JOB_AT = re.compile(r"(?:her|his|their|my|our)\s+job\s+(?:at|with)\s+(?P<org>.+)", re.IGNORECASE)
_R_TRACKS = _rx(r"tracks?\s+[^\W\d_]+\s+(?:in|with)\s+(?P<val>.+)")
_R_MOVED_INTO = _rx(
    r"(?:moved|relocated)\s+(?:in)?to\s+(?:a|an|my|our|his|her|their)\s+(?:[\w-]+\s+){0,4}?"
    r"in\s+(?P<val>.+)"
)
_R_STOP_DOING = _rx(
    r"(?:quit|stopped|gave\s+up|given\s+up)\s+(?P<val>[^\W\d_]+ing(?:\s+[^\W\d_]+){0,2})"
)
_R_NO_LONGER_DOES = _rx(r"nolonger\s+(?P<val>[^\W\d_]+(?:\s+[^\W\d_]+){0,3})")
_R_GAVE_UP = _rx(r"(?:gave|given)\s+up\s+(?P<val>[^\W\d_]+(?:\s+[^\W\d_]+){0,2})")
_R_LEFT_GROUP = _rx(r"left\s+(?:the|my|our|her|his|their)\s+(?P<val>.+)")
_R_ACTIVITY = re.compile(
    rf"^{_SUBJ_STRICT}\s+(?P<verb>[a-z]+)\s+(?:(?:in|at|with)\s+)?"
    r"(?P<val>[^\W\d_]+(?:\s+[^\W\d_]+){0,2}?)(?:\s+(?:every|each|on|at|most)\b.*)?$"
)
_R_ACTIVITY_BARE = re.compile(
    rf"^{_SUBJ_STRICT}\s+(?P<verb>smokes|smoke|vapes|vape|drinks|drink|gambles|gamble)$"
)
_R_CAR_IS = re.compile(
    rf"^(?:(?P<owner>{_NAME})'s|my|our)\s+car\s+is\s+(?:a\s+|an\s+)?(?P<val>.+)$",
    re.IGNORECASE,
)
_R_LIVES_WITH = _rx(r"(?:lives?|living)\s+with\s+(?:[\w-]+\s+){1,4}?in\s+(?P<val>.+)")
_R_NO_LONGER_LIVES = _rx(r"nolonger\s+(?:lives?|living|based|resides?)\s+in\s+(?P<val>.+)")
_R_SUPPORTS = _rx(r"supports?\s+(?P<val>.+)")
_R_CHANGED_ATTR = _rx(
    r"(?:changed|updated)\s+(?:her|his|their|my|our)\s+(?P<slot>[^\W\d_]+(?:\s+[^\W\d_]+)?)"
    r"\s+to\s+(?P<val>.+)"
)
# Words that make "is ... a midwife" a plan or an aim, not a role.
_NOT_A_ROLE = frozenset(
    "to become becoming studying training learning hoping planning trying going aiming".split()
)
_PAST = frozenset(
    """
    went ate took saw had did made got left ran rode flew spent bought drove swam sang met
    wrote read came gave sold found told thought caught brought taught won lost paid sent
    """.split()
)
_AUX = frozenset(
    """
    is am are was were has have had be been got get does do did will can may must shall
    """.split()
)


def _strip_determiner(raw: str) -> str:
    head, _, rest = raw.strip().partition(" ")
    return rest if rest and head.lower() in _DETERMINERS else raw


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "e", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _stems(value: str) -> set[str]:
    return {_stem(w) for w in value.split()}


def _tool_kind(value: str) -> str | None:
    toks = tuple(value.split())
    for n in (2, 1):
        for i in range(len(toks) - n + 1):
            kind = _TOOL_OF.get(toks[i : i + n])
            if kind is not None:
                return kind
    return None


def _end(subject: str | None, what: str | None, families: str, pattern: str) -> Statement | None:
    if subject is None or what is None:
        return None
    return Statement(
        subject,
        f"{END}:{families}:{what}",
        "none",
        END,
        pattern,
        replaces=frozenset({what}),
        replaces_families=frozenset(families.split()),
    )


def _tool(
    subject: str | None, value: str | None, ctx: str | None, pattern: str
) -> Statement | None:
    if subject is None or value is None:
        return None
    kind = _tool_kind(value)
    if kind is None:
        return None
    context = _value(ctx) if ctx else None
    if context is not None:
        toks = [t for t in context.split() if t not in _DETERMINERS]
        context = " ".join(toks) if toks and not set(toks) & _GENERIC_CONTEXTS[kind] else None
    slot = f"tool:{kind}" + (f"@{context}" if context else "")
    return Statement(subject, slot, value, "uses", pattern)


def _extract_change(body: str, default: str) -> list[Statement | None] | None:
    """Statements of one clause by the change-of-fact rules; None when none applies."""

    def subj(m: re.Match[str]) -> str | None:
        return _subject(m.group("subj"), default)

    if m := _R_PET_DIED.match(body):
        kind = _PETS.get(m.group("val").lower())
        if kind is None:
            return None
        name = m.group("name")
        return [_end(subj(m), _value(name) if name else kind, "pet", "pet died")]
    if m := _R_NO_LONGER_IS.match(body):
        val = _value(m.group("val"))
        if val in _DIETS:
            return [_end(subj(m), _DIETS[val], "diet", "no longer")]
        if val is not None and _head(val) in _OCCUPATIONS:
            return [_end(subj(m), val, "role", "no longer")]
        return [_end(subj(m), val, "status", "no longer")]
    if m := _R_NO_LONGER_WORKS.match(body):
        return [_end(subj(m), _value(m.group("val")), "employer", "no longer works")]
    if m := _R_NO_LONGER_HAS.match(body):
        val = _value(m.group("val"))
        if val is not None and val in _PETS:
            return [_end(subj(m), _PETS[val], "pet", "no longer has")]
        return [_end(subj(m), val, "pet owns car", "no longer has")]
    if m := _R_NO_LONGER_DOES.match(body):
        val = _value(m.group("val"))
        return [_end(subj(m), val, "activity", "no longer")]
    if m := _R_DIET_IS.match(body):
        return [_statement(subj(m), "diet", _DIETS[m.group("val").lower()], "diet", "diet")]
    if m := _R_DIET_PLAN.match(body):
        val = _value(m.group("val"))
        if val in _DIETS:
            return [_statement(subj(m), "diet", _DIETS[val], "diet", "diet")]
        return [_statement(subj(m), "diet plan", val, "diet", "diet plan")]
    if m := _R_EATS.match(body):
        if m.group("val").lower() == "meat":
            return [_statement(subj(m), "diet", "omnivore", "diet", "eats meat")]
        s = subj(m)
        return [
            None
            if s is None
            else Statement(
                s,
                "diet:eats fish",
                "eats fish",
                "diet",
                "eats fish",
                replaces=frozenset({"vegan", "vegetarian"}),
                replaces_families=frozenset({"diet"}),
            )
        ]
    if m := _R_STOP_EATING.match(body):
        if m.group("val").lower() == "meat":
            return [_end(subj(m), "omnivore", "diet", "stopped eating")]
        return [_end(subj(m), "pescatarian", "diet", "stopped eating")]
    if m := _R_DRIVES.match(body):
        return [_statement(subj(m), "car", _value(m.group("val")), "car", "drives")]
    if m := _R_COMMUTE_BY.match(body):
        return [_statement(subj(m), "commute", _commute(m.group("val")), "commute", "commutes")]
    if m := _R_COMMUTE_TAKES.match(body):
        return [_statement(subj(m), "commute", _commute(m.group("val")), "commute", "takes")]
    if m := _R_COMMUTE_VERB.match(body):
        return [_statement(subj(m), "commute", _commute(m.group("val")), "commute", "to work")]
    if m := _R_GAVE_TO.match(body):
        return _ended_thing(subj(m), m.group("val"))
    if m := _R_END_THING.match(body):
        raw = m.group("val")
        if raw.lower().endswith("ing") or (" " not in raw and raw.lower() in {"job", "work"}):
            if raw.lower() in {"job", "work"}:
                return [_end(subj(m), ANY_VALUE, "employer", "quit job")]
            return [_end(subj(m), _value(raw), "activity", "gave up")]
        return _ended_thing(subj(m), raw)
    if m := _R_CAR_IS.match(body):
        owner = m.group("owner")
        return [
            _statement(
                _subject(owner, default) if owner else default,
                "car",
                _value(m.group("val")),
                "car",
                "car is",
            )
        ]
    if m := _R_NO_LONGER_LIVES.match(body):
        return [_end(subj(m), _value(m.group("val")), "residence", "no longer lives")]
    if (m := _R_LIVES_WITH.match(body)) and _proper(m.group("val"), body):
        return [_statement(subj(m), "residence", _value(m.group("val")), "residence", "lives")]
    if (m := _R_SUPPORTS.match(body)) and _proper(m.group("val"), body):
        return [_statement(subj(m), "supports", _value(m.group("val")), "supports", "supports")]
    if (m := _R_CHANGED_ATTR.match(body)) and (slot := _slot(m.group("slot"))):
        return [_statement(subj(m), slot, _value(m.group("val")), "attribute", "changed")]
    if (m := _R_PET.match(body)) and (
        kind := _PETS.get(m.group("val").lower().removesuffix("s"))
        or _PETS.get(m.group("val").lower())
    ):
        species = m.group("val").lower()
        name = m.group("name")
        parts = [kind, species.removesuffix("s")] + ([name.lower()] if name else [])
        value = " ".join(dict.fromkeys(parts))
        return [_statement(subj(m), f"pet:{value}", value, "pet", "has pet")]
    if m := _R_OWNS.match(body):
        val = _value(m.group("val"))
        return [_statement(subj(m), f"owns:{val}", val, "owns", "owns")]
    if m := _R_RETIRED.match(body):
        s = subj(m)
        return [_end(s, ANY_VALUE, "employer", "retired"), _end(s, ANY_VALUE, "role", "retired")]
    if m := _R_GRADUATED.match(body):
        return [_end(subj(m), "student", "role", "graduated")]
    if m := _R_REL.match(body):
        s = _subject(m.group("subj") or None, default)
        if m.group("subj") == "":
            return None
        return [_statement(s, "relationship", m.group("val").lower(), "status", "relationship")]
    if m := _R_DATING.match(body):
        s = subj(m)
        partner = _value(m.group("partner"))
        return [
            _statement(s, "relationship", "dating", "status", "dating"),
            _statement(s, "partner", partner, "partner", "dating"),
        ]
    if m := _R_HAS_PARTNER.match(body):
        s = subj(m)
        return [
            _statement(s, "relationship", "in relationship", "status", "has partner"),
            _statement(s, "partner", _value(m.group("partner")), "partner", "has partner"),
        ]
    if m := _R_BROKE_UP.match(body):
        s = _subject(m.group("subj") or None, default)
        partner = m.group("partner") or m.group("other")
        if not m.group("subj") or partner is None:
            return None
        return [_end(s, _value(partner), "partner", "broke up")]
    if m := _R_TRACKS.match(body):
        return [_tool(subj(m), _value(m.group("val")), None, "tracks in")]
    if m := _R_RUNS.match(body):
        return [_tool(subj(m), _value(m.group("val")), m.group("ctx"), "runs")]
    if m := _R_SHIFT.match(body):
        return [_statement(subj(m), "shift", m.group("val").lower(), "shift", "shift")]
    if m := _R_SWITCH_TOOL.match(body):
        val = _value(m.group("val"))
        if val is not None and _tool_kind(val) is not None:
            return [_tool(subj(m), val, None, "switched to")]
    if m := _R_MOVED_INTO.match(body):
        if not _proper(m.group("val"), body):
            return None
        return [_statement(subj(m), "residence", _value(m.group("val")), "residence", "moved")]
    if m := _R_LEFT.match(body):
        raw = m.group("val")
        s = subj(m)
        if raw.lower().endswith("ing"):
            return [_end(s, _value(raw), "activity", "quit")]
        if re.fullmatch(r"(?:her|his|their|my|our)\s+job", raw, re.IGNORECASE):
            return [_end(s, ANY_VALUE, "employer", "left job")]
        if at := _JOB_AT.fullmatch(raw):
            # "quit my job at the bakery": ends the job it names, by name or description.
            return [_end(s, _value(_strip_determiner(at.group("org"))), "employer", "left job at")]
        if _proper(raw, body):
            return [_end(s, _value(raw), "employer", "left")]
    if m := _R_LEFT_GROUP.match(body):
        return [_end(subj(m), _value(m.group("val")), "activity member", "left")]
    if m := _R_JOINED.match(body):
        raw = m.group("val")
        verb = m.group("verb").lower()
        role: Statement | None = None
        as_role = re.match(r"^(?P<org>.+?)\s+as\s+(?:a\s+|an\s+)?(?P<role>.+)$", raw)
        s = subj(m)
        if as_role:
            raw = as_role.group("org")
            role = _statement(s, "role", _value(as_role.group("role")), "role", "works as")
        if _proper(raw, body) or (verb.startswith("got") and raw.split()[0].lower() in "a an"):
            found = [_statement(s, "employer", _value(raw), "employer", "works at")]
            return [*found, role] if role else found
        if role is None and verb.startswith("work") and raw.split()[0].lower() in _DETERMINERS:
            # "works at a bakery": a workplace described, not named. Its slot is its own, so
            # only an end statement that names it ("quit my job at the bakery", "left her job",
            # "retired") displaces it; another workplace or employer never does.
            place = _value(_strip_determiner(raw))
            if place is not None and len(place.split()) <= 3:
                return [_statement(s, f"workplace:{place}", place, "employer", "works at place")]
        return [role] if role else None
    if m := _R_ROLE.match(body):
        val = _value(m.group("val"))
        if val is None or _head(val) not in _OCCUPATIONS or set(val.split()) & _NOT_A_ROLE:
            return None
        s = subj(m)
        found = [_statement(s, "role", val, "role", "role")]
        org = m.group("org")
        if org and _proper(org, body):
            found.append(_statement(s, "employer", _value(org), "employer", "role at"))
        return found
    if m := _R_STOP_DOING.match(body):
        return [_end(subj(m), _value(m.group("val")), "activity", "stopped")]
    if m := _R_GAVE_UP.match(body):
        return [_end(subj(m), _value(m.group("val")), "activity", "gave up")]
    return None


def _commute(raw: str) -> str | None:
    val = _value(raw)
    if val is None:
        return None
    first = val.split()[0]
    mapped = {"drive": "car", "drives": "car", "driving": "car", "cycles": "bike"}
    mapped |= {"cycle": "bike", "bikes": "bike", "walks": "walk", "runs": "run"}
    return mapped.get(first, val) if " " not in val else val


def _ended_thing(subject: str | None, raw: str) -> list[Statement | None]:
    val = _value(raw)
    if val in {"car", "vehicle"}:
        return [
            _end(subject, ANY_VALUE, "car", "sold car"),
            _end(subject, "car", "commute", "sold car"),
        ]
    if val is not None and _PETS.get(val.removesuffix("s")):
        return [_end(subject, _PETS[val.removesuffix("s")], "pet", "gave away")]
    return [_end(subject, val, "owns car pet activity", "got rid of")]


def _activity(body: str, default: str) -> Statement | None:
    """A habit such as "Lena smokes" or "plays tennis every Saturday", for end statements only.

    Its slot is unique to its words, so only an end statement ("quit smoking", "no longer
    plays tennis") or the same habit can touch it.
    """
    m = _R_ACTIVITY_BARE.match(body)
    if m:
        verb = m.group("verb").lower()
        subject = _subject(m.group("subj"), default)
        return _statement(subject, f"activity:{verb}", verb, "activity", "habit")
    m = _R_ACTIVITY.match(body)
    if not m:
        return None
    verb = m.group("verb").lower()
    if verb in _AUX or verb in _VERB_START - {"drink", "drinks", "play", "plays"}:
        return None
    if verb.endswith("ed") or verb in _PAST:
        return None  # "biked to the beach on Saturday": an event, not a habit
    opener = m.group("subj").lower()
    if opener in _VERB_START - {"i", "we"} or opener.endswith("ed"):
        return None  # "Went for a run": the sentence opens with its verb, no subject
    value = _value(f"{verb} {m.group('val')}")
    subject = _subject(m.group("subj"), default)
    if value is None:
        return None
    return _statement(subject, f"activity:{value}", value, "activity", "habit")


def _clauses(body: str) -> list[str]:
    """``body`` split where a conjunction or comma starts a new clause, subjects carried over.

    Only a piece that opens with a verb or a subject ("... and joined Airbnb", "..., I eat")
    starts a clause; any other stays with the clause before it ("tea and coffee" stays one
    value, which no rule accepts). A piece opened by "he", "she" or "they" takes the first
    clause's subject when that is a name.
    """
    parts = _CLAUSE_KEEP.split(body)
    first = parts[0]
    m = re.match(rf"^{_SUBJ_STRICT}\s+", first)
    subject = m.group("subj") if m else ""
    out = [first]
    for sep, piece in zip(parts[1::2], parts[2::2], strict=True):
        head = piece.split()[0].lower() if piece.split() else ""
        if head in {"he", "she", "they"} and subject and subject[0].isupper() and subject != "I":
            out.append(f"{subject} {piece.split(maxsplit=1)[1] if ' ' in piece else ''}")
        elif head not in _VERB_START:
            out[-1] = f"{out[-1]}{sep}{piece}"
        elif head in {"i", "we"} or not subject:
            out.append(piece)
        else:
            out.append(f"{subject} {piece}")
    return out


def _prepare_change(text: str) -> str | None:
    body = strip_filler(text).replace("’", "'").strip()
    if body.endswith("?"):
        return None
    body = re.sub(r"\bno\s+longer\b|\bnot\s+any\s*more\b", "nolonger", body, flags=re.IGNORECASE)
    body = re.sub(r"\bnolonger\s+(\w+)\s+any\s*more\b", r"nolonger \1", body)
    # "doesn't live in Leeds anymore": the same as "no longer lives in Leeds".
    body = re.sub(
        r"\b(?:does|do)(?:n't|nt|\s+not)\s+([^\W\d_]+)\s+([^,.;]*?)\s*\bany\s*more\b",
        r"nolonger \1 \2",
        body,
        flags=re.IGNORECASE,
    )
    prepared = _prepare(body)
    if prepared is None:
        return None
    return _WITH_PARTNER.sub(r"\1", prepared)


def _clause_statements(clause: str, default: str) -> list[Statement]:
    clause = _TAIL.sub("", clause).strip(" ,")
    # "again" only reads as a tail for the change rules ("eats meat again"); the older rules
    # keep it ("prefers dark mode again" is its own value there, as before).
    bare = _TAIL.sub("", _AGAIN.sub("", clause)).strip(" ,")
    if not bare:
        return []
    found = _extract_change(bare, default)
    if found is None:
        if "nolonger" in clause.lower().split():
            return []
        base = _extract(clause, default)
        found = [_retool(base, clause)] if base is not None else [_activity(clause, default)]
    return [s for s in found if s is not None]


def _retool(statement: Statement, clause: str) -> Statement | None:
    """A "uses", "moved to" or "editor is" statement about a known tool, as a tool slot."""
    kind = _tool_kind(statement.value)
    if statement.family == "attribute" and statement.slot.startswith(("new ", "latest ")):
        # "Ana's new phone number is ...": the slot is the phone number.
        statement = replace(statement, slot=statement.slot.split(maxsplit=1)[1])
    if kind is None:
        if statement.family == "attribute" and statement.slot in _PARTNER_SLOTS:
            return Statement(statement.subject, "partner", statement.value, "partner", "is")
        if statement.family == "attribute" and statement.slot in _RESIDENCE_SLOTS:
            return Statement(statement.subject, "residence", statement.value, "residence", "is")
        return statement
    if statement.family == "uses" and statement.pattern == "switched from":
        return Statement(
            statement.subject,
            f"tool:{kind}",
            statement.value,
            "uses",
            statement.pattern,
            statement.replaces,
            statement.replaces_families,
        )
    if statement.family in {"uses", "residence"} or (
        statement.family == "attribute" and statement.slot.split()[-1] in _GENERIC_CONTEXTS[kind]
    ):
        ctx = statement.slot.split(":", 1)[1] if statement.slot.startswith("uses:") else None
        if ctx == _head(statement.value) or ctx == statement.value:
            ctx = None
        m = re.search(r"\s+on\s+(?P<ctx>.+)$", statement.value)
        value = statement.value
        if m:
            value, ctx = value[: m.start()], m.group("ctx")
        return _tool(statement.subject, value, ctx, statement.pattern)
    return statement


@lru_cache(maxsize=65_536)
def extract_statements(text: str, default_subject: str = DEFAULT_SUBJECT) -> tuple[Statement, ...]:
    """Every (subject, slot, value) statement of ``text``'s clauses, or () when unsure.

    Beyond :func:`extract_statement`: clauses joined by "and" or commas ("lives in Lisbon and
    works as a data analyst") are read one by one, time tails ("in June 2025", "since
    November", "last month", "again") are dropped, and the families of the change rules apply
    (diet, car, commute, pets, tools, relationship, employer, role, habits), with end
    statements ("sold her car", "no longer vegan", "retired", "quit smoking").
    """
    body = _prepare_change(text)
    if body is None:
        return ()
    found: list[Statement] = []
    for clause in _clauses(body):
        found.extend(_clause_statements(clause, default_subject))
    if _CHANGE_MARKER.search(text) and not _ADDITION.search(text):
        found = [replace(s, changed=True) for s in found]
    return tuple(found)
