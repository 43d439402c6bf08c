"""``memvault mcp`` end to end: a real subprocess, the SDK's own stdio client, a SQLite file.

One server process serves most of the assertions (each start loads the embedding model); a
second, raw one checks the wire itself: only protocol messages on stdout, and a clean exit when
stdin ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from memvault import Memory
from memvault.cli.app import main
from memvault.protocols import Embedder
from memvault.server.mcp import TOOL_NAMES

# The tools the stdio server must list: the declared set, whose exact names and order
# tests/unit/test_mcp_tools.py pins.
TOOLS = set(TOOL_NAMES)


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMVAULT_* setting and no ./memvault.yaml of the machine leaks into a test."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _command(db: Path, *options: str) -> list[str]:
    return ["-m", "memvault", "--db", str(db), "mcp", *options]


def _env() -> dict[str, str]:
    cache = os.environ.get("MEMVAULT_CACHE_DIR")
    return {} if cache is None else {"MEMVAULT_CACHE_DIR": cache}


@asynccontextmanager
async def _session(db: Path, errlog: Path, *options: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=_command(db, *options), env=_env(), cwd=db.parent
    )
    with errlog.open("w", encoding="utf-8") as err:
        async with Client(stdio_client(params, errlog=err), read_timeout_seconds=60) as client:
            yield client


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _ok(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    data: dict[str, Any] = json.loads(_text(result))
    assert result.structured_content == data
    return data


def _error(result: types.CallToolResult) -> str:
    assert result.is_error, _text(result)
    return _text(result)


async def test_an_agent_uses_its_memory_over_stdio(tmp_path: Path, minilm: Embedder) -> None:
    db = tmp_path / "store.db"
    errlog = tmp_path / "server.err"
    async with _session(db, errlog, "--agent", "dev-1") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.input_schema["type"] == "object"
            assert set(tool.input_schema["required"]) <= set(tool.input_schema["properties"])
        assert tools["store_memory"].input_schema["required"] == ["content"]
        assert set(tools["delete_memory"].input_schema["required"]) == {
            "memory_id",
            "confirm",
            "reason",
        }

        stored = _ok(
            await client.call_tool(
                "store_memory",
                {"content": "The on-call rotation changes every Monday at 9am.", "tags": ["ops"]},
            )
        )
        assert stored["decision"] == "add"
        memory_id = stored["id"]
        _ok(await client.call_tool("store_memory", {"content": "Bob owns the billing service."}))

        found = _ok(await client.call_tool("search_memory", {"query": "when does on-call rotate?"}))
        assert found["results"][0]["id"] == memory_id
        assert found["results"][0]["relevance_score"] > 0
        recalled = _ok(await client.call_tool("recall_memory", {"memory_id": memory_id}))
        assert recalled["content"] == "The on-call rotation changes every Monday at 9am."
        assert recalled["tags"] == ["ops"]
        listed = _ok(await client.call_tool("list_memories", {"limit": 10}))
        assert len(listed["memories"]) == 2
        assert memory_id in {m["id"] for m in listed["memories"]}

        unconfirmed = _error(
            await client.call_tool(
                "delete_memory", {"memory_id": memory_id, "confirm": False, "reason": "stale"}
            )
        )
        assert unconfirmed.startswith("validation_error: ")
        assert "confirm=true" in unconfirmed
        no_reason = _error(await client.call_tool("delete_memory", {"memory_id": memory_id}))
        assert no_reason.startswith("validation_error: ")
        assert _ok(await client.call_tool("recall_memory", {"memory_id": memory_id}))["id"] == (
            memory_id
        )

        deleted = _ok(
            await client.call_tool(
                "delete_memory",
                {"memory_id": memory_id, "confirm": True, "reason": "rotation moved to Tuesdays"},
            )
        )
        assert deleted == {"id": memory_id, "deleted": True}
        gone = _error(await client.call_tool("recall_memory", {"memory_id": memory_id}))
        assert gone.startswith("not_found: ")

        for name, args in [
            ("list_memories", {"agent_id": "dev-2"}),
            ("store_memory", {"content": "planted", "agent_id": "dev-2"}),
        ]:
            refused = _error(await client.call_tool(name, args))
            assert refused == (
                "permission_denied: agent:dev-1 may not use the memories of agent 'dev-2'"
            )

        published = _ok(
            await client.call_tool(
                "publish_shared",
                {"content": "Staging deploys freeze on Fridays after 3pm.", "tags": ["deploy"]},
            )
        )
        shared = _ok(await client.call_tool("search_shared", {"query": "deploy freeze friday"}))
        assert [r["id"] for r in shared["results"]] == [published["id"]]
        assert shared["results"][0]["agent_id"] == "dev-1"

    errors = errlog.read_text(encoding="utf-8")
    assert "Traceback" not in errors

    with Memory(str(db), embedder=minilm) as mem:
        records = mem.audit(memory_id=memory_id)
        deletes = [r for r in records if r.action == "memory.delete"]
        assert len(deletes) == 1
        assert deletes[0].actor == "agent:dev-1"
        assert deletes[0].details["stated_reason"] == "rotation moved to Tuesdays"
        assert [r.actor for r in records if r.action == "memory.store"] == ["agent:dev-1"]
        assert mem.list(agent_id="dev-2") == []
        assert [e.content for e in mem.list(agent_id="dev-1")] == ["Bob owns the billing service."]


def test_stdout_carries_only_protocol_and_the_server_exits_at_eof(tmp_path: Path) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {}},
        },
    ]
    env = {**os.environ, **_env()}
    with subprocess.Popen(
        [sys.executable, *_command(tmp_path / "store.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        watchdog = threading.Timer(120, proc.kill)
        watchdog.start()
        try:
            proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
            proc.stdin.flush()
            # Each line on stdout must be one JSON-RPC message; read the three replies.
            replies = [json.loads(proc.stdout.readline()) for _ in range(3)]
            proc.stdin.close()  # EOF: the server must stop by itself
            code = proc.wait(timeout=30)
            rest, errors = proc.stdout.read(), proc.stderr.read()
        finally:
            watchdog.cancel()
    assert code == 0, errors
    assert rest == ""
    assert [r.get("id") for r in replies] == [1, 2, 3]
    assert replies[0]["result"]["serverInfo"]["name"] == "memvault"
    assert {t["name"] for t in replies[1]["result"]["tools"]} == TOOLS
    # Without --agent the caller is the local operator, who must name the agent.
    result = replies[2]["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(
        "validation_error: agent_id is required: human:local"
    )
    assert "Traceback" not in errors


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--agent", "  "], "invalid agent_id"),
        (["--tenant", "   "], "invalid tenant"),
        (["--log-level", "chatty"], "unknown log level"),
    ],
)
def test_bad_options_fail_before_serving(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    code = main(["--db", str(tmp_path / "store.db"), "mcp", *options])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ")
    assert message in lines[0]
