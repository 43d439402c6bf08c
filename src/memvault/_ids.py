"""Sortable unique ids (UUIDv7, RFC 9562) and a UTC clock."""

from __future__ import annotations

from datetime import UTC, datetime

import uuid_utils

__all__ = ["new_id", "utc_now"]


def new_id() -> str:
    """A new UUIDv7 string; ids made later in the same process sort after earlier ones.

    uuid-utils (Rust ``uuid::Uuid::now_v7``) keeps a process-wide counter within each millisecond
    and guarantees creation order in a process; it reseeds its generator after ``fork``.
    """
    return str(uuid_utils.uuid7())


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)
