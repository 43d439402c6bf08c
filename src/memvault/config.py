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

Environment variables override the file: ``MEMVAULT_URL`` (storage URL), ``MEMVAULT_CONFIG``
(path of the YAML file), and any key as ``MEMVAULT_<SECTION>__<KEY>``, e.g.
``MEMVAULT_OPTIONS__RETENTION_DAYS=30`` or ``MEMVAULT_LEVEL=project``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memvault.errors import MemoryConfigError
from memvault.models import (
    DEFAULT_MAX_CONTENT_CHARS,
    ConsolidationInterval,
    MemoryCategory,
    MemoryLevel,
)

__all__ = [
    "COMPOSITE_URL",
    "DEFAULT_DB_PATH",
    "CompositeStorageConfig",
    "InjectionStrategyName",
    "MemoryOptionsConfig",
    "MemoryStorageConfig",
    "MemvaultConfig",
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


def _set_path(tree: dict[str, Any], path: list[str], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def _env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, raw in env.items():
        if not name.startswith("MEMVAULT_") or name in ("MEMVAULT_CONFIG", "MEMVAULT_URL"):
            continue
        key = name[len("MEMVAULT_") :].lower()
        if key.startswith("test_") or key.startswith("cache_") or key.startswith("embeddings_"):
            continue  # settings of tests, caches and embedder clients, not of the store
        parts = [p for p in key.split("__") if p]
        if not parts or parts[0] not in MemvaultConfig.model_fields:
            continue
        value: Any = None if raw.lower() in ("null", "none", "") else raw
        _set_path(tree, parts, value)
    if env.get("MEMVAULT_URL"):
        _set_path(tree, ["storage", "url"], env["MEMVAULT_URL"])
    return tree


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


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
    data = _merge(data, _env_overrides(env))
    if url:
        data = _merge(data, {"storage": {"url": url}})
    try:
        return MemvaultConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "memory"
        msg = f"invalid configuration at memory.{where}: {first['msg']}"
        raise MemoryConfigError(msg) from exc


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
