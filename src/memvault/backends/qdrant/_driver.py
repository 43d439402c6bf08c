"""The one place the Qdrant backends import ``qdrant-client`` (extra ``memvault[qdrant]``).

Importing it here, before anything else of the backend, turns its absence into a
:class:`MemoryConfigError` naming the extra to install.
"""

from __future__ import annotations

from memvault.errors import MemoryConfigError

try:
    from qdrant_client import QdrantClient, models
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = "the qdrant backend needs qdrant-client: pip install 'memvault[qdrant]'"
    raise MemoryConfigError(_msg) from exc

__all__ = ["QdrantClient", "models"]
