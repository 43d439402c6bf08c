"""memvault's operations, declared once: inputs, scopes, documentation, interfaces.

See :mod:`memvault.api.operations` for the table every interface (REST, MCP, CLI, the remote
client) is driven by, :mod:`memvault.api.requests` / :mod:`memvault.api.responses` for the wire
models, and :mod:`memvault.api.auth` for actors and scopes.
"""

from __future__ import annotations

from memvault.api.auth import DEFAULT_TENANT, Actor, ActorKind, Scope
from memvault.api.operations import OPERATIONS, Http, Operation, Tool, get_operation

__all__ = [
    "DEFAULT_TENANT",
    "OPERATIONS",
    "Actor",
    "ActorKind",
    "Http",
    "Operation",
    "Scope",
    "Tool",
    "get_operation",
]
