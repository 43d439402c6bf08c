"""memvault's MCP server: the memory tools over stdio or streamable HTTP.

Every tool call goes through :class:`~memvault.service.MemoryService` under the :class:`Actor`
that ``actor(ctx)`` resolves for the call (``ctx`` is the SDK's per-request
:class:`~mcp.server.context.ServerRequestContext`; over HTTP, ``ctx.request`` is the Starlette
request). So MCP callers get exactly the authorisation, tenant isolation and auditing of every
other interface::

    server = create_mcp_server(service, lambda ctx: Actor.agent("dev-1"))
    await run_stdio(service, Actor.agent("dev-1"))             # serve stdin/stdout until EOF

    mcp_http = create_mcp_http_app(service)                    # the REST server mounts this
    routes.append(Route("/mcp", endpoint=mcp_http.app))        # behind its Bearer-key middleware
    async with mcp_http.lifespan():                            # in the web app's lifespan
        ...

Over HTTP the caller is whatever the surrounding authentication middleware stored as
``scope["memvault.actor"]`` (:data:`ACTOR_SCOPE_KEY`); a request without one is refused.

Tools (each with an explicit JSON schema): ``store_memory``, ``search_memory``, ``recall_memory``,
``list_memories``, ``delete_memory`` (destructive: ``confirm: true`` and a ``reason`` required),
``publish_shared`` and ``search_shared``. ``agent_id`` defaults to the caller's own id when the
caller is an agent and is required otherwise. Results are JSON text (and the same object as
structured content). A memvault :class:`~memvault.errors.MemoryError` becomes a tool error
(``isError``) whose text is ``"<code>: <message>"`` (:func:`error_code`); anything unexpected is
logged and reported as ``"internal_error: unexpected error"``, never as a traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from mcp.server.transport_security import TransportSecuritySettings

from memvault.errors import (
    MemoryError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryValidationError,
)
from memvault.injection.dispatch import validate_arguments
from memvault.models import MemoryCategory, MemoryEntry
from memvault.server.errors import error_code, public_message
from memvault.service import Actor, ActorKind, MemoryService, check_reason

__all__ = [
    "ACTOR_SCOPE_KEY",
    "SERVER_NAME",
    "TOOL_NAMES",
    "ActorResolver",
    "MCPHttpApp",
    "actor_from_request",
    "create_mcp_http_app",
    "create_mcp_server",
    "error_code",
    "run_stdio",
]

logger = logging.getLogger(__name__)

SERVER_NAME = "memvault"

ACTOR_SCOPE_KEY = "memvault.actor"
"""The ASGI scope key under which the HTTP authentication middleware stores the caller's Actor."""

ActorResolver = Callable[[Any], Actor]
"""``actor(ctx) -> Actor``: who is calling, given the SDK's request context of one tool call."""

_INTERNAL_ERROR = "internal_error: unexpected error"
_MAX_LIMIT = 100
_MAX_TAGS = 50
_CATEGORIES = [c.value for c in MemoryCategory]


# --- schemas -------------------------------------------------------------------------------------


def _agent_property() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "description": (
            "The agent whose memories to use. Optional for an agent caller (defaults to its "
            "own id; another agent's id is refused); required for a human or admin caller."
        ),
    }


def _limit_property(default: int, what: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": _MAX_LIMIT,
        "default": default,
        "description": f"How many {what} to return at most (1-{_MAX_LIMIT}).",
    }


def _content_property(what: str) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": what}


def _category_property(description: str, default: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": _CATEGORIES, "description": description}
    if default is not None:
        schema["default"] = default
    return schema


def _tags_property() -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 100},
        "maxItems": _MAX_TAGS,
        "default": [],
        "description": "Labels to filter on later (1-100 characters each).",
    }


def _query_property() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 2000,
        "description": "What to look for, in a few words or a question.",
    }


def _memory_id_property() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "description": "The memory's id, as store_memory or a search returned it.",
    }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A memory: id, agent_id, category, content, tags, metadata, timestamps ...",
    "properties": {
        "id": {"type": "string"},
        "agent_id": {"type": "string"},
        "category": {"type": "string"},
        "content": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "metadata": {"type": "object"},
        "created_at": {"type": "string"},
        "relevance_score": {"type": "number"},
    },
    "required": ["id", "agent_id", "category", "content", "tags", "created_at"],
}


def _results_schema(key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": "array", "items": _ENTRY_SCHEMA}},
        "required": [key],
    }


# --- tools ---------------------------------------------------------------------------------------

