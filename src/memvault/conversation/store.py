"""The conversation store: every turn appended as a message, never rewritten (seed 004).

One conversation per ``(agent_id, session_id)``, identified by a ``conversation_id``. A message
is appended the moment it is handed over (user or assistant turn alike) and is never deleted
by compaction: compaction marks it ``compacted_at`` and points it at the summary that replaced
it. Every read goes through a *view* (:data:`~memvault.conversation.models.MessageView`) that
honours :class:`~memvault.conversation.models.MessageMetadata`:

* ``agent``: what the model is sent. ``agent_visible`` messages in order; a compacted run of
  messages is replaced by its summary at the place of its first message; pinned messages are
  never compacted.
* ``user``: what a person is shown. ``user_visible`` messages, compacted ones included
  (compaction is about the model's context, not the transcript); summaries are hidden.
* ``all``: every row, for audits.

Messages a caller retracted (a session saved with a different history: see
:meth:`SQLConversationStore.replace_history`) are marked ``superseded_at`` and left out of the
``agent`` and ``user`` views.

The drivers (SQLite file, PostgreSQL schema, in-process SQLite) share the SQL below: each gives
:class:`SQLConversationStore` a way to run a function on a DB-API connection in a worker thread
(:meth:`SQLConversationStore._run`) and its SQL dialect. Timestamps are INTEGER microseconds
since the epoch (UTC) and flags are integers 0/1 on both databases, so one row mapping serves
both.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import math
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from memvault._ids import new_id
from memvault._sidetables import Migration, SideSchema, from_us, migrate_sqlite, to_us
from memvault.backends.sqlite._connect import immediate, translate_error
from memvault.conversation.models import (
    ConversationInfo,
    ConversationStats,
    MessageKind,
    MessageMetadata,
    MessageView,
    StoredMessage,
    estimate_tokens,
)
from memvault.conversation.session_store import (
    MessageLike,
    check_agent_id,
    check_keep,
    check_limit,
    check_messages,
    check_session_id,
)
from memvault.errors import MemoryConnectionError, MemoryError, MemoryValidationError
from memvault.models import ChatMessage
from memvault.protocols import Embedder

__all__ = [
    "CONVERSATION_TABLES",
    "SUMMARY_NAME",
    "InMemoryConversationStore",
    "MessageHit",
    "SQLConversationStore",
]

T = TypeVar("T")

SUMMARY_NAME = "conversation_summary"
"""The ``name`` of summary messages in the agent view (their role is ``user``: a summary must
survive a session save, which strips system messages, and a resume, which drops leading
assistant messages)."""

PruneMode = str  # "delete" | "archive" (checked where it is taken)

_WORD = re.compile(r"\w+", re.UNICODE)

M_COLS = (
    "message_id, conversation_id, position, role, content, name, kind, agent_visible,"
    " user_visible, focus_pinned, created_at, compacted_at, summary_id, pending_summary,"
    " tokens, superseded_at, embedded_at"
)
C_COLS = "conversation_id, agent_id, session_id, seq, created_at, updated_at, archived_at"


def _tables(ident: str, blob: str, conv_index: str, message_index: str) -> tuple[str, ...]:
    """The statements of the first migration: the engines differ in the id, blob and index names."""
    return (
        "CREATE TABLE IF NOT EXISTS conversations ("
        " conversation_id TEXT PRIMARY KEY, agent_id TEXT NOT NULL, session_id TEXT NOT NULL,"
        " seq BIGINT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,"
        " archived_at BIGINT, UNIQUE (agent_id, session_id))",
        f"CREATE INDEX IF NOT EXISTS {conv_index} ON conversations (agent_id, seq)",
        f"CREATE TABLE IF NOT EXISTS conversation_messages ( message_id {ident},"
        " conversation_id TEXT NOT NULL, position INTEGER NOT NULL, role TEXT NOT NULL,"
        " content TEXT NOT NULL, name TEXT, kind TEXT NOT NULL,"
        " agent_visible INTEGER NOT NULL, user_visible INTEGER NOT NULL,"
        " focus_pinned INTEGER NOT NULL, created_at BIGINT NOT NULL, compacted_at BIGINT,"
        " summary_id BIGINT, pending_summary INTEGER NOT NULL DEFAULT 0,"
        " tokens INTEGER NOT NULL, superseded_at BIGINT,"
        f" embedding {blob}, embedding_model TEXT, embedded_at BIGINT,"
        " UNIQUE (conversation_id, position))",
        # The backfill and the queue look for rows without a vector; a partial index keeps that
        # cheap however many rows are embedded already.
        f"CREATE INDEX IF NOT EXISTS {message_index} ON conversation_messages (message_id)"
        " WHERE embedded_at IS NULL",
    )


# The ``conversations`` and ``conversation_messages`` tables of every driver (the in-process one
# too). Migration names are recorded in the database: never rename or edit one, append a new one
# (memvault._sidetables.SideSchema).
CONVERSATION_TABLES = SideSchema(
    store="conversations",
    sqlite=(
        Migration(
            "conversations_0001_tables",
            _tables(
                "INTEGER PRIMARY KEY AUTOINCREMENT",
                "BLOB",
                "idx_conversations_agent_seq",
                "idx_conversation_messages_unembedded",
            ),
        ),
    ),
    postgres=(
        Migration(
            "conversations_0001_tables",
            _tables(
                "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
                "bytea",
                "conversations_agent_seq",
                "conversation_messages_unembedded",
            ),
        ),
    ),
    table="conversation_messages",
    columns=frozenset(
        {
            "message_id",
            "conversation_id",
            "position",
            "role",
            "content",
            "kind",
            "agent_visible",
            "user_visible",
            "focus_pinned",
            "compacted_at",
            "summary_id",
            "superseded_at",
            "embedding",
            "embedded_at",
        }
    ),
)


class Q(Protocol):
    """A query runner on one connection (inside a transaction for writes)."""

    def __call__(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        """Rows of ``sql`` (an empty list for statements without a result)."""
        ...

    @property
    def rowcount(self) -> int:
        """Rows touched by the last statement."""
        ...


@dataclass(frozen=True, slots=True)
class MessageHit:
    """A message a search found, with its fused score and which signals found it."""

    message: StoredMessage
    score: float
    lexical: bool
    dense: bool


@dataclass(frozen=True, slots=True)
class _Row:
    message: StoredMessage
    superseded: bool


def _flag(value: Any) -> bool:
    return bool(value)


def _message_row(row: Sequence[Any]) -> _Row:
    (mid, cid, pos, role, content, name, kind, av, uv, fp, created, compacted, summary_id) = row[
        :13
    ]
    pending, tokens, superseded, embedded = row[13:17]
    message = StoredMessage(
        message_id=int(mid),
        conversation_id=cid,
        position=int(pos),
        role=role,
        content=content,
        name=name,
        kind=kind,
        metadata=MessageMetadata(
            agent_visible=_flag(av), user_visible=_flag(uv), focus_pinned=_flag(fp)
        ),
        created_at=from_us(int(created)),
        compacted_at=None if compacted is None else from_us(int(compacted)),
        summary_id=None if summary_id is None else int(summary_id),
        pending_summary=_flag(pending),
        tokens=int(tokens),
        embedded=embedded is not None,
    )
    return _Row(message, superseded is not None)


def _conversation(row: Sequence[Any], count: int = 0) -> ConversationInfo:
    cid, agent, session, seq, created, updated, archived = row[:7]
    return ConversationInfo(
        conversation_id=cid,
        agent_id=agent,
        session_id=session,
        seq=int(seq),
        created_at=from_us(int(created)),
        updated_at=from_us(int(updated)),
        archived_at=None if archived is None else from_us(int(archived)),
        message_count=count,
    )


def view_of(rows: Sequence[_Row], view: MessageView) -> builtins.list[StoredMessage]:
    """The messages ``view`` reads, in conversation order (see the module docstring)."""
    if view == "all":
        return [r.message for r in rows]
    live = [r.message for r in rows if not r.superseded]
    if view == "user":
        return [m for m in live if m.kind == "message" and m.metadata.user_visible]
    summaries = {m.message_id: m for m in live if m.kind == "summary"}
    out: builtins.list[StoredMessage] = []
    placed: set[int] = set()
    for m in live:
        if m.kind == "summary":
            continue  # placed where the first message it replaced was
        if m.compacted_at is not None and m.summary_id is not None:
            summary = summaries.get(m.summary_id)
            if summary is not None and m.summary_id not in placed:
                placed.add(m.summary_id)
                if summary.metadata.agent_visible:
                    out.append(summary)
            if summary is not None:
                continue
        if m.metadata.agent_visible:
            out.append(m)
    return out


def _metadata_list(
    metadata: MessageMetadata | Sequence[MessageMetadata] | None, count: int
) -> builtins.list[MessageMetadata]:
    if metadata is None:
        return [MessageMetadata()] * count
    if isinstance(metadata, MessageMetadata):
        return [metadata] * count
    items = list(metadata)
    if len(items) != count or not all(isinstance(m, MessageMetadata) for m in items):
        msg = f"metadata must be one MessageMetadata or one per message ({count}), got {len(items)}"
        raise MemoryValidationError(msg)
    return items


def _ids(message_ids: Sequence[int]) -> builtins.list[int]:
    if isinstance(message_ids, str | bytes) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in message_ids
    ):
        msg = "message ids must be a list of positive integers"
        raise MemoryValidationError(msg)
    return list(dict.fromkeys(message_ids))


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


class SQLConversationStore(abc.ABC):
    """The conversation store over SQL; drivers supply :meth:`_run` and the dialect.

    All public methods validate their input first (one-line
    :class:`~memvault.errors.MemoryValidationError`) and raise
    :class:`~memvault.errors.MemoryStoreError` / :class:`~memvault.errors.MemoryRetrievalError`
    when storage fails, :class:`~memvault.errors.MemoryConnectionError` when it cannot be opened
    or was closed.
    """

    #: Statement that serialises an agent's appends (PostgreSQL: an advisory lock); ``{}`` is
    #: replaced by nothing on SQLite, whose write transactions are already exclusive.
    _agent_lock_sql: str | None = None

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or (lambda: datetime.now(UTC))

    # -- driver hooks ------------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def location(self) -> str:
        """Where the conversations live (a path or a URL without password)."""

    @abc.abstractmethod
    async def _run(self, fn: Callable[[Q], T], *, write: bool) -> T:
        """``fn`` on the connection (in one transaction when ``write``), in a worker thread."""

    @abc.abstractmethod
    def _sql(self, text: str) -> str:
        """``text`` with ``{c}``/``{m}`` table names and ``?`` placeholders of the dialect."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the connection; later calls raise :class:`MemoryConnectionError`."""

    # -- internals ---------------------------------------------------------------------------------

    def _now(self) -> int:
        return to_us(self._clock())

    def _conv_row(self, q: Q, agent: str, sid: str) -> tuple[Any, ...] | None:
        rows = q(
            self._sql(f"SELECT {C_COLS} FROM {{c}} WHERE agent_id = ? AND session_id = ?"),
            (agent, sid),
        )
        return rows[0] if rows else None

    def _touch(self, q: Q, agent: str, sid: str, now: int) -> str:
        """The conversation id of ``(agent, sid)``, created if needed; it becomes the latest."""
        if self._agent_lock_sql is not None:
            q(self._agent_lock_sql, ("memvault.conversations:" + agent,))
        ((seq,),) = q(
            self._sql("SELECT COALESCE(MAX(seq), 0) + 1 FROM {c} WHERE agent_id = ?"), (agent,)
        )
        row = self._conv_row(q, agent, sid)
        if row is None:
            cid = new_id()
            q(
                self._sql(f"INSERT INTO {{c}} ({C_COLS}) VALUES (?, ?, ?, ?, ?, ?, NULL)"),
                (cid, agent, sid, int(seq), now, now),
            )
            return cid
        q(
            self._sql(
                "UPDATE {c} SET seq = ?, updated_at = ?, archived_at = NULL"
                " WHERE conversation_id = ?"
            ),
            (int(seq), now, row[0]),
        )
        return str(row[0])

    def _insert(
        self,
        q: Q,
        cid: str,
        items: Sequence[tuple[ChatMessage, MessageMetadata, MessageKind]],
        now: int,
    ) -> builtins.list[StoredMessage]:
        ((top,),) = q(
            self._sql("SELECT COALESCE(MAX(position), 0) FROM {m} WHERE conversation_id = ?"),
            (cid,),
        )
        out: builtins.list[StoredMessage] = []
        sql = self._sql(
            "INSERT INTO {m} (conversation_id, position, role, content, name, kind,"
            " agent_visible, user_visible, focus_pinned, created_at, tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING message_id"
        )
        for offset, (message, meta, kind) in enumerate(items, start=1):
            tokens = estimate_tokens(message.content)
            ((mid,),) = q(
                sql,
                (
                    cid,
                    int(top) + offset,
                    message.role,
                    message.content,
                    message.name,
                    kind,
                    int(meta.agent_visible),
                    int(meta.user_visible),
                    int(meta.focus_pinned),
                    now,
                    tokens,
                ),
            )
            out.append(
                StoredMessage(
                    message_id=int(mid),
                    conversation_id=cid,
                    position=int(top) + offset,
                    role=message.role,
                    content=message.content,
                    name=message.name,
                    kind=kind,
                    metadata=meta,
                    created_at=from_us(now),
                    tokens=tokens,
                )
            )
        return out

    def _rows(self, q: Q, cid: str) -> builtins.list[_Row]:
        rows = q(
            self._sql(f"SELECT {M_COLS} FROM {{m}} WHERE conversation_id = ? ORDER BY position"),
            (cid,),
        )
        return [_message_row(r) for r in rows]

    # -- writing -----------------------------------------------------------------------------------

    async def append(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[MessageLike],
        *,
        metadata: MessageMetadata | Sequence[MessageMetadata] | None = None,
    ) -> builtins.list[StoredMessage]:
        """Append ``messages`` to the session's conversation (created on the first append).

        Each message is stored at once, in one transaction, and the conversation becomes the
        agent's latest. ``metadata`` is one :class:`MessageMetadata` for all or one per message
        (default: visible to both, not pinned). Returns the stored messages (with their ids).
        """
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        items = check_messages(messages)
        metas = _metadata_list(metadata, len(items))
        rows = [(m, meta, "message") for m, meta in zip(items, metas, strict=True)]

        def run(q: Q) -> builtins.list[StoredMessage]:
            now = self._now()
            cid = self._touch(q, agent, sid, now)
            return self._insert(q, cid, rows, now)  # type: ignore[arg-type]

        return await self._run(run, write=True)

    async def replace_history(
        self, agent_id: str, session_id: str, messages: Sequence[MessageLike]
    ) -> builtins.list[StoredMessage]:
        """Make the session's agent view read ``messages`` by appending, never rewriting.

        This is how a snapshot-style save (InitRunner's sessions: the whole history after every
        turn, possibly trimmed to a window) lands on an append-only log:

        * the history continues the stored one (the stored view ends with a prefix of
          ``messages``; a trimmed window starts inside the stored view): only the new tail is
          appended;
        * otherwise the caller changed the past: the stored messages after the common prefix
          are marked ``superseded_at`` (kept, out of the views) and the rest of ``messages`` is
          appended.

        Returns the agent view afterwards. The conversation becomes the agent's latest.
        """
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        items = check_messages(messages)

        def run(q: Q) -> builtins.list[StoredMessage]:
            now = self._now()
            cid = self._touch(q, agent, sid, now)
            current = view_of(self._rows(q, cid), "agent")
            chats = [m.chat() for m in current]
            overlap = 0
            for k in range(min(len(chats), len(items)), 0, -1):
                if chats[-k:] == list(items[:k]):
                    overlap = k
                    break
            if overlap or not chats:
                tail = items[overlap:]
            else:
                common = 0
                while common < min(len(chats), len(items)) and chats[common] == items[common]:
                    common += 1
                doomed = current[common:]
                for m in doomed:
                    ids = [m.message_id]
                    if m.kind == "summary":
                        # A retracted summary takes the messages it replaced with it.
                        ids += [
                            int(r[0])
                            for r in q(
                                self._sql("SELECT message_id FROM {m} WHERE summary_id = ?"),
                                (m.message_id,),
                            )
                        ]
                    for mid in ids:
                        q(
                            self._sql("UPDATE {m} SET superseded_at = ? WHERE message_id = ?"),
                            (now, mid),
                        )
                tail = items[common:]
            if tail:
                self._insert(q, cid, [(m, MessageMetadata(), "message") for m in tail], now)
            return view_of(self._rows(q, cid), "agent")

        return await self._run(run, write=True)

    async def update_metadata(
        self,
        agent_id: str,
        session_id: str,
        message_ids: Sequence[int],
        *,
        agent_visible: bool | None = None,
        user_visible: bool | None = None,
        focus_pinned: bool | None = None,
    ) -> int:
        """Change the metadata of messages of the session; returns how many rows changed."""
        ids = _ids(message_ids)
        sets = [
            (col, int(value))
            for col, value in (
                ("agent_visible", agent_visible),
                ("user_visible", user_visible),
                ("focus_pinned", focus_pinned),
            )
            if value is not None
        ]
        if not sets:
            return 0
        return await self._patch(agent_id, session_id, ids, sets)

    async def mark_pending(
        self, agent_id: str, session_id: str, message_ids: Sequence[int], pending: bool = True
    ) -> int:
        """Mark (or unmark) messages for a deferred summary (compaction's soft threshold)."""
        return await self._patch(
            agent_id, session_id, _ids(message_ids), [("pending_summary", int(pending))]
        )

    async def _patch(
        self, agent_id: str, session_id: str, ids: Sequence[int], sets: Sequence[tuple[str, int]]
    ) -> int:
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        if not ids:
            return 0
        assignment = ", ".join(f"{col} = ?" for col, _ in sets)

        def run(q: Q) -> int:
            row = self._conv_row(q, agent, sid)
            if row is None:
                return 0
            changed = 0
            for mid in ids:
                q(
                    self._sql(
                        f"UPDATE {{m}} SET {assignment}"
                        " WHERE conversation_id = ? AND message_id = ?"
                    ),
                    (*[v for _, v in sets], row[0], mid),
                )
                changed += q.rowcount
            return changed

        return await self._run(run, write=True)

    async def apply_summary(
        self, agent_id: str, session_id: str, message_ids: Sequence[int], summary: str
    ) -> StoredMessage:
        """Replace ``message_ids`` in the agent view by one summary message (never deleting them).

        The summary is appended (``kind="summary"``, role ``user``, name
        :data:`SUMMARY_NAME`, visible to the agent only); the replaced messages get
        ``compacted_at`` and ``summary_id`` and lose their ``pending_summary`` mark. Pinned
        messages, summaries and messages compacted already are refused.

        Raises:
            MemoryValidationError: no ids, an id not of this session, a pinned or compacted
                message, or an empty summary.
        """
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        ids = _ids(message_ids)
        if not ids:
            msg = "a summary must replace at least one message"
            raise MemoryValidationError(msg)
        if not isinstance(summary, str) or not summary.strip():
            msg = "a summary must be non-empty text"
            raise MemoryValidationError(msg)
        chat = ChatMessage(role="user", content=summary.strip(), name=SUMMARY_NAME)
        meta = MessageMetadata(agent_visible=True, user_visible=False, focus_pinned=False)

        def run(q: Q) -> StoredMessage:
            row = self._conv_row(q, agent, sid)
            if row is None:
                msg = f"agent {agent!r} has no conversation {sid!r}"
                raise MemoryValidationError(msg)
            cid = str(row[0])
            found = {r.message.message_id: r for r in self._rows(q, cid)}
            for mid in ids:
                item = found.get(mid)
                if item is None or item.superseded:
                    msg = f"message {mid} is not part of conversation {sid!r}"
                    raise MemoryValidationError(msg)
                m = item.message
                if m.kind == "summary" or m.compacted_at is not None or m.metadata.focus_pinned:
                    msg = f"message {mid} cannot be compacted (a summary, compacted or pinned)"
                    raise MemoryValidationError(msg)
            now = self._now()
            (stored,) = self._insert(q, cid, [(chat, meta, "summary")], now)
            for mid in ids:
                q(
                    self._sql(
                        "UPDATE {m} SET compacted_at = ?, summary_id = ?, pending_summary = 0"
                        " WHERE message_id = ?"
                    ),
                    (now, stored.message_id, mid),
                )
            return stored

        return await self._run(run, write=True)

    # -- reading -----------------------------------------------------------------------------------

    async def conversation(self, agent_id: str, session_id: str) -> ConversationInfo | None:
        """The session's conversation (``None`` if it has none); ``message_count`` counts its
        agent view."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)

        def run(q: Q) -> ConversationInfo | None:
            row = self._conv_row(q, agent, sid)
            if row is None:
                return None
            return _conversation(row, len(view_of(self._rows(q, str(row[0])), "agent")))

        return await self._run(run, write=False)

    async def conversations(
        self, agent_id: str, *, limit: int | None = None, include_archived: bool = False
    ) -> builtins.list[ConversationInfo]:
        """The agent's conversations, latest first (archived ones only when asked)."""
        agent = check_agent_id(agent_id)
        check_limit(limit)
        where = "" if include_archived else " AND archived_at IS NULL"

        def run(q: Q) -> builtins.list[ConversationInfo]:
            rows = q(
                self._sql(
                    f"SELECT {C_COLS} FROM {{c}} WHERE agent_id = ?{where} ORDER BY seq DESC"
                ),
                (agent,),
            )
            rows = rows[:limit] if limit is not None else rows
            return [_conversation(r, len(view_of(self._rows(q, str(r[0])), "agent"))) for r in rows]

        return await self._run(run, write=False)

    async def latest(self, agent_id: str) -> ConversationInfo | None:
        """The agent's conversation with the most recent append (archived ones aside)."""
        found = await self.conversations(agent_id, limit=1)
        return found[0] if found else None

    async def messages(
        self,
        agent_id: str,
        session_id: str,
        *,
        view: MessageView = "agent",
        limit: int | None = None,
    ) -> builtins.list[StoredMessage]:
        """The session's messages as ``view`` reads them (the last ``limit`` of them)."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)
        check_limit(limit)
        if view not in ("agent", "user", "all"):
            msg = f"view must be 'agent', 'user' or 'all', got {view!r}"
            raise MemoryValidationError(msg)

        def run(q: Q) -> builtins.list[StoredMessage]:
            row = self._conv_row(q, agent, sid)
            if row is None:
                return []
            found = view_of(self._rows(q, str(row[0])), view)
            return found[-limit:] if limit is not None else found

        return await self._run(run, write=False)

    async def history(
        self, agent_id: str, session_id: str, *, view: MessageView = "agent"
    ) -> builtins.list[ChatMessage]:
        """:meth:`messages` as plain chat messages (what goes into an LLM call)."""
        return [m.chat() for m in await self.messages(agent_id, session_id, view=view)]

    async def search(
        self,
        agent_id: str,
        text: str,
        *,
        session_id: str | None = None,
        limit: int = 10,
        embedder: Embedder | None = None,
        view: MessageView = "agent",
    ) -> builtins.list[MessageHit]:
        """Messages of the agent that match ``text``: lexically at once, densely once embedded.

        The lexical signal (shared words) sees a message the moment it is appended; the dense
        signal (cosine to ``embedder``'s query vector) sees it once the embedding queue stored
        its vector. Both rankings are fused by reciprocal rank (k = 60). Only messages ``view``
        reads are returned (compacted messages are searchable in the ``user`` and ``all``
        views: the transcript still holds them).
        """
        agent = check_agent_id(agent_id)
        sid = None if session_id is None else check_session_id(session_id)
        check_limit(limit)
        if not isinstance(text, str) or not text.strip():
            msg = "search text must be non-empty"
            raise MemoryValidationError(msg)
        query_words = _words(text)

        def run(q: Q) -> tuple[builtins.list[StoredMessage], dict[int, bytes]]:
            convs = q(
                self._sql(
                    "SELECT conversation_id FROM {c} WHERE agent_id = ?"
                    + ("" if sid is None else " AND session_id = ?")
                ),
                (agent,) if sid is None else (agent, sid),
            )
            visible: builtins.list[StoredMessage] = []
            vectors: dict[int, bytes] = {}
            for (cid,) in convs:
                visible += view_of(self._rows(q, str(cid)), view)
                if embedder is not None:
                    for mid, blob in q(
                        self._sql(
                            "SELECT message_id, embedding FROM {m} WHERE conversation_id = ?"
                            " AND embedding IS NOT NULL AND embedding_model = ?"
                        ),
                        (cid, embedder.model_id),
                    ):
                        vectors[int(mid)] = bytes(blob)
            return visible, vectors

        visible, vectors = await self._run(run, write=False)
        by_id = {m.message_id: m for m in visible}
        lexical = sorted(
            (
                (len(query_words & _words(m.content)) / math.sqrt(len(_words(m.content)) or 1), m)
                for m in visible
                if query_words & _words(m.content)
            ),
            key=lambda pair: (-pair[0], -pair[1].message_id),
        )
        dense: builtins.list[tuple[float, StoredMessage]] = []
        if embedder is not None and vectors:
            qv = np.asarray(await asyncio.to_thread(embedder.embed_query, text), dtype=np.float32)
            for mid, blob in vectors.items():
                if mid in by_id:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape == qv.shape:
                        dense.append((float(vec @ qv), by_id[mid]))
            dense.sort(key=lambda pair: (-pair[0], -pair[1].message_id))
        scores: dict[int, float] = {}
        lex_ids = {m.message_id for _, m in lexical}
        dense_ids = {m.message_id for _, m in dense}
        for ranking in (lexical, dense):
            for rank, (_, m) in enumerate(ranking):
                scores[m.message_id] = scores.get(m.message_id, 0.0) + 1.0 / (61 + rank)
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
        return [
            MessageHit(by_id[mid], score, mid in lex_ids, mid in dense_ids)
            for mid, score in ordered
        ]

    # -- deleting ----------------------------------------------------------------------------------

    async def delete(self, agent_id: str, session_id: str) -> bool:
        """Delete the session's conversation and its messages (an explicit request: the one
        way messages leave the store); ``False`` if there is none."""
        agent = check_agent_id(agent_id)
        sid = check_session_id(session_id)

        def run(q: Q) -> bool:
            row = self._conv_row(q, agent, sid)
            if row is None:
                return False
            self._drop(q, [str(row[0])])
            return True

        return await self._run(run, write=True)

    def _drop(self, q: Q, cids: Sequence[str]) -> None:
        for cid in cids:
            q(self._sql("DELETE FROM {m} WHERE conversation_id = ?"), (cid,))
            q(self._sql("DELETE FROM {c} WHERE conversation_id = ?"), (cid,))

    async def clear(self, agent_id: str) -> int:
        """Delete every conversation of the agent; returns how many went."""
        agent = check_agent_id(agent_id)

        def run(q: Q) -> int:
            cids = [
                str(r[0])
                for r in q(
                    self._sql("SELECT conversation_id FROM {c} WHERE agent_id = ?"), (agent,)
                )
            ]
            self._drop(q, cids)
            return len(cids)

        return await self._run(run, write=True)

    async def prune(self, agent_id: str, keep: int, *, mode: PruneMode = "delete") -> int:
        """All but the agent's ``keep`` latest conversations: deleted (``mode="delete"``) or
        archived (``"archive"``: kept with their messages, hidden from listings and resume).
        Returns how many were pruned."""
        agent = check_agent_id(agent_id)
        check_keep(keep)
        if mode not in ("delete", "archive"):
            msg = f"prune mode must be 'delete' or 'archive', got {mode!r}"
            raise MemoryValidationError(msg)

        def run(q: Q) -> int:
            rows = q(
                self._sql(
                    "SELECT conversation_id FROM {c} WHERE agent_id = ? AND archived_at IS NULL"
                    " ORDER BY seq DESC"
                ),
                (agent,),
            )
            doomed = [str(r[0]) for r in rows[keep:]]
            if mode == "delete":
                self._drop(q, doomed)
            else:
                now = self._now()
                for cid in doomed:
                    q(
                        self._sql("UPDATE {c} SET archived_at = ? WHERE conversation_id = ?"),
                        (now, cid),
                    )
            return len(doomed)

        return await self._run(run, write=True)

    # -- embeddings (the queue and the backfill) ---------------------------------------------------

    async def unembedded(self, *, limit: int, after_id: int = 0) -> builtins.list[tuple[int, str]]:
        """``(message_id, content)`` of rows without a vector, oldest first, past ``after_id``."""
        check_limit(limit)

        def run(q: Q) -> builtins.list[tuple[int, str]]:
            rows = q(
                self._sql(
                    "SELECT message_id, content FROM {m} WHERE embedded_at IS NULL"
                    " AND message_id > ? ORDER BY message_id LIMIT ?"
                ),
                (after_id, limit),
            )
            return [(int(mid), str(content)) for mid, content in rows]

        return await self._run(run, write=False)

    async def count_unembedded(self) -> int:
        """How many rows have no vector yet (the backfill's work)."""

        def run(q: Q) -> int:
            ((n,),) = q(self._sql("SELECT COUNT(*) FROM {m} WHERE embedded_at IS NULL"))
            return int(n)

        return await self._run(run, write=False)

    async def store_vectors(
        self, vectors: Sequence[tuple[int, np.ndarray[Any, Any]]], model_id: str
    ) -> int:
        """Store vectors of rows that have none yet; returns how many were stored.

        A row that has a vector already keeps it (``WHERE embedded_at IS NULL``), so a batch
        that was embedded twice (a crash between embedding and commit, then the backfill) is
        still stored once.
        """

        def run(q: Q) -> int:
            now = self._now()
            stored = 0
            sql = self._sql(
                "UPDATE {m} SET embedding = ?, embedding_model = ?, embedded_at = ?"
                " WHERE message_id = ? AND embedded_at IS NULL"
            )
            for mid, vec in vectors:
                q(sql, (np.asarray(vec, dtype=np.float32).tobytes(), model_id, now, mid))
                stored += q.rowcount
            return stored

        return await self._run(run, write=True)

    async def stats(self) -> ConversationStats:
        """Counts: conversations, messages, compacted, summaries, rows without a vector."""

        def run(q: Q) -> ConversationStats:
            ((convs,),) = q(self._sql("SELECT COUNT(*) FROM {c}"))
            ((msgs, compacted, summaries, unembedded),) = q(
                self._sql(
                    "SELECT COUNT(*),"
                    " COALESCE(SUM(CASE WHEN compacted_at IS NOT NULL THEN 1 ELSE 0 END), 0),"
                    " COALESCE(SUM(CASE WHEN kind = 'summary' THEN 1 ELSE 0 END), 0),"
                    " COALESCE(SUM(CASE WHEN embedded_at IS NULL THEN 1 ELSE 0 END), 0)"
                    " FROM {m}"
                )
            )
            return ConversationStats(
                conversations=int(convs),
                messages=int(msgs),
                compacted=int(compacted),
                summaries=int(summaries),
                unembedded=int(unembedded),
            )

        return await self._run(run, write=False)


# -- SQLite connections (file and in-process) ------------------------------------------------------


class _SQLiteQ:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.rowcount = 0

    def __call__(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        cur = self._conn.execute(sql, tuple(params))
        rows = cur.fetchall()
        self.rowcount = cur.rowcount
        return rows


def sqlite_run(conn: sqlite3.Connection, fn: Callable[[Q], T], *, write: bool) -> T:
    """``fn`` on a sqlite3 connection, inside ``BEGIN IMMEDIATE`` when ``write``."""
    q = _SQLiteQ(conn)
    if not write:
        return fn(q)
    with immediate(conn):
        return fn(q)


class SQLiteDialect(SQLConversationStore, abc.ABC):
    """SQLite's SQL: plain table names and ``?`` placeholders."""

    def _sql(self, text: str) -> str:
        return text.format(
            c="conversations",
            m="conversation_messages",
            ci="idx_conversations_agent_seq",
            mi="idx_conversation_messages_unembedded",
        )


class InMemoryConversationStore(SQLiteDialect):
    """Conversations in an in-process SQLite database (``memory://``): gone with the process."""

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__(clock=clock)
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            ":memory:", check_same_thread=False, isolation_level=None
        )
        self._lock = threading.Lock()
        migrate_sqlite(self._conn, CONVERSATION_TABLES.sqlite, self._now())

    @property
    def location(self) -> str:
        """Always ``memory://``."""
        return "memory://"

    def _call(self, fn: Callable[[Q], T], write: bool) -> T:
        with self._lock:
            if self._conn is None:
                msg = "conversation store memory:// is closed"
                raise MemoryConnectionError(msg)
            try:
                return sqlite_run(self._conn, fn, write=write)
            except MemoryError:
                raise
            except sqlite3.Error as exc:
                raise translate_error(
                    exc, write=write, what="conversation store", path=Path(":memory:")
                ) from exc

    async def _run(self, fn: Callable[[Q], T], *, write: bool) -> T:
        return await asyncio.to_thread(self._call, fn, write)

    async def close(self) -> None:
        """Forget every conversation; later calls raise :class:`MemoryConnectionError`."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
