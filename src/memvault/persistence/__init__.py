"""Operational records of an agent system (seed 001): tasks, costs, messages, audit, state.

``create_persistence(config)`` returns a :class:`PersistenceBackend` for one company (tenant):
its own SQLite file or PostgreSQL schema, by default the memory store's own. Connect it, then
use its repositories (``backend.tasks``, ``backend.cost_records``, ``backend.messages``...),
which take and return the frozen models of :mod:`memvault.persistence.models`::

    from memvault.persistence import create_persistence
    from memvault.persistence.models import Task

    async with create_persistence(url="ops.db") as ops:
        await ops.tasks.save(Task(title="triage inbox", assigned_to="agent-1"))
        open_tasks = await ops.tasks.list_tasks(assigned_to="agent-1")
"""

from __future__ import annotations

from memvault.persistence.backend import PersistenceBackend, SQLPersistence
from memvault.persistence.factory import create_persistence, persistence_url

__all__ = ["PersistenceBackend", "SQLPersistence", "create_persistence", "persistence_url"]
