"""Where sessions are kept: the :class:`SessionStore` protocol and the in-process store.

A store keeps one row per ``(agent_id, session_id)``; saving a session again replaces its messages.
Every save also takes the next value of a store-wide counter (``seq``), and "latest" and "oldest"
follow that counter rather than wall-clock time, so two saves in the same microsecond (or on
machines with skewed clocks) still have a definite order.

Sessions are per agent: every method takes the agent id and only ever touches that agent's rows. A
session id is any 1-200 printable characters without ``/`` and without surrounding spaces (the
caller's own ids, e.g. ``ticket-4711``, work as they are); messages are
:class:`~memvault.models.ChatMessage` objects or OpenAI-style ``{"role", "content"}`` dicts. Bad
input (a blank agent id, a malformed session id or message) raises a one-line
:class:`~memvault.errors.MemoryValidationError` before any storage is touched.

The drivers (:mod:`memvault.conversation.session_sqlite`,
:mod:`memvault.conversation.session_postgres`) build on the validators here; the factory that picks
a driver for a URL lives in :mod:`memvault.conversation.session_factory`, so this module imports no
driver.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeAlias, runtime_checkable

from pydantic import ValidationError

from memvault._sidetables import Migration, SideSchema
from memvault.conversation.session_models import SessionRecord
from memvault.errors import MemoryConnectionError, MemoryRetrievalError, MemoryValidationError
from memvault.models import ChatMessage, validate_agent_id

MessageLike: TypeAlias = ChatMessage | Mapping[str, Any]
"""A chat message: a :class:`ChatMessage` or an OpenAI-style ``{"role", "content"}`` dict."""

__all__ = [
    "SESSION_TABLES",
    "InMemorySessionStore",
    "MessageLike",
    "SessionStore",
    "check_agent_id",
    "check_messages",
    "check_session_id",
]

MAX_SESSION_ID_CHARS = 200
LATEST = "latest"
"""Not a session id: REST, MCP and ``memvault api session`` read it as the most recent one."""
# Printable (no C0/C1 control characters), no "/" (a session id is one segment of a REST path).
_SESSION_ID_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f/]{1,200}$")

Clock = Callable[[], datetime]

# The ``sessions`` table of both drivers. Migration names are recorded in the database: never
# rename or edit one, append a new one (memvault._sidetables.SideSchema). Timestamps are INTEGER
# microseconds since the epoch (UTC) on SQLite, as in the memories table.
SESSION_TABLES = SideSchema(
    store="sessions",
    sqlite=(
        Migration(
            "sessions_0001_table",
            (
                "CREATE TABLE IF NOT EXISTS sessions ("
                " agent_id TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
                " message_count INTEGER NOT NULL, messages TEXT NOT NULL,"
                " PRIMARY KEY (agent_id, session_id)) WITHOUT ROWID",
                "CREATE INDEX IF NOT EXISTS idx_sessions_agent_seq ON sessions (agent_id, seq)",
            ),
        ),
    ),
    postgres=(
        Migration(
            "sessions_0001_table",
            (
                "CREATE TABLE IF NOT EXISTS sessions ("
                ' agent_id text COLLATE "C" NOT NULL, session_id text COLLATE "C" NOT NULL,'
                " seq bigint NOT NULL, created_at timestamptz NOT NULL,"
                " updated_at timestamptz NOT NULL, message_count integer NOT NULL,"
                " messages jsonb NOT NULL, PRIMARY KEY (agent_id, session_id))",
                "CREATE INDEX IF NOT EXISTS sessions_agent_seq ON sessions (agent_id, seq)",
            ),
        ),
    ),
    table="sessions",
    columns=frozenset(
        {"agent_id", "session_id", "seq", "created_at", "updated_at", "message_count", "messages"}
    ),
)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def check_agent_id(agent_id: str) -> str:
    """``agent_id`` stripped, if it is a usable agent id.

    Raises:
        MemoryValidationError: blank, longer than 200 characters, or with control characters.
    """
    try:
        return validate_agent_id(agent_id)
    except ValueError as exc:
        raise MemoryValidationError(str(exc)) from None


def check_session_id(session_id: str) -> str:
    """``session_id`` if it is a session id: 1-200 printable characters, no ``/``, no
    leading or trailing whitespace, not ``latest`` (ids from
    :meth:`SessionManager.new_session_id`, a chat platform's thread id, ``ticket-4711`` ...
    all qualify).

    Raises:
        MemoryValidationError: anything else (one line).
    """
    if (
        not isinstance(session_id, str)
        or not _SESSION_ID_RE.match(session_id)
        or session_id != session_id.strip()
    ):
        shown = repr(session_id)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        msg = (
            f"malformed session id {shown}: expected 1-{MAX_SESSION_ID_CHARS} printable "
            "characters, without '/' or leading/trailing spaces"
        )
        raise MemoryValidationError(msg)
    if session_id == LATEST:
        msg = f"malformed session id {LATEST!r}: reserved, it names an agent's most recent session"
        raise MemoryValidationError(msg)
    return session_id


def check_limit(limit: int | None) -> int | None:
    """``limit`` if it is ``None`` or at least 1, else :class:`MemoryValidationError`."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        msg = f"limit must be a positive integer, got {limit!r}"
        raise MemoryValidationError(msg)
    return limit


