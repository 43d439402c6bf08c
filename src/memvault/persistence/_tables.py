"""How each operational record lives in a table: its columns, key, indexes and migrations.

Every table holds the record's whole JSON (``body``, validated back into the model on read) and,
beside it, the fields the key queries filter, group or order by as typed, indexed columns, so a
query never parses JSON. Timestamps are INTEGER microseconds since the epoch (UTC) on both
engines; that keeps one SQL text for SQLite and PostgreSQL and makes a copy between them exact.
A ``seq`` column (SQLite's rowid alias; a PostgreSQL identity) records insertion order: records
with the same timestamp come back in the order they were written.

Tables are prefixed ``ops_`` so they never meet memvault's own (``audit_log``, ``sessions``...)
in the shared file or schema.

The migrations are named ``persistence_NNNN_<what>`` (:class:`memvault._sidetables.SideSchema`).
Migration 0001 is rendered from :data:`ENTITIES_0001`, a frozen literal: a later change to a
table is a new migration appended to :data:`SCHEMA` (``ALTER TABLE ... ADD COLUMN``, a new
index), never an edit of that literal (``tests`` pin its text).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any, Literal

from pydantic import BaseModel

from memvault._sidetables import Migration, SideSchema
from memvault.persistence import models as m

__all__ = ["ENTITIES", "SCHEMA", "Column", "Entity", "entity"]

Kind = Literal["text", "int", "real", "time", "bool"]

_SQLITE_TYPES: dict[str, str] = {
    "text": "TEXT",
    "int": "INTEGER",
    "real": "REAL",
    "time": "INTEGER",
    "bool": "INTEGER",
}
_PG_TYPES: dict[str, str] = {
    "text": 'text COLLATE "C"',
    "int": "bigint",
    "real": "double precision",
    "time": "bigint",
    "bool": "boolean",
}


@dataclass(frozen=True, slots=True)
class Column:
    """A queryable column: the model field it copies (or a function deriving it) and its kind."""

    name: str
    kind: Kind = "text"
    required: bool = False
    derive: Callable[[Any], Any] | None = None
    """Computes the column from the record (``day`` from ``timestamp``); else the field."""


@dataclass(frozen=True, slots=True)
class Entity:
    """One record kind: its model, table, key columns, query columns and indexes.

    ``time`` is the column time ranges and ordering use; ``owner`` the column naming the agent
    a record belongs to (what an agent key may read), None for records only operators see.
    """

    name: str
    model: type[BaseModel]
    table: str
    key: tuple[str, ...]
    columns: tuple[Column, ...]
    time: str
    owner: str | None
    indexes: tuple[tuple[str, ...], ...] = ()
    column_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "column_names", tuple(c.name for c in self.columns))
        names = set(self.column_names)
        for needed in (*self.key, self.time, *(c for ix in self.indexes for c in ix)):
            if needed not in names:
                msg = f"entity {self.name}: {needed!r} is not one of its columns"
                raise ValueError(msg)
        if self.owner is not None and self.owner not in names:
            msg = f"entity {self.name}: owner {self.owner!r} is not one of its columns"
            raise ValueError(msg)

    def column(self, name: str) -> Column:
        """The column called ``name``."""
        for col in self.columns:
            if col.name == name:
                return col
        msg = f"entity {self.name} has no column {name!r}"
        raise KeyError(msg)


def _day(record: Any) -> str:
    return str(record.timestamp.astimezone(UTC).date().isoformat())


def _t(name: str) -> Column:
    return Column(name, "time", required=True)


def _r(name: str, kind: Kind = "text") -> Column:
    return Column(name, kind, required=True)


ENTITIES_0001: tuple[Entity, ...] = (
    Entity(
        "tasks",
        m.Task,
        "ops_tasks",
        ("id",),
        (
            _r("id"),
            _r("status"),
            Column("assigned_to"),
            Column("project"),
            _r("priority", "int"),
            _t("created_at"),
            _t("updated_at"),
        ),
        time="created_at",
        owner="assigned_to",
        indexes=(("status", "created_at"), ("assigned_to", "created_at"), ("project",)),
    ),
    Entity(
        "cost_records",
        m.CostRecord,
        "ops_cost_records",
        ("id",),
        (
            _r("id"),
            _r("agent_id"),
            Column("task_id"),
            _r("model"),
            _r("kind"),
            Column("operation"),
            _r("input_tokens", "int"),
            _r("output_tokens", "int"),
            _r("latency_ms", "real"),
            Column("cost", "real"),
            _t("timestamp"),
            Column("day", required=True, derive=_day),
        ),
        time="timestamp",
        owner="agent_id",
        indexes=(("agent_id", "timestamp"), ("task_id",), ("model",), ("day",), ("timestamp",)),
    ),
    Entity(
        "messages",
        m.Message,
        "ops_messages",
        ("id",),
        (_r("id"), _r("channel"), Column("agent_id"), _r("sender"), _t("timestamp")),
        time="timestamp",
        owner="agent_id",
        indexes=(("channel", "timestamp"), ("agent_id", "timestamp")),
    ),
    Entity(
        "audit_entries",
        m.AuditEntry,
        "ops_audit_entries",
        ("id",),
        (
            _r("id"),
            _r("agent_id"),
            _r("action_type"),
            _r("verdict"),
            _r("risk_level"),
            Column("task_id"),
            _t("timestamp"),
        ),
        time="timestamp",
        owner="agent_id",
        indexes=(
            ("agent_id", "timestamp"),
            ("action_type", "timestamp"),
            ("verdict", "timestamp"),
            ("risk_level", "timestamp"),
            ("timestamp",),
        ),
    ),
    Entity(
        "parked_contexts",
        m.ParkedContext,
        "ops_parked_contexts",
        ("id",),
        (_r("id"), _r("execution_id"), _r("agent_id"), Column("task_id"), _t("parked_at")),
        time="parked_at",
        owner="agent_id",
        indexes=(("execution_id",), ("agent_id",), ("task_id",)),
    ),
    Entity(
        "agent_states",
        m.AgentRuntimeState,
        "ops_agent_states",
        ("agent_id",),
        (_r("agent_id"), _r("status"), Column("execution_id"), _t("updated_at")),
        time="updated_at",
        owner="agent_id",
        indexes=(("status",),),
    ),
    Entity(
        "settings",
        m.Setting,
        "ops_settings",
        ("namespace", "key"),
        (_r("namespace"), _r("key"), _t("updated_at")),
        time="updated_at",
        owner=None,
    ),
    Entity(
        "artifacts",
        m.Artifact,
        "ops_artifacts",
        ("id",),
        (
            _r("id"),
            Column("task_id"),
            _r("created_by"),
            _r("artifact_type"),
            _t("created_at"),
        ),
        time="created_at",
        owner="created_by",
        indexes=(("task_id",), ("created_by",), ("artifact_type",)),
    ),
    Entity(
        "projects",
        m.Project,
        "ops_projects",
        ("id",),
        (_r("id"), _r("status"), Column("lead"), _t("created_at")),
        time="created_at",
        owner=None,
        indexes=(("status",), ("lead",)),
    ),
    Entity(
        "custom_presets",
        m.CustomPreset,
        "ops_custom_presets",
        ("name",),
        (_r("name"), _t("created_at")),
        time="created_at",
        owner=None,
    ),
    Entity(
        "users",
        m.User,
        "ops_users",
        ("id",),
        (_r("id"), _r("username"), _r("role"), _t("created_at")),
        time="created_at",
        owner=None,
        indexes=(("username",),),
    ),
    Entity(
        "checkpoints",
        m.Checkpoint,
        "ops_checkpoints",
        ("thread_id", "checkpoint_ns", "checkpoint_id"),
        (
            _r("thread_id"),
            _r("checkpoint_ns"),
            _r("checkpoint_id"),
            Column("parent_checkpoint_id"),
            _t("created_at"),
        ),
        time="created_at",
        owner=None,
        indexes=(("thread_id", "checkpoint_ns", "created_at"),),
    ),
    Entity(
        "checkpoint_writes",
        m.CheckpointWrite,
        "ops_checkpoint_writes",
        ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"),
        (
            _r("thread_id"),
            _r("checkpoint_ns"),
            _r("checkpoint_id"),
            _r("task_id"),
            _r("idx", "int"),
            _r("channel"),
        ),
        # Writes have no timestamp of their own; ``idx`` orders them within a task.
        time="idx",
        owner=None,
    ),
    Entity(
        "heartbeats",
        m.Heartbeat,
        "ops_heartbeats",
        ("execution_id",),
        (_r("execution_id"), _r("agent_id"), Column("task_id"), _r("status"), _t("beat_at")),
        time="beat_at",
        owner="agent_id",
        indexes=(("beat_at",), ("agent_id",)),
    ),
    Entity(
        "lifecycle_events",
        m.LifecycleEvent,
        "ops_lifecycle_events",
        ("id",),
        (_r("id"), _r("agent_id"), _r("event_type"), _t("timestamp")),
        time="timestamp",
        owner="agent_id",
        indexes=(("agent_id", "timestamp"), ("event_type", "timestamp")),
    ),
    Entity(
        "task_metrics",
        m.TaskMetric,
        "ops_task_metrics",
        ("id",),
        (_r("id"), _r("task_id"), _r("agent_id"), _r("success", "bool"), _t("recorded_at")),
        time="recorded_at",
        owner="agent_id",
        indexes=(("task_id",), ("agent_id", "recorded_at")),
    ),
    Entity(
        "collaboration_metrics",
        m.CollaborationMetric,
        "ops_collaboration_metrics",
        ("id",),
        (_r("id"), _r("agent_id"), _r("peer_id"), _r("metric"), _t("recorded_at")),
        time="recorded_at",
        owner="agent_id",
        indexes=(("agent_id", "recorded_at"), ("peer_id",)),
    ),
)
"""The tables as migration 0001 creates them (frozen: see the module docstring)."""

ENTITIES: dict[str, Entity] = {e.name: e for e in ENTITIES_0001}
"""Every record kind by repository name, as the code reads and writes them now."""


def entity(name: str) -> Entity:
    """The record kind ``name`` (``tasks``, ``cost_records``...)."""
    return ENTITIES[name]


def _ddl(entity: Entity, engine: Literal["sqlite", "postgres"]) -> list[str]:
    types = _SQLITE_TYPES if engine == "sqlite" else _PG_TYPES
    cols = []
    if engine == "sqlite":
        cols.append("seq INTEGER PRIMARY KEY")
    else:
        cols.append("seq bigint GENERATED ALWAYS AS IDENTITY")
    for col in entity.columns:
        cols.append(f"{col.name} {types[col.kind]}{' NOT NULL' if col.required else ''}")
    cols.append("body text NOT NULL" if engine == "postgres" else "body TEXT NOT NULL")
    key = ", ".join(entity.key)
    cols.append(f"UNIQUE ({key})" if engine == "sqlite" else f"PRIMARY KEY ({key})")
    statements = [f"CREATE TABLE {entity.table} ({', '.join(cols)})"]
    for index in entity.indexes:
        name = f"{entity.table}_{'_'.join(index)}_idx"
        statements.append(f"CREATE INDEX {name} ON {entity.table} ({', '.join(index)})")
    if engine == "postgres":
        # Insertion order is the tiebreak of every ordered query (see the module docstring).
        statements.append(f"CREATE INDEX {entity.table}_seq_idx ON {entity.table} (seq)")
    return statements


def _migration_0001(engine: Literal["sqlite", "postgres"]) -> Migration:
    statements = [s for e in ENTITIES_0001 for s in _ddl(e, engine)]
    return Migration("persistence_0001_tables", tuple(statements))


SCHEMA = SideSchema(
    store="persistence",
    sqlite=(_migration_0001("sqlite"),),
    postgres=(_migration_0001("postgres"),),
    table="ops_tasks",
    columns=frozenset({"seq", "id", "status", "body"}),
)
"""The operational tables' named migrations on both engines."""