_Handler = Callable[[MemoryService, Actor, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class _Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    handler: _Handler
    read_only: bool
    destructive: bool = False

    def definition(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=self.destructive,
                idempotent_hint=self.read_only or self.destructive,
                open_world_hint=False,
            ),
        )


def _agent_of(actor: Actor, args: Mapping[str, Any]) -> str:
    """The agent id of a call: the one given, else an agent caller's own id."""
    given = args.get("agent_id")
    if given is not None:
        return str(given)
    if actor.kind is ActorKind.AGENT:
        return actor.name
    msg = f"agent_id is required: {actor.label} is not an agent, so name the agent to act on"
    raise MemoryValidationError(msg)


async def _store(service: MemoryService, actor: Actor, args: dict[str, Any]) -> dict[str, Any]:
    outcome = await service.store(
        actor,
        args["content"],
        agent_id=_agent_of(actor, args),
        category=args["category"],
        tags=args["tags"],
        metadata=args["metadata"],
    )
    return {
        "id": outcome.id,
        "decision": outcome.decision.kind.value,
        "reason": outcome.decision.reason,
    }


async def _search(service: MemoryService, actor: Actor, args: dict[str, Any]) -> dict[str, Any]:
    entries = await service.search(
        actor,
        args["query"],
        agent_id=_agent_of(actor, args),
        limit=args["limit"],
        categories=args.get("categories"),
        include_shared=args["include_shared"],
    )
    return {"results": _entries(entries)}


async def _recall(service: MemoryService, actor: Actor, args: dict[str, Any]) -> dict[str, Any]:
    entry = await service.get(actor, args["memory_id"], agent_id=_agent_of(actor, args))
    return entry.to_json()


async def _list(service: MemoryService, actor: Actor, args: dict[str, Any]) -> dict[str, Any]:
    entries = await service.list(
        actor,
        agent_id=_agent_of(actor, args),
        category=args.get("category"),
        limit=args["limit"],
        offset=args["offset"],
    )
    return {"memories": _entries(entries)}


async def _delete(service: MemoryService, actor: Actor, args: dict[str, Any]) -> dict[str, Any]:
    if args.get("confirm") is not True:
        msg = "delete_memory is destructive: pass confirm=true to delete (nothing was deleted)"
        raise MemoryValidationError(msg)
    reason = check_reason(args.get("reason"), required=True)
    agent = _agent_of(actor, args)
    memory_id = args["memory_id"]
    if not await service.delete(actor, memory_id, agent_id=agent, reason=reason):
        msg = f"no memory with id {memory_id!r} for agent {agent!r}"
        raise MemoryNotFoundError(msg)
    return {"id": memory_id, "deleted": True}


async def _publish(service: MemoryService, actor: Actor, args: dict[str, Any]) -> dict[str, Any]:
    memory_id = await service.publish(
        actor,
        args["content"],
        agent_id=_agent_of(actor, args),
        category=args["category"],
        tags=args["tags"],
    )
    return {"id": memory_id}


async def _search_shared(
    service: MemoryService, actor: Actor, args: dict[str, Any]
) -> dict[str, Any]:
    entries = await service.search_shared(
        actor, args["query"], limit=args["limit"], exclude_agent=args.get("exclude_agent")
    )
    return {"results": _entries(entries)}


def _entries(entries: list[MemoryEntry]) -> list[dict[str, Any]]:
    return [entry.to_json() for entry in entries]


_TOOLS: tuple[_Tool, ...] = (
    _Tool(
        name="store_memory",
        title="Store a memory",
        description=(
            "Remember something for later: a fact, decision, preference or outcome. Duplicates "
            "are recognised and a statement that contradicts an older one supersedes it. "
            "Returns the memory's id and the write decision (add, noop, supersede or reject)."
        ),
        input_schema=_object(
            {
                "content": _content_property("The memory itself, as a self-contained sentence."),
                "agent_id": _agent_property(),
                "category": _category_property(
                    "The kind of memory (semantic: facts and preferences; episodic: events; "
                    "procedural: how-tos; social: people; working: short-lived notes).",
                    default="semantic",
                ),
                "tags": _tags_property(),
                "metadata": {
                    "type": "object",
                    "default": {},
                    "description": "Free-form JSON values stored with the memory.",
                },
            },
            ["content"],
        ),
        output_schema={
            "type": "object",
            "properties": {
                "id": {"type": ["string", "null"]},
                "decision": {"type": "string", "enum": ["add", "noop", "supersede", "reject"]},
                "reason": {"type": "string"},
            },
            "required": ["id", "decision"],
        },
        handler=_store,
        read_only=False,
    ),
    _Tool(
        name="search_memory",
        title="Search memories",
        description=(
            "Search the agent's memories (hybrid semantic and keyword search), best first. "
            "Each result carries its id and a relevance_score."
        ),
        input_schema=_object(
            {
                "query": _query_property(),
                "agent_id": _agent_property(),
                "limit": _limit_property(10, "memories"),
                "categories": {
                    "type": "array",
                    "items": {"type": "string", "enum": _CATEGORIES},
                    "minItems": 1,
                    "description": "Only search memories of these kinds (default: all).",
                },
                "include_shared": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also search the shared knowledge of the organisation.",
                },
            },
            ["query"],
        ),
        output_schema=_results_schema("results"),
        handler=_search,
        read_only=True,
    ),
    _Tool(
        name="recall_memory",
        title="Recall a memory",
        description="Read one memory in full by its id.",
        input_schema=_object(
            {"memory_id": _memory_id_property(), "agent_id": _agent_property()},
            ["memory_id"],
        ),
        output_schema=_ENTRY_SCHEMA,
        handler=_recall,
        read_only=True,
    ),
    _Tool(
        name="list_memories",
        title="List memories",
        description="List the agent's memories, newest first, a page at a time.",
        input_schema=_object(
            {
                "agent_id": _agent_property(),
                "category": _category_property("Only memories of this kind."),
                "limit": _limit_property(20, "memories"),
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "How many memories to skip (for the next page).",
                },
            },
            [],
        ),
        output_schema=_results_schema("memories"),
        handler=_list,
        read_only=True,
    ),
    _Tool(
        name="delete_memory",
        title="Delete a memory",
        description=(
            "Permanently delete one memory. Destructive: requires confirm=true and a reason, "
            "which the audit log records with the caller."
        ),
        input_schema=_object(
            {
                "memory_id": _memory_id_property(),
                "agent_id": _agent_property(),
                "confirm": {
                    "type": "boolean",
                    "description": "Must be true: confirms the memory is to be deleted for good.",
                },
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "Why the memory is deleted (recorded in the audit log).",
                },
            },
            ["memory_id", "confirm", "reason"],
        ),
        output_schema={
            "type": "object",
            "properties": {"id": {"type": "string"}, "deleted": {"type": "boolean"}},
            "required": ["id", "deleted"],
        },
        handler=_delete,
        read_only=False,
        destructive=True,
    ),
    _Tool(
        name="publish_shared",
        title="Publish shared knowledge",
        description=(
            "Publish knowledge every agent of the organisation can find with search_shared, "
            "authored by the agent. Returns its id."
        ),
        input_schema=_object(
            {
                "content": _content_property("The knowledge to share, self-contained."),
                "agent_id": _agent_property(),
                "category": _category_property("The kind of knowledge.", default="semantic"),
                "tags": _tags_property(),
            },
            ["content"],
        ),
        output_schema={
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
        },
        handler=_publish,
        read_only=False,
    ),
    _Tool(
        name="search_shared",
        title="Search shared knowledge",
        description="Search the organisation's shared knowledge (every author), best first.",
        input_schema=_object(
            {
                "query": _query_property(),
                "limit": _limit_property(10, "entries"),
                "exclude_agent": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "Leave out what this agent published.",
                },
            },
            ["query"],
        ),
        output_schema=_results_schema("results"),
        handler=_search_shared,
        read_only=True,
    ),
)