def check_keep(keep: int) -> int:
    """``keep`` if it is at least 1: pruning never deletes every session of an agent."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        msg = f"keep must be a positive integer, got {keep!r}"
        raise MemoryValidationError(msg)
    return keep


def check_messages(messages: Sequence[MessageLike]) -> tuple[ChatMessage, ...]:
    """``messages`` as a tuple of :class:`ChatMessage`; dicts are converted.

    A dict is an OpenAI-style chat message: ``role`` (system, user, assistant or tool),
    ``content`` (a string) and optionally ``name``. Other keys (``tool_calls``,
    ``tool_call_id``) are refused rather than silently dropped: a resumed history without
    them would not be the conversation that was saved.

    Raises:
        MemoryValidationError: ``messages`` is not a list of messages, or an item is neither a
            :class:`ChatMessage` nor a valid message dict (one line, naming the item).
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        msg = f"session messages must be a list of messages, got {type(messages).__name__}"
        raise MemoryValidationError(msg)
    return tuple(_message(i, item) for i, item in enumerate(messages))


def _message(index: int, item: object) -> ChatMessage:
    if isinstance(item, ChatMessage):
        return item
    if not isinstance(item, Mapping):
        msg = (
            f"session message {index} must be a ChatMessage or a "
            f'{{"role", "content"}} dict, got {type(item).__name__}'
        )
        raise MemoryValidationError(msg)
    try:
        return ChatMessage.model_validate(dict(item))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "message"
        msg = f"session message {index}: '{where}': {error['msg']}"
        if error["type"] == "extra_forbidden":
            msg += " (a session message keeps role, content and name only)"
        raise MemoryValidationError(msg) from None


def messages_to_json(messages: Sequence[ChatMessage]) -> str:
    """The JSON text a store keeps for a message history."""
    return json.dumps(
        [m.model_dump(mode="json", exclude_none=True) for m in messages], ensure_ascii=False
    )


def messages_from_json(data: str | builtins.list[Any], where: str) -> tuple[ChatMessage, ...]:
    """Parse a stored message history (JSON text or the already decoded list).

    Raises:
        MemoryRetrievalError: the stored value is not a list of chat messages.
    """
    try:
        items = json.loads(data) if isinstance(data, str) else data
        if not isinstance(items, list):
            msg = f"expected a JSON array, got {type(items).__name__}"
            raise ValueError(msg)
        return tuple(ChatMessage.model_validate(item) for item in items)
    except ValueError as exc:
        # pydantic's ValidationError and json's JSONDecodeError are both ValueErrors.
        msg = f"session {where} holds an unreadable message history: {exc}"
        raise MemoryRetrievalError(msg) from None


