"""The OpenAI Agents SDK on memvault: memory function tools and a session over memvault sessions.

Install with ``pip install 'memvault[openai-agents]'``::

    memory = AsyncMemory("agent.db")
    agent = Agent(name="dev", tools=memvault_function_tools(memory, agent_id="dev-1"))
    session = MemvaultSession("chat-1", agent_id="dev-1", store="agent.db")
    await Runner.run(agent, "hello", session=session)

* :func:`memvault_function_tools` gives the SDK ``FunctionTool`` objects for InitRunner's memory
  tools and, with ``self_editing=True``, the six MemGPT-style tools.
* :class:`MemvaultSession` implements the SDK's ``Session`` protocol (``get_items``,
  ``add_items``, ``pop_item``, ``clear_session``) over a memvault session store, so the history
  lives next to the memories (``memvault sessions list/show`` see it). Plain text turns are stored
  as ordinary chat messages; every other item (tool calls, tool outputs, reasoning) is stored
  whole as JSON, so the history the SDK reads back is the one it wrote.
* :class:`MemvaultMessageSession` implements the same protocol over the ``messages`` repository
  of an operational store (:mod:`memvault.persistence`): one
  :class:`~memvault.persistence.models.Message` per item on channel = session id, the item
  whole in its metadata.
"""

from __future__ import annotations

from typing import Any, cast

from memvault.agent.memory_tools import MemoryToolsConfig
from memvault.integrations._common import (
    MemoryToolCall,
    SessionLog,
    bridge,
    decode_foreign,
    encode_foreign,
    memory_tool_calls,
    require,
    session_store,
)
from memvault.memory import AsyncMemory
from memvault.models import ChatMessage
from memvault.persistence import models as ops_models
from memvault.persistence.backend import PersistenceBackend
from memvault.sessions import SessionStore

require("agents", "openai-agents")

from agents import FunctionTool, TResponseInputItem  # noqa: E402
from agents.memory import SessionABC  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402

__all__ = ["MemvaultMessageSession", "MemvaultSession", "memvault_function_tools"]

_KIND = "openai-agents"
_PLAIN_ROLES = frozenset({"user", "assistant", "system"})


def _function_tool(call: MemoryToolCall, agent_id: str) -> FunctionTool:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        # memvault's dispatcher parses the JSON and answers bad input with an "error: ..." text.
        return await call.call(agent_id, arguments)

    definition = call.definition
    return FunctionTool(
        name=definition.name,
        description=definition.description,
        params_json_schema=dict(definition.parameters),
        on_invoke_tool=invoke,
        # memvault's schemas have optional fields, which strict mode does not allow.
        strict_json_schema=False,
    )


def memvault_function_tools(
    memory: AsyncMemory,
    *,
    agent_id: str,
    memory_tools: bool = True,
    self_editing: bool = False,
    config: MemoryToolsConfig | None = None,
) -> list[FunctionTool]:
    """The SDK ``FunctionTool`` objects of memvault's memory tools for ``agent_id``.

    Raises:
        MemoryConfigError: ``memory`` is not an ``AsyncMemory``, or no tools are enabled.
    """
    calls = memory_tool_calls(
        memory, memory_tools=memory_tools, self_editing=self_editing, config=config
    )
    return [_function_tool(call, agent_id) for call in calls]


def _plain_text(item: dict[str, Any]) -> str | None:
    """The text of an assistant output message made only of text parts, else None."""
    content = item.get("content")
    if item.get("type") != "message" or not isinstance(content, list):
        return None
    texts = [part.get("text") for part in content if isinstance(part, dict)]
    if not texts or any(
        not isinstance(part, dict) or part.get("type") != "output_text" for part in content
    ):
        return None
    return "".join(t for t in texts if isinstance(t, str))


def item_to_message(item: TResponseInputItem) -> ChatMessage:
    """One SDK item as a stored chat message (see the module docstring)."""
    data = dict(cast(dict[str, Any], item))
    role, content = data.get("role"), data.get("content")
    if role in _PLAIN_ROLES and isinstance(content, str) and set(data) <= {"role", "content"}:
        return ChatMessage(role=role, content=content)
    if role == "assistant":
        text = _plain_text(data)
        if text:
            return ChatMessage(role="assistant", content=text)
    return encode_foreign(_KIND, data)


def message_to_item(message: ChatMessage) -> TResponseInputItem:
    """The SDK item a stored chat message stands for."""
    foreign = decode_foreign(_KIND, message)
    if foreign is not None:
        return cast(TResponseInputItem, foreign)
    if message.role == "tool":
        # A tool message another client saved has no call id to pair with: keep its text.
        return cast(TResponseInputItem, {"role": "user", "content": message.content})
    return cast(TResponseInputItem, {"role": message.role, "content": message.content})


