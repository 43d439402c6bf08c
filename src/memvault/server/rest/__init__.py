"""The REST API: FastAPI routers under ``/v1`` over :class:`~memvault.service.MemoryService`.

``create_app(service, keys=...)`` builds the ASGI app; ``memvault serve`` runs it with uvicorn.
Every request except ``/health`` needs ``Authorization: Bearer <key>`` (keys from
``memvault keys create``) unless the app is built with ``keys=None`` (``serve --no-auth``, which
the CLI allows on loopback only). A key names its tenant, so a request reaches that tenant's
store and nothing else; a key bound to an agent acts as that agent.

Errors always have the body ``{"error": {"code", "message"}}`` with the status from the one
table in :mod:`memvault.server.errors`; unexpected failures are logged and answered with a
generic 500, never a traceback.

Modules: :mod:`~memvault.server.rest.app` (assembly), :mod:`~memvault.server.rest.routes` (one
router per resource, built from :mod:`memvault.api.operations`), :mod:`~memvault.server.rest.auth`
(the one auth dependency), :mod:`~memvault.server.rest.errors` (the one error table's handlers),
:mod:`~memvault.server.rest.guards` (body limit, MCP endpoint).
"""

from __future__ import annotations

from memvault.server.rest.app import ServerSettings, create_app
from memvault.server.rest.auth import KEY_CACHE_SECONDS, actor_for_key
from memvault.server.rest.guards import DEFAULT_MAX_BODY_BYTES, LOCAL_HOSTS, declared_length

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "KEY_CACHE_SECONDS",
    "LOCAL_HOSTS",
    "ServerSettings",
    "actor_for_key",
    "create_app",
    "declared_length",
]
