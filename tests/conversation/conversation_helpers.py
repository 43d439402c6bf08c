"""Types shared by the conversation tests (a module of its own: ``conftest`` is ambiguous)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from memvault.conversation import SQLConversationStore


class MakeStore(Protocol):
    """Builds a fresh conversation store of the parametrised kind."""

    def __call__(self, clock: Callable[[], datetime] | None = None) -> SQLConversationStore: ...
