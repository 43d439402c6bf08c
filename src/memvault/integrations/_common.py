"""Plumbing the adapters share: the framework check, memory tools as plain callables, a private
event loop for sync callers of async stores, and lossless storage of framework messages.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from memvault.agent.memory_tools import MemoryToolsConfig
from memvault.conversation.session_store import check_agent_id, check_session_id
from memvault.errors import MemoryConfigError
from memvault.memory import AsyncMemory
from memvault.models import ChatMessage, ToolDefinition
from memvault.sessions import SessionStore, open_session_store

__all__ = [
    "LoopThread",
    "MemoryToolCall",
    "SessionLog",
    "bridge",
    "decode_foreign",
    "encode_foreign",
    "memory_tool_calls",
    "require",
    "session_store",
]

T = TypeVar("T")


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise a one-line :class:`MemoryConfigError` naming the extra.

    Raises:
        MemoryConfigError: the framework is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        msg = f"{module} is not installed: pip install 'memvault[{extra}]' ({exc})"
        raise MemoryConfigError(msg) from None


@dataclass(frozen=True)
class MemoryToolCall:
    """One memvault tool as a framework sees it: a definition and a coroutine that runs it.

    ``call(agent_id, arguments)`` (arguments as the model's JSON text or a decoded mapping)
    returns the tool's text result; bad arguments come back as an
    ``error: ...`` string (memvault's dispatcher), never as an exception, so the model can fix
    its call.
    """

    definition: ToolDefinition
    call: Callable[[str, str | Mapping[str, Any]], Awaitable[str]]


def memory_tool_calls(
    memory: AsyncMemory,
    *,
    memory_tools: bool = True,
    self_editing: bool = False,
    config: MemoryToolsConfig | None = None,
) -> list[MemoryToolCall]:
    """The InitRunner memory tools (``remember``, ``recall``, ``list_memories``,
    ``learn_procedure``, ``record_episode``) and, with ``self_editing``, the six MemGPT-style
    tools of the self-editing strategy, bound to ``memory``.

    Raises:
        MemoryConfigError: ``memory`` is not an :class:`~memvault.AsyncMemory`, or no tool is
            asked for.
    """
    if not isinstance(memory, AsyncMemory):
        msg = (
            f"the adapter needs an AsyncMemory (got {type(memory).__name__}); "
            "open one with memvault.AsyncMemory(...)"
        )
        raise MemoryConfigError(msg)
    calls: list[MemoryToolCall] = []
    if memory_tools:
        tools = memory.memory_tools(config)
        for definition in tools.get_tool_definitions():
            calls.append(MemoryToolCall(definition, _bound(tools.handle_tool_call, definition)))
    if self_editing:
        strategy = memory.injection_strategy("self_editing")
        for definition in strategy.get_tool_definitions():
            calls.append(MemoryToolCall(definition, _bound(strategy.handle_tool_call, definition)))
    if not calls:
        msg = "no memory tools asked for: enable memory_tools or self_editing"
        raise MemoryConfigError(msg)
    return calls


def _bound(
    handler: Callable[[str, str, Any], Awaitable[str]], definition: ToolDefinition
) -> Callable[[str, str | Mapping[str, Any]], Awaitable[str]]:
    name = definition.name

    async def call(agent_id: str, arguments: str | Mapping[str, Any]) -> str:
        # Whatever the framework did with the arguments, memvault's dispatcher validates them
        # against the tool's schema: one rule set, whichever framework sent the call.
        return await handler(
            agent_id, name, arguments if isinstance(arguments, str) else dict(arguments)
        )

    return call


class LoopThread:
    """A private event loop on a daemon thread, so sync framework methods can call async stores.

    Everything an adapter does with one store goes through the same loop, whichever thread or
    event loop the framework calls from.
    """

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and wait for its result (from any thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the private loop from another event loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def stop(self) -> None:
        """Stop the loop and its thread (idempotent)."""
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()


# A framework message that is more than role + text (a tool call, a tool result with its call
# id) is kept whole as JSON in a "tool" message whose name marks the framework. Plain text turns
# stay ordinary chat messages, so `memvault sessions show` and `memvault chat --resume` read them.
FOREIGN_PREFIX = "x-"


def encode_foreign(kind: str, payload: Mapping[str, Any]) -> ChatMessage:
    """``payload`` (a framework's own message as JSON) stored as a marked chat message."""
    return ChatMessage(
        role="tool",
        name=f"{FOREIGN_PREFIX}{kind}",
        content=json.dumps(payload, ensure_ascii=False, sort_keys=True),
    )


def decode_foreign(kind: str, message: ChatMessage) -> dict[str, Any] | None:
    """The framework message ``message`` holds, if :func:`encode_foreign` made it for ``kind``."""
    if message.role != "tool" or message.name != f"{FOREIGN_PREFIX}{kind}":
        return None
    value = json.loads(message.content)
    return value if isinstance(value, dict) else None


_BRIDGE: LoopThread | None = None
_BRIDGE_LOCK = threading.Lock()


def bridge() -> LoopThread:
    """The one private loop every session adapter runs its store calls on.

    A session store may hold connections bound to the loop that opened them (PostgreSQL's
    pool does), while frameworks call from whatever loop or thread they run on.
    """
    global _BRIDGE
    with _BRIDGE_LOCK:
        if _BRIDGE is None:
            _BRIDGE = LoopThread("memvault-integrations")
        return _BRIDGE


class SessionLog:
    """One saved conversation (agent + session id) edited as an append-only list.

    Every change reads the session, edits the list and saves it back, in one coroutine on the
    :func:`bridge` loop under a lock, so two writers of this object never lose each other's
    messages.
    """

    def __init__(self, store: SessionStore, agent_id: str, session_id: str) -> None:
        self.store = store
        self.agent_id = check_agent_id(agent_id)
        self.session_id = check_session_id(session_id)
        self._lock: asyncio.Lock | None = None

    async def _locked(self, edit: Callable[[list[ChatMessage]], T]) -> T:
        if self._lock is None:
            self._lock = asyncio.Lock()  # created on the bridge loop, its only user
        async with self._lock:
            record = await self.store.get(self.agent_id, self.session_id)
            messages = [] if record is None else list(record.messages)
            before = list(messages)
            result = edit(messages)
            if messages != before:
                if messages:
                    await self.store.save(self.agent_id, self.session_id, messages)
                elif record is not None:
                    await self.store.delete(self.agent_id, self.session_id)
            return result

    def edit(self, fn: Callable[[list[ChatMessage]], T]) -> Coroutine[Any, Any, T]:
        """A coroutine (to run on the bridge) that applies ``fn`` to the messages in place."""
        return self._locked(fn)

    async def read(self) -> list[ChatMessage]:
        """The saved messages, oldest first ([] when the session does not exist)."""
        record = await self.store.get(self.agent_id, self.session_id)
        return [] if record is None else list(record.messages)


def session_store(store: SessionStore | str) -> SessionStore:
    """``store`` itself, or the session store of a memvault storage URL."""
    return open_session_store(store) if isinstance(store, str) else store
