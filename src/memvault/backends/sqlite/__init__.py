"""The embedded SQLite backend."""

from memvault.backends.sqlite.backend import SQLiteBackend

__all__ = ["SQLiteBackend"]
