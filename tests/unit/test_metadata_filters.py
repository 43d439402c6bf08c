"""Metadata filters (``parse_filters``, ``MetadataFilter``) and JSON-only metadata (models layer).

The backends' agreement on the semantics is the contract suite's job
(:class:`memvault.testing.contract.MetadataFilterContract`); this checks the parsing, the error
messages and the reference semantics of ``MemoryQuery.matches``.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone
from enum import StrEnum
from typing import Any

import pytest
from pydantic import ValidationError

from memvault import AsyncMemory
from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryValidationError
from memvault.models import (
    FILTER_OPS,
    MemoryCategory,
    MemoryEntry,
    MemoryMetadata,
    MemoryQuery,
    MemoryStoreRequest,
    MetadataFilter,
    json_metadata,
    metadata_datetime,
    parse_filters,
)

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def _nested(levels: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"a": 1}
    for _ in range(levels):
        spec = {"OR": [spec]}
    return spec


def entry(**extra: Any) -> MemoryEntry:
    return MemoryEntry(
        id="01900000-0000-7000-8000-000000000001",
        agent_id="a",
        category=MemoryCategory.SEMANTIC,
        content="x",
        metadata=MemoryMetadata(extra=extra),
        created_at=T0,
        updated_at=T0,
    )


def matches(spec: dict[str, Any], **extra: Any) -> bool:
    return MemoryQuery(filters=spec).matches(entry(**extra), T0)


# -- parse_filters --------------------------------------------------------------------------------


def test_the_mem0_style_forms() -> None:
    got = parse_filters(
        {
            "project": "x",
            "status": {"in": ["a", "b"]},
            "priority": {"gte": 2, "lt": 5},
            "due": {"lt": datetime(2026, 3, 1, 11, 30, tzinfo=timezone(timedelta(hours=2)))},
            "k": {"exists": True},
            "m": {"$ne": None},
        }
    )
    assert got == (
        MetadataFilter(key="project", op="eq", value="x"),
        MetadataFilter(key="status", op="in", value=("a", "b")),
        MetadataFilter(key="priority", op="gte", value=2),
        MetadataFilter(key="priority", op="lt", value=5),
        MetadataFilter(key="due", op="lt", value="2026-03-01T09:30:00+00:00"),
        MetadataFilter(key="k", op="exists", value=True),
        MetadataFilter(key="m", op="ne", value=None),
    )
    assert parse_filters(None) == ()
    assert parse_filters({}) == ()
    assert set(FILTER_OPS) == {"eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "exists"}


def test_logical_filters_nest_and_match_the_reference_semantics() -> None:
    assert matches({"OR": [{"a": 1}, {"b": 2}]}, b=2)
    assert not matches({"OR": [{"a": 1}, {"b": 2}]}, a=2, b=1)
    assert matches({"NOT": [{"a": 1}, {"b": 2}]}, a=3)
    assert not matches({"NOT": [{"a": 1}, {"b": 2}]}, b=2)
    assert matches({"AND": [{"a": {"gt": 1}}, {"NOT": {"a": 5}}]}, a=3)
    assert not matches({"AND": [{"a": {"gt": 1}}, {"NOT": {"a": 5}}]}, a=5)
    # An object in a list ANDs its keys; eight levels are accepted.
    assert not matches({"OR": [{"a": 1, "b": 2}]}, a=1)
    assert matches(_nested(8), a=1)
    (combined,) = parse_filters({"OR": [{"a": 1, "b": 2}, {"c": 3}]})
    assert combined.op == "or" and combined.clauses[0].op == "and"
    with pytest.raises(ValidationError, match="takes clauses, not a key"):
        MetadataFilter(key="a", op="or", clauses=(MetadataFilter(key="a", value=1),))
    with pytest.raises(ValidationError, match="needs the metadata key"):
        MetadataFilter(op="eq", value=1)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"status": {"in": "a"}}, "'status': 'in' needs a list"),
        ({"status": {"nin": 3}}, "'status': 'nin' needs a list"),
        ({"flag": {"gt": True}}, "'flag': 'gt' needs a number, a string or a date"),
        ({"tags": {"lte": ["a"]}}, "'tags': 'lte' needs a number"),
        ({"n": {"gte": None}}, "'n': 'gte' needs a number"),
        ({"k": {"exists": 1}}, "'k': 'exists' needs true or false"),
        ({"k": {"like": "a%"}}, "'k': unknown operator 'like'"),
        ({"k": {}}, "'k': empty condition"),
        ({"k": ["a", "b"]}, "'k': 'eq' takes one value, not a list"),
        ({"k": {"in": [["a"]]}}, "'k'"),
        ({"k": {"eq": {"a", "b"}}}, "'k': 'eq' takes one value"),
        ({"k": object()}, "'k'"),
        ({"k": {"lt": math.nan}}, "'k'"),
        ({"k": {"lt": datetime(2026, 1, 1)}}, "'k'"),  # naive
        ({"k": "a\x00b"}, "NUL"),
        ({"": 1}, "filter on ''"),
        ({"x" * 201: 1}, "at most 200"),
        ({"OR": []}, "give a non-empty list of filter objects"),
        ({"$or": {"a": 1}}, "give a non-empty list of filter objects"),
        ({"AND": [1]}, "every item is a filter object"),
        ({"NOT": [{}]}, "an empty filter object"),
        ({"OR": [{"a": {"bogus": 1}}]}, "unknown operator 'bogus'"),
        (_nested(9), "nest at most 8 deep"),
    ],
)
def test_bad_filters_are_one_line_errors_naming_the_key(
    spec: dict[str, Any], expected: str
) -> None:
    with pytest.raises(MemoryValidationError, match=r"^filter") as info:
        parse_filters(spec)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


def test_a_non_mapping_is_refused() -> None:
    with pytest.raises(MemoryValidationError, match="filters must be an object"):
        parse_filters([("a", 1)])  # type: ignore[arg-type]


def test_values_are_never_coerced() -> None:
    # pydantic's lax mode would turn "1" into 1 or True into 1 and break type-sensitivity.
    assert MetadataFilter(key="k", value="1").value == "1"
    assert MetadataFilter(key="k", value=True).value is True
    assert MetadataFilter(key="k", value=1).value == 1
    assert isinstance(MetadataFilter(key="k", value=1).value, int)
    assert MetadataFilter(key="k", op="in", value=[1, "1", None]).value == (1, "1", None)
    with pytest.raises(ValidationError):
        MetadataFilter(key="k", op="exists", value="yes")


def test_memory_query_takes_a_mapping_or_filter_objects() -> None:
    q = MemoryQuery(filters={"a": 1})
    assert q.filters == (MetadataFilter(key="a", value=1),)
    assert MemoryQuery(filters=[MetadataFilter(key="a", value=1)]).filters == q.filters
    assert MemoryQuery(filters=None).filters == ()
    with pytest.raises(ValidationError, match="unknown operator"):
        MemoryQuery(filters={"a": {"nope": 1}})


# -- the reference semantics ----------------------------------------------------------------------


def test_eq_is_type_sensitive() -> None:
    assert matches({"k": 1}, k=1)
    assert matches({"k": 1}, k=1.0)
    assert not matches({"k": 1}, k="1")
    assert not matches({"k": 1}, k=True)
    assert not matches({"k": True}, k=1)
    assert matches({"k": True}, k=True)
    assert not matches({"k": "1"}, k=1)
    assert matches({"k": None}, k=None)
    assert not matches({"k": None})  # missing is not null
    assert not matches({"k": 1}, k=[1])
    assert not matches({"k": "a"}, k={"a": 1})


def test_ne_and_nin_match_a_missing_key() -> None:
    assert matches({"k": {"ne": 1}})
    assert matches({"k": {"ne": 1}}, k="1")
    assert not matches({"k": {"ne": 1}}, k=1.0)
    assert matches({"k": {"nin": [1, 2]}})
    assert not matches({"k": {"nin": [1, 2]}}, k=2)
    assert matches({"k": {"in": [1, "x"]}}, k="x")
    assert not matches({"k": {"in": []}}, k="x")
    assert matches({"k": {"nin": []}}, k="x")


def test_ranges_need_two_numbers_or_two_strings() -> None:
    assert matches({"k": {"gt": 1}}, k=2)
    assert matches({"k": {"gte": 1.5, "lt": 2}}, k=1.5)
    assert not matches({"k": {"gt": 1}}, k="2")
    assert not matches({"k": {"gt": 0}}, k=True)  # booleans are not numbers
    assert not matches({"k": {"gt": 0}}, k=None)
    assert not matches({"k": {"gt": 0}}, k=[1])
    assert not matches({"k": {"gt": 0}})
    assert matches({"k": {"lt": "b"}}, k="a")
    assert matches({"k": {"lt": "2"}}, k="10")  # strings compare as strings
    assert not matches({"k": {"lt": "b"}}, k=1)
    assert matches({"k": {"gt": 2**70}}, k=2**70 + 1)  # exact for big integers


def test_exists_counts_null_as_present() -> None:
    assert matches({"k": {"exists": True}}, k=None)
    assert not matches({"k": {"exists": True}})
    assert matches({"k": {"exists": False}}, j=1)


def test_filters_address_top_level_keys_only() -> None:
    assert matches({"a.b": 1}, **{"a.b": 1})
    assert not matches({"a.b": 1}, a={"b": 1})


def test_filters_and_with_the_other_conditions() -> None:
    spec = {"k": {"gte": 1, "lte": 3}, "user_id": "u"}
    assert matches(spec, k=2, user_id="u")
    assert not matches(spec, k=2, user_id="v")
    assert not matches(spec, k=4, user_id="u")
    q = MemoryQuery(filters={"user_id": "u"}, categories=frozenset({MemoryCategory.EPISODIC}))
    assert not q.matches(entry(user_id="u"), T0)


def test_dates_compare_in_time_order() -> None:
    berlin = timezone(timedelta(hours=2))
    due = datetime(2026, 3, 1, 11, 30, tzinfo=berlin)  # 09:30 UTC
    assert metadata_datetime(due) == "2026-03-01T09:30:00+00:00"
    assert metadata_datetime(date(2026, 3, 1)) == "2026-03-01T00:00:00+00:00"
    assert metadata_datetime(T0.replace(microsecond=5)) == "2026-03-01T09:30:00.000005+00:00"
    stamps = [T0 + timedelta(microseconds=us) for us in (0, 1, 999_999, 1_000_000, 1_000_001)]
    texts = [metadata_datetime(t) for t in stamps]
    assert texts == sorted(texts)
    stored = MemoryMetadata(extra={"due": due}).extra["due"]
    assert stored == "2026-03-01T09:30:00+00:00"
    assert matches({"due": {"lt": T0 + timedelta(seconds=1)}}, due=stored)
    assert matches({"due": {"gte": date(2026, 3, 1), "lt": date(2026, 3, 2)}}, due=stored)
    assert matches({"due": due}, due=stored)
    with pytest.raises(ValueError, match="naive"):
        metadata_datetime(datetime(2026, 3, 1))


# -- metadata is JSON ------------------------------------------------------------------------------


class Colour(StrEnum):
    RED = "red"


def test_metadata_values_become_plain_json() -> None:
    extra = MemoryMetadata(
        extra={
            "when": datetime(2026, 3, 1, 10, 30, tzinfo=timezone(timedelta(hours=1))),
            "day": date(2026, 3, 2),
            "pair": (1, 2),
            "nested": {"at": [T0], "ok": True, "none": None, "f": 0.5},
            "colour": Colour.RED,
        }
    ).extra
    assert extra == {
        "when": "2026-03-01T09:30:00+00:00",
        "day": "2026-03-02T00:00:00+00:00",
        "pair": [1, 2],
        "nested": {"at": ["2026-03-01T09:30:00+00:00"], "ok": True, "none": None, "f": 0.5},
        "colour": "red",
    }
    assert type(extra["colour"]) is str
    assert json_metadata({}) == {}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"tags": {"a", "b"}}, "metadata key 'tags': a value of type set is not JSON"),
        ({"blob": b"x"}, "metadata key 'blob': a value of type bytes"),
        ({"score": math.nan}, "metadata key 'score': nan is not a JSON number"),
        ({"score": math.inf}, "metadata key 'score': inf is not a JSON number"),
        ({"deep": {"list": [1, {"x": math.nan}]}}, "metadata key 'deep' (at deep.list[1].x)"),
        ({"when": datetime(2026, 3, 1)}, "metadata key 'when': naive datetime"),
        ({"obj": {1: "a"}}, "metadata key 'obj': object key 1 is not a string"),
        ({"text": "a\x00b"}, "metadata key 'text': the string contains a NUL"),
        ({"a\x00": 1}, "the key contains a NUL"),
        ({"s": "\ud800"}, "unpaired surrogate"),
        ({"o": object()}, "metadata key 'o': a value of type object"),
    ],
)
def test_metadata_that_is_not_json_is_refused_naming_the_key(
    extra: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ValidationError) as info:
        MemoryMetadata(extra=extra)
    assert expected in str(info.value)
    with pytest.raises(ValidationError):
        MemoryStoreRequest(content="x", metadata={"extra": extra})  # type: ignore[arg-type]


async def test_the_facade_turns_bad_metadata_and_filters_into_validation_errors() -> None:
    async with AsyncMemory("memory://", embedder=HashingEmbedder()) as mem:
        with pytest.raises(MemoryValidationError, match="metadata key 'tags'") as info:
            await mem.add("x", agent_id="a", metadata={"tags": {"a"}})
        assert "\n" not in str(info.value)
        with pytest.raises(MemoryValidationError, match="metadata key 'when'"):
            await mem.add("x", agent_id="a", metadata={"when": datetime(2026, 1, 1)})
        mid = await mem.add("x", agent_id="a", metadata={"when": T0, "n": 1})
        got = await mem.get(mid, agent_id="a")
        assert got.metadata.extra == {"when": "2026-03-01T09:30:00+00:00", "n": 1}
