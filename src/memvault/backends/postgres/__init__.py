"""The PostgreSQL + pgvector backend (extra ``memvault[postgres]``)."""

from memvault.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresBackend"]
