"""A framework-neutral tool registry: schemas for every function-calling format, one dispatcher.

A :class:`ToolRegistry` holds tools (a :class:`~memvault.injection.tools.ToolDefinition` plus an
async handler). It renders them as OpenAI or Anthropic tools and dispatches a model's tool call::

    registry = ToolRegistry()
    registry.register(definition, handler)          # handler: async (agent_id, args) -> str
    tools = registry.openai_tools()                 # or registry.anthropic_tools()
    text = await registry.dispatch(call.name, call.arguments, agent_id="dev-1")

The model's arguments are checked against the tool's JSON schema before the handler runs. What
goes wrong on the model's side (unknown tool, malformed JSON, invalid arguments, a memvault
error raised by the handler) comes back as an ``"error: ..."`` string the model can read and act
on; :meth:`ToolRegistry.dispatch` never raises for those. Mistakes of the developer (registering
a tool twice, a blank ``agent_id``) raise :class:`~memvault.errors.MemoryConfigError` or
:class:`~memvault.errors.MemoryValidationError`.

The validator implements the subset of JSON Schema that tool definitions use: ``type`` (object,
string, integer, number, boolean, array, null, or a list of them), ``properties``, ``required``,
``additionalProperties`` (``false`` or a schema), ``default`` (filled in for absent properties),
``enum``, ``const``, ``minimum``/``maximum`` (and the exclusive forms), ``minLength``/
``maxLength``, ``pattern``, ``items``, ``minItems``/``maxItems``. Other keywords are ignored.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from memvault.errors import MemoryConfigError, MemoryError, MemoryValidationError
from memvault.injection.tools import ToolDefinition, to_anthropic_tool, to_openai_tool

__all__ = ["ToolArgumentError", "ToolHandler", "ToolRegistry", "validate_arguments"]

logger = logging.getLogger(__name__)

ToolHandler = Callable[[str, dict[str, Any]], Awaitable[str]]
"""``async handler(agent_id, arguments) -> str``: runs one tool call for one agent.

``arguments`` has been validated against the tool's schema (defaults filled in). The returned
text goes back to the model as the tool result. A handler reports a failure the model should
see by raising a memvault :class:`~memvault.errors.MemoryError` (e.g. :class:`ToolArgumentError`
for arguments that are well-formed but unusable); the dispatcher turns it into an error string.
"""

_MAX_SHOWN_VALUE = 60


class ToolArgumentError(MemoryValidationError):
    """A tool call's arguments do not match the tool's schema.

    ``problems`` lists every problem found, one short sentence each, naming the argument.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__("; ".join(self.problems))


# --- validation ----------------------------------------------------------------------------------

_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN_VALUE else text[: _MAX_SHOWN_VALUE - 3] + "..."


def _name(path: str) -> str:
    return f"'{path}'" if path else "the arguments"


def _coerce_type(expected: str, value: Any) -> tuple[bool, Any]:
    """Whether ``value`` is of JSON type ``expected``, and the value normalised to it."""
    if expected == "integer":
        if isinstance(value, int) and not isinstance(value, bool):
            return True, value
        # JSON does not tell 5 from 5.0; the schema's meaning does.
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return True, int(value)
        return False, value
    if expected == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok and math.isfinite(value), value
    if expected == "object":
        return isinstance(value, Mapping), value
    if expected == "array":
        return isinstance(value, (list, tuple)), value
    if expected == "string":
        return isinstance(value, str), value
    if expected == "boolean":
        return isinstance(value, bool), value
    if expected == "null":
        return value is None, value
    return True, value  # an unknown type name constrains nothing


