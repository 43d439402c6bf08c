"""Issue 16's acceptance test: agents learn, the evolver proposes, a human approves over REST.

A real server (uvicorn, real HTTP, API keys) over a real SQLite file, and the same over
PostgreSQL; the proposer is a scripted LLM. The story:

1. agent A fails a task; a lesson is proposed, stored, and shows up in A's next context (with
   the core policies every context carries);
2. three agents of one role fail the same way; the evolver emits exactly one org proposal;
3. an agent key cannot approve it (403); a human approves it over REST (audited);
4. a fourth agent of another department now gets the skill in its context, and its
   application_count rises when that agent reports using it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memvault.config import load_config
from memvault.llm.scripted import ScriptedLLM
from memvault.protocols import Embedder
from memvault.server.keys import open_key_store
from memvault.server.rest import create_app
from memvault.service import MemoryService
from postgres_server import SchemaFactory
from server.conftest import run_app

from .conftest import pg_url

POLICY = "Every production deploy needs a change ticket"
FAILURE = {
    "success": False,
    "task_type": "deploy",
    "description": "deploy the payments service to staging",
    "error": "RegistryRateLimitError: 429 Too Many Requests (token=s3cr3t-token-value)",
    "tool_calls": [{"name": "build_image"}, {"name": "push_image", "ok": False}],
    "retry_count": 2,
    "turn_count": 7,
}
KEYS: dict[str, dict[str, Any]] = {
    "admin": {"scopes": ["admin"]},
    "alice": {"scopes": ["read", "write"]},  # a human operator
    "a1": {"scopes": ["read", "write"], "agent_id": "be-1"},
    "a2": {"scopes": ["read", "write"], "agent_id": "be-2"},
    "a3": {"scopes": ["read", "write"], "agent_id": "be-3"},
    "d4": {"scopes": ["read", "write"], "agent_id": "data-4"},
}


class Server:
    """A live server and authenticated clients by key name."""

    def __init__(self, url: str, secrets: dict[str, str]) -> None:
        self.url = url
        self.secrets = secrets
        self._clients: dict[str, httpx.Client] = {}

    def __call__(self, key: str) -> httpx.Client:
        if key not in self._clients:
            self._clients[key] = httpx.Client(
                base_url=self.url,
                headers={"Authorization": f"Bearer {self.secrets[key]}"},
                timeout=60.0,
            )
        return self._clients[key]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


def _start(url: str, embedder: Embedder, llm: ScriptedLLM) -> tuple[Server, Callable[[], None]]:
    config = load_config(url=url).model_copy(
        update={
            "org_memory": load_config(url=url).org_memory.model_copy(
                update={"core_policies": (POLICY,)}
            )
        }
    )
    service = MemoryService(config, embedder=embedder, llm=llm)
    keys = open_key_store(url)
    secrets = {name: keys.create(name=name, **spec)[1] for name, spec in KEYS.items()}
    base, stop = run_app(create_app(service, keys=keys))
    return Server(base, secrets), stop


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder, proposer: ScriptedLLM
) -> Iterator[Server]:
    if request.param == "sqlite":
        url = str(tmp_path / "learning.db")
    else:
        schemas: SchemaFactory = request.getfixturevalue("pg_schemas")
        url = pg_url(request.getfixturevalue("postgres_url"), schemas())
    srv, stop = _start(url, minilm, proposer)
    yield srv
    srv.close()
    stop()


def _ok(resp: httpx.Response, status: int = 200) -> Any:
    assert resp.status_code == status, resp.text
    return resp.json()


def test_agents_learn_and_a_human_promotes_the_lesson_to_the_org(
    server: Server, proposer: ScriptedLLM
) -> None:
    admin = server("admin")
    for agent, role, dept in (
        ("be-1", "backend", "payments"),
        ("be-2", "backend", "payments"),
        ("be-3", "backend", "payments"),
        ("data-4", "analyst", "data"),
    ):
        body = {"role": role, "department": dept, "seniority": "mid"}
        _ok(admin.put(f"/v1/profiles/{agent}", json=body))
    # An agent may not set profiles (it could promote itself).
    assert server("a1").put("/v1/profiles/be-1", json={"seniority": "lead"}).status_code == 403

    # 1. Agent A fails; a lesson is proposed by a separate LLM call and stored.
    report = _ok(server("a1").post("/v1/learn", json={"agent_id": "be-1", **FAILURE}))
    assert report["captured"] is True and report["error"] is None, report
    assert report["proposal"]["error_category"] == "registryratelimiterror"
    shown = proposer.calls[-1][-1].content
    assert "s3cr3t" not in shown and "<redacted>" in shown  # sanitised, no conversation
    lesson = _ok(
        server("a1").get(f"/v1/memories/{report['lesson_id']}", params={"agent_id": "be-1"})
    )
    assert lesson["category"] == "procedural" and "non-inferable" in lesson["tags"]

    context = _ok(
        server("a1").post(
            "/v1/context", json={"agent_id": "be-1", "query": "deploy the payments service"}
        )
    )
    assert POLICY in context["text"]
    assert "one at a time with exponential backoff" in context["text"]
    assert report["lesson_id"] in [e["id"] for e in context["entries"]]

    # 2. Two more agents of the same role fail the same way; the evolver proposes once.
    for key, agent in (("a2", "be-2"), ("a3", "be-3")):
        again = _ok(server(key).post("/v1/learn", json={"agent_id": agent, **FAILURE}))
        assert again["captured"] is True
    cycle = _ok(admin.post("/v1/evolve", json={}))
    assert len(cycle["emitted"]) == 1 and cycle["error"] is None, cycle
    assert _ok(admin.post("/v1/evolve", json={}))["emitted"] == []  # known pattern: not twice
    pending = _ok(server("alice").get("/v1/approvals", params={"status": "pending"}))["approvals"]
    assert [p["id"] for p in pending] == cycle["emitted"]
    item = pending[0]
    assert item["proposal"]["scope"] == "org"
    assert item["evidence"]["agents"] == ["be-1", "be-2", "be-3"]

    # Before approval the org pool is empty: the other department's agent sees nothing.
    query = {"agent_id": "data-4", "query": "push container images for the deploy"}
    before = _ok(server("d4").post("/v1/context", json=query))
    assert "exponential backoff" not in before["text"] and POLICY in before["text"]

    # 3. An agent key cannot approve; a human can.
    denied = server("a1").post(f"/v1/approvals/{item['id']}/approve", json={})
    assert denied.status_code == 403, denied.text
    assert denied.json()["error"]["code"]
    approved = _ok(
        server("alice").post(
            f"/v1/approvals/{item['id']}/approve", json={"reason": "seen across the team"}
        )
    )
    assert approved["status"] == "approved" and approved["decided_by"] == "human:alice"
    skill_id = approved["applied_id"]
    again = server("alice").post(f"/v1/approvals/{item['id']}/approve", json={})
    assert again.status_code == 409
    audit = _ok(admin.get("/v1/audit", params={"agent_id": "_org"}))["records"]
    assert any(r["action"] == "approval.approve" and r["actor"] == "human:alice" for r in audit)

    # 4. The fourth agent, of another department, now gets the skill in its context.
    after = _ok(server("d4").post("/v1/context", json=query))
    assert "exponential backoff" in after["text"]
    assert skill_id in [e["id"] for e in after["entries"]]
    skills = _ok(server("d4").get("/v1/skills"))["skills"]
    assert [(s["id"], s["application_count"]) for s in skills] == [(skill_id, 0)]

    used = _ok(
        server("d4").post(
            "/v1/learn",
            json={
                "agent_id": "data-4",
                "success": True,
                "task_type": "deploy",
                "applied_skills": [skill_id],
            },
        )
    )
    assert used["applications_recorded"] == 1 and used["captured"] is False
    skills = _ok(server("d4").get("/v1/skills"))["skills"]
    assert skills[0]["application_count"] == 1 and skills[0]["last_applied_at"] is not None

    # A framework that names no skills: the skill injected into the task's context counts
    # when the task's outcome comes back (failure alike), once per context.
    _ok(server("d4").post("/v1/context", json=query))
    unnamed = {"agent_id": "data-4", "success": False, "task_type": "deploy", "error": "boom"}
    counted = _ok(server("d4").post("/v1/learn", json=unnamed))
    assert counted["applications_recorded"] == 1 and counted["applied_skills"] == [skill_id]
    again_unnamed = _ok(server("d4").post("/v1/learn", json=unnamed))
    assert again_unnamed["applications_recorded"] == 0  # no new context, nothing injected
    skills = _ok(server("d4").get("/v1/skills"))["skills"]
    assert skills[0]["application_count"] == 2
