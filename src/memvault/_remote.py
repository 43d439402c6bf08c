# mypy: disable-error-code="no-any-return"
# The typed methods return ``await self._op(...)``, which decodes each answer to the method's
# declared type through the operation table; mypy cannot follow that through ``Any``.
"""The hand-written half of the remote client (:class:`memvault.remote.RemoteAsyncMemory`).

:mod:`memvault.remote` is generated from :class:`~memvault.AsyncMemory`'s signatures by
``scripts/generate_sync.py``: one method per operation whose arguments all travel. This module
holds what cannot be derived: the transport, the generic path, the error mapping, and the methods
with rules of their own (batching, work kept local, capabilities a server does not offer).

``AsyncMemory("http://host:8765", api_key=...)`` returns one, and ``Memory(...)`` with a server URL
runs one on its loop thread, so code moves from an embedded store to a server by changing the
URL: every method keeps its signature, its return type and its errors. A response's
``{"error": {"code", "message"}}`` becomes the memvault exception of that code (the table in
:mod:`memvault.server.errors`) with the server's message; a server that cannot be reached, times
out or answers something that is not memvault is a :class:`~memvault.errors.MemoryConnectionError`
naming the URL. httpx's own exceptions never escape.

Every typed method goes one way (:meth:`RemoteBase._op`): its arguments become the
operation's request model (:mod:`memvault.api.requests`, so the client checks them with the
server's own model and limits), the model travels by the operation's :class:`~memvault.api.Http`
entry (path parameters, query or body), and the answer is checked against the entry's response
model and decoded into the method's return type.

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
from typing import Any, Literal, Self, get_args, get_origin
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from memvault._inputs import (
    CategoryLike,
    aware,
    check_scope_id,
    check_update,
    conversation_turns,
    is_message,
    parse_category,
    server_url,
)
from memvault._inputs import categories as _categories
from memvault._inputs import item_request as _item_request
from memvault._inputs import load_export as _load_export
from memvault._version import __version__
from memvault.agent.capture import TurnRecord
from memvault.agent.working import WorkingMemory
from memvault.api import responses as rs
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
from memvault.graph.models import RecallMode
from memvault.injection.context import (
    CONTEXT_MIN_RELEVANCE,
    ContextInjectionConfig,
    _check_request,
)
from memvault.learning.engine import LearningEngine
from memvault.learning.forgetting import ForgettingReport
from memvault.learning.models import (
    ApprovalItem,
    LearnReport,
    TaskOutcome,
)
from memvault.memory import AsyncMemory
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
    parse_filters,
)
from memvault.protocols import Embedder, LLMProvider, MemoryStore
from memvault.retrieval.filters import MemoryFilterStrategy
from memvault.retrieval.packing import MemoryContext
from memvault.retrieval.presets import RetrievalConfig, get_preset
from memvault.retrieval.tiered import RecallTier, TieredRecall
from memvault.server.errors import ERROR_TABLE
from memvault.validation import check_agent, check_id, model_error, scope_agent
from memvault.write.pipeline import WriteDecision
from memvault.write.retention import RetentionPolicy, RetentionReport

__all__ = ["API_KEY_ENV", "RemoteBase"]

logger = logging.getLogger(__name__)

API_KEY_ENV = "MEMVAULT_API_KEY"
"""The environment variable a remote memory takes its API key from when none is given."""

DEFAULT_TIMEOUT = 30.0

# Batches (add_many, archive, import_) are cut to the request model's item limit and to about
# this many bytes, under the server's default 4 MiB body limit (a setting, not in the model).
_BATCH_BYTES = 3 * 1024 * 1024

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


def _batch_item(request: MemoryStoreRequest, position: int) -> dict[str, Any]:
    """The fields of one validated ``add_many`` item (``AddManyItem``)."""
    unsent = [
        name
        for name, is_set in (
            ("valid_from", request.valid_from is not None),
            ("scope", request.scope is not MemoryScope.PRIVATE),
        )
        if is_set
    ]
    if unsent:
        raise _not_remote(f"item {position}: setting {', '.join(unsent)} on a memory")
    meta = request.metadata
    item = {
        "content": request.content,
        "category": request.category.value,
        "tags": list(meta.tags),
        "metadata": dict(meta.extra),
        "importance": meta.importance,
        "confidence": None if meta.confidence == 1.0 else meta.confidence,
        "created_at": None if request.created_at is None else request.created_at.isoformat(),
        "expires_at": None if request.expires_at is None else request.expires_at.isoformat(),
        "supersedes": request.supersedes,
        "label": meta.label,
        "source": meta.source,
    }
    return {k: v for k, v in item.items() if v is not None}


def _strategy(value: ConsolidationStrategy | str | None) -> str | None:
    """A consolidation strategy's name, refused with the embedded memory's message."""
    if value is None:  # the server's configured strategy
        return None
    try:
        return ConsolidationStrategy(value).value
    except ValueError:
        names = ", ".join(s.value for s in ConsolidationStrategy)
        msg = f"unknown consolidation strategy {value!r} (choose from {names})"
        raise MemoryValidationError(msg) from None


# -- a method's arguments -> the operation's request model --------------------------------------

# Where the server's maximum of a field caps a larger value instead of refusing it: ranked results
# (the best come first, so the first N of a larger request are the same N).
_CAPPED: dict[str, tuple[str, ...]] = {
    "search": ("limit",),
    "search_shared": ("limit",),
    "context": ("limit", "token_budget"),
}

# The embedded memory's message for a blank query (the request model only refuses an empty one).
_BLANK_QUERY = {"search": "search query is empty", "search_shared": "search query is empty"}


def _types(annotation: Any) -> set[Any]:
    """``annotation`` and every type inside it (``list[MemoryCategory] | None``: all three)."""
    found = {annotation}
    for arg in get_args(annotation):
        found |= _types(arg)
    return found


def _maximum(model: type[BaseModel], name: str) -> int:
    """The upper bound (``le`` or ``max_length``) the request model sets on field ``name``."""
    for rule in model.model_fields[name].metadata:
        for bound in (getattr(rule, "le", None), getattr(rule, "max_length", None)):
            if isinstance(bound, int):
                return bound
    msg = f"{model.__name__}.{name} has no upper bound"
    raise LookupError(msg)


def _plain(value: Any) -> Any:
    """Models, mappings and sequences inside an argument as JSON-like data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (builtins.list, tuple)):
        return [_plain(v) for v in value]
    return value


