"""The conversation tools over MCP: streamable HTTP under the real server, behind the API keys.

An agent's key reaches its own conversations only, and only the agent view (never a message
hidden from the agent); tools leave ``agent_id`` out for agent callers.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from memvault.server.mcp import TOOL_NAMES

from .conftest import LiveServer

CONVERSATION_TOOLS = (
    "conversation_append",
    "conversation_messages",
    "conversation_list",
    "conversation_context",
    "conversation_compact",
)


def _payload(result: Any) -> tuple[bool, str]:
    text = "".join(getattr(c, "text", "") for c in result.content)
    return bool(result.is_error), text


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    failed, text = _payload(await client.call_tool(tool, args))
    assert not failed, text
    data: dict[str, Any] = json.loads(text)
    return data


async def _refused(client: Client, tool: str, args: dict[str, Any]) -> str:
    failed, text = _payload(await client.call_tool(tool, args))
    assert failed, text
    return text


async def test_an_agent_uses_its_conversation_over_mcp(server: LiveServer) -> None:
    url = f"{server.url}/mcp"
    dev1 = {"Authorization": f"Bearer {server.secrets['dev1']}"}
    async with (
        httpx2.AsyncClient(headers=dev1, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(CONVERSATION_TOOLS) <= set(tools) == set(TOOL_NAMES)
        assert tools["conversation_messages"].annotations is not None
        assert tools["conversation_messages"].annotations.read_only_hint is True
        # Readers of the tool never get to pick another view than the agent's.
        assert "view" not in tools["conversation_messages"].input_schema["properties"]
        made = await _call(
            client,
            "conversation_append",
            {
                "session_id": "m-1",
                "messages": [
                    {"role": "user", "content": "Book the room for the retro (ticket OPS-7)."},
                    {"role": "assistant", "content": "(UI) typing...", "agent_visible": False},
                    {"role": "assistant", "content": "Booked room 4 for Friday."},
                ],
            },
        )
        assert made["agent_id"] == "dev-1" and len(made["messages"]) == 3
        page = await _call(client, "conversation_messages", {"session_id": "m-1"})
        assert [m["content"] for m in page["messages"]] == [
            "Book the room for the retro (ticket OPS-7).",
            "Booked room 4 for Friday.",
        ]
        paged = await _call(client, "conversation_messages", {"session_id": "m-1", "offset": 1})
        assert [m["position"] for m in paged["messages"]] == [3]
        listed = await _call(client, "conversation_list", {})
        assert [c["session_id"] for c in listed["conversations"]] == ["m-1"]
        window = await _call(client, "conversation_context", {"session_id": "m-1"})
        assert window["pressure"]["level"] == "ok" and window["in_view"] == 2
        report = await _call(
            client, "conversation_compact", {"session_id": "m-1", "summariser": "extractive"}
        )
        assert report["before"]["level"] == "ok" and report["summaries"] == []
        # No LLM on this server: the default summariser is refused with a clear error.
        no_llm = await _refused(client, "conversation_compact", {"session_id": "m-1"})
        assert no_llm.startswith("llm_not_configured") and "LLM" in no_llm
        other = await _refused(
            client, "conversation_messages", {"session_id": "m-1", "agent_id": "dev-2"}
        )
        assert other.startswith("permission_denied")
        sneaky = await _refused(
            client, "conversation_messages", {"session_id": "m-1", "view": "user"}
        )
        assert sneaky.startswith("validation_error")
        too_many = await _refused(client, "conversation_list", {"limit": 101})
        assert too_many.startswith("validation_error")
    dev2 = {"Authorization": f"Bearer {server.secrets['dev2']}"}
    async with (
        httpx2.AsyncClient(headers=dev2, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        assert (await _call(client, "conversation_list", {})) == {"conversations": []}
        missing = await _refused(client, "conversation_messages", {"session_id": "m-1"})
        assert missing.startswith("not_found")
