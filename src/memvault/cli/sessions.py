"""``memvault sessions list|show|clear``: inspect and delete an agent's saved conversations.

Sessions live next to the memories, in the store ``--db`` (or the configuration) names. The
commands open only the session table, never the memory store, so they do not load the
embedding model. Reading a SQLite store that does not exist yet shows no sessions instead of
creating the file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from memvault.cli._common import JsonOption, emit_json, load_cli_config, out, state
from memvault.config import COMPOSITE_URL
from memvault.conversation.session_store import LATEST, check_agent_id
from memvault.conversation.sessions import ConversationSessionStore
from memvault.conversation.sqlite import SQLiteConversationStore
from memvault.errors import MemoryConfigError, MemoryConnectionError, MemoryNotFoundError
from memvault.sessions import (
    SessionRecord,
    SessionStore,
    SQLiteSessionStore,
    check_session_id,
    open_session_store,
)

if TYPE_CHECKING:
    from memvault.conversation.models import ConversationStats

__all__ = ["conversation_stats_if_stored", "register", "sessions_app"]

T = TypeVar("T")

sessions_app = typer.Typer(
    name="sessions",
    help="Saved conversation sessions of an agent: list, show, clear; conversation store stats "
    "and embedding backfill.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

_PREVIEW_CHARS = 60

AgentOption = typer.Option(
    "default", "--agent", "-a", envvar="MEMVAULT_AGENT", help="Agent id whose sessions to use."
)


def _store_url() -> str:
    """The storage URL the memory commands would use (``--db``, environment, config file)."""
    cfg = load_cli_config()
    url = state.db or cfg.resolved_url()
    # Sessions are not routed by category: they live in the composite store's default child.
    return cfg.composite_default_url() if url.strip() == COMPOSITE_URL else url


def _with_store(fn: Callable[[SessionStore], Awaitable[T]], *, empty: T) -> T:
    """Run ``fn`` on the session store; ``empty`` if the SQLite file does not exist yet."""
    conv = load_cli_config().conversation
    # [conversation] session_storage = "messages": the sessions are the conversation store's.
    store = open_session_store(_store_url(), storage=conv.session_storage, prune=conv.prune)
    on_file = isinstance(store, SQLiteSessionStore) or (
        isinstance(store, ConversationSessionStore)
        and isinstance(store.conversations, SQLiteConversationStore)
    )
    if on_file and not Path(store.location).exists():
        return empty

    async def run() -> T:
        try:
            return await fn(store)
        finally:
            await store.close()

    return asyncio.run(run())


def _summary_json(record: SessionRecord) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        "agent_id": record.agent_id,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "message_count": record.message_count,
    }


def _record_json(record: SessionRecord) -> dict[str, Any]:
    data = _summary_json(record)
    data["messages"] = [m.model_dump(mode="json", exclude_none=True) for m in record.messages]
    return data


def _preview(record: SessionRecord) -> str:
    first = next((m.content for m in record.messages if m.role == "user"), "")
    text = " ".join(first.split())
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


@sessions_app.command("list")
def list_(
    agent: str = AgentOption,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=1000, help="How many sessions at most.")
    ] = 20,
    json_out: bool = JsonOption,
) -> None:
    """List an agent's sessions, most recently saved first."""
    agent_id = check_agent_id(agent)
    empty: list[SessionRecord] = []
    rows = _with_store(lambda s: s.list(agent_id, limit=limit), empty=empty)
    if json_out:
        emit_json([_summary_json(r) for r in rows])
        return
    if not rows:
        out.print("no sessions")
        return
    table = Table(show_lines=False)
    table.add_column("session", no_wrap=True)
    table.add_column("updated")
    table.add_column("messages", justify="right")
    table.add_column("first message")
    for r in rows:
        table.add_row(
            r.session_id,
            f"{r.updated_at:%Y-%m-%d %H:%M}",
            str(r.message_count),
            escape(_preview(r)),
        )
    out.print(table)


@sessions_app.command()
def show(
    session_id: Annotated[
        str,
        typer.Argument(help="The session's id (see 'sessions list'), or latest for the newest."),
    ],
    agent: str = AgentOption,
    json_out: bool = JsonOption,
) -> None:
    """Show one session's messages."""
    agent_id = check_agent_id(agent)
    if session_id == LATEST:
        record = _with_store(lambda s: s.latest(agent_id), empty=None)
        if record is None:
            msg = f"agent {agent_id!r} has no sessions"
            raise MemoryNotFoundError(msg)
    else:
        sid = check_session_id(session_id)
        record = _with_store(lambda s: s.get(agent_id, sid), empty=None)
        if record is None:
            msg = f"session {sid} not found for agent {agent_id!r}"
            raise MemoryNotFoundError(msg)
    if json_out:
        emit_json(_record_json(record))
        return
    out.print(
        f"[bold]{record.session_id}[/bold] {record.message_count} messages, "
        f"updated {record.updated_at:%Y-%m-%d %H:%M:%S}"
    )
    for m in record.messages:
        who = m.role if m.name is None else f"{m.role} ({m.name})"
        out.print(f"[bold]{escape(who)}[/bold]: " + escape(m.content))


