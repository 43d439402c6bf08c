"""memvault's MCP server in-process: tool schemas, handlers, error mapping, and the HTTP endpoint.

Tool calls run through the SDK's own client against the real server object (in-process for the
handler tests, over a real uvicorn socket for the HTTP endpoint), with a real MemoryService over
a SQLite file and the bundled embedding model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as ASGIScope

from memvault.config import load_config
from memvault.errors import (
    DimensionMismatchError,
    EmbedderUnavailableError,
    MemoryAuthenticationError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConflictError,
    MemoryConnectionError,
    MemoryError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryRetrievalError,
    MemoryStoreError,
    MemoryValidationError,
)
from memvault.injection.dispatch import ToolArgumentError
from memvault.protocols import Embedder
from memvault.server.mcp import (
    ACTOR_SCOPE_KEY,
    TOOL_NAMES,
    ActorResolver,
    actor_from_request,
    create_mcp_http_app,
    create_mcp_server,
    error_code,
)
from memvault.service import Actor, MemoryService, Scope

DEV1 = Actor.agent("dev-1")
ADMIN = Actor.admin()


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMVAULT_* setting and no ./memvault.yaml of the machine leaks into a test."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
async def service(tmp_path: Path, minilm: Embedder) -> AsyncIterator[MemoryService]:
    svc = MemoryService(load_config(url=str(tmp_path / "store.db")), embedder=minilm)
    yield svc
    await svc.close()


@asynccontextmanager
async def connect(service: MemoryService, actor: Actor | ActorResolver) -> AsyncIterator[Client]:
    """An SDK client connected in-process to a server whose every call runs as ``actor``."""
    resolve: ActorResolver = (lambda _ctx: actor) if isinstance(actor, Actor) else actor
    async with Client(create_mcp_server(service, resolve)) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """The JSON object of a successful call (text and structured content agree)."""
    assert not result.is_error, text(result)
    data: dict[str, Any] = json.loads(text(result))
    assert result.structured_content == data
    return data


def error(result: types.CallToolResult) -> str:
    assert result.is_error, text(result)
    assert result.structured_content is None
    return text(result)


# -- tool listing -------------------------------------------------------------------------------


async def test_the_tools_are_listed_with_explicit_schemas(service: MemoryService) -> None:
    async with connect(service, DEV1) as client:
        listed = (await client.list_tools()).tools
    tools = {tool.name: tool for tool in listed}
    assert (
        tuple(tools)
        == TOOL_NAMES
        == (
            "store_memory",
            "remember_conversation",
            "search_memory",
            "recall_memory",
            "list_memories",
            "delete_memory",
            "update_memory",
            "memory_history",
            "publish_shared",
            "search_shared",
            # issue 17: context, Search-and-Ask, capture and working memory over MCP
            "memory_context",
            "search_and_ask",
            "capture_episode",
            "capture_distillation",
            "working_memory_note",
            "working_memory",
            "learn_from_task",
            "list_approvals",
            "search_org",
            # issue 19: the embedder fine-tune lifecycle (admin)
            "memory_fine_tune_start",
            "memory_fine_tune_preflight",
            "memory_fine_tune_resume",
            "memory_fine_tune_status",
            "memory_fine_tune_runs",
            "memory_fine_tune_cancel",
            "memory_fine_tune_checkpoints",
            "memory_active_embedder",
            "memory_checkpoint_rollback",
            # issue 18: conversations
            "conversation_append",
            "conversation_messages",
            "conversation_list",
            "conversation_context",
            "conversation_compact",
            # issue 43: operational records (seed 001)
            "list_tasks",
            "create_task",
            "set_task_status",
            "cost_summary",
            "channel_history",
            "post_message",
        )
    )
    for tool in listed:
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert (tool.description or "").strip()
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
        assert set(schema["required"]) <= set(schema["properties"])
        assert tool.output_schema is not None
        assert tool.annotations is not None
    required = {name: set(tool.input_schema["required"]) for name, tool in tools.items()}
    assert required == {
        "store_memory": {"content"},
        "remember_conversation": {"messages"},
        "search_memory": {"query"},
        "recall_memory": {"memory_id"},
        "list_memories": set(),
        "delete_memory": {"memory_id", "confirm", "reason"},
        "update_memory": {"memory_id"},
        "memory_history": {"memory_id"},
        "publish_shared": {"content"},
        "search_shared": {"query"},
        "memory_context": {"query"},
        "search_and_ask": {"query"},
        "capture_episode": {"summary"},
        "capture_distillation": {"task_id", "outcome"},
        "working_memory_note": {"task_id", "content"},
        "working_memory": {"task_id"},
        "learn_from_task": {"success"},
        "list_approvals": set(),
        "search_org": {"query"},
        "memory_fine_tune_start": set(),
        "memory_fine_tune_preflight": set(),
        "memory_fine_tune_resume": {"run_id"},
        "memory_fine_tune_status": set(),
        "memory_fine_tune_runs": set(),
        "memory_fine_tune_cancel": {"confirm", "reason"},
        "memory_fine_tune_checkpoints": set(),
        "memory_active_embedder": set(),
        "memory_checkpoint_rollback": {"checkpoint_id", "confirm", "reason"},
        "conversation_append": {"session_id", "messages"},
        "conversation_messages": {"session_id"},
        "conversation_list": set(),
        "conversation_context": {"session_id"},
        "conversation_compact": {"session_id"},
        "list_tasks": set(),
        "create_task": {"title"},
        "set_task_status": {"task_id", "status"},
        "cost_summary": set(),
        "channel_history": {"channel"},
        "post_message": {"channel", "content"},
    }
    store = tools["store_memory"].input_schema["properties"]
    assert store["content"]["minLength"] == 1
    assert store["category"]["default"] == "semantic"
    assert "semantic" in store["category"]["enum"]
    for name in ("search_memory", "list_memories", "search_shared"):
        limit = tools[name].input_schema["properties"]["limit"]
        assert (limit["type"], limit["minimum"], limit["maximum"]) == ("integer", 1, 100)
    delete = tools["delete_memory"]
    assert delete.annotations is not None
    assert delete.annotations.destructive_hint is True
    assert delete.annotations.read_only_hint is False
    search = tools["search_memory"]
    assert search.annotations is not None
    assert search.annotations.read_only_hint is True


# -- the tools ----------------------------------------------------------------------------------


async def test_store_search_recall_and_list_as_an_agent(service: MemoryService) -> None:
    async with connect(service, DEV1) as client:
        stored = ok(
            await client.call_tool(
                "store_memory",
                {
                    "content": "The production database is PostgreSQL 16 on Cloud SQL.",
                    "tags": ["infra"],
                    "metadata": {"source": "runbook"},
                },
            )
        )
        assert stored["decision"] == "add"
        memory_id = stored["id"]
        again = ok(
            await client.call_tool(
                "store_memory",
                {"content": "The production database is PostgreSQL 16 on Cloud SQL."},
            )
        )
        assert (again["id"], again["decision"]) == (memory_id, "noop")
        ok(await client.call_tool("store_memory", {"content": "Alice prefers tabs over spaces."}))

        found = ok(await client.call_tool("search_memory", {"query": "which database in prod?"}))
        first = found["results"][0]
        assert first["id"] == memory_id
        assert first["agent_id"] == "dev-1"
        assert first["tags"] == ["infra"]
        assert isinstance(first["relevance_score"], float)
        limited = ok(await client.call_tool("search_memory", {"query": "database", "limit": 1}))
        assert len(limited["results"]) == 1
        other_kind = ok(
            await client.call_tool(
                "search_memory", {"query": "database", "categories": ["procedural"]}
            )
        )
        assert other_kind["results"] == []

        recalled = ok(await client.call_tool("recall_memory", {"memory_id": memory_id}))
        assert recalled["content"] == "The production database is PostgreSQL 16 on Cloud SQL."
        assert recalled["metadata"] == {"source": "runbook"}

        listed = ok(await client.call_tool("list_memories", {}))
        assert [m["content"] for m in listed["memories"]] == [
            "Alice prefers tabs over spaces.",
            "The production database is PostgreSQL 16 on Cloud SQL.",
        ]
        page = ok(await client.call_tool("list_memories", {"limit": 1, "offset": 1}))
        assert [m["id"] for m in page["memories"]] == [memory_id]
        none = ok(await client.call_tool("list_memories", {"category": "episodic"}))
        assert none["memories"] == []
        explicit = ok(await client.call_tool("list_memories", {"agent_id": "dev-1"}))
        assert len(explicit["memories"]) == 2


async def test_an_agent_cannot_reach_another_agents_memories(service: MemoryService) -> None:
    secret = {"content": "dev-2 keeps its secrets here", "agent_id": "dev-2"}
    theirs = await service.call(ADMIN, "store", secret)
    assert theirs.id is not None
    calls: list[tuple[str, dict[str, Any]]] = [
        ("store_memory", {"content": "x", "agent_id": "dev-2"}),
        ("search_memory", {"query": "secrets", "agent_id": "dev-2"}),
        ("recall_memory", {"memory_id": theirs.id, "agent_id": "dev-2"}),
        ("list_memories", {"agent_id": "dev-2"}),
        (
            "delete_memory",
            {"memory_id": theirs.id, "agent_id": "dev-2", "confirm": True, "reason": "x"},
        ),
        ("publish_shared", {"content": "x", "agent_id": "dev-2"}),
    ]
    async with connect(service, DEV1) as client:
        for name, args in calls:
            message = error(await client.call_tool(name, args))
            assert message == (
                "permission_denied: agent:dev-1 may not use the memories of agent 'dev-2'"
            ), name
        # Its own id does not reach the other agent's memory either.
        missing = error(await client.call_tool("recall_memory", {"memory_id": theirs.id}))
        assert missing.startswith("not_found: ")
    assert len(await service.call(ADMIN, "list", {"agent_id": "dev-2"})) == 1


async def test_a_human_caller_must_name_the_agent(service: MemoryService) -> None:
    operator = Actor.human("alice")
    async with connect(service, operator) as client:
        message = error(await client.call_tool("store_memory", {"content": "a fact"}))
        assert message.startswith("validation_error: agent_id is required: human:alice")
        stored = ok(
            await client.call_tool("store_memory", {"content": "a fact", "agent_id": "dev-7"})
        )
        listed = ok(await client.call_tool("list_memories", {"agent_id": "dev-7"}))
    assert [m["id"] for m in listed["memories"]] == [stored["id"]]
    audit = await service.call(ADMIN, "audit", {"memory_id": stored["id"]})
    assert [(r.action, r.actor) for r in audit] == [("memory.store", "human:alice")]


async def test_a_read_only_caller_cannot_write(service: MemoryService) -> None:
    reader = Actor.agent("dev-1", scopes=[Scope.READ])
    async with connect(service, reader) as client:
        message = error(await client.call_tool("store_memory", {"content": "a fact"}))
        assert message == "permission_denied: agent:dev-1 lacks the 'write' scope"
        ok(await client.call_tool("list_memories", {}))


async def test_delete_needs_confirm_and_a_reason_and_is_audited(service: MemoryService) -> None:
    kestrel = {"content": "The staging cluster is called kestrel.", "agent_id": "dev-1"}
    stored = await service.call(DEV1, "store", kestrel)
    memory_id = stored.id
    assert memory_id is not None
    async with connect(service, DEV1) as client:
        refused: list[tuple[dict[str, Any], str]] = [
            ({"memory_id": memory_id}, "missing required argument 'confirm'"),
            ({"memory_id": memory_id, "confirm": True}, "missing required argument 'reason'"),
            ({"memory_id": memory_id, "confirm": False, "reason": "outdated"}, "confirm=true"),
            ({"memory_id": memory_id, "confirm": "true", "reason": "outdated"}, "boolean"),
            ({"memory_id": memory_id, "confirm": True, "reason": "   "}, "non-blank reason"),
            ({"memory_id": memory_id, "confirm": True, "reason": "x" * 501}, "at most 500"),
        ]
        for args, expected in refused:
            message = error(await client.call_tool("delete_memory", args))
            assert message.startswith("validation_error: "), message
            assert expected in message, message
        kept = await service.call(DEV1, "get", {"memory_id": memory_id, "agent_id": "dev-1"})
        assert kept.id == memory_id

        deleted = ok(
            await client.call_tool(
                "delete_memory",
                {"memory_id": memory_id, "confirm": True, "reason": " renamed to osprey "},
            )
        )
        assert deleted == {"id": memory_id, "deleted": True}
        gone = error(
            await client.call_tool(
                "delete_memory", {"memory_id": memory_id, "confirm": True, "reason": "again"}
            )
        )
        assert gone.startswith("not_found: ")
        missing = error(await client.call_tool("recall_memory", {"memory_id": memory_id}))
        assert missing.startswith("not_found: ")
    records = await service.call(ADMIN, "audit", {"memory_id": memory_id})
    deletes = [r for r in records if r.action == "memory.delete"]
    assert len(deletes) == 1
    assert deletes[0].actor == "agent:dev-1"
    assert deletes[0].agent_id == "dev-1"
    assert deletes[0].details["stated_reason"] == "renamed to osprey"


async def test_publish_and_search_shared(service: MemoryService) -> None:
    dev2 = Actor.agent("dev-2")
    async with connect(service, DEV1) as client:
        published = ok(
            await client.call_tool(
                "publish_shared",
                {
                    "content": "Deploys need a green canary for 30 minutes.",
                    "category": "procedural",
                    "tags": ["deploy"],
                },
            )
        )
    async with connect(service, dev2) as client:
        found = ok(await client.call_tool("search_shared", {"query": "canary before deploying"}))
        assert [r["id"] for r in found["results"]] == [published["id"]]
        assert found["results"][0]["agent_id"] == "dev-1"
        assert found["results"][0]["category"] == "procedural"
        mixed = ok(
            await client.call_tool(
                "search_memory", {"query": "canary before deploying", "include_shared": True}
            )
        )
        assert [r["id"] for r in mixed["results"]] == [published["id"]]
        private = ok(await client.call_tool("search_memory", {"query": "canary"}))
        assert private["results"] == []
        excluded = ok(
            await client.call_tool(
                "search_shared", {"query": "canary", "exclude_agent": "dev-1", "limit": 5}
            )
        )
        assert excluded["results"] == []
    records = await service.call(ADMIN, "audit", {"memory_id": published["id"]})
    assert ("shared.publish", "agent:dev-1") in {(r.action, r.actor) for r in records}


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("store_memory", {}, "missing required argument 'content'"),
        ("store_memory", {"content": ""}, "'content' must not be empty"),
        ("store_memory", {"content": "   "}, "validation_error: "),
        ("store_memory", {"content": "x", "category": "dreams"}, "'category' must be one of"),
        ("store_memory", {"content": "x", "tags": "infra"}, "'tags' must be an array"),
        ("store_memory", {"content": "x", "colour": "red"}, "unknown argument 'colour'"),
        ("search_memory", {"query": "x", "limit": 0}, "'limit' must be >= 1, got 0"),
        ("search_memory", {"query": "x", "limit": 101}, "'limit' must be <= 100, got 101"),
        ("search_memory", {"query": "x", "limit": "5"}, "'limit' must be an integer"),
        ("search_memory", {"query": "x", "categories": []}, "at least 1 items"),
        ("list_memories", {"offset": -1}, "'offset' must be >= 0"),
        ("search_shared", {"query": "x", "limit": 1000}, "'limit' must be <= 100"),
        ("recall_memory", {"memory_id": "x", "agent_id": ""}, "'agent_id' must not be empty"),
    ],
)
async def test_invalid_arguments_are_tool_errors(
    service: MemoryService, name: str, args: dict[str, Any], expected: str
) -> None:
    async with connect(service, DEV1) as client:
        message = error(await client.call_tool(name, args))
    assert message.startswith("validation_error: "), message
    assert expected in message, message
    assert "Traceback" not in message
    assert await service.call(DEV1, "count", {"agent_id": "dev-1"}) == 0


async def test_an_unknown_tool_is_a_tool_error(service: MemoryService) -> None:
    async with connect(service, DEV1) as client:
        message = error(await client.call_tool("forget_everything", {}))
    assert message.startswith("not_found: unknown tool 'forget_everything' (available: store_")


async def test_a_refused_actor_is_a_tool_error(service: MemoryService) -> None:
    def refuse(_ctx: Any) -> Actor:
        raise MemoryPermissionError("no key presented")

    async with connect(service, refuse) as client:
        message = error(await client.call_tool("list_memories", {}))
    assert message == "permission_denied: no key presented"


async def test_unexpected_errors_are_logged_not_shown(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(_ctx: Any) -> Actor:
        raise RuntimeError("secret internals at 0xdeadbeef")

    with caplog.at_level(logging.ERROR, logger="memvault.server.mcp"):
        async with connect(service, broken) as client:
            result = await client.call_tool("list_memories", {})
    assert error(result) == "internal_error: unexpected error"
    logged = [r for r in caplog.records if r.name == "memvault.server.mcp"]
    assert logged
    assert logged[0].exc_info is not None
    assert "secret internals" in str(logged[0].exc_info[1])


async def test_the_resolver_sees_the_request_context(service: MemoryService) -> None:
    seen: list[Any] = []

    def resolve(ctx: Any) -> Actor:
        seen.append(ctx)
        return DEV1

    async with connect(service, resolve) as client:
        ok(await client.call_tool("list_memories", {}))
    assert len(seen) == 1
    assert seen[0].method == "tools/call"


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (MemoryNotFoundError("x"), "not_found"),
        (MemoryValidationError("x"), "validation_error"),
        (ToolArgumentError(["x"]), "validation_error"),
        (MemoryConflictError("x"), "conflict"),
        (MemoryAuthenticationError("x"), "unauthenticated"),
        (MemoryPermissionError("x"), "permission_denied"),
        (MemoryCapabilityError("x"), "not_supported"),
        (MemoryConnectionError("x"), "backend_unavailable"),
        (MemoryConfigError("x"), "configuration_error"),
        (EmbedderUnavailableError("x"), "configuration_error"),
        (
            DimensionMismatchError(
                "x",
                stored_model="a",
                configured_model="b",
                stored_dimension=1,
                configured_dimension=2,
            ),
            "embedding_model_changed",
        ),
        (MemoryStoreError("x"), "store_failed"),
        (MemoryRetrievalError("x"), "retrieval_failed"),
        (MemoryError("x"), "memvault_error"),
    ],
)
def test_error_codes(exc: MemoryError, code: str) -> None:
    assert error_code(exc) == code


class _Carrier:
    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope


class _Ctx:
    def __init__(self, request: object) -> None:
        self.request = request


def test_actor_from_request_reads_the_asgi_scope() -> None:
    request = _Carrier({"type": "http", ACTOR_SCOPE_KEY: DEV1})
    assert actor_from_request(_Ctx(request)) is DEV1
    assert actor_from_request(request) is DEV1
    for ctx in (
        _Ctx(_Carrier({"type": "http"})),
        _Ctx(_Carrier({"type": "http", ACTOR_SCOPE_KEY: "agent:dev-1"})),
        _Ctx(None),
        None,
    ):
        with pytest.raises(MemoryPermissionError, match="no authenticated caller"):
            actor_from_request(ctx)


# -- streamable HTTP ----------------------------------------------------------------------------


class _FakeAuth:
    """Stands in for the REST server's key middleware: ``X-Test-Agent`` names the caller."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: ASGIScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for key, value in scope["headers"]:
                if key == b"x-test-agent":
                    scope[ACTOR_SCOPE_KEY] = Actor.agent(value.decode())
        await self.app(scope, receive, send)


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, setting :attr:`ready` once its startup is over (whether it started)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.ready.set()


