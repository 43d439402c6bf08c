"""pydantic-ai on memvault: a toolset of memory tools and instructions that inject memories.

Install with ``pip install 'memvault[pydantic-ai]'`` (``pydantic-ai-slim``: no model SDKs)::

    memory = AsyncMemory("agent.db")
    agent = Agent(
        model,
        toolsets=[memvault_toolset(memory, agent_id="dev-1", self_editing=True)],
        instructions=memvault_instructions(memory, agent_id="dev-1"),
    )

* :func:`memvault_toolset` is a ``FunctionToolset`` of InitRunner's memory tools (``remember``,
  ``recall``, ``list_memories``, ``learn_procedure``, ``record_episode``) and, with
  ``self_editing=True``, the six MemGPT-style tools (``core_memory_read/write``,
  ``archival_memory_search/write``, ``recall_memory_read/write``).
* :func:`memvault_instructions` is a dynamic instructions function: on every model request it
  puts the agent's learned procedures and the memories relevant to the run's prompt into the
  instructions (context injection, within a token budget).

``agent_id`` is a string, or a function of the run context (``lambda ctx: ctx.deps.user_id``) so
one agent can serve many users. The memory must be an :class:`~memvault.AsyncMemory` opened on
the event loop the agent runs on.

* :func:`save_message_history` / :func:`load_message_history` keep a run's messages
  (``result.new_messages()``) on a channel of an operational store's ``messages`` repository
  (:mod:`memvault.persistence`), one message each, lossless through pydantic-ai's
  ``ModelMessagesTypeAdapter``; pass what :func:`load_message_history` returns as the next
  run's ``message_history=``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from memvault.agent.memory_tools import MemoryToolsConfig
from memvault.errors import MemoryConfigError
from memvault.integrations._common import MemoryToolCall, memory_tool_calls, require
from memvault.memory import AsyncMemory
from memvault.persistence import models as ops_models
from memvault.persistence.backend import PersistenceBackend

require("pydantic_ai", "pydantic-ai")

from pydantic_ai import RunContext, Tool  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

__all__ = [
    "AgentIdSource",
    "load_message_history",
    "memvault_instructions",
    "memvault_toolset",
    "save_message_history",
]

AgentIdSource: TypeAlias = str | Callable[[RunContext[Any]], str]
"""The memvault agent of a run: fixed, or computed from the run context (e.g. its deps)."""


def _agent(source: AgentIdSource, ctx: RunContext[Any]) -> str:
    return source if isinstance(source, str) else source(ctx)


def _tool(call: MemoryToolCall, source: AgentIdSource) -> Tool[Any]:
    async def run(ctx: RunContext[Any], **arguments: Any) -> str:
        return await call.call(_agent(source, ctx), arguments)

    definition = call.definition
    return Tool.from_schema(
        run,
        name=definition.name,
        description=definition.description,
        json_schema=dict(definition.parameters),
        takes_ctx=True,
    )


def memvault_toolset(
    memory: AsyncMemory,
    *,
    agent_id: AgentIdSource,
    memory_tools: bool = True,
    self_editing: bool = False,
    config: MemoryToolsConfig | None = None,
) -> FunctionToolset[Any]:
    """A pydantic-ai toolset of memvault's memory tools for ``agent_id``.

    Tool results are the strings memvault's tools return; invalid arguments come back to the
    model as an ``error: ...`` result it can correct, never as an exception.

    Raises:
        MemoryConfigError: ``memory`` is not an ``AsyncMemory``, or no tools are enabled.
    """
    if isinstance(agent_id, str) and not agent_id.strip():
        msg = "agent_id is empty"
        raise MemoryConfigError(msg)
    calls = memory_tool_calls(
        memory, memory_tools=memory_tools, self_editing=self_editing, config=config
    )
    return FunctionToolset([_tool(call, agent_id) for call in calls])


def memvault_instructions(
    memory: AsyncMemory,
    *,
    agent_id: AgentIdSource,
    token_budget: int = 800,
    procedures: bool = True,
    context_kwargs: Mapping[str, Any] | None = None,
) -> Callable[[RunContext[Any]], Awaitable[str]]:
    """A dynamic instructions function for ``Agent(instructions=...)``.

    It returns the agent's ``## Learned Procedures and Policies`` section (when
    ``procedures``) followed by the memories relevant to the run's prompt, packed into
    ``token_budget`` tokens by :meth:`AsyncMemory.context` (``context_kwargs`` are passed on,
    e.g. ``{"categories": ["semantic"]}``). Nothing relevant gives an empty string, which
    pydantic-ai leaves out.
    """
    tools = memory.memory_tools()
    extra = dict(context_kwargs or {})

    async def instructions(ctx: RunContext[Any]) -> str:
        agent = _agent(agent_id, ctx)
        parts: list[str] = []
        if procedures:
            section = await tools.procedures_section(agent)
            if section:
                parts.append(section)
        prompt = ctx.prompt if isinstance(ctx.prompt, str) else None
        if prompt and prompt.strip():
            context = await memory.context(
                prompt, agent_id=agent, token_budget=token_budget, **extra
            )
            if context.text:
                parts.append(context.text)
        return "\n\n".join(parts)

    return instructions


_MESSAGE = "pydantic_ai_message"


def _text(message: ModelMessage) -> str:
    texts = [
        part.content
        for part in message.parts
        if part.part_kind in ("text", "user-prompt") and isinstance(part.content, str)
    ]
    return "\n".join(texts)


async def _connected(backend: PersistenceBackend) -> PersistenceBackend:
    if not backend.is_connected:
        await backend.connect()
    return backend


async def save_message_history(
    backend: PersistenceBackend,
    channel: str,
    messages: Sequence[ModelMessage],
    *,
    agent_id: str | None = None,
) -> int:
    """Append ``messages`` (e.g. ``result.new_messages()``) to ``channel``; how many.

    Each becomes one :class:`~memvault.persistence.models.Message`: role ``request`` or
    ``response``, its text parts as ``content``, the message whole (pydantic-ai's JSON form) in
    ``metadata``. The backend is connected if it is not yet.
    """
    if not messages:
        return 0
    encoded = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    records = [
        ops_models.Message(
            channel=channel,
            agent_id=agent_id,
            sender=agent_id or ("user" if message.kind == "request" else "model"),
            role=message.kind,
            content=_text(message),
            metadata={_MESSAGE: data},
        )
        for message, data in zip(messages, encoded, strict=True)
    ]
    ops = await _connected(backend)
    return await ops.messages.save_many(records)


async def load_message_history(
    backend: PersistenceBackend, channel: str, *, limit: int | None = None
) -> list[ModelMessage]:
    """The pydantic-ai messages saved on ``channel``, oldest first (the latest ``limit``).

    Messages on the channel that :func:`save_message_history` did not write are skipped. Note
    that a ``limit`` can cut a tool call from its result; give whole runs to the model.
    """
    ops = await _connected(backend)
    history = await ops.messages.get_history(channel, limit=limit)
    payload = [m.metadata[_MESSAGE] for m in history if isinstance(m.metadata.get(_MESSAGE), dict)]
    return list(ModelMessagesTypeAdapter.validate_python(payload))