class MemvaultSession(SessionABC):
    """The SDK's ``Session`` over one memvault session (``agent_id`` + ``session_id``).

    Args:
        session_id: the session (any memvault session id: 1-200 printable characters, no ``/``).
        agent_id: the memvault agent the session belongs to.
        store: a :class:`~memvault.sessions.SessionStore`, or the memvault storage URL the
            memories use (a SQLite path, ``postgresql://...``, ``memory://``).

    Raises:
        MemoryValidationError: a malformed ``session_id`` or ``agent_id``.
        MemoryConfigError: a URL sessions cannot be stored in.
    """

    def __init__(self, session_id: str, *, agent_id: str, store: SessionStore | str) -> None:
        self._log = SessionLog(session_store(store), agent_id, session_id)
        self.session_id = self._log.session_id
        self.session_settings = None

    @property
    def agent_id(self) -> str:
        """The memvault agent whose session this is."""
        return self._log.agent_id

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit``, only the latest ``limit`` items."""
        messages = await bridge().arun(self._log.read())
        if limit is not None:
            messages = messages[-limit:] if limit > 0 else []
        return [message_to_item(m) for m in messages]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the history (saved before this returns)."""
        if not items:
            return
        new = [item_to_message(i) for i in items]
        await bridge().arun(self._log.edit(lambda messages: messages.extend(new)))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None when the history is empty)."""

        def pop(messages: list[ChatMessage]) -> ChatMessage | None:
            return messages.pop() if messages else None

        message = await bridge().arun(self._log.edit(pop))
        return None if message is None else message_to_item(message)

    async def clear_session(self) -> None:
        """Delete the whole session."""
        await bridge().arun(self._log.edit(lambda messages: messages.clear()))

    async def close(self) -> None:
        """Close the session store (its connections live on the adapters' private loop)."""
        await bridge().arun(self._log.store.close())


_ITEM = "openai_agents_item"


class MemvaultMessageSession(SessionABC):
    """The SDK's ``Session`` over the ``messages`` repository of an operational store.

    Each item is one :class:`~memvault.persistence.models.Message` on channel ``session_id``:
    the item whole (JSON) in ``metadata``, its role (``assistant`` for output items without
    one) and its plain text in ``role`` / ``content``, so the history is readable by any client
    of the operational store. Calls run on the caller's event loop: open the backend there (or
    leave it unconnected; the first call connects it).

    Args:
        session_id: the session (the message channel).
        backend: the operational store (:func:`memvault.persistence.create_persistence`).
        agent_id: the agent whose history this is (stored on every message; also the sender).
    """

    def __init__(
        self, session_id: str, *, backend: PersistenceBackend, agent_id: str | None = None
    ) -> None:
        self.session_id = session_id
        self.session_settings = None
        self._backend = backend
        self._agent_id = agent_id

    async def _ops(self) -> PersistenceBackend:
        if not self._backend.is_connected:
            await self._backend.connect()
        return self._backend

    def _message(self, item: TResponseInputItem) -> ops_models.Message:
        data = dict(cast(dict[str, Any], item))
        role = data.get("role")
        content = data.get("content")
        text = content if isinstance(content, str) else (_plain_text(data) or "")
        return ops_models.Message(
            channel=self.session_id,
            agent_id=self._agent_id,
            sender=self._agent_id or str(role or "agent"),
            role=str(role) if isinstance(role, str) and role else str(data.get("type", "item")),
            content=text,
            metadata={_ITEM: data},
        )

    @staticmethod
    def _item(message: ops_models.Message) -> TResponseInputItem:
        data = message.metadata.get(_ITEM)
        if isinstance(data, dict):
            return cast(TResponseInputItem, data)
        return cast(TResponseInputItem, {"role": message.role, "content": message.content})

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first; with ``limit``, only the latest ``limit`` items."""
        if limit is not None and limit <= 0:
            return []
        ops = await self._ops()
        history = await ops.messages.get_history(self.session_id, limit=limit)
        return [self._item(m) for m in history]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the history, in order."""
        if not items:
            return
        ops = await self._ops()
        await ops.messages.save_many([self._message(i) for i in items])

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None when the history is empty)."""
        ops = await self._ops()
        message = await ops.messages.pop_latest(self.session_id)
        return None if message is None else self._item(message)

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        ops = await self._ops()
        await ops.messages.clear_channel(self.session_id)
