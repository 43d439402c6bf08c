"""Frozen configuration models, loadable from ``memvault.yaml`` and ``MEMVAULT_*`` variables.

The models are plain data; reading files and the environment happens only in
:func:`load_config`, called at the edges (CLI, server, ``Memory()`` without a config). Keys follow
the design documents::

    memory:
      level: session               # none | session | project | persistent (default: session)
      backend: sqlite              # sqlite | postgresql | inmemory | composite | mem0 | qdrant
      storage:
        url: ~/.memvault/memvault.db
        data_dir: null
      composite:                   # only with backend: composite
        routes: {working: "memory://"}   # category -> storage URL
        default: null              # every other category (null: the storage URL above)
      options:
        retention_days: null       # null = forever
        max_memories_per_agent: 10000
        consolidation_interval: daily
        shared_knowledge_base: true
        max_content_chars: 32000
      consolidation:               # strategy and tuning of Memory.consolidate()
        strategy: simple           # simple | llm | dual_mode | extract
        min_age_days: 30           # only memories at least this old are merged
        max_group_size: 5          # originals per merged memory
        llm: {group_threshold: 3, temperature: 0.3, max_summary_tokens: 500}
        archival: {enabled: true, dual_mode: {enabled: false, threshold: 0.3}}
      sessions: {max_sessions: 10, max_resume_messages: 20}
      embedder: default    # default (minilm) | minilm-l3 | hashing[:dim] | openai:<model> | auto
      retrieval:
        preset: default
        strategy: context
      procedural:                  # lessons from failed/successful tasks (memvault.learning)
        enabled: true
        min_confidence: 0.5
        capture: {type: failure}   # failure | success | hybrid
        pruning: {strategy: hybrid, max_age_days: 90}
        propagation: {strategy: none, max_propagation_targets: 10}
        evolver: {enabled: false, min_agents_seen_pattern: 3}
      org_memory:
        core_policies: ["PRs require 2 approvals"]
        extended_store: {max_retrieved_per_query: 5}

Level: with nothing configured the level is ``session`` (the seed's default: memories live in
the process). A storage location says durable: ``storage.url``, ``storage.data_dir``, a durable
``backend`` (sqlite, postgresql, mem0, qdrant, composite), ``MEMVAULT_URL`` or
``Memory("path.db")`` make the level ``persistent`` unless ``level`` is written explicitly. The
CLI and ``memvault serve`` pass ``default_level=persistent`` to :func:`load_config`, so they use
``~/.memvault/memvault.db`` when nothing else is said.

The seeds' other spellings load too and are mapped onto the keys above (see
:func:`normalize_section`); when a seed key and the memvault key it maps to are both given, the
memvault key wins:

- SynthOrg: ``consolidation.max_memories_per_agent`` -> ``options.max_memories_per_agent``;
  ``consolidation.retention.rules`` (``[{category, retention_days}]`` or ``{category: days}``)
  -> ``options.retention_by_category``; ``consolidation.retention.default_retention_days`` ->
  ``options.retention_days``; ``retention_overrides: {agent: {retention_days,
  retention_overrides}}`` -> ``options.agent_retention``; ``embedder: {provider, model,
  dims}`` -> ``embeddings``;
  ``consolidation.archival.dual_mode.enabled: true`` makes ``dual_mode`` the default strategy.
- InitRunner (``spec.memory`` of a role file, or the same keys in ``memvault.yaml``):
  ``max_sessions``/``max_resume_messages`` -> ``sessions``; ``semantic.max_memories``,
  ``episodic.max_episodes``, ``procedural.max_procedures`` -> ``options.max_per_category``
  (``max_memories`` is the deprecated spelling of ``semantic.max_memories``); ``enabled: false``
  of a type -> ``options.disabled_categories``; ``store_backend: sqlite-vec`` -> ``backend:
  sqlite``; ``store_path`` -> ``storage.url``; ``consolidation.interval`` ->
  ``options.consolidation_interval``; the consolidation strategy is ``extract`` (episodes to
  facts, as InitRunner consolidates).
- ``consolidation.interval`` / ``consolidation.enabled`` (both seeds): ``enabled: false`` sets
  ``options.consolidation_interval`` to ``never`` whatever else says otherwise.

Environment variables override the file: ``MEMVAULT_URL`` (storage URL), ``MEMVAULT_CONFIG``
(path of the YAML file), and any key as ``MEMVAULT_<SECTION>__<KEY>``, e.g.
``MEMVAULT_OPTIONS__RETENTION_DAYS=30`` or ``MEMVAULT_LEVEL=project`` (``null``, ``none`` or an
empty value clears a key; a whole section may be a JSON object). pydantic-settings merges the
layers. Errors name the full key path and the file (or variable) the bad value came from.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from memvault.config.conversation import ConversationConfig, ResponseCacheConfig
from memvault.config.finetune import EmbeddingFineTuneConfig
from memvault.config.graph import (
    ForgettingConfig,
    GraphConfig,
    ImportanceConfig,
    TieredRecallConfig,
)
from memvault.config.llm import LLMConfig
from memvault.config.maintenance import MaintenanceConfig
from memvault.config.persistence import PersistenceConfig
from memvault.errors import MemoryConfigError
from memvault.models import (
    DEFAULT_MAX_CONTENT_CHARS,
    ConsolidationInterval,
    MemoryCategory,
    MemoryLevel,
)

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

    from memvault.consolidation.service import ConsolidationConfig

    _EnvSourceFactory = Callable[
        [type[BaseSettings], Mapping[str, str]], PydanticBaseSettingsSource
    ]

__all__ = [
    "COMPOSITE_URL",
    "DEFAULT_DB_PATH",
    "MEM0_DATA_DIR",
    "MEMORY_URL",
    "QDRANT_DATA_DIR",
    "AgentRetentionConfig",
    "ArchivalSettings",
    "CaptureConfig",
    "CaptureType",
    "CompositeStorageConfig",
    "ConsolidationSettings",
    "DualModeSettings",
    "EmbeddingsConfig",
    "EvolverConfig",
    "InjectionStrategyName",
    "LLMConsolidationSettings",
    "MemoryOptionsConfig",
    "MemoryStorageConfig",
    "MemvaultConfig",
    "OrgExtendedStoreConfig",
    "OrgMemoryConfig",
    "OrgWriteAccessConfig",
    "ProceduralMemoryConfig",
    "PropagationConfig",
    "PropagationStrategyName",
    "PruningConfig",
    "PruningStrategyName",
    "RetrievalSettings",
    "SessionsSettings",
    "load_config",
    "normalize_section",
]

DEFAULT_DB_PATH = "~/.memvault/memvault.db"
PROJECT_DB_PATH = "./.memvault/memvault.db"
MEMORY_URL = "memory://"
"""The in-process store (levels ``session`` and ``none``)."""
MEM0_DATA_DIR = "~/.memvault/mem0"
"""Data directory of ``backend: mem0`` when ``storage.data_dir`` is not set."""
QDRANT_DATA_DIR = "~/.memvault/qdrant"
"""Data directory of ``backend: qdrant`` (local on-disk mode) when nothing else is set."""


class InjectionStrategyName(StrEnum):
    """How memories reach the agent."""

    CONTEXT = "context"
    TOOL_BASED = "tool_based"
    SELF_EDITING = "self_editing"


class MemoryStorageConfig(BaseModel):
    """Where memories are stored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = None
    data_dir: str | None = None
    read_url: str | None = None
    """A streaming replica of a PostgreSQL store: searches, lists, counts and gets go there
    (read-your-writes for the writing process), writes to ``url`` (docs/scaling.md)."""
    # What an acknowledged write survives. ``process`` (the default): a crash or kill -9 of any
    # memvault process loses nothing acknowledged; a power cut or kernel crash may drop the last
    # writes of a SQLite store (never corrupts it). ``power``: acknowledged writes also survive a
    # power cut: SQLite fsyncs the WAL on every commit (synchronous=FULL, measured by
    # benchmarks/bench_durability.py); PostgreSQL keeps its defaults either way (the server is
    # another process and synchronous_commit=on already flushes every commit).
    durability: str = Field(default="process", pattern="^(process|power)$")
    # The lower-level SQLite key: when set explicitly it wins over ``durability``; left out, it
    # follows it (process -> normal, power -> full).
    synchronous: str = Field(default="normal", pattern="^(normal|full)$")
    # Accepted for compatibility with the design documents' examples; memvault ignores them.
    vector_store: str | None = None
    history_store: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _synchronous_follows_durability(cls, data: Any) -> Any:
        # ``synchronous`` given explicitly wins; otherwise it is what ``durability`` asks for.
        if isinstance(data, Mapping) and data.get("synchronous") is None:
            fields = {k: v for k, v in data.items() if k != "synchronous"}
            if data.get("durability") == "power":
                fields["synchronous"] = "full"
            return fields
        return data


