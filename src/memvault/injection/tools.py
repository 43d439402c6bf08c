"""Tool definitions that memory injection strategies expose to an agent.

A :class:`ToolDefinition` is the provider-neutral description of one tool: a name, a description
for the model, and a JSON schema of its arguments.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ToolDefinition"]

# The name rule shared by OpenAI function tools and Anthropic tools.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolDefinition(BaseModel):
    """One tool an agent may call: name, description and a JSON schema of its parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = Field(min_length=1)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("name", mode="after")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _TOOL_NAME.match(value):
            msg = f"invalid tool name {value!r}: 1-64 letters, digits, '_' or '-'"
            raise ValueError(msg)
        return value

    @field_validator("parameters", mode="after")
    @classmethod
    def _parameters(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Tool-calling APIs take an object schema for arguments; anything else fails there later
        # with a far less helpful message.
        if value.get("type") != "object":
            msg = 'tool parameters must be a JSON schema of type "object"'
            raise ValueError(msg)
        return value
