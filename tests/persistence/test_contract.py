"""One contract for the operational records (seed 001) on SQLite and on PostgreSQL.

Every repository's key queries, bad input, the named migrations and tenant isolation, run
against a real SQLite file and a real PostgreSQL schema (private pgserver).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from memvault.config import load_config
from memvault.errors import (
    MemoryConfigError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.persistence import SQLPersistence, create_persistence
from memvault.persistence import models as pm
from memvault.persistence._sql import MAX_LIMIT
from memvault.persistence._tables import SCHEMA

T0 = datetime(2026, 11, 1, 12, tzinfo=UTC)


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture(params=["sqlite", "postgres"])
def ops_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "ops.db")
    schemas: Callable[[], str] = request.getfixturevalue("schemas")
    return _with_schema(request.getfixturevalue("postgres_url"), schemas())


@pytest.fixture
async def ops(ops_url: str) -> AsyncIterator[SQLPersistence]:
    backend = create_persistence(url=ops_url)
    await backend.connect()
    yield backend
    await backend.disconnect()


# -- lifecycle and migrations -----------------------------------------------------------------


async def test_migrations_are_named_applied_once_and_recorded(ops_url: str) -> None:
    first = create_persistence(url=ops_url)
    assert await first.migrate() == ["persistence_0001_tables"]
    assert first.backend_name in ("sqlite", "postgresql")
    assert await first.health_check()
    await first.disconnect()
    assert not await first.health_check()
    again = create_persistence(url=ops_url)
    async with again:
        assert await again.migrate() == []
        assert again.is_connected
        rows = await again._db.fetch("ledger", "SELECT name FROM memvault_side_migrations")
        assert "persistence_0001_tables" in {r[0] for r in rows}
    assert not again.is_connected


def test_the_first_migration_is_frozen() -> None:
    # A released migration is never edited: a table change is a new migration appended to
    # SCHEMA (ALTER TABLE ... ADD COLUMN, CREATE INDEX). Editing 0001 changes these digests.
    digests = {
        engine: hashlib.sha256(
            "\n".join(getattr(SCHEMA, engine)[0].statements).encode()
        ).hexdigest()[:16]
        for engine in ("sqlite", "postgres")
    }
    assert digests == {"sqlite": "5a71b35430c5a16a", "postgres": "c36008c2dcb8cfb3"}, (
        "persistence_0001_tables changed: append a new migration instead",
        digests,
    )


# -- tasks -------------------------------------------------------------------------------------


async def test_tasks_by_status_assignee_project_and_lifecycle(ops: SQLPersistence) -> None:
    a = pm.Task(title="a", assigned_to="dev-1", project="p1", created_at=T0)
    b = pm.Task(title="b", assigned_to="dev-2", project="p1", created_at=T0 + timedelta(1))
    c = pm.Task(
        title="c", assigned_to="dev-1", status=pm.TaskStatus.BLOCKED, created_at=T0 + timedelta(2)
    )
    await ops.tasks.save_many([a, b, c])
    await ops.tasks.save(a.model_copy(update={"title": "a2"}))  # replace, one row
    assert await ops.tasks.count() == 3
    assert (await ops.tasks.get(a.id)) == a.model_copy(update={"title": "a2"})
    assert [t.title for t in await ops.tasks.list_tasks(assigned_to="dev-1")] == ["a2", "c"]
    assert [t.title for t in await ops.tasks.list_tasks(project="p1")] == ["a2", "b"]
    blocked = await ops.tasks.list_tasks(status=pm.TaskStatus.BLOCKED)
    assert [t.title for t in blocked] == ["c"]
    both = await ops.tasks.list_tasks(status=[pm.TaskStatus.BLOCKED, pm.TaskStatus.CREATED])
    assert len(both) == 3
    assert [t.title for t in await ops.tasks.list_tasks(limit=1, offset=1)] == ["b"]
    moved = await ops.tasks.transition(a.id, pm.TaskStatus.IN_PROGRESS)
    assert moved.status is pm.TaskStatus.IN_PROGRESS and moved.updated_at > a.updated_at
    assert (await ops.tasks.get(a.id)) == moved
    await ops.tasks.transition(a.id, pm.TaskStatus.COMPLETED)
    with pytest.raises(MemoryValidationError, match="cannot go from completed to created"):
        await ops.tasks.transition(a.id, pm.TaskStatus.CREATED)
    with pytest.raises(MemoryNotFoundError):
        await ops.tasks.transition("missing", pm.TaskStatus.ASSIGNED)
    assert await ops.tasks.delete(b.id) and not await ops.tasks.delete(b.id)
    assert await ops.tasks.get(b.id) is None


# -- cost records ------------------------------------------------------------------------------


async def test_cost_records_queries_and_sums(ops: SQLPersistence) -> None:
    rows = [
        pm.CostRecord(agent_id="a1", task_id="t1", model="m1", input_tokens=100,
                      output_tokens=10, cost=1.0, latency_ms=10, timestamp=T0),
        pm.CostRecord(agent_id="a1", task_id="t2", model="m2", input_tokens=50,
                      output_tokens=5, cost=None, latency_ms=30, timestamp=T0 + timedelta(1)),
        pm.CostRecord(agent_id="a2", task_id="t1", model="m1", input_tokens=7,
                      cost=3.0, latency_ms=20, timestamp=T0 + timedelta(1, hours=1)),
    ]  # fmt: skip
    await ops.cost_records.save_many(rows)
    assert [r.id for r in await ops.cost_records.query(agent_id="a1")] == [rows[0].id, rows[1].id]
    assert [r.id for r in await ops.cost_records.query(task_id="t1")] == [rows[0].id, rows[2].id]
    assert len(await ops.cost_records.query(model="m1", since=T0 + timedelta(hours=1))) == 1
    assert await ops.cost_records.aggregate() == 4.0
    assert await ops.cost_records.aggregate(agent_id="a1") == 1.0
    assert await ops.cost_records.aggregate(task_id="t1", until=T0 + timedelta(1)) == 1.0
    assert await ops.cost_records.totals(agent_id="a1") == (165, 1.0)
    assert await ops.cost_records.totals(agent_id="a1", since=T0 + timedelta(hours=1)) == (55, 0.0)
    by_agent = await ops.cost_records.summarize("agent")
    assert [(s.group, s.calls, s.cost) for s in by_agent] == [("a2", 1, 3.0), ("a1", 2, 1.0)]
    assert by_agent[1].input_tokens == 150 and by_agent[1].latency_ms == 20.0
    by_day = await ops.cost_records.summarize(pm.CostGroup.DAY)
    assert sorted((s.group, s.calls) for s in by_day) == [("2026-11-01", 1), ("2026-11-02", 2)]
    by_model = await ops.cost_records.summarize("model", agent_id="a1")
    assert [(s.group, s.cost) for s in by_model] == [("m1", 1.0), ("m2", 0.0)]
    assert [s.group for s in await ops.cost_records.summarize("task", limit=1)] == ["t1"]
    with pytest.raises(MemoryValidationError, match="group by"):
        await ops.cost_records.summarize("week")
    assert (await ops.cost_records.get(rows[2].id)) == rows[2]


# -- messages ----------------------------------------------------------------------------------


async def test_message_history_in_write_order_with_limits_and_ranges(ops: SQLPersistence) -> None:
    same = T0  # identical timestamps: insertion order decides
    msgs = [pm.Message(channel="c1", sender="u", content=str(i), timestamp=same) for i in range(5)]
    await ops.messages.save_many(msgs)
    await ops.messages.save(pm.Message(channel="c2", agent_id="a", sender="u", content="x",
                                       timestamp=T0 + timedelta(1)))  # fmt: skip
    history = await ops.messages.get_history("c1")
    assert [m.content for m in history] == ["0", "1", "2", "3", "4"]
    assert [m.content for m in await ops.messages.get_history("c1", limit=2)] == ["3", "4"]
    assert await ops.messages.get_history("c1", since=T0 + timedelta(hours=1)) == ()
    assert len(await ops.messages.get_history("c2", until=T0 + timedelta(2))) == 1
    assert await ops.messages.channels() == ("c1", "c2")
    assert await ops.messages.channels(agent_id="a") == ("c2",)
    popped = await ops.messages.pop_latest("c1")
    assert popped is not None and popped.content == "4"
    assert await ops.messages.clear_channel("c1") == 4
    assert await ops.messages.pop_latest("c1") is None


# -- audit entries -----------------------------------------------------------------------------


async def test_audit_entries_by_agent_action_verdict_risk_and_time(ops: SQLPersistence) -> None:
    entries = [
        pm.AuditEntry(agent_id="a1", action_type="shell", verdict=pm.AuditVerdict.DENIED,
                      risk_level=pm.RiskLevel.HIGH, timestamp=T0),
        pm.AuditEntry(agent_id="a1", action_type="read", risk_level=pm.RiskLevel.LOW,
                      timestamp=T0 + timedelta(1)),
        pm.AuditEntry(agent_id="a2", action_type="shell", verdict=pm.AuditVerdict.ESCALATED,
                      risk_level=pm.RiskLevel.CRITICAL, timestamp=T0 + timedelta(2)),
    ]  # fmt: skip
    await ops.audit_entries.save_many(entries)
    ids = [e.id for e in entries]
    assert [e.id for e in await ops.audit_entries.query(agent_id="a1")] == ids[:2]
    assert [e.id for e in await ops.audit_entries.query(action_type="shell")] == [ids[0], ids[2]]
    denied = await ops.audit_entries.query(verdict=pm.AuditVerdict.DENIED)
    assert [e.id for e in denied] == [ids[0]]
    risky = await ops.audit_entries.query(
        risk_level=[pm.RiskLevel.HIGH, pm.RiskLevel.CRITICAL], newest_first=True
    )
    assert [e.id for e in risky] == [ids[2], ids[0]]
    window = await ops.audit_entries.query(since=T0 + timedelta(hours=1), until=T0 + timedelta(2))
    assert [e.id for e in window] == [ids[1]]
    assert (await ops.audit_entries.get(ids[1])) == entries[1]


# -- runtime state -----------------------------------------------------------------------------


async def test_parked_contexts_states_heartbeats_and_events(ops: SQLPersistence) -> None:
    parked = pm.ParkedContext(execution_id="e1", agent_id="a1", task_id="t1", state={"step": 3})
    await ops.parked_contexts.save(parked)
    await ops.parked_contexts.save(pm.ParkedContext(execution_id="e2", agent_id="a2"))
    assert [p.id for p in await ops.parked_contexts.list_parked(execution_id="e1")] == [parked.id]
    assert len(await ops.parked_contexts.list_parked(agent_id="a2")) == 1
    assert [p.id for p in await ops.parked_contexts.list_parked(task_id="t1")] == [parked.id]
    taken = await ops.parked_contexts.take(parked.id)
    assert taken == parked and await ops.parked_contexts.take(parked.id) is None

    for agent, status in (("a1", "running"), ("a2", "idle"), ("a3", "paused")):
        await ops.agent_states.save(pm.AgentRuntimeState(agent_id=agent, status=status))
    await ops.agent_states.save(pm.AgentRuntimeState(agent_id="a2", status="waiting"))
    active = await ops.agent_states.active()
    assert sorted(s.agent_id for s in active) == ["a1", "a2", "a3"]
    assert (await ops.agent_states.get("a2")).status is pm.AgentStatus.WAITING  # type: ignore[union-attr]
    assert len(await ops.agent_states.list_states(status=pm.AgentStatus.PAUSED)) == 1

    now = T0 + timedelta(hours=1)
    await ops.heartbeats.beat(pm.Heartbeat(execution_id="e1", agent_id="a1", beat_at=T0))
    await ops.heartbeats.beat(
        pm.Heartbeat(execution_id="e2", agent_id="a2", beat_at=now - timedelta(seconds=5))
    )
    stale = await ops.heartbeats.stale(timedelta(minutes=1), now=now)
    assert [h.execution_id for h in stale] == ["e1"]
    await ops.heartbeats.beat(pm.Heartbeat(execution_id="e1", agent_id="a1", beat_at=now))
    assert await ops.heartbeats.stale(timedelta(minutes=1), now=now) == ()
    assert len(await ops.heartbeats.list_beats(agent_id="a1")) == 1
    assert await ops.heartbeats.delete("e1") and await ops.heartbeats.get("e1") is None

    await ops.lifecycle_events.save_many(
        [
            pm.LifecycleEvent(agent_id="a1", event_type="started", timestamp=T0),
            pm.LifecycleEvent(agent_id="a1", event_type="crashed", timestamp=T0 + timedelta(1)),
        ]
    )
    crashed = await ops.lifecycle_events.list_events(event_type="crashed")
    assert [e.agent_id for e in crashed] == ["a1"]
    assert len(await ops.lifecycle_events.list_events(agent_id="a1", since=T0)) == 2

    await ops.task_metrics.save(pm.TaskMetric(task_id="t1", agent_id="a1", turns=3, success=False))
    assert (await ops.task_metrics.list_metrics(task_id="t1"))[0].success is False
    await ops.collaboration_metrics.save(
        pm.CollaborationMetric(agent_id="a1", peer_id="a2", metric="handoffs", value=2)
    )
    assert len(await ops.collaboration_metrics.list_metrics(peer_id="a2")) == 1


# -- settings, artifacts, projects, presets, users ---------------------------------------------


async def test_settings_artifacts_projects_presets_users(ops: SQLPersistence) -> None:
    await ops.settings.set("ui", "theme", {"dark": True})
    await ops.settings.set("ui", "lang", "en")
    await ops.settings.set("api", "rate", 10)
    await ops.settings.set("ui", "lang", "fr")
    assert (await ops.settings.get("ui", "lang")).value == "fr"  # type: ignore[union-attr]
    assert [s.key for s in await ops.settings.get_namespace("ui")] == ["lang", "theme"]
    assert [(s.namespace, s.key) for s in await ops.settings.get_all()] == [
        ("api", "rate"),
        ("ui", "lang"),
        ("ui", "theme"),
    ]
    assert (
        await ops.settings.delete("api", "rate") and await ops.settings.get("api", "rate") is None
    )

    art = pm.Artifact(task_id="t1", created_by="a1", artifact_type="patch", name="fix.diff")
    await ops.artifacts.save(art)
    await ops.artifacts.save(pm.Artifact(created_by="a2", artifact_type="report", name="r"))
    assert [x.id for x in await ops.artifacts.list_artifacts(task_id="t1")] == [art.id]
    assert len(await ops.artifacts.list_artifacts(created_by="a2")) == 1
    assert len(await ops.artifacts.list_artifacts(artifact_type="patch")) == 1

    proj = pm.Project(name="memvault", lead="ann")
    await ops.projects.save(proj)
    await ops.projects.save(pm.Project(name="old", status=pm.ProjectStatus.ARCHIVED))
    assert [p.id for p in await ops.projects.list_projects(lead="ann")] == [proj.id]
    assert len(await ops.projects.list_projects(status=pm.ProjectStatus.ARCHIVED)) == 1

    await ops.custom_presets.save(pm.CustomPreset(name="terse", config={"tone": "short"}))
    await ops.custom_presets.save(pm.CustomPreset(name="formal"))
    assert [p.name for p in await ops.custom_presets.list_presets()] == ["formal", "terse"]
    assert (await ops.custom_presets.get("terse")).config == {"tone": "short"}  # type: ignore[union-attr]

    user = pm.User(username="ann", role="owner")
    await ops.users.save(user)
    assert await ops.users.by_username("ann") == user
    assert await ops.users.by_username("bob") is None
    assert [u.id for u in await ops.users.list_users()] == [user.id]


# -- checkpoints -------------------------------------------------------------------------------


async def test_checkpoints_latest_list_writes_and_delete(ops: SQLPersistence) -> None:
    for n in range(1, 4):
        await ops.checkpoints.save(
            pm.Checkpoint(
                thread_id="t",
                checkpoint_id=f"0{n}",
                type="msgpack",
                data=bytes([0, 255, n]),
                parent_checkpoint_id=f"0{n - 1}" if n > 1 else None,
            )
        )
    await ops.checkpoints.save(
        pm.Checkpoint(
            thread_id="t", checkpoint_ns="sub", checkpoint_id="09", type="json", data=b"{}"
        )
    )
    latest = await ops.checkpoints.get("t")
    assert latest is not None and latest.checkpoint_id == "03" and latest.data == b"\x00\xff\x03"
    assert (await ops.checkpoints.get("t", "sub")).checkpoint_id == "09"  # type: ignore[union-attr]
    listed = await ops.checkpoints.list_checkpoints("t", checkpoint_ns="")
    assert [c.checkpoint_id for c in listed] == ["03", "02", "01"]
    before = await ops.checkpoints.list_checkpoints("t", checkpoint_ns="", before="03", limit=1)
    assert [c.checkpoint_id for c in before] == ["02"]
    writes = [
        pm.CheckpointWrite(thread_id="t", checkpoint_id="03", task_id="k", idx=i, channel="c",
                           type="msgpack", data=bytes([i]))
        for i in range(2)
    ]  # fmt: skip
    await ops.checkpoints.put_writes(writes, replace=False)
    changed = writes[0].model_copy(update={"data": b"new"})
    await ops.checkpoints.put_writes([changed], replace=False)  # kept: already stored
    assert (await ops.checkpoints.writes("t", "", "03"))[0].data == b"\x00"
    await ops.checkpoints.put_writes([changed], replace=True)
    assert [w.data for w in await ops.checkpoints.writes("t", "", "03")] == [b"new", b"\x01"]
    assert await ops.checkpoints.delete_thread("t") == 4
    assert await ops.checkpoints.get("t") is None
    assert await ops.checkpoints.writes("t", "", "03") == ()


# -- bad input ---------------------------------------------------------------------------------


async def test_bad_input_gets_typed_errors_and_changes_nothing(ops: SQLPersistence) -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        pm.Task(title="x", created_at=datetime(2026, 1, 1))
    with pytest.raises(ValidationError, match="limit is"):
        pm.Message(channel="c", sender="u", metadata={"blob": "x" * (pm.MAX_PAYLOAD + 1)})
    with pytest.raises(ValidationError):
        pm.Message(channel="c", sender="u", content="x" * (pm.MAX_TEXT + 1))
    with pytest.raises(ValidationError):
        pm.Task(title="   ")
    with pytest.raises(ValidationError):
        pm.CostRecord(agent_id="a", model="m", input_tokens=-1)
    with pytest.raises(MemoryValidationError, match="stores Task records"):
        await ops.tasks.save(pm.Message(channel="c", sender="u"))  # type: ignore[arg-type]
    with pytest.raises(MemoryValidationError, match="limit"):
        await ops.tasks.list_tasks(limit=MAX_LIMIT + 1)
    with pytest.raises(MemoryValidationError, match="timezone-aware"):
        await ops.cost_records.query(since=datetime(2026, 1, 1))
    with pytest.raises(MemoryValidationError, match="invalid"):
        await ops.tasks.get("  ")
    assert await ops.tasks.count() == 0


# -- tenants and configuration -----------------------------------------------------------------


async def test_tenants_get_their_own_file_or_schema(
    request: pytest.FixtureRequest, tmp_path: Path, ops_url: str
) -> None:
    if ops_url.startswith("postgresql"):
        base = ops_url.split("schema=")[0].rstrip("?&")
        config = load_config(url=_with_schema(base, request.getfixturevalue("schemas")()), env={})
    else:
        config = load_config(url=str(tmp_path / "memvault.db"), env={})
    acme = create_persistence(config, tenant="acme")
    globex = create_persistence(config, tenant="globex")
    async with acme, globex:
        assert acme.location != globex.location
        await acme.tasks.save(pm.Task(title="acme only"))
        assert await globex.tasks.count() == 0 and await acme.tasks.count() == 1


def test_persistence_section_beside_memory_is_honoured(tmp_path: Path) -> None:
    ops_file = tmp_path / "data" / "operations.db"
    cfg = tmp_path / "memvault.yaml"
    cfg.write_text(
        f"memory:\n  storage: {{url: {tmp_path / 'memvault.db'}}}\n"
        "persistence:\n  backend: sqlite\n"
        f"  sqlite: {{path: {ops_file}, wal_mode: false, journal_size_limit: 1048576}}\n"
    )
    config = load_config(cfg, env={})
    assert config.persistence.sqlite.wal_mode is False
    backend = create_persistence(config)
    assert backend.location == str(ops_file)

    async def use() -> None:
        async with backend:
            await backend.tasks.save(pm.Task(title="t"))

    import asyncio

    asyncio.run(use())
    conn = sqlite3.connect(ops_file)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("SELECT COUNT(*) FROM ops_tasks").fetchone()[0] == 1
    finally:
        conn.close()


def test_persistence_config_errors_are_clear(tmp_path: Path) -> None:
    inside = tmp_path / "inside.yaml"
    inside.write_text("memory:\n  persistence:\n    backend: sqlite\n")
    assert load_config(inside, env={}).persistence.backend == "sqlite"
    both = tmp_path / "both.yaml"
    both.write_text("memory:\n  persistence: {backend: sqlite}\npersistence: {backend: sqlite}\n")
    with pytest.raises(MemoryConfigError, match="both at the top and inside"):
        load_config(both, env={})
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("memory: {}\npersistence:\n  backnd: sqlite\n")
    with pytest.raises(MemoryConfigError, match="backnd"):
        load_config(unknown, env={})
    own = tmp_path / "own.yaml"
    own.write_text(
        f"memory:\n  storage: {{url: {tmp_path / 'm.db'}}}\n"
        "persistence:\n  sqlite: {wal_mode: false}\n"
    )
    with pytest.raises(MemoryConfigError, match="file of its own"):
        create_persistence(load_config(own, env={}))
    with pytest.raises(MemoryConfigError):
        create_persistence(url="ftp://nowhere")
