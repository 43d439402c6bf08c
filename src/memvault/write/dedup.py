"""Near-duplicate detection for the write path, without an LLM.

A new memory that says what an existing one already says becomes a NOOP: the caller bumps the
existing entry (access count, last access) instead of storing a second copy. Two signals must
agree, because each fails alone: an embedding calls "budget is 500" and "budget is 600" nearly
identical, and word overlap calls "Alice manages Bob" and "Bob manages Alice" identical.

Text similarity (:func:`text_similarity`) is the Jaccard similarity of word bigrams taken within
clauses, after normalisation (lower case, punctuation, extra spaces, apostrophes, articles and
filler such as "fyi" or "note:" removed; numbers kept exactly), with one-letter typos of words of
four letters or more aligned to the word they misspell. Bigrams inside clauses keep word order
where it matters and ignore the order of whole clauses ("A and B" equals "B and A"). Two texts
whose numbers differ, or of which only one is negated, have similarity 0: they are never
duplicates (a number change is a contradiction candidate instead, see
:mod:`memvault.write.supersession`).

A candidate is a duplicate when any of these holds:

* its normalised text equals the new one (no vector needed);
* text similarity >= ``text_only_threshold`` (default 1.0: the same clauses with the same words,
  up to typos and clause order; a typo moves an embedding far more than it moves the words);
* cosine of the vectors >= ``vector_threshold`` AND text similarity >= ``text_threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike
from pydantic import BaseModel, ConfigDict, Field

from memvault.models import MemoryCategory, MemoryEntry
from memvault.write._text import Analysed, align_typos, analyse, clause_grams, may_align_fully

__all__ = [
    "DedupConfig",
    "DuplicateMatch",
    "Vector",
    "cosine",
    "find_duplicate",
    "find_duplicate_match",
    "normalise_text",
    "text_similarity",
]

Vector: TypeAlias = ArrayLike
"""A 1-D float vector: a numpy array or a sequence of floats."""


class DedupConfig(BaseModel):
    """Settings of near-duplicate detection and contradiction detection on the write path.

    ``vector_threshold``/``text_threshold`` are the joint rule (cosine and text similarity);
    ``text_only_threshold`` the text similarity that is a duplicate on its own (None: never).
    Measured on the generated corpus (:mod:`memvault.write.corpus`), the joint rule alone
    misses about a third of noisy duplicates even with MiniLM: a typo or swapped clauses drop
    the cosine below 0.92 while the aligned text similarity stays 1.0.
    ``episodic_window`` keeps recurring events apart: an EPISODIC entry is a duplicate only of an
    entry created within that time of it ("went for a run" on two days is two events).
    ``detect_contradictions`` and ``contradiction_categories`` control
    :func:`memvault.write.supersession.detect_contradiction` in :func:`plan_write`; episodic
    entries are left out by default because events do not contradict each other.
    ``mark_contested`` makes :func:`~memvault.write.plan_write` list, on a plain ADD, up to
    ``max_contested`` live neighbours the rules could not settle (cosine at least
    ``contested_cosine``, and statements on a related slot, or a change marker in the new
    text where the rules do not read both; see :func:`~memvault.write.pipeline.contested_ids`)
    for an LLM to decide (:mod:`memvault.write.arbiter`); off by default, so a write without an
    LLM is planned exactly as before.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    vector_threshold: float = Field(default=0.92, ge=-1.0, le=1.0)
    text_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    text_only_threshold: float | None = Field(default=1.0, ge=0.0, le=1.0)
    episodic_window: timedelta | None = timedelta(hours=24)
    detect_contradictions: bool = True
    contradiction_categories: frozenset[MemoryCategory] = frozenset(
        {
            MemoryCategory.SEMANTIC,
            MemoryCategory.SOCIAL,
            MemoryCategory.PROCEDURAL,
            MemoryCategory.WORKING,
        }
    )
    mark_contested: bool = False
    contested_cosine: float = Field(default=0.4, ge=-1.0, le=1.0)
    max_contested: int = Field(default=3, ge=0)


@dataclass(frozen=True, slots=True)
class DuplicateMatch:
    """The existing entry a new text duplicates, and why.

    ``rule`` is ``"exact"`` (equal normalised text), ``"text"`` (text similarity at or above
    ``text_only_threshold``) or ``"vector+text"``; ``cosine`` is None when a vector was missing.
    """

    entry: MemoryEntry
    cosine: float | None
    text_similarity: float
    rule: Literal["exact", "text", "vector+text"]


def normalise_text(text: str) -> str:
    """The normalised form of ``text`` used for exact duplicate checks.

    Lower-cased words and numbers separated by single spaces; punctuation, apostrophes, articles
    and leading/trailing filler ("FYI", "Note:", ", btw") removed. Numbers keep their digits,
    decimal dots and signs.
    """
    return analyse(text).normalised


