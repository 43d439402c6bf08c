"""Conversation threads: which stored entries belong to one conversation.

Pure functions over :class:`MemoryEntry`. An entry's thread comes from its metadata
(``session``, ``thread_id`` ...); entries without one are grouped by time.
"""

from __future__ import annotations

from datetime import timedelta

from memvault.models import CandidateSet, MemoryCategory, MemoryEntry

__all__ = [
    "SOLO_THREAD",
    "THREAD_GAP",
    "THREAD_KEYS",
    "neighbour_anchors",
    "same_thread",
    "thread_id",
    "thread_key",
]


THREAD_KEYS = (
    "session",
    "session_id",
    "thread",
    "thread_id",
    "conversation_id",
    "chunk_group",
)
"""``metadata`` keys that name the conversation (or the chunked text) an entry belongs to."""

SOLO_THREAD = "entry="
"""How :func:`thread_id` begins for an entry that belongs to no conversation (a thread of its
own)."""

THREAD_GAP = timedelta(hours=1)
"""Without a thread key, entries stored this close together count as one conversation."""


def thread_key(entry: MemoryEntry) -> str | None:
    """The conversation thread an entry belongs to, from its metadata, or None."""
    extra = entry.metadata.extra
    if not extra:  # most stored facts carry no metadata; ranking asks once per candidate
        return None
    for key in THREAD_KEYS:
        value = extra.get(key)
        if value is not None:
            return f"{key}={value}"
    return None


def same_thread(a: MemoryEntry, b: MemoryEntry) -> bool:
    """True if two entries stored one after the other belong to one conversation thread.

    Same category, and the same thread key when either has one. Without thread keys, only
    episodic entries (conversation turns, events) created within :data:`THREAD_GAP` of each
    other count as one thread: facts stored in one batch are separate statements, not a
    conversation, and must not lend each other relevance.
    """
    if a.category is not b.category:
        return False
    ta, tb = thread_key(a), thread_key(b)
    if ta is not None or tb is not None:
        return ta == tb
    if a.category is not MemoryCategory.EPISODIC:
        return False
    return abs(a.created_at - b.created_at) <= THREAD_GAP


def thread_id(entry: MemoryEntry) -> str:
    """A grouping key: the thread key; else, for episodic entries, the hour of creation.

    Other entries without a thread key form a group of their own (their id).
    """
    key = thread_key(entry)
    if key is not None:
        return key
    if entry.category is not MemoryCategory.EPISODIC:
        return f"{SOLO_THREAD}{entry.id}"
    # An integer hour bucket: strftime is ten times slower and this runs per candidate.
    return f"episodic@{int(entry.created_at.timestamp()) // 3600}"


def neighbour_anchors(cands: CandidateSet, window: int) -> list[str]:
    """The candidates whose thread neighbours a search fetches: ``window`` of them in all.

    Half are the best lexical candidates and half the best dense ones (all from one list when
    the other is empty): an answer often lies next to the turn that matches the question by
    words (LoCoMo) or by meaning (a user's statement, then the assistant's reply to it).
    """
    if not cands.dense:
        return [i for i, _ in cands.lexical[:window]]
    if not cands.lexical:
        return [i for i, _ in cands.dense[:window]]
    half = max(window // 2, 1)
    top = [i for i, _ in cands.lexical[:half]] + [i for i, _ in cands.dense[:half]]
    return list(dict.fromkeys(top))
