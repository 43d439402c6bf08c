"""Conversation threads: which stored entries belong to one conversation.

Pure functions over :class:`MemoryEntry`. An entry's thread comes from its metadata
(``session``, ``thread_id`` ...); entries without one are grouped by time.
"""

from __future__ import annotations

from datetime import timedelta

from memvault.models import MemoryEntry

__all__ = ["THREAD_GAP", "THREAD_KEYS", "same_thread", "thread_id", "thread_key"]


THREAD_KEYS = ("session", "session_id", "thread", "thread_id", "conversation_id")
"""``metadata`` keys that name the conversation an entry belongs to."""

THREAD_GAP = timedelta(hours=1)
"""Without a thread key, entries stored this close together count as one conversation."""


def thread_key(entry: MemoryEntry) -> str | None:
    """The conversation thread an entry belongs to, from its metadata, or None."""
    extra = entry.metadata.extra
    for key in THREAD_KEYS:
        value = extra.get(key)
        if value is not None:
            return f"{key}={value}"
    return None


def same_thread(a: MemoryEntry, b: MemoryEntry) -> bool:
    """True if two entries stored one after the other belong to one conversation thread.

    Same category, and the same thread key when either has one; otherwise created within
    :data:`THREAD_GAP` of each other.
    """
    if a.category is not b.category:
        return False
    ta, tb = thread_key(a), thread_key(b)
    if ta is not None or tb is not None:
        return ta == tb
    return abs(a.created_at - b.created_at) <= THREAD_GAP


def thread_id(entry: MemoryEntry) -> str:
    """A grouping key: the thread key, else the category and hour of creation."""
    key = thread_key(entry)
    if key is not None:
        return key
    # An integer hour bucket: strftime is ten times slower and this runs per candidate.
    return f"{entry.category.value}@{int(entry.created_at.timestamp()) // 3600}"
