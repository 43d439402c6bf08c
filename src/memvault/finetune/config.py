"""Configuration and public records of the embedding fine-tune lifecycle.

:class:`EmbeddingFineTuneConfig` is the ``memory.fine_tune`` section of ``memvault.yaml``;
:class:`FineTunePlan` is what an operator submits to start a run (CLI, REST, MCP). The rest are
the frozen snapshots the lifecycle returns: runs, status, preflight results, checkpoints and the
active embedder. Every path an operator gives is checked here, before any runner or mount could
see it: parent-directory segments, backslashes and Windows drive letters are rejected.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from memvault.config.finetune import EmbeddingFineTuneConfig, NotBlank, check_safe_path

__all__ = [
    "DEFAULT_EPOCHS",
    "DEFAULT_LEARNING_RATE",
    "DEFAULT_PASSAGE_MAX_TOKENS",
    "DEFAULT_QUERY_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
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
    "check_safe_path",
]

DEFAULT_TEMPERATURE = 0.02
"""InfoNCE temperature (tau) of the design notes."""
DEFAULT_EPOCHS = 3
DEFAULT_LEARNING_RATE = 1e-5
"""Learning rate of the full bi-encoder (the design notes' default)."""
DEFAULT_ADAPTER_LEARNING_RATE = 1e-3
"""Learning rate of the adapter trainer: a freshly initialised layer needs larger steps than
pretrained encoder weights, and 1e-5 would leave it at its identity start after 3 epochs."""
DEFAULT_QUERY_MAX_TOKENS = 128
DEFAULT_PASSAGE_MAX_TOKENS = 512


class Stage(StrEnum):
    """The five pipeline stages, in order."""

    GENERATE = "generate"
    MINE = "mine"
    TRAIN = "train"
    EVALUATE = "evaluate"
    DEPLOY = "deploy"


STAGES: tuple[Stage, ...] = tuple(Stage)


class RunStatus(StrEnum):
    """Where a run stands."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class StageStatus(StrEnum):
    """Where a stage of a run stands."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


class FineTunePlan(BaseModel):
    """What to fine-tune on and how; every field has the design notes' default.

    ``source_dir`` holds the organisation's documents (``.md``, ``.txt``, ``.rst``; chunked into
    passages); ``pairs_file`` (JSON lines ``{"query": ..., "passage": ...}``) supplies
    query/passage pairs directly and skips the LLM. ``output_dir`` is the checkpoint registry
    (default: the config's ``checkpoint_path``).
    """

    model_config = ConfigDict(frozen=True, allow_inf_nan=False, extra="forbid")

    source_dir: NotBlank | None = None
    output_dir: NotBlank | None = None
    pairs_file: NotBlank | None = None
    base_model: NotBlank = "minilm"
    trainer: Literal["auto", "adapter", "biencoder"] = "auto"
    queries_per_passage: int = Field(default=2, ge=1, le=10)
    max_passages: int | None = Field(default=None, ge=1, le=1_000_000)
    query_max_tokens: int = Field(default=DEFAULT_QUERY_MAX_TOKENS, ge=8, le=512)
    passage_max_tokens: int = Field(default=DEFAULT_PASSAGE_MAX_TOKENS, ge=16, le=8192)
    hard_negatives: int = Field(default=5, ge=0, le=50)
    epochs: int = Field(default=DEFAULT_EPOCHS, ge=1, le=100)
    learning_rate: float = Field(default=DEFAULT_LEARNING_RATE, gt=0, le=1.0)
    adapter_learning_rate: float = Field(default=DEFAULT_ADAPTER_LEARNING_RATE, gt=0, le=1.0)
    temperature: float = Field(default=DEFAULT_TEMPERATURE, gt=0, le=1.0)
    batch_size: int = Field(default=32, ge=2, le=1024)
    validation_fraction: float = Field(default=0.2, gt=0, lt=1)
    llm_max_tokens: int = Field(default=256, ge=16, le=8192)
    llm_max_input_chars: int = Field(default=4000, ge=200, le=200_000)
    deploy: bool = True
    require_improvement: bool = True
    seed: int = 0

    @field_validator("source_dir", "output_dir", "pairs_file")
    @classmethod
    def _safe(cls, value: str | None, info: object) -> str | None:
        name = getattr(info, "field_name", "path")
        return None if value is None else check_safe_path(value, name)

    @model_validator(mode="after")
    def _has_data(self) -> FineTunePlan:
        if self.source_dir is None and self.pairs_file is None:
            # The manager fills source_dir from fine_tune.training_data_dir before validating
            # a plan it receives without one, so reaching here means neither was given.
            raise ValueError(
                "a plan needs source_dir (documents) or pairs_file (query/passage pairs)"
            )
        return self


class StageRecord(BaseModel):
    """One stage of a run: status, timing, and a short summary of what it produced."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Stage
    status: StageStatus = StageStatus.PENDING
    started_at: str | None = None
    completed_at: str | None = None
    seconds: float | None = None
    summary: dict[str, object] = Field(default_factory=dict)
    error: str | None = None


class EvalMetrics(BaseModel):
    """NDCG@10 / Recall@10 of the base model and the checkpoint on held-out queries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    queries: int
    passages: int
    base_ndcg_at_10: float
    base_recall_at_10: float
    checkpoint_ndcg_at_10: float
    checkpoint_recall_at_10: float

    @property
    def improved(self) -> bool:
        """True when the checkpoint beats the base on NDCG@10."""
        return self.checkpoint_ndcg_at_10 > self.base_ndcg_at_10


class FineTuneRun(BaseModel):
    """A run: its plan, status, stages, checkpoint and metrics (persisted as ``state.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    plan: FineTunePlan
    status: RunStatus
    created_at: str
    updated_at: str
    stages: tuple[StageRecord, ...]
    trainer: str | None = None
    checkpoint_id: str | None = None
    metrics: EvalMetrics | None = None
    deployed: bool = False
    error: str | None = None

    def stage(self, stage: Stage) -> StageRecord:
        """The record of ``stage``."""
        return next(s for s in self.stages if s.stage is stage)


class FineTuneStatus(BaseModel):
    """A snapshot of one run (the active one by default) and whether it is running now."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    active: bool
    run: FineTuneRun | None
    current_stage: Stage | None = None
    progress_done: int = 0
    progress_total: int = 0


class PreflightCheck(BaseModel):
    """One check of :meth:`FineTuneManager.preflight`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    ok: bool
    detail: str


class PreflightResult(BaseModel):
    """Whether a plan can run here, check by check."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    checks: tuple[PreflightCheck, ...]
    trainer: str | None = None

    def problems(self) -> list[str]:
        """The details of the failed checks."""
        return [f"{c.name}: {c.detail}" for c in self.checks if not c.ok]


class CheckpointRecord(BaseModel):
    """A checkpoint in the registry (``checkpoint_id="base"`` stands for the base model)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkpoint_id: str
    kind: str
    model_id: str
    base_model: str
    created_at: str
    run_id: str | None = None
    active: bool = False


class ActiveEmbedderSnapshot(BaseModel):
    """Which embedder the registry serves: the deployed checkpoint, or the base model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    spec: str
    model_id: str | None
    checkpoint_id: str | None
    base_model: str | None
    deployed_at: str | None
    registry: str
