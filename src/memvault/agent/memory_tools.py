"""The five InitRunner memory tools over one :class:`~memvault.AsyncMemory`.

``remember`` (semantic), ``recall`` (search every type), ``list_memories``, ``learn_procedure``
(procedural) and ``record_episode`` (episodic). A tool is registered only when its memory type is
enabled (``recall`` and ``list_memories`` always are). The ``category`` an agent passes is a
free-form sub-label inside the type (stored as the memory's ``label``), sanitised to lowercase
letters, digits and ``_``. After each store the type is pruned to its cap, oldest first, into the
archive (never deleted). Procedural memories (the 20 newest) also reach the agent without a tool
call: :meth:`MemoryTools.procedures_section` renders them as a system-prompt section.

Tool results are strings for the model; bad arguments come back as ``error: ...`` strings from
the dispatcher rather than exceptions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from memvault._jsonschema import tool_parameters
from memvault.config import MemoryOptionsConfig
from memvault.errors import MemoryValidationError
from memvault.injection.dispatch import ToolRegistry
from memvault.injection.tools import ToolDefinition
from memvault.models import MemoryCategory, MemoryEntry

if TYPE_CHECKING:
    from memvault.injection.memory_api import MemoryAPI

__all__ = [
    "PROCEDURES_HEADING",
    "MemoryTools",
    "MemoryToolsConfig",
    "sanitize_category",
]

PROCEDURES_HEADING = "## Learned Procedures and Policies"
_NON_ALNUM = re.compile(r"[^a-z0-9]")
_TYPE_NAMES = {c.value: c for c in MemoryCategory}


def sanitize_category(category: str | None) -> str:
    """Lowercase, every non-alphanumeric character replaced with ``_`` (``general`` if blank)."""
    text = (category or "").strip().lower()
    return _NON_ALNUM.sub("_", text) if text else "general"


class MemoryToolsConfig(BaseModel):
    """Which memory types the tools offer, and each type's cap (oldest pruned to the archive)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    semantic_enabled: bool = True
    episodic_enabled: bool = True
    procedural_enabled: bool = True
    max_memories: int = Field(default=1000, ge=1)
    max_episodes: int = Field(default=500, ge=1)
    max_procedures: int = Field(default=100, ge=1)
    max_injected_procedures: int = Field(default=20, ge=1, le=200)

    @classmethod
    def from_options(cls, options: MemoryOptionsConfig) -> MemoryToolsConfig:
        """The tools a store's configuration implies: the types it switched off are not
        offered (``episodic.enabled: false``...), and its per-type caps
        (``options.max_per_category``, InitRunner's ``semantic.max_memories``...) are the
        tools' caps."""
        off = set(options.disabled_categories)
        caps = options.max_per_category
        defaults = cls()
        return cls(
            semantic_enabled=MemoryCategory.SEMANTIC not in off,
            episodic_enabled=MemoryCategory.EPISODIC not in off,
            procedural_enabled=MemoryCategory.PROCEDURAL not in off,
            max_memories=caps.get(MemoryCategory.SEMANTIC, defaults.max_memories),
            max_episodes=caps.get(MemoryCategory.EPISODIC, defaults.max_episodes),
            max_procedures=caps.get(MemoryCategory.PROCEDURAL, defaults.max_procedures),
        )


_CATEGORY_HELP = "A short topic label, e.g. 'preferences' or 'deployment'."


class _ContentArgs(BaseModel):
    """Arguments of remember / learn_procedure / record_episode."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="What to store.")
    category: str | None = Field(default=None, description=_CATEGORY_HELP)


class _RecallArgs(BaseModel):
    """Arguments of recall."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="What to look for.")
    top_k: int | None = Field(default=None, ge=1, le=50, description="How many at most.")
    memory_types: list[MemoryCategory] | None = Field(
        default=None, description="Only these memory types, e.g. ['semantic', 'procedural']."
    )


class _ListArgs(BaseModel):
    """Arguments of list_memories."""

    model_config = ConfigDict(extra="forbid")

    category: str | None = Field(default=None, description=_CATEGORY_HELP)
    limit: int | None = Field(default=None, ge=1, le=200, description="How many at most.")
    memory_type: MemoryCategory | None = Field(default=None, description="Only this type.")


