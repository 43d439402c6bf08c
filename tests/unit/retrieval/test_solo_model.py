"""Stored facts rank under the evidence model's ``solo`` model; conversation turns do not.

Real store, real MiniLM. A fact here is a semantic memory that belongs to no conversation (no
thread key in its metadata); a turn carries a session. The test models are deliberately
extreme (one weight, one offset), so which model scored an entry shows in its relevance.
"""

from __future__ import annotations

from memvault import AsyncMemory
from memvault.protocols import Embedder
from memvault.retrieval.evidence import EvidenceModel
from memvault.retrieval.presets import (
    DEFAULT_EVIDENCE,
    DEFAULT_SOLO,
    MINILM_L3_EVIDENCE,
    RetrievalConfig,
    for_embedder,
    get_preset,
)

QUESTION = "what is my dog called?"
FACT = "Has a dog named Biscuit"
TURN = "My dog is called Biscuit, he is a beagle"


def _config(solo: EvidenceModel | None) -> RetrievalConfig:
    default = get_preset("default")
    assert default.evidence is not None
    return default.model_copy(
        update={"evidence": default.evidence.model_copy(update={"solo": solo})}
    )


async def _hits(embedder: Embedder, solo: EvidenceModel | None) -> dict[str, float]:
    mem = AsyncMemory(embedder=embedder)
    try:
        await mem.add(FACT, agent_id="u", category="semantic")
        await mem.add(TURN, agent_id="u", category="episodic", metadata={"session": "s1"})
        hits = await mem.search(QUESTION, agent_id="u", preset=_config(solo), explain=True)
        out = {}
        for hit in hits:
            assert hit.relevance_score is not None
            out[hit.content] = hit.relevance_score
        return out
    finally:
        await mem.close()


async def test_the_solo_model_scores_facts_and_only_facts(minilm: Embedder) -> None:
    sure = EvidenceModel(weights={"cos": 1.0}, offset=40.0)
    never = EvidenceModel(weights={"cos": 1.0}, offset=-40.0)
    turn_model = await _hits(minilm, None)
    high = await _hits(minilm, sure)
    low = await _hits(minilm, never)
    # The turn is scored by the turn model whatever the solo model says ...
    assert high[TURN] == low[TURN] == turn_model[TURN]
    # ... and the fact by the solo model.
    assert high[FACT] > 0.99
    assert low[FACT] < 1e-6
    assert next(iter(high)) == FACT
    assert next(iter(low)) == TURN


async def test_explain_splits_a_fact_under_the_solo_model(minilm: Embedder) -> None:
    mem = AsyncMemory(embedder=minilm)
    try:
        await mem.add(FACT, agent_id="u", category="semantic")
        solo = EvidenceModel(weights={"cos": 2.0})
        (hit,) = await mem.search(QUESTION, agent_id="u", preset=_config(solo), explain=True)
        assert hit.score is not None and hit.score.evidence is not None
        # Only the solo model's one feature contributes, twice the raw cosine.
        assert set(hit.score.evidence) == {"cos"}
        assert hit.score.dense is not None
        assert abs(hit.score.evidence["cos"] - 2.0 * hit.score.dense) < 1e-3
    finally:
        await mem.close()


async def test_a_fact_with_a_session_is_part_of_a_conversation(minilm: Embedder) -> None:
    # A fact that names its session (LoCoMo's observation facts do) ranks as a turn does.
    mem = AsyncMemory(embedder=minilm)
    try:
        await mem.add(FACT, agent_id="u", category="semantic", metadata={"session": "s1"})
        never = EvidenceModel(weights={"cos": 1.0}, offset=-40.0)
        (hit,) = await mem.search(QUESTION, agent_id="u", preset=_config(never))
        assert hit.relevance_score is not None and hit.relevance_score > 1e-6
    finally:
        await mem.close()


def test_the_default_ships_a_solo_model_fitted_for_its_embedder() -> None:
    assert DEFAULT_EVIDENCE.solo == DEFAULT_SOLO
    # Another embedder's refit has no solo model: L6's coefficients would misread its cosines.
    config = for_embedder(get_preset("default"), "sentence-transformers/paraphrase-MiniLM-L3-v2")
    assert config.evidence is not None
    assert config.evidence.solo is MINILM_L3_EVIDENCE.solo is None


async def test_a_lesson_outside_any_conversation_keeps_the_turn_model(minilm: Embedder) -> None:
    # The solo model was fitted on stored facts; a procedural lesson is no fact.
    mem = AsyncMemory(embedder=minilm)
    try:
        await mem.add(
            "Retry pushes with backoff when the registry answers 429",
            agent_id="u",
            category="procedural",
        )
        never = EvidenceModel(weights={"cos": 1.0}, offset=-40.0)
        (hit,) = await mem.search("how do I push images?", agent_id="u", preset=_config(never))
        assert hit.relevance_score is not None and hit.relevance_score > 1e-6
    finally:
        await mem.close()
