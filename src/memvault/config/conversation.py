"""Settings of the conversation store, compaction, the embedding queue and the response cache.

Pure pydantic (no I/O), so :mod:`memvault.config` can compose them as ``[conversation]`` and
``[response_cache]``. Everything here is off by default and costs nothing when off: the
conversation store is used only by callers that open one (or by sessions configured with
``storage = "messages"``), compaction runs only when asked, the embedding queue only exists
beside a conversation store with an embedder, and the response cache only wraps a provider
that a caller (or ``[response_cache] enabled = true``) wraps.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CompactionConfig",
    "ConversationConfig",
    "EmbeddingQueueConfig",
    "ResponseCacheConfig",
]


class CompactionConfig(BaseModel):
    """Context pressure against a token budget (Zeph's deferred summaries).

    ``soft_threshold`` (share of ``token_budget``): tool call/result pairs are marked for a
    deferred summary. ``hard_threshold``: the marked pairs, and then the oldest unpinned turns,
    are summarised before the next LLM call until the context is back under
    ``target_ratio``. ``keep_recent`` messages at the end are never compacted (the model needs
    the turn it is answering). ``probe`` asks questions about the replaced messages against the
    summary and keeps the originals visible when the summary fails (score below
    ``probe_min_score``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    token_budget: int = Field(default=8_000, ge=64)
    soft_threshold: float = Field(default=0.6, gt=0.0, lt=1.0)
    hard_threshold: float = Field(default=0.9, gt=0.0, le=1.0)
    target_ratio: float = Field(default=0.5, gt=0.0, lt=1.0)
    keep_recent: int = Field(default=4, ge=0)
    probe: bool = True
    probe_questions: int = Field(default=3, ge=1, le=10)
    probe_min_score: float = Field(default=0.6, ge=0.0, le=1.0)
    max_summary_tokens: int = Field(default=400, ge=16)

    @model_validator(mode="after")
    def _ordered(self) -> CompactionConfig:
        if not self.target_ratio < self.soft_threshold < self.hard_threshold:
            msg = "compaction needs target_ratio < soft_threshold < hard_threshold"
            raise ValueError(msg)
        return self


class EmbeddingQueueConfig(BaseModel):
    """Batched, asynchronous embedding of admitted messages.

    A batch is embedded once it holds ``batch_size`` messages or ``batch_timeout_ms`` after its
    first message arrived, whichever comes first. ``backfill_on_start`` embeds the rows a
    previous process left without a vector (a crash, or a store written with the queue off)
    when the queue starts, ``backfill_batch_size`` at a time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    batch_size: int = Field(default=32, ge=1, le=4096)
    batch_timeout_ms: int = Field(default=200, ge=1, le=60_000)
    max_queue: int = Field(default=10_000, ge=1)
    backfill_on_start: bool = True
    backfill_batch_size: int = Field(default=256, ge=1, le=8192)


class ConversationConfig(BaseModel):
    """The conversation store (seed 004's message storage) and what runs on top of it.

    ``session_storage`` picks what ``SessionStore`` URLs open: ``"snapshot"`` (InitRunner's
    session rows, rewritten at every save: the default, so existing stores and integrations are
    untouched) or ``"messages"`` (every turn appended to the conversation store; a session is
    the visible view of its conversation). ``prune`` is where the two seeds disagree: InitRunner
    deletes sessions beyond ``max_sessions`` to bound the database, Zeph never deletes a
    message. ``"delete"`` (default: the documented session contract, and the only choice that
    keeps the file bounded) removes a pruned conversation and its messages; ``"archive"`` keeps
    them, hidden from ``list``/``latest``/resume.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_storage: Literal["snapshot", "messages"] = "snapshot"
    prune: Literal["delete", "archive"] = "delete"
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    embedding_queue: EmbeddingQueueConfig = Field(default_factory=EmbeddingQueueConfig)


class ResponseCacheConfig(BaseModel):
    """The semantic response cache in front of an LLM provider.

    A request is a hit when its normalised prompt was answered before (exact key) or, with an
    embedder and ``similarity_threshold`` below 1, when a cached prompt's embedding is at least
    that similar and the request parameters match. Entries live ``ttl_seconds`` and at most
    ``max_entries`` are kept (least recently used go first). Requests with a temperature above
    ``max_temperature`` are not cached: their caller asked for variety.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    ttl_seconds: float = Field(default=3_600.0, gt=0)
    max_entries: int = Field(default=1_000, ge=1)
    similarity_threshold: float = Field(default=0.97, gt=0.0, le=1.0)
    max_temperature: float = Field(default=0.3, ge=0.0, le=2.0)
