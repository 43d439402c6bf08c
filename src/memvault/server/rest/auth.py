"""Authentication of REST (and MCP-over-HTTP) requests: bearer API key -> :class:`Actor`.

One dependency, :data:`Caller`, is shared by every router; the authenticated actor is also left
in the ASGI scope (``memvault.actor``) where the MCP tools read it.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memvault.api.auth import DEFAULT_TENANT, Actor, ActorKind, Scope
from memvault.errors import MemoryAuthenticationError

if TYPE_CHECKING:
    from memvault.server.keys import ApiKey, KeyStore

__all__ = ["KEY_CACHE_SECONDS", "Authenticator", "Caller", "actor_for_key", "current_actor"]

# How long an authenticated key is trusted without asking the key store again: a revocation
# (from any process or worker sharing the key store) takes effect within this bound, under one
# second, while a busy server still asks the store at most twice a second per key.
KEY_CACHE_SECONDS = 0.5


def actor_for_key(key: ApiKey) -> Actor:
    """The actor an API key acts as: its agent, or (unbound) a human/admin of its tenant."""
    scopes = list(key.scopes)
    if key.agent_id is not None:
        return Actor.agent(key.agent_id, tenant=key.tenant, scopes=scopes)
    if Scope.ADMIN in scopes:
        return Actor(ActorKind.ADMIN, key.name, key.tenant, frozenset(scopes))
    return Actor.human(key.name, tenant=key.tenant, scopes=scopes)


class Authenticator:
    """Bearer key -> Actor, with a short cache in front of the key store.

    Without a key store (``keys=None``) every request acts as the local admin. ``clock`` gives
    the time in seconds the cache entries expire by (default :func:`time.monotonic`; only
    differences between its readings count, so a test can pass a clock it advances).
    ``tenant_limit`` is awaited with the tenant of every authenticated request and raises
    :class:`~memvault.errors.MemoryRateLimitError` when that tenant is over its budget
    (:class:`~memvault.server.rest.guards.TenantLimit`).
    """

    def __init__(
        self,
        keys: KeyStore | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        tenant_limit: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._keys = keys
        self._clock = clock
        self._tenant_limit = tenant_limit
        self._cache: dict[str, tuple[float, Actor]] = {}
        self._local = Actor.admin("local", tenant=DEFAULT_TENANT)

    async def __call__(self, header: str | None) -> Actor:
        actor = await self._authenticate(header)
        if self._tenant_limit is not None:
            await self._tenant_limit(actor.tenant)
        return actor

    async def _authenticate(self, header: str | None) -> Actor:
        if self._keys is None:
            return self._local
        if not header:
            msg = "missing API key: send 'Authorization: Bearer <key>'"
            raise MemoryAuthenticationError(msg)
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            msg = "malformed Authorization header: expected 'Bearer <key>'"
            raise MemoryAuthenticationError(msg)
        digest = hashlib.sha256(secret.strip().encode("utf-8", "replace")).hexdigest()
        now = self._clock()
        hit = self._cache.get(digest)
        if hit is not None and hit[0] > now:
            return hit[1]
        key = await asyncio.to_thread(self._keys.authenticate, secret.strip())
        if key is None:
            self._cache.pop(digest, None)
            msg = "invalid or revoked API key"
            raise MemoryAuthenticationError(msg)
        actor = actor_for_key(key)
        self._remember(digest, now, actor)
        return actor

    def _remember(self, name: str, now: float, actor: Actor) -> None:
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[name] = (now + KEY_CACHE_SECONDS, actor)

    async def key_id(self, secret: str) -> str | None:
        """The id of the valid key ``secret`` belongs to (None without a key store).

        Raises:
            MemoryAuthenticationError: an unknown, malformed or revoked secret.
        """
        if self._keys is None:
            return None
        key = await asyncio.to_thread(self._keys.authenticate, secret.strip())
        if key is None:
            msg = "invalid or revoked API key"
            raise MemoryAuthenticationError(msg)
        return key.id

    async def by_key_id(self, key_id: str | None) -> Actor:
        """The actor of the key with this id, checked again (cached as briefly as a secret).

        A dashboard session holds the key's id, not its secret: a revoked key ends every
        session acting with it within :data:`KEY_CACHE_SECONDS`, on every server instance.

        Raises:
            MemoryAuthenticationError: no such key, or it was revoked.
        """
        if self._keys is None:
            return self._local
        if key_id is None:
            msg = "the session has no API key"
            raise MemoryAuthenticationError(msg)
        name, now = f"id:{key_id}", self._clock()
        hit = self._cache.get(name)
        if hit is not None and hit[0] > now:
            return hit[1]
        key = await asyncio.to_thread(self._keys.get, key_id)
        if key is None or key.revoked:
            self._cache.pop(name, None)
            msg = "invalid or revoked API key"
            raise MemoryAuthenticationError(msg)
        actor = actor_for_key(key)
        self._remember(name, now, actor)
        return actor


_bearer = HTTPBearer(auto_error=False, description="An API key from `memvault keys create`.")


async def current_actor(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Actor:
    """The authenticated caller (FastAPI dependency); also left in the ASGI scope."""
    auth: Authenticator = request.app.state.memvault_auth
    actor = await auth(request.headers.get("authorization"))
    request.scope["memvault.actor"] = actor
    return actor


Caller = Annotated[Actor, Depends(current_actor)]
"""The route parameter type of the authenticated caller."""
