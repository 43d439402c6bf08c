"""Reusable test helpers: the backend contract suite (needs pytest and pytest-asyncio)."""

from memvault.testing.contract import BackendContract, BackendFactory, SharedKnowledgeContract

__all__ = ["BackendContract", "BackendFactory", "SharedKnowledgeContract"]
