"""ToolDefinition: the provider-neutral description of a memory tool."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memvault.injection import ToolDefinition

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
    "required": ["query"],
}


def test_tool_definition_holds_name_description_and_schema() -> None:
    tool = ToolDefinition(
        name="search_memory", description="Search your memories.", parameters=SEARCH_SCHEMA
    )
    assert tool.parameters["required"] == ["query"]
    assert ToolDefinition(name="noop", description="Nothing.").parameters == {
        "type": "object",
        "properties": {},
    }


def test_tool_definition_is_frozen() -> None:
    tool = ToolDefinition(name="recall_memory", description="Recall one memory by id.")
    with pytest.raises(ValidationError):
        tool.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "semi;colon"])
def test_tool_names_follow_the_provider_rules(name: str) -> None:
    with pytest.raises(ValidationError, match="invalid tool name"):
        ToolDefinition(name=name, description="d")


def test_tool_parameters_must_be_an_object_schema() -> None:
    with pytest.raises(ValidationError, match="object"):
        ToolDefinition(name="t", description="d", parameters={"type": "string"})
    with pytest.raises(ValidationError):
        ToolDefinition(name="t", description="", parameters=SEARCH_SCHEMA)
