"""Turning what callers pass to the Python API into validated models (shared by every front door).

``AsyncMemory`` (embedded) and ``RemoteAsyncMemory`` (over HTTP) take the same arguments and must
refuse the same bad input with the same messages, so both build their requests here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memvault.config import MemvaultConfig, load_config
from memvault.errors import MemoryValidationError
from memvault.models import (
    MemoryCategory,
    MemoryMetadata,
    MemoryScope,
    MemoryStoreRequest,
    MetadataFilter,
    aware_utc,
    parse_filters,
)
from memvault.validation import model_error

__all__ = [
    "SCOPE_KEYS",
    "CategoryLike",
    "aware",
    "categories",
    "check_scope_id",
    "check_update",
    "conversation_turns",
    "is_message",
    "item_request",
    "load_export",
    "message_text",
    "parse_category",
    "publish_scope",
    "query_filters",
    "scope_metadata",
    "server_url",
    "store_request",
]

CategoryLike = MemoryCategory | str


def publish_scope(value: MemoryScope | str) -> MemoryScope:
    """The scope of a ``publish``: SHARED or ORG (an enum member or its name).

    Raises:
        MemoryValidationError: ``private`` (that is ``add``) or an unknown scope.
    """
    try:
        scope = MemoryScope(value.strip().lower() if isinstance(value, str) else value)
    except ValueError:
        scope = None
    if scope is None or scope is MemoryScope.PRIVATE:
        msg = f"publish scope must be 'shared' or 'org', got {value!r} (private memories: add())"
        raise MemoryValidationError(msg)
    return scope


def parse_category(value: CategoryLike) -> MemoryCategory:
    """A :class:`MemoryCategory` from an enum member or its name (case-insensitive).

    Raises:
        MemoryValidationError: not a known category (the message lists the known ones).
    """
    if isinstance(value, MemoryCategory):
        return value
    if isinstance(value, str):
        try:
            return MemoryCategory(value.strip().lower())
        except ValueError:
            pass
    known = ", ".join(c.value for c in MemoryCategory)
    msg = f"unknown category {value!r} (known: {known})"
    raise MemoryValidationError(msg)


def categories(
    value: CategoryLike | Iterable[CategoryLike] | None,
) -> frozenset[MemoryCategory] | None:
    if value is None:
        return None
    if isinstance(value, (str, MemoryCategory)):
        return frozenset({parse_category(value)})
    return frozenset(parse_category(v) for v in value)


def aware(value: datetime | None, name: str) -> datetime | None:
    try:
        return aware_utc(value)
    except ValueError as exc:
        raise MemoryValidationError(f"{name}: {exc}") from None


def store_request(
    content: str,
    *,
    category: CategoryLike = MemoryCategory.SEMANTIC,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    created_at: datetime | None = None,
    expires_at: datetime | None = None,
    supersedes: str | None = None,
    label: str | None = None,
    source: str | None = None,
    importance: float | None = None,
    confidence: float | None = None,
) -> MemoryStoreRequest:
    if isinstance(tags, str):
        msg = "tags must be a list of strings, not one string"
        raise MemoryValidationError(msg)
    try:
        meta = MemoryMetadata(
            tags=tuple(tags),
            extra=dict(metadata or {}),
            label=label,
            source=source,
            importance=0.5 if importance is None else importance,
            confidence=1.0 if confidence is None else confidence,
        )
        return MemoryStoreRequest(
            content=content,
            category=parse_category(category),
            metadata=meta,
            created_at=aware(created_at, "created_at"),
            expires_at=aware(expires_at, "expires_at"),
            supersedes=supersedes,
        )
    except ValidationError as exc:
        raise model_error(exc) from None
    except TypeError as exc:
        raise MemoryValidationError(str(exc)) from None


_ADD_KEYS = frozenset(
    {
        "content",
        "category",
        "tags",
        "metadata",
        "created_at",
        "expires_at",
        "supersedes",
        "label",
        "source",
        "importance",
        "confidence",
    }
)


def item_request(item: MemoryStoreRequest | Mapping[str, Any], position: int) -> MemoryStoreRequest:
    if isinstance(item, MemoryStoreRequest):
        return item
    if not isinstance(item, Mapping):
        msg = f"item {position}: expected a dict or MemoryStoreRequest, got {type(item).__name__}"
        raise MemoryValidationError(msg)
    unknown = set(item) - _ADD_KEYS
    if unknown:
        msg = f"item {position}: unknown keys {sorted(unknown)} (allowed: {sorted(_ADD_KEYS)})"
        raise MemoryValidationError(msg)
    if "content" not in item:
        msg = f"item {position}: 'content' is required"
        raise MemoryValidationError(msg)
    try:
        return store_request(**item)
    except MemoryValidationError as exc:
        raise MemoryValidationError(f"item {position}: {exc}") from None


def server_url(url: str | None, config: MemvaultConfig | None) -> str | None:
    """The server URL this memory should speak to, if it names one (else None: embedded).

    ``url`` wins; without it the configuration decides (``MEMVAULT_URL``, ``memvault.yaml``),
    so ``MEMVAULT_URL=http://host:8765`` moves unchanged code onto a server.
    """
    target = url
    if target is None:
        cfg = config if config is not None else load_config()
        target = cfg.storage.url
    if isinstance(target, str) and target.strip()[:8].lower().startswith(("http://", "https://")):
        return target.strip()
    return None


def load_export(source: str | Path | Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            msg = f"cannot read import file {path}: {exc.strerror or exc}"
            raise MemoryValidationError(msg) from exc
        except UnicodeDecodeError as exc:
            msg = f"import file {path} is not UTF-8 JSON text"
            raise MemoryValidationError(msg) from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            msg = f"import file {path} is not valid JSON: {exc.msg} (line {exc.lineno})"
            raise MemoryValidationError(msg) from exc
    else:
        data = source
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)):
        msg = "an import must be a JSON array of memory objects"
        raise MemoryValidationError(msg)
    return data


SCOPE_KEYS = ("user_id", "session_id", "run_id", "namespace")
"""Scope ids beyond ``agent_id``, stored as metadata keys and filterable like any metadata."""


def scope_metadata(
    metadata: Mapping[str, Any] | None,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    run_id: str | None = None,
    namespace: str | None = None,
) -> dict[str, Any] | None:
    """``metadata`` with the given scope ids set (None when there is nothing at all).

    Raises:
        MemoryValidationError: a scope id that is not 1-200 printable characters.
    """
    given = {
        "user_id": user_id,
        "session_id": session_id,
        "run_id": run_id,
        "namespace": namespace,
    }
    scopes = {k: check_scope_id(k, v) for k, v in given.items() if v is not None}
    if not scopes:
        return None if metadata is None else dict(metadata)
    return {**(metadata or {}), **scopes}


def check_scope_id(name: str, value: object) -> str:
    """A scope id (``user_id``, ``session_id``...): 1-200 printable characters.

    Raises:
        MemoryValidationError: anything else.
    """
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        msg = f"{name} must be 1-200 characters, got {value!r}"
        raise MemoryValidationError(msg)
    if not value.isprintable():
        msg = f"{name} contains control characters"
        raise MemoryValidationError(msg)
    return value


# Roles whose messages are remembered: what the user said and what the assistant answered.
# System prompts and tool output are the application's, not the conversation's.
_KEPT_ROLES = frozenset({"user", "assistant"})
_KNOWN_ROLES = _KEPT_ROLES | {"system", "developer", "tool", "function"}


def message_text(content: Any) -> str:
    """The text of a chat message's ``content``: a string, or OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        parts = [
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") in {"text", "input_text", "output_text"}
        ]
        return "\n".join(p for p in parts if p)
    msg = f"message content must be text or a list of content parts, got {type(content).__name__}"
    raise MemoryValidationError(msg)


