"""Where the entity graph lives: three side tables beside the memories.

``graph_entities`` (one row per agent and entity key, with its mention count),
``graph_mentions`` (entity key -> memory id) and ``graph_edges`` (typed, weighted edges with
``valid_from`` / ``valid_to`` in microseconds since the epoch). They live in the SQLite file or
PostgreSQL schema of the store (each tenant has its own store, hence its own graph); every
statement is scoped by ``agent_id``, so one agent never reads another's graph. ``memory://``
keeps the same tables in an in-process SQLite database.

The SQL is one text for both engines (``?`` placeholders, ``ON CONFLICT`` upserts); the
engines differ only in how a statement list runs in one transaction, which
:class:`_Runner` hides.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from memvault._sidetables import Migration, SideSchema, SQLiteSide, from_us, migrate_sqlite, to_us
from memvault.backends.sqlite._connect import immediate, translate_error
from memvault.errors import MemoryConfigError, MemoryConnectionError
from memvault.graph.models import (
    CO_OCCURS,
    FUNCTIONAL_RELATIONS,
    EpisodeLink,
    Extraction,
    GraphEdge,
    GraphEntity,
)

__all__ = ["GRAPH_TABLES", "GraphStore", "open_graph_store"]

_WHAT = "graph store"
_MAX_PAIRS_ENTITIES = 8  # co-occurrence edges among the first 8 entities of a memory (28 pairs)
_CHUNK = 500  # ids per IN (...) list

# The graph tables: one text for both engines (plain names; index names without a prefix).
# Migration names are recorded in the database: never rename or edit one, append a new one
# (memvault._sidetables.SideSchema).
_GRAPH_0001 = (
    "CREATE TABLE IF NOT EXISTS graph_entities ("
    " agent_id TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,"
    " mentions INTEGER NOT NULL, first_seen BIGINT NOT NULL, PRIMARY KEY (agent_id, key))",
    "CREATE TABLE IF NOT EXISTS graph_mentions ("
    " agent_id TEXT NOT NULL, key TEXT NOT NULL, memory_id TEXT NOT NULL, at BIGINT NOT NULL,"
    " PRIMARY KEY (agent_id, key, memory_id))",
    "CREATE INDEX IF NOT EXISTS graph_mentions_memory ON graph_mentions (agent_id, memory_id)",
    "CREATE TABLE IF NOT EXISTS graph_edges ("
    " agent_id TEXT NOT NULL, id TEXT NOT NULL, source TEXT NOT NULL, relation TEXT NOT NULL,"
    " target TEXT NOT NULL, weight DOUBLE PRECISION NOT NULL, valid_from BIGINT NOT NULL,"
    " valid_to BIGINT, memory_id TEXT, PRIMARY KEY (agent_id, id))",
    "CREATE INDEX IF NOT EXISTS graph_edges_source ON graph_edges (agent_id, source, relation)",
    "CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (agent_id, target)",
    # EM-Graph links between memories (memvault.graph.causal): cause -> effect.
    "CREATE TABLE IF NOT EXISTS graph_episode_links ("
    " agent_id TEXT NOT NULL, cause TEXT NOT NULL, effect TEXT NOT NULL,"
    " relation TEXT NOT NULL, weight DOUBLE PRECISION NOT NULL, at BIGINT NOT NULL,"
    " PRIMARY KEY (agent_id, cause, effect))",
    "CREATE INDEX IF NOT EXISTS graph_episode_links_effect ON graph_episode_links"
    " (agent_id, effect)",
)
GRAPH_TABLES = SideSchema(
    store="graph",
    sqlite=(Migration("graph_0001_tables", _GRAPH_0001),),
    postgres=(Migration("graph_0001_tables", _GRAPH_0001),),
    table="graph_edges",
    columns=frozenset({"agent_id", "id", "source", "relation", "target", "weight", "valid_from"}),
)

Statement = tuple[str, Sequence[Any]]


class _Runner(Protocol):
    location: str

    async def fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]: ...

    async def script(self, statements: Sequence[Statement]) -> None: ...

    async def close(self) -> None: ...


def _names(quote: str = "") -> dict[str, str]:
    return {
        "ent": f"{quote}graph_entities",
        "men": f"{quote}graph_mentions",
        "edg": f"{quote}graph_edges",
        "mem": f"{quote}memories",
        "epi": f"{quote}graph_episode_links",
        "least": "MIN",
    }


class _SQLiteRunner:
    """Statements on a SQLite file (through :class:`SQLiteSide`) or an in-process database."""

    def __init__(self, path: Path | None) -> None:
        self.location = "memory://" if path is None else str(path)
        self._path = path
        self._side: SQLiteSide | None = None
        self._mem: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        if path is not None:
            self._side = SQLiteSide(
                path, what=_WHAT, busy_timeout_ms=10_000, migrations=GRAPH_TABLES
            )
        else:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            migrate_sqlite(conn, GRAPH_TABLES.sqlite, to_us(datetime.now(UTC)))
            self._mem = conn

    def _call(self, fn: Any, *, write: bool) -> Any:
        if self._side is not None:
            return self._side.call(fn, write=write)
        with self._lock:
            if self._mem is None:
                msg = "graph store memory:// is closed"
                raise MemoryConnectionError(msg)
            try:
                return fn(self._mem)
            except sqlite3.Error as exc:  # pragma: no cover - in-process SQL of our own
                raise translate_error(exc, write=write, what=_WHAT, path=Path(":memory:")) from exc

    async def fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        def run(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return list(conn.execute(sql, tuple(params)).fetchall())

        result: list[tuple[Any, ...]] = await asyncio.to_thread(self._call, run, write=False)
        return result

    async def script(self, statements: Sequence[Statement]) -> None:
        def run(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                for sql, params in statements:
                    conn.execute(sql, tuple(params))

        await asyncio.to_thread(self._call, run, write=True)

    async def close(self) -> None:
        if self._side is not None:
            await self._side.aclose()
        with self._lock:
            conn, self._mem = self._mem, None
        if conn is not None:
            conn.close()


class _PostgresRunner:
    """Statements on a PostgreSQL schema (through :class:`PostgresSide`)."""

    def __init__(self, url: str, *, schema: str | None) -> None:
        try:
            from psycopg import sql
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            msg = 'the PostgreSQL graph store needs psycopg 3: pip install "memvault[postgres]"'
            raise MemoryConfigError(msg) from exc
        from memvault._sidetables import PostgresSide
        from memvault.backends.postgres._dsn import check_schema, parse_dsn

        self._sql = sql
        dsn = parse_dsn(url)
        self._schema = check_schema(dsn.schema or schema or "public")
        self.location = dsn.location
        quoted = '"' + self._schema.replace('"', '""') + '".'
        self._names = {**_names(quoted), "least": "LEAST"}
        self._db = PostgresSide(
            dsn,
            schema=self._schema,
            location=dsn.location,
            noun="graph",
            lock_name=b"memvault.graph",
            migrations=GRAPH_TABLES,
            pool_name=f"memvault-graph:{self._schema}",
            pool_max=4,
            connect_timeout=10.0,
        )

    def names(self) -> dict[str, str]:
        return self._names

    def _q(self, text: str) -> Any:
        return self._sql.SQL(text.replace("?", "%s"))

    async def fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async def run(conn: Any) -> list[tuple[Any, ...]]:
            cur = await conn.execute(self._q(sql), list(params))
            return list(await cur.fetchall())

        result: list[tuple[Any, ...]] = await self._db.read("read", run)
        return result

    async def script(self, statements: Sequence[Statement]) -> None:
        async def run(conn: Any) -> None:
            for sql, params in statements:
                await conn.execute(self._q(sql), list(params))

        await self._db.write("write", run)

    async def close(self) -> None:
        await self._db.close()


def _edge_id(source: str, relation: str, target: str, valid_from: int | None = None) -> str:
    text = f"{source}\x1f{relation}\x1f{target}\x1f{'' if valid_from is None else valid_from}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _chunks(items: Sequence[str]) -> list[Sequence[str]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)] or [[]]


class GraphStore:
    """An agent-scoped entity graph in the side tables of one store (see the module docstring).

    Every method takes the agent id first and touches only that agent's rows.
    """

    def __init__(self, runner: _Runner, names: dict[str, str]) -> None:
        self._db = runner
        self._n = names
        # Whether the memories live in this database too (checked until they do: the store
        # may create its tables after the graph opened). Then reads skip mentions of memories
        # that are not live (archived: back once restored; deleted: the deletion drops them).
        self._memories_here = False

    async def _live_filter(self) -> bool:
        if self._memories_here or self._db.location == "memory://":
            return self._memories_here
        if isinstance(self._db, _PostgresRunner):
            rows = await self._db.fetch("SELECT to_regclass(?)", [self._n["mem"]])
            self._memories_here = bool(rows) and rows[0][0] is not None
        else:
            rows = await self._db.fetch(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories'", ()
            )
            self._memories_here = bool(rows)
        return self._memories_here

    @property
    def location(self) -> str:
        """Where the graph lives (a path, a URL without password, ``memory://``)."""
        return self._db.location

    def _s(self, text: str) -> str:
        return text.format(**self._n)

    async def add(
        self,
        agent_id: str,
        items: Sequence[tuple[str, datetime, Extraction]],
        *,
        increment: float,
        max_weight: float,
    ) -> None:
        """Index memories ``(memory_id, created_at, extraction)`` in one transaction.

        Entities are upserted (mentions counted), each memory's entities linked to it and to
        each other (``co_occurs``, weight growing by ``increment`` per repeat), typed edges
        added; a functional relation's newer fact closes the older one (and a fact older than
        the current one is stored already closed by it).
        """
        s = self._s
        out: list[Statement] = []
        for memory_id, at, extraction in items:
            when = to_us(at)
            for e in extraction.entities:
                out.append(
                    (
                        s(
                            "INSERT INTO {ent} AS t (agent_id, key, name, kind, mentions,"
                            " first_seen) VALUES (?, ?, ?, ?, 1, ?)"
                            " ON CONFLICT (agent_id, key) DO UPDATE SET"
                            " mentions = t.mentions + 1,"
                            " first_seen = {least}(t.first_seen, excluded.first_seen)"
                        ),
                        (agent_id, e.key, e.name, e.kind, when),
                    )
                )
                out.append(
                    (
                        s(
                            "INSERT INTO {men} (agent_id, key, memory_id, at) VALUES (?, ?, ?, ?)"
                            " ON CONFLICT (agent_id, key, memory_id) DO NOTHING"
                        ),
                        (agent_id, e.key, memory_id, when),
                    )
                )
            keys = sorted({e.key for e in extraction.entities[:_MAX_PAIRS_ENTITIES]})
            for i, a in enumerate(keys):
                for b in keys[i + 1 :]:
                    out.append(
                        self._bump(
                            agent_id, a, CO_OCCURS, b, when, memory_id, 1.0, increment, max_weight
                        )
                    )
            for edge in extraction.edges:
                if edge.relation in FUNCTIONAL_RELATIONS:
                    out.extend(
                        self._functional(
                            agent_id,
                            edge.source,
                            edge.relation,
                            edge.target,
                            when,
                            memory_id,
                            increment,
                            max_weight,
                        )
                    )
                else:
                    out.append(
                        self._bump(
                            agent_id,
                            edge.source,
                            edge.relation,
                            edge.target,
                            when,
                            memory_id,
                            1.0,
                            increment,
                            max_weight,
                        )
                    )
        if out:
            await self._db.script(out)

    def _bump(
        self,
        agent_id: str,
        source: str,
        relation: str,
        target: str,
        when: int,
        memory_id: str | None,
        initial: float,
        increment: float,
        max_weight: float,
    ) -> Statement:
        return (
            self._s(
                "INSERT INTO {edg} AS t (agent_id, id, source, relation, target, weight,"
                " valid_from, valid_to, memory_id) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)"
                " ON CONFLICT (agent_id, id) DO UPDATE SET"
                " weight = {least}(t.weight + ?, ?),"
                " valid_from = {least}(t.valid_from, excluded.valid_from)"
            ),
            (
                agent_id,
                _edge_id(source, relation, target),
                source,
                relation,
                target,
                initial,
                when,
                memory_id,
                increment,
                max_weight,
            ),
        )

    def _functional(
        self,
        agent_id: str,
        source: str,
        relation: str,
        target: str,
        when: int,
        memory_id: str,
        increment: float,
        max_weight: float,
    ) -> list[Statement]:
        s = self._s
        same = "agent_id = ? AND source = ? AND relation = ?"
        return [
            # The same fact still open (asserted earlier): strengthen it, add nothing.
            (
                s(
                    "UPDATE {edg} SET weight = {least}(weight + ?, ?) WHERE "
                    + same
                    + " AND target = ? AND valid_to IS NULL AND valid_from <= ?"
                ),
                (increment, max_weight, agent_id, source, relation, target, when),
            ),
            # A new fact: stored unless the same one is open; closed at once by a newer fact of
            # another object already known (an out-of-order write).
            (
                s(
                    "INSERT INTO {edg} (agent_id, id, source, relation, target, weight,"
                    " valid_from, valid_to, memory_id) SELECT ?, ?, ?, ?, ?, 1.0, ?,"
                    " (SELECT MIN(o.valid_from) FROM {edg} o WHERE o.agent_id = ? AND"
                    " o.source = ? AND o.relation = ? AND o.target <> ? AND o.valid_from > ?),"
                    " ? WHERE NOT EXISTS (SELECT 1 FROM {edg} c WHERE c.agent_id = ? AND"
                    " c.source = ? AND c.relation = ? AND c.target = ? AND c.valid_to IS NULL"
                    " AND c.valid_from <= ?) ON CONFLICT (agent_id, id) DO NOTHING"
                ),
                (
                    agent_id,
                    _edge_id(source, relation, target, when),
                    source,
                    relation,
                    target,
                    when,
                    agent_id,
                    source,
                    relation,
                    target,
                    when,
                    memory_id,
                    agent_id,
                    source,
                    relation,
                    target,
                    when,
                ),
            ),
            # Older facts of another object end where this one starts.
            (
                s(
                    "UPDATE {edg} SET valid_to = ? WHERE "
                    + same
                    + " AND target <> ? AND valid_from < ? AND (valid_to IS NULL OR valid_to > ?)"
                ),
                (when, agent_id, source, relation, target, when, when),
            ),
        ]

    async def strengthen(
        self, agent_id: str, memory_ids: Sequence[str], *, increment: float, max_weight: float
    ) -> int:
        """Strengthen the links between the entities of memories retrieved together.

        Each pair of entities from two different memories of ``memory_ids`` gets its
        ``co_occurs`` edge's weight raised by ``increment`` (created at weight ``increment``
        when new), up to ``max_weight``. Returns the number of links touched.
        """
        by_memory = await self.entities_of(agent_id, memory_ids)
        # The strongest few entities of each memory (its first mentions) keep the pair count small.
        keys = {m: sorted(ks)[:4] for m, ks in by_memory.items()}
        pairs: set[tuple[str, str]] = set()
        mids = list(keys)
        for i, a in enumerate(mids):
            for b in mids[i + 1 :]:
                for x in keys[a]:
                    for y in keys[b]:
                        if x != y:
                            pairs.add((min(x, y), max(x, y)))
        if not pairs:
            return 0
        now = to_us(datetime.now(UTC))
        await self._db.script(
            [
                self._bump(agent_id, a, CO_OCCURS, b, now, None, increment, increment, max_weight)
                for a, b in sorted(pairs)[:200]
            ]
        )
        return min(len(pairs), 200)

    async def entities(self, agent_id: str, keys: Sequence[str]) -> dict[str, GraphEntity]:
        """The agent's entities among ``keys`` (unknown keys are left out)."""
        out: dict[str, GraphEntity] = {}
        wanted = sorted(set(keys))
        for part in _chunks(wanted):
            if not part:
                continue
            marks = ",".join("?" * len(part))
            rows = await self._db.fetch(
                self._s(
                    "SELECT key, name, kind, mentions, first_seen FROM {ent}"
                    f" WHERE agent_id = ? AND key IN ({marks})"
                ),
                (agent_id, *part),
            )
            for key, name, kind, mentions, first in rows:
                out[str(key)] = GraphEntity(
                    key=key, name=name, kind=kind, mentions=int(mentions), first_seen=from_us(first)
                )
        return out

    async def all_entities(self, agent_id: str, *, limit: int = 1000) -> list[GraphEntity]:
        """The agent's most mentioned entities, most first."""
        rows = await self._db.fetch(
            self._s(
                "SELECT key, name, kind, mentions, first_seen FROM {ent} WHERE agent_id = ?"
                " ORDER BY mentions DESC, key LIMIT ?"
            ),
            (agent_id, limit),
        )
        return [
            GraphEntity(key=k, name=n, kind=t, mentions=int(m), first_seen=from_us(f))
            for k, n, t, m, f in rows
        ]

    async def edges(
        self,
        agent_id: str,
        keys: Sequence[str] | None = None,
        *,
        as_of: datetime | None = None,
        include_closed: bool = False,
    ) -> list[GraphEdge]:
        """Edges touching ``keys`` (None: all of the agent's), valid now or at ``as_of``.

        ``include_closed`` returns every edge whatever its validity.
        """
        parts: list[Sequence[str] | None] = (
            [None] if keys is None else list(_chunks(sorted(set(keys))))
        )
        out: dict[str, GraphEdge] = {}
        for part in parts:
            cols = "id, source, relation, target, weight, valid_from, valid_to, memory_id"
            if part is None:
                sql, params = f"SELECT {cols} FROM {{edg}} WHERE agent_id = ?", [agent_id]
            elif not part:
                continue
            else:
                marks = ",".join("?" * len(part))
                sql = (
                    f"SELECT {cols} FROM {{edg}} WHERE agent_id = ? AND"
                    f" (source IN ({marks}) OR target IN ({marks}))"
                )
                params = [agent_id, *part, *part]
            for row in await self._db.fetch(self._s(sql), params):
                edge = GraphEdge(
                    id=row[0],
                    source=row[1],
                    relation=row[2],
                    target=row[3],
                    weight=float(row[4]),
                    valid_from=from_us(row[5]),
                    valid_to=None if row[6] is None else from_us(row[6]),
                    memory_id=row[7],
                )
                if include_closed or edge.valid_at(as_of):
                    out[edge.id] = edge
        return sorted(out.values(), key=lambda e: (e.valid_from, e.id))

    async def mentions(
        self, agent_id: str, keys: Sequence[str], *, as_of: datetime | None = None
    ) -> dict[str, list[str]]:
        """Entity key -> ids of the agent's memories that mention it (as of ``as_of``).

        Where the memories share the database, only live memories count: an archived one is
        left out until it is restored.
        """
        out: dict[str, list[str]] = {}
        live = await self._live_filter()
        for part in _chunks(sorted(set(keys))):
            if not part:
                continue
            marks = ",".join("?" * len(part))
            sql = (
                "SELECT g.key, g.memory_id FROM {men} g"
                f" WHERE g.agent_id = ? AND g.key IN ({marks})"
            )
            params: list[Any] = [agent_id, *part]
            if live:
                # Archived (or otherwise gone) memories are not mentioned while they are away.
                sql += " AND EXISTS (SELECT 1 FROM {mem} m WHERE m.id = g.memory_id)"
            if as_of is not None:
                sql += " AND g.at <= ?"
                params.append(to_us(as_of))
            for key, memory_id in await self._db.fetch(self._s(sql), params):
                out.setdefault(str(key), []).append(str(memory_id))
        return out

    async def entities_of(self, agent_id: str, memory_ids: Sequence[str]) -> dict[str, list[str]]:
        """Memory id -> the entity keys it mentions (memories without any are left out)."""
        out: dict[str, list[str]] = {}
        for part in _chunks(sorted(set(memory_ids))):
            if not part:
                continue
            marks = ",".join("?" * len(part))
            rows = await self._db.fetch(
                self._s(
                    "SELECT memory_id, key FROM {men} WHERE agent_id = ?"
                    f" AND memory_id IN ({marks})"
                ),
                (agent_id, *part),
            )
            for memory_id, key in rows:
                out.setdefault(str(memory_id), []).append(str(key))
        return out

    # -- EM-Graph links between memories (memvault.graph.causal) ----------------------------------

    async def earlier_mentions(
        self, agent_id: str, keys: Sequence[str], *, since: datetime, before: datetime
    ) -> list[tuple[str, datetime]]:
        """``(memory_id, at)`` of the agent's live memories naming one of ``keys``, written in
        ``[since, before)``."""
        out: dict[str, datetime] = {}
        live = await self._live_filter()
        for part in _chunks(sorted(set(keys))):
            if not part:
                continue
            marks = ",".join("?" * len(part))
            sql = (
                "SELECT g.memory_id, g.at FROM {men} g"
                f" WHERE g.agent_id = ? AND g.key IN ({marks}) AND g.at >= ? AND g.at < ?"
            )
            if live:
                sql += " AND EXISTS (SELECT 1 FROM {mem} m WHERE m.id = g.memory_id)"
            rows = await self._db.fetch(
                self._s(sql), (agent_id, *part, to_us(since), to_us(before))
            )
            for memory_id, at in rows:
                out[str(memory_id)] = from_us(int(at))
        return sorted(out.items(), key=lambda pair: (pair[1], pair[0]))

    async def latest_before(
        self, agent_id: str, *, since: datetime, before: datetime
    ) -> tuple[str, datetime] | None:
        """The agent's latest live memory (with entities) written in ``[since, before)``."""
        sql = (
            "SELECT g.memory_id, g.at FROM {men} g WHERE g.agent_id = ? AND g.at >= ? AND g.at < ?"
        )
        if await self._live_filter():
            sql += " AND EXISTS (SELECT 1 FROM {mem} m WHERE m.id = g.memory_id)"
        sql += " ORDER BY g.at DESC, g.memory_id DESC LIMIT 1"
        rows = await self._db.fetch(self._s(sql), (agent_id, to_us(since), to_us(before)))
        return (str(rows[0][0]), from_us(int(rows[0][1]))) if rows else None

    async def add_episode_links(self, agent_id: str, links: Sequence[EpisodeLink]) -> None:
        """Store links (one transaction); a link stored again takes the newer relation."""
        statements: list[Statement] = [
            (
                self._s(
                    "INSERT INTO {epi} (agent_id, cause, effect, relation, weight, at)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, cause, effect) DO UPDATE"
                    " SET relation = excluded.relation, weight = excluded.weight, at = excluded.at"
                ),
                (agent_id, k.cause, k.effect, k.relation, k.weight, to_us(k.at)),
            )
            for k in links
        ]
        if statements:
            await self._db.script(statements)

    async def episode_links(
        self, agent_id: str, memory_ids: Sequence[str], *, as_of: datetime | None = None
    ) -> list[EpisodeLink]:
        """The links touching ``memory_ids`` (either end) whose both ends are live memories."""
        out: dict[tuple[str, str], EpisodeLink] = {}
        live = await self._live_filter()
        for part in _chunks(sorted(set(memory_ids))):
            if not part:
                continue
            marks = ",".join("?" * len(part))
            sql = (
                "SELECT e.cause, e.effect, e.relation, e.weight, e.at FROM {epi} e"
                f" WHERE e.agent_id = ? AND (e.cause IN ({marks}) OR e.effect IN ({marks}))"
            )
            params: list[Any] = [agent_id, *part, *part]
            if live:
                sql += (
                    " AND EXISTS (SELECT 1 FROM {mem} m WHERE m.id = e.cause)"
                    " AND EXISTS (SELECT 1 FROM {mem} m WHERE m.id = e.effect)"
                )
            if as_of is not None:
                sql += " AND e.at <= ?"
                params.append(to_us(as_of))
            for cause, effect, relation, weight, at in await self._db.fetch(self._s(sql), params):
                out[(str(cause), str(effect))] = EpisodeLink(
                    cause=str(cause),
                    effect=str(effect),
                    relation=str(relation),
                    weight=float(weight),
                    at=from_us(int(at)),
                )
        return sorted(out.values(), key=lambda k: (k.at, k.cause, k.effect))

    async def forget_memories(self, agent_id: str, memory_ids: Sequence[str]) -> None:
        """Drop the mentions of deleted memories (entities and edges stay: they are facts)."""
        statements: list[Statement] = []
        for part in _chunks(list(memory_ids)):
            if part:
                marks = ",".join("?" * len(part))
                statements.append(
                    (
                        self._s(
                            f"DELETE FROM {{men}} WHERE agent_id = ? AND memory_id IN ({marks})"
                        ),
                        (agent_id, *part),
                    )
                )
        if statements:
            await self._db.script(statements)

    async def close(self) -> None:
        """Release the connection(s)."""
        await self._db.close()


def open_graph_store(url: str | None, *, schema: str | None = None) -> GraphStore:
    """The graph beside the memories at ``url`` (None or ``memory://``: in process).

    Nothing is opened until first use.

    Raises:
        MemoryConfigError: an URL the graph cannot be kept in.
    """
    if url is None:
        return GraphStore(_SQLiteRunner(None), _names())
    from memvault.backends.factory import parse_url

    kind, target = parse_url(url)
    if kind == "memory":
        return GraphStore(_SQLiteRunner(None), _names())
    if kind == "sqlite":
        return GraphStore(_SQLiteRunner(Path(target).expanduser()), _names())
    if kind == "postgresql":
        runner = _PostgresRunner(target, schema=schema)
        return GraphStore(runner, runner.names())
    msg = f"the graph cannot be kept in {url!r}: use a file path, sqlite://, postgresql:// or memory://"
    raise MemoryConfigError(msg)
