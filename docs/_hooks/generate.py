"""Pages generated from the code at build time, so they cannot go stale.

mkdocs runs :func:`on_page_markdown` for every page; a line ``<!-- generated: NAME -->`` is
replaced with the output of the generator NAME:

* ``config``: every ``memvault.yaml`` key, walked from :class:`memvault.config.MemvaultConfig`
  (type, default and the field's documentation);
* ``cli``: ``--help`` of every ``memvault`` command and subcommand, from the typer app;
* ``rest``: every REST route, from the operation table :data:`memvault.api.operations.OPERATIONS`;
* ``mcp``: every MCP tool with its arguments, from the same table.
"""

from __future__ import annotations

import ast
import collections.abc
import enum
import inspect
import itertools
import re
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

MARKER = re.compile(r"^<!-- generated: ([a-z_]+) -->$", re.MULTILINE)


# -- configuration -------------------------------------------------------------------------------


def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a class's attributes (an assignment, then a string)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not issubclass(klass, BaseModel) or klass is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _models_in(annotation: Any) -> Iterator[tuple[str, type[BaseModel]]]:
    """(path suffix, model) for each config model an annotation holds (``dict[str, M]`` too)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield "", annotation
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (dict, collections.abc.Mapping):
        if len(args) == 2:
            for suffix, model in _models_in(args[1]):
                yield ".<name>" + suffix, model
        return
    if origin in (typing.Union, types.UnionType, list, tuple):
        for arg in args:
            yield from _models_in(arg)


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(str(m.value) for m in annotation)
    if isinstance(annotation, type):
        return annotation.__name__
    text = str(annotation).replace("typing.", "").replace("NoneType", "None")
    text = re.sub(r"\b(?:[A-Za-z_][A-Za-z0-9_]*\.)+([A-Za-z_][A-Za-z0-9_]*)", r"\1", text)
    return text.replace("|", "\\|")


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return ""
    else:
        return "(required)"
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, enum.Enum):
        value = value.value
    return f"`{value!r}`".replace("|", "\\|")


def config_rows(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, str, str, str]]:
    """(key, type, default, documentation) of every key under ``prefix``, depth first."""
    docs = _attribute_docs(model)
    for name, field in model.model_fields.items():
        key = f"{prefix}.{field.alias or name}"
        doc = field.description or docs.get(name, "")
        nested = list(_models_in(field.annotation))
        yield key, _type_name(field.annotation), _default(field), doc
        for suffix, sub in nested:
            yield from config_rows(sub, key + suffix)


def config() -> str:
    """The configuration reference: one table row per ``memvault.yaml`` key."""
    from memvault.config import MemvaultConfig

    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    seen: set[str] = set()
    for key, kind, default, doc in config_rows(MemvaultConfig, "memory"):
        if key in seen:
            continue
        seen.add(key)
        text = doc.replace("|", "\\|")
        lines.append(f"| `{key}` | {kind} | {default} | {text} |")
    return "\n".join(lines)


# -- CLI -----------------------------------------------------------------------------------------


def _commands(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, command
    # Duck-typed: typer may ship its own copy of click, whose Group is not click.Group, and the
    # root's commands are a mapping that builds each command on first lookup (cli/app.py).
    if isinstance(getattr(command, "commands", None), collections.abc.Mapping):
        for name in sorted(command.commands):
            sub = command.commands[name]
            if not getattr(sub, "hidden", False):
                yield from _commands(sub, [*path, name])


def cli() -> str:
    """``--help`` of every command, as the installed ``memvault`` prints it."""
    import typer

    from memvault.cli.app import app

    root = typer.main.get_command(app)
    parts: list[str] = []
    for path, command in _commands(root, ["memvault"]):
        name = " ".join(path)
        with command.make_context(name, ["--help"], resilient_parsing=True) as ctx:
            text = command.get_help(ctx)
        level = "##" if len(path) <= 2 else "###"
        parts.append(f"{level} `{name}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


# -- REST and MCP --------------------------------------------------------------------------------


def rest() -> str:
    """Every route: method, path, scope and what it does."""
    from memvault.api.operations import OPERATIONS

    lines = ["| method | path | scope | operation |", "|---|---|---|---|"]
    for op in OPERATIONS:
        if op.http is None:
            continue
        lines.append(f"| {op.http.method} | `{op.http.path}` | {op.scope.value} | {op.doc} |")
    return "\n".join(lines)


def mcp() -> str:
    """Every MCP tool: name, what it does, its arguments (required ones in bold)."""
    from memvault.api.operations import OPERATIONS
    from memvault.server.mcp import tools_of

    parts: list[str] = []
    for tool in tools_of(OPERATIONS):
        schema = tool.input_schema
        required = set(schema.get("required", ()))
        args = [
            f"**`{name}`**" if name in required else f"`{name}`"
            for name in schema.get("properties", {})
        ]
        spec = tool.op.tool
        assert spec is not None
        parts.append(
            f"### `{tool.name}`\n\n{spec.description}\n\nArguments: {', '.join(args) or 'none'}\n"
        )
    return "\n".join(parts)


GENERATORS: dict[str, Callable[[], str]] = {"config": config, "cli": cli, "rest": rest, "mcp": mcp}


def render(markdown: str) -> str:
    """``markdown`` with every generated marker replaced."""

    def replace(match: re.Match[str]) -> str:
        return GENERATORS[match.group(1)]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """The mkdocs hook."""
    return render(markdown)
