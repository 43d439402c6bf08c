"""The operation table drives every interface: one declaration, four ways in.

The first tests walk :data:`memvault.api.operations.OPERATIONS` and check that each declaration is
complete and consistent with its implementation and its interfaces. The last ones declare a toy
operation *in this file* and show it appears in REST, MCP, the CLI and the remote client without
any other code.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client
from pydantic import Field
from typer.testing import CliRunner

from memvault.api import requests as rq
from memvault.api.auth import Actor, Scope
from memvault.api.operations import OPERATIONS, Host, Http, Operation, Tool, get_operation
from memvault.api.policy import AGENT, Audit, Call, Reach
from memvault.cli.api import build_api_app
from memvault.config import load_config
from memvault.errors import MemoryPermissionError, MemoryValidationError
from memvault.memory import AsyncMemory
from memvault.protocols import Embedder
from memvault.remote import RemoteAsyncMemory
from memvault.server.mcp import TOOL_NAMES, create_mcp_server
from memvault.server.rest import create_app
from memvault.service import MemoryService

from .conftest import run_app

# -- the table --------------------------------------------------------------------------------


def test_every_operation_is_declared_once_with_docs_and_an_implementation() -> None:
    names = [op.name for op in OPERATIONS]
    assert len(names) == len(set(names))
    routes = [(op.http.method, op.http.path) for op in OPERATIONS if op.http is not None]
    assert len(routes) == len(set(routes))
    for op in OPERATIONS:
        assert op.doc.strip() and op.request.__doc__, op.name
        assert get_operation(op.name) is op
        if op.impl is None:
            assert op.invoke is not None and inspect.iscoroutinefunction(op.invoke), op.name
            if hasattr(Host, op.invoke.__name__):  # a method of the service's
                assert getattr(Host, op.invoke.__name__) is op.invoke, op.name
                implemented = getattr(MemoryService, op.invoke.__name__)
                assert inspect.iscoroutinefunction(implemented), op.name
        else:
            assert getattr(AsyncMemory, op.impl.__name__) is op.impl, op.name
            # The keywords the table passes are parameters of the implementation (an audit
            # reason is the service's, not the memory's).
            params = inspect.signature(op.impl).parameters
            fields = op.request.model_fields
            example = {n: [] if n in ("items", "messages", "turns") else "x" for n in fields}
            arguments = set(op.arguments(op.request.model_construct(**example)))
            if op.audit is Audit.REASON:
                arguments.discard("reason")
            assert arguments <= set(params), (op.name, arguments - set(params))
        if op.policy is AGENT:
            # Agent-bound: the request names the agent, and must.
            assert op.request.model_fields["agent_id"].is_required(), op.name
        if op.http is not None:
            assert set(op.http.path_params) <= set(op.request.model_fields), op.name
        if op.tool is not None and op.tool.fields is not None:
            assert set(op.tool.fields) <= set(op.request.model_fields), op.name


def test_a_batch_item_has_the_fields_the_batch_path_takes() -> None:
    # AddManyItem shares add's memory fields (MemoryFields); each must be one add_many takes
    # per item, and each it takes must be declared.
    from memvault._inputs import _ADD_KEYS

    assert set(rq.AddManyItem.model_fields) == _ADD_KEYS
    assert set(rq.MemoryFields.model_fields) <= set(rq.AddBody.model_fields)


def test_every_route_of_the_app_comes_from_the_table(tmp_path: Path, minilm: Embedder) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "s.db")), embedder=minilm)
    app = create_app(service, keys=None)
    declared = {(op.http.method, op.http.path) for op in OPERATIONS if op.http is not None}
    served = {
        (method.upper(), path)
        for path, methods in app.openapi()["paths"].items()
        for method in methods
        if path.startswith("/v1/")
    }
    assert served == declared


def test_mcp_tools_and_cli_commands_are_the_declared_ones() -> None:
    assert set(TOOL_NAMES) == {op.tool.name for op in OPERATIONS if op.tool is not None}
    commands = {c.name for c in build_api_app().registered_commands}
    assert commands == {op.name.replace("_", "-") for op in OPERATIONS if op.cli}


async def test_service_call_enforces_the_declared_scope(tmp_path: Path, minilm: Embedder) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "s.db")), embedder=minilm)
    reader = Actor.human("ro", scopes=["read"])
    writer = Actor.human("rw", scopes=["read", "write"])
    try:
        for op in OPERATIONS:
            too_weak = {Scope.READ: None, Scope.WRITE: reader, Scope.ADMIN: writer}[op.scope]
            if too_weak is None:
                continue
            # Refused before the input is even looked at.
            with pytest.raises(MemoryPermissionError, match="lacks"):
                await service.call(too_weak, op, {})
        with pytest.raises(MemoryValidationError, match="unknown operation"):
            await service.call(writer, "no_such_thing", {})
        with pytest.raises(MemoryValidationError, match="limit"):
            await service.call(writer, "search", {"agent_id": "a", "query": "q", "limit": 0})
        ids = await service.call(
            writer, "store_many", {"agent_id": "a", "items": [{"content": "Tea at four."}]}
        )
        assert await service.call(reader, "count", {"agent_id": "a"}) == len(ids) == 1
    finally:
        await service.close()


async def test_service_call_enforces_the_declared_policy(tmp_path: Path, minilm: Embedder) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "s.db")), embedder=minilm)
    agent = Actor.agent("dev-1", scopes=["read", "write", "admin"])
    refused = {
        Reach.AGENT: "may not use the memories of agent 'dev-2'",
        Reach.AGENT_OR_TENANT: "may not use the memories of agent 'dev-2'",
        Reach.SELF: "may not use the memories of agent 'dev-2'",
        Reach.TENANT: "may only use its own memories",
        Reach.HUMANS: "only human and admin callers may",
    }
    checked = set()
    try:
        for op in OPERATIONS:
            # Another agent's id (where the request has one); unvalidated, so only the
            # policy can refuse it.
            fields = {"agent_id": "dev-2"} if "agent_id" in op.request.model_fields else {}
            if op.policy.reach is Reach.ANY or (op.policy.reach is Reach.SELF and not fields):
                continue
            with pytest.raises(MemoryPermissionError, match=refused[op.policy.reach]):
                await service.call(agent, op, op.request.model_construct(**fields))
            checked.add(op.policy.reach)
        assert checked == set(refused)
        # Refused before any store was opened.
        assert service._memories == {}
    finally:
        await service.close()


# -- a toy operation, declared here and nowhere else ------------------------------------------


class EchoBody(rq.Request):
    """Say a word back with how many memories the agent has."""

    agent_id: str = rq.AgentId
    word: str = Field(min_length=1, max_length=20, description="The word to say back.")
    times: int = Field(default=1, ge=1, le=3, description="How many times.")


async def _echo(service: Host, call: Call, req: EchoBody) -> dict[str, Any]:
    memory = await service.memory(call.tenant)
    count = await memory.count(agent_id=call.agent_id)
    return {"echo": " ".join([req.word] * req.times), "memories": count}


ECHO = Operation(
    "echo",
    EchoBody,
    Scope.READ,
    "Say a word back",
    lambda result, _req: result,
    invoke=_echo,
    http=Http("POST", "/v1/echo", "toys"),
    tool=Tool("echo_word", "Echo", "Say a word back.", read_only=True),
)
TABLE = (*OPERATIONS, ECHO)


@pytest.fixture
async def toy_service(tmp_path: Path, minilm: Embedder) -> AsyncIterator[MemoryService]:
    service = MemoryService(load_config(url=str(tmp_path / "toy.db")), embedder=minilm)
    stored = {"content": "The deploy window is Tuesday.", "agent_id": "dev-1"}
    await service.call(Actor.admin(), "store", stored)
    yield service
    await service.close()


async def test_a_toy_operation_appears_in_rest(toy_service: MemoryService) -> None:
    app = create_app(toy_service, keys=None, operations=TABLE)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        ok = await client.post("/v1/echo", json={"agent_id": "dev-1", "word": "hi", "times": 2})
        bad = await client.post("/v1/echo", json={"agent_id": "dev-1", "word": "hi", "x": 1})
        spec = (await client.get("/openapi.json")).json()
    assert ok.status_code == 200
    assert ok.json() == {"echo": "hi hi", "memories": 1}
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "validation_error"
    assert spec["paths"]["/v1/echo"]["post"]["summary"] == "Say a word back"
    assert "EchoBody" in spec["components"]["schemas"]


async def test_a_toy_operation_appears_in_mcp(toy_service: MemoryService) -> None:
    server = create_mcp_server(toy_service, lambda _ctx: Actor.agent("dev-1"), operations=TABLE)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("echo_word", {"word": "yo"})
        refused = await client.call_tool("echo_word", {"word": "yo", "times": 9})
    schema = tools["echo_word"].input_schema
    assert schema["required"] == ["word"]  # agent_id defaults to the calling agent
    assert schema["properties"]["times"]["maximum"] == 3
    assert not result.is_error
    assert result.structured_content == {"echo": "yo", "memories": 1}
    assert refused.is_error


def test_a_toy_operation_appears_in_the_cli(cli_store: Path) -> None:
    runner = CliRunner()
    app = build_api_app(TABLE)
    stored = runner.invoke(app, ["store", "--agent-id", "dev-1", "--content", "Lunch at noon."])
    assert stored.exit_code == 0, stored.output
    done = runner.invoke(app, ["echo", "--agent-id", "dev-1", "--word", "ok", "--times", "3"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"echo": "ok ok ok", "memories": 1}
    helped = runner.invoke(app, ["echo", "--help"])
    assert "--word" in helped.output and "--times" in helped.output


async def test_a_toy_operation_appears_in_the_remote_client(
    tmp_path: Path, minilm: Embedder
) -> None:
    # A service the server's own loop opens (nothing touched it on this test's loop).
    service = MemoryService(load_config(url=str(tmp_path / "remote.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None, operations=TABLE))
    remote = AsyncMemory(url)
    try:
        assert isinstance(remote, RemoteAsyncMemory)
        await remote.add("The deploy window is Tuesday.", agent_id="dev-1")
        answer = await remote.call(ECHO, agent_id="dev-1", word="hey")
        assert answer == {"echo": "hey", "memories": 1}
        # Checked on the client with the declared limits: nothing is sent.
        with pytest.raises(MemoryValidationError, match="word"):
            await remote.call(ECHO, agent_id="dev-1", word="x" * 21)
        # Every declared operation is reachable by name as well.
        assert await remote.call("count", agent_id="dev-1") == {"count": 1}
    finally:
        await remote.close()
        stop()


# -- update and history through every interface ----------------------------------------------


async def test_update_and_history_over_rest_mcp_and_the_remote_client(
    tmp_path: Path, minilm: Embedder
) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "u.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None))
    remote = AsyncMemory(url)
    try:
        first = await remote.add("Standup is at 9:30", agent_id="dev-1", tags=["ritual"])
        async with httpx.AsyncClient(base_url=url) as http:
            patched = await http.patch(
                f"/v1/memories/{first}",
                json={"agent_id": "dev-1", "content": "Standup is at 10:00", "reason": "moved"},
            )
            assert patched.status_code == 200, patched.text
            v2 = patched.json()
            assert v2["content"] == "Standup is at 10:00" and v2["tags"] == ["ritual"]
            empty = await http.patch(f"/v1/memories/{v2['id']}", json={"agent_id": "dev-1"})
            assert empty.status_code == 422
            stale = await http.patch(
                f"/v1/memories/{first}", json={"agent_id": "dev-1", "content": "x"}
            )
            assert stale.status_code == 409
            listed = (await http.get(f"/v1/memories/{first}/history?agent_id=dev-1")).json()
        assert [v["id"] for v in listed["versions"]] == [first, v2["id"]]
        assert any(r["action"] == "memory.supersede" for r in listed["audit"])
        # The remote client: same methods, same types as the embedded store.
        v3 = await remote.update(v2["id"], agent_id="dev-1", importance=0.9)
        history = await remote.history(first, agent_id="dev-1")
        assert [v.id for v in history.versions] == [first, v2["id"], v3.id]
        assert history.current.metadata.importance == 0.9
        # MCP: the agent updates its own memory and reads the chain.
        server = create_mcp_server(service, lambda _ctx: Actor.agent("dev-1"))
        async with Client(server) as client:
            done = await client.call_tool(
                "update_memory", {"memory_id": v3.id, "content": "Standup is at 10:15"}
            )
            assert not done.is_error
            chain = await client.call_tool("memory_history", {"memory_id": first})
            assert chain.structured_content is not None
            assert len(chain.structured_content["versions"]) == 4
            other = await client.call_tool(
                "update_memory", {"memory_id": first, "agent_id": "dev-2", "content": "x"}
            )
            assert other.is_error and "permission" in str(other.content[0]).lower()
    finally:
        await remote.close()
        stop()


async def test_conversations_over_rest_mcp_and_the_remote_client(
    tmp_path: Path, minilm: Embedder
) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "c.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None))
    remote = AsyncMemory(url)
    chat = [
        {"role": "user", "content": "We deploy on Fridays.", "tool_calls": []},
        {"role": "assistant", "content": "Got it: Friday deploys."},
    ]
    try:
        async with httpx.AsyncClient(base_url=url) as http:
            made = await http.post(
                "/v1/messages", json={"agent_id": "dev-1", "messages": chat, "session_id": "s9"}
            )
            assert made.status_code == 201, made.text
            ids = made.json()["ids"]
            bad = await http.post(
                "/v1/messages",
                json={"agent_id": "dev-1", "messages": [{"role": "system", "content": "x"}]},
            )
            assert bad.status_code == 422 and "no user or assistant" in bad.text
        assert len(ids) == 2
        turn = await remote.get(ids[0], agent_id="dev-1")
        assert turn.metadata.extra == {"role": "user", "session_id": "s9"}
        again = await remote.add(chat, agent_id="dev-1", session_id="s9")
        assert again == ids  # deduplicated on the server
        stored = await remote.add("Lunch is at noon", agent_id="dev-1", user_id="u-7")
        assert (await remote.get(stored, agent_id="dev-1")).metadata.extra == {"user_id": "u-7"}
        server = create_mcp_server(service, lambda _ctx: Actor.agent("dev-1"))
        async with Client(server) as client:
            done = await client.call_tool(
                "remember_conversation",
                {"messages": [{"role": "user", "content": "My laptop is a ThinkPad X1."}]},
            )
            assert not done.is_error and done.structured_content is not None
            assert len(done.structured_content["ids"]) == 1
    finally:
        await remote.close()
        stop()


async def test_filters_and_scopes_over_rest_and_the_remote_client(
    tmp_path: Path, minilm: Embedder
) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "f.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None))
    remote = AsyncMemory(url)
    try:
        await remote.add("Alice likes green tea", agent_id="bot", user_id="alice")
        await remote.add(
            "Bob likes black coffee", agent_id="bot", user_id="bob", metadata={"cups": 3}
        )
        async with httpx.AsyncClient(base_url=url) as http:
            found = await http.post(
                "/v1/search",
                json={"agent_id": "bot", "query": "what does the user drink?", "user_id": "bob"},
            )
            assert [h["content"] for h in found.json()["results"]] == ["Bob likes black coffee"]
            listed = await http.get(
                "/v1/memories", params={"agent_id": "bot", "filters": '{"cups": {"gte": 2}}'}
            )
            assert [m["content"] for m in listed.json()["memories"]] == ["Bob likes black coffee"]
            bad = await http.get("/v1/count", params={"agent_id": "bot", "filters": "{oops"})
            assert bad.status_code == 422 and "JSON" in bad.text
        assert await remote.count(agent_id="bot", filters={"cups": {"lt": 3}}) == 0
        assert await remote.count(agent_id="bot", user_id="alice") == 1
        listed_remote = await remote.list(agent_id="bot", filters={"cups": 3})
        assert [e.content for e in listed_remote] == ["Bob likes black coffee"]
        with pytest.raises(MemoryValidationError, match="filter"):
            await remote.search("tea", agent_id="bot", filters={"cups": {"near": 1}})
    finally:
        await remote.close()
        stop()


def test_the_cli_remembers_a_conversation_from_a_json_file(cli_store: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            [
                {"role": "user", "content": "Our on-call rotation changes on Mondays."},
                {"role": "assistant", "content": "Noted."},
            ]
        ),
        encoding="utf-8",
    )
    runner = CliRunner()
    app = build_api_app()
    made = runner.invoke(
        app, ["store-messages", "--agent-id", "ops", "--messages", f"@{chat}", "--session-id", "s"]
    )
    assert made.exit_code == 0, made.output
    assert len(json.loads(made.output)["ids"]) == 2
    missing = runner.invoke(
        app, ["store-messages", "--agent-id", "ops", "--messages", f"@{tmp_path / 'nope.json'}"]
    )
    assert missing.exit_code != 0
    assert "cannot read" in str(missing.exception) or "cannot read" in missing.output
