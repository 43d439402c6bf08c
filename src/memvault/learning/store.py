"""Where the learning layer keeps its own records: approvals, agent profiles, trajectories,
skill applications.

One small table (``learning_items``) holds them all, keyed by ``(kind, id)`` with the columns
every query needs (agent, status, time, a counter) and the record itself as JSON. The
:class:`LearningStore` protocol is that table; the drivers are the in-process store below,
:class:`memvault.learning.sqlite.SQLiteLearningStore` (in the memory store's SQLite file) and
:class:`memvault.learning.postgres.PostgresLearningStore` (in the store's schema). The typed
repositories (:class:`ApprovalQueue`, :class:`ProfileRepository`, :class:`TrajectoryLog`,
:class:`SkillUsage`) work over any driver, so every driver passes the same contract tests.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memvault._ids import new_id, utc_now
from memvault._sidetables import Migration, SideSchema
from memvault.errors import MemoryConnectionError, MemoryNotFoundError, MemoryValidationError
from memvault.learning.models import (
    AgentProfile,
    ApprovalItem,
    ApprovalStatus,
    Trajectory,
)

__all__ = [
    "APPROVAL",
    "LEARNING_TABLES",
    "PROFILE",
    "TRAJECTORY",
    "USAGE",
    "ApprovalQueue",
    "InMemoryLearningStore",
    "LearningRow",
    "LearningStore",
    "ProfileRepository",
    "SkillUsage",
    "TrajectoryLog",
]

APPROVAL = "approval"
PROFILE = "profile"
TRAJECTORY = "trajectory"
USAGE = "usage"

# The ``learning_items`` table of the SQLite and PostgreSQL drivers. Migration names are recorded
# in the database: never rename or edit one, append a new one (memvault._sidetables.SideSchema).
LEARNING_TABLES = SideSchema(
    store="learning",
    sqlite=(
        Migration(
            "learning_0001_items",
            (
                "CREATE TABLE IF NOT EXISTS learning_items ("
                " kind TEXT NOT NULL, id TEXT NOT NULL, agent_id TEXT, status TEXT,"
                " at INTEGER NOT NULL, n INTEGER NOT NULL DEFAULT 0, data TEXT NOT NULL,"
                " PRIMARY KEY (kind, id)) WITHOUT ROWID",
                "CREATE INDEX IF NOT EXISTS idx_learning_kind_status_at"
                " ON learning_items (kind, status, at)",
                "CREATE INDEX IF NOT EXISTS idx_learning_kind_agent_at"
                " ON learning_items (kind, agent_id, at)",
            ),
        ),
    ),
    postgres=(
        Migration(
            "learning_0001_items",
            (
                "CREATE TABLE IF NOT EXISTS learning_items ("
                ' kind text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL,'
                ' agent_id text COLLATE "C", status text, at timestamptz NOT NULL,'
                " n bigint NOT NULL DEFAULT 0, data jsonb NOT NULL, PRIMARY KEY (kind, id))",
                "CREATE INDEX IF NOT EXISTS learning_kind_status_at"
                " ON learning_items (kind, status, at)",
                "CREATE INDEX IF NOT EXISTS learning_kind_agent_at"
                " ON learning_items (kind, agent_id, at)",
            ),
        ),
    ),
    table="learning_items",
    columns=frozenset({"kind", "id", "agent_id", "status", "at", "n", "data"}),
)


@dataclass(frozen=True, slots=True)
class LearningRow:
    """One record: its kind and id, the indexed columns, and the record as JSON data."""

    kind: str
    id: str
    agent_id: str | None
    status: str | None
    at: datetime
    n: int = 0
    data: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class LearningStore(Protocol):
    """The ``learning_items`` table of one tenant.

    Reads raise :class:`~memvault.errors.MemoryRetrievalError` and writes
    :class:`~memvault.errors.MemoryStoreError` when storage fails;
    :class:`~memvault.errors.MemoryConnectionError` when the store cannot be opened or is closed.
    """

    @property
    def location(self) -> str:
        """Where the records live (a path or a URL without password)."""
        ...

    async def put(self, row: LearningRow) -> None:
        """Insert or replace the record ``(row.kind, row.id)`` (its counter is kept)."""
        ...

    async def get(self, kind: str, item_id: str) -> LearningRow | None:
        """One record, or None."""
        ...

    async def find(
        self,
        kind: str,
        *,
        status: str | None = None,
        agent_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> builtins.list[LearningRow]:
        """Records of ``kind`` matching the filters, by time (then id)."""
        ...

    async def transition(self, row: LearningRow, *, expected_status: str) -> bool:
        """Replace the record only if its status is still ``expected_status``; True if it was."""
        ...

    async def bump(self, kind: str, ids: Sequence[str], at: datetime) -> None:
        """Add one to the counter of each record (created when missing) and set its time."""
        ...

    async def close(self) -> None:
        """Release connections; later calls raise :class:`MemoryConnectionError`."""
        ...


class InMemoryLearningStore:
    """Records in a dict of this process (``memory://``)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], LearningRow] = {}
        self._closed = False

    @property
    def location(self) -> str:
        """Always ``memory://``."""
        return "memory://"

    def _open(self) -> None:
        if self._closed:
            msg = "learning store memory:// is closed"
            raise MemoryConnectionError(msg)

    async def put(self, row: LearningRow) -> None:
        """Insert or replace a record (its counter is kept)."""
        self._open()
        old = self._rows.get((row.kind, row.id))
        n = old.n if old is not None else row.n
        self._rows[(row.kind, row.id)] = LearningRow(
            row.kind, row.id, row.agent_id, row.status, row.at, n, dict(row.data)
        )

    async def get(self, kind: str, item_id: str) -> LearningRow | None:
        """One record, or None."""
        self._open()
        return self._rows.get((kind, item_id))

    async def find(
        self,
        kind: str,
        *,
        status: str | None = None,
        agent_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
        newest_first: bool = True,
    ) -> builtins.list[LearningRow]:
        """Records of ``kind`` matching the filters, by time (then id)."""
        self._open()
        rows = [
            r
            for (k, _), r in self._rows.items()
            if k == kind
            and (status is None or r.status == status)
            and (agent_id is None or r.agent_id == agent_id)
            and (since is None or r.at >= since)
        ]
        rows.sort(key=lambda r: (r.at, r.id), reverse=newest_first)
        return rows if limit is None else rows[:limit]

    async def transition(self, row: LearningRow, *, expected_status: str) -> bool:
        """Replace the record if its status is still ``expected_status``."""
        self._open()
        old = self._rows.get((row.kind, row.id))
        if old is None or old.status != expected_status:
            return False
        await self.put(row)
        return True

    async def bump(self, kind: str, ids: Sequence[str], at: datetime) -> None:
        """Add one to each record's counter (created when missing)."""
        self._open()
        for item_id in ids:
            old = self._rows.get((kind, item_id))
            self._rows[(kind, item_id)] = LearningRow(
                kind,
                item_id,
                None if old is None else old.agent_id,
                None if old is None else old.status,
                at,
                (0 if old is None else old.n) + 1,
                {} if old is None else old.data,
            )

    async def close(self) -> None:
        """Forget every record; later calls raise :class:`MemoryConnectionError`."""
        self._closed = True
        self._rows.clear()


# -- typed repositories -----------------------------------------------------------------------


class ApprovalQueue:
    """The human approval queue: proposals wait here until a human approves or rejects them."""

    def __init__(self, store: LearningStore) -> None:
        self._store = store

    async def add(self, item: ApprovalItem) -> ApprovalItem:
        """Enqueue ``item`` (pending)."""
        await self._store.put(
            LearningRow(
                APPROVAL,
                item.id,
                None,
                item.status.value,
                item.created_at,
                0,
                item.model_dump(mode="json"),
            )
        )
        return item

    async def get(self, item_id: str) -> ApprovalItem:
        """One item.

        Raises:
            MemoryNotFoundError: no item has that id.
        """
        row = await self._store.get(APPROVAL, item_id)
        if row is None:
            msg = f"no approval item {item_id!r}"
            raise MemoryNotFoundError(msg)
        return ApprovalItem.model_validate(row.data)

    async def list(
        self, *, status: ApprovalStatus | None = None, limit: int | None = None
    ) -> builtins.list[ApprovalItem]:
        """Items, newest first (of one status)."""
        rows = await self._store.find(
            APPROVAL, status=None if status is None else status.value, limit=limit
        )
        return [ApprovalItem.model_validate(r.data) for r in rows]

    async def decide(self, item: ApprovalItem) -> bool:
        """Record a decision on a pending item; False if it was decided meanwhile."""
        row = LearningRow(
            APPROVAL,
            item.id,
            None,
            item.status.value,
            item.created_at,
            0,
            item.model_dump(mode="json"),
        )
        return await self._store.transition(row, expected_status=ApprovalStatus.PENDING.value)

    async def update(self, item: ApprovalItem) -> None:
        """Rewrite an item's record (after its decision was applied)."""
        await self._store.put(
            LearningRow(
                APPROVAL,
                item.id,
                None,
                item.status.value,
                item.created_at,
                0,
                item.model_dump(mode="json"),
            )
        )


class ProfileRepository:
    """Agent profiles (role, department, seniority) of one tenant."""

    def __init__(self, store: LearningStore) -> None:
        self._store = store

    async def set(self, profile: AgentProfile) -> AgentProfile:
        """Create or replace the agent's profile (stamped now)."""
        stamped = profile.model_copy(update={"updated_at": utc_now()})
        assert stamped.updated_at is not None
        await self._store.put(
            LearningRow(
                PROFILE,
                profile.agent_id,
                profile.agent_id,
                None,
                stamped.updated_at,
                0,
                stamped.model_dump(mode="json"),
            )
        )
        return stamped

    async def get(self, agent_id: str) -> AgentProfile | None:
        """The agent's profile, or None."""
        row = await self._store.get(PROFILE, agent_id)
        return None if row is None else AgentProfile.model_validate(row.data)

    async def list(self) -> builtins.list[AgentProfile]:
        """Every profile, by agent id."""
        rows = await self._store.find(PROFILE)
        return sorted((AgentProfile.model_validate(r.data) for r in rows), key=lambda p: p.agent_id)


class TrajectoryLog:
    """Every task outcome reported to ``learn_from`` (no conversations), for the evolver."""

    def __init__(self, store: LearningStore) -> None:
        self._store = store

    async def record(self, trajectory: Trajectory) -> Trajectory:
        """Append one trajectory."""
        await self._store.put(
            LearningRow(
                TRAJECTORY,
                trajectory.id,
                trajectory.agent_id,
                "ok" if trajectory.success else "failed",
                trajectory.at,
                0,
                trajectory.model_dump(mode="json"),
            )
        )
        return trajectory

    async def since(
        self, when: datetime | None, *, agent_id: str | None = None, limit: int | None = None
    ) -> builtins.list[Trajectory]:
        """Trajectories at or after ``when`` (all when None), newest first, of all or one agent."""
        rows = await self._store.find(TRAJECTORY, since=when, agent_id=agent_id, limit=limit)
        return [Trajectory.model_validate(r.data) for r in rows]


class SkillUsage:
    """How often each skill (memory id) was applied, and when last."""

    def __init__(self, store: LearningStore) -> None:
        self._store = store

    async def record(self, skill_ids: Sequence[str], at: datetime | None = None) -> int:
        """Count one application of each skill; returns how many were counted."""
        ids = list(dict.fromkeys(skill_ids))
        for skill_id in ids:
            if not isinstance(skill_id, str) or not skill_id.strip():
                msg = f"invalid skill id {skill_id!r}"
                raise MemoryValidationError(msg)
        if ids:
            await self._store.bump(USAGE, ids, at or utc_now())
        return len(ids)

    async def get(self, skill_id: str) -> tuple[int, datetime | None]:
        """``(application_count, last_applied_at)`` of one skill."""
        row = await self._store.get(USAGE, skill_id)
        return (0, None) if row is None else (row.n, row.at)


def new_item_id() -> str:
    """A fresh, sortable id for a learning record."""
    return new_id()