@sessions_app.command()
def clear(
    agent: str = AgentOption,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Delete only this session.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", "-f", help="Do not ask.")] = False,
) -> None:
    """Delete an agent's sessions (or one of them)."""
    agent_id = check_agent_id(agent)
    sid = None if session is None else check_session_id(session)
    what = f"session {sid}" if sid is not None else f"all sessions of agent {agent_id!r}"
    if not force and not typer.confirm(f"Delete {what}?", default=False):
        out.print("aborted")
        raise typer.Exit(1)
    if sid is None:
        removed = _with_store(lambda s: s.clear(agent_id), empty=0)
        out.print(f"deleted {removed} sessions")
        return
    if not _with_store(lambda s: s.delete(agent_id, sid), empty=False):
        msg = f"session {sid} not found for agent {agent_id!r}"
        raise MemoryNotFoundError(msg)
    out.print(f"deleted session {sid}")


def _with_conversations(fn: Callable[[Any], Awaitable[T]], *, empty: T) -> T:
    """Run ``fn`` on the conversation store (issue 18); ``empty`` if the SQLite file is missing."""
    from memvault.conversation.factory import open_conversation_store

    url = _store_url()
    store = open_conversation_store(url)
    if isinstance(store, SQLiteConversationStore) and not Path(store.location).exists():
        return empty

    async def run() -> T:
        try:
            return await fn(store)
        finally:
            await store.close()

    return asyncio.run(run())


# The table every conversation store creates with its schema: its presence says one was used.
_MESSAGES_TABLE = "conversation_messages"


def _sqlite_has_conversations(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        # Read-only: looking must not create the file, its tables or a journal.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_MESSAGES_TABLE,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False  # not a database memvault can read: it holds no conversations either
    return row is not None


def _postgres_has_conversations(url: str) -> bool:
    import psycopg

    from memvault.backends.postgres._dsn import parse_dsn, scrub

    dsn = parse_dsn(url)
    # The schema the conversation store would use (PostgresConversationStore's rule).
    schema = dsn.schema or "public"
    try:
        with psycopg.connect(dsn.conninfo, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = %s AND tablename = %s",
                [schema, _MESSAGES_TABLE],
            ).fetchone()
    except psycopg.Error as exc:
        text = scrub(str(exc), dsn.secrets)
        msg = f"PostgreSQL store {dsn.location} unreachable: {text}"
        raise MemoryConnectionError(msg) from None
    return row is not None


def conversation_stats_if_stored() -> ConversationStats | None:
    """The counts of the conversation store beside the ``--db`` store, or None if it has none.

    For ``memvault stats``: only a store whose conversation tables exist already is opened
    (opening one would create them). A SQLite file or PostgreSQL schema without them, an
    in-process store (a new one would be empty), other kinds and a server URL give None.
    """
    from memvault.backends.factory import parse_url

    try:
        kind, target = parse_url(_store_url())
    except MemoryConfigError:
        return None  # a server URL: conversations are the server's business
    if kind == "sqlite":
        present = _sqlite_has_conversations(Path(target).expanduser())
    elif kind == "postgresql":
        present = _postgres_has_conversations(target)
    else:
        present = False
    if not present:
        return None

    async def counts(store: Any) -> ConversationStats | None:
        found: ConversationStats = await store.stats()
        return found

    return _with_conversations(counts, empty=None)


@sessions_app.command("stats")
def stats_(json_out: bool = JsonOption) -> None:
    """Counts of the conversation store: messages, compacted, summaries, not yet embedded."""
    from memvault.conversation.models import ConversationStats

    found = _with_conversations(lambda s: s.stats(), empty=ConversationStats())
    if json_out:
        emit_json(found.model_dump())
        return
    table = Table(show_header=False)
    for name, value in found.model_dump().items():
        table.add_row(name.replace("_", " "), str(value))
    out.print(table)


@sessions_app.command()
def backfill(
    json_out: bool = JsonOption,
    batch: Annotated[
        int, typer.Option("--batch", min=1, max=8192, help="Messages embedded per batch.")
    ] = 256,
) -> None:
    """Embed every stored conversation message that has no vector yet (with a progress bar)."""
    from memvault.backends.embedder import build_embedder
    from memvault.cli._common import progress_bar
    from memvault.config.conversation import EmbeddingQueueConfig
    from memvault.conversation.queue import EmbeddingQueue

    embedder = build_embedder(load_cli_config(), url=_store_url())
    config = EmbeddingQueueConfig(enabled=True, backfill_batch_size=batch)

    async def run(store: Any) -> int:
        with progress_bar() as bar:
            queue = EmbeddingQueue(store, embedder, config)
            try:
                return await queue.backfill(progress=partial(bar, "embedding"))
            finally:
                await queue.close()

    stored = _with_conversations(run, empty=0)
    if json_out:
        emit_json({"embedded": stored})
        return
    out.print(f"embedded {stored} messages")


def register(app: typer.Typer) -> None:
    """Attach ``memvault sessions ...`` to ``app``."""
    app.add_typer(sessions_app, name="sessions")
