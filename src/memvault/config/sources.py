"""The configuration at its edges: where each value came from, and the embedder it names.

:func:`config_sources` loads the configuration exactly as :func:`memvault.config.load_config`
does and labels every leaf key (``options.retention_days``, ``options.max_per_category.semantic``)
with its source. ``memvault config show`` prints the result; keeping the computation here keeps
the CLI a thin printer. The embedder the keys name is built by
:func:`memvault.backends.embedder.build_embedder` (it reads the store's recorded model).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from memvault.config import MemvaultConfig, _env_path, _load
from memvault.models import MemoryLevel

__all__ = [
    "ConfigSources",
    "Source",
    "SourceKind",
    "config_sources",
    "flatten",
]

logger = logging.getLogger(__name__)


class SourceKind(StrEnum):
    """The layer a value came from."""

    DEFAULT = "default"
    FILE = "file"
    ENV = "env"
    ARGUMENT = "argument"
    DERIVED = "derived"


@dataclass(frozen=True)
class Source:
    """One value's origin: its kind, and the file, variable or rule it came from.

    ``key`` is the key as written in the file when that differs from memvault's key path
    (a seed spelling such as ``semantic.max_memories``).
    """

    kind: SourceKind
    where: str | None = None
    key: str | None = None

    def label(self) -> str:
        """A short readable form, e.g. ``default`` or ``file role.yaml (semantic.max_memories)``."""
        text = self.kind.value
        if self.where:
            text += f" {self.where}"
        if self.key:
            text += f" ({self.key})"
        return text

    def to_json(self) -> dict[str, str]:
        """The JSON object of ``memvault config show --json``."""
        data = {"kind": self.kind.value}
        if self.where:
            data["where"] = self.where
        if self.key:
            data["key"] = self.key
        return data


@dataclass(frozen=True)
class ConfigSources:
    """A resolved configuration, its store URL, and the source of every leaf key."""

    config: MemvaultConfig
    url: str
    file: str | None
    sources: dict[str, Source]


def flatten(data: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Leaf key paths of a nested mapping (an empty mapping is a leaf)."""
    found: dict[tuple[str, ...], Any] = {}
    for key, value in data.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and value:
            found.update(flatten(value, path))
        else:
            found[path] = value
    return found


def config_sources(
    path: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    default_level: MemoryLevel | str | None = None,
) -> ConfigSources:
    """Load the configuration (as :func:`~memvault.config.load_config`) and label its values.

    Precedence follows the loader: the explicit ``url`` (argument), then ``MEMVAULT_*``
    variables, then the file; a value no layer set is a default, except the level when a
    storage location made it persistent (derived) or ``default_level`` applied.

    Raises:
        MemoryConfigError: as :func:`~memvault.config.load_config`.
    """
    loaded = _load(path, env=env, url=url, default_level=default_level)
    cfg = loaded.config
    file = str(loaded.file) if loaded.file is not None else None
    variables = sorted(loaded.variables, key=lambda v: len(_env_path(v)), reverse=True)
    sources: dict[str, Source] = {}
    for key in flatten(cfg.model_dump(mode="json")):
        sources[".".join(key)] = _source_of(key, loaded, file, variables)
    return ConfigSources(config=cfg, url=cfg.resolved_url(), file=file, sources=sources)


def _source_of(key: tuple[str, ...], loaded: Any, file: str | None, variables: list[str]) -> Source:
    if loaded.explicit_url and key == ("storage", "url"):
        if loaded.url_source == "argument":
            return Source(SourceKind.ARGUMENT, "--db / Memory(url)")
        return Source(SourceKind.ENV, "MEMVAULT_URL")
    for name in variables:
        path = _env_path(name)
        if key[: len(path)] == path:
            return Source(SourceKind.ENV, name)
    if _written(loaded.data, key):
        for cut in range(len(key), 0, -1):
            seed = loaded.origins.get(key[:cut])
            if seed is not None:
                return Source(SourceKind.FILE, file, ".".join((seed, *key[cut:])))
        return Source(SourceKind.FILE, file)
    if key == ("level",) and loaded.config.level is not MemoryLevel.SESSION:
        if loaded.config.names_a_store():
            return Source(SourceKind.DERIVED, "a storage location says durable")
        return Source(SourceKind.DEFAULT, "for the CLI and the server")
    if key == ("embedder",) and loaded.config.embedder != "default":
        return Source(SourceKind.DERIVED, "embeddings")
    strategy = loaded.config.maintenance.consolidation_strategy
    if key == ("maintenance", "consolidation_strategy") and strategy != "simple":
        return Source(SourceKind.DERIVED, "consolidation.strategy")
    return Source(SourceKind.DEFAULT)


def _written(data: Mapping[str, Any], key: tuple[str, ...]) -> bool:
    """True if the file's (normalised) section sets ``key`` or a non-mapping value above it."""
    node: Any = data
    for part in key:
        if not isinstance(node, Mapping):
            return True
        if part not in node:
            return False
        node = node[part]
    return True
