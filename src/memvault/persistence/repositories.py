"""One repository per operational record kind, with the key queries seed 001 lists.

Every repository is async, takes and returns the frozen models of
:mod:`memvault.persistence.models`, and runs on any :class:`~memvault.persistence._sql.SQLDatabase`
(SQLite and PostgreSQL alike: the SQL is the same). Lists come oldest first unless a method
says otherwise; ``limit`` is at most :data:`~memvault.persistence._sql.MAX_LIMIT`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from memvault.errors import MemoryConflictError, MemoryNotFoundError, MemoryValidationError
from memvault.persistence import models as m
from memvault.persistence._sql import SQLDatabase, SQLRepository, older_than, sql_value
from memvault.persistence._tables import entity

__all__ = [
    "AgentStateRepository",
    "ArtifactRepository",
    "AuditRepository",
    "CheckpointRepository",
    "CollaborationMetricRepository",
    "CostRecordRepository",
    "HeartbeatRepository",
    "LifecycleEventRepository",
    "MessageRepository",
    "ParkedContextRepository",
    "PresetRepository",
    "ProjectRepository",
    "SettingsRepository",
    "TaskMetricRepository",
    "TaskRepository",
    "UserRepository",
]


class TaskRepository(SQLRepository[m.Task]):
    """Tasks: by status, by assignee, by project; status changes checked."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("tasks"), db)

    async def get(self, task_id: str) -> m.Task | None:
        """The task, or None."""
        return await self._get(task_id)

    async def delete(self, task_id: str) -> bool:
        """Delete the task; False if there was none."""
        return await self._delete(task_id)

    async def list_tasks(
        self,
        *,
        status: m.TaskStatus | Sequence[m.TaskStatus] | None = None,
        assigned_to: str | None = None,
        project: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[m.Task, ...]:
        """Tasks matching every filter given, oldest first."""
        where = {"status": status, "assigned_to": assigned_to, "project": project}
        return await self.find(where=where, limit=limit, offset=offset)

    async def transition(
        self, task_id: str, status: m.TaskStatus, *, now: datetime | None = None
    ) -> m.Task:
        """Move the task to ``status`` if :data:`~memvault.persistence.models.TASK_TRANSITIONS`
        allows it from its current one; the updated task.

        The change is a compare-and-set on the stored status, so two writers racing on one
        task cannot both win from the same state.

        Raises:
            MemoryNotFoundError: no such task.
            MemoryValidationError: the change is not allowed (``completed`` -> ``created``).
            MemoryConflictError: the task changed status meanwhile.
        """
        status = m.TaskStatus(status)
        task = await self.get(task_id)
        if task is None:
            msg = f"no task {task_id!r}"
            raise MemoryNotFoundError(msg)
        if status not in m.TASK_TRANSITIONS[task.status]:
            allowed = ", ".join(sorted(s.value for s in m.TASK_TRANSITIONS[task.status])) or "none"
            msg = (
                f"task {task_id!r} cannot go from {task.status.value} to {status.value} "
                f"(allowed: {allowed})"
            )
            raise MemoryValidationError(msg)
        moved = task.model_copy(update={"status": status, "updated_at": now or m.utcnow()})
        row = self._row(moved)
        changed = await self._db.execute(
            "tasks transition",
            f"UPDATE {self.entity.table} SET status = ?, updated_at = ?, body = ?"
            " WHERE id = ? AND status = ?",
            [status.value, sql_value(moved.updated_at), row[-1], task.id, task.status.value],
        )
        if changed == 0:
            msg = f"task {task_id!r} changed status while moving it to {status.value}; retry"
            raise MemoryConflictError(msg)
        return moved


class CostRecordRepository(SQLRepository[m.CostRecord]):
    """Cost records: by agent, by task, by model; sums by agent, task, model or day."""

    _GROUPS: ClassVar[dict[m.CostGroup, str]] = {
        m.CostGroup.AGENT: "agent_id",
        m.CostGroup.TASK: "task_id",
        m.CostGroup.MODEL: "model",
        m.CostGroup.DAY: "day",
    }

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("cost_records"), db)

    async def get(self, record_id: str) -> m.CostRecord | None:
        """The record, or None."""
        return await self._get(record_id)

    async def query(
        self,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        model: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> tuple[m.CostRecord, ...]:
        """Records matching every filter, oldest first."""
        where = {"agent_id": agent_id, "task_id": task_id, "model": model}
        return await self.find(where=where, since=since, until=until, limit=limit, offset=offset)

    async def aggregate(
        self,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> float:
        """The summed cost of the matching records (records without a price count 0)."""
        where = {"agent_id": agent_id, "task_id": task_id}
        clause, params = self._where(where, since, until, ())
        rows = await self._db.fetch(
            "cost_records aggregate",
            f"SELECT COALESCE(SUM(cost), 0) FROM {self.entity.table}{clause}",
            params,
        )
        return float(rows[0][0])

    async def totals(
        self, *, agent_id: str | None = None, since: datetime | None = None
    ) -> tuple[int, float]:
        """``(tokens in + out, cost)`` of the matching records (what a budget is checked on)."""
        clause, params = self._where({"agent_id": agent_id}, since, None, ())
        rows = await self._db.fetch(
            "cost_records totals",
            "SELECT COALESCE(SUM(input_tokens + output_tokens), 0), COALESCE(SUM(cost), 0)"
            f" FROM {self.entity.table}{clause}",
            params,
        )
        return int(rows[0][0]), float(rows[0][1])

    async def summarize(
        self,
        by: m.CostGroup | str = m.CostGroup.AGENT,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        model: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> tuple[m.CostSummary, ...]:
        """Sums per agent, task, model or UTC day, costliest first (then by calls)."""
        try:
            group = m.CostGroup(by)
        except ValueError:
            msg = f"costs group by agent, task, model or day, got {by!r}"
            raise MemoryValidationError(msg) from None
        col = self._GROUPS[group]
        where = {"agent_id": agent_id, "task_id": task_id, "model": model}
        clause, params = self._where(where, since, until, ())
        sql = (
            f"SELECT {col}, COUNT(*), COALESCE(SUM(input_tokens), 0),"
            " COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost), 0), AVG(latency_ms)"
            f" FROM {self.entity.table}{clause} GROUP BY {col}"
            f" ORDER BY 5 DESC, 2 DESC, {col}"
        )
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = await self._db.fetch("cost_records summarize", sql, params)
        return tuple(
            m.CostSummary(
                group=r[0],
                calls=int(r[1]),
                input_tokens=int(r[2]),
                output_tokens=int(r[3]),
                cost=float(r[4]),
                latency_ms=float(r[5] or 0.0),
            )
            for r in rows
        )


class MessageRepository(SQLRepository[m.Message]):
    """Messages: a channel's history, with limits and time ranges."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("messages"), db)

    async def get(self, message_id: str) -> m.Message | None:
        """The message, or None."""
        return await self._get(message_id)

    async def delete(self, message_id: str) -> bool:
        """Delete one message; False if there was none."""
        return await self._delete(message_id)

    async def get_history(
        self,
        channel: str,
        *,
        limit: int | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        agent_id: str | None = None,
    ) -> tuple[m.Message, ...]:
        """The channel's messages in the order written; with ``limit``, the latest ``limit``."""
        where = {"channel": channel, "agent_id": agent_id}
        if limit is None:
            return await self.find(where=where, since=since, until=until)
        latest = await self.find(
            where=where, since=since, until=until, limit=limit, newest_first=True
        )
        return tuple(reversed(latest))

    async def pop_latest(self, channel: str) -> m.Message | None:
        """Remove and return the channel's most recent message (None when it is empty)."""
        latest = await self.find(where={"channel": channel}, limit=1, newest_first=True)
        if not latest:
            return None
        return await self._pop(latest[0].id)

    async def clear_channel(self, channel: str) -> int:
        """Delete every message of the channel; how many there were."""
        return await self._db.execute(
            "messages clear", f"DELETE FROM {self.entity.table} WHERE channel = ?", [channel]
        )

    async def channels(self, *, agent_id: str | None = None) -> tuple[str, ...]:
        """The channels with messages (of ``agent_id`` when given), by name."""
        clause, params = self._where({"agent_id": agent_id}, None, None, ())
        rows = await self._db.fetch(
            "messages channels",
            f"SELECT DISTINCT channel FROM {self.entity.table}{clause} ORDER BY channel",
            params,
        )
        return tuple(r[0] for r in rows)


class AuditRepository(SQLRepository[m.AuditEntry]):
    """Audit entries: by agent, action type, verdict, risk level and time range."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("audit_entries"), db)

    async def get(self, entry_id: str) -> m.AuditEntry | None:
        """The entry, or None."""
        return await self._get(entry_id)

    async def query(
        self,
        *,
        agent_id: str | None = None,
        action_type: str | None = None,
        verdict: m.AuditVerdict | None = None,
        risk_level: m.RiskLevel | Sequence[m.RiskLevel] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = False,
    ) -> tuple[m.AuditEntry, ...]:
        """Entries matching every filter (oldest first unless ``newest_first``)."""
        where = {
            "agent_id": agent_id,
            "action_type": action_type,
            "verdict": verdict,
            "risk_level": risk_level,
        }
        return await self.find(
            where=where,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
            newest_first=newest_first,
        )


class ParkedContextRepository(SQLRepository[m.ParkedContext]):
    """Parked runs: by execution, agent or task; taken back atomically to resume."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("parked_contexts"), db)

    async def get(self, parked_id: str) -> m.ParkedContext | None:
        """The parked context, or None."""
        return await self._get(parked_id)

    async def delete(self, parked_id: str) -> bool:
        """Delete it; False if there was none."""
        return await self._delete(parked_id)

    async def list_parked(
        self,
        *,
        execution_id: str | None = None,
        agent_id: str | None = None,
        task_id: str | None = None,
        limit: int | None = None,
    ) -> tuple[m.ParkedContext, ...]:
        """Parked contexts matching every filter, oldest first."""
        where = {"execution_id": execution_id, "agent_id": agent_id, "task_id": task_id}
        return await self.find(where=where, limit=limit)

    async def take(self, parked_id: str) -> m.ParkedContext | None:
        """Remove and return the parked context, so exactly one resumer gets it."""
        return await self._pop(parked_id)


class AgentStateRepository(SQLRepository[m.AgentRuntimeState]):
    """Agents' runtime states: by agent; the active ones."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("agent_states"), db)

    async def get(self, agent_id: str) -> m.AgentRuntimeState | None:
        """The agent's state, or None."""
        return await self._get(agent_id)

    async def delete(self, agent_id: str) -> bool:
        """Forget the agent's state; False if it had none."""
        return await self._delete(agent_id)

    async def active(self) -> tuple[m.AgentRuntimeState, ...]:
        """Agents running, paused or waiting, least recently updated first."""
        return await self.find(where={"status": tuple(m.ACTIVE_AGENT_STATUSES)})

    async def list_states(
        self, *, status: m.AgentStatus | None = None, limit: int | None = None
    ) -> tuple[m.AgentRuntimeState, ...]:
        """Every agent's state (with ``status``: only those)."""
        return await self.find(where={"status": status}, limit=limit)


class SettingsRepository(SQLRepository[m.Setting]):
    """Settings: by namespace and key, by namespace, all."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("settings"), db)

    async def get(self, namespace: str, key: str) -> m.Setting | None:
        """The setting, or None."""
        return await self._get(namespace, key)

    async def set(self, namespace: str, key: str, value: Any) -> m.Setting:
        """Store ``value`` under ``namespace``/``key`` (replacing any); the stored setting."""
        setting = m.Setting(namespace=namespace, key=key, value=value)
        await self.save(setting)
        return setting

    async def delete(self, namespace: str, key: str) -> bool:
        """Delete the setting; False if there was none."""
        return await self._delete(namespace, key)

    async def get_namespace(self, namespace: str) -> tuple[m.Setting, ...]:
        """The namespace's settings, by key."""
        found = await self.find(where={"namespace": namespace})
        return tuple(sorted(found, key=lambda s: s.key))

    async def get_all(self) -> tuple[m.Setting, ...]:
        """Every setting, by namespace and key."""
        return tuple(sorted(await self.find(), key=lambda s: (s.namespace, s.key)))


class ArtifactRepository(SQLRepository[m.Artifact]):
    """Artifacts: by task, by creator, by type."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("artifacts"), db)

    async def get(self, artifact_id: str) -> m.Artifact | None:
        """The artifact, or None."""
        return await self._get(artifact_id)

    async def delete(self, artifact_id: str) -> bool:
        """Delete it; False if there was none."""
        return await self._delete(artifact_id)

    async def list_artifacts(
        self,
        *,
        task_id: str | None = None,
        created_by: str | None = None,
        artifact_type: str | None = None,
        limit: int | None = None,
    ) -> tuple[m.Artifact, ...]:
        """Artifacts matching every filter, oldest first."""
        where = {"task_id": task_id, "created_by": created_by, "artifact_type": artifact_type}
        return await self.find(where=where, limit=limit)


class ProjectRepository(SQLRepository[m.Project]):
    """Projects: by status, by lead."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("projects"), db)

    async def get(self, project_id: str) -> m.Project | None:
        """The project, or None."""
        return await self._get(project_id)

    async def delete(self, project_id: str) -> bool:
        """Delete it; False if there was none."""
        return await self._delete(project_id)

    async def list_projects(
        self, *, status: m.ProjectStatus | None = None, lead: str | None = None
    ) -> tuple[m.Project, ...]:
        """Projects matching every filter, oldest first."""
        return await self.find(where={"status": status, "lead": lead})


class PresetRepository(SQLRepository[m.CustomPreset]):
    """Custom presets, by name."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("custom_presets"), db)

    async def get(self, name: str) -> m.CustomPreset | None:
        """The preset, or None."""
        return await self._get(name)

    async def delete(self, name: str) -> bool:
        """Delete it; False if there was none."""
        return await self._delete(name)

    async def list_presets(self) -> tuple[m.CustomPreset, ...]:
        """Every preset, by name."""
        return tuple(sorted(await self.find(), key=lambda p: p.name))


class UserRepository(SQLRepository[m.User]):
    """Users: by id, by username."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("users"), db)

    async def get(self, user_id: str) -> m.User | None:
        """The user, or None."""
        return await self._get(user_id)

    async def by_username(self, username: str) -> m.User | None:
        """The user with that username, or None."""
        found = await self.find(where={"username": username}, limit=1)
        return found[0] if found else None

    async def delete(self, user_id: str) -> bool:
        """Delete the user; False if there was none."""
        return await self._delete(user_id)

    async def list_users(self) -> tuple[m.User, ...]:
        """Every user, oldest first."""
        return await self.find()


class CheckpointRepository(SQLRepository[m.Checkpoint]):
    """Framework checkpoints per thread and namespace, with their pending writes."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("checkpoints"), db)
        self._writes: SQLRepository[m.CheckpointWrite] = SQLRepository(
            entity("checkpoint_writes"), db
        )

    async def get(
        self, thread_id: str, checkpoint_ns: str = "", checkpoint_id: str | None = None
    ) -> m.Checkpoint | None:
        """The checkpoint, or (``checkpoint_id`` None) the thread's latest in the namespace."""
        if checkpoint_id is not None:
            return await self._get(thread_id, checkpoint_ns, checkpoint_id)
        # LangGraph's ids are time-ordered (uuid6), so the latest is the greatest id.
        rows = await self._db.fetch(
            "checkpoints latest",
            f"SELECT body FROM {self.entity.table} WHERE thread_id = ? AND checkpoint_ns = ?"
            " ORDER BY checkpoint_id DESC LIMIT 1",
            [thread_id, checkpoint_ns],
        )
        return self._load(rows[0][0]) if rows else None

    async def list_checkpoints(
        self,
        thread_id: str | None = None,
        *,
        checkpoint_ns: str | None = None,
        before: str | None = None,
        limit: int | None = None,
    ) -> tuple[m.Checkpoint, ...]:
        """Checkpoints, newest (greatest id) first; ``before``: only ids below it."""
        extra = [("checkpoint_id < ?", [before])] if before is not None else []
        where = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
        clause, params = self._where(where, None, None, extra)
        sql = f"SELECT body FROM {self.entity.table}{clause} ORDER BY checkpoint_id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = await self._db.fetch("checkpoints list", sql, params)
        return tuple(self._load(r[0]) for r in rows)

    async def put_writes(self, writes: Iterable[m.CheckpointWrite], *, replace: bool) -> int:
        """Store a task's pending writes; ``replace=False`` keeps writes already stored."""
        if replace:
            return await self._writes.save_many(writes)
        return await self._writes.add_new(writes)

    async def writes(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> tuple[m.CheckpointWrite, ...]:
        """The pending writes of one checkpoint, by task and index."""
        found = await self._writes.find(
            where={
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
            }
        )
        return tuple(sorted(found, key=lambda w: (w.task_id, w.idx)))

    async def delete_thread(self, thread_id: str) -> int:
        """Delete a thread's checkpoints and writes; how many checkpoints there were."""
        await self._db.execute(
            "checkpoint writes delete",
            f"DELETE FROM {self._writes.entity.table} WHERE thread_id = ?",
            [thread_id],
        )
        return await self._db.execute(
            "checkpoints delete",
            f"DELETE FROM {self.entity.table} WHERE thread_id = ?",
            [thread_id],
        )

    @property
    def write_records(self) -> SQLRepository[m.CheckpointWrite]:
        """The pending writes' own table (for copies and counts)."""
        return self._writes


class HeartbeatRepository(SQLRepository[m.Heartbeat]):
    """The latest heartbeat per execution; the stale ones are runs that stopped beating."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("heartbeats"), db)

    async def beat(self, heartbeat: m.Heartbeat) -> None:
        """Record the execution's latest sign of life (replacing the previous one)."""
        await self.save(heartbeat)

    async def get(self, execution_id: str) -> m.Heartbeat | None:
        """The execution's latest heartbeat, or None."""
        return await self._get(execution_id)

    async def delete(self, execution_id: str) -> bool:
        """Forget the execution (it ended); False if it had no heartbeat."""
        return await self._delete(execution_id)

    async def stale(
        self,
        older_than_: timedelta | datetime,
        *,
        agent_id: str | None = None,
        now: datetime | None = None,
    ) -> tuple[m.Heartbeat, ...]:
        """Executions whose last beat is older than ``older_than_`` (an age, or a time)."""
        cut = older_than(older_than_, now or m.utcnow())
        return await self.find(where={"agent_id": agent_id}, until=cut)

    async def list_beats(self, *, agent_id: str | None = None) -> tuple[m.Heartbeat, ...]:
        """Every execution's heartbeat (of ``agent_id`` when given), oldest beat first."""
        return await self.find(where={"agent_id": agent_id})


class LifecycleEventRepository(SQLRepository[m.LifecycleEvent]):
    """Agent lifecycle events: by agent, by type, by time range."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("lifecycle_events"), db)

    async def list_events(
        self,
        *,
        agent_id: str | None = None,
        event_type: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> tuple[m.LifecycleEvent, ...]:
        """Events matching every filter, oldest first."""
        where = {"agent_id": agent_id, "event_type": event_type}
        return await self.find(where=where, since=since, until=until, limit=limit)


class TaskMetricRepository(SQLRepository[m.TaskMetric]):
    """Task metrics: by task, by agent."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("task_metrics"), db)

    async def list_metrics(
        self,
        *,
        task_id: str | None = None,
        agent_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> tuple[m.TaskMetric, ...]:
        """Metrics matching every filter, oldest first."""
        return await self.find(
            where={"task_id": task_id, "agent_id": agent_id}, since=since, limit=limit
        )


class CollaborationMetricRepository(SQLRepository[m.CollaborationMetric]):
    """Collaboration metrics: by agent, by peer."""

    def __init__(self, db: SQLDatabase) -> None:
        super().__init__(entity("collaboration_metrics"), db)

    async def list_metrics(
        self,
        *,
        agent_id: str | None = None,
        peer_id: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> tuple[m.CollaborationMetric, ...]:
        """Metrics matching every filter, oldest first."""
        return await self.find(
            where={"agent_id": agent_id, "peer_id": peer_id}, since=since, limit=limit
        )
