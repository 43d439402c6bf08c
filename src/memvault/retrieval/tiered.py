"""Tiered recall (MemFlow, seed 004): how deep to search, chosen from the query's complexity.

Three tiers, cheapest first:

* ``shallow`` (the seed's ``ProfileLookup``): a simple entity or fact lookup; lexical search
  only, no query embedding;
* ``targeted`` (``TargetedRetrieval``): the default hybrid search;
* ``deep`` (``DeepReasoning``): cross-session, causal or comparative questions; a wider
  search re-ranked through the entity graph.

:func:`classify_tier` is the heuristic classifier (no model). :class:`LLMTierClassifier` asks an
LLM for the tier and :class:`LLMRecallValidator` whether the results answer the query; both
fail open (a provider error or an unreadable reply gives the heuristic's tier, or ``targeted``
when even that cannot be had; the validator then accepts the results).
"""

from __future__ import annotations

import logging
import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from memvault.errors import MemoryError
from memvault.models import ChatMessage, MemoryEntry
from memvault.protocols import LLMProvider

__all__ = [
    "LLMRecallValidator",
    "LLMTierClassifier",
    "RecallTier",
    "TieredRecall",
    "classify_tier",
]

logger = logging.getLogger(__name__)


class RecallTier(StrEnum):
    """The depth of a tiered recall."""

    SHALLOW = "shallow"
    TARGETED = "targeted"
    DEEP = "deep"


class TieredRecall(BaseModel):
    """What :meth:`AsyncMemory.recall_tiered` did and found.

    ``classified_by`` is ``heuristic``, ``llm``, ``fallback`` (the LLM failed) or ``off``
    (tiered recall disabled: a plain search); ``escalated`` is True when the validator found
    the first tier's results insufficient and the deep tier ran.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tier: RecallTier
    classified_by: str
    entries: list[MemoryEntry]
    escalated: bool = False
    validated: bool | None = None


_DEEP = re.compile(
    r"\b(why|how (?:did|does|do|has|have|come)|because|cause[sd]?|led to|result(?:ed)? in|"
    r"compare|comparison|difference|differ|both|relationship|relate|connection|pattern|"
    r"over time|across|throughout|trend|changed?|evolv\w*|history of|since when|"
    r"what (?:might|would|could)|likely|would .* (?:be|have)|infer|summar\w+|all the|"
    r"in common|each time|every time|before .* after|after .* before)\b",
    re.IGNORECASE,
)
_SHALLOW = re.compile(
    r"^\s*(?:what(?:'s| is| was| are)|who(?:'s| is| was)|where(?:'s| is| does| did| do)|"
    r"when(?:'s| is| was| did| does)|which|how (?:old|many|much)|name of|is there|do i|does)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"\b(?:and|or|but|then|while|whereas)\b|[,;]", re.IGNORECASE)


def classify_tier(query: str) -> RecallTier:
    """The heuristic tier of ``query`` (seed: dependency depth, multi-turn, causal cues).

    Causal, comparative, temporal-evolution or inferential cues, or three clauses and more,
    make it deep; a short single-clause "what / who / where / when is ..." lookup is shallow;
    anything else is targeted (the middle tier, also the fallback).
    """
    text = query.strip()
    if not text:
        return RecallTier.TARGETED
    clauses = 1 + len(_CLAUSE.findall(text))
    words = len(text.split())
    if _DEEP.search(text) or clauses >= 3 or words > 30:
        return RecallTier.DEEP
    if _SHALLOW.search(text) and clauses == 1 and words <= 10:
        return RecallTier.SHALLOW
    return RecallTier.TARGETED


_CLASSIFY = (
    "Classify how much memory retrieval this query needs. Answer with one word: "
    "shallow (a simple lookup of one fact or entity), targeted (multi-turn reasoning over a "
    "few memories) or deep (complex, causal or cross-session inference)."
)
_VALIDATE = (
    "Do the numbered memories below contain what is needed to answer the query? "
    "Answer with one word: yes or no."
)


class LLMTierClassifier:
    """The tier as an LLM judges it; the heuristic tier when the LLM fails (fail-open)."""

    def __init__(self, llm: LLMProvider) -> None:
        self._llm = llm

    async def classify(self, query: str) -> tuple[RecallTier, str]:
        """The tier and who chose it (``llm``, or ``fallback`` for the heuristic)."""
        try:
            reply = await self._llm.complete(
                [
                    ChatMessage(role="system", content=_CLASSIFY),
                    ChatMessage(role="user", content=query[:2000]),
                ],
                max_tokens=5,
            )
        except MemoryError as exc:
            logger.warning("memory.recall_tiered.classifier_failed", extra={"error": str(exc)})
            return classify_tier(query), "fallback"
        word = reply.text.strip().lower().strip(".!\"' ")
        for tier in RecallTier:
            if word.startswith(tier.value):
                return tier, "llm"
        logger.warning("memory.recall_tiered.classifier_unreadable", extra={"reply": word[:40]})
        return classify_tier(query), "fallback"


class LLMRecallValidator:
    """Asks an LLM whether results answer the query; accepts them when the LLM fails."""

    def __init__(self, llm: LLMProvider) -> None:
        self._llm = llm

    async def sufficient(self, query: str, entries: list[MemoryEntry]) -> bool:
        """True unless the LLM clearly answers no."""
        listing = "\n".join(f"{i}. {e.content[:500]}" for i, e in enumerate(entries[:10], 1))
        try:
            reply = await self._llm.complete(
                [
                    ChatMessage(role="system", content=_VALIDATE),
                    ChatMessage(role="user", content=f"Query: {query[:2000]}\n\n{listing}"),
                ],
                max_tokens=3,
            )
        except MemoryError as exc:
            logger.warning("memory.recall_tiered.validator_failed", extra={"error": str(exc)})
            return True
        return not reply.text.strip().lower().startswith("no")
