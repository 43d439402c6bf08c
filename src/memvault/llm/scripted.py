"""A scripted LLM provider for tests: it replays prepared answers instead of calling a model."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from memvault.llm._protocol import ChatMessage, LLMResponse
from memvault.llm.errors import ProviderError

__all__ = ["ScriptedLLM", "ScriptedResponse"]

ScriptedResponse = str | Exception | Callable[[Sequence[ChatMessage]], str]
"""One scripted step: a reply text, an exception to raise, or a function of the messages."""


class ScriptedLLM:
    """Replays scripted responses in order, so code that uses an LLM can be tested offline.

    Each call consumes the next entry of ``responses``: a string is returned as the reply, an
    exception instance is raised, and a callable is called with the messages and its result
    returned (handy for echoing or asserting on the prompt). When the script runs out the call
    raises a non-retryable :class:`ProviderError`, unless ``repeat_last`` is set, in which case
    the last entry is used again.

    Every call is recorded, including those that raised: ``calls[i]`` holds the messages of call
    ``i`` and ``call_kwargs[i]`` its ``temperature``, ``max_tokens`` and ``json_schema``.

    Token counts are whitespace word counts: deterministic, and good enough to test accounting.
    """

    def __init__(
        self,
        responses: Sequence[ScriptedResponse],
        *,
        model_id: str = "scripted",
        repeat_last: bool = False,
    ) -> None:
        self._responses: list[ScriptedResponse] = list(responses)
        self._model_id = model_id
        self._repeat_last = repeat_last
        # One cursor shared with the views with_model() makes (a list: copied by reference).
        self._cursor = [0]
        self.calls: list[list[ChatMessage]] = []
        self.models: list[str] = []
        """The model each call asked (the view's, for calls through with_model())."""
        self.call_kwargs: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        """Show the model id and how far the script has progressed."""
        return (
            f"ScriptedLLM(model_id={self._model_id!r}, "
            f"used={self._cursor[0]}/{len(self._responses)}, calls={len(self.calls)})"
        )

    @property
    def model_id(self) -> str:
        """The model id given at construction (``"scripted"`` by default)."""
        return self._model_id

    def with_model(self, model: str) -> ScriptedLLM:
        """A view of this script answering as ``model``: it shares the responses, the position
        and the recorded calls (``models`` records which model each call asked)."""
        twin = copy.copy(self)
        twin._model_id = model
        return twin

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet."""
        return len(self._responses) - self._cursor[0]

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """Record the call and play the next scripted step.

        Raises:
            ProviderError: the script is exhausted (and ``repeat_last`` is off).
            Exception: whatever exception the script holds at this step.
        """
        self.calls.append(list(messages))
        self.models.append(self._model_id)
        self.call_kwargs.append(
            {"temperature": temperature, "max_tokens": max_tokens, "json_schema": json_schema}
        )
        step = self._next_step()
        if isinstance(step, Exception):
            raise step
        text = step if isinstance(step, str) else step(messages)
        return LLMResponse(
            text=text,
            model=self._model_id,
            prompt_tokens=sum(len(m.content.split()) for m in messages),
            completion_tokens=len(text.split()),
            finish_reason="stop",
        )

    def _next_step(self) -> ScriptedResponse:
        if self._cursor[0] < len(self._responses):
            step = self._responses[self._cursor[0]]
            self._cursor[0] += 1
            return step
        if self._repeat_last and self._responses:
            return self._responses[-1]
        # A ProviderError rather than an AssertionError: code under test must see the same kind
        # of failure a real provider raises, so its fallback path runs instead of crashing.
        raise ProviderError(
            f"ScriptedLLM script exhausted: call #{len(self.calls)} but only "
            f"{len(self._responses)} scripted response(s); add responses or pass repeat_last=True",
            retryable=False,
        )
