"""Working memory: a per-task scratchpad kept in process only, within a token budget.

Working memory is what an agent holds while it works on one task (intermediate results, the
plan, open questions). It is never persisted: it lives and dies with the :class:`WorkingMemory`
object. When the notes exceed the budget the oldest are dropped first, like a human's working
memory, so ``render()`` always fits the prompt space given to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memvault._ids import new_id, utc_now
from memvault.errors import MemoryValidationError
from memvault.models import check_content
from memvault.retrieval.packing import estimate_tokens

__all__ = ["WorkingMemory", "WorkingNote"]


@dataclass(frozen=True, slots=True)
class WorkingNote:
    """One scratchpad note."""

    id: str
    content: str
    created_at: datetime
    tokens: int


class WorkingMemory:
    """A task's scratchpad (WORKING category), in process only, bounded by ``token_budget``."""

    def __init__(self, task_id: str, *, token_budget: int = 1000) -> None:
        """Start an empty scratchpad for ``task_id``."""
        if not task_id.strip():
            msg = "task_id must not be blank"
            raise MemoryValidationError(msg)
        if token_budget < 1:
            msg = "token_budget must be >= 1"
            raise MemoryValidationError(msg)
        self.task_id = task_id
        self.token_budget = token_budget
        self._notes: list[WorkingNote] = []
        self.dropped = 0

    @property
    def notes(self) -> tuple[WorkingNote, ...]:
        """The notes kept, oldest first."""
        return tuple(self._notes)

    @property
    def tokens(self) -> int:
        """Estimated tokens of the notes kept."""
        return sum(n.tokens for n in self._notes)

    def add(self, content: str) -> str:
        """Add a note; older notes are dropped while the total exceeds the budget."""
        try:
            text = check_content(content)
        except ValueError as exc:
            raise MemoryValidationError(str(exc)) from None
        tokens = estimate_tokens(text)
        if tokens > self.token_budget:
            msg = f"note of ~{tokens} tokens exceeds the working memory budget {self.token_budget}"
            raise MemoryValidationError(msg)
        note = WorkingNote(new_id(), text, utc_now(), tokens)
        self._notes.append(note)
        while self.tokens > self.token_budget:
            self._notes.pop(0)
            self.dropped += 1
        return note.id

    def remove(self, note_id: str) -> bool:
        """Remove one note; False if it is not there."""
        before = len(self._notes)
        self._notes = [n for n in self._notes if n.id != note_id]
        return len(self._notes) < before

    def clear(self) -> None:
        """Forget every note (the task is done)."""
        self._notes.clear()

    def render(self) -> str:
        """The notes as a prompt section ("" when empty)."""
        if not self._notes:
            return ""
        lines = [f"- {n.content}" for n in self._notes]
        return "\n".join([f"## Working memory (task {self.task_id})", *lines])
