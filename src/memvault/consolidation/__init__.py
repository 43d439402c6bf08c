"""Memory consolidation: merge old memories into fewer, denser ones without losing anything.

Consolidation is split in two (the design's "selector + op"): a selector decides which entries
of an agent are merged (:class:`HighestRelevanceSelector`: per category, keep the most relevant,
merge the rest), and an op decides how (concatenation, extractive preservation, abstractive
summary, density routing between the two, or LLM synthesis). Episodic -> semantic extraction
turns episodes into facts. Everything here is pure apart from the optional LLM call;
:func:`consolidate` applies a plan through callbacks, storing new entries before archiving the
originals, so it works on any backend and a crash never loses data.
"""

from __future__ import annotations

from memvault.consolidation.density import ContentDensity, DensityClassifier, DensitySignals
from memvault.consolidation.extraction import (
    EpisodicExtractor,
    ExtractedFact,
    ExtractionOutcome,
    parse_fact_lines,
    select_episodes,
)
from memvault.consolidation.ops import (
    AbstractiveSummarizationOp,
    ArchivalMode,
    ConcatenationOp,
    ConsolidationOp,
    DensityRoutingOp,
    ExtractivePreservationOp,
    LLMSynthesisOp,
    OpOutcome,
    summary_request,
)
from memvault.consolidation.schedule import ConsolidationScheduler, is_due, next_due
from memvault.consolidation.selectors import (
    ConsolidationSelector,
    EntryGroup,
    HighestRelevanceSelector,
    eligible_entries,
    relevance_key,
)
from memvault.consolidation.service import (
    ArchiveCallback,
    ConsolidationConfig,
    ConsolidationResult,
    ConsolidationStrategy,
    GroupReport,
    GroupStatus,
    MarkCallback,
    StoreCallback,
    build_op,
    consolidate,
)

__all__ = [
    "AbstractiveSummarizationOp",
    "ArchivalMode",
    "ArchiveCallback",
    "ConcatenationOp",
    "ConsolidationConfig",
    "ConsolidationOp",
    "ConsolidationResult",
    "ConsolidationScheduler",
    "ConsolidationSelector",
    "ConsolidationStrategy",
    "ContentDensity",
    "DensityClassifier",
    "DensityRoutingOp",
    "DensitySignals",
    "EntryGroup",
    "EpisodicExtractor",
    "ExtractedFact",
    "ExtractionOutcome",
    "ExtractivePreservationOp",
    "GroupReport",
    "GroupStatus",
    "HighestRelevanceSelector",
    "LLMSynthesisOp",
    "MarkCallback",
    "OpOutcome",
    "StoreCallback",
    "build_op",
    "consolidate",
    "eligible_entries",
    "is_due",
    "next_due",
    "parse_fact_lines",
    "relevance_key",
    "select_episodes",
    "summary_request",
]
