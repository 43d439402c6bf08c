"""MCP over streamable HTTP under the REST server, behind the same API keys (SDK client)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from memvault.server.mcp import TOOL_NAMES

from .conftest import LiveServer


def _payload(result: Any) -> tuple[bool, str]:
    text = "".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error if hasattr(result, "is_error") else result.isError), text


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    failed, text = _payload(await client.call_tool(tool, args))
    assert not failed, text
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_tools_over_http_use_the_callers_key(server: LiveServer, mode: str) -> None:
    url = f"{server.url}/mcp"
    dev1 = {"Authorization": f"Bearer {server.secrets['dev1']}"}
    async with (
        httpx2.AsyncClient(headers=dev1, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        tools = (await client.list_tools()).tools
        assert tuple(t.name for t in tools) == TOOL_NAMES
        stored = await _call(client, "store_memory", {"content": "The VPN gateway is vpn-3"})
        found = await _call(client, "search_memory", {"query": "which VPN gateway?"})
        assert found["results"][0]["id"] == stored["id"]
        failed, text = _payload(
            await client.call_tool(
                "delete_memory", {"memory_id": stored["id"], "confirm": False, "reason": "x"}
            )
        )
        assert failed and text.startswith("validation_error")
        done = await _call(
            client,
            "delete_memory",
            {"memory_id": stored["id"], "confirm": True, "reason": "rotated"},
        )
        assert done
    with server.client("admin") as admin:
        records = admin.get("/v1/audit", params={"memory_id": stored["id"]}).json()["records"]
    delete = next(r for r in records if r["action"] == "memory.delete")
    assert delete["actor"] == "agent:dev-1"
    assert delete["details"]["stated_reason"] == "rotated"


def test_mcp_endpoint_refuses_requests_without_a_valid_key(server: LiveServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with server.client() as anon:
        resp = anon.post("/mcp", json=body)
        assert resp.status_code == 401
        assert resp.json()["error"]["code"] == "unauthenticated"
        forged = anon.post("/mcp", json=body, headers={"Authorization": "Bearer mvk_nope"})
        assert forged.status_code == 401
