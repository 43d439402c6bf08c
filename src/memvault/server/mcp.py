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

Tools are the operations of :mod:`memvault.api.operations` that declare one: ``store_memory``,
``search_memory``, ``recall_memory``, ``list_memories``, ``delete_memory`` (destructive:
``confirm: true`` and a ``reason`` required), ``publish_shared`` and ``search_shared``. Each
tool's JSON schema is derived from its operation's input model (the fields the tool offers,
limits tightened where the declaration says so), and a call runs ``MemoryService.call``.
``agent_id`` defaults to the caller's own id when the caller is an agent and is required
otherwise. Results are JSON text (and the same object as
structured content). A memvault :class:`~memvault.errors.MemoryError` becomes a tool error
(``isError``) whose text is ``"<code>: <message>"`` (:func:`error_code`); anything unexpected is
logged and reported as ``"internal_error: unexpected error"``, never as a traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
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
from pydantic import ValidationError

from memvault._jsonschema import inline_schema
from memvault.api.auth import Actor, ActorKind, check_reason
from memvault.api.operations import OPERATIONS, Operation, Tool
from memvault.errors import MemoryError, MemoryPermissionError, MemoryValidationError
from memvault.injection.dispatch import validate_arguments
from memvault.server.errors import error_code, public_message
from memvault.service import MemoryService
from memvault.validation import model_error

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

_AGENT_PROPERTY: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "description": (
        "The agent whose memories to use. Optional for an agent caller (defaults to its "
        "own id; another agent's id is refused); required for a human or admin caller."
    ),
}
_CONFIRM_PROPERTY: dict[str, Any] = {
    "type": "boolean",
    "description": "Must be true: confirms the change is meant, for good.",
}


# --- schemas, derived from the operations' input models ------------------------------------------


def input_schema(op: Operation) -> dict[str, Any]:
    """The JSON schema of ``op``'s tool: its input model's fields (those the tool offers)."""
    tool = op.tool
    assert tool is not None
    full = op.request.model_json_schema()
    defs = full.get("$defs", {})
    model = op.request.model_fields
    names = tool.fields if tool.fields is not None else tuple(model)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name in names:
        if name == "agent_id" and model[name].is_required():
            properties[name] = dict(_AGENT_PROPERTY)
            continue
        prop = inline_schema(full["properties"][name], defs, optional_as_absent=True)
        prop.update(tool.limits.get(name, {}))
        properties[name] = prop
        if model[name].is_required():
            required.append(name)
    if tool.confirm:
        properties["confirm"] = dict(_CONFIRM_PROPERTY)
        required += ["confirm", "reason"]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def output_schema(op: Operation) -> dict[str, Any]:
    """The JSON schema of what ``op``'s tool returns."""
    tool = op.tool
    assert tool is not None
    if tool.output_schema is not None:
        return dict(tool.output_schema)
    response = op.http.response if op.http is not None else None
    if response is None:
        return {"type": "object"}
    full = response.model_json_schema()
    schema = inline_schema(full, full.get("$defs", {}), optional_as_absent=False)
    assert isinstance(schema, dict)
    return schema


# --- tools ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tool:
    """One operation's MCP tool: its definition and how a call runs."""

    op: Operation
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]

    @property
    def spec(self) -> Tool:
        assert self.op.tool is not None
        return self.op.tool

    @property
    def name(self) -> str:
        return self.spec.name

    def definition(self) -> types.Tool:
        spec = self.spec
        destructive = spec.confirm
        return types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=destructive,
                idempotent_hint=spec.read_only or destructive,
                open_world_hint=False,
            ),
        )

    async def run(self, service: MemoryService, actor: Actor, arguments: Any) -> Any:
        spec, op = self.spec, self.op
        args = validate_arguments(self.input_schema, {} if arguments is None else arguments)
        if spec.confirm:
            if args.pop("confirm", None) is not True:
                msg = f"{spec.name} is destructive: pass confirm=true (nothing was changed)"
                raise MemoryValidationError(msg)
            args["reason"] = check_reason(args.get("reason"), required=True)
        field = op.request.model_fields.get("agent_id")
        if field is not None and field.is_required():
            args["agent_id"] = _agent_of(actor, args)
        try:
            request = op.parse(args)
        except ValidationError as exc:
            raise model_error(exc) from None
        result = await service.call(actor, op, request)
        return (spec.render or op.render)(result, request)


