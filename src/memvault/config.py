"""Frozen configuration models, loadable from ``memvault.yaml`` and ``MEMVAULT_*`` variables.

The models are plain data; reading files and the environment happens only in
:func:`load_config`, called at the edges (CLI, server, ``Memory()`` without a config). Keys follow
the design documents::

    memory:
      level: persistent            # none | session | project | persistent
      backend: sqlite              # sqlite | postgresql | inmemory | composite (default: URL)
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
      embedder: default    # default | minilm-l3 | minilm-numpy | hashing[:dim] | openai:<model>
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

Environment variables override the file: ``MEMVAULT_URL`` (storage URL), ``MEMVAULT_CONFIG``
(path of the YAML file), and any key as ``MEMVAULT_<SECTION>__<KEY>``, e.g.
``MEMVAULT_OPTIONS__RETENTION_DAYS=30`` or ``MEMVAULT_LEVEL=project`` (``null``, ``none`` or an
empty value clears a key; a whole section may be a JSON object). pydantic-settings merges the
layers.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from memvault.errors import MemoryConfigError
from memvault.maintenance.config import MaintenanceConfig
from memvault.models import (
    DEFAULT_MAX_CONTENT_CHARS,
    ConsolidationInterval,
    MemoryCategory,
    MemoryLevel,
)

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

    _EnvSourceFactory = Callable[
        [type[BaseSettings], Mapping[str, str]], PydanticBaseSettingsSource
    ]

__all__ = [
    "COMPOSITE_URL",
    "DEFAULT_DB_PATH",
    "CaptureConfig",
    "CaptureType",
    "CompositeStorageConfig",
    "EvolverConfig",
    "InjectionStrategyName",
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
    "load_config",
]

DEFAULT_DB_PATH = "~/.memvault/memvault.db"
PROJECT_DB_PATH = "./.memvault/memvault.db"


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
    synchronous: str = Field(default="normal", pattern="^(normal|full)$")
    # Accepted for compatibility with the design documents' examples; memvault ignores them.
    vector_store: str | None = None
    history_store: str | None = None


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
    """One agent's retention overrides: a default maximum age and per-category ones (days)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retention_days: int | None = Field(default=None, ge=1)
    by_category: Mapping[MemoryCategory, int] = Field(default_factory=dict)

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
    retention_by_category: Mapping[MemoryCategory, int] = Field(default_factory=dict)
    """Company-level maximum age in days per category (over ``retention_days``)."""
    agent_retention: Mapping[str, AgentRetentionConfig] = Field(default_factory=dict)
    """Per-agent overrides of the retention rules."""
    max_per_category: Mapping[MemoryCategory, int] = Field(default_factory=dict)
    """Caps per category and agent (e.g. episodic: 1000); over a cap the weakest are evicted."""

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

    ``model`` is recorded on every lesson; the call itself goes to the memory's LLM provider.
    ``skill_md_directory`` also writes each lesson as an Agent Skills ``SKILL.md`` file.
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


class MemvaultConfig(BaseModel):
    """The whole ``memory:`` section of ``memvault.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: MemoryLevel = MemoryLevel.PERSISTENT
    backend: str | None = Field(
        default=None, pattern="^(sqlite|postgresql|postgres|inmemory|composite)$"
    )
    storage: MemoryStorageConfig = Field(default_factory=MemoryStorageConfig)
    composite: CompositeStorageConfig = Field(default_factory=CompositeStorageConfig)
    options: MemoryOptionsConfig = Field(default_factory=MemoryOptionsConfig)
    embedder: str = "default"
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    procedural: ProceduralMemoryConfig = Field(default_factory=ProceduralMemoryConfig)
    org_memory: OrgMemoryConfig = Field(default_factory=OrgMemoryConfig)
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)

    def resolved_url(self) -> str:
        """The storage URL implied by level, backend, url and data_dir."""
        if self.level in (MemoryLevel.SESSION, MemoryLevel.NONE) or self.backend == "inmemory":
            return "memory://"
        if self.backend == "composite":
            return COMPOSITE_URL
        if self.storage.url:
            return self.storage.url
        if self.storage.data_dir:
            return str(Path(self.storage.data_dir).expanduser() / "memvault.db")
        if self.level is MemoryLevel.PROJECT:
            return PROJECT_DB_PATH
        return DEFAULT_DB_PATH

    def composite_default_url(self) -> str:
        """The default child of a composite store: ``composite.default``, else the storage URL."""
        if self.composite.default:
            return self.composite.default
        return self.model_copy(update={"backend": None}).resolved_url()


_PREFIX = "MEMVAULT_"
_NULLS = ("null", "none", "")
_FIELDS = tuple(MemvaultConfig.model_fields)


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    url: str | None = None,
) -> MemvaultConfig:
    """Build the configuration from a YAML file, the environment and an explicit URL.

    Precedence, highest first: ``url``, environment variables, the file. The file is ``path``,
    else ``$MEMVAULT_CONFIG``, else ``./memvault.yaml`` when it exists.

    Raises:
        MemoryConfigError: the file is unreadable or a value is invalid (the message names it).
    """
    env = os.environ if env is None else env
    file = Path(path) if path is not None else None
    if file is None and env.get("MEMVAULT_CONFIG"):
        file = Path(env["MEMVAULT_CONFIG"])
    if file is None and Path("memvault.yaml").is_file():
        file = Path("memvault.yaml")
    data: dict[str, Any] = {}
    if file is not None:
        data = _read_yaml(file)
    explicit_url = url or env.get("MEMVAULT_URL")
    # MEMVAULT_<FIELD> and MEMVAULT_<FIELD>__<KEY>...; the other MEMVAULT_* variables
    # (MEMVAULT_URL, MEMVAULT_CONFIG, MEMVAULT_TEST_*, MEMVAULT_EMBEDDINGS_*, ...) name no field.
    variables = {
        name: raw
        for name, raw in env.items()
        if name.startswith(_PREFIX) and name[len(_PREFIX) :].split("__")[0].lower() in _FIELDS
    }
    try:
        if variables:
            return _layer(data, variables, explicit_url)
        # Without variables to parse, the file and the URL need no layering machinery (nor the
        # tens of milliseconds of importing pydantic-settings, on every CLI command).
        if explicit_url:
            storage = data.get("storage")
            storage = storage if isinstance(storage, dict) else {}
            data = {**data, "storage": {**storage, "url": explicit_url}}
        return MemvaultConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "memory"
        msg = f"invalid configuration at memory.{where}: {first['msg']}"
        raise MemoryConfigError(msg) from exc


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


def _read_yaml(file: Path) -> dict[str, Any]:
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
        return {}
    if not isinstance(loaded, dict):
        msg = f"configuration file {file} must hold a mapping with a 'memory:' key"
        raise MemoryConfigError(msg)
    section = loaded.get("memory", loaded)
    if not isinstance(section, dict):
        msg = f"'memory' in {file} must be a mapping"
        raise MemoryConfigError(msg)
    return dict(section)
