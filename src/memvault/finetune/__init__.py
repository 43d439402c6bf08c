"""Domain-specific fine-tuning of the embedder: five resumable stages, deploy and rollback.

See :mod:`memvault.finetune.pipeline` for the stages, :mod:`memvault.finetune.manager` for the
lifecycle (:class:`FineTuneManager`), and :mod:`memvault.finetune.runner` for where the heavy
stages run. The configuration lives in :mod:`memvault.finetune.config`.

Importing this package does not import torch: only the bi-encoder trainer needs it, and it
raises :class:`~memvault.errors.FineTuneDependencyError` with the install command when torch is
missing.
"""

from __future__ import annotations

from memvault.finetune.config import (
    STAGES,
    ActiveEmbedderSnapshot,
    CheckpointRecord,
    EmbeddingFineTuneConfig,
    EvalMetrics,
    FineTunePlan,
    FineTuneRun,
    FineTuneStatus,
    PreflightCheck,
    PreflightResult,
    RunStatus,
    Stage,
    StageRecord,
    StageStatus,
)
from memvault.finetune.manager import FineTuneManager, FineTuneProgress, PassageSource
from memvault.finetune.runner import InProcessRunner, SubprocessRunner

__all__ = [
    "STAGES",
    "ActiveEmbedderSnapshot",
    "CheckpointRecord",
    "EmbeddingFineTuneConfig",
    "EvalMetrics",
    "FineTuneManager",
    "FineTunePlan",
    "FineTuneProgress",
    "FineTuneRun",
    "FineTuneStatus",
    "InProcessRunner",
    "PassageSource",
    "PreflightCheck",
    "PreflightResult",
    "RunStatus",
    "Stage",
    "StageRecord",
    "StageStatus",
    "SubprocessRunner",
]
