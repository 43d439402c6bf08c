"""The Qdrant backend (extra ``memvault[qdrant]``): ``qdrant:///dir`` or ``qdrant+http://host:port``."""

from memvault.backends.qdrant.backend import QdrantBackend

__all__ = ["QdrantBackend"]
