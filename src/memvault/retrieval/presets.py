"""Retrieval configuration and named presets.

A preset is a frozen :class:`RetrievalConfig`. ``default`` ranks with the calibrated evidence
model (:mod:`memvault.retrieval.evidence`), so its ``relevance_score`` is an absolute probability
and ``min_relevance`` means the same in every query; ``fast`` is its cheaper variant. ``legacy``,
``hybrid``, ``bm25`` and ``dense`` are reference points whose scores are rescaled per query.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memvault.retrieval.evidence import EvidenceModel
from memvault.retrieval.signals import FiveSignalWeights

__all__ = [
    "DEFAULT",
    "DEFAULT_EVIDENCE",
    "EMBEDDER_EVIDENCE",
    "LEGACY",
    "MINILM_L3_EVIDENCE",
    "PRESETS",
    "RetrievalConfig",
    "for_embedder",
    "get_preset",
]


class RetrievalConfig(BaseModel):
    """Every knob of the retrieval pipeline (see DESIGN section 5)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = "custom"
    use_dense: bool = True
    use_lexical: bool = True
    # "evidence": a calibrated model over absolute evidence features (see retrieval.evidence);
    # "rrf" / "linear": rank or min-max fusion of the two lists (relevance is then relative).
    fusion: Literal["rrf", "linear", "evidence"] = "rrf"
    evidence: EvidenceModel | None = None
    rrf_k: int = Field(default=60, ge=0)
    dense_weight: float = Field(default=1.0, ge=0.0)
    lexical_weight: float = Field(default=1.0, ge=0.0)
    candidate_pool_multiplier: int = Field(default=5, ge=1, le=100)
    min_candidates: int = Field(default=50, ge=1)
    relevance_weight: float = Field(default=1.0, ge=0.0)
    recency_weight: float = Field(default=0.0, ge=0.0)
    decay_rate: float = Field(default=0.001, ge=0.0)
    personal_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    mmr_enabled: bool = False
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    mmr_similarity: Literal["bigram", "cosine"] = "bigram"
    # Conversation context: an entry inherits part of the lexical score of the entries stored
    # just before and after it in the same thread (a question's answer usually follows it).
    # Weights by distance, nearest first: an entry gets prev[0] times the score of the entry
    # just before it, prev[1] times the one before that, and likewise after it.
    neighbour_prev_weights: tuple[float, ...] = ()
    neighbour_next_weights: tuple[float, ...] = ()
    neighbours_per_result: int = Field(default=2, ge=0, le=20)
    # Thread prior: entries of a conversation whose best entries match well are more likely
    # to hold the rest of the answer (multi-turn facts).
    thread_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    thread_top_k: int = Field(default=3, ge=1, le=20)
    # Temporal cues: "when ..." questions prefer entries that say when; a named period ("in May
    # 2023", "last week") prefers entries created in it.
    temporal_intent_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    time_range_boost: float = Field(default=0.0, ge=0.0, le=1.0)
    # Pseudo-relevance feedback: a second lexical pass with words of the top first-pass hits.
    feedback_weight: float = Field(default=0.0, ge=0.0, le=1.0)
    feedback_docs: int = Field(default=3, ge=1, le=20)
    feedback_terms: int = Field(default=20, ge=1, le=100)
    # Graph memory (memvault.graph; used only where ``graph.enabled``): the weight of graph
    # activation merged into relevance, and the five-signal re-ranking (retrieval.signals).
    graph_weight: float = Field(default=0.0, ge=0.0, le=1.0)
    signals: FiveSignalWeights | None = None

    def pool_size(self, limit: int) -> int:
        """How many candidates each source contributes for a search of ``limit`` results."""
        return max(limit * self.candidate_pool_multiplier, self.min_candidates)

    @field_validator("neighbour_prev_weights", "neighbour_next_weights")
    @classmethod
    def _weights(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if len(value) > 5 or any(not 0.0 <= w <= 2.0 for w in value):
            msg = "neighbour weights: at most 5 values, each in [0, 2]"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _evidence_model(self) -> RetrievalConfig:
        if self.fusion == "evidence" and self.evidence is None:
            msg = "fusion 'evidence' needs an evidence model"
            raise ValueError(msg)
        return self

    @property
    def uses_evidence(self) -> bool:
        """True if relevance comes from the calibrated evidence model."""
        return self.fusion == "evidence" and self.evidence is not None

    @property
    def uses_neighbours(self) -> bool:
        """True if the config looks at thread neighbours (spreads scores or reads context)."""
        if self.uses_evidence:
            assert self.evidence is not None
            return self.evidence.context_hops > 0
        return self.use_lexical and any(self.neighbour_prev_weights + self.neighbour_next_weights)

    @property
    def neighbour_hops(self) -> int:
        """How far from a candidate its neighbours are fetched."""
        if self.uses_evidence:
            assert self.evidence is not None
            return self.evidence.context_hops
        return max(len(self.neighbour_prev_weights), len(self.neighbour_next_weights))

    def neighbour_window(self, limit: int) -> int:
        """How many top lexical candidates get their neighbours fetched (0: none)."""
        if not self.uses_neighbours:
            return 0
        return max(limit * self.neighbours_per_result, 20)


# The evidence model of the default preset: weights fitted by `benchmarks/ranking_fit.py` on the
# two development sets together (LoCoMo and the LongMemEval_S dev questions, listwise loss,
# LongMemEval a quarter of it) and checked on held-out questions; calibration fitted on every
# candidate of on- and off-topic questions with both classes weighed equally, so relevance is
# a likelihood ratio free of the store's size. See the docstring of retrieval.evidence.
DEFAULT_EVIDENCE = EvidenceModel(
    weights={
        "cos": 0.201,
        "lex": 0.371,
        "coverage": 3.237,
        "ctx_prev": -0.313,
        "ctx_next": 0.793,
        "question": -0.459,
        "answers": 2.236,
        "thread": 5.326,
        "when": 2.347,
        "period": 1.913,
        "length": 1.601,
    },
    scale=0.7565,
    offset=-5.7674,
    context_hops=2,
    thread_top_k=3,
    thread_spread=1.0,
)

# The same model refitted, with the same protocol and data, on the cosines of
# paraphrase-MiniLM-L3-v2 (`create_embedder("minilm-l3")`). Cosine scales differ between models
# (L3's weigh 11x more here, BM25's share moves to term coverage), so a store indexed with L3
# ranks with these coefficients: see :func:`for_embedder`. Full pipeline on the development sets
# (benchmarks/results/ranking.md): LoCoMo R@10 0.753 and LongMemEval turn R@10 0.834 against
# 0.746 and 0.817 for L3 with the coefficients above.
MINILM_L3_EVIDENCE = DEFAULT_EVIDENCE.model_copy(
    update={
        "weights": {
            "cos": 2.193,
            "lex": -0.462,
            "coverage": 2.421,
            "ctx_prev": -0.373,
            "ctx_next": 0.698,
            "question": -0.638,
            "answers": 2.482,
            "thread": 5.214,
            "when": 2.275,
            "period": 1.991,
            "length": 1.889,
        },
        "scale": 0.7411,
        "offset": -6.3457,
    }
)

EMBEDDER_EVIDENCE: dict[str, EvidenceModel] = {
    "sentence-transformers/paraphrase-MiniLM-L3-v2": MINILM_L3_EVIDENCE,
}
"""Evidence models fitted for an embedder other than the default, by the embedder's model id.
Only the fitted part (weights and calibration) replaces the default's; a preset's structural
settings (``context_hops``, ``thread_top_k``, ``thread_spread``) stay its own."""

# Every value is a general setting: no rule refers to a benchmark's data. See `memvault bench`.
DEFAULT = RetrievalConfig(
    name="default",
    fusion="evidence",
    evidence=DEFAULT_EVIDENCE,
    candidate_pool_multiplier=8,
    neighbours_per_result=2,
)

# The default of memvault <= 0.x (min-max linear fusion, lexical context spreading, thread prior
# and temporal boosts, all tuned on LoCoMo); kept as a reference point. Its relevance is
# rescaled per query (the best hit is 1.0).
LEGACY = RetrievalConfig(
    name="legacy",
    fusion="linear",
    dense_weight=0.4,
    lexical_weight=0.6,
    candidate_pool_multiplier=8,
    neighbour_prev_weights=(0.5, 0.3),
    neighbour_next_weights=(0.3, 0.2),
    neighbours_per_result=2,
    thread_boost=0.3,
    thread_top_k=3,
    temporal_intent_boost=0.25,
    time_range_boost=0.1,
)

PRESETS: dict[str, RetrievalConfig] = {
    "default": DEFAULT,
    # Cheaper variant: smaller pools and one hop of context; for latency-critical paths.
    "fast": DEFAULT.model_copy(
        update={
            "name": "fast",
            "candidate_pool_multiplier": 3,
            "min_candidates": 30,
            "neighbours_per_result": 1,
            "evidence": DEFAULT_EVIDENCE.model_copy(update={"context_hops": 1}),
        }
    ),
    "legacy": LEGACY,
    # Graph-expanded search and five-signal retrieval (need ``graph.enabled``; without a graph
    # they rank as ``default``). See memvault.retrieval.signals.
    "graph": DEFAULT.model_copy(update={"name": "graph", "graph_weight": 0.15}),
    "five_signal": DEFAULT.model_copy(
        update={"name": "five_signal", "signals": FiveSignalWeights()}
    ),
    # Reference points: plain RRF hybrid and the single-source retrievers (relative scores).
    "hybrid": RetrievalConfig(name="hybrid"),
    "bm25": RetrievalConfig(name="bm25", use_dense=False, fusion="linear"),
    "dense": RetrievalConfig(name="dense", use_lexical=False, fusion="linear"),
}


_FOR_EMBEDDER: dict[tuple[int, str], tuple[RetrievalConfig, RetrievalConfig]] = {}


def for_embedder(config: RetrievalConfig, model_id: str) -> RetrievalConfig:
    """``config`` with the evidence coefficients fitted for the embedder ``model_id``.

    Raw cosines mean different things under different models, so the default evidence model's
    coefficients hold only for the model they were fitted on. When ``config`` ranks with the
    default coefficients (any preset built on :data:`DEFAULT_EVIDENCE`) and
    :data:`EMBEDDER_EVIDENCE` has coefficients for ``model_id``, those replace them; otherwise
    (another model, a custom evidence model, a non-evidence preset) ``config`` is returned as is.
    Pure; the result is memoised per (config, model) since this runs on every search.
    """
    fitted = EMBEDDER_EVIDENCE.get(model_id)
    model = config.evidence
    if fitted is None or model is None or not config.uses_evidence:
        return config
    key = (id(config), model_id)
    hit = _FOR_EMBEDDER.get(key)
    if hit is not None and hit[0] is config:
        return hit[1]
    default = DEFAULT_EVIDENCE
    out = config
    if (model.weights, model.scale, model.offset) == (
        default.weights,
        default.scale,
        default.offset,
    ):
        swapped = model.model_copy(
            update={"weights": fitted.weights, "scale": fitted.scale, "offset": fitted.offset}
        )
        out = config.model_copy(update={"evidence": swapped})
    if len(_FOR_EMBEDDER) >= 256:  # custom configs built per request must not grow this
        _FOR_EMBEDDER.clear()
    _FOR_EMBEDDER[key] = (config, out)
    return out


def get_preset(name: str) -> RetrievalConfig:
    """The preset called ``name``.

    Raises:
        KeyError: no such preset (the message lists the known ones).
    """
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        msg = f"unknown retrieval preset {name!r} (known: {known})"
        raise KeyError(msg) from None