def _same(a: Any, b: Any) -> bool:
    # ``True == 1`` in Python but not in JSON.
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def _check(schema: Mapping[str, Any], value: Any, path: str, problems: list[str]) -> Any:
    """Append ``value``'s problems against ``schema`` to ``problems``; return it normalised."""
    declared = schema.get("type")
    if declared is not None:
        expected = [declared] if isinstance(declared, str) else list(declared)
        for kind in expected:
            ok, normalised = _coerce_type(kind, value)
            if ok:
                value = normalised
                break
        else:
            wanted = " or ".join(_TYPE_NAMES.get(k, str(k)) for k in expected)
            got = _TYPE_NAMES.get(_json_type(value), _json_type(value))
            problems.append(f"{_name(path)} must be {wanted}, got {got}")
            return value
    if "const" in schema and not _same(value, schema["const"]):
        problems.append(f"{_name(path)} must be {_show(schema['const'])}")
        return value
    enum = schema.get("enum")
    if enum is not None and not any(_same(value, option) for option in enum):
        options = ", ".join(_show(option) for option in enum)
        problems.append(f"{_name(path)} must be one of {options}, got {_show(value)}")
        return value
    if isinstance(value, str):
        _check_string(schema, value, path, problems)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _check_number(schema, value, path, problems)
    elif isinstance(value, Mapping):
        return _check_object(schema, value, path, problems)
    elif isinstance(value, (list, tuple)):
        return _check_array(schema, value, path, problems)
    return value


def _check_string(schema: Mapping[str, Any], value: str, path: str, problems: list[str]) -> None:
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        if min_length == 1:
            problems.append(f"{_name(path)} must not be empty")
        else:
            problems.append(f"{_name(path)} must have at least {min_length} characters")
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        problems.append(f"{_name(path)} must have at most {max_length} characters")
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        problems.append(f"{_name(path)} must match the pattern {pattern!r}")


def _check_number(schema: Mapping[str, Any], value: float, path: str, problems: list[str]) -> None:
    minimum = schema.get("minimum")
    if minimum is not None and value < minimum:
        problems.append(f"{_name(path)} must be >= {minimum}, got {_show(value)}")
    maximum = schema.get("maximum")
    if maximum is not None and value > maximum:
        problems.append(f"{_name(path)} must be <= {maximum}, got {_show(value)}")
    low = schema.get("exclusiveMinimum")
    if isinstance(low, (int, float)) and not isinstance(low, bool) and value <= low:
        problems.append(f"{_name(path)} must be > {low}, got {_show(value)}")
    high = schema.get("exclusiveMaximum")
    if isinstance(high, (int, float)) and not isinstance(high, bool) and value >= high:
        problems.append(f"{_name(path)} must be < {high}, got {_show(value)}")


