"""REST routes built from the operation table: one router per resource.

Each :class:`~memvault.api.operations.Operation` with an ``http`` entry becomes one route on the
router of its resource (``tag``: memories, retrieval, bulk, lifecycle, shared, sessions, ...).
Path parameters and, for ``GET``/``DELETE``, query parameters come from the operation's input
model field by field (with its limits, so the OpenAPI document shows them); ``POST``/``PUT``
take the rest as the JSON body. Every route authenticates with the one :data:`Caller`
dependency, runs ``service.call(actor, op, request)`` and sends ``op.render(result, request)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Annotated, Any

import annotated_types as at
from fastapi import APIRouter, Body, Path, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError, create_model
from pydantic.fields import FieldInfo

from memvault._jsonschema import is_object_type
from memvault.api.operations import Operation
from memvault.api.responses import ErrorOut
from memvault.server.rest.auth import Caller
from memvault.service import MemoryService

__all__ = ["operation_routers"]

_CONSTRAINTS: dict[type[Any], str] = {
    at.MinLen: "min_length",
    at.MaxLen: "max_length",
    at.Ge: "ge",
    at.Le: "le",
    at.Gt: "gt",
    at.Lt: "lt",
}


def _constraints(info: FieldInfo) -> dict[str, Any]:
    """The field's limits as keyword arguments of ``Query``/``Path``."""
    found: dict[str, Any] = {}
    for item in info.metadata:
        name = _CONSTRAINTS.get(type(item))
        if name is not None:  # annotated_types names each bound's field after its kind
            found[name] = getattr(item, name)
    if info.description:
        found["description"] = info.description
    return found


def _body_model(op: Operation) -> type[BaseModel]:
    """The JSON body of a route with path parameters: the input model without them."""
    assert op.http is not None
    path = set(op.http.path_params)
    if not path:
        return op.request
    fields: dict[str, Any] = {
        name: (info.annotation, info)
        for name, info in op.request.model_fields.items()
        if name not in path
    }
    name = op.http.body or f"{op.request.__name__}Body"
    model: type[BaseModel] = create_model(
        name, __config__=op.request.model_config, __doc__=op.request.__doc__, **fields
    )
    return model


def _parameters(op: Operation, body: type[BaseModel] | None) -> list[inspect.Parameter]:
    assert op.http is not None
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("actor", kw, annotation=Caller)]
    fields = op.request.model_fields
    for name in op.http.path_params:
        info = fields[name]
        params.append(
            # Ids are checked by the stores (a malformed one is simply not found), so the path
            # declares no limits of its own.
            inspect.Parameter(
                name, kw, annotation=Annotated[str, Path(description=info.description)]
            )
        )
    if body is not None:
        params.append(inspect.Parameter("body", kw, annotation=Annotated[body, Body()]))
        return params
    for name, info in fields.items():
        if name in op.http.path_params:
            continue
        default = (
            inspect.Parameter.empty
            if info.is_required()
            else info.get_default(call_default_factory=True)
        )
        annotation: Any = info.annotation
        if is_object_type(annotation):
            # A structured parameter (metadata filters) is its JSON text in the query string;
            # the input model parses it.
            annotation = str | None
            default = None
        query = Query(**_constraints(info))
        params.append(
            inspect.Parameter(name, kw, default=default, annotation=Annotated[annotation, query])
        )
    return params


def _endpoint(op: Operation, service: MemoryService) -> Callable[..., Awaitable[JSONResponse]]:
    """The route function of ``op``, with a signature FastAPI reads its parameters from."""
    http = op.http
    assert http is not None
    body = _body_model(op) if http.has_body else None
    direct = body is op.request

    async def endpoint(**kwargs: Any) -> JSONResponse:
        actor = kwargs.pop("actor")
        try:
            if direct:
                request = kwargs["body"]
            elif body is not None:
                given = kwargs.pop("body")
                request = op.parse({**dict(given), **kwargs})
            else:
                request = op.parse(kwargs)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors()) from None
        result = await service.call(actor, op, request)
        # Results are sent as rendered (the response model documents the shape) instead of
        # being validated again: search is the hot path.
        return JSONResponse(op.render(result, request), status_code=http.status)

    endpoint.__signature__ = inspect.Signature(_parameters(op, body))  # type: ignore[attr-defined]
    endpoint.__name__ = http.name or op.name
    endpoint.__doc__ = op.doc
    return endpoint


def operation_routers(service: MemoryService, operations: Iterable[Operation]) -> list[APIRouter]:
    """One router per resource (``http.tag``), holding the routes of ``operations``."""
    routers: dict[str, APIRouter] = {}
    for op in operations:
        http = op.http
        if http is None:
            continue
        router = routers.setdefault(http.tag, APIRouter(tags=[http.tag]))
        responses: dict[int | str, dict[str, Any]] = {}
        if http.path_params:
            responses[404] = {"model": ErrorOut}
        router.add_api_route(
            http.path,
            _endpoint(op, service),
            methods=[http.method],
            status_code=http.status,
            response_model=http.response,
            summary=op.doc,
            name=http.name or op.name,
            responses=responses or None,
        )
    return list(routers.values())
