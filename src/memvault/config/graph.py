"""Settings of the Zeph memory features (seed 004): graph, tiered recall, forgetting, importance.

Pure pydantic models, composed into :class:`memvault.config.MemvaultConfig` as the sections
``graph``, ``tiered_recall`` (the seed's ``[memory.memflow]``), ``forgetting`` (the seed's
``[memory.scrap_mem]``) and ``importance``. Every feature is off by default and costs nothing
while off: no table is opened, no extra work is done on a write or a search.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ForgettingConfig",
    "GraphConfig",
    "ImportanceConfig",
    "SkillPromotionConfig",
    "TieredRecallConfig",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class SkillPromotionConfig(BaseModel):
    """Dense, repeatedly accessed graph regions proposed as procedural skills (HeLa-Mem path).

    A region is an entity and its neighbours; it qualifies when
    ``degree * mean(edge weight) > consolidation_threshold`` (the seed's query) and its
    memories were retrieved at least ``min_accesses`` times in all.
    """

    model_config = _FROZEN

    consolidation_threshold: float = Field(default=6.0, gt=0.0)
    min_accesses: int = Field(default=3, ge=0)
    min_memories: int = Field(default=3, ge=1)
    max_proposals: int = Field(default=5, ge=1, le=100)


class GraphConfig(BaseModel):
    """``graph``: the entity graph with temporal, typed, weighted edges (seed 004-6).

    ``enabled`` indexes every stored memory into the graph (entities, typed edges); searches
    use it only when the preset asks for it (``graph_weight`` > 0: the ``graph`` and
    ``five_signal`` presets) or ``expand_search`` is set.
    """

    model_config = _FROZEN

    enabled: bool = False
    extractor: Literal["rules", "llm"] = "rules"
    """``rules``: the fast rule-based extractor; ``llm``: the memory's LLM (rules when it fails
    or when the memory has no LLM)."""
    expand_search: bool = False
    """Merge graph recall into every search, whatever the preset."""
    expand_weight: float = Field(default=0.15, ge=0.0, le=1.0)
    """Weight of graph activation added to a result's relevance when ``expand_search``."""
    max_hops: int = Field(default=2, ge=1, le=5)
    """BFS depth and spreading-activation rounds from the query's entities."""
    decay: float = Field(default=0.5, gt=0.0, le=1.0)
    """Spreading activation: the share of activation that crosses one edge (SYNAPSE)."""
    activation_threshold: float = Field(default=0.05, ge=0.0, le=1.0)
    """Entities activated below this are not spread from nor used."""
    max_entities: int = Field(default=64, ge=1, le=10_000)
    """At most this many activated entities are kept (the strongest)."""
    max_memories: int = Field(default=50, ge=1, le=1_000)
    """At most this many memories come out of graph recall."""
    seed_from_results: int = Field(default=3, ge=0, le=20)
    """Entities of the top hits of the plain search also seed activation (multi-hop bridging)."""
    co_access_increment: float = Field(default=0.1, ge=0.0, le=1.0)
    """Added to the weight of the edges between memories retrieved together (A-MEM / Hebbian)."""
    max_weight: float = Field(default=5.0, ge=1.0, le=100.0)
    strengthen_on_search: bool = True
    """Strengthen co-accessed links after searches that used the graph."""
    promotion: SkillPromotionConfig = Field(default_factory=SkillPromotionConfig)
    causal_links: bool = False
    """EM-Graph (seed 004, ScrapMem): link each new memory to the agent's latest earlier one
    that shares an entity within ``causal_window_days`` (``caused`` when its text states a cause
    or consequence, else ``preceded``; a causal text with no shared entity links to the agent's
    latest earlier memory in the window). Graph recall carries activation across these links,
    which is what the ``five_signal`` preset's causal-distance signal reads."""
    causal_window_days: float = Field(default=7.0, gt=0.0, le=3650.0)
    causal_decay: float = Field(default=0.5, gt=0.0, le=1.0)
    """The share of a memory's activation that crosses one ``caused`` link (``preceded``: half
    of that)."""


class TieredRecallConfig(BaseModel):
    """``tiered_recall`` (the seed's ``[memory.memflow]``): shallow / targeted / deep recall.

    Off (the seed's default): :meth:`AsyncMemory.recall_tiered` is a plain search (the targeted
    tier, not classified). On: a heuristic classifier picks the tier; ``classifier = "llm"``
    asks the memory's LLM first and ``validate_results`` asks it whether the results answer the
    query (escalating to deep when not). Any LLM failure falls back to the heuristic tier, and an
    unclassifiable query to the middle tier (``targeted``).
    """

    model_config = _FROZEN

    enabled: bool = False
    classifier: Literal["heuristic", "llm"] = "heuristic"
    validate_results: bool = False
    classifier_provider: str = ""
    """Kept for the seed's multi-model pattern; memvault uses the memory's LLM when empty."""
    validator_provider: str = ""
    shallow_preset: str = "bm25"
    targeted_preset: str = "default"
    deep_preset: str = "graph"
    deep_limit_factor: int = Field(default=2, ge=1, le=10)
    """The deep tier searches this many times the limit wide before its graph re-ranking."""


class ForgettingConfig(BaseModel):
    """``forgetting`` (the seed's ``[memory.scrap_mem]``): optical forgetting.

    A memory not accessed for ``compress_after_days`` drops from Full to Compressed fidelity;
    one not accessed for ``summary_after_days`` to SummaryOnly. The original is moved to the
    archive (``restore`` brings it back) and the decayed text stored in its place, with its
    fidelity in the metadata, so the state survives restarts. Runs as the maintenance job
    ``forgetting`` (or :meth:`AsyncMemory.forget`), never on a search or write.
    """

    model_config = _FROZEN

    enabled: bool = False
    compress_after_days: float = Field(default=30.0, gt=0.0)
    summary_after_days: float = Field(default=90.0, gt=0.0)
    max_access_count: int = Field(default=1, ge=0)
    """Only memories retrieved at most this many times decay."""
    min_importance_kept: float = Field(default=0.8, ge=0.0, le=1.0)
    """Memories at or above this importance never decay."""
    compressed_chars: int = Field(default=240, ge=40, le=10_000)
    summary_chars: int = Field(default=80, ge=20, le=2_000)
    use_llm: bool = False
    """Summarise with the memory's LLM (the extractive compressor when it fails or is absent)."""
    batch: int = Field(default=200, ge=1, le=10_000)

    @model_validator(mode="after")
    def _order(self) -> ForgettingConfig:
        if self.summary_after_days < self.compress_after_days:
            msg = "forgetting.summary_after_days must be at least compress_after_days"
            raise ValueError(msg)
        if self.summary_chars > self.compressed_chars:
            msg = "forgetting.summary_chars must be at most compressed_chars"
            raise ValueError(msg)
        return self


class ImportanceConfig(BaseModel):
    """``importance``: importance scored at write (entity density, novelty, explicit markers).

    On: a write that leaves ``importance`` at its default gets the computed score, which the
    retention score (stability grows with importance) and the ``five_signal`` preset use.
    """

    model_config = _FROZEN

    enabled: bool = False
    entity_weight: float = Field(default=0.35, ge=0.0)
    novelty_weight: float = Field(default=0.35, ge=0.0)
    marker_weight: float = Field(default=0.30, ge=0.0)