def _agent_of(actor: Actor, args: Mapping[str, Any]) -> str:
    """The agent id of a call: the one given, else an agent caller's own id."""
    given = args.get("agent_id")
    if given is not None:
        return str(given)
    if actor.kind is ActorKind.AGENT:
        return actor.name
    msg = f"agent_id is required: {actor.label} is not an agent, so name the agent to act on"
    raise MemoryValidationError(msg)


def tools_of(operations: Iterable[Operation]) -> tuple[_Tool, ...]:
    """The MCP tools of the operations that declare one, in declaration order."""
    found = [
        _Tool(op, input_schema(op), output_schema(op)) for op in operations if op.tool is not None
    ]
    # The order models see: the everyday memory tools first, as they were always listed.
    rank = {name: i for i, name in enumerate(_LISTING)}
    found.sort(key=lambda t: rank.get(t.name, len(rank)))
    return tuple(found)


_LISTING = (
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
)

_TOOLS = tools_of(OPERATIONS)

TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in _TOOLS)
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
    service: MemoryService,
    resolve: ActorResolver,
    tools: Mapping[str, _Tool],
    ctx: Any,
    name: str,
    arguments: Any,
) -> types.CallToolResult:
    """Run one tool call; every failure becomes a tool error result."""
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(tools)
        return _error_result(f"not_found: unknown tool {name!r} (available: {available})")
    try:
        actor = resolve(ctx)
        if not isinstance(actor, Actor):
            logger.error("memvault.mcp.actor_invalid", extra={"tool": name})
            return _error_result(_INTERNAL_ERROR)
        data = await tool.run(service, actor, arguments)
    except MemoryError as exc:
        logger.info("memvault.mcp.tool_error", extra={"tool": name, "error": str(exc)})
        return _error_result(f"{error_code(exc)}: {public_message(exc)}")
    except Exception:
        logger.exception("memvault.mcp.unexpected_error", extra={"tool": name})
        return _error_result(_INTERNAL_ERROR)
    return _text_result(data)


def create_mcp_server(
    service: MemoryService,
    actor: ActorResolver,
    *,
    operations: Iterable[Operation] = OPERATIONS,
) -> Server[Any]:
    """The MCP server (the SDK's low-level :class:`~mcp.server.lowlevel.Server`) of memvault.

    ``actor(ctx)`` is called for every tool call with the SDK's
    :class:`~mcp.server.context.ServerRequestContext` and returns the calling :class:`Actor`
    (raising :class:`~memvault.errors.MemoryPermissionError` refuses the call). The server
    does not own ``service``: closing it stays with the caller. Every operation of
    ``operations`` that declares a tool is offered.
    """
    listed = _TOOLS if operations is OPERATIONS else tools_of(operations)
    tools = {tool.name: tool for tool in listed}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.definition() for tool in listed])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await _call(service, actor, tools, ctx, params.name, params.arguments)

    def schema_of(name: str) -> Mapping[str, Any] | None:
        tool = tools.get(name)
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
        get_tool_input_schema=schema_of,
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


async def run_stdio(
    service: MemoryService,
    actor: Actor | ActorResolver,
    *,
    operations: Iterable[Operation] = OPERATIONS,
) -> None:
    """Serve the tools over this process's stdin/stdout until stdin ends.

    ``actor`` is the fixed caller of every tool call (or a resolver). While serving, stray
    writes to stdout go to stderr, so nothing but protocol messages reaches the client.
    """
    resolve: ActorResolver = (lambda _ctx: actor) if isinstance(actor, Actor) else actor
    server = create_mcp_server(service, resolve, operations=operations)
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
    operations: Iterable[Operation] = OPERATIONS,
) -> MCPHttpApp:
    """The streamable-HTTP MCP endpoint over ``service``, for the REST server to mount.

    Each tool call's actor is read from ``scope["memvault.actor"]`` (:func:`actor_from_request`),
    which the REST server's authentication middleware sets. By default the endpoint is
    stateless (no session affinity, so any replica behind a load balancer can answer) and
    answers with plain JSON instead of SSE streams. ``transport_security`` enables the SDK's
    Host/Origin checks (off by default: the REST server's own middleware guards the endpoint).
    """
    server = create_mcp_server(service, actor, operations=operations)
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=json_response,
        stateless=stateless,
        security_settings=transport_security,
    )
    return MCPHttpApp(server, manager)
