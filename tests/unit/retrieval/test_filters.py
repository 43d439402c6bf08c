"""Filter strategies: non-inferable and tag filters, fail-closed application, advisory check."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from memvault.models import MemoryCategory, MemoryEntry, MemoryMetadata, MemoryStoreRequest
from memvault.retrieval.filters import (
    NON_INFERABLE_TAG,
    MemoryFilterStrategy,
    NonInferableFilter,
    TagFilter,
    apply_filter,
    check_non_inferable_tag,
)

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def entry(i: str, *tags: str, content: str = "a memory") -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id="dev-1",
        category=MemoryCategory.SEMANTIC,
        content=content,
        metadata=MemoryMetadata(tags=tags),
        created_at=NOW,
        updated_at=NOW,
        relevance_score=1.0,
    )


ENTRIES = [
    entry("m1", "non-inferable", "decision"),
    entry("m2"),
    entry("m3", "non-inferable"),
    entry("m4", "Non-Inferable"),
    entry("m5", "decision", "private"),
]


def ids(entries: Sequence[MemoryEntry]) -> list[str]:
    return [e.id for e in entries]


class Raising:
    name = "raising"

    def filter(self, entries: Sequence[MemoryEntry], *, query_text: str) -> list[MemoryEntry]:
        raise RuntimeError("classifier unavailable")


class Returning:
    def __init__(self, result: object) -> None:
        self.result = result
        self.calls: list[tuple[int, str]] = []

    @property
    def name(self) -> str:
        return "returning"

    def filter(self, entries: Sequence[MemoryEntry], *, query_text: str) -> list[MemoryEntry]:
        self.calls.append((len(entries), query_text))
        return self.result  # type: ignore[return-value]


def test_non_inferable_filter_keeps_only_tagged_entries_in_order() -> None:
    f = NonInferableFilter()
    assert f.tag == NON_INFERABLE_TAG == "non-inferable"
    assert f.name == "non_inferable"
    # Tags match exactly: the differently cased tag is left out (the safe side).
    assert ids(f.filter(ENTRIES, query_text="q")) == ["m1", "m3"]
    assert ids(NonInferableFilter(tag=" decision ").filter(ENTRIES, query_text="q")) == [
        "m1",
        "m5",
    ]


@pytest.mark.parametrize("tag", ["", "   "])
def test_non_inferable_filter_needs_a_tag(tag: str) -> None:
    with pytest.raises(ValueError, match="non-empty tag"):
        NonInferableFilter(tag=tag)


def test_builtin_filters_satisfy_the_protocol() -> None:
    assert isinstance(NonInferableFilter(), MemoryFilterStrategy)
    assert isinstance(TagFilter(require=["x"]), MemoryFilterStrategy)
    assert isinstance(Returning([]), MemoryFilterStrategy)
    assert not isinstance(object(), MemoryFilterStrategy)


def test_tag_filter_requires_all_and_excludes_any() -> None:
    assert ids(TagFilter(require=["decision"]).filter(ENTRIES, query_text="q")) == ["m1", "m5"]
    assert ids(TagFilter(exclude={"private"}).filter(ENTRIES, query_text="q")) == [
        "m1",
        "m2",
        "m3",
        "m4",
    ]
    both = TagFilter(require=("decision",), exclude=("private",))
    assert ids(both.filter(ENTRIES, query_text="q")) == ["m1"]
    assert ids(TagFilter().filter(ENTRIES, query_text="q")) == ids(ENTRIES)
    assert TagFilter(require=["a"]).name == "tags"


def test_tag_filter_rejects_contradictions_and_bare_strings() -> None:
    with pytest.raises(ValueError, match="both required and excluded: x"):
        TagFilter(require=["x", "y"], exclude=["x"])
    with pytest.raises(TypeError, match="not the string"):
        TagFilter(require="decision")
    with pytest.raises(ValueError, match="invalid tag"):
        TagFilter(exclude=["ok", " "])


def test_apply_filter_without_strategy_keeps_everything() -> None:
    out = apply_filter(None, ENTRIES, query_text="q")
    assert out == ENTRIES
    assert out is not ENTRIES


def test_apply_filter_passes_query_and_skips_empty_input() -> None:
    strategy = Returning([ENTRIES[0]])
    assert apply_filter(strategy, ENTRIES, query_text="auth design") == [ENTRIES[0]]
    assert strategy.calls == [(5, "auth design")]
    assert apply_filter(strategy, [], query_text="q") == []
    assert len(strategy.calls) == 1


def test_apply_filter_fails_closed_when_the_strategy_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="memvault.retrieval.filters"):
        assert apply_filter(Raising(), ENTRIES, query_text="q") == []
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.getMessage() == "memory.filter.failed"
    assert record.strategy == "raising"  # type: ignore[attr-defined]
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)


@pytest.mark.parametrize(
    "result",
    [
        None,
        "m1",
        {"m1": 1},
        [entry("intruder", "non-inferable")],  # not among the candidates
        [ENTRIES[0], "m2"],
    ],
)
def test_apply_filter_fails_closed_on_a_malformed_result(
    result: object, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memvault.retrieval.filters"):
        assert apply_filter(Returning(result), ENTRIES, query_text="q") == []
    (record,) = caplog.records
    assert record.getMessage() == "memory.filter.failed"
    assert record.reason  # type: ignore[attr-defined]


def test_apply_filter_accepts_a_tuple_result() -> None:
    assert apply_filter(Returning((ENTRIES[2],)), ENTRIES, query_text="q") == [ENTRIES[2]]


def test_check_non_inferable_tag_is_advisory() -> None:
    tagged = MemoryStoreRequest(
        content="We chose RabbitMQ over Kafka", metadata=MemoryMetadata(tags=("non-inferable",))
    )
    untagged = MemoryStoreRequest(content="The repo uses ruff")
    assert check_non_inferable_tag(tagged) is None
    warning = check_non_inferable_tag(untagged)
    assert warning is not None
    assert "'non-inferable'" in warning
    assert "design rationale" in warning
    assert check_non_inferable_tag(tagged, tag="decision") is not None
