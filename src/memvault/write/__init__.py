"""The write path's pure stages: admission control, dedup, supersession, and the write plan.

Nothing here does I/O: every function works on a candidate text, its vector, the neighbouring
entries the caller fetched, and configuration. :func:`plan_write` composes the stages into one
decision (ADD, NOOP, SUPERSEDE or REJECT) that :class:`memvault.AsyncMemory` carries out.
"""

from memvault.write.admission import (
    AdmissionConfig,
    AdmissionContext,
    AdmissionController,
    AdmissionDecision,
    AdmissionScore,
    EntityMemory,
)
from memvault.write.dedup import DedupConfig, find_duplicate, normalise_text, text_similarity
from memvault.write.executor import WriteOutcome, execute_writes
from memvault.write.pipeline import WriteDecision, WriteKind, plan_batch, plan_write
from memvault.write.supersession import (
    Statement,
    contradiction_query,
    detect_contradiction,
    extract_statement,
)

__all__ = [
    "AdmissionConfig",
    "AdmissionContext",
    "AdmissionController",
    "AdmissionDecision",
    "AdmissionScore",
    "DedupConfig",
    "EntityMemory",
    "Statement",
    "WriteDecision",
    "WriteKind",
    "WriteOutcome",
    "contradiction_query",
    "detect_contradiction",
    "execute_writes",
    "extract_statement",
    "find_duplicate",
    "normalise_text",
    "plan_batch",
    "plan_write",
    "text_similarity",
]