def _argument(op: Operation, name: str, value: Any) -> Any:
    """One argument, checked and converted as the embedded memory does (its messages)."""
    if name == "preset" and value is not None and not isinstance(value, str):
        raise _not_remote("a retrieval config object (name one of the server's presets)")
    if name in ("agent_id", "exclude_agent"):
        return check_agent(value)
    if name == "memory_id" and op.http is not None and name in op.http.path_params:
        return check_id(value)
    if name in ("user_id", "session_id", "run_id", "namespace"):
        return check_scope_id(name, value)
    if (
        name == "query"
        and op.name in _BLANK_QUERY
        and not (isinstance(value, str) and value.strip())
    ):
        raise MemoryValidationError(_BLANK_QUERY[op.name])
    if name == "filters":
        parse_filters(value)
    if name == "offset" and isinstance(value, int) and value < 0:
        msg = "offset must be >= 0"
        raise MemoryValidationError(msg)
    if name == "tags" and isinstance(value, str):
        msg = "tags must be a list of strings, not one string"
        raise MemoryValidationError(msg)
    field = op.request.model_fields.get(name)
    types = set() if field is None else _types(field.annotation)
    if MemoryCategory in types:
        if builtins.list in {get_origin(t) for t in types}:
            return sorted(c.value for c in _categories(value) or ())
        return parse_category(value).value
    if datetime in types:
        return aware(value, name)
    if name in _CAPPED.get(op.name, ()) and isinstance(value, int) and not isinstance(value, bool):
        return min(value, _maximum(op.request, name))
    return _plain(value)


