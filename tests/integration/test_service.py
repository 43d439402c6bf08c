"""MemoryService: authorisation, tenant isolation and audited destructive operations.

Runs on a real SQLite file and on the real PostgreSQL server (tenants as schemas), with the
real embedding model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memvault.backends.factory import tenant_schema
from memvault.config import load_config
from memvault.errors import (
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryValidationError,
)
from memvault.models import ChatMessage
from memvault.protocols import Embedder
from memvault.service import Actor, ActorKind, MemoryService, Scope, check_reason
from postgres_server import SchemaFactory

DEV1 = Actor.agent("dev-1")
DEV2 = Actor.agent("dev-2")
ADMIN = Actor.admin("ops")
READER = Actor.human("auditor", scopes=["read"])


@pytest.fixture(params=["sqlite", "postgres"])
async def service(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder
) -> AsyncIterator[MemoryService]:
    if request.param == "sqlite":
        url = str(tmp_path / "svc.db")
        svc = MemoryService(load_config(url=url), embedder=minilm)
        yield svc
        await svc.close()
        return
    base: str = request.getfixturevalue("postgres_url")
    schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
    schema = schemas()
    url = f"{base}{'&' if '?' in base else '?'}schema={schema}"
    svc = MemoryService(load_config(url=url), embedder=minilm)
    yield svc
    await svc.close()
    with psycopg.connect(base, autocommit=True) as conn:
        for tenant in ("acme", "globex"):
            name = tenant_schema(tenant, schema)
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


async def test_agents_reach_only_their_own_memories(service: MemoryService) -> None:
    secret = {"content": "dev-1 keeps the deploy token in vault", "agent_id": "dev-1"}
    out = await service.call(DEV1, "store", secret)
    assert out.id is not None
    theirs = {"memory_id": out.id, "agent_id": "dev-1"}
    with pytest.raises(MemoryPermissionError, match="agent:dev-2"):
        await service.call(DEV2, "get", theirs)
    with pytest.raises(MemoryPermissionError):
        await service.call(DEV2, "search", {"query": "deploy token", "agent_id": "dev-1"})
    with pytest.raises(MemoryPermissionError):
        await service.call(DEV2, "store", {"content": "forged", "agent_id": "dev-1"})
    with pytest.raises(MemoryPermissionError):
        await service.call(DEV2, "delete", theirs)
    # Under its own id, dev-2 finds nothing and cannot name dev-1's memory.
    assert await service.call(DEV2, "search", {"query": "deploy token", "agent_id": "dev-2"}) == []
    with pytest.raises(MemoryNotFoundError):
        await service.call(DEV2, "get", {"memory_id": out.id, "agent_id": "dev-2"})
    # Whole-tenant reads are not for agents.
    for name in ("stats", "export", "audit"):
        with pytest.raises(MemoryPermissionError):
            await service.call(DEV1, name, {})
    assert await service.call(DEV1, "agents", {}) == ["dev-1"]
    # A human operator of the tenant reaches every agent.
    found = {"query": "deploy token", "agent_id": "dev-1"}
    hits = await service.call(Actor.human("alice"), "search", found)
    assert [h.id for h in hits] == [out.id]


async def test_scopes_gate_operations(service: MemoryService) -> None:
    rota = {"content": "the on-call rota changes on Mondays", "agent_id": "dev-1"}
    await service.call(ADMIN, "store", rota)
    assert await service.call(READER, "count", {"agent_id": "dev-1"}) == 1
    with pytest.raises(MemoryPermissionError, match="'write'"):
        await service.call(READER, "store", {"content": "nope", "agent_id": "dev-1"})
    with pytest.raises(MemoryPermissionError, match="'admin'"):
        await service.call(Actor.human("bob"), "clear", {"agent_id": "dev-1"})
    with pytest.raises(MemoryPermissionError, match="'admin'"):
        await service.call(DEV1, "consolidate", {"agent_id": "dev-1"})
    # An agent key with the admin scope administers its own memories only.
    dev1_admin = Actor.agent("dev-1", scopes=["admin"])
    assert dev1_admin.allows(Scope.READ) and dev1_admin.allows(Scope.WRITE)
    cleared = {"agent_id": "dev-1", "reason": "reset"}
    assert await service.call(dev1_admin, "clear", cleared) == 1
    with pytest.raises(MemoryPermissionError):
        await service.call(dev1_admin, "clear", {"agent_id": "dev-2"})


async def test_destructive_operations_are_audited_with_actor_and_reason(
    service: MemoryService,
) -> None:
    keep = await service.call(
        DEV1, "store", {"content": "Prefers tabs over spaces", "agent_id": "dev-1"}
    )
    drop = await service.call(
        DEV1, "store", {"content": "The printer on floor 3 is broken", "agent_id": "dev-1"}
    )
    assert keep.id and drop.id
    dropped = {"memory_id": drop.id, "agent_id": "dev-1"}
    assert await service.call(ADMIN, "delete", {**dropped, "reason": "user request"})
    assert not await service.call(ADMIN, "delete", {**dropped, "reason": "again"})
    shared = await service.call(
        DEV1, "publish", {"content": "Standup is at 9:30", "agent_id": "dev-1"}
    )
    retracted = {"memory_id": shared, "agent_id": "dev-1", "reason": "moved to 10:00"}
    assert await service.call(DEV1, "retract", retracted)
    with pytest.raises(MemoryValidationError, match="reason"):
        kept = {"memory_id": keep.id, "agent_id": "dev-1", "reason": "x" * 501}
        await service.call(ADMIN, "delete", kept)

    records = await service.call(ADMIN, "audit", {"agent_id": "dev-1"})
    by_action = {(r.action, r.memory_id): r for r in records}
    deleted = by_action[("memory.delete", drop.id)]
    assert deleted.actor == "admin:ops"
    assert deleted.details["stated_reason"] == "user request"
    stored = by_action[("memory.store", keep.id)]
    assert stored.actor == "agent:dev-1"
    assert "stated_reason" not in stored.details
    retract = by_action[("shared.retract", shared)]
    assert retract.actor == "agent:dev-1"
    assert retract.details["stated_reason"] == "moved to 10:00"
    # Only one delete record: the second delete found nothing.
    assert sum(r.action == "memory.delete" for r in records) == 1


async def test_tenants_are_separate_stores(service: MemoryService) -> None:
    acme = Actor.admin("root", tenant="acme")
    globex = Actor.admin("root", tenant="globex")
    a = await service.call(
        acme, "store", {"content": "Acme's launch code is 1111", "agent_id": "dev-1"}
    )
    g = await service.call(
        globex, "store", {"content": "Globex's launch code is 2222", "agent_id": "dev-1"}
    )
    await service.call(acme, "publish", {"content": "Acme ships on Tuesdays", "agent_id": "dev-1"})
    assert a.id and g.id
    query = {"query": "launch code", "agent_id": "dev-1"}
    assert [e.id for e in await service.call(acme, "search", query)] == [a.id]
    assert [e.id for e in await service.call(globex, "search", query)] == [g.id]
    assert await service.call(globex, "search_shared", {"query": "when does Acme ship?"}) == []
    # The default tenant is empty.
    assert await service.call(ADMIN, "count", {"agent_id": "dev-1"}) == 0
    with pytest.raises(MemoryNotFoundError):
        await service.call(globex, "get", {"memory_id": a.id, "agent_id": "dev-1"})
    acme_memory = await service.memory("acme")
    assert acme_memory is await service.memory("acme")
    assert acme_memory.location != (await service.memory("globex")).location


async def test_sessions_through_the_service(service: MemoryService) -> None:
    msgs = [
        ChatMessage(role="system", content="You are terse."),
        ChatMessage(role="user", content="What is our deploy day?"),
        ChatMessage(role="assistant", content="Tuesday."),
    ]
    sid = "00000000000a"
    saved = await service.call(
        DEV1, "save_session", {"session_id": sid, "agent_id": "dev-1", "messages": msgs}
    )
    assert saved.message_count == 2
    latest = await service.call(DEV1, "session", {"session_id": "latest", "agent_id": "dev-1"})
    assert latest is not None and [m.role for m in latest.messages] == ["user", "assistant"]
    with pytest.raises(MemoryPermissionError):
        await service.call(DEV2, "session", {"session_id": "latest", "agent_id": "dev-1"})
    assert (
        await service.call(DEV2, "session", {"session_id": "latest", "agent_id": "dev-2"}) is None
    )
    with pytest.raises(MemoryValidationError):
        await service.call(DEV1, "session", {"session_id": "../etc", "agent_id": "dev-1"})
    assert await service.call(DEV1, "delete_session", {"session_id": sid, "agent_id": "dev-1"})
    assert await service.call(DEV1, "sessions", {"agent_id": "dev-1"}) == []


async def test_export_import_and_context(service: MemoryService) -> None:
    items = [{"content": "Service A is owned by team red"}, {"content": "Service B by team blue"}]
    await service.call(DEV1, "store_many", {"items": items, "agent_id": "dev-1"})
    asked = {"query": "who owns service A?", "agent_id": "dev-1", "token_budget": 120}
    ctx = await service.call(DEV1, "context", asked)
    assert "team red" in ctx.text
    mine = await service.call(DEV1, "export", {"agent_id": "dev-1"})
    assert len(mine) == 2
    with pytest.raises(MemoryPermissionError):
        await service.call(DEV1, "import", {"items": mine, "agent_id": "dev-1"})
    # Ids are kept, so importing into the same store adds nothing; another tenant gets copies.
    assert await service.call(ADMIN, "import", {"items": mine}) == 0
    acme = Actor.admin("root", tenant="acme")
    assert await service.call(acme, "import", {"items": mine, "agent_id": "dev-3"}) == 2
    assert await service.call(acme, "count", {"agent_id": "dev-3"}) == 2
    with pytest.raises(MemoryValidationError):
        await service.call(ADMIN, "import", {"items": "not a list"})


def test_actor_construction_validates() -> None:
    assert Actor.agent("dev-1").label == "agent:dev-1"
    assert Actor.admin().kind is ActorKind.ADMIN and Actor.admin().allows(Scope.ADMIN)
    assert not READER.allows(Scope.WRITE)
    with pytest.raises(MemoryValidationError, match="unknown scope"):
        Actor.human("x", scopes=["superuser"])
    with pytest.raises(MemoryValidationError):
        Actor.human("x", scopes=[])
    with pytest.raises(MemoryValidationError):
        Actor.human("   ")
    assert check_reason("  why  ") == "why"
    assert check_reason("   ") is None
    with pytest.raises(MemoryValidationError):
        check_reason(" ", required=True)


async def test_single_memory_service_has_one_tenant(tmp_path: Path, minilm: Embedder) -> None:
    from memvault.memory import AsyncMemory

    async with AsyncMemory(str(tmp_path / "one.db"), embedder=minilm) as mem:
        svc = MemoryService.for_memory(mem)
        await svc.call(DEV1, "store", {"content": "one tenant only", "agent_id": "dev-1"})
        assert await mem.count(agent_id="dev-1") == 1
        with pytest.raises(MemoryPermissionError, match="tenant"):
            await svc.call(Actor.agent("dev-1", tenant="acme"), "count", {"agent_id": "dev-1"})