def _check_object(
    schema: Mapping[str, Any], value: Mapping[str, Any], path: str, problems: list[str]
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties") or {}
    prefix = f"{path}." if path else ""
    result: dict[str, Any] = {}
    for key in schema.get("required") or ():
        if key not in value:
            problems.append(f"missing required argument '{prefix}{key}'")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        sub = properties.get(key)
        if sub is not None:
            result[key] = _check(sub, item, f"{prefix}{key}", problems)
        elif extra is False:
            allowed = ", ".join(f"'{k}'" for k in properties) or "none"
            problems.append(f"unknown argument '{prefix}{key}' (allowed: {allowed})")
        elif isinstance(extra, Mapping):
            result[key] = _check(extra, item, f"{prefix}{key}", problems)
        else:
            result[key] = item
    for key, sub in properties.items():
        absent = key not in result and key not in value
        if absent and isinstance(sub, Mapping) and "default" in sub:
            result[key] = copy.deepcopy(sub["default"])
    return result


def _check_array(
    schema: Mapping[str, Any], value: Sequence[Any], path: str, problems: list[str]
) -> list[Any]:
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        problems.append(f"{_name(path)} must have at least {min_items} items")
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        problems.append(f"{_name(path)} must have at most {max_items} items")
    items = schema.get("items")
    if not isinstance(items, Mapping):
        return list(value)
    return [_check(items, item, f"{path}[{i}]", problems) for i, item in enumerate(value)]


def validate_arguments(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """Check ``arguments`` against a tool's object ``schema``; return them normalised.

    Normalised means: absent properties that declare a ``default`` get it, and integral numbers
    given for an ``integer`` (``5.0``) become ``int``. Every problem is collected, not just the
    first, so the model can fix them all in one retry.

    Raises:
        ToolArgumentError: ``arguments`` is not an object or breaks the schema.
    """
    if not isinstance(arguments, Mapping):
        got = _TYPE_NAMES.get(_json_type(arguments), _json_type(arguments))
        raise ToolArgumentError([f"the arguments must be a JSON object, got {got}"])
    problems: list[str] = []
    result = _check(schema, arguments, "", problems)
    if problems:
        raise ToolArgumentError(problems)
    return dict(result)


# --- registry ------------------------------------------------------------------------------------


class ToolRegistry:
    """Tools an agent may call, rendered for any function-calling API and dispatched by name.

    Tools keep their registration order in :meth:`definitions` and both renderings.
    """

    def __init__(self) -> None:
        self._tools: dict[str, tuple[ToolDefinition, ToolHandler]] = {}

    def __len__(self) -> int:
        """Number of registered tools."""
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        """True if a tool of this name is registered."""
        return name in self._tools

    def register(self, definition: ToolDefinition, handler: ToolHandler) -> None:
        """Add a tool: its definition and ``async handler(agent_id, arguments) -> str``.

        Raises:
            MemoryConfigError: a tool of the same name is already registered, or ``handler`` is
                not callable.
        """
        if not isinstance(definition, ToolDefinition):
            msg = f"expected a ToolDefinition, got {type(definition).__name__}"
            raise MemoryConfigError(msg)
        if definition.name in self._tools:
            msg = f"a tool named {definition.name!r} is already registered"
            raise MemoryConfigError(msg)
        if not callable(handler):
            msg = f"the handler of tool {definition.name!r} is not callable"
            raise MemoryConfigError(msg)
        self._tools[definition.name] = (definition, handler)

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The registered tools' definitions, in registration order."""
        return tuple(definition for definition, _ in self._tools.values())

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's format: ``{"type": "function", "function": {...}}`` each."""
        return [to_openai_tool(d) for d in self.definitions()]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tools in Anthropic's format: ``{"name", "description", "input_schema"}`` each."""
        return [to_anthropic_tool(d) for d in self.definitions()]

    async def dispatch(
        self, name: str, arguments: str | Mapping[str, Any] | None, *, agent_id: str
    ) -> str:
        """Run the tool call ``name(arguments)`` for ``agent_id`` and return the text result.

        ``arguments`` is the call's JSON text as the model produced it (OpenAI style; blank
        means no arguments) or an already decoded mapping (Anthropic style). Problems the model
        caused come back as a string starting with ``"error: "`` that says what to fix: an
        unknown tool, malformed JSON, arguments breaking the schema, or a memvault
        :class:`~memvault.errors.MemoryError` raised by the handler.

        Raises:
            MemoryValidationError: ``agent_id`` is blank (a caller bug, not the model's).
        """
        if not isinstance(agent_id, str) or not agent_id.strip():
            msg = "agent_id is empty"
            raise MemoryValidationError(msg)
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            available = ", ".join(self._tools) or "none"
            return _error(name, f"unknown tool {_show(name)}; available tools: {available}")
        definition, handler = tool
        parsed: Any
        if arguments is None:
            parsed = {}
        elif isinstance(arguments, str):
            text = arguments.strip()
            try:
                parsed = json.loads(text) if text else {}
            except json.JSONDecodeError as exc:
                problem = (
                    f"the arguments of {name} are not valid JSON ({exc.msg} at line "
                    f"{exc.lineno} column {exc.colno}); send one JSON object"
                )
                return _error(name, problem)
            except RecursionError:
                return _error(name, f"the arguments of {name} are nested too deeply")
        else:
            parsed = arguments
        try:
            args = validate_arguments(definition.parameters, parsed)
        except ToolArgumentError as exc:
            return _error(name, f"invalid arguments for {name}: {exc}")
        try:
            return await handler(agent_id, args)
        except ToolArgumentError as exc:
            return _error(name, f"invalid arguments for {name}: {exc}")
        except MemoryError as exc:
            return _error(name, f"{name} failed: {exc}")


def _error(name: object, message: str) -> str:
    logger.info("memory.tool.error", extra={"tool": str(name), "error": message})
    return f"error: {message}"