def _request(op: Operation, arguments: Mapping[str, Any]) -> BaseModel:
    """The operation's request model from a method's arguments (None: the field's default).

    Raises:
        MemoryValidationError: an argument the embedded memory refuses, with its message, or
            one the request model refuses, with the server's message for it.
    """
    fields = {k: _argument(op, k, v) for k, v in arguments.items() if v is not None}
    try:
        request: BaseModel = op.parse(fields)
    except ValidationError as exc:
        raise model_error(exc) from None
    return request


# -- the operation's answer -> the method's result -----------------------------------------------


def _entry(data: Any) -> MemoryEntry:
    """A memory from its REST JSON (``MemoryEntry.to_json`` plus search scores)."""
    entry = MemoryEntry.from_json(data)
    update: dict[str, Any] = {}
    if data.get("relevance_score") is not None:
        update["relevance_score"] = float(data["relevance_score"])
    if data.get("score") is not None:
        update["score"] = ScoreBreakdown.model_validate(data["score"])
    return entry.model_copy(update=update) if update else entry


# Answers whose Python type is not the response model's first field (see _answer).
_RESULTS: dict[str, Callable[[Any], Any]] = {
    "store": lambda d: WriteResult(
        d["id"], WriteDecision.model_validate(d["detail"]), warnings=tuple(d["warnings"])
    ),
    "context": lambda d: MemoryContext(
        entries=tuple(_entry(row) for row in d["entries"]),
        text=d["text"],
        tokens=d["tokens"],
        role=d["role"],
        messages=tuple(d["messages"]),
    ),
    "history": lambda d: MemoryHistory(
        memory_id=d["memory_id"],
        versions=tuple(_entry(v) for v in d["versions"]),
        audit=tuple(AuditRecord.model_validate(r) for r in d["audit"]),
    ),
    "sweep": lambda d: RetentionReport(expired=d["expired"], evicted=d["evicted"]),
    "working": WorkingMemory.from_json,
    "archived": lambda d: [ArchivedEntry.model_validate(row) for row in d["archived"]],
    "audit": lambda d: [AuditRecord.model_validate(row) for row in d["records"]],
    "export": lambda d: d["memories"],  # export returns the JSON objects themselves
}


def _answer(op: Operation, data: Any) -> Any:
    """The result of an operation's JSON answer, checked against its response model first.

    A memory (``EntryOut``) becomes a :class:`MemoryEntry`; a domain model (``StoreStats``,
    ``LearnReport``...) is the result itself; an envelope of :mod:`memvault.api.responses`
    gives its first field (``{"ids": [...]}``: the ids), memories as :class:`MemoryEntry`.
    ``_RESULTS`` decodes the answers of other shapes.

    Raises:
        ValueError, KeyError: the answer does not have the declared shape.
    """
    response = None if op.http is None else op.http.response
    if response is None:
        return data
    parsed = response.model_validate(data)
    special = _RESULTS.get(op.name)
    if special is not None:
        return special(data)
    if response is rs.EntryOut:
        return _entry(data)
    if response.__module__ != rs.__name__:
        return parsed
    name, field = next(iter(response.model_fields.items()))
    if field.annotation == builtins.list[rs.EntryOut]:
        return [_entry(row) for row in data[name]]
    return getattr(parsed, name)