_BY_NAME: dict[str, _Tool] = {tool.name: tool for tool in _TOOLS}

TOOL_NAMES: tuple[str, ...] = tuple(_BY_NAME)
"""The names of the tools the server offers, in listing order."""


def _text_result(data: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _error_result(text: str) -> types.CallToolResult:
    # One line: messages may echo user input with newlines in it.
    return types.CallToolResult(
        content=[types.TextContent(text=" ".join(text.split()))], is_error=True
    )


async def _call(
    service: MemoryService, resolve: ActorResolver, ctx: Any, name: str, arguments: Any
) -> types.CallToolResult:
    """Run one tool call; every failure becomes a tool error result."""
    tool = _BY_NAME.get(name)
    if tool is None:
        available = ", ".join(TOOL_NAMES)
        return _error_result(f"not_found: unknown tool {name!r} (available: {available})")
    try:
        actor = resolve(ctx)
        if not isinstance(actor, Actor):
            logger.error("memvault.mcp.actor_invalid", extra={"tool": name})
            return _error_result(_INTERNAL_ERROR)
        args = validate_arguments(tool.input_schema, {} if arguments is None else arguments)
        data = await tool.handler(service, actor, args)
    except MemoryError as exc:
        logger.info("memvault.mcp.tool_error", extra={"tool": name, "error": str(exc)})
        return _error_result(f"{error_code(exc)}: {public_message(exc)}")
    except Exception:
        logger.exception("memvault.mcp.unexpected_error", extra={"tool": name})
        return _error_result(_INTERNAL_ERROR)
    return _text_result(data)


def create_mcp_server(service: MemoryService, actor: ActorResolver) -> Server[Any]:
    """The MCP server (the SDK's low-level :class:`~mcp.server.lowlevel.Server`) of memvault.

    ``actor(ctx)`` is called for every tool call with the SDK's
    :class:`~mcp.server.context.ServerRequestContext` and returns the calling :class:`Actor`
    (raising :class:`~memvault.errors.MemoryPermissionError` refuses the call). The server
    does not own ``service``: closing it stays with the caller.
    """

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.definition() for tool in _TOOLS])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await _call(service, actor, ctx, params.name, params.arguments)

    def input_schema(name: str) -> Mapping[str, Any] | None:
        tool = _BY_NAME.get(name)
        return None if tool is None else tool.input_schema

    return Server(
        SERVER_NAME,
        version=_version(),
        title="memvault",
        instructions=(
            "Long-term memory for this agent. Search it (search_memory) before answering from "
            "scratch, store durable facts, decisions and preferences (store_memory), and use "
            "publish_shared/search_shared for knowledge shared across agents."
        ),
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memvault")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


# --- stdio ---------------------------------------------------------------------------------------


async def run_stdio(service: MemoryService, actor: Actor | ActorResolver) -> None:
    """Serve the tools over this process's stdin/stdout until stdin ends.

    ``actor`` is the fixed caller of every tool call (or a resolver). While serving, stray
    writes to stdout go to stderr, so nothing but protocol messages reaches the client.
    """
    resolve: ActorResolver = (lambda _ctx: actor) if isinstance(actor, Actor) else actor
    server = create_mcp_server(service, resolve)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


# --- streamable HTTP -----------------------------------------------------------------------------


def actor_from_request(ctx: Any) -> Actor:
    """The caller of an HTTP tool call: the Actor stored in the ASGI scope by the auth middleware.

    ``ctx`` is the SDK's request context (its ``request`` is the Starlette request) or the
    request itself.

    Raises:
        MemoryPermissionError: the request carries no authenticated actor.
    """
    request = getattr(ctx, "request", ctx)
    scope = getattr(request, "scope", None)
    found = scope.get(ACTOR_SCOPE_KEY) if isinstance(scope, Mapping) else None
    if not isinstance(found, Actor):
        msg = "this MCP request has no authenticated caller (send a valid API key)"
        raise MemoryPermissionError(msg)
    return found


class MCPHttpApp:
    """The MCP endpoint as an ASGI app, plus the lifespan that runs its session manager.

    ``app`` answers every path it is given (POST/GET/DELETE of the streamable-HTTP transport),
    so route it at exactly one path, e.g. ``Route("/mcp", endpoint=mcp_http.app)``. Enter
    :meth:`lifespan` (once) while the web app runs; ``async with mcp_http:`` does the same.
    """

    def __init__(self, server: Server[Any], session_manager: StreamableHTTPSessionManager):
        self.server = server
        self.session_manager = session_manager
        self.app = StreamableHTTPASGIApp(session_manager)
        self._running: AsyncExitStack | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Start the session manager, stop it on exit (usable once per instance)."""
        async with self.session_manager.run():
            yield

    async def __aenter__(self) -> MCPHttpApp:
        stack = AsyncExitStack()
        await stack.enter_async_context(self.lifespan())
        self._running = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        stack, self._running = self._running, None
        if stack is not None:
            await stack.aclose()


def create_mcp_http_app(
    service: MemoryService,
    *,
    actor: ActorResolver = actor_from_request,
    json_response: bool = True,
    stateless: bool = True,
    transport_security: TransportSecuritySettings | None = None,
) -> MCPHttpApp:
    """The streamable-HTTP MCP endpoint over ``service``, for the REST server to mount.

    Each tool call's actor is read from ``scope["memvault.actor"]`` (:func:`actor_from_request`),
    which the REST server's authentication middleware sets. By default the endpoint is
    stateless (no session affinity, so any replica behind a load balancer can answer) and
    answers with plain JSON instead of SSE streams. ``transport_security`` enables the SDK's
    Host/Origin checks (off by default: the REST server's own middleware guards the endpoint).
    """
    server = create_mcp_server(service, actor)
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=json_response,
        stateless=stateless,
        security_settings=transport_security,
    )
    return MCPHttpApp(server, manager)
