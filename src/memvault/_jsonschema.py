"""Tool argument schemas generated from pydantic models (foundation: pydantic only).

Agents' memory tools and the MCP tools describe their arguments with JSON schema. Instead of
writing those schemas by hand, each tool declares a pydantic model and this module turns its
schema into the self-contained form function-calling APIs expect: ``$ref``s inlined, titles
dropped, ``X | None`` shown as ``X`` (a caller leaves the argument out rather than sending
null), and unknown arguments refused.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel

__all__ = ["inline_schema", "is_object_type", "non_optional", "tool_parameters"]


def inline_schema(schema: Any, defs: Mapping[str, Any], *, optional_as_absent: bool) -> Any:
    """``schema`` with ``$ref``s resolved from ``defs`` and titles dropped.

    With ``optional_as_absent``, ``anyOf: [X, null]`` becomes ``X`` and a ``null`` default is
    dropped.
    """
    if isinstance(schema, list):
        return [inline_schema(s, defs, optional_as_absent=optional_as_absent) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs[ref.rsplit("/", 1)[-1]]
        out.update(inline_schema(target, defs, optional_as_absent=optional_as_absent))
    options = schema.get("anyOf")
    if optional_as_absent and isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            out.update(inline_schema(kept[0], defs, optional_as_absent=True))
    for key, value in schema.items():
        if key in {"$ref", "title", "$defs"} or (key == "anyOf" and "type" in out):
            continue
        if key == "default" and value is None and optional_as_absent:
            continue
        if key == "properties" and isinstance(value, Mapping):
            # Property names are data, not schema keywords: a field called "title" stays.
            out[key] = {
                name: inline_schema(sub, defs, optional_as_absent=optional_as_absent)
                for name, sub in value.items()
            }
            continue
        out[key] = inline_schema(value, defs, optional_as_absent=optional_as_absent)
    return out


def tool_parameters(
    model: type[BaseModel],
    *,
    fields: Iterable[str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON schema object of a tool whose arguments are ``model``'s fields.

    ``fields`` keeps only those (in that order); ``overrides`` updates a property's schema (for
    limits that depend on configuration).
    """
    full = model.model_json_schema()
    defs = full.get("$defs", {})
    names = list(fields) if fields is not None else list(model.model_fields)
    properties: dict[str, Any] = {}
    for name in names:
        prop = inline_schema(full["properties"][name], defs, optional_as_absent=True)
        prop.update((overrides or {}).get(name, {}))
        properties[name] = prop
    required = [n for n in names if model.model_fields[n].is_required()]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def non_optional(annotation: Any) -> Any:
    """``X`` from a field type ``X | None`` (or ``Annotated[X | None, ...]``)."""
    if typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def is_object_type(annotation: Any) -> bool:
    """True for a ``dict[...]`` field type (optional or not): a JSON object."""
    bare = non_optional(annotation)
    return bare is dict or typing.get_origin(bare) is dict
