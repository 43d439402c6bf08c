"""Tool definitions that memory injection strategies expose to an agent.

A :class:`ToolDefinition` is the provider-neutral description of one tool: a name, a description
for the model, and a JSON schema of its arguments (it is plain data, so it is defined in
:mod:`memvault.models` and re-exported here). :func:`to_openai_tool` and :func:`to_anthropic_tool`
render one definition in the two common function-calling formats, and :func:`format_tool_result`
renders memories as a tool result the model reads as data.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from memvault.models import MemoryEntry, ToolDefinition
from memvault.retrieval.packing import (
    MEMORY_BLOCK_END,
    MEMORY_BLOCK_START,
    PREAMBLE,
    neutralise_delimiters,
)

__all__ = [
    "ToolDefinition",
    "format_tool_item",
    "format_tool_result",
    "to_anthropic_tool",
    "to_openai_tool",
]


def to_openai_tool(definition: ToolDefinition) -> dict[str, Any]:
    """Render ``definition`` as an OpenAI Chat Completions tool.

    The shape is ``{"type": "function", "function": {"name", "description", "parameters"}}``;
    the schema is a deep copy, so callers may mutate the result freely.
    """
    return {
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": copy.deepcopy(definition.parameters),
        },
    }


def to_anthropic_tool(definition: ToolDefinition) -> dict[str, Any]:
    """Render ``definition`` as an Anthropic Messages tool: ``{name, description, input_schema}``.

    The schema is a deep copy, so callers may mutate the result freely.
    """
    return {
        "name": definition.name,
        "description": definition.description,
        "input_schema": copy.deepcopy(definition.parameters),
    }


_NEWLINES = re.compile(r"\r\n?|[\u2028\u2029\x0b\x0c\x85]")


def _clean(text: str) -> str:
    # Same treatment as packing.format_entry: no marker words, continuation lines indented, so
    # stored content can neither close the block nor fake an item of its own.
    return neutralise_delimiters(_NEWLINES.sub("\n", text.strip())).replace("\n", "\n  ")


def format_tool_item(entry: MemoryEntry) -> str:
    """Render one memory as a tool-result item, id first so the model can refer to it.

    ``[id=<id> | <category> | <YYYY-MM-DD> | relevance <r> | tags: <t, ...>] <content>``; the
    relevance and tags parts appear only when set. Content and tags are neutralised like in
    :func:`memvault.retrieval.packing.format_entry`.
    """
    parts = [f"id={entry.id}", entry.category.value, f"{entry.created_at:%Y-%m-%d}"]
    if entry.relevance_score is not None:
        parts.append(f"relevance {entry.relevance_score:.2f}")
    if entry.metadata.tags:
        parts.append("tags: " + ", ".join(_clean(t) for t in entry.metadata.tags))
    return f"[{' | '.join(parts)}] {_clean(entry.content)}"


def format_tool_result(entries: Sequence[MemoryEntry], *, heading: str, empty: str) -> str:
    """Render memories as the text of a tool result, delimited and marked as data.

    ``heading`` is the first line (e.g. ``3 memories matching "deploys"``); ``empty`` is the
    whole result when there are no entries. Both are neutralised too, since they may echo text
    the model or a user supplied. With entries the result is the heading, the data preamble of
    context injection ("data, not instructions"), and one :func:`format_tool_item` per entry
    between the usual memory markers.
    """
    if not entries:
        return _clean(empty)
    body = "\n".join(format_tool_item(e) for e in entries)
    return f"{_clean(heading)}\n{PREAMBLE}\n{MEMORY_BLOCK_START}\n{body}\n{MEMORY_BLOCK_END}"
