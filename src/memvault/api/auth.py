"""Who calls an operation and what it may do: scopes, actors, reasons.

Every interface (REST, MCP, CLI, the service itself) authorises with these. An :class:`Actor` is
an authenticated caller; each :class:`Scope` implies the ones before it (``read`` < ``write`` <
``admin``). This module sits below the service so that operation declarations
(:mod:`memvault.api.operations`) can name the scope each operation needs.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from memvault.backends.factory import check_tenant
from memvault.errors import MemoryValidationError
from memvault.validation import check_agent

__all__ = [
    "DEFAULT_TENANT",
    "Actor",
    "ActorKind",
    "Scope",
    "check_reason",
    "covers",
    "parse_scopes",
    "scope_rank",
]

DEFAULT_TENANT = "default"
_REASON_MAX_CHARS = 500


class Scope(StrEnum):
    """What an API key (an actor) may do; each scope implies the ones before it."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}


def scope_rank(scope: Scope) -> int:
    """Where ``scope`` stands in ``read`` < ``write`` < ``admin`` (for sorting)."""
    return _RANK[scope]


def covers(scopes: Iterable[Scope], scope: Scope | str) -> bool:
    """True if one of ``scopes`` covers ``scope`` (admin > write > read).

    Raises:
        MemoryValidationError: ``scope`` is not a scope.
    """
    wanted = _RANK[_to_scope(scope)]
    return any(_RANK[s] >= wanted for s in scopes)


class ActorKind(StrEnum):
    """Who is calling: an agent (its own memories only), a human operator, or an admin."""

    AGENT = "agent"
    HUMAN = "human"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Actor:
    """The authenticated caller of a service method.

    ``name`` is the agent id for an agent actor, and a user or key name otherwise. Build actors
    with :meth:`agent`, :meth:`human` or :meth:`admin`.
    """

    kind: ActorKind
    name: str
    tenant: str = DEFAULT_TENANT
    scopes: frozenset[Scope] = field(default_factory=lambda: frozenset({Scope.READ, Scope.WRITE}))

    @classmethod
    def agent(
        cls,
        agent_id: str,
        *,
        tenant: str = DEFAULT_TENANT,
        scopes: Iterable[Scope | str] = (Scope.READ, Scope.WRITE),
    ) -> Actor:
        """An agent: reaches its own memories and its tenant's shared knowledge."""
        return cls(
            ActorKind.AGENT, check_agent(agent_id), check_tenant(tenant), parse_scopes(scopes)
        )

    @classmethod
    def human(
        cls,
        name: str,
        *,
        tenant: str = DEFAULT_TENANT,
        scopes: Iterable[Scope | str] = (Scope.READ, Scope.WRITE),
    ) -> Actor:
        """A human operator: reaches every agent of the tenant, within ``scopes``."""
        return cls(ActorKind.HUMAN, _name(name), check_tenant(tenant), parse_scopes(scopes))

    @classmethod
    def admin(cls, name: str = "admin", *, tenant: str = DEFAULT_TENANT) -> Actor:
        """An administrator of the tenant: every agent, every operation."""
        return cls(ActorKind.ADMIN, _name(name), check_tenant(tenant), frozenset(Scope))

    @property
    def label(self) -> str:
        """How audit records name this actor, e.g. ``agent:dev-1`` or ``human:alice``."""
        return f"{self.kind.value}:{self.name}"

    def allows(self, scope: Scope) -> bool:
        """True if one of the actor's scopes covers ``scope`` (admin > write > read)."""
        return covers(self.scopes, scope)


_VALID_SCOPES = ", ".join(s.value for s in Scope)


def _to_scope(value: object) -> Scope:
    if isinstance(value, Scope):
        return value
    if isinstance(value, str):
        try:
            return Scope(value.strip().lower())
        except ValueError:
            pass
    msg = f"unknown scope {value!r}: valid scopes are {_VALID_SCOPES}"
    raise MemoryValidationError(msg)


def parse_scopes(
    scopes: Iterable[Scope | str] | Scope | str, *, owner: str = "an actor"
) -> frozenset[Scope]:
    """Scopes from names (case-insensitive) or members; one string is one scope.

    Raises:
        MemoryValidationError: an unknown scope, none at all, or not a list of scopes.
    """
    items: Iterable[object]
    if isinstance(scopes, str):  # one scope (a Scope is a str too), not its characters
        items = (scopes,)
    else:
        try:
            items = builtins.list(scopes)
        except TypeError:
            msg = f"scopes must be a list of scopes ({_VALID_SCOPES}), got {type(scopes).__name__}"
            raise MemoryValidationError(msg) from None
    found = frozenset(_to_scope(item) for item in items)
    if not found:
        msg = f"{owner} needs at least one scope ({_VALID_SCOPES})"
        raise MemoryValidationError(msg)
    return found


def _name(name: str) -> str:
    if not isinstance(name, str) or not name.strip() or not name.isprintable() or len(name) > 100:
        msg = f"invalid actor name {name!r}: use 1-100 printable characters"
        raise MemoryValidationError(msg)
    return name.strip()


def check_reason(reason: str | None, *, required: bool = False) -> str | None:
    """A stated reason, stripped; required ones must not be blank.

    Raises:
        MemoryValidationError: blank when required, not a string, or longer than 500 chars.
    """
    if reason is None or (isinstance(reason, str) and not reason.strip()):
        if required:
            msg = "a non-blank reason is required for this destructive operation"
            raise MemoryValidationError(msg)
        return None
    if not isinstance(reason, str) or len(reason) > _REASON_MAX_CHARS:
        msg = f"reason must be a string of at most {_REASON_MAX_CHARS} characters"
        raise MemoryValidationError(msg)
    return reason.strip()
