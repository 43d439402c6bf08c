"""Helpers of the session tests (a module of its own: test files cannot import conftest)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memvault.sessions import SessionStore

MakeStore = Callable[..., SessionStore]


class StepClock:
    """A clock that advances one second per reading (exact, distinct timestamps)."""

    def __init__(self, start: datetime = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now
