"""A scripted model for the OpenAI Agents SDK: the SDK's Model interface, answers from a list."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from agents import ModelResponse, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

Step = Callable[[Any], Any]


def call(name: str, arguments: dict[str, Any] | str, call_id: str = "call-1") -> Any:
    """A function-call output item."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=text, id=f"fc-{call_id}"
    )


def say(text: str) -> Any:
    """An assistant text message output item."""
    return ResponseOutputMessage(
        id="msg-1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """Each request gets the next step: an output item, or a function of the request's input."""

    def __init__(self, steps: list[Any]) -> None:
        self.steps = list(steps)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any):  # type: ignore[no-untyped-def]
        self.inputs.append(input)
        step = self.steps.pop(0)
        item = step(input) if callable(step) else step
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError
