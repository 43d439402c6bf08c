"""Domain-specific fine-tuning of the embedder: five resumable stages, deploy and rollback.

See :mod:`memvault.finetune.pipeline` for the stages, :mod:`memvault.finetune.manager` for the
lifecycle (:class:`FineTuneManager`), and :mod:`memvault.finetune.runner` for where the heavy
stages run. The configuration lives in :mod:`memvault.finetune.config`.

The package imports its submodules lazily (PEP 562 ``__getattr__``): ``memvault.config`` imports
:mod:`memvault.finetune.config` (pydantic only) while the pipeline, manager and runners import
modules that import ``memvault.config`` back. Importing this package therefore runs nothing but
this file, and a name such as :class:`FineTuneManager` loads its module on first use.

Importing this package does not import torch: only the bi-encoder trainer needs it, and it
raises :class:`~memvault.errors.FineTuneDependencyError` with the install command when torch is
missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Public name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "STAGES",
            "ActiveEmbedderSnapshot",
            "CheckpointRecord",
            "EmbeddingFineTuneConfig",
            "EvalMetrics",
            "FineTunePlan",
            "FineTuneRun",
            "FineTuneStatus",
            "PreflightCheck",
            "PreflightResult",
            "RunStatus",
            "Stage",
            "StageRecord",
            "StageStatus",
        ),
        "memvault.finetune.config",
    ),
    **dict.fromkeys(
        ("FineTuneManager", "FineTuneProgress", "PassageSource"), "memvault.finetune.manager"
    ),
    **dict.fromkeys(("InProcessRunner", "SubprocessRunner"), "memvault.finetune.runner"),
}

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


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` on first use (see the module docstring)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    # Cache it so later lookups are plain attribute reads.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
