"""Input validators and error builders shared by every layer (foundation: models and errors only).

The facades, the service, the interfaces and the backends all check agent ids, memory ids and
pydantic errors the same way, so the checks live at the bottom of the layer graph. They stay
importable from :mod:`memvault.backends._base` and ``memvault.backends._validate``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryValidationError,
)
from memvault.models import validate_agent_id, validate_memory_id
from memvault.protocols import Embedder

__all__ = [
    "DEFAULT_AGENT_ID",
    "append_only_error",
    "as_dict",
    "check_agent",
    "check_id",
    "check_stored_model",
    "check_times",
    "model_error",
    "scope_agent",
]


def check_times(times: int) -> int:
    """An access-count increment: a positive integer.

    Raises:
        MemoryValidationError: anything else.
    """
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        msg = f"times must be a positive integer, got {times!r}"
        raise MemoryValidationError(msg)
    return times


def check_agent(agent_id: str) -> str:
    """Validated agent id, or :class:`MemoryValidationError`."""
    try:
        return validate_agent_id(agent_id)
    except ValueError as exc:
        raise MemoryValidationError(str(exc)) from None


DEFAULT_AGENT_ID = "default"
"""The agent of memories written with only a ``user_id`` (or ``run_id``), mem0-style."""


def scope_agent(agent_id: str | None, *scopes: str | None) -> str:
    """The agent a call addresses: ``agent_id``, else the default agent.

    ``scopes`` are the call's ``user_id``/``run_id``: when any is given, a call without an
    ``agent_id`` is scoped by it within :data:`DEFAULT_AGENT_ID` (mem0's habit of keying a
    store by user alone). A call that names no scope at all is refused when it takes
    scopes, so a multi-agent program that forgets ``agent_id`` does not write into, or
    read from, one common agent unnoticed. Calls addressed by a memory id (``scopes``
    empty) default to :data:`DEFAULT_AGENT_ID`.

    Raises:
        MemoryValidationError: an invalid ``agent_id``, or no scope where one is needed.
    """
    if agent_id is not None:
        return check_agent(agent_id)
    if scopes and all(scope is None for scope in scopes):
        msg = (
            "give agent_id or user_id (or run_id): memories written with only a user_id "
            f"live under the agent {DEFAULT_AGENT_ID!r}"
        )
        raise MemoryValidationError(msg)
    return DEFAULT_AGENT_ID


def check_id(memory_id: str) -> str:
    """Validated memory id, or :class:`MemoryValidationError`."""
    try:
        return validate_memory_id(memory_id)
    except ValueError as exc:
        raise MemoryValidationError(str(exc)) from None


def check_stored_model(
    location: str,
    embedder: Embedder,
    *,
    stored_model: str | None,
    stored_dimension: int | None,
    has_rows: bool,
) -> None:
    """Refuse to open a store whose vectors come from another model than ``embedder``.

    An empty store may adopt any model (there are no vectors to mix up).

    Raises:
        DimensionMismatchError: the stored vectors have another dimension.
        EmbeddingModelChangedError: same dimension, but another model.
    """
    if stored_model is None or not has_rows:
        return
    model, dim = embedder.model_id, embedder.dimension
    if stored_dimension is not None and stored_dimension != dim:
        msg = (
            f"store {location} holds {stored_dimension}-dimensional vectors from "
            f"{stored_model!r}, but the configured embedder {model!r} makes {dim}: "
            "configure the original model or run `memvault reindex`"
        )
        raise DimensionMismatchError(
            msg,
            stored_model=stored_model,
            configured_model=model,
            stored_dimension=stored_dimension,
            configured_dimension=dim,
        )
    if stored_model != model:
        msg = (
            f"store {location} was built with embedding model {stored_model!r}, "
            f"not {model!r}: configure that model or run `memvault reindex`"
        )
        raise EmbeddingModelChangedError(msg, stored_model=stored_model, configured_model=model)


def model_error(exc: ValidationError) -> MemoryValidationError:
    """A one-line :class:`MemoryValidationError` from a pydantic error."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    return MemoryValidationError(f"{loc}: {msg}" if loc else msg)


def append_only_error(memory_id: str) -> MemoryValidationError:
    """The error for deleting a shared entry: shared knowledge is append-only."""
    msg = f"memory {memory_id} is shared knowledge, which is append-only: retract it instead"
    return MemoryValidationError(msg)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty dict (for JSON columns)."""
    return value if isinstance(value, dict) else {}
