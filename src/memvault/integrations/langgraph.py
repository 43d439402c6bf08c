"""LangGraph long-term memory on memvault: :class:`MemvaultStore`, a ``BaseStore``.

Install with ``pip install 'memvault[langgraph]'``. Hand the store to ``graph.compile(store=...)``
(or ``create_react_agent(..., store=...)``) and every ``store.put/get/search/delete`` of the graph
lands in memvault: hybrid search for ``search(query=...)``, version history for overwritten items,
audit and retention like any other memory.

How LangGraph's model maps onto memvault's:

* **Agent.** With ``agent_id`` given, every item belongs to that memvault agent. Without it, the
  first namespace label is the agent (``("user-42", "memories")`` is agent ``user-42``), so each
  user's or agent's items are a separate memvault agent.
* **Category.** ``categories`` maps a namespace label to a memvault memory type: with
  ``{"procedures": "procedural"}`` the items of ``("user-42", "procedures")`` are procedural
  memories. The first label found in the map decides; otherwise ``default_category``.
* **Namespace and key.** Stored as metadata (``lg_ns``, ``lg_key`` and one ``lg_ns.<i>`` per
  label, for prefix filters), plus memvault's own ``namespace`` scope (labels joined by ``/``).
* **Value.** Kept whole under ``lg_value``; each top-level field is also a metadata key
  ``v.<field>``, so LangGraph filters (``{"status": "done"}``, ``{"score": {"$gte": 3}}``) run in
  the backend query, before any ranking. The text that is embedded and searched is the value's
  ``index`` fields (from ``put(..., index=[...])``) or, by default, the whole value as JSON.
* **Overwrite.** ``put`` on an existing key stores a new version that supersedes the old one
  (``Memory.history`` shows both); ``created_at`` stays the first version's.

Not covered: TTLs (``supports_ttl`` is false; memvault's own retention rules apply instead) and
per-item ``index=False`` (every item is searchable). Filters on list or object fields match
nothing, as in memvault's metadata filters. LangGraph's checkpointer (the graph's step-by-step
state) is :class:`memvault.integrations.langgraph_checkpoint.MemvaultCheckpointSaver`.
"""

from __future__ import annotations

import asyncio
import builtins
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from memvault.errors import MemoryValidationError
from memvault.injection.memory_api import CategoryLike
from memvault.integrations._common import require
from memvault.memory import Memory
from memvault.models import MemoryCategory, MemoryEntry

require("langgraph.store.base", "langgraph")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

__all__ = ["MemvaultStore"]

_NS = "lg_ns"
_KEY = "lg_key"
_VALUE = "lg_value"
_CREATED = "lg_created"
_FIELD = "v."
# memvault's list/search limit; namespaces are gathered from the items in pages of this size.
_PAGE = 1000


class MemvaultStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are memvault memories (see the module docstring).

    Args:
        memory: the memvault store (a sync :class:`~memvault.Memory`; the async methods run its
            calls in a worker thread).
        agent_id: the memvault agent of every item; ``None`` takes the first namespace label.
        categories: namespace label -> memory type of the items under it.
        default_category: the memory type of the other items (``semantic``).
    """

    supports_ttl: bool = False

    def __init__(
        self,
        memory: Memory,
        *,
        agent_id: str | None = None,
        categories: Mapping[str, CategoryLike] | None = None,
        default_category: CategoryLike = MemoryCategory.SEMANTIC,
    ) -> None:
        self._memory = memory
        self._agent_id = agent_id
        self._categories = dict(categories or {})
        self._default_category = default_category

    @property
    def memory(self) -> Memory:
        """The memvault store the items live in."""
        return self._memory

    # -- BaseStore ----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> builtins.list[Result]:
        """Run the operations in order; one result per operation (``None`` for puts)."""
        results: builtins.list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                msg = f"unknown store operation {type(op).__name__}"
                raise MemoryValidationError(msg)
        return results

    async def abatch(self, ops: Iterable[Op]) -> builtins.list[Result]:
        """:meth:`batch` in a worker thread (the sync memory runs its own event loop)."""
        return await asyncio.to_thread(self.batch, builtins.list(ops))

    # -- mapping ------------------------------------------------------------------------------

    def _split(self, namespace: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """(memvault agent, namespace labels below the agent) of a LangGraph namespace."""
        if self._agent_id is not None:
            return self._agent_id, namespace
        if not namespace:
            msg = "a namespace needs at least one label (the agent id) when agent_id is not set"
            raise MemoryValidationError(msg)
        return namespace[0], namespace

    def _category(self, namespace: tuple[str, ...]) -> CategoryLike:
        for label in namespace:
            if label in self._categories:
                return self._categories[label]
        return self._default_category

    @staticmethod
    def _ns_filters(namespace: tuple[str, ...], *, exact: bool) -> dict[str, Any]:
        if exact:
            return {_NS: json.dumps(builtins.list(namespace))}
        found: dict[str, Any] = {_KEY: {"exists": True}}
        for i, label in enumerate(namespace):
            found[f"{_NS}.{i}"] = label
        return found

    def _find(self, namespace: tuple[str, ...], key: str) -> MemoryEntry | None:
        agent, _ = self._split(namespace)
        filters = {**self._ns_filters(namespace, exact=True), _KEY: key}
        hits = self._memory.list(agent_id=agent, filters=filters, limit=1)
        return hits[0] if hits else None

    @staticmethod
    def _item(entry: MemoryEntry, score: float | None = None, *, scored: bool = False) -> Item:
        extra = entry.metadata.extra
        namespace = tuple(json.loads(extra[_NS]))
        created = datetime.fromisoformat(extra[_CREATED])
        value = dict(extra[_VALUE])
        if scored:
            return SearchItem(
                namespace=namespace,
                key=extra[_KEY],
                value=value,
                created_at=created,
                updated_at=entry.created_at,
                score=score,
            )
        return Item(
            value=value,
            key=extra[_KEY],
            namespace=namespace,
            created_at=created,
            updated_at=entry.created_at,
        )

    @staticmethod
    def _text(value: Mapping[str, Any], index: builtins.list[str] | None) -> str:
        """What is embedded and searched: the ``index`` fields, else the whole value."""
        if index:
            parts: builtins.list[str] = []
            for path in index:
                node: Any = value
                for step in path.split("."):
                    node = node.get(step) if isinstance(node, Mapping) else None
                if node is not None:
                    parts.append(node if isinstance(node, str) else json.dumps(node))
            if parts:
                return "\n".join(parts)
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)

    # -- operations ---------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        entry = self._find(op.namespace, op.key)
        return None if entry is None else self._item(entry)

    def _put(self, op: PutOp) -> None:
        if op.ttl is not None:
            msg = "MemvaultStore does not support TTLs; use memvault's retention rules"
            raise NotImplementedError(msg)
        existing = self._find(op.namespace, op.key)
        agent, _ = self._split(op.namespace)
        if op.value is None:
            if existing is not None:
                self._memory.delete(existing.id, agent_id=agent)
            return
        value = dict(op.value)
        index = op.index if isinstance(op.index, builtins.list) else None
        text = self._text(value, index)
        metadata: dict[str, Any] = {
            f"{_FIELD}{field}": field_value for field, field_value in value.items()
        }
        metadata.update(self._ns_filters(op.namespace, exact=False))
        metadata.update(self._ns_filters(op.namespace, exact=True))
        metadata[_KEY] = op.key
        metadata[_VALUE] = value
        metadata["namespace"] = "/".join(op.namespace) or "/"
        category = self._category(op.namespace)
        if existing is None:
            # The item's creation time is set here, so the first version carries it already.
            now = datetime.now(UTC)
            metadata[_CREATED] = now.isoformat()
            self._memory.add(
                text,
                agent_id=agent,
                category=category,
                metadata=metadata,
                created_at=now,
                dedup=False,
            )
            return
        metadata[_CREATED] = existing.metadata.extra[_CREATED]
        self._memory.update(
            existing.id, agent_id=agent, content=text, category=category, metadata=metadata
        )

    def _agents(self, prefix: tuple[str, ...]) -> builtins.list[str]:
        if self._agent_id is not None:
            return [self._agent_id]
        if prefix:
            return [prefix[0]]
        return self._memory.agents()

    def _search(self, op: SearchOp) -> builtins.list[SearchItem]:
        filters = self._ns_filters(op.namespace_prefix, exact=False)
        for field, condition in (op.filter or {}).items():
            filters[f"{_FIELD}{field}"] = condition
        wanted = op.offset + op.limit
        if wanted <= 0:
            return []
        found: builtins.list[tuple[MemoryEntry, float | None]] = []
        for agent in self._agents(op.namespace_prefix):
            if op.query:
                hits = self._memory.search(
                    op.query, agent_id=agent, limit=min(wanted, _PAGE), filters=filters
                )
                found.extend((h, h.relevance_score) for h in hits)
            else:
                listed = self._memory.list(
                    agent_id=agent, filters=filters, limit=min(wanted, _PAGE)
                )
                found.extend((e, None) for e in listed)
        if op.query:
            found.sort(key=lambda pair: -(pair[1] or 0.0))
        else:
            found.sort(key=lambda pair: pair[0].created_at, reverse=True)
        page = found[op.offset : op.offset + op.limit]
        items = [self._item(entry, score, scored=True) for entry, score in page]
        return [item for item in items if isinstance(item, SearchItem)]

    def _namespaces(self) -> set[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for agent in self._agents(()):
            offset = 0
            while True:
                page = self._memory.list(
                    agent_id=agent, filters={_KEY: {"exists": True}}, limit=_PAGE, offset=offset
                )
                seen.update(tuple(json.loads(e.metadata.extra[_NS])) for e in page)
                if len(page) < _PAGE:
                    break
                offset += _PAGE
        return seen

    def _list_namespaces(self, op: ListNamespacesOp) -> builtins.list[tuple[str, ...]]:
        namespaces = self._namespaces()
        if op.match_conditions:
            namespaces = {
                ns for ns in namespaces if all(_matches(ns, c) for c in op.match_conditions)
            }
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]


def _matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """LangGraph's prefix/suffix match, ``*`` matching any one label."""
    path = condition.path
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
