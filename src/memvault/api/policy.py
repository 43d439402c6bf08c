"""Who may run an operation on which agent: the authorisation policy each operation declares.

An :class:`~memvault.api.operations.Operation` names a :class:`Scope` (``read`` < ``write`` <
``admin``) and a :class:`Policy`, which says whose memories the call reaches:

* :data:`AGENT`: the request's ``agent_id``; agent keys reach only their own (never a skill
  pool's);
* :data:`AGENT_OR_TENANT`: the request's ``agent_id``, or without one the whole tenant, which
  agent keys never reach (:data:`AGENT_OR_ADMIN_TENANT`: the whole tenant needs ``admin``);
* :data:`SELF`: agent keys act as themselves (an ``agent_id`` given must be their own); humans
  and admins act for the agent the request names, else for the tenant;
* :data:`TENANT`: the whole tenant (never agent keys);
* :func:`humans_only`: human and admin callers, whoever the request names;
* :data:`ANY`: every caller with the scope (the tenant's organisational knowledge).

:meth:`memvault.service.MemoryService.call` checks both once, before the implementation runs,
and hands the implementation a :class:`Call`: the actor and the validated agent id.
:class:`Audit` says under which name (and reason) the audit records of the call are written.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from memvault.api.auth import Actor, ActorKind, Scope
from memvault.errors import MemoryPermissionError
from memvault.learning.models import is_pool_id
from memvault.validation import check_agent

__all__ = [
    "AGENT",
    "AGENT_OR_ADMIN_TENANT",
    "AGENT_OR_TENANT",
    "ANY",
    "SELF",
    "TENANT",
    "Audit",
    "Call",
    "Policy",
    "Reach",
    "check_scope",
    "humans_only",
    "reach",
]


class Reach(StrEnum):
    """Whose memories a policy lets a call reach (see the module's documentation)."""

    AGENT = "agent"
    AGENT_OR_TENANT = "agent_or_tenant"
    SELF = "self"
    TENANT = "tenant"
    HUMANS = "humans"
    ANY = "any"


class Audit(StrEnum):
    """How a call's audit records name who did it.

    ``none``: as the implementation decides (reads, and writes that audit nothing);
    ``actor``: the calling actor; ``reason``: the actor and the request's ``reason``, which is
    checked (:func:`~memvault.api.auth.check_reason`) and not passed to the implementation.
    """

    NONE = "none"
    ACTOR = "actor"
    REASON = "reason"


@dataclass(frozen=True, slots=True)
class Policy:
    """One operation's authorisation rule, beyond its scope.

    ``tenant_scope`` is the scope a tenant-wide call (no ``agent_id``) needs when it is higher
    than the operation's (an export of every agent is ``admin``, of one agent ``read``);
    ``refusal`` completes "agent:x may not ..." for :func:`humans_only`.
    """

    reach: Reach
    tenant_scope: Scope | None = None
    refusal: str = ""

    def authorise(self, actor: Actor, scope: Scope, agent_id: str | None) -> str | None:
        """The validated agent id the call reaches (None: the tenant, or no agent at all).

        ``agent_id`` is the request's (None when it gives none or has no such field).

        Raises:
            MemoryPermissionError: the actor may not make this call.
            MemoryValidationError: an invalid agent id.
        """
        if self.reach is Reach.ANY:
            check_scope(actor, scope)
            return None
        if self.reach is Reach.HUMANS:
            if actor.kind is ActorKind.AGENT:
                msg = f"{actor.label} may not {self.refusal}: only human and admin callers may"
                raise MemoryPermissionError(msg)
            check_scope(actor, scope)
            return None
        if self.reach is Reach.TENANT:
            return reach(actor, scope, None)
        if self.reach is Reach.SELF and actor.kind is ActorKind.AGENT:
            return reach(actor, scope, agent_id or actor.name)
        if agent_id is None and self.reach is not Reach.AGENT:
            return reach(actor, self.tenant_scope or scope, None)
        return reach(actor, scope, agent_id)


AGENT = Policy(Reach.AGENT)
"""The request's ``agent_id``; agent keys reach only their own memories."""
AGENT_OR_TENANT = Policy(Reach.AGENT_OR_TENANT)
"""The request's ``agent_id``, or (none given) the whole tenant, never for agent keys."""
AGENT_OR_ADMIN_TENANT = Policy(Reach.AGENT_OR_TENANT, tenant_scope=Scope.ADMIN)
"""As :data:`AGENT_OR_TENANT`, but the whole tenant needs ``admin`` (an export of every agent;
one agent's needs the operation's own scope)."""
SELF = Policy(Reach.SELF)
"""Agent keys act as themselves; humans for the agent the request names, else the tenant."""
TENANT = Policy(Reach.TENANT)
"""The whole tenant: never agent keys."""
ANY = Policy(Reach.ANY)
"""Every caller with the scope."""


def humans_only(refusal: str) -> Policy:
    """Human and admin callers only; agents are told they ``may not {refusal}``."""
    return Policy(Reach.HUMANS, refusal=refusal)


def check_scope(actor: Actor, scope: Scope) -> None:
    """Refuse an actor without ``scope``.

    Raises:
        MemoryPermissionError: the actor lacks the scope.
    """
    if not actor.allows(scope):
        msg = f"{actor.label} lacks the {scope.value!r} scope"
        raise MemoryPermissionError(msg)


def reach(actor: Actor, scope: Scope, agent_id: str | None) -> str | None:
    """The validated agent id the actor may reach with ``scope``.

    ``agent_id=None`` means the whole tenant, which agent actors never reach.

    Raises:
        MemoryPermissionError: the actor lacks the scope, or may not reach the agent.
        MemoryValidationError: an invalid agent id.
    """
    check_scope(actor, scope)
    if agent_id is None:
        if actor.kind is ActorKind.AGENT:
            msg = f"{actor.label} may only use its own memories (give agent_id)"
            raise MemoryPermissionError(msg)
        return None
    agent = check_agent(agent_id)
    if actor.kind is ActorKind.AGENT and (agent != actor.name or is_pool_id(agent)):
        # Skill pools (_org, _role:*, _dept:*) are written through approvals and org
        # memory's write rules only, never by an agent key named after one.
        msg = f"{actor.label} may not use the memories of agent {agent!r}"
        raise MemoryPermissionError(msg)
    return agent


@dataclass(frozen=True, slots=True)
class Call:
    """One authorised call: the actor, and the agent its policy let it reach."""

    actor: Actor
    agent: str | None = None

    @property
    def tenant(self) -> str:
        """The actor's tenant (whose stores the call uses)."""
        return self.actor.tenant

    @property
    def agent_id(self) -> str:
        """The validated agent id of an agent-bound call.

        Raises:
            MemoryPermissionError: the call reaches no single agent (a policy mismatch).
        """
        if self.agent is None:
            msg = f"{self.actor.label}: this operation needs an agent_id"
            raise MemoryPermissionError(msg)
        return self.agent
