"""The remote client: :class:`RemoteAsyncMemory` speaks the REST API of ``memvault serve``.

``AsyncMemory("http://host:8765", api_key=...)`` returns one, and ``Memory(...)`` with a server URL
runs one on its loop thread, so code moves from an embedded store to a server by changing the
URL: every method keeps its signature, its return type and its errors. A response's
``{"error": {"code", "message"}}`` becomes the memvault exception of that code (the table in
:mod:`memvault.server.errors`) with the server's message; a server that cannot be reached, times
out or answers something that is not memvault is a :class:`~memvault.errors.MemoryConnectionError`
naming the URL. httpx's own exceptions never escape.

What the server decides for itself is not sent: its retrieval settings (a search may name one of
its presets), its consolidation LLM and settings, its retention rules and consolidation
schedule; asking for them per call raises
:class:`~memvault.errors.MemoryCapabilityError`. Reads (``GET``) are retried twice on connection
failures and ``503``; writes are never retried.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from memvault._inputs import (
    CategoryLike,
    aware,
    check_update,
    conversation_turns,
    is_message,
    parse_category,
    publish_scope,
    query_filters,
    scope_metadata,
    server_url,
)
from memvault._inputs import categories as _categories
from memvault._inputs import item_request as _item_request
from memvault._inputs import load_export as _load_export
from memvault._inputs import store_request as _request
from memvault._version import __version__
from memvault.agent.capture import TurnRecord
from memvault.agent.working import WorkingMemory
from memvault.api.operations import Operation, operation_table
from memvault.config import MemvaultConfig
from memvault.consolidation import ConsolidationConfig, ConsolidationResult, ConsolidationStrategy
from memvault.errors import (
    EmbeddingModelChangedError,
    FineTuneCancelledError,
    FineTuneDependencyError,
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
from memvault.graph.forgetting import ForgettingReport
from memvault.graph.models import RecallMode
from memvault.injection.context import (
    CONTEXT_MIN_RELEVANCE,
    ContextInjectionConfig,
    _check_request,
)
from memvault.learning.engine import LearningEngine
from memvault.learning.models import (
    AgentProfile,
    ApprovalItem,
    EvolverReport,
    LearnReport,
    OrgFactKind,
    PruneReport,
    Seniority,
    TaskOutcome,
)
from memvault.memory import AsyncMemory, register_remote
from memvault.memory._async import WriteResult
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    ChatMessage,
    MemoryCategory,
    MemoryEntry,
    MemoryHistory,
    MemoryScope,
    MemoryStoreRequest,
    ScoreBreakdown,
    StoreStats,
)
from memvault.protocols import Embedder, LLMProvider, MemoryStore
from memvault.retrieval.filters import MemoryFilterStrategy
from memvault.retrieval.packing import MemoryContext
from memvault.retrieval.presets import RetrievalConfig, get_preset
from memvault.retrieval.tiered import RecallTier, TieredRecall
from memvault.server.errors import ERROR_TABLE
from memvault.validation import check_agent, check_id, model_error
from memvault.write.pipeline import WriteDecision
from memvault.write.retention import RetentionPolicy, RetentionReport

__all__ = ["API_KEY_ENV", "RemoteAsyncMemory"]

logger = logging.getLogger(__name__)

API_KEY_ENV = "MEMVAULT_API_KEY"
"""The environment variable a remote memory takes its API key from when none is given."""

DEFAULT_TIMEOUT = 30.0

# Wire limits of the REST bodies (memvault.server.schemas). Batches are cut to fit them; search
# and context limits above the wire maximum ask for the maximum (the best hits come first).
_BATCH_ITEMS = 1000
_BATCH_BYTES = 3 * 1024 * 1024  # under the server's default 4 MiB body limit
_SEARCH_LIMIT = 100
_CONTEXT_LIMIT = 100
_TOKEN_BUDGET = 200_000

_GET_RETRIES = 2
_BACKOFF_SECONDS = 0.1

Kind = Literal["read", "write"]

_BY_CODE: dict[str, type[MemoryError]] = {code: cls for cls, (code, _) in ERROR_TABLE.items()}
_BY_STATUS: dict[int, type[MemoryError]] = {
    400: MemoryValidationError,
    401: MemoryAuthenticationError,
    403: MemoryPermissionError,
    404: MemoryNotFoundError,
    405: MemoryCapabilityError,
    409: MemoryConflictError,
    413: MemoryValidationError,
    422: MemoryValidationError,
    501: MemoryCapabilityError,
    503: MemoryConnectionError,
}


def _kind(op: Operation) -> Kind:
    return "read" if op.kind == "read" else "write"


def _failure(kind: Kind, message: str) -> MemoryError:
    """The generic error of a failed read or write."""
    return MemoryRetrievalError(message) if kind == "read" else MemoryStoreError(message)


def _make(cls: type[MemoryError], message: str) -> MemoryError:
    if cls is EmbeddingModelChangedError:
        # The server keeps the model names in its log; the message names them too.
        return EmbeddingModelChangedError(
            message, stored_model="unknown", configured_model="unknown"
        )
    if cls is FineTuneDependencyError:
        # The install command is quoted in the server's message.
        return FineTuneDependencyError(message, missing="unknown", install_command="unknown")
    if cls is FineTuneCancelledError:
        return FineTuneCancelledError(message, run_id="unknown")
    return cls(message)


def _not_remote(what: str) -> MemoryCapabilityError:
    return MemoryCapabilityError(f"{what} is not available over HTTP")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _store_body(request: MemoryStoreRequest, position: int | None = None) -> dict[str, Any]:
    """The REST fields of one validated store request (``AddBody`` / ``AddManyItem``)."""
    meta = request.metadata
    unsent = [
        name
        for name, is_set in (
            ("valid_from", request.valid_from is not None),
            ("scope", request.scope is not MemoryScope.PRIVATE),
        )
        if is_set
    ]
    if unsent:
        where = "" if position is None else f"item {position}: "
        raise _not_remote(f"{where}setting {', '.join(unsent)} on a memory")
    if meta.confidence != 1.0 and position is None:
        raise _not_remote("setting confidence on a single add (use add_many)")
    body: dict[str, Any] = {
        "content": request.content,
        "category": request.category.value,
        "tags": list(meta.tags),
        "metadata": dict(meta.extra),
        "importance": meta.importance,
    }
    if meta.confidence != 1.0:
        body["confidence"] = meta.confidence
    optional = {
        "created_at": _iso(request.created_at),
        "expires_at": _iso(request.expires_at),
        "supersedes": request.supersedes,
        "label": meta.label,
        "source": meta.source,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return body


def _encode(body: Any) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        msg = f"the request cannot be sent as JSON: {exc}"
        raise MemoryValidationError(msg) from None


def _chunks(items: Sequence[dict[str, Any]], limit: int) -> Iterator[builtins.list[dict[str, Any]]]:
    """``items`` cut into batches of at most ``limit`` items and about ``_BATCH_BYTES`` bytes."""
    batch: builtins.list[dict[str, Any]] = []
    size = 0
    for item in items:
        n = len(_encode(item)) + 1
        if batch and (len(batch) >= limit or size + n > _BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


def _entry(data: Any) -> MemoryEntry:
    """A memory from its REST JSON (``MemoryEntry.to_json`` plus search scores)."""
    entry = MemoryEntry.from_json(data)
    update: dict[str, Any] = {}
    if data.get("relevance_score") is not None:
        update["relevance_score"] = float(data["relevance_score"])
    if data.get("score") is not None:
        update["score"] = ScoreBreakdown.model_validate(data["score"])
    return entry.model_copy(update=update) if update else entry


class RemoteAsyncMemory(AsyncMemory):
    """:class:`~memvault.AsyncMemory` over the REST API of a memvault server.

    ``RemoteAsyncMemory("http://host:8765", api_key="mvk_...")`` (or ``AsyncMemory(url, ...)``)
    talks to ``memvault serve``; the key (default ``$MEMVAULT_API_KEY``) decides the tenant and
    what the caller may do. ``timeout`` bounds every request, in seconds. ``embedder``,
    ``preset`` and ``track_access`` are accepted for compatibility and ignored (the server
    embeds, ranks and counts accesses with its own configuration); a ``backend`` cannot be
    combined with a server URL.

    The HTTP client opens on first use, on the running event loop, and ``close()`` (or
    ``async with``) releases it.

    Raises:
        MemoryConfigError: a malformed URL or API key, a ``backend``, an unknown preset name,
            or a timeout that is not a positive number.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        config: MemvaultConfig | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        embedder: Embedder | None = None,
        backend: MemoryStore | None = None,
        preset: str | RetrievalConfig | None = None,
        track_access: bool = True,
        llm: LLMProvider | None = None,
    ) -> None:
        if llm is not None:
            msg = "a remote memory uses the server's LLM: leave llm out"
            raise MemoryConfigError(msg)
        target = server_url(url, config)
        if target is None:
            msg = f"not a server URL: {url!r} (expected http(s)://host[:port])"
            raise MemoryConfigError(msg)
        self._url = _check_url(target)
        if backend is not None:
            msg = "a backend cannot be combined with a server URL (the server has its own store)"
            raise MemoryConfigError(msg)
        if isinstance(preset, str):
            try:
                get_preset(preset)
            except KeyError as exc:
                raise MemoryConfigError(str(exc.args[0])) from None
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not 0 < timeout < float("inf")
        ):
            msg = f"timeout must be a positive number of seconds, got {timeout!r}"
            raise MemoryConfigError(msg)
        self._timeout = float(timeout)
        self._api_key = _check_key(api_key if api_key is not None else os.environ.get(API_KEY_ENV))
        self._config = config if config is not None else MemvaultConfig()
        self._operations = operation_table()
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"RemoteAsyncMemory({self._url!r})"

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def backend(self) -> MemoryStore:
        """A remote memory has no local backend.

        Raises:
            MemoryCapabilityError: always.
        """
        msg = f"the memory at {self._url} is a server: it has no local backend"
        raise MemoryCapabilityError(msg)

    @property
    def location(self) -> str:
        """The server's URL."""
        return self._url

    @property
    def config(self) -> MemvaultConfig:
        """The client-side configuration (the one given, else the defaults)."""
        return self._config

    @property
    def retention(self) -> RetentionPolicy:
        """Retention rules are the server's configuration.

        Raises:
            MemoryCapabilityError: always.
        """
        raise _not_remote("reading the server's retention rules")

    async def _ready(self, *, settle: bool = True) -> MemoryStore:
        raise _not_remote("the local store")

    def _http(self) -> httpx.AsyncClient:
        """The HTTP client of the running loop (made on first use)."""
        if self._closed:
            msg = "this memory is closed"
            raise MemoryConnectionError(msg)
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            headers = {
                "Accept": "application/json",
                "User-Agent": f"memvault/{__version__}",
            }
            if self._api_key is not None:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._client = httpx.AsyncClient(
                base_url=self._url,
                headers=headers,
                timeout=self._timeout,
                follow_redirects=False,
            )
            self._client_loop = loop
        return self._client

    async def _call(
        self,
        method: str,
        path: str,
        *,
        kind: Kind,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Any:
        """Send one request; the decoded JSON of a success, else the mapped memvault error."""
        content = None if body is None else _encode(body)
        headers = None if content is None else {"Content-Type": "application/json"}
        query = None if params is None else {k: v for k, v in params.items() if v is not None}
        attempts = 1 + _GET_RETRIES if method == "GET" else 1
        client = self._http()
        for attempt in range(attempts):
            last = attempt + 1 == attempts
            try:
                resp = await client.request(
                    method, path, params=query, content=content, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if not last:
                    await asyncio.sleep(_BACKOFF_SECONDS * (attempt + 1))
                    continue
                reason = str(exc) or type(exc).__name__
                msg = f"cannot reach the memvault server at {self._url}: {reason}"
                raise MemoryConnectionError(msg) from None
            except httpx.TimeoutException:
                msg = f"the memvault server at {self._url} did not answer within {self._timeout:g}s"
                raise MemoryConnectionError(msg) from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                reason = str(exc) or type(exc).__name__
                msg = f"the request to the memvault server at {self._url} failed: {reason}"
                raise MemoryConnectionError(msg) from None
            if resp.status_code == 503 and not last and _code(resp) != "embedding_model_changed":
                await asyncio.sleep(_BACKOFF_SECONDS * (attempt + 1))
                continue
            break
        if resp.is_success:
            try:
                return resp.json()
            except ValueError:
                msg = (
                    f"{self._url} answered {method} {path} with a body that is not JSON: "
                    "is it a memvault server?"
                )
                raise MemoryConnectionError(msg) from None
        raise self._error(resp, kind)

    async def _send(self, operation: str | Operation, fields: Mapping[str, Any]) -> Any:
        """Call one declared operation on the server; the decoded JSON of its answer.

        The operation's declaration (:mod:`memvault.api.operations`) gives the method, the path
        and whether it reads or writes; its input model checks ``fields`` here with the
        server's own limits, so a bad value fails before anything is sent.
        """
        op = operation if isinstance(operation, Operation) else self._operations.get(operation)
        if op is None or op.http is None:
            name = operation.name if isinstance(operation, Operation) else operation
            msg = f"operation {name!r} is not offered over HTTP"
            raise MemoryCapabilityError(msg)
        try:
            request = op.parse(fields)
        except ValidationError as exc:
            raise model_error(exc) from None
        http = op.http
        in_path = http.path_params
        path = http.path.format(
            **{name: quote(str(getattr(request, name)), safe="") for name in in_path}
        )
        data = request.model_dump(mode="json", exclude=set(in_path), exclude_none=True)
        if http.has_body:
            return await self._call(http.method, path, kind=_kind(op), body=data)
        # A structured query parameter (metadata filters) travels as JSON text.
        params = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in data.items()}
        return await self._call(http.method, path, kind=_kind(op), params=params)

    async def call(self, operation: str | Operation, **fields: Any) -> Any:
        """Call any declared operation (by name, or its declaration) with its input fields.

        Returns the operation's JSON answer.

        The typed methods (:meth:`search`, :meth:`write`, ...) are the everyday API; this
        reaches every operation the server offers, including ones added after this client's
        methods were written (``await mem.call("count", agent_id="dev-1")``).

        Raises:
            MemoryCapabilityError: no such operation is offered over HTTP.
            MemoryValidationError: ``fields`` do not fit the operation's input.
        """
        return await self._send(operation, fields)

    def _error(self, resp: httpx.Response, kind: Kind) -> MemoryError:
        """The memvault error of an error response (by its code, else by its status)."""
        status = resp.status_code
        code, message = _code(resp), _message(resp)
        text = message or f"the memvault server at {self._url} answered HTTP {status}"
        cls = _BY_CODE.get(code) if code is not None and code != "internal_error" else None
        if cls is None:
            cls = _BY_STATUS.get(status)
        if cls is not None:
            return _make(cls, text)
        if 300 <= status < 400:
            where = resp.headers.get("location", "elsewhere")
            msg = f"the memvault server at {self._url} redirects to {where}: use that URL"
            return MemoryConnectionError(msg)
        if status == 500 and message is not None:
            return _failure(kind, f"{message} (memvault server at {self._url})")
        if status >= 500:
            msg = f"the memvault server at {self._url} is unavailable (HTTP {status})"
            return MemoryConnectionError(msg)
        return _failure(kind, text)

    @contextmanager
    def _decoding(self, kind: Kind) -> Iterator[None]:
        """Turn a response of an unexpected shape into a read/write error."""
        try:
            yield
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, MemoryError):
                raise
            msg = f"unexpected response from the memvault server at {self._url}: {exc}"
            raise _failure(kind, msg) from None

    # -- writes ---------------------------------------------------------------------------------

    async def write(
        self,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> WriteResult:
        """Store one memory and report what the write did (``POST /v1/memories``).

        The server sends its whole decision (kind, reason, duplicate_of, old_id, scores) and
        its advisories (``warnings``).
        """
        agent = check_agent(agent_id)
        request = _request(
            content,
            category=category,
            tags=tags,
            metadata=scope_metadata(
                metadata,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            ),
            created_at=created_at,
            expires_at=expires_at,
            supersedes=supersedes,
            label=label,
            source=source,
            importance=importance,
        )
        body = {"agent_id": agent, **_store_body(request)}
        if dedup is not None:
            body["dedup"] = bool(dedup)
        if admission:
            body["admission"] = True
        data = await self._send("store", body)
        with self._decoding("write"):
            mid = data["id"]
            decision = WriteDecision.model_validate(data["detail"])
            warnings = tuple(str(w) for w in data.get("warnings", ()))
            return WriteResult(None if mid is None else str(mid), decision, warnings=warnings)

    async def add_messages(
        self,
        messages: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str,
        infer: bool = False,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        dedup: bool | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[str]:
        """Remember a conversation on the server (``POST /v1/messages``); the ids stored.

        With ``infer=True`` the server extracts the facts with its own LLM (if it has one).
        """
        agent = check_agent(agent_id)
        conversation_turns(messages)  # the same checks and messages as an embedded store
        if isinstance(tags, str):
            msg = "tags must be a list of strings, not one string"
            raise MemoryValidationError(msg)
        sent = [
            m.model_dump(exclude_none=True) if isinstance(m, ChatMessage) else dict(m)
            for m in messages
        ]
        fields: dict[str, Any] = {
            "agent_id": agent,
            "messages": sent,
            "infer": bool(infer),
            "tags": list(tags),
            "metadata": dict(metadata or {}),
            "created_at": created_at,
            "dedup": dedup,
            "user_id": user_id,
            "session_id": session_id,
            "run_id": run_id,
            "namespace": namespace,
        }
        data = await self._send("store_messages", fields)
        with self._decoding("write"):
            return [str(i) for i in data["ids"]]

    async def add_many(
        self,
        items: Sequence[MemoryStoreRequest | Mapping[str, Any]],
        *,
        agent_id: str,
        dedup: bool | None = None,
    ) -> builtins.list[str]:
        """Store many memories, ids in input order (``POST /v1/memories/batch``).

        Every item is validated before anything is sent. The server stores each batch of up to
        1000 items in one transaction; a larger call is sent as several batches.
        """
        agent = check_agent(agent_id)
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            msg = "items must be a list of dicts or MemoryStoreRequest objects"
            raise MemoryValidationError(msg)
        if items and all(is_message(item) for item in items):
            return await self.add_messages(items, agent_id=agent, dedup=dedup)  # type: ignore[arg-type]
        bodies = [_store_body(_item_request(item, i), i) for i, item in enumerate(items)]
        ids: builtins.list[str] = []
        for batch in _chunks(bodies, _BATCH_ITEMS):
            body: dict[str, Any] = {"agent_id": agent, "items": batch}
            if dedup is not None:
                body["dedup"] = bool(dedup)
            data = await self._send("store_many", body)
            with self._decoding("write"):
                got = [str(i) for i in data["ids"]]
                if len(got) != len(batch):
                    msg = f"{len(got)} ids for {len(batch)} items"
                    raise ValueError(msg)
            ids.extend(got)
        return ids

    async def delete(self, memory_id: str, *, agent_id: str) -> bool:
        """Delete one memory; False if the agent has no memory with that id."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        try:
            await self._send("delete", {"memory_id": mid, "agent_id": agent})
        except MemoryNotFoundError:
            return False
        return True

    async def clear(self, *, agent_id: str, category: CategoryLike | None = None) -> int:
        """Delete all memories of the agent (or of one category); returns how many.

        The server allows it to ``admin`` keys only.
        """
        agent = check_agent(agent_id)
        cat = None if category is None else parse_category(category)
        params = {"agent_id": agent, "category": None if cat is None else cat.value}
        data = await self._send("clear", params)
        with self._decoding("write"):
            return int(data["deleted"])

    # -- retention and archive ------------------------------------------------------------------

    async def sweep(self, *, agent_id: str | None = None) -> RetentionReport:
        """Have the server enforce its retention rules now (``POST /v1/sweep``, admin)."""
        agent = None if agent_id is None else check_agent(agent_id)
        body = {} if agent is None else {"agent_id": agent}
        data = await self._send("sweep", body)
        with self._decoding("write"):
            return RetentionReport(
                expired={str(k): str(v) for k, v in data["expired"].items()},
                evicted={str(k): str(v) for k, v in data["evicted"].items()},
            )

    async def consolidate(
        self,
        *,
        agent_id: str,
        strategy: ConsolidationStrategy | str | None = None,
        llm: LLMProvider | None = None,
        dry_run: bool = False,
        config: ConsolidationConfig | None = None,
        min_age_days: float | None = None,
    ) -> ConsolidationResult:
        """Consolidate on the server, with its own LLM and settings (``POST /v1/consolidate``).

        ``min_age_days`` None: the server's ``consolidation.min_age_days``.

        Raises:
            MemoryCapabilityError: ``llm`` or ``config`` given (the server uses its own).
            MemoryValidationError: unknown strategy.
        """
        agent = check_agent(agent_id)
        body: dict[str, Any] = {"agent_id": agent, "dry_run": bool(dry_run)}
        if min_age_days is not None:
            body["min_age_days"] = float(min_age_days)
        if strategy is not None:  # None: the server's configured strategy
            try:
                body["strategy"] = ConsolidationStrategy(strategy).value
            except ValueError:
                names = ", ".join(s.value for s in ConsolidationStrategy)
                msg = f"unknown consolidation strategy {strategy!r} (choose from {names})"
                raise MemoryValidationError(msg) from None
        if llm is not None:
            raise _not_remote("choosing the consolidation LLM (the server uses its own)")
        if config is not None:
            raise _not_remote("a consolidation config (the server uses its own)")
        data = await self._send("consolidate", body)
        with self._decoding("write"):
            return ConsolidationResult.model_validate(data)

    async def consolidate_if_due(
        self,
        *,
        agent_id: str,
        session_ended: bool = False,
        strategy: ConsolidationStrategy | str = ConsolidationStrategy.SIMPLE,
        llm: LLMProvider | None = None,
    ) -> ConsolidationResult | None:
        """Scheduled consolidation is the server's job.

        Raises:
            MemoryCapabilityError: always (call :meth:`consolidate` to consolidate now).
        """
        raise _not_remote("scheduled consolidation (the server schedules it; use consolidate)")

    async def archived(
        self, *, agent_id: str, limit: int = 100, offset: int = 0
    ) -> builtins.list[ArchivedEntry]:
        """The agent's archived memories, newest first (``GET /v1/archive``)."""
        agent = check_agent(agent_id)
        params = {"agent_id": agent, "limit": limit, "offset": offset}
        data = await self._send("archived", params)
        with self._decoding("read"):
            return [ArchivedEntry.model_validate(row) for row in data["archived"]]

    async def archive(
        self, ids: Sequence[str], *, agent_id: str, reason: str = "archive"
    ) -> dict[str, str]:
        """Move memories to the archive (``POST /v1/archive``); original id -> archive id."""
        agent = check_agent(agent_id)
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            msg = "ids must be a list of memory ids"
            raise MemoryValidationError(msg)
        wanted = [check_id(i) for i in ids]
        if not wanted:
            return {}
        index: dict[str, str] = {}
        for start in range(0, len(wanted), 1000):
            body = {"agent_id": agent, "ids": wanted[start : start + 1000], "reason": reason}
            data = await self._send("archive", body)
            with self._decoding("write"):
                index.update({str(k): str(v) for k, v in data["index"].items()})
        return index

    async def restore(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """Bring an archived memory back under its original id.

        Raises:
            MemoryNotFoundError: the agent has no archived memory with that id.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        data = await self._send("restore", {"memory_id": mid, "agent_id": agent})
        with self._decoding("write"):
            return _entry(data)

    async def audit(
        self, *, agent_id: str | None = None, memory_id: str | None = None, limit: int = 100
    ) -> builtins.list[AuditRecord]:
        """The newest audit records (of one agent and/or memory), oldest first (admin)."""
        agent = None if agent_id is None else check_agent(agent_id)
        params = {"agent_id": agent, "memory_id": memory_id, "limit": limit}
        data = await self._send("audit", params)
        with self._decoding("read"):
            return [AuditRecord.model_validate(row) for row in data["records"]]

    # -- reads ----------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 10,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
        include_shared: bool = False,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        preset: str | RetrievalConfig | None = None,
        explain: bool = False,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> builtins.list[MemoryEntry]:
        """Hybrid search of the agent's memories on the server (``POST /v1/search``).

        The server returns at most 100 results per search (a larger ``limit`` gets the best 100).

        Raises:
            MemoryCapabilityError: ``preset`` is a ``RetrievalConfig`` object (name a preset).
        """
        agent = check_agent(agent_id)
        if not isinstance(query, str) or not query.strip():
            msg = "search query is empty"
            raise MemoryValidationError(msg)
        q = self._query(
            query,
            limit=limit,
            categories=categories,
            tags=tags,
            since=since,
            until=until,
            as_of=as_of,
            include_superseded=include_superseded,
            min_relevance=min_relevance,
        )
        query_filters(  # the embedded store's checks and messages, before anything is sent
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        if preset is not None and not isinstance(preset, str):
            raise _not_remote("a retrieval config object (name one of the server's presets)")
        body: dict[str, Any] = {
            "agent_id": agent,
            "query": query,
            "limit": min(q.limit, _SEARCH_LIMIT),
            "include_shared": bool(include_shared),
            "include_superseded": q.include_superseded,
            "min_relevance": q.min_relevance,
            "explain": bool(explain),
            "preset": preset,
            "filters": None if filters is None else dict(filters),
            "user_id": user_id,
            "session_id": session_id,
            "run_id": run_id,
            "namespace": namespace,
        }
        if q.categories is not None:
            body["categories"] = sorted(c.value for c in q.categories)
        if q.tags:
            body["tags"] = list(q.tags)
        asked = aware(asked_at, "asked_at")
        for name, value in (
            ("since", q.since),
            ("until", q.until),
            ("as_of", q.as_of),
            ("asked_at", asked),
        ):
            if value is not None:
                body[name] = value.isoformat()
        data = await self._send("search", body)
        with self._decoding("read"):
            return [_entry(row) for row in data["results"]]

    async def get(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """One memory of the agent.

        Raises:
            MemoryNotFoundError: no such id for this agent (another agent's id looks the same).
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        data = await self._send("get", {"memory_id": mid, "agent_id": agent})
        with self._decoding("read"):
            return _entry(data)

    async def update(
        self,
        memory_id: str,
        *,
        agent_id: str,
        content: str | None = None,
        category: CategoryLike | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        label: str | None = None,
        importance: float | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryEntry:
        """Store a new version of a memory on the server (``PATCH /v1/memories/{id}``)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        if isinstance(tags, str):
            msg = "tags must be a list of strings, not one string"
            raise MemoryValidationError(msg)
        check_update(content, category, tags, metadata, label, importance, expires_at)
        fields: dict[str, Any] = {
            "memory_id": mid,
            "agent_id": agent,
            "content": content,
            "category": None if category is None else parse_category(category).value,
            "tags": None if tags is None else list(tags),
            "metadata": None if metadata is None else dict(metadata),
            "label": label,
            "importance": importance,
            "expires_at": expires_at,
        }
        data = await self._send("update", fields)
        with self._decoding("write"):
            return _entry(data)

    async def history(self, memory_id: str, *, agent_id: str) -> MemoryHistory:
        """Every version of a memory with its audit (``GET /v1/memories/{id}/history``)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        data = await self._send("history", {"memory_id": mid, "agent_id": agent})
        with self._decoding("read"):
            return MemoryHistory(
                memory_id=str(data["memory_id"]),
                versions=tuple(_entry(v) for v in data["versions"]),
                audit=tuple(AuditRecord.model_validate(r) for r in data["audit"]),
            )

    async def count(
        self,
        *,
        agent_id: str,
        category: CategoryLike | None = None,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """Number of memories of the agent (of one category, passing the metadata filters)."""
        agent = check_agent(agent_id)
        query_filters(  # the embedded store's checks and messages, before anything is sent
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        cat = None if category is None else parse_category(category)
        params = {
            "agent_id": agent,
            "category": None if cat is None else cat.value,
            "filters": None if filters is None else dict(filters),
            "user_id": user_id,
            "session_id": session_id,
            "run_id": run_id,
            "namespace": namespace,
        }
        data = await self._send("count", params)
        with self._decoding("read"):
            return int(data["count"])

    async def list(
        self,
        *,
        agent_id: str,
        category: CategoryLike | None = None,
        label: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        include_superseded: bool = False,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[MemoryEntry]:
        """The agent's memories, newest first, filtered by category, label, tags, metadata."""
        agent = check_agent(agent_id)
        query_filters(  # the embedded store's checks and messages, before anything is sent
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        if offset < 0:
            msg = "offset must be >= 0"
            raise MemoryValidationError(msg)
        q = self._query(
            None,
            limit=limit,
            categories=category,
            tags=tags,
            label=label,
            include_superseded=include_superseded,
        )
        cat = None if category is None else parse_category(category)
        params: dict[str, Any] = {
            "agent_id": agent,
            "category": None if cat is None else cat.value,
            "label": q.label,
            "tags": list(q.tags) or None,
            "limit": q.limit,
            "offset": offset,
            "include_superseded": q.include_superseded,
            "filters": None if filters is None else dict(filters),
            "user_id": user_id,
            "session_id": session_id,
            "run_id": run_id,
            "namespace": namespace,
        }
        data = await self._send("list", params)
        with self._decoding("read"):
            return [_entry(row) for row in data["memories"]]

    async def context(
        self,
        query: str,
        *,
        agent_id: str,
        token_budget: int = 800,
        limit: int = 20,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        role: Literal["system", "user"] = "system",
        filter_strategy: MemoryFilterStrategy | None = None,
        mmr: bool = False,
        min_relevance: float = CONTEXT_MIN_RELEVANCE,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> MemoryContext:
        """Relevant memories packed into ``token_budget`` tokens (``POST /v1/context``).

        A ``filter_strategy`` is code, which cannot travel: with one, the pipeline runs here
        over the server's search results.
        """
        if filter_strategy is not None:
            return await super().context(
                query,
                agent_id=agent_id,
                token_budget=token_budget,
                limit=limit,
                categories=categories,
                role=role,
                filter_strategy=filter_strategy,
                mmr=mmr,
                min_relevance=min_relevance,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
                asked_at=asked_at,
            )
        try:
            ContextInjectionConfig(
                role=role, max_memories=limit, mmr_enabled=mmr, min_relevance=min_relevance
            )
        except ValidationError as exc:
            raise model_error(exc) from None
        _check_request(agent_id, query, token_budget)
        agent = check_agent(agent_id)
        cats = _categories(categories)
        body: dict[str, Any] = {
            "agent_id": agent,
            "query": query,
            "token_budget": min(token_budget, _TOKEN_BUDGET),
            "limit": min(limit, _CONTEXT_LIMIT),
            "role": role,
            "mmr": bool(mmr),
            "min_relevance": float(min_relevance),
        }
        query_filters(
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        scoped = {
            "filters": None if filters is None else dict(filters),
            "user_id": user_id,
            "session_id": session_id,
            "run_id": run_id,
            "namespace": namespace,
        }
        body.update({k: v for k, v in scoped.items() if v is not None})
        if cats is not None:
            body["categories"] = sorted(c.value for c in cats)
        asked = aware(asked_at, "asked_at")
        if asked is not None:
            body["asked_at"] = asked.isoformat()
        data = await self._send("context", body)
        with self._decoding("read"):
            return MemoryContext(
                entries=tuple(_entry(row) for row in data["entries"]),
                text=str(data["text"]),
                tokens=int(data["tokens"]),
                role=str(data["role"]),
                messages=tuple(
                    {str(k): str(v) for k, v in message.items()} for message in data["messages"]
                ),
            )

    async def search_and_ask(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 5,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        llm: LLMProvider | None = None,
        max_rounds: int = 2,
    ) -> builtins.list[MemoryEntry]:
        """Search-and-Ask with the server's LLM (``POST /v1/search/ask``).

        With ``llm`` given, the loop runs here instead, over the server's search.
        """
        if llm is not None:
            return await super().search_and_ask(
                query,
                agent_id=agent_id,
                limit=limit,
                categories=categories,
                llm=llm,
                max_rounds=max_rounds,
            )
        cats = _categories(categories)
        body: dict[str, Any] = {
            "agent_id": check_agent(agent_id),
            "query": query,
            "limit": limit,
            "max_rounds": max_rounds,
        }
        if cats is not None:
            body["categories"] = sorted(c.value for c in cats)
        data = await self._send("search_and_ask", body)
        with self._decoding("read"):
            return [_entry(row) for row in data["results"]]

    # -- automatic capture ------------------------------------------------------------------

    async def capture_episode(
        self,
        summary: str,
        *,
        agent_id: str,
        trigger_type: str | None = None,
        category: str = "autonomous_run",
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Capture a run's summary on the server (``POST /v1/episodes``); never raises."""
        body: dict[str, Any] = {"agent_id": agent_id, "summary": summary, "category": category}
        if trigger_type is not None:
            body["trigger_type"] = trigger_type
        if metadata is not None:
            body["metadata"] = dict(metadata)
        return await self._capture("capture_episode", body, agent_id)

    async def capture_distillation(
        self,
        *,
        agent_id: str,
        task_id: str,
        outcome: str,
        turns: Sequence[TurnRecord | Mapping[str, Any]] = (),
        error: str | None = None,
        created_at: datetime | None = None,
    ) -> str | None:
        """Capture a task's trajectory on the server (``POST /v1/distillations``); never raises."""
        try:
            body: dict[str, Any] = {
                "agent_id": agent_id,
                "task_id": task_id,
                "outcome": outcome,
                "turns": [
                    t.model_dump(mode="json") if isinstance(t, TurnRecord) else dict(t)
                    for t in turns
                ],
            }
        except (TypeError, ValueError) as exc:
            logger.warning("distillation capture failed for agent %s: %s", agent_id, exc)
            return None
        if error is not None:
            body["error"] = error
        if created_at is not None:
            body["created_at"] = _iso(created_at)
        return await self._capture("capture_distillation", body, agent_id)

    async def _capture(self, operation: str, body: dict[str, Any], agent_id: str) -> str | None:
        # Capture never fails the agent's run, on any transport (as in memvault.agent.capture).
        try:
            data = await self._send(operation, body)
            with self._decoding("write"):
                found = data["id"]
                return None if found is None else str(found)
        except MemoryError as exc:
            logger.warning("%s failed for agent %s: %s", operation, agent_id, exc)
            return None

    # -- working memory: kept by the server -------------------------------------------------

    def working_memory(
        self, task_id: str, *, agent_id: str, token_budget: int | None = None
    ) -> WorkingMemory:
        """Not available over HTTP: the scratchpad lives in the server's process.

        Raises:
            MemoryCapabilityError: always (use :meth:`working_note`, :meth:`working` and
                :meth:`clear_working`, which reach it).
        """
        raise _not_remote("a live working memory object (use working_note/working)")

    async def working_note(
        self, task_id: str, content: str, *, agent_id: str, token_budget: int | None = None
    ) -> str:
        """Add a note to the agent's working memory on the server (``POST /v1/working/...``)."""
        body: dict[str, Any] = {
            "task_id": task_id,
            "agent_id": check_agent(agent_id),
            "content": content,
        }
        if token_budget is not None:
            body["token_budget"] = token_budget
        data = await self._send("working_note", body)
        with self._decoding("write"):
            return str(data["id"])

    async def working(self, task_id: str, *, agent_id: str) -> WorkingMemory:
        """A detached copy of the agent's working memory on the server for ``task_id``."""
        data = await self._send("working", {"task_id": task_id, "agent_id": check_agent(agent_id)})
        with self._decoding("read"):
            return WorkingMemory.from_json(data)

    async def clear_working(self, task_id: str, *, agent_id: str) -> int:
        """Forget the agent's working memory on the server for ``task_id``."""
        fields = {"task_id": task_id, "agent_id": check_agent(agent_id)}
        data = await self._send("clear_working", fields)
        with self._decoding("write"):
            return int(data["cleared"])

    # -- learning ---------------------------------------------------------------------------

    @property
    def learning(self) -> LearningEngine:
        """Not available over HTTP: the learning layer runs on the server.

        Raises:
            MemoryCapabilityError: always (use :meth:`call` with the learning operations:
                ``approvals``, ``approve``, ``org_search`` ...).
        """
        raise _not_remote("the learning engine (call the learning operations instead)")

    @property
    def llm(self) -> LLMProvider | None:
        """None: a remote memory uses the server's LLM."""
        return None

    def _shares_knowledge(self) -> bool:
        # The server's context operation adds shared knowledge by its own configuration; a
        # client-side pipeline (a filter_strategy) cannot know whether the server keeps it.
        return False

    async def _pooled(self, agent_id: str, text: str) -> builtins.list[MemoryEntry]:
        # The server's context operation adds pooled skills itself; a client-side strategy
        # over the remote search sees the agent's own memories only.
        return []

    def _note_injected(self, agent_id: str, entries: Sequence[MemoryEntry]) -> None:
        # Skill applications are counted where learn_from runs: on the server, whose own
        # context operation records what it injects. A client-side context has nothing to add.
        return

    async def _policies(self) -> builtins.list[str]:
        data = await self._send("org_policies", {})
        with self._decoding("read"):
            return [str(f["content"]) for f in data["facts"]]

    async def learn_from(
        self, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str
    ) -> LearnReport:
        """Report a finished task to the server (``POST /v1/learn``); never raises."""
        try:
            agent = check_agent(agent_id)
            fields = (
                outcome.model_dump(mode="json", exclude_none=True)
                if isinstance(outcome, TaskOutcome)
                else dict(outcome)
            )
            data = await self._send("learn_from", {**fields, "agent_id": agent})
            with self._decoding("write"):
                return LearnReport.model_validate(data)
        except Exception as exc:  # learn_from is non-critical on every transport
            logger.warning(
                "memory.learn.failed",
                extra={"event": "memory.learn.failed", "error": str(exc)},
            )
            return LearnReport(agent_id=str(agent_id), error=f"{type(exc).__name__}: {exc}")

    async def set_profile(
        self,
        agent_id: str,
        *,
        role: str | None = None,
        department: str | None = None,
        seniority: Seniority | str = Seniority.MID,
    ) -> AgentProfile:
        """Set an agent's profile on the server (``PUT /v1/profiles/{agent_id}``)."""
        body = {
            "agent_id": check_agent(agent_id),
            "role": role,
            "department": department,
            "seniority": seniority,
        }
        data = await self._send("set_profile", body)
        with self._decoding("write"):
            return AgentProfile.model_validate(data)

    async def evolve(self, *, force: bool = False) -> EvolverReport:
        """Run one evolver cycle on the server (``POST /v1/evolve``, admin)."""
        data = await self._send("evolve", {"force": bool(force)})
        with self._decoding("write"):
            return EvolverReport.model_validate(data)

    async def prune_procedural(self, *, agent_id: str) -> PruneReport:
        """Prune the agent's lessons on the server (``POST /v1/procedural/prune``, admin)."""
        data = await self._send("prune_procedural", {"agent_id": check_agent(agent_id)})
        with self._decoding("write"):
            return PruneReport.model_validate(data)

    # -- graph memory, tiered recall, forgetting (issue 18): embedded only ----------------------

    async def graph_recall(
        self,
        query: str,
        *,
        agent_id: str,
        mode: RecallMode | str = RecallMode.SPREADING,
        hops: int | None = None,
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> builtins.list[MemoryEntry]:
        """Not offered over HTTP.

        Raises:
            MemoryCapabilityError: always.
        """
        raise _not_remote("graph recall")

    async def recall_tiered(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 10,
        tier: RecallTier | str | None = None,
        as_of: datetime | None = None,
    ) -> TieredRecall:
        """Not offered over HTTP.

        Raises:
            MemoryCapabilityError: always.
        """
        raise _not_remote("tiered recall")

    async def forget(self, *, agent_id: str | None = None) -> builtins.list[ForgettingReport]:
        """Not offered over HTTP (the server's maintenance job runs it).

        Raises:
            MemoryCapabilityError: always.
        """
        raise _not_remote("optical forgetting")

    async def promote_skills(self, *, agent_id: str) -> builtins.list[ApprovalItem]:
        """Not offered over HTTP.

        Raises:
            MemoryCapabilityError: always.
        """
        raise _not_remote("skill promotion")

    # -- shared knowledge -------------------------------------------------------------------------

    async def publish(
        self,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        scope: MemoryScope | str = MemoryScope.SHARED,
        kind: OrgFactKind | str | None = None,
    ) -> str:
        """Publish knowledge every agent of the key's tenant can find; returns its id.

        ``scope="org"`` appends an org fact of ``kind`` instead (the server checks the
        author's write access; see :meth:`AsyncMemory.publish`).
        """
        agent = check_agent(agent_id)
        wanted = publish_scope(scope)
        request = _request(content, category=category, tags=tags, metadata=metadata)
        body: dict[str, Any] = {
            "agent_id": agent,
            "content": request.content,
            "category": request.category.value,
            "tags": list(request.metadata.tags),
            "metadata": dict(request.metadata.extra),
            "scope": wanted.value,
        }
        if kind is not None:
            body["kind"] = kind.value if isinstance(kind, OrgFactKind) else str(kind)
        data = await self._send("publish", body)
        with self._decoding("write"):
            return str(data["id"])

    async def search_shared(
        self, query: str, *, limit: int = 10, exclude_agent: str | None = None
    ) -> builtins.list[MemoryEntry]:
        """Search the tenant's shared knowledge, best first (at most 100 results)."""
        exclude = None if exclude_agent is None else check_agent(exclude_agent)
        if not isinstance(query, str) or not query.strip():
            msg = "search query is empty"
            raise MemoryValidationError(msg)
        q = self._query(query, limit=limit)
        body: dict[str, Any] = {"query": query, "limit": min(q.limit, _SEARCH_LIMIT)}
        if exclude is not None:
            body["exclude_agent"] = exclude
        data = await self._send("search_shared", body)
        with self._decoding("read"):
            return [_entry(row).model_copy(update={"score": None}) for row in data["results"]]

    async def retract(self, memory_id: str, *, agent_id: str) -> bool:
        """Retract shared knowledge ``agent_id`` published; False if it is not a live one."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        data = await self._send("retract", {"memory_id": mid, "agent_id": agent})
        with self._decoding("write"):
            return bool(data["retracted"])

    # -- bulk -----------------------------------------------------------------------------------

    async def export(
        self, path: str | Path | None = None, *, agent_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every memory (of one agent, or the tenant's: admin) as JSON objects; written to
        ``path`` (atomically) if given."""
        agent = None if agent_id is None else check_agent(agent_id)
        data = await self._send("export", {"agent_id": agent})
        with self._decoding("read"):
            rows = data["memories"]
            if not isinstance(rows, builtins.list) or not all(isinstance(r, dict) for r in rows):
                msg = "'memories' is not a list of objects"
                raise TypeError(msg)
        if path is not None:
            target = Path(path)
            tmp = target.with_name(target.name + ".tmp")
            try:
                tmp.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
                tmp.replace(target)
            except OSError as exc:
                msg = f"cannot write export file {target}: {exc.strerror or exc}"
                raise MemoryStoreError(msg) from exc
        return rows

    async def import_(
        self,
        source: str | Path | Sequence[Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        batch_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Import memories from an export into the server (``POST /v1/import``, admin).

        Everything is validated here before anything is sent; batches of ``batch_size`` go one
        request each (idempotent: known ids are skipped, so an interrupted import is finished
        by running it again). Returns how many memories were added.
        """
        agent = None if agent_id is None else check_agent(agent_id)
        if batch_size < 1:
            msg = "batch_size must be >= 1"
            raise MemoryValidationError(msg)
        items = _load_export(source)
        rows: builtins.list[dict[str, Any]] = []
        for i, item in enumerate(items):
            try:
                rows.append(MemoryEntry.from_json(dict(item), agent_id=agent).to_json())
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                detail = model_error(exc).args[0] if isinstance(exc, ValidationError) else exc
                msg = f"import item {i}: {detail}"
                raise MemoryValidationError(msg) from None
        added = 0
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            for part in _chunks(batch, batch_size):
                body: dict[str, Any] = {"items": part}
                if agent is not None:
                    body["agent_id"] = agent
                data = await self._send("import", body)
                with self._decoding("write"):
                    added += int(data["added"])
            if on_progress is not None:
                on_progress(start + len(batch), len(rows))
        return added

    async def stats(self) -> StoreStats:
        """Counts of the key's tenant store (not for agent keys)."""
        data = await self._send("stats", {})
        with self._decoding("read"):
            return StoreStats.model_validate(data)

    async def agents(self) -> builtins.list[str]:
        """Agent ids that have memories (an agent key sees only itself)."""
        data = await self._send("agents", {})
        with self._decoding("read"):
            return [str(a) for a in data["agents"]]

    async def close(self) -> None:
        """Close the HTTP client (idempotent); later calls raise MemoryConnectionError."""
        if self._closed:
            return
        self._closed = True
        client, self._client = self._client, None
        loop, self._client_loop = self._client_loop, None
        if client is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - close() is a coroutine: a loop runs
            running = None
        if running is loop:
            await client.aclose()

    async def __aenter__(self) -> RemoteAsyncMemory:
        if self._closed:
            msg = "this memory is closed"
            raise MemoryConnectionError(msg)
        return self


def _code(resp: httpx.Response) -> str | None:
    error = _error_body(resp)
    code = error.get("code")
    return code if isinstance(code, str) else None


def _message(resp: httpx.Response) -> str | None:
    error = _error_body(resp)
    message = error.get("message")
    return message if isinstance(message, str) and message.strip() else None


def _error_body(resp: httpx.Response) -> dict[str, Any]:
    try:
        data = resp.json()
    except ValueError:
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def _check_url(url: str) -> str:
    if not isinstance(url, str):
        msg = f"a server URL must be a string, got {type(url).__name__}"
        raise MemoryConfigError(msg)
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        msg = f"invalid server URL {url!r}: {exc}"
        raise MemoryConfigError(msg) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        msg = f"invalid server URL {url!r}: expected http(s)://host[:port]"
        raise MemoryConfigError(msg)
    if parsed.query or parsed.fragment:
        msg = f"invalid server URL {url!r}: it must not have a query or fragment"
        raise MemoryConfigError(msg)
    return url.rstrip("/")


def _check_key(key: str | None) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str):
        msg = f"api_key must be a string, got {type(key).__name__}"
        raise MemoryConfigError(msg)
    key = key.strip()
    if not key:
        return None
    if not key.isprintable() or not key.isascii() or any(c.isspace() for c in key):
        msg = "api_key contains characters an API key never has (whitespace or control)"
        raise MemoryConfigError(msg)
    return key


# AsyncMemory("http://...") builds this class (memory.py cannot import this module: layers).
register_remote(RemoteAsyncMemory)
