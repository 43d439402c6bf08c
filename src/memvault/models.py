"""Enums and frozen data models that cross memvault's boundaries.

Everything here is pure data: no I/O, no imports of other memvault modules except ``errors``.
Datetimes are always timezone-aware; naive datetimes are rejected with a clear message rather than
guessed at, because a silently shifted timestamp corrupts recency ranking and as-of queries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from memvault.errors import MemoryNotFoundError, MemoryValidationError

ModelT = TypeVar("ModelT", bound=BaseModel)

__all__ = [
    "DEFAULT_MAX_CONTENT_CHARS",
    "FILTER_OPS",
    "ArchivedEntry",
    "AuditRecord",
    "CandidateSet",
    "ChatMessage",
    "ConsolidationInterval",
    "LLMResponse",
    "MemoryCategory",
    "MemoryEntry",
    "MemoryHistory",
    "MemoryLevel",
    "MemoryMetadata",
    "MemoryQuery",
    "MemoryScope",
    "MemoryStoreRequest",
    "MetadataFilter",
    "QueryPeriod",
    "ScoreBreakdown",
    "StoreStats",
    "ToolDefinition",
    "aware_utc",
    "filters_match",
    "json_metadata",
    "metadata_datetime",
    "parse_filters",
    "trusted",
    "validate_agent_id",
    "validate_memory_id",
]

DEFAULT_MAX_CONTENT_CHARS = 32_000
"""Default ceiling on one memory's content (``memory.options.max_content_chars``)."""

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_AGENT_RE = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")


class MemoryCategory(StrEnum):
    """The five memory types of the design documents."""

    WORKING = "working"
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    SOCIAL = "social"


class MemoryLevel(StrEnum):
    """How long an agent's memory persists."""

    PERSISTENT = "persistent"
    PROJECT = "project"
    SESSION = "session"
    NONE = "none"


class ConsolidationInterval(StrEnum):
    """How often old memories are consolidated."""

    HOURLY = "hourly"
    DAILY = "daily"
    WEEKLY = "weekly"
    NEVER = "never"
    AFTER_SESSION = "after_session"
    AFTER_AUTONOMOUS = "after_autonomous"
    MANUAL = "manual"


class MemoryScope(StrEnum):
    """Who may read a memory: its agent only, every agent of the tenant, or the organisation."""

    PRIVATE = "private"
    SHARED = "shared"
    ORG = "org"


def aware_utc(value: datetime | None) -> datetime | None:
    """Return ``value`` converted to UTC; reject naive datetimes.

    Raises:
        ValueError: ``value`` has no timezone.
    """
    if value is None:
        return None
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        msg = (
            f"naive datetime {value.isoformat()!r}: memvault needs timezone-aware datetimes "
            "(e.g. datetime(2026, 3, 1, tzinfo=UTC))"
        )
        raise ValueError(msg)
    return value.astimezone(UTC)


def _aware(value: datetime | None) -> datetime | None:
    return aware_utc(value)


AwareDatetime = Annotated[datetime, AfterValidator(_aware)]


def validate_memory_id(value: str) -> str:
    """Return ``value`` if it is a well-formed memory id, else raise ``ValueError``."""
    if not isinstance(value, str) or not _ID_RE.match(value):
        msg = f"malformed memory id {value!r}"
        raise ValueError(msg)
    return value


def validate_agent_id(value: str) -> str:
    """Return ``value`` stripped if it is a usable agent id, else raise ``ValueError``."""
    if not isinstance(value, str):
        msg = f"agent_id must be a string, got {type(value).__name__}"
        raise ValueError(msg)
    stripped = value.strip()
    if not stripped or not _AGENT_RE.match(stripped):
        msg = f"invalid agent_id {value!r}: must be 1-200 printable characters"
        raise ValueError(msg)
    return stripped


def _check_tags(tags: tuple[str, ...]) -> tuple[str, ...]:
    cleaned: list[str] = []
    for tag in tags:
        t = tag.strip()
        if not t or "\x00" in t or len(t) > 100:
            msg = f"invalid tag {tag!r}: tags are 1-100 characters without NUL"
            raise ValueError(msg)
        if t not in cleaned:
            cleaned.append(t)
    return tuple(cleaned)


# -- metadata values: JSON only -------------------------------------------------------------------


def metadata_datetime(value: datetime | date) -> str:
    """The canonical string of a date or datetime in metadata and filters: UTC ISO-8601.

    ``2026-03-01T09:30:00+00:00`` (``datetime.isoformat`` of the UTC time: microseconds only
    when non-zero); a ``date`` is midnight UTC of that day. Strings of this one format order
    exactly like the instants they name, so date ranges are string ranges.

    Raises:
        ValueError: a naive datetime.
    """
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    aware = aware_utc(value)
    assert aware is not None
    return aware.isoformat()


