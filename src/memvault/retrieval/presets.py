"""Retrieval configuration and named presets.

A preset is a frozen :class:`RetrievalConfig`. ``default`` is the configuration that wins the
LoCoMo benchmark (``memvault bench locomo``); the others are reference points.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PRESETS", "RetrievalConfig", "get_preset"]


class RetrievalConfig(BaseModel):
    """Every knob of the retrieval pipeline (see DESIGN section 5)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = "custom"
    use_dense: bool = True
    use_lexical: bool = True
    fusion: Literal["rrf", "linear"] = "rrf"
    rrf_k: int = Field(default=60, ge=0)
    dense_weight: float = Field(default=1.0, ge=0.0)
    lexical_weight: float = Field(default=1.0, ge=0.0)
    candidate_pool_multiplier: int = Field(default=5, ge=1, le=100)
    min_candidates: int = Field(default=50, ge=1)
    relevance_weight: float = Field(default=1.0, ge=0.0)
    recency_weight: float = Field(default=0.0, ge=0.0)
    decay_rate: float = Field(default=0.001, ge=0.0)
    personal_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    mmr_enabled: bool = False
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    mmr_similarity: Literal["bigram", "cosine"] = "bigram"
    # Conversation context: an entry inherits part of the lexical score of the entries stored
    # just before and after it in the same thread (a question's answer usually follows it).
    neighbour_prev_weight: float = Field(default=0.0, ge=0.0, le=2.0)
    neighbour_next_weight: float = Field(default=0.0, ge=0.0, le=2.0)
    neighbours_per_result: int = Field(default=2, ge=0, le=20)
    # Thread prior: entries of a conversation whose best entries match well are more likely
    # to hold the rest of the answer (multi-turn facts).
    thread_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    thread_top_k: int = Field(default=3, ge=1, le=20)
    # Temporal cues: "when ..." questions prefer entries that say when; a named period ("in May
    # 2023", "last week") prefers entries created in it.
    temporal_intent_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    time_range_boost: float = Field(default=0.0, ge=0.0, le=1.0)

    def pool_size(self, limit: int) -> int:
        """How many candidates each source contributes for a search of ``limit`` results."""
        return max(limit * self.candidate_pool_multiplier, self.min_candidates)

    @property
    def uses_neighbours(self) -> bool:
        """True if the config spreads scores to thread neighbours."""
        return self.use_lexical and (
            self.neighbour_prev_weight > 0 or self.neighbour_next_weight > 0
        )

    def neighbour_window(self, limit: int) -> int:
        """How many top lexical candidates get their neighbours fetched (0: none)."""
        if not self.uses_neighbours:
            return 0
        return max(limit * self.neighbours_per_result, 20)


PRESETS: dict[str, RetrievalConfig] = {
    "default": RetrievalConfig(name="default"),
    "hybrid": RetrievalConfig(name="hybrid"),
    "bm25": RetrievalConfig(name="bm25", use_dense=False, fusion="linear"),
    "dense": RetrievalConfig(name="dense", use_lexical=False, fusion="linear"),
}


def get_preset(name: str) -> RetrievalConfig:
    """The preset called ``name``.

    Raises:
        KeyError: no such preset (the message lists the known ones).
    """
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        msg = f"unknown retrieval preset {name!r} (known: {known})"
        raise KeyError(msg) from None
