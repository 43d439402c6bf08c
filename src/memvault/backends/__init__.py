"""Storage backends: in-memory, SQLite (embedded default), PostgreSQL, composite."""

from memvault.backends.factory import create_memory_backend, open_backend

__all__ = ["create_memory_backend", "open_backend"]
