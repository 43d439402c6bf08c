"""A store made of other stores: each memory category is routed to one child backend.

The typical use keeps SESSION-level working memory in process and everything else durable::

    CompositeBackend({MemoryCategory.WORKING: InMemoryBackend(e)}, default=SQLiteBackend(p, e))

or, from ``memvault.yaml``::

    memory:
      backend: composite
      composite:
        routes: {working: "memory://"}
        default: ~/.memvault/memvault.db

How each operation maps onto the children:

* ``store``/``store_many``/``import_*`` go to the child of each entry's category. A batch that
  spans several children has no shared transaction, so it is made all-or-nothing by hand: what
  can be checked without writing is checked first (agent, expiry, supersession targets), then
  the children write one after another, and if one fails, the memories earlier children stored
  are deleted again before the error propagates. A supersession an earlier child already applied
  cannot be undone through the protocol, so groups carrying supersessions are written last.
* ``get``/``delete`` ask every child (ids are UUIDv7 strings, unique across children).
* ``count``/``list_entries``/``export_entries``/``clear``/``agent_ids``/``stats`` aggregate over
  every child, not only the routed one, so memories stored before a routing change stay
  visible. Lists merge newest first (exports oldest first) on the children's own sort key.
* ``search_candidates`` asks the children owning the query's categories and merges their
  candidate lists by score. Dense scores are cosines of one embedding model (checked when the
  composite is built: every child must share the embedder's model id and dimension). BM25
  scores use each child's own collection statistics, so across children they are comparable in
  scale rather than identical to what one store holding everything would give.
* Capabilities are the intersection: a category is supported if the child it routes to stores
  it, flags are ANDed, ``max_memories_per_agent`` is the smallest cap any child has. Shared
  knowledge is routed like private memories: a publish goes to the child of its category, and
  shared searches merge the children's candidates.

* The archive and the audit log are delegated to the children that hold the entries:
  ``archive`` moves each entry in the child that stores it (one transaction per child),
  ``archived``/``restore`` read every child's archive (a restored entry returns to the child
  whose archive held it), ``audit_log``/``audit_for_agent`` merge the children's logs by time,
  and ``record_audit`` goes to the default child (the durable one in the usual layout). As extra
  tables (:class:`~memvault.protocols.RowTableStore`, for ``memvault migrate``) ``audit`` and
  ``archive`` export every child's rows merged by time, and import audit rows into the default
  child and archive rows into the child of their entry's category.

The class holds the routing, capabilities, lifecycle and writes; the reads that merge the
children's answers are in :mod:`memvault.backends._composite_reads` and shared knowledge in
:mod:`memvault.backends._composite_shared`, mixed into the class (separate modules only to
keep each file readable).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memvault._ids import utc_now
from memvault._search import retrieve_entries
from memvault.backends._base import Vectors, check_agent, check_id, check_times
from memvault.backends._composite_reads import CompositeReadsMixin
from memvault.backends._composite_shared import CompositeSharedMixin
from memvault.errors import (
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import Embedder, MemoryStore, RowTableStore, SharedMemoryStore
from memvault.retrieval.presets import RetrievalConfig, get_preset

__all__ = ["CompositeBackend"]

logger = logging.getLogger(__name__)


class CompositeBackend(CompositeSharedMixin, CompositeReadsMixin):
    """Routes memories by category to child stores (see the module docstring).

    Args:
        routes: the child store of each routed category.
        default: the child store of every other category.
        preset: the retrieval preset :meth:`retrieve` ranks with.
        clock: the current time (for :meth:`retrieve` and expiry checks).

    Raises:
        MemoryConfigError: a child is not a :class:`MemoryStore`, or the children do not share
            one embedding model (id and dimension).
    """

    backend_name = "composite"

    def __init__(
        self,
        routes: Mapping[MemoryCategory, MemoryStore],
        default: MemoryStore,
        *,
        preset: RetrievalConfig | str = "default",
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._routes = {MemoryCategory(c): s for c, s in routes.items()}
        self._default = default
        children: list[MemoryStore] = []
        for store in (*self._routes.values(), default):
            if not isinstance(store, MemoryStore):
                msg = f"composite backend: {type(store).__name__} is not a MemoryStore"
                raise MemoryConfigError(msg)
            if not any(store is c for c in children):
                children.append(store)
        self._children = tuple(children)
        self._check_embedders()
        try:
            self._preset = get_preset(preset) if isinstance(preset, str) else preset
        except KeyError as exc:
            raise MemoryConfigError(str(exc.args[0])) from None
        self._clock = clock

    def _check_embedders(self) -> None:
        # Merged dense candidates are compared by score, which only means something when every
        # child embeds with the same model; a mismatch is a configuration error, caught early.
        base = self._default.embedder
        for child in self._children:
            other = child.embedder
            if other.model_id != base.model_id or other.dimension != base.dimension:
                msg = (
                    f"composite backend: child {child.location} embeds with {other.model_id!r} "
                    f"({other.dimension} dims) but the default child {self._default.location} "
                    f"with {base.model_id!r} ({base.dimension} dims); every child must share one "
                    "embedding model"
                )
                raise MemoryConfigError(msg)

    # -- structure ------------------------------------------------------------------------------

    @property
    def routes(self) -> dict[MemoryCategory, MemoryStore]:
        """The routed categories and their child stores."""
        return dict(self._routes)

    @property
    def default(self) -> MemoryStore:
        """The child store of every category without a route."""
        return self._default

    @property
    def children(self) -> tuple[MemoryStore, ...]:
        """Every distinct child store (routed ones in route order, then the default)."""
        return self._children

    def route(self, category: MemoryCategory) -> MemoryStore:
        """The child store memories of ``category`` go to.

        Raises:
            MemoryCapabilityError: that child does not store this category.
        """
        child = self._routes.get(category, self._default)
        if category not in child.supported_categories:
            msg = (
                f"composite backend: {category.value} memories route to {child.location} "
                f"({child.backend_name}), which does not store them"
            )
            raise MemoryCapabilityError(msg)
        return child

    def _owners(self, categories: Iterable[MemoryCategory] | None) -> list[MemoryStore]:
        """The children holding ``categories`` (every child for None), in child order."""
        if categories is None:
            return list(self._children)
        wanted = [self._routes.get(c, self._default) for c in categories]
        return [c for c in self._children if any(c is w for w in wanted)]

    def _index(self, child: MemoryStore) -> int:
        return next(i for i, c in enumerate(self._children) if c is child)

    # -- capabilities ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder every child shares (the default child's)."""
        return self._default.embedder

    @property
    def location(self) -> str:
        """Each routed category's child location, then the default's."""
        parts = [f"{c.value}={s.location}" for c, s in sorted(self._routes.items())]
        parts.append(f"default={self._default.location}")
        return f"composite({', '.join(parts)})"

    @property
    def is_connected(self) -> bool:
        """True when every child is connected."""
        return all(c.is_connected for c in self._children)

    @property
    def supported_categories(self) -> frozenset[MemoryCategory]:
        """Categories whose child stores them."""
        return frozenset(
            c
            for c in MemoryCategory
            if c in self._routes.get(c, self._default).supported_categories
        )

    @property
    def supports_graph(self) -> bool:
        """True if every child keeps an entity graph."""
        return all(c.supports_graph for c in self._children)

    @property
    def supports_temporal(self) -> bool:
        """True if every child supports validity intervals and as-of queries."""
        return all(c.supports_temporal for c in self._children)

    @property
    def supports_vector_search(self) -> bool:
        """True if every child supports dense search."""
        return all(c.supports_vector_search for c in self._children)

    @property
    def supports_shared_access(self) -> bool:
        """True if every child keeps shared knowledge (publish routes by category)."""
        return all(
            c.supports_shared_access and isinstance(c, SharedMemoryStore) for c in self._children
        )

    @property
    def max_memories_per_agent(self) -> int | None:
        """The smallest per-agent cap of any child, or None if none has one."""
        caps = [c.max_memories_per_agent for c in self._children]
        known = [c for c in caps if c is not None]
        return min(known) if known else None

    # -- lifecycle ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect every child; if one fails, the ones connected here are disconnected again."""
        opened: list[MemoryStore] = []
        try:
            for child in self._children:
                if not child.is_connected:
                    await child.connect()
                    opened.append(child)
        except BaseException:
            for child in reversed(opened):
                with contextlib.suppress(Exception):
                    await child.disconnect()
            raise

    async def disconnect(self) -> None:
        """Disconnect every child (all are tried; the first failure is raised afterwards)."""
        first: BaseException | None = None
        for child in self._children:
            try:
                await child.disconnect()
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first

    async def health_check(self) -> bool:
        """True if every child answers."""
        if not self.is_connected:
            return False
        results = await asyncio.gather(*(c.health_check() for c in self._children))
        return all(results)

    def _require_connected(self) -> None:
        if not self.is_connected:
            msg = "composite backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)

    # -- writes ---------------------------------------------------------------------------------

    async def store(self, agent_id: str, request: MemoryStoreRequest) -> str:
        """Store one memory in the child of its category; returns its id."""
        return (await self.store_many(agent_id, [request]))[0]

    async def store_many(
        self,
        agent_id: str,
        requests: Sequence[MemoryStoreRequest],
        *,
        vectors: Sequence[Vectors] | None = None,
    ) -> list[str]:
        """Store memories in their categories' children; ids in input order. All or nothing.

        One child: its own transaction. Several: checked first, then written child by child,
        and undone (deleted) in earlier children if a later child fails. ``vectors`` (the
        requests' embeddings, computed by the caller) go to the children with their requests:
        every child embeds with the composite's model (checked when it was built), so they are
        not computed again.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        if not requests:
            return []
        if vectors is not None and len(vectors) != len(requests):
            msg = f"{len(vectors)} vectors for {len(requests)} requests"
            raise MemoryValidationError(msg)
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(self._index(self.route(r.category)), []).append(i)
        await self._check_supersedes(agent, requests)
        if len(groups) == 1:
            (k,) = groups
            return await self._children[k].store_many(agent, requests, vectors=vectors)
        now = self._clock()
        for r in requests:
            # The check every child makes, repeated here so the common invalid batch fails
            # before any child has written anything.
            if r.expires_at is not None and r.expires_at <= (r.created_at or now):
                msg = "expires_at must be later than created_at"
                raise MemoryValidationError(msg)
        # Supersessions cannot be rolled back by deleting, so their groups are written last.
        order = sorted(groups, key=lambda k: any(requests[i].supersedes for i in groups[k]))
        ids: list[str] = [""] * len(requests)
        done: list[tuple[MemoryStore, list[tuple[str, str]]]] = []
        for k in order:
            child, idx = self._children[k], groups[k]
            try:
                new = await child.store_many(
                    agent,
                    [requests[i] for i in idx],
                    vectors=None if vectors is None else [vectors[i] for i in idx],
                )
            except BaseException as exc:
                await self._undo(done, exc)
                raise
            done.append((child, [(agent, mid) for mid in new]))
            for i, mid in zip(idx, new, strict=True):
                ids[i] = mid
        return ids

    async def _check_supersedes(self, agent: str, requests: Sequence[MemoryStoreRequest]) -> None:
        """Supersession targets must exist in the child the new memory goes to."""
        for r in requests:
            if r.supersedes is None:
                continue
            target = self.route(r.category)
            if await target.get(agent, r.supersedes) is not None:
                continue
            for other in self._children:
                if other is not target and await other.get(agent, r.supersedes) is not None:
                    msg = (
                        f"cannot supersede {r.supersedes!r} with a {r.category.value} memory: it "
                        f"lives in {other.location}, the new one would go to {target.location}; "
                        "a composite store cannot supersede across child stores"
                    )
                    raise MemoryCapabilityError(msg)
            msg = f"cannot supersede {r.supersedes!r}: no such memory for this agent"
            raise MemoryNotFoundError(msg)

    @staticmethod
    async def _undo(
        done: Sequence[tuple[MemoryStore, Sequence[tuple[str, str]]]], cause: BaseException
    ) -> None:
        """Delete what earlier children stored for a batch that failed in a later child."""
        left: list[str] = []
        for child, written in done:
            for agent, mid in written:
                try:
                    await child.delete(agent, mid)
                except Exception:
                    left.append(f"{mid} in {child.location}")
        if left:
            note = f"composite backend: could not undo {len(left)} stored memories: {left}"
            logger.error(note)
            cause.add_note(note)

    async def import_entries(self, entries: Sequence[MemoryEntry]) -> int:
        """Insert entries (re-embedded by their children) keeping ids; existing ids skipped."""
        return await self._import(entries, None)

    async def import_with_vectors(
        self, entries: Sequence[MemoryEntry], vectors: Mapping[str, Vectors]
    ) -> int:
        """Insert entries with their vectors as-is; existing ids skipped. All or nothing."""
        dim = self.embedder.dimension
        for e in entries:
            # Checked here, before any child writes, so a bad vector never leaves half a batch.
            raw = vectors.get(e.id)
            if raw is None:
                msg = f"memory {e.id}: no vector given"
                raise MemoryValidationError(msg)
            vec = np.asarray(raw)
            if vec.shape != (dim,) or not np.isfinite(vec).all():
                msg = f"memory {e.id}: vector must be {dim} finite numbers, got shape {vec.shape}"
                raise MemoryValidationError(msg)
        return await self._import(entries, vectors)

    async def _import(
        self, entries: Sequence[MemoryEntry], vectors: Mapping[str, Vectors] | None
    ) -> int:
        self._require_connected()
        if not entries:
            return 0
        # An id is skipped if *any* child has it (a memory stored before a routing change), so
        # ids stay unique across children; what remains is exactly what this call inserts,
        # which is what an undo must delete. export_vectors doubles as an existence probe.
        ids = list(dict.fromkeys(e.id for e in entries))
        present: set[str] = set()
        for child in self._children:
            present.update(await child.export_vectors(ids))
        groups: dict[int, list[MemoryEntry]] = {}
        for e in entries:
            if e.id in present:
                continue
            present.add(e.id)
            groups.setdefault(self._index(self.route(e.category)), []).append(e)
        done: list[tuple[MemoryStore, list[tuple[str, str]]]] = []
        added = 0
        for k, group in groups.items():
            child = self._children[k]
            try:
                if vectors is None:
                    added += await child.import_entries(group)
                else:
                    added += await child.import_with_vectors(group, vectors)
            except BaseException as exc:
                await self._undo(done, exc)
                raise
            done.append((child, [(e.agent_id, e.id) for e in group]))
        return added

    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory of the agent from whichever child holds it."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        for child in self._children:
            if await child.delete(agent, mid):
                return True
        return False

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete the agent's memories (of one category) in every child; returns how many.

        Each child clears in its own transaction; there is none spanning the children.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        total = 0
        for child in self._children:
            total += await child.clear(agent, category=category)
        return total

    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Bump access counters; every child ignores the ids it does not hold."""
        agent = check_agent(agent_id)
        times = check_times(times)
        if not ids:
            return
        for child in self._children:
            await child.record_access(agent, ids, when, times=times)

    # -- reads ----------------------------------------------------------------------------------

    async def retrieve(self, agent_id: str, query: MemoryQuery) -> tuple[MemoryEntry, ...]:
        """Hybrid search over the owning children; without text, the newest matching entries.

        ``query.include_shared`` adds the children's shared knowledge.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        if query.include_shared:
            self._shared_children()
        return await retrieve_entries(self, agent, query, self._preset, now=self._clock())

    # -- archive and audit (delegated to the children holding the entries) ----------------------

    @property
    def audits_deletions(self) -> bool:
        """True if every child audits its deletions in the deletion's own transaction."""
        return all(getattr(c, "audits_deletions", False) for c in self._children)

    def _archivers(self) -> list[Any]:
        """Children with an archive (every built-in durable store has one)."""
        found = [c for c in self._children if callable(getattr(c, "archive", None))]
        if not found:
            msg = "composite backend: no child store has an archive"
            raise MemoryCapabilityError(msg)
        return found

    async def archive(
        self,
        agent_id: str,
        ids: Sequence[str],
        *,
        reason: str,
        actor: str | None = None,
        consolidated_into: str | None = None,
    ) -> dict[str, str]:
        """Move the agent's entries ``ids`` to the archive of the child holding each one.

        Returns original id -> archive id; unknown ids are left out. Each child moves its
        entries (rows, deletion, audit) in its own transaction, so every entry is always either
        live or archived in exactly one child.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        wanted = list(dict.fromkeys(check_id(i) for i in ids))
        moved: dict[str, str] = {}
        for child in self._archivers():
            mine = [i for i in wanted if i not in moved and await child.get(agent, i) is not None]
            if mine:
                extra = (
                    {} if consolidated_into is None else {"consolidated_into": consolidated_into}
                )
                moved.update(await child.archive(agent, mine, reason=reason, actor=actor, **extra))
        return moved

    async def archived(
        self,
        agent_id: str,
        *,
        memory_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[ArchivedEntry]:
        """The agent's archived entries in every child (or one memory's), newest first."""
        agent = check_agent(agent_id)
        if limit < 1 or offset < 0:
            msg = "limit must be >= 1 and offset >= 0"
            raise MemoryValidationError(msg)
        self._require_connected()
        rows: list[ArchivedEntry] = []
        for child in self._archivers():
            rows.extend(
                await child.archived(agent, memory_id=memory_id, limit=limit + offset, offset=0)
            )
        rows.sort(key=lambda r: (r.archived_at, r.archive_id), reverse=True)
        return rows[offset : offset + limit]

    async def restore(
        self, agent_id: str, memory_id: str, *, actor: str | None = None
    ) -> MemoryEntry:
        """Bring an archived entry back, into the child whose archive holds it.

        Raises:
            MemoryNotFoundError: no child has an archived entry of the agent with that id.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        for child in self._archivers():
            if await child.archived(agent, memory_id=mid, limit=1):
                restored: MemoryEntry = await child.restore(agent, mid, actor=actor)
                return restored
        msg = f"no archived memory {mid!r} for agent {agent!r}"
        raise MemoryNotFoundError(msg)

    def _prefer_default(self, stores: Sequence[Any]) -> Any:
        """The default child if it is among ``stores``, else the first of them."""
        default: Any = self._default
        return default if any(s is default for s in stores) else stores[0]

    def _auditors(self) -> list[Any]:
        return [c for c in self._children if callable(getattr(c, "record_audit", None))]

    async def record_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records to the default child (or the first child with an audit log)."""
        self._require_connected()
        auditors = self._auditors()
        if records and auditors:
            await self._prefer_default(auditors).record_audit(records)

    async def audit_for_agent(
        self, agent_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """The children's audit records about ``agent_id`` merged, oldest first."""
        agent = check_agent(agent_id)
        self._require_connected()
        rows: list[AuditRecord] = []
        for child in self._children:
            fetch = getattr(child, "audit_for_agent", None)
            if fetch is not None:
                rows.extend(await fetch(agent, after=after, limit=limit))
        rows.sort(key=lambda r: (r.at, r.id))
        return rows[:limit]

    # -- extra tables (RowTableStore, for `memvault migrate`) -----------------------------------

    def _row_children(self, table: str | None = None) -> list[Any]:
        return [
            c
            for c in self._children
            if isinstance(c, RowTableStore) and (table is None or table in c.row_tables())
        ]

    def row_tables(self) -> Sequence[str]:
        """``audit`` and ``archive`` when some child keeps them."""
        return tuple(t for t in ("audit", "archive") if self._row_children(t))

    def _check_table(self, table: str) -> list[Any]:
        owners = self._row_children(table)
        if not owners:
            msg = f"composite store has no table {table!r}"
            raise MemoryCapabilityError(msg)
        return owners

    async def export_rows(self, table: str) -> AsyncIterator[dict[str, Any]]:
        """Every child's rows of ``table`` merged by time (audit: oldest first by (at, id);
        archive: as each child lists them, children one after another)."""
        owners = self._check_table(table)
        self._require_connected()
        if table == "archive":
            for child in owners:
                async for row in child.export_rows(table):
                    yield row
            return
        streams = [child.export_rows(table) for child in owners]
        heap: list[tuple[str, str, int, dict[str, Any]]] = []
        try:
            for i, stream in enumerate(streams):
                first = await anext(stream, None)
                if first is not None:
                    heapq.heappush(heap, (str(first["at"]), str(first["id"]), i, first))
            while heap:
                _, _, i, row = heapq.heappop(heap)
                yield row
                nxt = await anext(streams[i], None)
                if nxt is not None:
                    heapq.heappush(heap, (str(nxt["at"]), str(nxt["id"]), i, nxt))
        finally:
            for stream in streams:
                close: Any = getattr(stream, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()

    async def import_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert exported rows: audit into the default child, archive rows into the child of
        their entry's category; known ids are skipped."""
        owners = self._check_table(table)
        self._require_connected()
        if not rows:
            return 0
        if table == "audit":
            added: int = await self._prefer_default(owners).import_rows(table, rows)
            return added
        groups: dict[int, list[Mapping[str, Any]]] = {}
        for row in rows:
            try:
                category = MemoryCategory(row["entry"]["category"])
            except (KeyError, TypeError, ValueError):
                msg = "archive row without a valid entry.category"
                raise MemoryValidationError(msg) from None
            child: Any = self.route(category)
            if not any(o is child for o in owners):
                child = self._prefer_default(owners)
            groups.setdefault(self._index(child), []).append(row)
        total = 0
        for k, group in groups.items():
            target: Any = self._children[k]
            total += await target.import_rows(table, group)
        return total

    async def count_rows(self, table: str) -> int:
        """Rows of ``table`` over every child."""
        owners = self._check_table(table)
        self._require_connected()
        return sum([await c.count_rows(table) for c in owners])
