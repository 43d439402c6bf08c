"""Queries that name a period ("two weeks ago", "in the past three months"), end to end: real
SQLite file, real MiniLM model, the default preset.

The period counts back from ``asked_at`` (a conversation replayed after the fact) and favours
memories created in it; its words are matched by date, not as text; and unlike ``as_of`` it
hides nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.errors import MemoryValidationError
from memvault.protocols import Embedder

ASKED = datetime(2023, 5, 5, 16, 0, tzinfo=UTC)
TAM = "I went hiking at Mount Tamalpais with my sister."
DIABLO = "I went hiking at Mount Diablo with my sister."
LATER = "I went hiking at Mission Peak with my sister."
STAMPS = "I've been collecting stamps for three months now, mostly from Europe."
TRIP = "Back from a weekend camping trip in Yosemite, the waterfalls were amazing."


@pytest.fixture
async def mem(tmp_path: Path, minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    memory = AsyncMemory(str(tmp_path / "diary.db"), embedder=minilm)
    await memory.__aenter__()
    dated = [
        (TAM, ASKED - timedelta(days=14)),
        (DIABLO, ASKED - timedelta(days=90)),
        (LATER, ASKED + timedelta(days=5)),
        (STAMPS, ASKED - timedelta(days=200)),
        (TRIP, ASKED - timedelta(days=30)),
        ("My sister prefers the coast to the mountains.", ASKED - timedelta(days=40)),
        ("The car needs new tyres before winter.", ASKED - timedelta(days=10)),
    ]
    await memory.add_many(
        [{"content": text, "created_at": when} for text, when in dated], agent_id="me"
    )
    try:
        yield memory
    finally:
        await memory.close()


async def _top(mem: AsyncMemory, query: str, **kw: object) -> list[str]:
    return [h.content for h in await mem.search(query, agent_id="me", limit=3, **kw)]  # type: ignore[arg-type]


async def test_the_named_period_counts_back_from_when_the_question_is_asked(
    mem: AsyncMemory,
) -> None:
    query = "Where did I go hiking two weeks ago?"
    # Two memories alike but for their dates: the one of the period named comes first, and
    # moving the moment of asking moves the answer.
    assert (await _top(mem, query, asked_at=ASKED))[0] == TAM
    assert (await _top(mem, query, asked_at=ASKED - timedelta(days=76)))[0] == DIABLO


async def test_context_is_dated_too(mem: AsyncMemory) -> None:
    query = "Remind me where I went hiking two weeks ago."
    assert (await mem.context(query, agent_id="me", asked_at=ASKED)).entries[0].content == TAM
    earlier = await mem.context(query, agent_id="me", asked_at=ASKED - timedelta(days=76))
    assert earlier.entries[0].content == DIABLO


async def test_asked_at_hides_nothing(mem: AsyncMemory) -> None:
    # as_of would hide the memory created after the question; asked_at only dates the question.
    found = await _top(mem, "hiking with my sister", asked_at=ASKED)
    assert LATER in found
    assert LATER not in await _top(mem, "hiking with my sister", as_of=ASKED)


async def test_the_words_of_a_relative_period_are_matched_by_date(mem: AsyncMemory) -> None:
    # "three months" in the question names a period; the memory that says "three months" is
    # not the answer, the trip within that period is.
    found = await _top(mem, "What trip did I take in the past three months?", asked_at=ASKED)
    assert found[0] == TRIP
    assert found.index(TRIP) < (found.index(STAMPS) if STAMPS in found else len(found))


async def test_a_naive_asked_at_is_refused(mem: AsyncMemory) -> None:
    with pytest.raises(MemoryValidationError, match="asked_at"):
        await mem.search("hiking", agent_id="me", asked_at=datetime(2023, 5, 5))


async def test_memories_of_the_period_are_found_among_many_better_worded_ones(
    tmp_path: Path, minilm: Embedder
) -> None:
    # Far more memories than a search ranks match the words better; the one of the period
    # named still joins the candidates, and its date puts it first.
    async with AsyncMemory(str(tmp_path / "many.db"), embedder=minilm) as mem:
        old = [
            {
                "content": f"I went hiking on trail number {n} with my sister.",
                "created_at": ASKED - timedelta(days=60 + n),
            }
            for n in range(300)
        ]
        recent = {
            "content": "Walked up Mount Tam with my sister.",
            "created_at": ASKED - timedelta(days=13),
        }
        await mem.add_many([*old, recent], agent_id="me", dedup=False)
        query = "Where did I go hiking with my sister two weeks ago?"
        found = [h.content for h in await mem.search(query, agent_id="me", asked_at=ASKED)]
        assert found[0] == recent["content"]
