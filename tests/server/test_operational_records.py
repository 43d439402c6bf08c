"""Seed 001's operational records over the real server: REST routes, MCP tools, scoping.

Every route is declared once in the operation table; these tests drive them over real HTTP
against a real SQLite file and check what each kind of key may reach.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from memvault.persistence import create_persistence
from memvault.persistence import models as pm

from .conftest import LiveServer


def _ok(resp: Any, status: int = 200) -> Any:
    assert resp.status_code == status, resp.text
    return resp.json()


def test_tasks_are_scoped_to_the_agent_key_and_their_lifecycle_is_checked(
    server: LiveServer,
) -> None:
    with server.client("dev1") as dev1, server.client("dev2") as dev2:
        made = _ok(dev1.post("/v1/tasks", json={"title": "triage inbox", "project": "p1"}), 201)
        assert made["assigned_to"] == "dev-1" and made["status"] == "assigned"
        _ok(dev2.post("/v1/tasks", json={"title": "write report"}), 201)
        mine = _ok(dev1.get("/v1/tasks"))["tasks"]
        assert [t["title"] for t in mine] == ["triage inbox"]
        # Another agent's task is not found (not forbidden), and cannot be moved or deleted.
        assert dev2.get(f"/v1/tasks/{made['id']}").status_code == 404
        moved = dev2.post(f"/v1/tasks/{made['id']}/status", json={"status": "in_progress"})
        assert moved.status_code == 404
        assert _ok(dev2.delete(f"/v1/tasks/{made['id']}"))["deleted"] is False
        # An agent key cannot name another agent.
        assert dev1.get("/v1/tasks", params={"agent_id": "dev-2"}).status_code == 403
        started = _ok(dev1.post(f"/v1/tasks/{made['id']}/status", json={"status": "in_progress"}))
        assert started["status"] == "in_progress"
        done = _ok(dev1.post(f"/v1/tasks/{made['id']}/status", json={"status": "completed"}))
        assert done["status"] == "completed"
        back = dev1.post(f"/v1/tasks/{made['id']}/status", json={"status": "in_progress"})
        assert back.status_code == 422, back.text
        assert back.json()["error"]["code"] == "validation_error"
        assert "cannot go from completed" in back.json()["error"]["message"]
        bad = dev1.post(f"/v1/tasks/{made['id']}/status", json={"status": "teleported"})
        assert bad.status_code == 422
        huge = dev1.post("/v1/tasks", json={"title": "x", "description": "y" * 200_000})
        assert huge.status_code == 422
        assert dev1.get("/v1/tasks/nope").status_code == 404
    with server.client("admin") as admin:
        every = _ok(admin.get("/v1/tasks"))["tasks"]
        assert sorted(t["assigned_to"] for t in every) == ["dev-1", "dev-2"]
        only = _ok(admin.get("/v1/tasks", params={"agent_id": "dev-2"}))["tasks"]
        assert [t["title"] for t in only] == ["write report"]
        done_only = _ok(admin.get("/v1/tasks", params={"status": "completed"}))["tasks"]
        assert [t["title"] for t in done_only] == ["triage inbox"]


def test_costs_messages_audit_and_states_are_per_agent(server: LiveServer) -> None:
    async def seed() -> None:
        # Cost records are written by memvault's own model calls; here straight into the
        # server's store (the same file), as a second process of the company would.
        async with create_persistence(url=str(server.db)) as ops:
            day = datetime(2026, 11, 30, 12, tzinfo=UTC)
            await ops.cost_records.save_many(
                [
                    pm.CostRecord(agent_id="dev-1", model="m-a", input_tokens=100, cost=0.5,
                                  timestamp=day),
                    pm.CostRecord(agent_id="dev-1", model="m-b", input_tokens=10, cost=0.25,
                                  timestamp=day + timedelta(days=1)),
                    pm.CostRecord(agent_id="dev-2", model="m-a", input_tokens=7, cost=2.0,
                                  timestamp=day),
                ]
            )  # fmt: skip

    asyncio.run(seed())
    with server.client("dev1") as dev1, server.client("dev2") as dev2:
        records = _ok(dev1.get("/v1/costs"))["records"]
        assert {r["agent_id"] for r in records} == {"dev-1"} and len(records) == 2
        by_model = _ok(dev1.get("/v1/costs/summary", params={"by": "model"}))["groups"]
        assert [(g["group"], g["cost"]) for g in by_model] == [("m-a", 0.5), ("m-b", 0.25)]
        by_day = _ok(
            dev1.get("/v1/costs/summary", params={"by": "day", "since": "2026-12-01T00:00:00"})
        )["groups"]
        assert [(g["group"], g["calls"]) for g in by_day] == [("2026-12-01", 1)]
        assert dev1.get("/v1/costs/summary", params={"by": "week"}).status_code == 422

        _ok(dev1.post("/v1/channels/standup/messages", json={"content": "did A"}), 201)
        _ok(dev2.post("/v1/channels/standup/messages", json={"content": "did B"}), 201)
        _ok(dev1.post("/v1/channels/standup/messages", json={"content": "doing C"}), 201)
        mine = _ok(dev1.get("/v1/channels/standup/messages"))["messages"]
        assert [m["content"] for m in mine] == ["did A", "doing C"]
        latest = _ok(dev1.get("/v1/channels/standup/messages", params={"limit": 1}))
        assert [m["content"] for m in latest["messages"]] == ["doing C"]

        entry = {"action_type": "tool_call", "verdict": "denied", "risk_level": "high"}
        _ok(dev1.post("/v1/audit-entries", json={**entry, "agent_id": "dev-1"}), 201)
        _ok(dev2.post("/v1/audit-entries", json={**entry, "agent_id": "dev-2"}), 201)
        refused = dev2.post("/v1/audit-entries", json={**entry, "agent_id": "dev-1"})
        assert refused.status_code == 403
        seen = _ok(dev1.get("/v1/audit-entries", params={"risk_level": "high"}))["entries"]
        assert [e["agent_id"] for e in seen] == ["dev-1"]

        _ok(dev1.put("/v1/agent-states/dev-1", json={"status": "running", "task_id": "t1"}))
        assert dev1.get("/v1/agent-states/dev-2").status_code == 403
        assert _ok(dev1.get("/v1/agent-states"))["states"][0]["status"] == "running"
        # Settings are for humans and admins only.
        assert dev1.get("/v1/settings").status_code == 403
    with server.client("admin") as admin, server.client("operator") as operator:
        all_costs = _ok(admin.get("/v1/costs/summary"))["groups"]
        assert [(g["group"], g["cost"]) for g in all_costs] == [("dev-2", 2.0), ("dev-1", 0.75)]
        everyone = _ok(admin.get("/v1/channels/standup/messages"))["messages"]
        assert len(everyone) == 3
        active = _ok(admin.get("/v1/agent-states", params={"active": "true"}))["states"]
        assert [s["agent_id"] for s in active] == ["dev-1"]
        _ok(admin.put("/v1/settings/ui/theme", json={"value": {"dark": True}}))
        assert _ok(operator.get("/v1/settings/ui/theme"))["value"] == {"dark": True}
        assert operator.put("/v1/settings/ui/theme", json={"value": 1}).status_code == 403
        assert [s["key"] for s in _ok(admin.get("/v1/settings"))["settings"]] == ["theme"]
        assert _ok(admin.delete("/v1/settings/ui/theme"))["deleted"] is True
        assert admin.get("/v1/settings/ui/theme").status_code == 404


def test_tenants_never_share_operational_records(server: LiveServer) -> None:
    with server.client("dev1") as dev1, server.client("acme-dev1") as acme:
        _ok(dev1.post("/v1/tasks", json={"title": "default tenant task"}), 201)
        assert _ok(acme.get("/v1/tasks"))["tasks"] == []
        _ok(acme.post("/v1/tasks", json={"title": "acme task"}), 201)
        assert [t["title"] for t in _ok(dev1.get("/v1/tasks"))["tasks"]] == ["default tenant task"]


async def test_mcp_offers_the_task_and_channel_tools(server: LiveServer) -> None:
    dev1 = {"Authorization": f"Bearer {server.secrets['dev1']}"}
    async with (
        httpx2.AsyncClient(headers=dev1, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):
        made = await client.call_tool("create_task", {"title": "from mcp"})
        task = json.loads("".join(getattr(c, "text", "") for c in made.content))
        assert task["assigned_to"] == "dev-1"
        listed = await client.call_tool("list_tasks", {})
        titles = [t["title"] for t in json.loads(listed.content[0].text)["tasks"]]  # type: ignore[union-attr]
        assert titles == ["from mcp"]
        await client.call_tool("post_message", {"channel": "c1", "content": "hello"})
        history = await client.call_tool("channel_history", {"channel": "c1"})
        body = json.loads(history.content[0].text)  # type: ignore[union-attr]
        assert [m["content"] for m in body["messages"]] == ["hello"]
    with httpx.Client(base_url=server.url) as anon:
        assert anon.get("/v1/tasks").status_code == 401
