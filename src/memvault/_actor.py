"""Who is acting: the identity and reason that audit records carry.

The service layer (REST, MCP, CLI through :class:`~memvault.service.MemoryService`) knows the
real actor of a call (an API key's agent, a human operator, an admin) and the reason given for a
destructive operation. Stores write audit records deep inside their transactions, where that
information is not passed along; a context variable carries it there instead of widening every
backend signature. Outside a service call the agent whose memories change is the actor.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["acting_as", "audit_actor", "audit_details"]

_ACTOR: ContextVar[tuple[str, str | None] | None] = ContextVar("memvault_actor", default=None)


@contextmanager
def acting_as(actor: str, reason: str | None = None) -> Iterator[None]:
    """Audit records written inside the block name ``actor`` (and ``reason``, when given)."""
    token = _ACTOR.set((actor, reason))
    try:
        yield
    finally:
        _ACTOR.reset(token)


def audit_actor(default: str) -> str:
    """The acting identity, or ``default`` (the agent itself) outside a service call."""
    current = _ACTOR.get()
    return default if current is None else current[0]


def audit_details(details: dict[str, Any] | None = None) -> dict[str, Any]:
    """``details`` plus the caller's ``reason`` when one was given."""
    out = dict(details or {})
    current = _ACTOR.get()
    if current is not None and current[1]:
        out.setdefault("stated_reason", current[1])
    return out
