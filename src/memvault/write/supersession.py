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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
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
    "DEFAULT_SUBJECT",
    "SLOT_MODIFIERS",
    "SLOT_NOUNS",
    "Contradiction",
    "Statement",
    "conflicts",
    "contradiction_query",
    "detect_contradiction",
    "different_topic",
    "extract_statement",
    "find_contradiction",
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
    ``pattern`` names the pattern that matched (for explanations).
    """

    subject: str
    slot: str
    value: str
    family: str
    pattern: str
    replaces: frozenset[str] = frozenset()
    replaces_families: frozenset[str] = frozenset()


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
        return None
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


def conflicts(new: Statement, old: Statement) -> bool:
    """True if ``new`` says something incompatible with ``old`` about the same subject."""
    if new.subject != old.subject or _same_value(new.value, old.value):
        return False
    if new.slot == old.slot:
        return True
    if old.family in new.replaces_families and any(_same_value(old.value, r) for r in new.replaces):
        return True
    # "prefers Flask over Django" or "switched from Django to Flask" stored, "prefers Django"
    # arrives: the displaced value is back.
    return new.family in old.replaces_families and any(
        _same_value(new.value, r) for r in old.replaces
    )


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
    new = extract_statement(new_text, default_subject)
    if new is None:
        return None
    found: Contradiction | None = None
    for entry in candidates:
        if agent_id is not None and entry.agent_id != agent_id:
            continue
        if category is not None and entry.category is not category:
            continue
        if not _live(entry, now):
            continue
        old = extract_statement(entry.content, default_subject)
        if old is None or not conflicts(new, old):
            continue
        if found is None or (entry.created_at, entry.id) > (
            found.entry.created_at,
            found.entry.id,
        ):
            found = Contradiction(entry, new, old)
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
