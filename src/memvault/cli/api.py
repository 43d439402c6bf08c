"""``memvault api OPERATION``: every declared operation as a command, generated from the table.

The options of each command are the fields of the operation's input model
(:mod:`memvault.api.requests`): ``--agent-id dev-1 --limit 5``; a list of words repeats its
option (``--tags a --tags b``); a boolean is a flag pair (``--include-shared/--no-include-shared``);
anything structured (metadata, batches of items, chat messages) is given as JSON, inline or
from a file with ``@path`` (``@-`` reads standard input). The command
runs the operation through :meth:`MemoryService.call` as the local user (an admin of the store)
and prints its JSON answer, the same object the REST route returns.
"""

from __future__ import annotations

import inspect
import json
import sys
import typing
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from memvault._jsonschema import is_object_type, non_optional
from memvault.api.operations import OPERATIONS, Operation
from memvault.cli._common import emit_json, open_service
from memvault.errors import MemoryValidationError
from memvault.validation import model_error

__all__ = ["build_api_app", "register"]


def _shape(info: FieldInfo) -> str:
    """How a field is given on the command line: flag, words (repeated), json or text."""
    bare = non_optional(info.annotation)
    if bare is bool:
        return "flag"
    origin = typing.get_origin(bare)
    if origin is list:
        (item,) = typing.get_args(bare) or (Any,)
        if item is str or (isinstance(item, type) and issubclass(item, Enum)):
            return "words"
        return "json"
    if is_object_type(bare) or (isinstance(bare, type) and issubclass(bare, BaseModel)):
        return "json"
    return "text"


def _help(info: FieldInfo) -> str:
    text = info.description or ""
    bare = non_optional(info.annotation)
    if isinstance(bare, type) and issubclass(bare, Enum):
        text += f" ({', '.join(str(m.value) for m in bare)})"
    if _shape(info) == "json":
        text += " (JSON)"
    return text.strip()


def _parameter(name: str, info: FieldInfo) -> inspect.Parameter:
    """The typer option of one input field (every one optional here: the model decides)."""
    flag = "--" + name.replace("_", "-")
    shape = _shape(info)
    annotation: Any
    if shape == "flag":
        option = typer.Option(f"{flag}/--no-{name.replace('_', '-')}", help=_help(info))
        annotation = Annotated[bool | None, option]
    elif shape == "words":
        annotation = Annotated[list[str] | None, typer.Option(flag, help=_help(info))]
    else:
        annotation = Annotated[str | None, typer.Option(flag, help=_help(info))]
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
    )


def _fields(op: Operation, given: dict[str, Any]) -> dict[str, Any]:
    """The input fields from the parsed options (unset ones left to the model's defaults)."""
    fields: dict[str, Any] = {}
    for name, info in op.request.model_fields.items():
        value = given.get(name)
        shape = _shape(info)
        if value is None or (shape == "words" and not value):
            continue
        if shape == "json":
            value = _json_option(name, value)
        fields[name] = list(value) if shape == "words" else value
    return fields


def _json_option(name: str, value: str) -> Any:
    """A JSON option's value: inline JSON, or ``@path`` for a JSON file (``-`` for stdin)."""
    flag = "--" + name.replace("_", "-")
    text = value
    if value.startswith("@"):
        where = value[1:]
        try:
            text = sys.stdin.read() if where == "-" else Path(where).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            msg = f"{flag}: cannot read {where}: {getattr(exc, 'strerror', None) or exc}"
            raise MemoryValidationError(msg) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{flag}: not valid JSON ({exc.msg}, line {exc.lineno})"
        raise MemoryValidationError(msg) from None


def _command(op: Operation) -> Callable[..., None]:
    def run(**given: Any) -> None:
        fields = _fields(op, given)
        try:
            request = op.parse(fields)
        except ValidationError as exc:
            raise model_error(exc) from None
        local = open_service()
        result = local.run(local.service.call(local.actor, op, request))
        emit_json(op.render(result, request))

    params = [_parameter(name, info) for name, info in op.request.model_fields.items()]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__name__ = op.name
    run.__doc__ = f"{op.doc}. Prints the JSON answer (the REST route's body)."
    return run


def build_api_app(operations: Iterable[Operation] = OPERATIONS) -> typer.Typer:
    """The ``api`` command group: one command per operation of ``operations``."""
    group = typer.Typer(
        name="api",
        help=(
            "Every memvault operation, one command each, with the fields of its REST body as "
            "options; prints JSON. Runs as the local user (admin of the store)."
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    for op in operations:
        if op.cli:
            group.command(op.name.replace("_", "-"), short_help=op.doc)(_command(op))
    return group


def register(app: typer.Typer) -> None:
    """Add ``memvault api`` to the CLI."""
    app.add_typer(build_api_app(), name="api")
