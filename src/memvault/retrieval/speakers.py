"""Who said a memory, and whether the query is about them (pure functions, English).

A conversation turn has a speaker: ``metadata["name"]`` or ``metadata["role"]`` (what
:meth:`~memvault.AsyncMemory.add_messages` records), or a ``"Speaker: ..."`` prefix when a
transcript was stored as text (not a label such as ``"Note: ..."``). A question that names one
party ("What did Caroline research?") or speaks for the user ("What did I buy?", asked by the
user about themselves) is about what that party said: turns by the other party mention the same
things while rarely holding the answer. Ranking's ``addressed`` feature is 0 for a turn whose
speaker the query does not name, when it names a speaker of some other candidate; 1 otherwise (a
fact without a speaker, or a query that names no one, says nothing either way).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvault.models import MemoryEntry

__all__ = ["addressed", "entry_speaker"]

# "Caroline: ...", "user: ...", "Dr Ruiz: ..." - at most three words before the colon.
_PREFIX = re.compile(r"\s*([A-Za-z][\w'.-]{0,30}(?: [A-Z][\w'.-]{0,30}){0,2})\s*:\s")
_PREFIX_SPAN = 100
# Labels that head a note rather than name who spoke ("Note: ...", "TODO: ..."): no speaker.
_LABELS = frozenset(
    "note notes todo update summary fyi ps re fw fwd warning error tip reminder important "
    "decision context status result results goal task lesson rule fact example source subject "
    "title topic action next".split()
)
# Roles of a chat: the user asks in the first person, and calls the assistant "you".
_FIRST_PERSON_ROLES = frozenset({"user", "human"})
_SECOND_PERSON_ROLES = frozenset({"assistant", "ai", "bot"})
_FIRST_PERSON = re.compile(r"\b(i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\W_]+")


def entry_speaker(entry: MemoryEntry) -> str | None:
    """The speaker of ``entry`` (lower case), or None when nothing says who said it."""
    extra = entry.metadata.extra
    for key in ("name", "role"):
        value = extra.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    match = _PREFIX.match(entry.content[:_PREFIX_SPAN])
    if match is None:
        return None
    speaker = match.group(1).lower()
    return None if speaker.split()[0] in _LABELS else speaker


def _named(speaker: str, query: str, query_words: frozenset[str]) -> bool:
    if speaker in _FIRST_PERSON_ROLES:
        return _FIRST_PERSON.search(query) is not None
    if speaker in _SECOND_PERSON_ROLES:
        return _SECOND_PERSON.search(query) is not None
    return any(len(w) >= 3 and w in query_words for w in _WORD.findall(speaker))


def addressed(query: str, speakers: Sequence[str | None]) -> list[float]:
    """Per candidate (its speaker, or None): 0.0 when the query names a speaker of some
    candidate and not this one's, else 1.0."""
    words = frozenset(w.lower() for w in _WORD.findall(query))
    verdict = {s: _named(s, query, words) for s in set(speakers) if s is not None}
    if not any(verdict.values()):
        return [1.0] * len(speakers)
    return [1.0 if s is None or verdict[s] else 0.0 for s in speakers]