def text_similarity(a: str, b: str) -> float:
    """Similarity in [0, 1] of two texts' normalised clause bigrams (see the module docstring).

    Symmetric. A word of either text that the other lacks is read as a typo of the other's word
    one letter away from it (see the module docstring). Returns 0 when the texts' numbers differ
    or only one of them is negated.
    """
    left, right = analyse(a), analyse(b)
    if left.numbers != right.numbers or left.negated != right.negated:
        return 0.0
    if not left.tokens or not right.tokens:
        return 0.0
    clauses_a, clauses_b = align_typos(left, right)
    grams_a, grams_b = clause_grams(clauses_a), clause_grams(clauses_b)
    inter = len(grams_a & grams_b)
    return inter / (len(grams_a) + len(grams_b) - inter)


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two vectors (0.0 when either is zero or the shapes differ)."""
    va = np.asarray(a, dtype=np.float64).ravel()
    vb = np.asarray(b, dtype=np.float64).ravel()
    if va.shape != vb.shape:
        return 0.0
    denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
    if denom == 0.0:
        return 0.0
    return float(va @ vb) / denom


def _cosine(a: Vector | None, b: Vector | None) -> float | None:
    return None if a is None or b is None else cosine(a, b)


def _eligible(
    entry: MemoryEntry,
    *,
    agent_id: str | None,
    category: MemoryCategory | None,
    created_at: datetime | None,
    now: datetime | None,
    window: timedelta | None,
) -> bool:
    if agent_id is not None and entry.agent_id != agent_id:
        return False
    if category is not None and entry.category is not category:
        return False
    # A superseded or retracted entry no longer states a current fact: repeating its text is a
    # reversal (a new contradiction), not a duplicate.
    if entry.superseded_by is not None or entry.retracted_at is not None:
        return False
    if now is not None and not entry.is_live(now):
        return False
    if now is None and entry.valid_to is not None:
        return False
    return not (
        window is not None
        and created_at is not None
        and entry.category is MemoryCategory.EPISODIC
        and abs(entry.created_at - created_at) > window
    )


def find_duplicate_match(
    new_text: str,
    new_vector: Vector | None,
    candidates: Sequence[tuple[MemoryEntry, Vector | None]],
    *,
    config: DedupConfig | None = None,
    agent_id: str | None = None,
    category: MemoryCategory | None = None,
    created_at: datetime | None = None,
    now: datetime | None = None,
) -> DuplicateMatch | None:
    """The best duplicate of ``new_text`` among ``candidates``, with its scores, or None.

    ``candidates`` pairs existing entries with their vectors (None when unknown). Entries of
    another agent or category than ``agent_id``/``category`` (when given), and entries that are
    superseded, retracted, expired or closed (``valid_to``) at ``now`` are skipped: same agent
    and category is the caller's job, this is the safety net. EPISODIC candidates count only
    within ``config.episodic_window`` of ``created_at``. Among several duplicates the one with
    the highest text similarity wins (then cosine, then the newest).

    Returns None when ``config.enabled`` is False.
    """
    cfg = config or DedupConfig()
    if not cfg.enabled:
        return None
    target = analyse(new_text)
    best: DuplicateMatch | None = None
    best_key: tuple[float, float, datetime, str] | None = None
    for entry, vector in candidates:
        if not _eligible(
            entry,
            agent_id=agent_id,
            category=category,
            created_at=created_at,
            now=now,
            window=cfg.episodic_window,
        ):
            continue
        match: DuplicateMatch | None = None
        other = analyse(entry.content)
        if target.tokens and other.tokens == target.tokens:
            match = DuplicateMatch(entry, _cosine(new_vector, vector), 1.0, "exact")
        else:
            cos = _cosine(new_vector, vector)
            if _text_can_decide(cfg, target, other, cos):
                sim = text_similarity(new_text, entry.content)
                if cfg.text_only_threshold is not None and sim >= cfg.text_only_threshold:
                    match = DuplicateMatch(entry, cos, sim, "text")
                elif sim >= cfg.text_threshold and cos is not None and cos >= cfg.vector_threshold:
                    match = DuplicateMatch(entry, cos, sim, "vector+text")
        if match is None:
            continue
        cos = match.cosine
        key = (
            match.text_similarity,
            -2.0 if cos is None else cos,
            entry.created_at,
            entry.id,
        )
        if best_key is None or key > best_key:
            best, best_key = match, key
    return best


def _text_can_decide(cfg: DedupConfig, new: Analysed, old: Analysed, cos: float | None) -> bool:
    """Whether the text similarity of ``new`` and ``old`` (whose vectors' cosine is ``cos``,
    None without vectors) can still make them duplicates.

    Text similarity of two long texts costs far more than their cosine (each word of one is
    looked up as a possible typo of the other's), and write-time dedup of conversation turns
    compares each with many neighbours. Below ``vector_threshold`` only the text-only rule is
    left, and at its default (1.0: the same words up to typos) a word of one text that is no
    typo of any word of the other already rules it out (:func:`may_align_fully`).
    """
    if cos is None or cos >= cfg.vector_threshold:
        return True
    only_text = cfg.text_only_threshold
    if only_text is None:
        return False
    return only_text < 1.0 or may_align_fully(new, old)


def find_duplicate(
    new_text: str,
    new_vector: Vector | None,
    candidates: Sequence[tuple[MemoryEntry, Vector | None]],
    *,
    config: DedupConfig | None = None,
    agent_id: str | None = None,
    category: MemoryCategory | None = None,
    created_at: datetime | None = None,
    now: datetime | None = None,
) -> MemoryEntry | None:
    """The existing entry ``new_text`` duplicates, or None (see :func:`find_duplicate_match`)."""
    match = find_duplicate_match(
        new_text,
        new_vector,
        candidates,
        config=config,
        agent_id=agent_id,
        category=category,
        created_at=created_at,
        now=now,
    )
    return None if match is None else match.entry