class RemoteBase(AsyncMemory):
    """The hand-written part of :class:`memvault.remote.RemoteAsyncMemory`.

    Construction, the HTTP transport and its errors, the generic path every operation takes
    (:meth:`_op`), and the methods whose arguments do not all travel as one request.
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

    def _operation(self, operation: str | Operation) -> Operation:
        """The declared operation (by name, or the declaration itself), if it has a route."""
        op = operation if isinstance(operation, Operation) else self._operations.get(operation)
        if op is None or op.http is None:
            name = operation.name if isinstance(operation, Operation) else operation
            msg = f"operation {name!r} is not offered over HTTP"
            raise MemoryCapabilityError(msg)
        return op

    async def _op(self, operation: str, /, **arguments: Any) -> Any:
        """Run one operation with a typed method's arguments; the method's result.

        The arguments get the embedded memory's checks (:func:`_argument`), then the
        operation's request model checks them with the server's own limits, so bad input fails
        here, before anything is sent; the answer is checked against the operation's response
        model and decoded (:func:`_answer`).
        """
        op = self._operation(operation)
        field = op.request.model_fields.get("agent_id")
        if arguments.get("agent_id", "") is None and field is not None and field.is_required():
            # The embedded memory's default agent (user_id alone is a scope), resolved here:
            # the server's request models name the agent of every scoped call (an optional
            # agent_id, as import's "keep each entry's agent", stays None).
            scopes = [arguments[k] for k in ("user_id", "run_id") if k in arguments]
            arguments = {**arguments, "agent_id": scope_agent(None, *scopes)}
        data = await self._send(op, _request(op, arguments))
        with self._decoding(_kind(op)):
            return _answer(op, data)

    async def _send(self, op: Operation, request: BaseModel) -> Any:
        """Send a validated request by the operation's route; the decoded JSON of its answer."""
        http = op.http
        if http is None:  # pragma: no cover - _operation admits routed operations only
            raise _not_remote(f"operation {op.name!r}")
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
        op = self._operation(operation)
        try:
            request = op.parse(fields)
        except ValidationError as exc:
            raise model_error(exc) from None
        return await self._send(op, request)

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

    async def add_messages(
        self,
        messages: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str | None = None,
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
        conversation_turns(messages)  # the embedded store's checks and messages
        return await self._op(
            "store_messages",
            messages=messages,
            agent_id=agent_id,
            infer=infer,
            tags=tags,
            metadata=metadata,
            created_at=created_at,
            dedup=dedup,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
        )

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
        check_agent(agent_id)  # also when there is nothing to send, as the embedded memory
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            msg = "items must be a list of dicts or MemoryStoreRequest objects"
            raise MemoryValidationError(msg)
        if items and all(is_message(item) for item in items):
            return await self.add_messages(items, agent_id=agent_id, dedup=dedup)  # type: ignore[arg-type]
        rows = [_batch_item(_item_request(item, i), i) for i, item in enumerate(items)]
        ids: builtins.list[str] = []
        limit = _maximum(self._operation("store_many").request, "items")
        for batch in _chunks(rows, limit):
            got = await self._op("store_many", items=batch, agent_id=agent_id, dedup=dedup)
            if len(got) != len(batch):
                msg = f"unexpected response from the memvault server at {self._url}: "
                raise _failure("write", f"{msg}{len(got)} ids for {len(batch)} items")
            ids.extend(got)
        return ids

    async def delete(self, memory_id: str, *, agent_id: str | None = None) -> bool:
        """Delete one memory; False if the agent has no memory with that id."""
        try:
            await self._op("delete", memory_id=memory_id, agent_id=agent_id)
        except MemoryNotFoundError:
            return False
        return True

    # -- retention and archive ------------------------------------------------------------------

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
        name = _strategy(strategy)
        if llm is not None:
            raise _not_remote("choosing the consolidation LLM (the server uses its own)")
        if config is not None:
            raise _not_remote("a consolidation config (the server uses its own)")
        return await self._op(
            "consolidate",
            agent_id=agent_id,
            strategy=name,
            dry_run=dry_run,
            min_age_days=min_age_days,
        )

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

    async def archive(
        self, ids: Sequence[str], *, agent_id: str, reason: str = "archive"
    ) -> dict[str, str]:
        """Move memories to the archive (``POST /v1/archive``); original id -> archive id."""
        check_agent(agent_id)  # also when there is nothing to send, as the embedded memory
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            msg = "ids must be a list of memory ids"
            raise MemoryValidationError(msg)
        wanted = [check_id(i) for i in ids]
        index: dict[str, str] = {}
        step = _maximum(self._operation("archive").request, "ids")
        for start in range(0, len(wanted), step):
            part = wanted[start : start + step]
            index.update(await self._op("archive", ids=part, agent_id=agent_id, reason=reason))
        return index

    # -- reads ----------------------------------------------------------------------------------

    async def update(
        self,
        memory_id: str,
        *,
        agent_id: str | None = None,
        content: str | None = None,
        category: CategoryLike | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        label: str | None = None,
        importance: float | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryEntry:
        """Store a new version of a memory on the server (``PATCH /v1/memories/{id}``)."""
        check_update(content, category, tags, metadata, label, importance, expires_at)
        return await self._op(
            "update",
            memory_id=memory_id,
            agent_id=agent_id,
            content=content,
            category=category,
            tags=tags,
            metadata=metadata,
            label=label,
            importance=importance,
            expires_at=expires_at,
        )

    async def context(
        self,
        query: str,
        *,
        agent_id: str | None = None,
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
        # The embedded context's checks and messages (its configuration's names and limits).
        try:
            ContextInjectionConfig(
                role=role, max_memories=limit, mmr_enabled=mmr, min_relevance=min_relevance
            )
        except ValidationError as exc:
            raise model_error(exc) from None
        agent_id = scope_agent(agent_id, user_id, run_id)
        _check_request(agent_id, query, token_budget)
        return await self._op(
            "context",
            query=query,
            agent_id=agent_id,
            token_budget=token_budget,
            limit=limit,
            categories=categories,
            role=role,
            mmr=mmr,
            min_relevance=min_relevance,
            filters=filters,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
            asked_at=asked_at,
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
        return await self._op(
            "search_and_ask",
            query=query,
            agent_id=agent_id,
            limit=limit,
            categories=categories,
            max_rounds=max_rounds,
        )

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
        return await self._capture(
            "capture_episode",
            summary=summary,
            agent_id=agent_id,
            trigger_type=trigger_type,
            category=category,
            metadata=metadata,
        )

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
        return await self._capture(
            "capture_distillation",
            agent_id=agent_id,
            task_id=task_id,
            outcome=outcome,
            turns=turns,
            error=error,
            created_at=created_at,
        )

    async def _capture(self, operation: str, /, **arguments: Any) -> str | None:
        # Capture never fails the agent's run, on any transport (as in memvault.agent.capture).
        try:
            return await self._op(operation, **arguments)
        except (MemoryError, TypeError, ValueError) as exc:
            logger.warning("%s failed for agent %s: %s", operation, arguments["agent_id"], exc)
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
        return [fact.content for fact in await self._op("org_policies")]

    async def learn_from(
        self, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str
    ) -> LearnReport:
        """Report a finished task to the server (``POST /v1/learn``); never raises."""
        try:
            return await self._op("learn_from", **{**_plain(outcome), "agent_id": agent_id})
        except Exception as exc:  # learn_from is non-critical on every transport
            logger.warning(
                "memory.learn.failed",
                extra={"event": "memory.learn.failed", "error": str(exc)},
            )
            return LearnReport(agent_id=str(agent_id), error=f"{type(exc).__name__}: {exc}")

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

    # -- bulk -----------------------------------------------------------------------------------

    async def export(
        self, path: str | Path | None = None, *, agent_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every memory (of one agent, or the tenant's: admin) as JSON objects; written to
        ``path`` (atomically) if given."""
        rows: builtins.list[dict[str, Any]] = await self._op("export", agent_id=agent_id)
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
        rows: builtins.list[dict[str, Any]] = []
        for i, item in enumerate(_load_export(source)):
            try:
                rows.append(MemoryEntry.from_json(dict(item), agent_id=agent).to_json())
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                detail = model_error(exc).args[0] if isinstance(exc, ValidationError) else exc
                msg = f"import item {i}: {detail}"
                raise MemoryValidationError(msg) from None
        added = 0
        most = min(batch_size, _maximum(self._operation("import").request, "items"))
        for start in range(0, len(rows), batch_size):
            batch = rows[start : start + batch_size]
            for part in _chunks(batch, most):
                added += await self._op("import", items=part, agent_id=agent)
            if on_progress is not None:
                on_progress(start + len(batch), len(rows))
        return added

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

    async def __aenter__(self) -> Self:
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
