"""The ``absolute`` preset: each result's relevance from the pair alone (``RelevanceHead``).

Real store, real MiniLM: the same memory and question score the same whether the store holds
that memory alone or among dozens of unrelated facts, while the order is the default's.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memvault import AsyncMemory
from memvault.protocols import Embedder
from memvault.retrieval.evidence import RelevanceHead
from memvault.retrieval.presets import get_preset

OTHERS = [
    "Is allergic to shellfish",
    "Writes code in Neovim",
    "Prefers tea over coffee",
    "Works as a data analyst at Acme",
    "Runs 10k every Sunday",
    "Daughter is called Mia",
    "Drives a grey Renault Clio",
    "Is learning Japanese",
    "Favourite band is Radiohead",
    "Uses a MacBook Pro for work",
    "Birthday is on 12 March",
    "Plays chess online",
    "Dislikes horror movies",
    "Has two cats",
    "Reads sci-fi novels",
    "Sister lives in Berlin",
    "Takes the train to work",
    "Wakes up at 6am",
    "Likes hiking in the Alps",
    "Keeps notes in Obsidian",
]
CASES = [
    ("what is my dog's name?", "Has a dog named Biscuit"),
    ("where do I live?", "Lives in Porto"),
    ("which web framework do I prefer?", "Prefers Litestar over Flask for web services"),
]


async def _score(embedder: Embedder, preset: str, question: str, answer: str, n: int) -> float:
    mem = AsyncMemory(embedder=embedder)
    try:
        # One add per memory: batches pad texts together, which moves int8 cosines a little.
        for text in [answer, *OTHERS[:n]]:
            await mem.add(text, agent_id="u", category="semantic")
        hits = await mem.search(question, agent_id="u", limit=30, preset=preset)
        (hit,) = [h for h in hits if h.content == answer]
        assert hit.relevance_score is not None
        return hit.relevance_score
    finally:
        await mem.close()


@pytest.mark.parametrize(("question", "answer"), CASES)
async def test_absolute_relevance_does_not_move_with_the_store(
    minilm: Embedder, question: str, answer: str
) -> None:
    alone = await _score(minilm, "absolute", question, answer, 0)
    among = await _score(minilm, "absolute", question, answer, len(OTHERS))
    assert abs(alone - among) <= 0.05, (alone, among)


async def test_the_default_relevance_moves_with_the_store(minilm: Embedder) -> None:
    # What the absolute head is for: the default's probability reads the store's BM25 and its
    # off-topic bar, so the same pair scores differently as unrelated facts are added.
    question, answer = CASES[0]
    alone = await _score(minilm, "default", question, answer, 0)
    among = await _score(minilm, "default", question, answer, len(OTHERS))
    assert abs(alone - among) > 0.05


def test_the_absolute_preset_orders_as_the_default() -> None:
    default, absolute = get_preset("default"), get_preset("absolute")
    assert absolute.evidence is not None and absolute.evidence.absolute is not None
    assert default.evidence is not None
    assert absolute.evidence.model_copy(update={"absolute": None}) == default.evidence


@pytest.mark.parametrize("term", ["lex", "cos*thread", "ctx_prev", "cos*lex", "nope", "a*b*c"])
def test_a_head_refuses_store_relative_or_unknown_terms(term: str) -> None:
    with pytest.raises(ValidationError):
        RelevanceHead(terms={term: 1.0})