@runtime_checkable
class SessionStore(Protocol):
    """Storage of conversation sessions, one row per ``(agent_id, session_id)``.

    Read methods raise :class:`~memvault.errors.MemoryRetrievalError` and write methods
    :class:`~memvault.errors.MemoryStoreError` when storage fails;
    :class:`~memvault.errors.MemoryConnectionError` when the store cannot be opened or was closed.
    """

    @property
    def location(self) -> str:
        """Where the sessions live (a path or a URL without password)."""
        ...

    async def save(
        self, agent_id: str, session_id: str, messages: Sequence[MessageLike]
    ) -> SessionRecord:
        """Create or replace a session's message history; it becomes the agent's latest."""
        ...

    async def latest(self, agent_id: str) -> SessionRecord | None:
        """The agent's most recently saved session, or ``None`` if it has none."""
        ...

    async def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        """One session of the agent, or ``None`` (also when it belongs to another agent)."""
        ...

    async def list(
        self, agent_id: str, *, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first (at most ``limit``)."""
        ...

    async def delete(self, agent_id: str, session_id: str) -> bool:
        """Delete one session; ``False`` if the agent has no such session."""
        ...

    async def clear(self, agent_id: str) -> int:
        """Delete every session of the agent; returns how many were deleted."""
        ...

    async def prune(self, agent_id: str, keep: int) -> int:
        """Delete all but the agent's ``keep`` most recent sessions; returns how many went."""
        ...

    async def close(self) -> None:
        """Release connections; later calls raise :class:`MemoryConnectionError`."""
        ...


@dataclass(slots=True)
class _Row:
    record: SessionRecord
    seq: int


class InMemorySessionStore:
    """Sessions in a dict of this process (``memory://``): gone when the process ends."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or _utc_now
        self._rows: dict[tuple[str, str], _Row] = {}
        self._seq = 0
        self._closed = False

    @property
    def location(self) -> str:
        """Always ``memory://``."""
        return "memory://"

    def _check_open(self) -> None:
        if self._closed:
            msg = "session store memory:// is closed"
            raise MemoryConnectionError(msg)

    def _agent_rows(self, agent_id: str) -> builtins.list[_Row]:
        rows = [row for (agent, _), row in self._rows.items() if agent == agent_id]
        return sorted(rows, key=lambda r: r.seq, reverse=True)

    async def save(
        self, agent_id: str, session_id: str, messages: Sequence[MessageLike]
    ) -> SessionRecord:
        """Create or replace a session's message history; it becomes the agent's latest."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        items = check_messages(messages)
        self._check_open()
        now = self._clock()
        old = self._rows.get((agent, sid))
        record = SessionRecord(
            session_id=sid,
            agent_id=agent,
            created_at=old.record.created_at if old is not None else now,
            updated_at=now,
            messages=items,
            message_count=len(items),
        )
        self._seq += 1
        self._rows[(agent, sid)] = _Row(record, self._seq)
        return record

    async def latest(self, agent_id: str) -> SessionRecord | None:
        """The agent's most recently saved session, or ``None`` if it has none."""
        agent = check_agent_id(agent_id)
        self._check_open()
        rows = self._agent_rows(agent)
        return rows[0].record if rows else None

    async def get(self, agent_id: str, session_id: str) -> SessionRecord | None:
        """One session of the agent, or ``None`` (also when it belongs to another agent)."""
        key = (check_agent_id(agent_id), check_session_id(session_id))
        self._check_open()
        row = self._rows.get(key)
        return row.record if row is not None else None

    async def list(
        self, agent_id: str, *, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first (at most ``limit``)."""
        agent = check_agent_id(agent_id)
        check_limit(limit)
        self._check_open()
        return [row.record for row in self._agent_rows(agent)[:limit]]

    async def delete(self, agent_id: str, session_id: str) -> bool:
        """Delete one session; ``False`` if the agent has no such session."""
        key = (check_agent_id(agent_id), check_session_id(session_id))
        self._check_open()
        return self._rows.pop(key, None) is not None

    async def clear(self, agent_id: str) -> int:
        """Delete every session of the agent; returns how many were deleted."""
        agent = check_agent_id(agent_id)
        self._check_open()
        rows = self._agent_rows(agent)
        for row in rows:
            del self._rows[(agent, row.record.session_id)]
        return len(rows)

    async def prune(self, agent_id: str, keep: int) -> int:
        """Delete all but the agent's ``keep`` most recent sessions; returns how many went."""
        agent = check_agent_id(agent_id)
        check_keep(keep)
        self._check_open()
        doomed = self._agent_rows(agent)[keep:]
        for row in doomed:
            del self._rows[(agent, row.record.session_id)]
        return len(doomed)

    async def close(self) -> None:
        """Forget every session; later calls raise :class:`MemoryConnectionError`."""
        self._closed = True
        self._rows.clear()
