"""What agents use directly: memory tools, automatic capture and working memory."""

from memvault.agent.capture import (
    DISTILLATION_TAG,
    TRIGGER_KEY,
    DistillationRequest,
    TurnRecord,
    capture_distillation,
    capture_episode,
    episode_trigger,
)
from memvault.agent.memory_tools import (
    PROCEDURES_HEADING,
    MemoryTools,
    MemoryToolsConfig,
    sanitize_category,
)
from memvault.agent.working import WorkingMemory, WorkingNote

__all__ = [
    "DISTILLATION_TAG",
    "PROCEDURES_HEADING",
    "TRIGGER_KEY",
    "DistillationRequest",
    "MemoryTools",
    "MemoryToolsConfig",
    "TurnRecord",
    "WorkingMemory",
    "WorkingNote",
    "capture_distillation",
    "capture_episode",
    "episode_trigger",
    "sanitize_category",
]