def json_metadata(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` as plain JSON values: what every backend can store and filter the same way.

    Strings, finite numbers, booleans, null, lists (tuples become lists) and objects with string
    keys, recursively; dates and aware datetimes become :func:`metadata_datetime` strings.

    Raises:
        ValueError: a value that is not JSON (a set, bytes, an object, NaN or infinity, a
            naive datetime, a non-string object key), naming the top-level key it is under.
    """
    out: dict[str, Any] = {}
    for key, value in extra.items():
        if not isinstance(key, str):
            msg = f"metadata keys must be strings, got {key!r}"
            raise ValueError(msg)
        bad = _text_problem(key)
        if bad is not None:
            msg = f"metadata key {key!r}: the key {bad}"
            raise ValueError(msg)
        out[key] = _json_value(value, key, key)
    return out


_PLAIN_JSON = (bool, int, type(None))


def _text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a JSON string every store keeps (NUL, lone surrogates), or None.

    PostgreSQL's jsonb has no NUL character and no unpaired surrogate, so such text could be
    stored but never filtered there; it is refused everywhere instead.
    """
    if "\x00" in text:
        return "contains a NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an unpaired surrogate (not valid Unicode)"
    return None


def _json_value(value: Any, top: str, where: str) -> Any:
    kind = type(value)
    if kind in _PLAIN_JSON:
        return value
    problem: str | None
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem is None:
            return value if kind is str else str(value)
        problem = f"the string {problem}"
    elif isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        problem = f"{value!r} is not a JSON number (NaN and infinity are not allowed)"
    elif isinstance(value, int):
        return int(value)
    elif isinstance(value, (datetime, date)):
        try:
            return metadata_datetime(value)
        except ValueError as exc:
            problem = str(exc)
    elif isinstance(value, Mapping):
        obj: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                problem = f"object key {k!r} is not a string"
                break
            problem = _text_problem(k)
            if problem is not None:
                problem = f"object key {k!r} {problem}"
                break
            obj[k] = _json_value(v, top, f"{where}.{k}")
        else:
            return obj
    elif isinstance(value, (list, tuple)):
        return [_json_value(v, top, f"{where}[{i}]") for i, v in enumerate(value)]
    else:
        problem = (
            f"a value of type {kind.__name__} is not JSON (use strings, numbers, booleans, "
            "null, lists, objects or dates)"
        )
    at = "" if where == top else f" (at {where})"
    msg = f"metadata key {top!r}{at}: {problem}"
    raise ValueError(msg)


# -- metadata filters -----------------------------------------------------------------------------

FilterOp = Literal["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "exists"]
FILTER_OPS: tuple[str, ...] = get_args(FilterOp)
"""Every operator a :class:`MetadataFilter` takes."""
RANGE_OPS = frozenset({"gt", "gte", "lt", "lte"})
LogicalOp = Literal["and", "or", "not"]
"""How a :class:`MetadataFilter` of ``clauses`` combines them."""
LOGICAL_OPS: frozenset[str] = frozenset(get_args(LogicalOp))
_MAX_FILTER_DEPTH = 8
_MAX_CLAUSES = 100

FilterScalar = str | int | float | bool | None
FilterValue = FilterScalar | tuple[FilterScalar, ...]

_LOGICAL = frozenset({"AND", "OR", "NOT"})


def _filter_scalar(value: Any) -> FilterScalar:
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem is not None:
            msg = f"the string {problem}"
            raise ValueError(msg)
        return str(value)
    if value is None or type(value) in (bool, int):
        return value  # type: ignore[no-any-return]
    if isinstance(value, float):
        if not math.isfinite(value):
            msg = f"{value!r} is not a JSON number"
            raise ValueError(msg)
        return float(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, (datetime, date)):
        return metadata_datetime(value)
    msg = (
        f"a value of type {type(value).__name__} is not a filter value (use a string, number, "
        "boolean, null or date, or a list of them for 'in'/'nin')"
    )
    raise ValueError(msg)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _json_equal(stored: Any, wanted: FilterScalar) -> bool:
    """JSON equality of a stored value and a filter scalar: same JSON type, same value."""
    kind = _json_kind(stored)
    return kind != "other" and kind == _json_kind(wanted) and stored == wanted


class MetadataFilter(BaseModel):
    """One condition on a caller-defined metadata key (``MemoryMetadata.extra[key]``).

    The semantics, identical on every backend (``MemoryQuery.matches`` is the reference; the
    SQL backends evaluate the same rules in their queries, before any top-N cut):

    * A filter addresses a *top-level* key of ``metadata.extra`` (``"a.b"`` is the key named
      ``a.b``, not a path).
    * ``eq``/``ne``/``in``/``nin`` compare JSON values exactly and type-sensitively: ``1`` does
      not equal ``"1"``, ``true`` does not equal ``1``; ``1`` equals ``1.0`` (both numbers);
      ``None`` matches a stored JSON ``null``. Lists and objects stored under the key equal no
      filter value. A missing key never equals anything, so ``ne``/``nin`` match entries that
      lack the key.
    * ``gt``/``gte``/``lt``/``lte`` match only when the stored value and the filter value are
      both numbers (booleans are not numbers) or both strings; strings compare by code point.
      Dates are stored and given as canonical UTC ISO-8601 strings (:func:`metadata_datetime`),
      so date ranges compare as strings of one format.
    * ``exists`` (``True``/``False``) tests whether the key is present (a ``null`` value is
      present).
    * Filters of one query all AND together.
    * A logical filter (``op`` ``and``/``or``/``not``, no ``key``) combines its ``clauses``:
      ``and`` all of them, ``or`` at least one, ``not`` none of them (``not`` of several
      clauses excludes what matches any). Logical filters nest (at most 8 deep).

    ``value``: a string, number, boolean, ``None`` or date/datetime (converted to the canonical
    string) for ``eq``/``ne``/ranges; a list of those for ``in``/``nin``; a bool for ``exists``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(default="", max_length=200)
    op: FilterOp | LogicalOp = "eq"
    value: FilterValue = None
    clauses: tuple[MetadataFilter, ...] = Field(default=(), max_length=_MAX_CLAUSES)

    @field_validator("key", mode="after")
    @classmethod
    def _key(cls, value: str) -> str:
        if value == "":
            return value  # a logical filter's; a condition's key is required below
        problem = _text_problem(value)
        if problem is not None:
            msg = f"the key {problem}"
            raise ValueError(msg)
        return value

    @field_validator("value", mode="plain")
    @classmethod
    def _value(cls, value: Any) -> FilterValue:
        # Plain: these checks replace pydantic's coercion (which would turn "1" into 1 or
        # True into 1 and break the type-sensitive comparisons).
        if isinstance(value, (list, tuple, set, frozenset)):
            items: list[FilterScalar] = []
            for item in value:
                if isinstance(item, (list, tuple, set, frozenset, dict)):
                    msg = "the list of 'in'/'nin' holds single values, not lists or objects"
                    raise ValueError(msg)
                items.append(_filter_scalar(item))
            return tuple(items)
        return _filter_scalar(value)

    @model_validator(mode="after")
    def _fits_op(self) -> MetadataFilter:
        op, value = self.op, self.value
        if op in LOGICAL_OPS:
            if self.key or value is not None:
                msg = f"a logical filter ({op!r}) takes clauses, not a key or a value"
                raise ValueError(msg)
            if not self.clauses:
                msg = f"a logical filter ({op!r}) needs at least one clause"
                raise ValueError(msg)
            # Twice the parser's bound: each level of an object may add an implicit "and".
            if self.depth > 2 * _MAX_FILTER_DEPTH:
                msg = f"logical filters nest at most {_MAX_FILTER_DEPTH} deep"
                raise ValueError(msg)
            return self
        if not self.key:
            msg = "a filter needs the metadata key it tests"
            raise ValueError(msg)
        if self.clauses:
            msg = f"filter on {self.key!r}: only 'and', 'or' and 'not' take clauses"
            raise ValueError(msg)
        problem = None
        if op in ("eq", "ne") and isinstance(value, tuple):
            problem = f"'{op}' takes one value, not a list (use 'in' or 'nin')"
        elif op in ("in", "nin") and not isinstance(value, tuple):
            problem = f"'{op}' needs a list of values, got {_describe(value)}"
        elif op in RANGE_OPS and not (isinstance(value, str) or _is_number(value)):
            problem = f"'{op}' needs a number, a string or a date, got {_describe(value)}"
        elif op == "exists" and not isinstance(value, bool):
            problem = f"'exists' needs true or false, got {_describe(value)}"
        if problem is not None:
            msg = f"filter on {self.key!r}: {problem}"
            raise ValueError(msg)
        return self

    @property
    def depth(self) -> int:
        """How deep logical filters nest here (a condition: 0)."""
        return 1 + max((c.depth for c in self.clauses), default=0) if self.clauses else 0

    def matches(self, extra: Mapping[str, Any]) -> bool:
        """True if an entry whose ``metadata.extra`` is ``extra`` passes this filter."""
        op, value = self.op, self.value
        if op == "and":
            return all(c.matches(extra) for c in self.clauses)
        if op == "or":
            return any(c.matches(extra) for c in self.clauses)
        if op == "not":
            return not any(c.matches(extra) for c in self.clauses)
        present = self.key in extra
        if op == "exists":
            return present is value
        stored = extra.get(self.key)
        if op == "eq":
            return present and _json_equal(stored, value)  # type: ignore[arg-type]
        if op == "ne":
            return not (present and _json_equal(stored, value))  # type: ignore[arg-type]
        if op in ("in", "nin"):
            assert isinstance(value, tuple)
            found = present and any(_json_equal(stored, v) for v in value)
            return found if op == "in" else not found
        if not present:
            return False
        # Python compares ints and floats exactly, as SQLite and PostgreSQL's numeric do.
        if (_is_number(stored) and _is_number(value)) or (
            isinstance(stored, str) and isinstance(value, str)
        ):
            return _compare(op, stored, value)
        return False


def _compare(op: str, a: Any, b: Any) -> bool:
    if op == "gt":
        return bool(a > b)
    if op == "gte":
        return bool(a >= b)
    if op == "lt":
        return bool(a < b)
    return bool(a <= b)


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return f"{'a number' if _is_number(value) else 'the string'} {value!r}"


def filters_match(filters: tuple[MetadataFilter, ...], extra: Mapping[str, Any]) -> bool:
    """True if ``extra`` passes every filter (they AND together)."""
    return all(f.matches(extra) for f in filters)


def parse_filters(spec: Mapping[str, Any] | None) -> tuple[MetadataFilter, ...]:
    """Filters from the mem0-style object callers write (see :class:`MetadataFilter`).

    ``{"project": "x"}`` is ``eq``; ``{"status": {"in": ["a", "b"]}}`` names the operator;
    several operators on one key AND together (``{"priority": {"gte": 2, "lt": 5}}``), as do
    the keys. ``{"OR": [{...}, {...}]}``, ``{"AND": [...]}`` and ``{"NOT": [...]}`` (or
    ``$or``...) combine filter objects (``NOT`` of a list: none of them). Dates and datetimes
    become canonical UTC strings. Operators may be written with a leading ``$`` (``$in``) as
    in MongoDB.

    Raises:
        MemoryValidationError: not an object, an unknown operator, or a value the operator does
            not take (e.g. ``in`` without a list, a range on a boolean); one line naming the key.
    """
    return _parse_filters(spec, 0)


def _parse_filters(spec: Mapping[str, Any] | None, depth: int) -> tuple[MetadataFilter, ...]:
    if spec is None:
        return ()
    if not isinstance(spec, Mapping):
        msg = (
            "filters must be an object of metadata keys to a value or {operator: value}, "
            f"got {type(spec).__name__}"
        )
        raise MemoryValidationError(msg)
    out: list[MetadataFilter] = []
    for key, cond in spec.items():
        if not isinstance(key, str):
            msg = f"filter keys must be strings, got {key!r}"
            raise MemoryValidationError(msg)
        logical = key.lstrip("$").upper()
        if logical in _LOGICAL:
            out.append(_logical_filter(key, logical.lower(), cond, depth + 1))
            continue
        if isinstance(cond, Mapping):
            if not cond:
                msg = (
                    f"filter on {key!r}: empty condition {{}}: give a value or {{operator: value}}"
                )
                raise MemoryValidationError(msg)
            for raw_op, value in cond.items():
                op = raw_op.removeprefix("$") if isinstance(raw_op, str) else raw_op
                if op not in FILTER_OPS:
                    msg = (
                        f"filter on {key!r}: unknown operator {raw_op!r} "
                        f"(use {', '.join(FILTER_OPS)})"
                    )
                    raise MemoryValidationError(msg)
                out.append(_make_filter(key, op, value))
        else:
            out.append(_make_filter(key, "eq", cond))
    return tuple(out)


def _logical_filter(key: str, op: str, cond: Any, depth: int) -> MetadataFilter:
    """``{"OR": [spec, ...]}`` (also ``AND``, ``NOT``, ``$or``...) as one logical filter.

    Each item of the list is a filter object of its own (its keys AND together); ``NOT``
    also takes one object.
    """
    if depth > _MAX_FILTER_DEPTH:
        msg = f"filter {key!r}: logical filters nest at most {_MAX_FILTER_DEPTH} deep"
        raise MemoryValidationError(msg)
    items = [cond] if op == "not" and isinstance(cond, Mapping) else cond
    if not isinstance(items, (list, tuple)) or not items:
        msg = (
            f"filter {key!r}: give a non-empty list of filter objects "
            f'(e.g. {{"{key}": [{{"project": "a"}}, {{"project": "b"}}]}})'
        )
        raise MemoryValidationError(msg)
    clauses: list[MetadataFilter] = []
    for item in items:
        if not isinstance(item, Mapping):
            msg = f"filter {key!r}: every item is a filter object, got {type(item).__name__}"
            raise MemoryValidationError(msg)
        parts = _parse_filters(item, depth)
        if not parts:
            msg = f"filter {key!r}: an empty filter object {{}} in the list"
            raise MemoryValidationError(msg)
        clauses.append(parts[0] if len(parts) == 1 else MetadataFilter(op="and", clauses=parts))
    try:
        return MetadataFilter(op=op, clauses=tuple(clauses))
    except ValueError as exc:
        raise MemoryValidationError(_filter_error(key, exc)) from None


def _make_filter(key: str, op: str, value: Any) -> MetadataFilter:
    try:
        return MetadataFilter(key=key, op=op, value=value)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise MemoryValidationError(_filter_error(key, exc)) from None


def _filter_error(key: str, exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    first = errors()[0]
    msg = str(first["msg"]).removeprefix("Value error, ")
    if msg.startswith("filter on "):
        return msg
    loc = ".".join(str(p) for p in first["loc"])
    return f"filter on {key[:60]!r}: {loc}: {msg}" if loc else f"filter on {key[:60]!r}: {msg}"


class MemoryMetadata(BaseModel):
    """Descriptive metadata of a memory.

    ``tags`` drive filters (e.g. ``non-inferable``); ``label`` is a free-form sub-category such as
    ``preferences``; ``extra`` holds caller-defined JSON values (:func:`json_metadata`: dates
    become canonical UTC strings, anything not JSON is refused), which :class:`MetadataFilter`
    addresses; the scopes ``user_id``, ``session_id``, ``run_id`` and ``namespace`` are ordinary
    keys of it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    tags: tuple[str, ...] = ()
    source: str | None = None
    label: str | None = None
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    extra: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tags", mode="after")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_tags(value)

    @field_validator("extra", mode="after")
    @classmethod
    def _extra(cls, value: dict[str, Any]) -> dict[str, Any]:
        # JSON only, checked here so every backend stores (and filters) the same values and a
        # bad value is a validation error naming its key, not a TypeError deep in a write.
        return json_metadata(value)


def check_content(value: str, *, max_chars: int = DEFAULT_MAX_CONTENT_CHARS) -> str:
    """Validate memory content and return it unchanged.

    Raises:
        ValueError: blank content, a NUL byte, or more than ``max_chars`` characters.
    """
    if not isinstance(value, str):
        msg = f"content must be a string, got {type(value).__name__}"
        raise ValueError(msg)
    if not value.strip():
        msg = "content is empty or whitespace"
        raise ValueError(msg)
    if "\x00" in value:
        msg = "content contains a NUL byte"
        raise ValueError(msg)
    if len(value) > max_chars:
        msg = f"content has {len(value)} characters, more than the maximum of {max_chars}"
        raise ValueError(msg)
    return value


class MemoryStoreRequest(BaseModel):
    """What a caller asks to store. The backend assigns the id and bookkeeping fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    content: str
    category: MemoryCategory = MemoryCategory.SEMANTIC
    metadata: MemoryMetadata = Field(default_factory=MemoryMetadata)
    created_at: AwareDatetime | None = None
    expires_at: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    supersedes: str | None = None
    scope: MemoryScope = MemoryScope.PRIVATE

    @field_validator("content", mode="after")
    @classmethod
    def _content(cls, value: str) -> str:
        # The hard ceiling here protects every backend; the configurable (smaller or larger)
        # limit is applied again by the backend with its own setting.
        return check_content(value, max_chars=10 * DEFAULT_MAX_CONTENT_CHARS)

    @field_validator("supersedes", mode="after")
    @classmethod
    def _supersedes(cls, value: str | None) -> str | None:
        return None if value is None else validate_memory_id(value)


class QueryPeriod(BaseModel):
    """The period a search query names, as ranking used it (``ScoreBreakdown.period``).

    ``[start, end)`` in UTC, a side None where the period is open ("before the wedding");
    ``phrase`` is the query's words that name it; ``anchor`` the id of the memory that dated
    the event of an event-relative period.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: AwareDatetime | None = None
    end: AwareDatetime | None = None
    phrase: str
    anchor: str | None = None

    def describe(self) -> str:
        """One line: ``2026-04-01 .. 2026-05-01 (from 'in April 2026')``."""

        def moment(value: datetime | None) -> str:
            if value is None:
                return ""
            value = value.astimezone(UTC)
            if value.hour == value.minute == value.second == value.microsecond == 0:
                return f"{value:%Y-%m-%d}"
            return f"{value:%Y-%m-%d %H:%M}"

        dated = "" if self.anchor is None else f", dated by {self.anchor}"
        span = f"{moment(self.start)} .. {moment(self.end)}".strip()
        return f"{span} (from {self.phrase!r}{dated})"


class ScoreBreakdown(BaseModel):
    """How a search result's final score came about (``search(..., explain=True)``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dense: float | None = None
    dense_rank: int | None = None
    bm25: float | None = None
    bm25_rank: int | None = None
    fused: float = 0.0
    recency: float = 0.0
    boost: float = 0.0
    mmr_penalty: float = 0.0
    rerank: float | None = None
    final: float = 0.0
    # Evidence ranking (``fusion="evidence"``): each feature's weighted contribution to the
    # score whose calibrated probability is ``fused``; dense and bm25 above are the raw values.
    evidence: dict[str, float] | None = None
    # Probability that the store holds anything the query asks about (the off-topic gate,
    # ``EvidenceModel.topic``); ``fused`` already includes it. None where the gate does not apply.
    on_topic: float | None = None
    # The period the query names ("in April 2026", "last week", "before the wedding"), resolved
    # against the moment of asking; None where it names none.
    period: QueryPeriod | None = None


class MemoryEntry(BaseModel):
    """One stored memory. Results of a search also carry ``relevance_score`` and ``score``."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: str
    agent_id: str
    category: MemoryCategory
    content: str
    metadata: MemoryMetadata = Field(default_factory=MemoryMetadata)
    created_at: AwareDatetime
    updated_at: AwareDatetime
    expires_at: AwareDatetime | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    superseded_by: str | None = None
    consolidated_at: AwareDatetime | None = None
    access_count: int = Field(default=0, ge=0)
    last_accessed_at: AwareDatetime | None = None
    scope: MemoryScope = MemoryScope.PRIVATE
    retracted_at: AwareDatetime | None = None
    """When the author retracted this shared entry (kept for the audit trail, never searched)."""
    consolidated_into: str | None = None
    """Set on an archived original that consolidation merged: the id of the memory that now
    holds its content. ``get`` of the original's id answers this archived copy (live entries
    never carry it; ``restore`` clears it)."""
    relevance_score: float | None = None
    score: ScoreBreakdown | None = None

    @property
    def tags(self) -> tuple[str, ...]:
        """The entry's tags (shortcut for ``metadata.tags``)."""
        return self.metadata.tags

    def is_live(self, now: datetime) -> bool:
        """True if the entry is neither expired, superseded nor retracted at ``now``."""
        if self.retracted_at is not None:
            return False
        if self.expires_at is not None and self.expires_at <= now:
            return False
        return self.superseded_by is None and (self.valid_to is None or self.valid_to > now)

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON object of an entry (export files, ``--json``, REST)."""
        data: dict[str, Any] = {
            "id": self.id,
            "agent_id": self.agent_id,
            "category": self.category.value,
            "content": self.content,
            "tags": list(self.metadata.tags),
            "metadata": dict(self.metadata.extra),
            "label": self.metadata.label,
            "source": self.metadata.source,
            "confidence": self.metadata.confidence,
            "importance": self.metadata.importance,
            "scope": self.scope.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }
        for name in (
            "expires_at",
            "valid_from",
            "valid_to",
            "consolidated_at",
            "last_accessed_at",
            "retracted_at",
        ):
            value = getattr(self, name)
            data[name] = value.isoformat() if value is not None else None
        data["superseded_by"] = self.superseded_by
        data["consolidated_into"] = self.consolidated_into
        data["access_count"] = self.access_count
        if self.relevance_score is not None:
            data["relevance_score"] = self.relevance_score
        if self.score is not None:
            data["score"] = self.score.model_dump(mode="json")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], *, agent_id: str | None = None) -> MemoryEntry:
        """Parse the object written by :meth:`to_json` (``agent_id`` overrides the stored one).

        Raises:
            ValueError: a field is missing or malformed (pydantic's ``ValidationError``).
        """
        if not isinstance(data, dict):
            msg = f"a memory must be a JSON object, got {type(data).__name__}"
            raise ValueError(msg)
        created = data.get("created_at")
        meta = MemoryMetadata(
            tags=tuple(data.get("tags") or ()),
            extra=dict(data.get("metadata") or {}),
            label=data.get("label"),
            source=data.get("source"),
            confidence=data.get("confidence", 1.0),
            importance=data.get("importance", 0.5),
        )
        return cls(
            id=validate_memory_id(data["id"]),
            agent_id=validate_agent_id(agent_id or data["agent_id"]),
            category=MemoryCategory(data.get("category", "semantic")),
            content=check_content(data["content"], max_chars=10 * DEFAULT_MAX_CONTENT_CHARS),
            metadata=meta,
            created_at=created,
            updated_at=data.get("updated_at") or created,
            expires_at=data.get("expires_at"),
            valid_from=data.get("valid_from"),
            valid_to=data.get("valid_to"),
            superseded_by=data.get("superseded_by"),
            consolidated_at=data.get("consolidated_at"),
            access_count=data.get("access_count", 0),
            last_accessed_at=data.get("last_accessed_at"),
            scope=MemoryScope(data.get("scope", "private")),
            retracted_at=data.get("retracted_at"),
            consolidated_into=data.get("consolidated_into"),
        )


class MemoryQuery(BaseModel):
    """A retrieval request: query text plus filters.

    ``as_of`` returns what was valid at that time (superseded entries included when they were
    valid then); ``include_superseded`` returns superseded entries regardless. ``filters`` are
    conditions on ``metadata.extra`` (see :class:`MetadataFilter` for the semantics every
    backend shares); a mem0-style object is accepted too and parsed by :func:`parse_filters`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    text: str | None = None
    categories: frozenset[MemoryCategory] | None = None
    tags: tuple[str, ...] = ()
    label: str | None = None
    since: AwareDatetime | None = None
    until: AwareDatetime | None = None
    as_of: AwareDatetime | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    include_superseded: bool = False
    include_shared: bool = False
    filters: tuple[MetadataFilter, ...] = ()

    @field_validator("filters", mode="before")
    @classmethod
    def _filters(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, Mapping):
            return parse_filters(value)
        return value

    @field_validator("text", mode="after")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            msg = "query text contains a NUL byte"
            raise ValueError(msg)
        return value

    @field_validator("tags", mode="after")
    @classmethod
    def _tags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _check_tags(value)

    def matches(self, entry: MemoryEntry, now: datetime) -> bool:
        """True if ``entry`` passes every filter of this query (text aside) at ``now``."""
        if self.categories is not None and entry.category not in self.categories:
            return False
        if self.tags and not set(self.tags).issubset(entry.metadata.tags):
            return False
        if self.label is not None and entry.metadata.label != self.label:
            return False
        if self.since is not None and entry.created_at < self.since:
            return False
        if self.until is not None and entry.created_at > self.until:
            return False
        if self.filters and not filters_match(self.filters, entry.metadata.extra):
            return False
        if entry.expires_at is not None and entry.expires_at <= now:
            return False
        if entry.retracted_at is not None:
            # Retraction withdraws shared knowledge for good, as-of queries included: the row
            # is kept only for the audit trail.
            return False
        if self.as_of is not None:
            start = entry.valid_from or entry.created_at
            if start > self.as_of:
                return False
            return entry.valid_to is None or entry.valid_to > self.as_of
        if self.include_superseded:
            return True
        return entry.superseded_by is None and (entry.valid_to is None or entry.valid_to > now)


@dataclass(slots=True)
class CandidateSet:
    """Raw candidates of one search, before fusion and ranking (pure data for ``retrieval``).

    ``dense`` and ``lexical`` are ``(entry_id, score)`` lists, best first; ``entries`` holds every
    entry named in either list or in ``neighbours``; ``vectors`` optionally maps ids to unit
    vectors (for MMR). ``neighbours`` maps a candidate to the ids of the entries stored just
    before it and just after it in the same conversation thread (each tuple nearest first),
    for context expansion. ``searched`` is how many memories the dense side compared the
    query with (the scope's live rows that pass the filters; None when the backend cannot tell
    cheaply): the more rows a query is compared with, the closer its best chance match, which
    the off-topic gate (:class:`memvault.retrieval.evidence.TopicGate`) allows for.
    ``analysed`` optionally maps ids to the entry's content as the store's lexical index holds it
    (the terms of :func:`memvault.retrieval.text.index_text` of the content, space-separated,
    each as often as it occurs, in any order), for a backend that keeps it; ranking then reads
    a candidate's terms from it instead of analysing the content again, which for long turns is
    most of a search's ranking time. ``static`` optionally maps ids to the entry's static
    word-embedding vector (:func:`memvault.retrieval.evidence.static_vectors` of its content),
    for a backend that stores it; ranking computes the ones it lacks.
    """

    dense: list[tuple[str, float]] = field(default_factory=list)
    lexical: list[tuple[str, float]] = field(default_factory=list)
    entries: dict[str, MemoryEntry] = field(default_factory=dict)
    query_vector: Any = None
    vectors: dict[str, Any] = field(default_factory=dict)
    neighbours: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    searched: int | None = None
    analysed: dict[str, str] = field(default_factory=dict)
    static: dict[str, Any] = field(default_factory=dict)

    def adopt_rows(self, other: CandidateSet) -> None:
        """Take the entries, vectors, neighbours and analysed texts of ``other`` (another search
        of the same store) that this set does not hold yet; the score lists are the caller's."""
        for entry_id, entry in other.entries.items():
            self.entries.setdefault(entry_id, entry)
        for entry_id, vector in other.vectors.items():
            self.vectors.setdefault(entry_id, vector)
        for entry_id, sides in other.neighbours.items():
            self.neighbours.setdefault(entry_id, sides)
        for entry_id, text in other.analysed.items():
            self.analysed.setdefault(entry_id, text)
        for entry_id, vector in other.static.items():
            self.static.setdefault(entry_id, vector)


class AuditRecord(BaseModel):
    """One entry of a store's append-only audit log (``audit`` table).

    ``actor`` did ``action`` (e.g. ``shared.publish``, ``shared.retract``); ``agent_id`` and
    ``memory_id`` name the memory it concerns (its owner/author and id) when there is one;
    ``details`` holds action-specific JSON values.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    at: AwareDatetime
    actor: str
    action: str
    agent_id: str | None = None
    memory_id: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class ArchivedEntry(BaseModel):
    """A memory moved to the archive (evicted, expired, consolidated or archived by request).

    ``archive_id`` names the archive row; ``entry`` is the memory exactly as it was (its id is
    the original id, which :meth:`memvault.AsyncMemory.restore` gives back). ``reason`` says
    why it was archived (``evicted``, ``expired``, ``consolidated``, ``retention`` ...).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    archive_id: str
    agent_id: str
    reason: str
    archived_at: AwareDatetime
    entry: MemoryEntry

    @property
    def memory_id(self) -> str:
        """The archived memory's original id."""
        return self.entry.id


class StoreStats(BaseModel):
    """Counts a backend reports for ``memvault stats``."""

    model_config = ConfigDict(frozen=True)

    backend: str
    location: str
    total: int
    by_category: dict[str, int]
    agents: int
    embedding_model: str | None = None
    dimension: int | None = None
    size_bytes: int | None = None


class ChatMessage(BaseModel):
    """One message of a chat conversation, in the OpenAI chat-completions shape."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    name: str | None = None


class LLMResponse(BaseModel):
    """The text a provider returned, with the model that produced it and token usage.

    Token counts are 0 when the server did not report usage.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    model: str
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    finish_reason: str | None = None


# The name rule shared by OpenAI function tools and Anthropic tools.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolDefinition(BaseModel):
    """One tool an agent may call: name, description and a JSON schema of its parameters.

    Provider-neutral; :mod:`memvault.injection.tools` renders it for OpenAI and Anthropic (and
    re-exports it, its historical home).
    """

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


def trusted(cls: type[ModelT], values: dict[str, Any]) -> ModelT:
    """Build a model from already-validated values without validation (the read hot path).

    Backends read rows they validated on the way in; pydantic's ``model_construct`` still costs
    about 8 µs per object, which dominated search latency with hundreds of candidates. This
    sets the instance state the same way ``model_construct`` does, minus its per-field default
    handling, so ``values`` must name every field of ``cls``.
    """
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


def finite(value: float) -> float:
    """Return ``value`` or 0.0 when it is NaN/inf (scores must stay JSON-serialisable)."""
    return value if math.isfinite(value) else 0.0


class MemoryHistory(BaseModel):
    """Every version of one memory, oldest first, with the audit records that concern them.

    ``versions[-1]`` is the current version (unless it was deleted or archived); each earlier
    one was superseded by the next (``superseded_by``) and stays visible to ``as_of`` searches
    of its time. ``audit`` holds the store, supersede, archive... records of every version,
    oldest first (empty on a store without an audit log).
    """

    model_config = ConfigDict(frozen=True)

    memory_id: str
    versions: tuple[MemoryEntry, ...]
    audit: tuple[AuditRecord, ...] = ()
    deleted: bool = False
    """True when the newest version was deleted: ``versions`` holds what remains (older
    versions, superseded), ``audit`` what happened."""

    @property
    def current(self) -> MemoryEntry:
        """The newest version.

        Raises:
            MemoryNotFoundError: every version was deleted (the audit tells what happened).
        """
        if self.deleted or not self.versions:
            msg = f"memory {self.memory_id} was deleted: its history holds what remains"
            raise MemoryNotFoundError(msg)
        return self.versions[-1]