def conversation_turns(messages: object) -> list[tuple[str, str, datetime | None, str | None]]:
    """``(role, text, created_at, name)`` of each user/assistant message, in order.

    ``messages`` are OpenAI-style dicts (``{"role": "user", "content": "..."}``, optional
    ``name`` and ``created_at``/``timestamp``) or objects with ``role`` and ``content`` (such as
    :class:`~memvault.models.ChatMessage`). System, developer and tool messages are skipped, and
    so are messages without text.

    Raises:
        MemoryValidationError: not a list of messages, an unknown role, or no user/assistant
            message with text at all.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        msg = "messages must be a list of chat messages ({'role': ..., 'content': ...})"
        raise MemoryValidationError(msg)
    turns: list[tuple[str, str, datetime | None, str | None]] = []
    for i, message in enumerate(messages):
        if isinstance(message, Mapping):
            role, content = message.get("role"), message.get("content")
            name, when = message.get("name"), message.get("created_at", message.get("timestamp"))
        elif hasattr(message, "role") and hasattr(message, "content"):
            role, content = message.role, message.content
            name, when = getattr(message, "name", None), None
        else:
            msg = f"message {i}: expected a dict with 'role' and 'content'"
            raise MemoryValidationError(msg)
        if role not in _KNOWN_ROLES:
            msg = f"message {i}: unknown role {role!r} (expected user, assistant, system, tool)"
            raise MemoryValidationError(msg)
        try:
            text = message_text(content).strip() if content is not None else ""
        except MemoryValidationError as exc:
            raise MemoryValidationError(f"message {i}: {exc}") from None
        if role not in _KEPT_ROLES or not text:
            continue
        if isinstance(when, str):
            try:
                when = datetime.fromisoformat(when)
            except ValueError:
                msg = f"message {i}: created_at {when!r} is not an ISO 8601 date"
                raise MemoryValidationError(msg) from None
        if when is not None and not isinstance(when, datetime):
            msg = f"message {i}: created_at must be a datetime or an ISO 8601 string"
            raise MemoryValidationError(msg)
        turns.append((str(role), text, when, None if name is None else str(name)))
    if not turns:
        msg = "no user or assistant message with text to remember"
        raise MemoryValidationError(msg)
    return turns


def is_message(item: object) -> bool:
    """True for a chat message (a dict or object with a ``role``), not a memory item."""
    if isinstance(item, Mapping):
        return "role" in item
    return hasattr(item, "role") and hasattr(item, "content")


def query_filters(
    filters: Mapping[str, Any] | None,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    run_id: str | None = None,
    namespace: str | None = None,
) -> tuple[MetadataFilter, ...]:
    """The metadata filters of a read: ``filters`` (mem0-style) AND the given scope ids.

    Raises:
        MemoryValidationError: a malformed filter or scope id.
    """
    scopes = scope_metadata(
        None, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
    )
    return parse_filters(filters) + parse_filters(scopes)


def check_update(*given: object) -> None:
    """Refuse an ``update`` that changes nothing (every field left as None).

    Raises:
        MemoryValidationError: nothing to change.
    """
    if all(value is None for value in given):
        msg = "nothing to update: give content, category, tags, metadata, label, ..."
        raise MemoryValidationError(msg)