@asynccontextmanager
async def _serve(app: Starlette) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port; yields its base URL."""
    sock = _free_socket()
    server = _Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        ready = asyncio.create_task(server.ready.wait())
        await asyncio.wait({task, ready}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        assert server.started, "uvicorn stopped (or took over 30 s) before it started"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        sock.close()


def _web_app(service: MemoryService, *, mount: bool) -> Starlette:
    mcp_http = create_mcp_http_app(service)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp_http.lifespan():
            yield

    route: Route | Mount = (
        Mount("/mcp", app=mcp_http.app)
        if mount
        else Route("/mcp", endpoint=mcp_http.app, methods=["GET", "POST", "DELETE"])
    )
    app = Starlette(routes=[route], lifespan=lifespan)
    app.add_middleware(_FakeAuth)
    return app


@asynccontextmanager
async def _http_client(url: str, agent: str | None, mode: str) -> AsyncIterator[Client]:
    headers = {} if agent is None else {"X-Test-Agent": agent}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_http_endpoint_takes_the_actor_from_the_asgi_scope(
    service: MemoryService, mode: str
) -> None:
    async with _serve(_web_app(service, mount=False)) as base:
        url = f"{base}/mcp"
        async with _http_client(url, "dev-1", mode) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert tuple(names) == TOOL_NAMES
            stored = ok(
                await client.call_tool("store_memory", {"content": "The VPN gateway is vpn-3."})
            )
            found = ok(await client.call_tool("search_memory", {"query": "VPN gateway"}))
            assert [r["id"] for r in found["results"]] == [stored["id"]]
            refused = error(await client.call_tool("list_memories", {"agent_id": "dev-2"}))
            assert refused.startswith("permission_denied: agent:dev-1 may not use")
        async with _http_client(url, "dev-2", mode) as client:
            theirs = ok(await client.call_tool("list_memories", {}))
            assert theirs["memories"] == []
            missing = error(await client.call_tool("recall_memory", {"memory_id": stored["id"]}))
            assert missing.startswith("not_found: ")
        async with _http_client(url, None, mode) as client:
            anonymous = error(await client.call_tool("list_memories", {"agent_id": "dev-1"}))
            assert anonymous == (
                "permission_denied: this MCP request has no authenticated caller "
                "(send a valid API key)"
            )
    records = await service.call(ADMIN, "audit", {"memory_id": stored["id"]})
    assert [(r.action, r.actor) for r in records] == [("memory.store", "agent:dev-1")]


@pytest.mark.parametrize("path", ["/mcp/", "/mcp"])  # "/mcp" is redirected to "/mcp/"
async def test_the_http_endpoint_works_when_mounted(service: MemoryService, path: str) -> None:
    async with (
        _serve(_web_app(service, mount=True)) as base,
        _http_client(f"{base}{path}", "dev-1", "auto") as client,
    ):
        stored = ok(await client.call_tool("store_memory", {"content": "Mounted at /mcp."}))
        listed = ok(await client.call_tool("list_memories", {}))
    assert [m["id"] for m in listed["memories"]] == [stored["id"]]


async def test_the_http_app_is_an_async_context_manager(service: MemoryService) -> None:
    mcp_http = create_mcp_http_app(service)
    async with mcp_http as running:
        assert running is mcp_http
        assert mcp_http.session_manager.stateless
        assert mcp_http.session_manager.json_response
