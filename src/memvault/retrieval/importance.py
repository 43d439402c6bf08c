"""Importance of a memory, scored at write time (seed 004: entity density, novelty, markers).

``importance = (w_e * entity_density + w_n * novelty + w_m * markers) / (w_e + w_n + w_m)``,
each signal in [0, 1]:

* entity density: named things per word (a text naming people, places and dates carries more
  retrievable facts than small talk), saturating at one name per five words;
* novelty: one minus the highest word overlap (Jaccard of content words) with the memories
  most like it already stored (a repeat adds little);
* explicit markers: "important", "remember", "always", "never", "must", "deadline", "!" ...

The score feeds the retention curve (stability grows with importance) and the ``five_signal``
preset. Pure functions; the write path supplies the neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "MARKERS",
    "entity_density",
    "importance_score",
    "marker_score",
    "novelty",
]

MARKERS = (
    "important",
    "remember",
    "don't forget",
    "do not forget",
    "always",
    "never",
    "must",
    "critical",
    "deadline",
    "allergic",
    "password",
    "prefer",
    "note that",
    "key point",
)
_MARKER_RE = re.compile(r"\b(?:" + "|".join(re.escape(m) for m in MARKERS) + r")\b", re.I)
_WORD = re.compile(r"[A-Za-z0-9][\w'-]*")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+|\b[A-Z]{2,}\b|\b\d{4}\b|\b\d+(?:[.,]\d+)?\b")
_SHORT = frozenset("the a an and or but to of in on at for with is are was were it i you".split())


def _content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in _SHORT}


def entity_density(text: str) -> float:
    """Named things (capitalised words past a sentence start, acronyms, numbers) per word,
    scaled so one in five words saturates at 1."""
    words = _WORD.findall(text)
    if not words:
        return 0.0
    names = len(_NAME.findall(text))
    return min(1.0, names / len(words) * 5.0)


def novelty(text: str, neighbours: Iterable[str]) -> float:
    """One minus the highest Jaccard overlap of content words with any neighbour (1: new)."""
    mine = _content_words(text)
    if not mine:
        return 0.0
    best = 0.0
    for other in neighbours:
        theirs = _content_words(other)
        if theirs:
            best = max(best, len(mine & theirs) / len(mine | theirs))
    return 1.0 - best


def marker_score(text: str) -> float:
    """Explicit importance markers: 0 without any, 0.6 for one, 1 for two or more (or '!')."""
    hits = len(_MARKER_RE.findall(text))
    if "!" in text:
        hits += 1
    return 0.0 if hits == 0 else (0.6 if hits == 1 else 1.0)


def importance_score(
    text: str,
    *,
    neighbours: Iterable[str] = (),
    entity_weight: float = 0.35,
    novelty_weight: float = 0.35,
    marker_weight: float = 0.30,
) -> float:
    """The weighted importance of ``text`` in [0, 1] (see the module docstring)."""
    total = entity_weight + novelty_weight + marker_weight
    if total <= 0:
        return 0.5
    score = (
        entity_weight * entity_density(text)
        + novelty_weight * novelty(text, neighbours)
        + marker_weight * marker_score(text)
    ) / total
    return round(min(1.0, max(0.0, score)), 4)
