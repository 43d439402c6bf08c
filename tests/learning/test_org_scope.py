"""``MemoryScope.ORG`` end to end: publishing with scope org writes org memory.

Embedded on the in-process store, a real SQLite file and PostgreSQL, and over real HTTP (API
keys, two tenants) on SQLite and PostgreSQL: an agent key never writes a policy, org entries
reach other agents' contexts as org knowledge, and nothing private of the author (or of another
tenant) leaks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memvault import AsyncMemory, Memory
from memvault.config import load_config
from memvault.errors import MemoryPermissionError, MemoryValidationError
from memvault.learning.models import (
    OrgFactAuthor,
    OrgFactKind,
    OrgFactWriteRequest,
    OrgMemoryQuery,
)
from memvault.models import MemoryScope, MemoryStoreRequest
from memvault.protocols import Embedder
from memvault.server.keys import open_key_store
from memvault.server.rest import create_app
from memvault.service import MemoryService
from postgres_server import SchemaFactory
from server.conftest import run_app

from .conftest import pg_url

ADR = "ADR-12: every public API speaks JSON over HTTPS with versioned /v1 paths"
SECRET = "my private deploy token for the staging cluster is hunter2-staging"
QUERY = "how should the new public API be versioned and served?"


def _url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return str(tmp_path / "org.db")
    schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
    return pg_url(request.getfixturevalue("postgres_url"), schemas())


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def mem(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder
) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(_url(request, tmp_path), embedder=minilm) as m:
        yield m


async def test_publish_with_org_scope_reaches_every_agent_and_leaks_nothing_private(
    mem: AsyncMemory,
) -> None:
    await mem.set_profile("arch-1", role="architect", seniority="senior")
    await mem.add(SECRET, agent_id="arch-1")
    fact_id = await mem.publish(ADR, agent_id="arch-1", scope="org", kind="adr")

    # It is an org fact: in the org store, authored by the agent, audited under its name.
    facts = await mem.learning.org.query(OrgMemoryQuery(text=QUERY))
    assert [(f.id, f.kind, f.author) for f in facts] == [(fact_id, OrgFactKind.ADR, "agent:arch-1")]
    audit = await mem.audit(agent_id="_org")
    assert any(r.memory_id == fact_id and r.actor == "agent:arch-1" for r in audit)

    # Another agent (no profile at all) gets it in its context, marked as org knowledge.
    context = await mem.context(QUERY, agent_id="dev-7")
    org = [e for e in context.entries if e.id == fact_id]
    assert org and org[0].scope is MemoryScope.ORG and org[0].agent_id == "_org"
    assert "versioned /v1 paths" in context.text
    # ...and nothing of the author's private memories.
    assert "hunter2" not in context.text
    assert await mem.search("staging deploy token", agent_id="dev-7") == []
    assert "hunter2" not in " ".join(f.content for f in await mem.learning.org.facts())
    # The author's own private memory is still private and still its own.
    own = await mem.search("staging deploy token", agent_id="arch-1")
    assert own and own[0].scope is MemoryScope.PRIVATE


async def test_org_scope_write_access_is_the_org_memorys(mem: AsyncMemory) -> None:
    await mem.set_profile("lead-1", seniority="lead")
    await mem.set_profile("jr-1", seniority="junior")
    with pytest.raises(MemoryPermissionError, match="policy"):
        # Policies are human-only: no agent, however senior, writes one by publishing.
        await mem.publish("No deploys on Fridays", agent_id="lead-1", scope="org", kind="policy")
    with pytest.raises(MemoryPermissionError):
        await mem.publish(ADR, agent_id="jr-1", scope=MemoryScope.ORG, kind=OrgFactKind.ADR)
    with pytest.raises(MemoryPermissionError):  # a default (mid) profile may not either
        await mem.publish(ADR, agent_id="nobody", scope="org")
    assert await mem.learning.org.list_policies() == ()
    assert await mem.learning.org.facts() == []
    # A procedural category defaults to a procedure, anything else to a convention.
    proc = await mem.publish(
        "Roll back with the blue/green switch, never by redeploying",
        agent_id="lead-1",
        category="procedural",
        scope="org",
    )
    conv = await mem.publish("Branch names are kebab-case", agent_id="lead-1", scope="org")
    kinds = {f.id: f.kind for f in await mem.learning.org.facts()}
    assert kinds == {proc: OrgFactKind.PROCEDURE, conv: OrgFactKind.CONVENTION}


async def test_bad_org_scope_calls_are_refused(mem: AsyncMemory) -> None:
    with pytest.raises(MemoryValidationError, match="publish scope"):
        await mem.publish("x", agent_id="a", scope="private")
    with pytest.raises(MemoryValidationError, match="publish scope"):
        await mem.publish("x", agent_id="a", scope="galaxy")
    with pytest.raises(MemoryValidationError, match="org fact kind"):
        await mem.publish("x", agent_id="a", scope="org", kind="rumour")
    with pytest.raises(MemoryValidationError, match="kind is for org facts"):
        await mem.publish("x", agent_id="a", kind="adr")
    with pytest.raises(MemoryValidationError, match="skill-pool"):
        await mem.publish("x", agent_id="_org", scope="org")
    # The store itself knows no write access, so it never takes ORG entries directly.
    with pytest.raises(MemoryValidationError, match="org memory"):
        await mem.backend.publish("a", MemoryStoreRequest(content="x", scope=MemoryScope.ORG))  # type: ignore[attr-defined]


def test_sync_memory_publishes_org_facts_and_exposes_learning(
    tmp_path: Path, minilm: Embedder
) -> None:
    with Memory(str(tmp_path / "sync.db"), embedder=minilm) as mem:
        assert mem.learning is mem.learning  # one wrapper, over the core's one engine
        assert mem.learning.engine is mem.aio.learning
        mem.set_profile("arch-1", seniority="senior")
        fact_id = mem.publish(ADR, agent_id="arch-1", scope="org", kind="adr")
        assert fact_id in [e.id for e in mem.context(QUERY, agent_id="dev-2").entries]
        # The blocking learning layer: profiles, org memory, the queue, the evolver, skills.
        assert mem.learning.get_profile("arch-1").seniority.value == "senior"
        assert [f.id for f in mem.learning.query_org(QUERY)] == [fact_id]
        human = OrgFactAuthor(kind="human", name="alice")
        mem.learning.write_org(
            OrgFactWriteRequest(kind=OrgFactKind.POLICY, content="PRs need 2 approvals"),
            author=human,
        )
        assert [p.content for p in mem.learning.policies()] == ["PRs need 2 approvals"]
        report = mem.learning.learn_from({"success": True}, agent_id="dev-2")
        assert report.error is None and report.trajectory_id
        assert mem.learning.evolve(force=True).error is None
        assert mem.learning.approvals() == [] and mem.learning.skills() == []


# -- over HTTP ----------------------------------------------------------------------------------

KEYS: dict[str, dict[str, Any]] = {
    "admin": {"scopes": ["admin"]},
    "alice": {"scopes": ["read", "write"]},  # a human operator
    "arch": {"scopes": ["read", "write"], "agent_id": "arch-1"},
    "dev": {"scopes": ["read", "write"], "agent_id": "dev-7"},
    "other": {"scopes": ["read", "write"], "agent_id": "dev-7", "tenant": "acme"},
}


class Clients:
    """Authenticated HTTP clients of one live server, by key name."""

    def __init__(self, url: str, secrets: dict[str, str]) -> None:
        self._made = {
            name: httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=60.0
            )
            for name, secret in secrets.items()
        }

    def __call__(self, key: str) -> httpx.Client:
        return self._made[key]

    def close(self) -> None:
        for client in self._made.values():
            client.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def clients(request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder) -> Iterator[Clients]:
    url = _url(request, tmp_path)
    service = MemoryService(load_config(url=url), embedder=minilm)
    keys = open_key_store(url)
    secrets = {name: keys.create(name=name, **spec)[1] for name, spec in KEYS.items()}
    base, stop = run_app(create_app(service, keys=keys))
    made = Clients(base, secrets)
    yield made
    made.close()
    stop()


def _ok(resp: httpx.Response, status: int = 200) -> Any:
    assert resp.status_code == status, resp.text
    return resp.json()


def test_org_scope_over_rest(clients: Clients) -> None:
    _ok(clients("admin").put("/v1/profiles/arch-1", json={"seniority": "senior"}))
    _ok(clients("arch").post("/v1/memories", json={"agent_id": "arch-1", "content": SECRET}), 201)

    # An agent key cannot write a policy, whatever its seniority, nor as another agent.
    policy = {"agent_id": "arch-1", "content": "No Friday deploys", "scope": "org"}
    denied = clients("arch").post("/v1/shared", json={**policy, "kind": "policy"})
    assert denied.status_code == 403, denied.text
    as_other = clients("dev").post("/v1/shared", json={**policy, "kind": "adr"})
    assert as_other.status_code == 403, as_other.text
    mid = {"agent_id": "dev-7", "content": ADR, "scope": "org", "kind": "adr"}
    assert clients("dev").post("/v1/shared", json=mid).status_code == 403  # mid: no ADRs
    assert _ok(clients("dev").get("/v1/org/policies"))["facts"] == []

    body = {"agent_id": "arch-1", "content": ADR, "scope": "org", "kind": "adr"}
    fact_id = _ok(clients("arch").post("/v1/shared", json=body), 201)["id"]

    # Another agent of the tenant gets it in its context and from org search...
    context = _ok(clients("dev").post("/v1/context", json={"agent_id": "dev-7", "query": QUERY}))
    entry = next(e for e in context["entries"] if e["id"] == fact_id)
    assert entry["scope"] == "org"
    assert "hunter2" not in context["text"]
    found = _ok(clients("dev").post("/v1/org/search", json={"query": QUERY}))["facts"]
    assert [f["id"] for f in found] == [fact_id]
    # ...but cannot read the org pool (or the author) as if it were an agent's memory.
    assert (
        clients("dev").get(f"/v1/memories/{fact_id}", params={"agent_id": "_org"}).status_code
        == 403
    )
    leak = clients("dev").post(
        "/v1/search", json={"agent_id": "arch-1", "query": "staging deploy token"}
    )
    assert leak.status_code == 403

    # The same agent id in another tenant sees none of it.
    elsewhere = _ok(
        clients("other").post("/v1/context", json={"agent_id": "dev-7", "query": QUERY})
    )
    assert fact_id not in [e["id"] for e in elsewhere["entries"]]
    assert "versioned /v1 paths" not in elsewhere["text"]
    assert _ok(clients("other").post("/v1/org/search", json={"query": QUERY}))["facts"] == []

    # The write is audited under the authoring agent.
    audit = _ok(clients("admin").get("/v1/audit", params={"agent_id": "_org"}))["records"]
    assert any(r["memory_id"] == fact_id and r["actor"] == "agent:arch-1" for r in audit)
