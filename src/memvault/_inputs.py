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
from memvault.models import MemoryCategory, MemoryMetadata, MemoryStoreRequest, aware_utc
from memvault.validation import model_error

__all__ = [
    "CategoryLike",
    "aware",
    "categories",
    "item_request",
    "load_export",
    "parse_category",
    "server_url",
    "store_request",
]

CategoryLike = MemoryCategory | str


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