COMPOSITE_URL = "composite://"
"""The pseudo-URL of a composite store; its children come from ``memory.composite``."""


class CompositeStorageConfig(BaseModel):
    """Children of ``backend: composite``: a storage URL per routed category, and a default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    routes: dict[MemoryCategory, str] = Field(default_factory=dict)
    default: str | None = None

    def __hash__(self) -> int:
        # Configurations are hashable values; the routes dict alone would make this one not.
        return hash((tuple(sorted(self.routes.items())), self.default))


class AgentRetentionConfig(BaseModel):
    """One agent's retention overrides: a default maximum age and per-category ones (days).

    ``by_category`` is also accepted under the seed's name ``retention_overrides``, as a mapping
    or as the seed's rule list ``[{category: episodic, retention_days: 7}, ...]``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    retention_days: int | None = Field(default=None, ge=1)
    by_category: Mapping[MemoryCategory, int] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("by_category", "retention_overrides"),
    )

    @model_validator(mode="before")
    @classmethod
    def _rule_list(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key in ("by_category", "retention_overrides"):
                if isinstance(data.get(key), list):
                    data = {**data, key: _rules_to_mapping(data[key], key)}
        return data

    def __hash__(self) -> int:
        # Configurations are hashable values (see CompositeStorageConfig).
        return hash((self.retention_days, tuple(sorted(self.by_category.items()))))


class MemoryOptionsConfig(BaseModel):
    """Behaviour tuning of the memory store."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retention_days: int | None = Field(default=None, ge=1)
    max_memories_per_agent: int | None = Field(default=10_000, ge=1)
    consolidation_interval: ConsolidationInterval = ConsolidationInterval.DAILY
    shared_knowledge_base: bool = True
    max_content_chars: int = Field(default=DEFAULT_MAX_CONTENT_CHARS, ge=1, le=1_000_000)
    dedup: bool = True
    """Near-duplicate writes become confirmations and contradicting ones supersede (add)."""
    llm_supersession: bool = True
    """With an LLM given to the memory (and ``dedup`` on): a write the rules cannot settle,
    close to a memory it may replace and marking a change ("switched to day shifts"), is
    settled by one LLM call; a yes supersedes, anything else stores it as new. No effect
    without an LLM."""
    retention_by_category: Mapping[MemoryCategory, int] = Field(default_factory=dict)
    """Company-level maximum age in days per category (over ``retention_days``)."""
    agent_retention: Mapping[str, AgentRetentionConfig] = Field(default_factory=dict)
    """Per-agent overrides of the retention rules."""
    max_per_category: Mapping[MemoryCategory, int] = Field(default_factory=dict)
    """Caps per category and agent (e.g. episodic: 1000); over a cap the weakest are evicted."""
    disabled_categories: tuple[MemoryCategory, ...] = ()
    """Memory types switched off (InitRunner's ``episodic.enabled: false`` and the like):
    writes of these categories are to be refused."""

    def __hash__(self) -> int:
        # Configurations are hashable values; the mappings alone would make this one not.
        plain = tuple(
            (name, value) for name, value in self.__dict__.items() if not isinstance(value, Mapping)
        )
        return hash(
            (
                plain,
                tuple(sorted(self.retention_by_category.items())),
                tuple(sorted(self.agent_retention.items())),
                tuple(sorted(self.max_per_category.items())),
            )
        )


class RetrievalSettings(BaseModel):
    """Which retrieval preset and injection strategy to use."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    preset: str = "default"
    strategy: InjectionStrategyName = InjectionStrategyName.CONTEXT


# -- learning: procedural memory, capture, pruning, propagation, evolver, org memory ----------


class CaptureType(StrEnum):
    """Which task outcomes become procedural lessons (``procedural.capture.type``)."""

    FAILURE = "failure"
    SUCCESS = "success"
    HYBRID = "hybrid"


class CaptureConfig(BaseModel):
    """When a finished task is turned into a lesson.

    ``failure`` learns from failed tasks only, ``success`` from successful ones whose quality
    score reaches ``min_quality_score`` (0-10) and the ``success_quality_percentile`` of the
    agent's recent scores, ``hybrid`` from both.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: CaptureType = CaptureType.FAILURE
    min_quality_score: float = Field(default=8.0, ge=0.0, le=10.0)
    success_quality_percentile: float = Field(default=75.0, ge=0.0, le=100.0)


class PruningStrategyName(StrEnum):
    """How procedural memory is pruned (``procedural.pruning.strategy``)."""

    NONE = "none"
    TTL = "ttl"
    PARETO = "pareto"
    HYBRID = "hybrid"


class PruningConfig(BaseModel):
    """Pruning of an agent's procedural lessons; pruned lessons go to the archive."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: PruningStrategyName = PruningStrategyName.HYBRID
    max_age_days: int = Field(default=90, ge=1)
    max_entries: int = Field(default=200, ge=1)


class PropagationStrategyName(StrEnum):
    """Who else receives an agent's lessons (``procedural.propagation.strategy``)."""

    NONE = "none"
    ROLE = "role"
    DEPARTMENT = "department"


class PropagationConfig(BaseModel):
    """Cross-agent propagation of lessons (copies tagged ``propagated:{source_agent_id}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: PropagationStrategyName = PropagationStrategyName.NONE
    max_propagation_targets: int = Field(default=10, ge=1)


class EvolverConfig(BaseModel):
    """The autonomous skill evolver: org-wide skill proposals from many agents' trajectories.

    Proposal-only: ``requires_human_approval`` cannot be anything but ``true``; proposals go to
    the approval queue and nothing reaches org memory before a human approves it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    enabled: bool = False
    requires_human_approval: Literal[True] = True
    min_confidence_for_org_promotion: float = Field(default=0.8, ge=0.0, le=1.0)
    # The seed names this key both ways; the configuration section's spelling is canonical.
    min_agents_seen_pattern: int = Field(
        default=3,
        ge=1,
        validation_alias=AliasChoices("min_agents_seen_pattern", "min_agents_for_pattern"),
    )
    max_proposals_per_cycle: int = Field(default=10, ge=1)
    max_org_entries: int = Field(default=10_000, ge=1)
    window_days: int = Field(default=7, ge=1)
    """How far back a cycle collects trajectories."""


class ProceduralMemoryConfig(BaseModel):
    """Procedural memory auto-generation (``memory.procedural`` in ``memvault.yaml``).

    ``model``, when written, is the model the proposer asks (the memory's LLM endpoint with that
    model); left out, the proposer asks the LLM's own model. Every lesson records the model
    that proposed it. ``skill_md_directory`` also writes each lesson as an Agent Skills
    ``SKILL.md`` file.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    model: str = "example-small-001"
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1500, ge=64)
    min_confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    skill_md_directory: str | None = None
    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    pruning: PruningConfig = Field(default_factory=PruningConfig)
    propagation: PropagationConfig = Field(default_factory=PropagationConfig)
    evolver: EvolverConfig = Field(default_factory=EvolverConfig)


OrgWriter = Literal["human", "junior", "mid", "senior", "lead", "c_suite"]
_ORG_WRITERS: tuple[OrgWriter, ...] = ("human", "senior", "lead", "c_suite")


class OrgWriteAccessConfig(BaseModel):
    """Who may write each kind of org fact: ``human`` and/or agent seniority levels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    policies: tuple[OrgWriter, ...] = ("human",)
    adrs: tuple[OrgWriter, ...] = _ORG_WRITERS
    procedures: tuple[OrgWriter, ...] = _ORG_WRITERS
    conventions: tuple[OrgWriter, ...] = _ORG_WRITERS


class OrgExtendedStoreConfig(BaseModel):
    """The queryable part of org memory (ADRs, procedures, conventions, org skills).

    It lives in the memory store itself; ``backend`` is accepted for the design documents'
    examples and must agree with it when given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["sqlite", "postgresql"] | None = None
    max_retrieved_per_query: int = Field(default=5, ge=0, le=100)


class OrgMemoryConfig(BaseModel):
    """Organisational memory (``memory.org_memory``): core policies plus an extended store.

    ``core_policies`` (at most 10) are injected into every agent's context by every injection
    strategy, together with the policies written through the API.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["hybrid_prompt_retrieval"] = "hybrid_prompt_retrieval"
    core_policies: tuple[str, ...] = Field(default=(), max_length=10)
    extended_store: OrgExtendedStoreConfig = Field(default_factory=OrgExtendedStoreConfig)
    write_access: OrgWriteAccessConfig = Field(default_factory=OrgWriteAccessConfig)
    max_core_policies: int = Field(default=10, ge=1, le=50)


# -- embeddings and consolidation -----------------------------------------------------------------

_EMBEDDER_KINDS = (
    "default",
    "minilm",
    "minilm-l3",
    "paraphrase-minilm-l3",
    "minilm-numpy",
    "hashing",
)


class EmbeddingsConfig(BaseModel):
    """An embedding provider given as fields (InitRunner's ``embeddings``, SynthOrg's ``embedder``).

    ``provider`` empty keeps memvault's bundled offline model (InitRunner would derive it from
    the agent's model provider; memvault does not, so that no store silently needs a remote
    key). ``openai`` or a ``base_url`` (any OpenAI-compatible endpoint) use
    :class:`~memvault.embeddings.OpenAICompatibleEmbedder`; memvault's own names (``minilm``,
    ``hashing``, ...) are accepted as providers too. The API key is read from the environment
    variable ``api_key_env`` (default ``OPENAI_API_KEY``) when the embedder is built
    (:func:`memvault.backends.embedder.build_embedder`), never stored in the configuration.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = ""
    model: str = ""
    base_url: str = Field(default="", pattern=r"^(|https?://\S+)$")
    api_key_env: str = Field(default="", pattern=r"^(|[A-Za-z_][A-Za-z0-9_]*)$")
    dims: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _servable(self) -> Self:
        self.spec()  # a provider memvault cannot serve is refused when the file is read
        return self

    @property
    def remote(self) -> bool:
        """True if the vectors come from an OpenAI-compatible HTTP endpoint."""
        return bool(self.base_url) or self.provider.strip().lower() == "openai"

    def spec(self) -> str | None:
        """The equivalent ``embedder`` spec string, or None when these fields name nothing.

        Raises:
            ValueError: a provider memvault cannot serve without a ``base_url``.
        """
        provider = self.provider.strip().lower()
        model = self.model.strip()
        if self.remote:
            return f"openai:{model or DEFAULT_OPENAI_EMBEDDING_MODEL}"
        if not provider:
            return None if not model else _embedder_kind_spec(model)
        if provider in _EMBEDDER_KINDS:
            return f"{provider}:{model}" if model else provider
        msg = (
            f"embeddings provider {self.provider!r} needs a base_url (memvault talks to any "
            "OpenAI-compatible endpoint) or one of: openai, " + ", ".join(_EMBEDDER_KINDS)
        )
        raise ValueError(msg)


DEFAULT_OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"


def _embedder_kind_spec(model: str) -> str:
    if model.split(":")[0].lower() in _EMBEDDER_KINDS:
        return model
    msg = f"embeddings model {model!r} needs a provider or a base_url"
    raise ValueError(msg)


ConsolidationStrategyName = Literal["simple", "llm", "dual_mode", "extract"]


class DualModeSettings(BaseModel):
    """Density-aware archival (the seed's ``DualModeConfig``): dense groups kept verbatim.

    ``enabled: true`` makes ``dual_mode`` the default consolidation strategy (unless
    ``consolidation.strategy`` says otherwise).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    enabled: bool = False
    threshold: float = Field(
        default=0.3,
        gt=0.0,
        le=1.0,
        validation_alias=AliasChoices("threshold", "dense_threshold", "density_threshold"),
    )
    """Density score at or above which a group counts as dense."""
    summarization_model: str | None = None
    """The model of the dual-mode LLM summaries (the memory's LLM endpoint with that model;
    else ``consolidation.model_override``, else the LLM's own model)."""
    max_facts: int = Field(default=10, ge=0)
    """Key facts kept verbatim per dense entry (besides its start/mid/end anchors)."""
    anchor_chars: int = Field(default=300, ge=20)
    """Length of each anchor and fact unit kept verbatim."""


class ArchivalSettings(BaseModel):
    """Where consolidated originals go (the seed's ``ArchivalConfig``).

    memvault always archives them (nothing is silently lost, and ``restore()`` needs the
    archive), so ``enabled: false`` is refused rather than ignored.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: Literal[True] = True
    dual_mode: DualModeSettings = Field(default_factory=DualModeSettings)


class LLMConsolidationSettings(BaseModel):
    """Tuning of the LLM synthesis op (the seed's ``LLMConsolidationConfig``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group_threshold: int = Field(default=3, ge=3)
    """Smallest category group that is consolidated; the seed's minimum is 3."""
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_summary_tokens: int = Field(default=500, ge=1)
    include_distillation_context: bool = True
    max_entry_input_chars: int = Field(default=2_000, ge=20)
    max_total_user_content_chars: int = Field(default=20_000, ge=20)

    @model_validator(mode="after")
    def _caps(self) -> Self:
        if self.max_total_user_content_chars < self.max_entry_input_chars:
            raise ValueError("max_total_user_content_chars must be >= max_entry_input_chars")
        return self


class ConsolidationSettings(BaseModel):
    """``memory.consolidation``: what ``Memory.consolidate()`` does when not told otherwise.

    The seeds' retention keys of this section (``max_memories_per_agent``, ``retention``) and
    ``interval`` are moved to ``options`` when the file is read (see :func:`normalize_section`).
    ``strategy`` is also the strategy of scheduled runs (``maintenance.consolidation_strategy``
    follows it unless written itself). ``model_override`` names the model of consolidation LLM
    calls (InitRunner): the memory's LLM endpoint asked with that model.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: ConsolidationStrategyName = "simple"
    enabled: bool = True
    min_age_days: float = Field(default=30.0, ge=0.0, le=36_500.0)
    """Consolidation compresses *old* memories: the merging strategies (simple, dual_mode,
    llm) leave every memory created less than this many days ago untouched, in scheduled,
    triggered and explicit runs alike (``memvault consolidate --min-age-days N`` overrides it
    for one run). ``extract`` archives nothing and is not held back."""
    max_group_size: int = Field(default=5, ge=2, le=1_000)
    """At most this many originals are merged into one new memory (a larger category group
    becomes several), so each original's text still finds the memory that replaced it."""
    max_episodes_per_run: int = Field(default=20, ge=1)
    model_override: str | None = None
    archival: ArchivalSettings = Field(default_factory=ArchivalSettings)
    llm: LLMConsolidationSettings = Field(default_factory=LLMConsolidationSettings)

    def consolidation_config(self) -> ConsolidationConfig:
        """These settings as the consolidation service's :class:`ConsolidationConfig`."""
        from memvault.consolidation.service import ConsolidationConfig

        llm = self.llm
        return ConsolidationConfig(
            group_threshold=llm.group_threshold,
            min_age_days=self.min_age_days,
            max_group_size=self.max_group_size,
            temperature=llm.temperature,
            max_summary_tokens=llm.max_summary_tokens,
            include_distillation_context=llm.include_distillation_context,
            max_entry_input_chars=llm.max_entry_input_chars,
            max_total_user_content_chars=llm.max_total_user_content_chars,
            max_episodes_per_run=self.max_episodes_per_run,
            density_threshold=self.archival.dual_mode.threshold,
            extractive_max_facts=self.archival.dual_mode.max_facts,
            extractive_unit_chars=self.archival.dual_mode.anchor_chars,
        )


class SessionsSettings(BaseModel):
    """``memory.sessions``: conversation history limits (InitRunner's top-level keys).

    ``max_resume_messages`` messages are loaded on resume (an active history is trimmed to
    twice that); only the ``max_sessions`` most recent sessions of an agent are kept. The same
    fields as :class:`memvault.sessions.SessionConfig` (the sessions package sits above this
    module): ``SessionConfig(**config.sessions.model_dump())``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_sessions: int = Field(default=10, ge=1)
    max_resume_messages: int = Field(default=20, ge=1)


_DURABLE_BACKENDS = frozenset({"sqlite", "postgresql", "postgres", "composite", "mem0", "qdrant"})


class MemvaultConfig(BaseModel):
    """The whole ``memory:`` section of ``memvault.yaml``.

    The seeds' other spellings (SynthOrg's consolidation/retention keys, InitRunner's
    ``spec.memory`` keys) are accepted and mapped onto these fields (:func:`normalize_section`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: MemoryLevel = MemoryLevel.SESSION
    """``session`` unless written, or unless a storage location is given (then ``persistent``)."""
    backend: str | None = Field(
        default=None, pattern="^(sqlite|postgresql|postgres|inmemory|composite|mem0|qdrant)$"
    )
    storage: MemoryStorageConfig = Field(default_factory=MemoryStorageConfig)
    composite: CompositeStorageConfig = Field(default_factory=CompositeStorageConfig)
    options: MemoryOptionsConfig = Field(default_factory=MemoryOptionsConfig)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    sessions: SessionsSettings = Field(default_factory=SessionsSettings)
    embedder: str = "default"
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    procedural: ProceduralMemoryConfig = Field(default_factory=ProceduralMemoryConfig)
    org_memory: OrgMemoryConfig = Field(default_factory=OrgMemoryConfig)
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    tiered_recall: TieredRecallConfig = Field(default_factory=TieredRecallConfig)
    forgetting: ForgettingConfig = Field(default_factory=ForgettingConfig)
    importance: ImportanceConfig = Field(default_factory=ImportanceConfig)
    conversation: ConversationConfig = Field(default_factory=ConversationConfig)
    """Seed 004's conversation store, compaction and embedding queue (issue 18; all opt-in)."""
    response_cache: ResponseCacheConfig = Field(default_factory=ResponseCacheConfig)
    """The semantic response cache in front of memvault's own LLM calls (off by default)."""
    fine_tune: EmbeddingFineTuneConfig = Field(default_factory=EmbeddingFineTuneConfig)
    """The embedder fine-tune lifecycle and its checkpoint registry (issue 19; off by default)."""
    persistence: PersistenceConfig = Field(default_factory=PersistenceConfig)
    """Operational records (seed 001): written beside ``memory:`` at the top of the file, or
    here; see :mod:`memvault.config.persistence`."""
    llm: LLMConfig = Field(default_factory=LLMConfig)
    """The OpenAI-compatible model memvault's own LLM-backed work uses (unset: the
    ``MEMVAULT_LLM_*`` variables, else none); see :mod:`memvault.config.llm`."""

    @model_validator(mode="before")
    @classmethod
    def _seed_spellings(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            try:
                return normalize_section(data)[0]
            except _SeedKeyError as exc:
                raise ValueError(str(exc)) from None
        return data

    @model_validator(mode="after")
    def _level_and_store(self) -> Self:
        # A storage location is a request for durable storage: without an explicit level it
        # makes the (in-process by default) level persistent. The level is set here, at
        # validation, so that a dump of the config loads back to the same store.
        if (
            "level" not in self.model_fields_set
            and self.level is MemoryLevel.SESSION
            and self.names_a_store()
        ):
            object.__setattr__(self, "level", MemoryLevel.PERSISTENT)
        if self.backend in ("mem0", "qdrant"):
            self._adapter_url()  # a storage URL the adapter cannot use is refused now
        maint = self.maintenance
        if (
            "consolidation_strategy" not in maint.model_fields_set
            and maint.consolidation_strategy != self.consolidation.strategy
        ):
            # One strategy for consolidate() and the scheduler unless each is written.
            synced = maint.model_copy(
                update={"consolidation_strategy": self.consolidation.strategy}
            )
            synced.__pydantic_fields_set__.discard("consolidation_strategy")
            object.__setattr__(self, "maintenance", synced)
        spec = self.embeddings.spec()
        if spec is not None and "embedder" not in self.model_fields_set:
            object.__setattr__(self, "embedder", spec)
        return self

    def names_a_store(self) -> bool:
        """True if the storage settings name a durable store (a URL, a directory, a backend)."""
        url = (self.storage.url or "").strip()
        if url and not url.startswith(("memory:", ":memory:")):
            return True
        return bool(self.storage.data_dir) or self.backend in _DURABLE_BACKENDS

    def resolved_url(self, url: str | None = None) -> str:
        """The storage URL implied by level, backend, url and data_dir.

        ``url`` is an explicit location (``Memory(url)``, ``--db``): it wins over the
        configuration unless ``level`` was set explicitly to ``session`` or ``none``.
        ``backend: mem0`` gives ``mem0:///abs/data_dir`` (default :data:`MEM0_DATA_DIR`),
        ``backend: qdrant`` ``qdrant:///abs/dir`` for local on-disk Qdrant (default
        :data:`QDRANT_DATA_DIR`) or ``qdrant+http(s)://host:port`` for a server URL.
        """
        in_process = self.level in (MemoryLevel.SESSION, MemoryLevel.NONE)
        if url is not None and url.strip():
            return MEMORY_URL if in_process and "level" in self.model_fields_set else url
        if in_process or self.backend == "inmemory":
            return MEMORY_URL
        if self.backend == "composite":
            return COMPOSITE_URL
        if self.backend in ("mem0", "qdrant"):
            return self._adapter_url()
        if self.storage.url:
            return self.storage.url
        if self.storage.data_dir:
            return str(Path(self.storage.data_dir).expanduser() / "memvault.db")
        if self.level is MemoryLevel.PROJECT:
            return PROJECT_DB_PATH
        return DEFAULT_DB_PATH

    def _adapter_url(self) -> str:
        """The URL of a ``mem0`` or ``qdrant`` store (see :meth:`resolved_url`)."""
        scheme = "mem0" if self.backend == "mem0" else "qdrant"
        url = (self.storage.url or "").strip()
        if url:
            if url.startswith((f"{scheme}://", f"{scheme}+")):
                return url
            if scheme == "qdrant" and url.startswith(("http://", "https://")):
                return f"qdrant+{url}"
            if "://" in url:
                msg = (
                    f"storage.url {url!r} cannot be used with backend {scheme}: use a directory "
                    + ("or a qdrant server http(s)://host:port" if scheme == "qdrant" else "")
                )
                raise ValueError(msg.strip())
            directory = url
        else:
            directory = self.storage.data_dir or (
                MEM0_DATA_DIR if scheme == "mem0" else QDRANT_DATA_DIR
            )
        return f"{scheme}://{Path(directory).expanduser().absolute()}"

    def composite_default_url(self) -> str:
        """The default child of a composite store: ``composite.default``, else the storage URL."""
        if self.composite.default:
            return self.composite.default
        return self.model_copy(update={"backend": None}).resolved_url()


# -- the seeds' spellings ------------------------------------------------------------------------


class _SeedKeyError(ValueError):
    """A seed-spelled key with a wrong shape; ``path`` is its dotted key path in the section."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


_INITRUNNER_KEYS = frozenset(
    {"max_sessions", "max_memories", "max_resume_messages", "store_backend", "store_path"}
)
# InitRunner memory type -> (its cap key, the cap's default)
_INITRUNNER_TYPES = {
    "episodic": ("max_episodes", 500),
    "semantic": ("max_memories", 1000),
    "procedural": ("max_procedures", 100),
}
_INITRUNNER_STORES = ("sqlite-vec", "sqlite")
_INITRUNNER_DEFAULT_MAX_MEMORIES = 1000

Origins = dict[tuple[str, ...], str]
"""Canonical key path -> the seed key path (dotted) it was read from."""


def _is_initrunner(data: Mapping[str, Any]) -> bool:
    if any(key in data for key in _INITRUNNER_KEYS):
        return True
    if any(isinstance(data.get(name), Mapping) for name in ("episodic", "semantic")):
        return True
    proc = data.get("procedural")
    return isinstance(proc, Mapping) and "max_procedures" in proc


def _has(data: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = data
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True


def _put(
    data: dict[str, Any], path: tuple[str, ...], value: Any, origin: str, origins: Origins
) -> None:
    """Set ``path`` to ``value`` unless the memvault key is already given (it wins)."""
    if _has(data, path):
        return
    node = data
    for key in path[:-1]:
        child = node.get(key)
        child = dict(child) if isinstance(child, Mapping) else {}
        node[key] = child
        node = child
    node[path[-1]] = value
    origins[path] = origin


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _SeedKeyError(path, f"must be a mapping, got {type(value).__name__}")
    return dict(value)


def _rules_to_mapping(rules: Any, path: str) -> dict[str, Any]:
    """The seed's ``RetentionRule`` list (``[{category, retention_days}]``) as a mapping."""
    if isinstance(rules, Mapping):
        return dict(rules)
    if not isinstance(rules, list):
        raise _SeedKeyError(path, "must be a list of {category, retention_days} or a mapping")
    found: dict[str, Any] = {}
    for i, rule in enumerate(rules):
        where = f"{path}[{i}]"
        if not isinstance(rule, Mapping) or set(rule) != {"category", "retention_days"}:
            raise _SeedKeyError(where, "each rule needs exactly category and retention_days")
        found[str(rule["category"]).lower()] = rule["retention_days"]
    return found


def normalize_section(
    section: Mapping[str, Any], *, role_file: bool = False
) -> tuple[dict[str, Any], Origins]:
    """The ``memory`` section with the seeds' spellings moved onto memvault's keys.

    Returns the new section and, for every key it set, the seed key it came from. A memvault key
    given together with the seed key it stands for wins. ``role_file``: the section is the
    ``spec.memory`` of an InitRunner role file, so InitRunner's defaults apply in full
    (``store_backend: sqlite-vec`` included, which makes the store durable). Applying it twice
    changes nothing.

    Raises:
        ValueError: a seed key with a wrong shape (the message names the key path).
    """
    data = dict(section)
    origins: Origins = {}
    if role_file or _is_initrunner(data):
        _from_initrunner(data, origins, role_file=role_file)
    _from_synthorg(data, origins)
    return data, origins


def _from_initrunner(data: dict[str, Any], origins: Origins, *, role_file: bool) -> None:
    for key in ("max_sessions", "max_resume_messages"):
        if key in data:
            _put(data, ("sessions", key), data.pop(key), key, origins)
    store = data.pop("store_backend", _INITRUNNER_STORES[0] if role_file else None)
    if store is not None:
        if store not in _INITRUNNER_STORES:
            msg = f"unsupported store_backend {store!r} (InitRunner's is sqlite-vec: SQLite here)"
            raise _SeedKeyError("store_backend", msg)
        _put(data, ("backend",), "sqlite", "store_backend", origins)
    # InitRunner's default is ~/.initrunner/memory/<agent>.db; memvault keeps its own default
    # store (one file for every agent, ~/.memvault/memvault.db) unless store_path names one.
    store_path = data.pop("store_path", None)
    if store_path is not None:
        _put(data, ("storage", "url"), str(store_path), "store_path", origins)
        # InitRunner: "the directory is created automatically": a managed data directory.
        storage = data.get("storage")
        if (
            isinstance(storage, dict)
            and not storage.get("data_dir")
            and "://" not in str(store_path)
        ):
            storage["data_dir"] = str(Path(str(store_path)).expanduser().parent)
    legacy = data.pop("max_memories", None)
    disabled: list[str] = []
    for name, (cap_key, default) in _INITRUNNER_TYPES.items():
        if name == "procedural":
            # memvault's own procedural section; only InitRunner's cap is taken out of it.
            block = _mapping(data.get(name), name)
            cap = block.pop(cap_key, default)
            if name in data:
                data[name] = block
            enabled = block.get("enabled", True)
        else:
            block = _mapping(data.pop(name, None), name)
            unknown = sorted(set(block) - {"enabled", cap_key})
            if unknown:
                raise _SeedKeyError(f"{name}.{unknown[0]}", f"unknown key (use enabled, {cap_key})")
            cap = block.get(cap_key, default)
            enabled = block.get("enabled", True)
        origin = f"{name}.{cap_key}"
        if (
            name == "semantic"
            and legacy is not None
            and legacy != _INITRUNNER_DEFAULT_MAX_MEMORIES
            and cap == _INITRUNNER_DEFAULT_MAX_MEMORIES
        ):
            # The seed's rule for the deprecated top-level key: a non-default value is synced
            # into semantic.max_memories when that one is at its default.
            cap, origin = legacy, "max_memories"
        _put(data, ("options", "max_per_category", name), cap, origin, origins)
        if not isinstance(enabled, bool):
            raise _SeedKeyError(f"{name}.enabled", "must be true or false")
        if not enabled:
            disabled.append(name)
    if disabled:
        _put(data, ("options", "disabled_categories"), disabled, "enabled: false", origins)
    cons = _mapping(data.get("consolidation"), "consolidation")
    # InitRunner consolidates episodes into facts, after each session by default.
    if "strategy" not in cons:
        cons["strategy"] = "extract"
        origins[("consolidation", "strategy")] = "consolidation (InitRunner: episodes to facts)"
    if "interval" not in cons and not _has(data, ("options", "consolidation_interval")):
        cons["interval"] = ConsolidationInterval.AFTER_SESSION.value
    data["consolidation"] = cons


_ZEPH_SECTIONS = {"memflow": "tiered_recall", "scrap_mem": "forgetting"}
"""Zeph's section names (seed 004, ``[memory.memflow]``, ``[memory.scrap_mem]``) -> memvault's."""


def _from_synthorg(data: dict[str, Any], origins: Origins) -> None:
    for seed_key, key in _ZEPH_SECTIONS.items():
        if seed_key in data:
            _put(data, (key,), _mapping(data.pop(seed_key), seed_key), seed_key, origins)
    if isinstance(data.get("embedder"), Mapping):
        _put(data, ("embeddings",), dict(data.pop("embedder")), "embedder", origins)
    overrides = _mapping(data.pop("retention_overrides", None), "retention_overrides")
    for agent, rule in overrides.items():
        where = f"retention_overrides.{agent}"
        _put(data, ("options", "agent_retention", str(agent)), rule, where, origins)
    if "consolidation" not in data:
        return
    cons = _mapping(data["consolidation"], "consolidation")
    if "max_memories_per_agent" in cons:
        value = cons.pop("max_memories_per_agent")
        _put(
            data,
            ("options", "max_memories_per_agent"),
            value,
            "consolidation.max_memories_per_agent",
            origins,
        )
    if "retention" in cons:
        retention = _mapping(cons.pop("retention"), "consolidation.retention")
        unknown = sorted(set(retention) - {"rules", "default_retention_days"})
        if unknown:
            msg = "unknown key (use rules, default_retention_days)"
            raise _SeedKeyError(f"consolidation.retention.{unknown[0]}", msg)
        if "rules" in retention:
            rules = _rules_to_mapping(retention["rules"], "consolidation.retention.rules")
            for category, days in rules.items():
                where = f"consolidation.retention.rules.{category}"
                _put(data, ("options", "retention_by_category", category), days, where, origins)
        if "default_retention_days" in retention:
            where = "consolidation.retention.default_retention_days"
            _put(
                data,
                ("options", "retention_days"),
                retention["default_retention_days"],
                where,
                origins,
            )
    if "interval" in cons:
        interval = cons.pop("interval")
        _put(
            data, ("options", "consolidation_interval"), interval, "consolidation.interval", origins
        )
    if cons.get("enabled") is False:
        # Switched off means no scheduled run, whatever interval is written elsewhere.
        options = _mapping(data.get("options"), "options")
        options["consolidation_interval"] = ConsolidationInterval.NEVER.value
        data["options"] = options
        origins[("options", "consolidation_interval")] = "consolidation.enabled"
    archival = cons.get("archival")
    dual = archival.get("dual_mode") if isinstance(archival, Mapping) else None
    if "strategy" not in cons and isinstance(dual, Mapping) and dual.get("enabled") is True:
        cons["strategy"] = "dual_mode"
        origins[("consolidation", "strategy")] = "consolidation.archival.dual_mode.enabled"
    data["consolidation"] = cons


_PREFIX = "MEMVAULT_"
_NULLS = ("null", "none", "")
_FIELDS = tuple(MemvaultConfig.model_fields)


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    default_level: MemoryLevel | str | None = None,
) -> MemvaultConfig:
    """Build the configuration from a YAML file, the environment and an explicit URL.

    Precedence, highest first: ``url``, environment variables, the file. The file is ``path``,
    else ``$MEMVAULT_CONFIG``, else ``./memvault.yaml`` when it exists. It holds a ``memory:``
    section, the section itself, or an InitRunner role file (``apiVersion``/``kind``/
    ``spec.memory``). ``default_level`` is the level when no source sets one and none names a
    store (the library's default is ``session``; the CLI and ``memvault serve`` pass
    ``persistent``).

    Raises:
        MemoryConfigError: the file is unreadable or a value is invalid; the message names the
            full key path and the file or the environment variable it came from.
    """
    return _load(path, env=env, url=url, default_level=default_level).config


class _Loaded:
    """What :func:`_load` read: the config plus the layers it came from (for provenance)."""

    def __init__(
        self,
        config: MemvaultConfig,
        *,
        file: Path | None,
        prefix: str,
        data: dict[str, Any],
        origins: Origins,
        variables: dict[str, str],
        explicit_url: str | None,
        url_source: str | None,
    ) -> None:
        self.config = config
        self.file = file
        self.prefix = prefix
        self.data = data
        self.origins = origins
        self.variables = variables
        self.explicit_url = explicit_url
        self.url_source = url_source


def _load(
    path: str | os.PathLike[str] | None,
    *,
    env: Mapping[str, str] | None,
    url: str | None,
    default_level: MemoryLevel | str | None,
) -> _Loaded:
    env = os.environ if env is None else env
    file = Path(path) if path is not None else None
    if file is None and env.get("MEMVAULT_CONFIG"):
        file = Path(env["MEMVAULT_CONFIG"])
    if file is None and Path("memvault.yaml").is_file():
        file = Path("memvault.yaml")
    data: dict[str, Any] = {}
    origins: Origins = {}
    prefix = "memory"
    if file is not None:
        raw, prefix, role_file = _read_yaml(file)
        try:
            data, origins = normalize_section(raw, role_file=role_file)
        except _SeedKeyError as exc:
            msg = f"invalid configuration at {prefix}.{exc.path} in {file}: {exc.message}"
            raise MemoryConfigError(msg) from exc
    explicit_url = url or env.get("MEMVAULT_URL") or None
    url_source = None if not explicit_url else ("argument" if url else "MEMVAULT_URL")
    # MEMVAULT_<FIELD> and MEMVAULT_<FIELD>__<KEY>...; the other MEMVAULT_* variables
    # (MEMVAULT_URL, MEMVAULT_CONFIG, MEMVAULT_TEST_*, MEMVAULT_EMBEDDINGS_*, ...) name no field.
    variables = {
        name: raw_value
        for name, raw_value in env.items()
        if name.startswith(_PREFIX) and name[len(_PREFIX) :].split("__")[0].lower() in _FIELDS
    }
    try:
        if variables:
            cfg = _layer(data, variables, explicit_url)
        else:
            # Without variables to parse, the file and the URL need no layering machinery (nor
            # the tens of milliseconds of importing pydantic-settings, on every CLI command).
            merged = data
            if explicit_url:
                storage = data.get("storage")
                storage = storage if isinstance(storage, dict) else {}
                merged = {**data, "storage": {**storage, "url": explicit_url}}
            cfg = MemvaultConfig.model_validate(merged)
    except ValidationError as exc:
        raise _config_error(exc, file, prefix, origins, variables, url_source) from exc
    if (
        default_level is not None
        and "level" not in cfg.model_fields_set
        and cfg.level is MemoryLevel.SESSION
    ):
        cfg = cfg.model_copy(update={"level": MemoryLevel(default_level)})
    return _Loaded(
        cfg,
        file=file,
        prefix=prefix,
        data=data,
        origins=origins,
        variables=variables,
        explicit_url=explicit_url,
        url_source=url_source,
    )


def _env_path(name: str) -> tuple[str, ...]:
    """The key path a ``MEMVAULT_<SECTION>__<KEY>`` variable sets."""
    return tuple(part.lower() for part in name[len(_PREFIX) :].split("__"))


def _config_error(
    exc: ValidationError,
    file: Path | None,
    prefix: str,
    origins: Origins,
    variables: Mapping[str, str],
    url_source: str | None,
) -> MemoryConfigError:
    """The error of the first invalid value, naming its key path and where it came from."""
    first = exc.errors()[0]
    # "[key]" marks an invalid mapping key, which the path already ends with.
    loc = tuple(str(p) for p in first["loc"] if p != "[key]")
    where = ".".join(loc)
    source = ""
    named = [v for v in variables if loc[: len(_env_path(v))] == _env_path(v)]
    if named:
        source = f" (from ${max(named, key=lambda v: len(_env_path(v)))})"
        prefix = "memory"
    elif url_source is not None and loc[:2] == ("storage", "url"):
        source = (
            " (from the storage URL given)" if url_source == "argument" else " (from $MEMVAULT_URL)"
        )
    elif file is not None:
        for cut in range(len(loc), 0, -1):
            seed = origins.get(loc[:cut])
            if seed is not None:
                where = ".".join((seed, *loc[cut:]))
                break
        source = f" in {file}"
    path = f"{prefix}.{where}" if where else prefix
    return MemoryConfigError(f"invalid configuration at {path}{source}: {first['msg']}")


def _layer(
    data: dict[str, Any], variables: dict[str, str], explicit_url: str | None
) -> MemvaultConfig:
    """Merge the layers with pydantic-settings (highest first, nested keys one by one)."""
    from pydantic_settings import InitSettingsSource, SettingsError

    layered_cls, env_source_cls = _settings_classes()
    # Empty layers are left out: each costs a pass over the fields.
    layers = (
        InitSettingsSource(layered_cls, {"storage": {"url": explicit_url}})
        if explicit_url
        else None,
        env_source_cls(layered_cls, variables),
        InitSettingsSource(layered_cls, data) if data else None,
    )
    try:
        layered = layered_cls(_build_sources=(tuple(filter(None, layers)), {}))
    except SettingsError as exc:  # MEMVAULT_<SECTION> set to something that is not JSON
        named = re.search(r'field "(\w+)"', str(exc))
        section = named.group(1) if named else "<section>"
        msg = (
            f"invalid configuration at memory.{section}: {_PREFIX}{section.upper()} must be a "
            f"JSON object ({exc})"
        )
        raise MemoryConfigError(msg) from exc
    # The same values as a plain MemvaultConfig (equal and hashable like any other).
    return MemvaultConfig.model_construct(
        layered.model_fields_set, **{name: getattr(layered, name) for name in _FIELDS}
    )


@functools.cache
def _settings_classes() -> tuple[type[BaseSettings], _EnvSourceFactory]:
    """pydantic-settings' view of MemvaultConfig and the MEMVAULT_* source, built on first use.

    pydantic-settings is imported here, like yaml, so that importing memvault does not pay for it.
    """
    from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict
    from pydantic_settings.sources.utils import parse_env_vars

    class Layered(MemvaultConfig, BaseSettings):
        # Keys of the file and of ``url`` are case-sensitive, like the models'.
        model_config = SettingsConfigDict(
            frozen=True, extra="forbid", case_sensitive=True, validate_default=False
        )

    class EnvSource(EnvSettingsSource):
        """``MEMVAULT_<SECTION>__<KEY>`` variables of a mapping (``null``/``none``/empty: None).

        Names are matched without regard to case after the (upper-case) ``MEMVAULT_`` prefix.
        """

        def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
            self._env = env
            super().__init__(
                settings_cls,
                case_sensitive=False,
                env_prefix=_PREFIX,
                env_nested_delimiter="__",
                env_parse_none_str="null",
            )

        def _load_env_vars(self) -> Mapping[str, str | None]:
            nulls = {k: "null" if v.lower() in _NULLS else v for k, v in self._env.items()}
            return parse_env_vars(nulls, case_sensitive=False, parse_none_str="null")

    return Layered, EnvSource


def _read_yaml(file: Path) -> tuple[dict[str, Any], str, bool]:
    """The memory section of ``file``, its key path there, and whether it is a role file."""
    import yaml  # imported here: only the edges read files

    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"cannot read configuration file {file}: {exc.strerror or exc}"
        raise MemoryConfigError(msg) from exc
    except UnicodeDecodeError as exc:
        msg = f"configuration file {file} is not UTF-8 text"
        raise MemoryConfigError(msg) from exc
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        msg = f"configuration file {file} is not valid YAML: {exc}"
        raise MemoryConfigError(msg) from exc
    if loaded is None:
        return {}, "memory", False
    if not isinstance(loaded, dict):
        msg = f"configuration file {file} must hold a mapping with a 'memory:' key"
        raise MemoryConfigError(msg)
    spec_memory = isinstance(loaded.get("spec"), dict) and "memory" in loaded["spec"]
    if "spec" in loaded and ("apiVersion" in loaded or "kind" in loaded or spec_memory):
        # An InitRunner role file (or its spec excerpt): the memory settings are spec.memory.
        spec = loaded["spec"]
        if not isinstance(spec, dict):
            msg = f"'spec' in {file} must be a mapping"
            raise MemoryConfigError(msg)
        section = spec.get("memory")
        if section is None:  # no memory in InitRunner: nothing of its defaults applies
            return {}, "spec.memory", False
        if not isinstance(section, dict):
            msg = f"'spec.memory' in {file} must be a mapping"
            raise MemoryConfigError(msg)
        return dict(section), "spec.memory", True
    section = loaded.get("memory", loaded)
    if section is None:
        section = {}
    if not isinstance(section, dict):
        msg = f"'memory' in {file} must be a mapping"
        raise MemoryConfigError(msg)
    section = dict(section)
    if "memory" in loaded and "persistence" in loaded:
        # Seed 001 writes persistence: beside memory: (a company's RootConfig); it is read
        # into the memory section's own persistence key, written in one place or the other.
        if "persistence" in section:
            msg = f"{file} sets persistence both at the top and inside 'memory': keep one"
            raise MemoryConfigError(msg)
        section["persistence"] = loaded["persistence"]
    return section, "memory", False