def _content_tool(name: str, description: str) -> ToolDefinition:
    return ToolDefinition(
        name=name, description=description, parameters=tool_parameters(_ContentArgs)
    )


REMEMBER = _content_tool(
    "remember", "Save an important fact or piece of knowledge for later (semantic memory)."
)
LEARN_PROCEDURE = _content_tool(
    "learn_procedure",
    "Record a useful procedure, policy or pattern; it is shown to you on every future run.",
)
RECORD_EPISODE = _content_tool(
    "record_episode",
    "Record what happened: an outcome, decision or error during a task (episodic memory).",
)
RECALL = ToolDefinition(
    name="recall",
    description="Search your memories of every type; returns the best matches, best first.",
    parameters=tool_parameters(_RecallArgs),
)
LIST_MEMORIES = ToolDefinition(
    name="list_memories",
    description="List your most recent memories, optionally of one category or memory type.",
    parameters=tool_parameters(_ListArgs),
)


def _stamp(entry: MemoryEntry) -> str:
    return entry.created_at.isoformat()


class MemoryTools:
    """InitRunner's memory tools for agents, bound to one memory (see module docstring)."""

    def __init__(self, memory: MemoryAPI, config: MemoryToolsConfig | None = None) -> None:
        """Offer the tools of ``config``'s enabled memory types over ``memory``."""
        self._memory = memory
        if config is None:
            # A memory's own configuration decides which types are on and their caps.
            store = getattr(memory, "config", None)
            options = getattr(store, "options", None)
            config = (
                MemoryToolsConfig.from_options(options)
                if isinstance(options, MemoryOptionsConfig)
                else MemoryToolsConfig()
            )
        self._config = config
        self.invocations: dict[str, int] = {}
        registry = ToolRegistry()
        if self._config.semantic_enabled:
            registry.register(REMEMBER, self._remember_tool)
        registry.register(RECALL, self._recall_tool)
        registry.register(LIST_MEMORIES, self._list_tool)
        if self._config.procedural_enabled:
            registry.register(LEARN_PROCEDURE, self._learn_tool)
        if self._config.episodic_enabled:
            registry.register(RECORD_EPISODE, self._episode_tool)
        self.registry = registry

    @property
    def config(self) -> MemoryToolsConfig:
        """The tool configuration."""
        return self._config

    def get_tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """The registered tools (only those of enabled memory types)."""
        return tuple(self.registry.definitions())

    async def handle_tool_call(self, agent_id: str, name: str, arguments: Any) -> str:
        """Run one tool call of the model; bad arguments give an ``error: ...`` string."""
        self.invocations[name] = self.invocations.get(name, 0) + 1
        return await self.registry.dispatch(name, arguments, agent_id=agent_id)

    # -- the tools as Python methods ---------------------------------------------------------

    async def remember(self, agent_id: str, content: str, category: str = "general") -> str:
        """Store a semantic memory; returns a confirmation with its id and category."""
        return await self._store(agent_id, content, category, MemoryCategory.SEMANTIC)

    async def learn_procedure(self, agent_id: str, content: str, category: str = "general") -> str:
        """Store a procedural memory (injected into future system prompts)."""
        return await self._store(agent_id, content, category, MemoryCategory.PROCEDURAL)

    async def record_episode(self, agent_id: str, content: str, category: str = "general") -> str:
        """Store an episodic memory (what happened)."""
        return await self._store(agent_id, content, category, MemoryCategory.EPISODIC)

    async def recall(
        self,
        agent_id: str,
        query: str,
        top_k: int = 5,
        memory_types: Sequence[str] | None = None,
    ) -> str:
        """Search every (or the given) memory types; ``[Type | Category | Score | time]`` blocks."""
        types = None if not memory_types else [_parse_type(t) for t in memory_types]
        hits = await self._memory.search(query, agent_id=agent_id, limit=top_k, categories=types)
        if not hits:
            return "No relevant memories found."
        blocks = [
            f"[Type: {e.category.value} | Category: {e.metadata.label or 'general'} | "
            f"Score: {e.relevance_score or 0.0:.3f} | {_stamp(e)}]\n{e.content}"
            for e in hits
        ]
        return "\n\n---\n\n".join(blocks)

    async def list_memories(
        self,
        agent_id: str,
        category: str | None = None,
        limit: int = 20,
        memory_type: str | None = None,
    ) -> str:
        """The newest memories, as ``[type:category] (time) content`` lines."""
        label = None if category is None else sanitize_category(category)
        kind = None if memory_type is None else _parse_type(memory_type)
        entries = await self._memory.list(
            agent_id=agent_id, category=kind, label=label, limit=limit
        )
        if not entries:
            return "No memories found."
        return "\n".join(
            f"[{e.category.value}:{e.metadata.label or 'general'}] ({_stamp(e)}) {e.content}"
            for e in entries
        )

    async def procedures_section(self, agent_id: str) -> str:
        """The ``## Learned Procedures and Policies`` system-prompt section ("" if none)."""
        if not self._config.procedural_enabled:
            return ""
        entries = await self._memory.list(
            agent_id=agent_id,
            category=MemoryCategory.PROCEDURAL,
            limit=self._config.max_injected_procedures,
        )
        if not entries:
            return ""
        lines = [f"- [{e.metadata.label or 'general'}] {e.content}" for e in entries]
        return "\n".join([PROCEDURES_HEADING, "", *lines])

    # -- internals ---------------------------------------------------------------------------

    def _cap(self, category: MemoryCategory) -> int:
        if category is MemoryCategory.EPISODIC:
            return self._config.max_episodes
        if category is MemoryCategory.PROCEDURAL:
            return self._config.max_procedures
        return self._config.max_memories

    async def _store(self, agent_id: str, content: str, category: str, kind: MemoryCategory) -> str:
        label = sanitize_category(category)
        outcome = await self._memory.write(content, agent_id=agent_id, category=kind, label=label)
        if outcome.id is None:
            # Nothing was stored (e.g. level "none"): the model must not believe otherwise.
            return f"Not stored: {outcome.decision.reason}."
        await self._prune(agent_id, kind)
        return f"Stored {kind.value} memory {outcome.id} (category: {label})."

    async def _prune(self, agent_id: str, kind: MemoryCategory) -> None:
        """Archive the oldest memories of ``kind`` beyond its cap (InitRunner: oldest removed)."""
        cap = self._cap(kind)
        count = await self._memory.count(agent_id=agent_id, category=kind)
        if count <= cap:
            return
        newest_first = await self._memory.list(agent_id=agent_id, category=kind, limit=count)
        doomed = [e.id for e in newest_first[cap:]]
        if doomed:
            await self._memory.archive(doomed, agent_id=agent_id, reason="evict")

    async def _remember_tool(self, agent_id: str, args: dict[str, Any]) -> str:
        return await self.remember(agent_id, args["content"], args.get("category", "general"))

    async def _learn_tool(self, agent_id: str, args: dict[str, Any]) -> str:
        return await self.learn_procedure(
            agent_id, args["content"], args.get("category", "general")
        )

    async def _episode_tool(self, agent_id: str, args: dict[str, Any]) -> str:
        return await self.record_episode(agent_id, args["content"], args.get("category", "general"))

    async def _recall_tool(self, agent_id: str, args: dict[str, Any]) -> str:
        return await self.recall(
            agent_id, args["query"], args.get("top_k", 5), args.get("memory_types")
        )

    async def _list_tool(self, agent_id: str, args: dict[str, Any]) -> str:
        return await self.list_memories(
            agent_id, args.get("category"), args.get("limit", 20), args.get("memory_type")
        )


def _parse_type(name: str) -> MemoryCategory:
    kind = _TYPE_NAMES.get(name.strip().lower())
    if kind is None:
        msg = f"unknown memory type {name!r} (choose from {', '.join(sorted(_TYPE_NAMES))})"
        raise MemoryValidationError(msg)
    return kind
