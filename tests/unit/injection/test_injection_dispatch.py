"""ToolRegistry: one definition rendered for OpenAI and Anthropic, dispatch with validation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memvault.errors import (
    MemoryConfigError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.injection import (
    ToolArgumentError,
    ToolDefinition,
    ToolRegistry,
    to_anthropic_tool,
    to_openai_tool,
    validate_arguments,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
        "category": {"type": "string", "enum": ["semantic", "episodic"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "weight": {"type": "number"},
        "exact": {"type": "boolean"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
SEARCH = ToolDefinition(name="search_memory", description="Search memories.", parameters=SCHEMA)
PING = ToolDefinition(name="ping", description="Answer pong.")


class Recorder:
    """A handler that records its calls and echoes the arguments it got."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, agent_id: str, args: dict[str, Any]) -> str:
        self.calls.append((agent_id, args))
        return json.dumps(args, sort_keys=True)


@pytest.fixture
def handler() -> Recorder:
    return Recorder()


@pytest.fixture
def registry(handler: Recorder) -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(SEARCH, handler)
    reg.register(PING, handler)
    return reg


def test_one_definition_renders_as_openai_and_anthropic_tools() -> None:
    openai = to_openai_tool(SEARCH)
    anthropic = to_anthropic_tool(SEARCH)
    assert openai == {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": "Search memories.",
            "parameters": SCHEMA,
        },
    }
    assert anthropic == {
        "name": "search_memory",
        "description": "Search memories.",
        "input_schema": SCHEMA,
    }
    # The renderings are copies: editing one cannot corrupt the definition or the other.
    openai["function"]["parameters"]["properties"]["query"]["minLength"] = 99
    assert SEARCH.parameters["properties"]["query"]["minLength"] == 1
    assert anthropic["input_schema"]["properties"]["query"]["minLength"] == 1


def test_registry_lists_tools_in_registration_order_in_both_formats(
    registry: ToolRegistry,
) -> None:
    assert [d.name for d in registry.definitions()] == ["search_memory", "ping"]
    assert [t["function"]["name"] for t in registry.openai_tools()] == ["search_memory", "ping"]
    assert [t["name"] for t in registry.anthropic_tools()] == ["search_memory", "ping"]
    assert registry.anthropic_tools()[1]["input_schema"] == {"type": "object", "properties": {}}
    assert len(registry) == 2
    assert "ping" in registry
    assert "nope" not in registry


def test_registering_a_name_twice_is_a_config_error(registry: ToolRegistry) -> None:
    with pytest.raises(MemoryConfigError, match="already registered"):
        registry.register(PING, Recorder())


async def test_dispatch_parses_json_fills_defaults_and_passes_the_agent(
    registry: ToolRegistry, handler: Recorder
) -> None:
    result = await registry.dispatch("search_memory", '{"query": "deploys"}', agent_id="dev-1")
    assert json.loads(result) == {"query": "deploys", "limit": 5}
    assert handler.calls == [("dev-1", {"query": "deploys", "limit": 5})]


async def test_dispatch_accepts_a_decoded_mapping_and_blank_arguments(
    registry: ToolRegistry, handler: Recorder
) -> None:
    mapping = {"query": "x", "limit": 3.0, "tags": ["a"], "weight": 2, "exact": True}
    result = await registry.dispatch("search_memory", mapping, agent_id="dev-2")
    # 3.0 is an integer in JSON terms and reaches the handler as one.
    assert json.loads(result) == {**mapping, "limit": 3}
    assert isinstance(handler.calls[0][1]["limit"], int)
    assert await registry.dispatch("ping", "", agent_id="dev-2") == "{}"
    assert await registry.dispatch("ping", None, agent_id="dev-2") == "{}"


async def test_unknown_tool_is_an_error_string_listing_the_tools(registry: ToolRegistry) -> None:
    result = await registry.dispatch("delete_everything", "{}", agent_id="dev-1")
    assert result.startswith("error: unknown tool")
    assert "delete_everything" in result
    assert "search_memory, ping" in result


