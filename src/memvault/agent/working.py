"""Working memory: a per-task scratchpad kept in process only, within a token budget.

Working memory is what an agent holds while it works on one task (intermediate results, the
plan, open questions). It is never persisted: it lives and dies with the :class:`WorkingMemory`
object. When the notes exceed the budget the oldest are dropped first, like a human's working
memory, so ``render()`` always fits the prompt space given to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memvault._ids import new_id, utc_now
from memvault.errors import MemoryValidationError
from memvault.models import check_content
from memvault.retrieval.packing import estimate_tokens

__all__ = ["DEFAULT_WORKING_BUDGET", "WorkingMemory", "WorkingNote"]

DEFAULT_WORKING_BUDGET = 1000
"""Tokens a scratchpad holds unless told otherwise."""


@dataclass(frozen=True, slots=True)
class WorkingNote:
    """One scratchpad note."""

    id: str
    content: str
    created_at: datetime
    tokens: int


class WorkingMemory:
    """A task's scratchpad (WORKING category), in process only, bounded by ``token_budget``."""

    def __init__(self, task_id: str, *, token_budget: int = DEFAULT_WORKING_BUDGET) -> None:
        """Start an empty scratchpad for ``task_id``."""
        if not isinstance(task_id, str) or not task_id.strip():
            msg = "task_id must be a non-blank string"
            raise MemoryValidationError(msg)
        if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
            msg = "token_budget must be an integer >= 1"
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

    def to_json(self) -> dict[str, Any]:
        """The scratchpad as JSON: task, budget, tokens, dropped count, notes and rendering."""
        return {
            "task_id": self.task_id,
            "token_budget": self.token_budget,
            "tokens": self.tokens,
            "dropped": self.dropped,
            "notes": [
                {
                    "id": n.id,
                    "content": n.content,
                    "created_at": n.created_at.isoformat(),
                    "tokens": n.tokens,
                }
                for n in self._notes
            ],
            "text": self.render(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkingMemory:
        """A detached copy of a scratchpad from :meth:`to_json` (e.g. one a server keeps).

        Raises:
            MemoryValidationError: the data is not a scratchpad.
        """
        try:
            pad = cls(str(data["task_id"]), token_budget=int(data["token_budget"]))
            pad._notes = [
                WorkingNote(
                    str(n["id"]),
                    str(n["content"]),
                    datetime.fromisoformat(str(n["created_at"])),
                    int(n["tokens"]),
                )
                for n in data["notes"]
            ]
            pad.dropped = int(data.get("dropped", 0))
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"not a working memory: {exc}"
            raise MemoryValidationError(msg) from None
        return pad