async def test_malformed_json_is_an_error_string(registry: ToolRegistry, handler: Recorder) -> None:
    result = await registry.dispatch("search_memory", '{"query": "x",', agent_id="dev-1")
    assert result.startswith("error: the arguments of search_memory are not valid JSON")
    assert "line 1" in result
    not_object = await registry.dispatch("search_memory", '["x"]', agent_id="dev-1")
    assert not_object == (
        "error: invalid arguments for search_memory: "
        "the arguments must be a JSON object, got an array"
    )
    assert handler.calls == []


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "missing required argument 'query'"),
        ({"query": 3}, "'query' must be a string, got an integer"),
        ({"query": ""}, "'query' must not be empty"),
        ({"query": "x", "limit": "5"}, "'limit' must be an integer, got a string"),
        ({"query": "x", "limit": True}, "'limit' must be an integer, got a boolean"),
        ({"query": "x", "limit": 2.5}, "'limit' must be an integer, got a number"),
        ({"query": "x", "limit": 0}, "'limit' must be >= 1, got 0"),
        ({"query": "x", "limit": 21}, "'limit' must be <= 20, got 21"),
        (
            {"query": "x", "category": "social"},
            '\'category\' must be one of "semantic", "episodic", got "social"',
        ),
        ({"query": "x", "tags": ["a", 1]}, "'tags[1]' must be a string, got an integer"),
        ({"query": "x", "tags": ["a", "b", "c"]}, "'tags' must have at most 2 items"),
        ({"query": "x", "weight": "heavy"}, "'weight' must be a number, got a string"),
        ({"query": "x", "exact": 1}, "'exact' must be a boolean, got an integer"),
        ({"query": "x", "sort": "new"}, "unknown argument 'sort'"),
    ],
)
async def test_invalid_arguments_are_error_strings_naming_the_problem(
    registry: ToolRegistry, handler: Recorder, arguments: dict[str, Any], problem: str
) -> None:
    result = await registry.dispatch("search_memory", json.dumps(arguments), agent_id="dev-1")
    assert result.startswith("error: invalid arguments for search_memory: ")
    assert problem in result
    assert handler.calls == []


async def test_every_problem_is_reported_at_once(registry: ToolRegistry) -> None:
    result = await registry.dispatch(
        "search_memory", {"limit": 0, "category": "x"}, agent_id="dev-1"
    )
    assert "missing required argument 'query'" in result
    assert "'limit' must be >= 1" in result
    assert "'category' must be one of" in result


async def test_memvault_errors_from_the_handler_become_error_strings() -> None:
    async def missing(agent_id: str, args: dict[str, Any]) -> str:
        raise MemoryNotFoundError("memory m-1 not found")

    async def unusable(agent_id: str, args: dict[str, Any]) -> str:
        raise ToolArgumentError(["'query' must not be blank"])

    reg = ToolRegistry()
    reg.register(ToolDefinition(name="missing", description="d"), missing)
    reg.register(ToolDefinition(name="unusable", description="d"), unusable)
    assert await reg.dispatch("missing", "{}", agent_id="a") == (
        "error: missing failed: memory m-1 not found"
    )
    assert await reg.dispatch("unusable", "{}", agent_id="a") == (
        "error: invalid arguments for unusable: 'query' must not be blank"
    )


async def test_bugs_in_a_handler_are_not_hidden_from_the_developer() -> None:
    async def broken(agent_id: str, args: dict[str, Any]) -> str:
        raise RuntimeError("bug")

    reg = ToolRegistry()
    reg.register(ToolDefinition(name="broken", description="d"), broken)
    with pytest.raises(RuntimeError, match="bug"):
        await reg.dispatch("broken", "{}", agent_id="a")


async def test_blank_agent_id_is_a_caller_error(registry: ToolRegistry) -> None:
    with pytest.raises(MemoryValidationError, match="agent_id"):
        await registry.dispatch("ping", "{}", agent_id=" ")


def test_validate_arguments_handles_nested_objects_and_extra_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "filter": {
                "type": "object",
                "properties": {"since": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}},
                "required": ["since"],
            },
            "flag": {"type": ["boolean", "null"]},
        },
        "additionalProperties": {"type": "integer"},
    }
    assert validate_arguments(schema, {"filter": {"since": "2026-03-01"}, "n": 2.0}) == {
        "filter": {"since": "2026-03-01"},
        "n": 2,
    }
    assert validate_arguments(schema, {"flag": None}) == {"flag": None}
    with pytest.raises(ToolArgumentError) as caught:
        validate_arguments(schema, {"filter": {"since": "March"}, "n": "two", "flag": 0})
    assert caught.value.problems == (
        "'filter.since' must match the pattern '^\\\\d{4}-\\\\d{2}-\\\\d{2}$'",
        "'n' must be an integer, got a string",
        "'flag' must be a boolean or null, got an integer",
    )
    with pytest.raises(ToolArgumentError, match=r"missing required argument 'filter\.since'"):
        validate_arguments(schema, {"filter": {}})


def test_enum_does_not_confuse_booleans_with_numbers() -> None:
    schema = {"type": "object", "properties": {"level": {"enum": [0, 1]}}}
    assert validate_arguments(schema, {"level": 1}) == {"level": 1}
    with pytest.raises(ToolArgumentError, match="must be one of 0, 1, got true"):
        validate_arguments(schema, {"level": True})
