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


# The evidence model of the default preset, fitted by `benchmarks/ranking_fit.py` on the two
# development sets together (LoCoMo and the LongMemEval_S dev questions, listwise loss,
# LongMemEval a quarter of it): the eleven evidence features and their pairwise products (ridge
# on standardised columns, written back as raw weights and interactions). Two-fold
# cross-validation (half of each set fitted, the other half scored) gives LoCoMo R@10 0.777 and
# LongMemEval turn R@10 0.814, against 0.749 and 0.804 for the linear model this replaces.
# Calibration fitted on every candidate of on- and off-topic questions with both classes weighed
# equally, so relevance is a likelihood ratio free of the store's size. The individual weights
# are not meant to be read one by one (the pairwise terms trade off against them); `explain`
# splits each interaction between its two features. See the docstring of retrieval.evidence.
DEFAULT_EVIDENCE = EvidenceModel(
    weights={
        "cos": 8.4715,
        "lex": 4.6587,
        "coverage": 3.9681,
        "ctx_prev": -1.6139,
        "ctx_next": 0.99554,
        "question": 2.1222,
        "answers": -1.1979,
        "thread": -1.4109,
        "when": -1.756,
        "period": 0.068302,
        "length": 0.78742,
    },
    interactions={
        "cos*cos": -4.6426,
        "cos*lex": -7.1875,
        "cos*coverage": -2.4678,
        "cos*ctx_prev": 3.7743,
        "cos*ctx_next": -2.344,
        "cos*question": -5.7336,
        "cos*answers": 8.7022,
        "cos*thread": -2.3776,
        "cos*when": 7.5199,
        "cos*period": -1.6473,
        "cos*length": -0.80206,
        "lex*lex": 5.1334,
        "lex*coverage": -0.40431,
        "lex*ctx_prev": -4.2036,
        "lex*ctx_next": -2.334,
        "lex*question": 4.4732,
        "lex*answers": -0.45639,
        "lex*thread": -1.4431,
        "lex*when": 2.4022,
        "lex*period": -4.3984,
        "lex*length": -0.59407,
        "coverage*coverage": -0.015134,
        "coverage*ctx_prev": 0.19894,
        "coverage*ctx_next": 0.73591,
        "coverage*question": -2.0452,
        "coverage*answers": 1.1082,
        "coverage*thread": -1.2623,
        "coverage*when": 3.1542,
        "coverage*period": 4.6792,
        "coverage*length": 0.60592,
        "ctx_prev*ctx_prev": 1.0335,
        "ctx_prev*ctx_next": -1.3318,
        "ctx_prev*question": -3.8499,
        "ctx_prev*answers": 3.2232,
        "ctx_prev*thread": 3.8432,
        "ctx_prev*when": -1.3849,
        "ctx_prev*period": -0.73358,
        "ctx_prev*length": -1.091,
        "ctx_next*ctx_next": 0.081433,
        "ctx_next*question": 1.1511,
        "ctx_next*answers": 0.32765,
        "ctx_next*thread": -0.67983,
        "ctx_next*when": 0.002844,
        "ctx_next*period": 0.23139,
        "ctx_next*length": 1.1429,
        "question*question": -3.5715,
        "question*answers": 6.0134,
        "question*thread": 2.3692,
        "question*when": -0.0063341,
        "question*period": -2.0098,
        "question*length": -0.36754,
        "answers*answers": -2.1658,
        "answers*thread": -2.0771,
        "answers*when": -1.6397,
        "answers*period": 1.3536,
        "answers*length": -0.43536,
        "thread*thread": 5.1375,
        "thread*when": 1.9111,
        "thread*period": -0.72151,
        "thread*length": -0.33053,
        "when*when": 2.3806,
        "when*period": 0.5633,
        "when*length": -2.7313,
        "period*period": 2.9372,
        "period*length": 0.48557,
        "length*length": 0.58995,
    },
    scale=0.6858,
    offset=-5.0216,
    context_hops=2,
    thread_top_k=3,
    thread_spread=1.0,
)

# The same model refitted, with the same protocol and data, on the cosines of
# paraphrase-MiniLM-L3-v2 (`create_embedder("minilm-l3")`). Cosine scales differ between models,
# so a store indexed with L3 ranks with these coefficients: see :func:`for_embedder`. Two-fold
# cross-validation: LoCoMo R@10 0.767, LongMemEval turn R@10 0.840 (linear on L3: 0.752, 0.812).
MINILM_L3_EVIDENCE = DEFAULT_EVIDENCE.model_copy(
    update={
        "weights": {
            "cos": 9.7498,
            "lex": 1.4961,
            "coverage": 2.987,
            "ctx_prev": -0.78051,
            "ctx_next": 0.58199,
            "question": 3.4826,
            "answers": -2.3301,
            "thread": -2.7709,
            "when": -1.5808,
            "period": 0.27145,
            "length": 0.88317,
        },
        "interactions": {
            "cos*cos": -10.888,
            "cos*lex": 1.0238,
            "cos*coverage": 0.46155,
            "cos*ctx_prev": 3.0556,
            "cos*ctx_next": -0.34494,
            "cos*question": -4.5331,
            "cos*answers": 8.296,
            "cos*thread": 0.45702,
            "cos*when": 5.999,
            "cos*period": -4.4822,
            "cos*length": -0.88225,
            "lex*lex": 1.8836,
            "lex*coverage": -2.3462,
            "lex*ctx_prev": -3.1581,
            "lex*ctx_next": -2.0038,
            "lex*question": 5.0039,
            "lex*answers": 0.93994,
            "lex*thread": -2.4301,
            "lex*when": 2.4441,
            "lex*period": -3.6811,
            "lex*length": 0.44915,
            "coverage*coverage": -0.98613,
            "coverage*ctx_prev": -0.99141,
            "coverage*ctx_next": 0.86402,
            "coverage*question": -0.81277,
            "coverage*answers": 1.8932,
            "coverage*thread": -0.75792,
            "coverage*when": 2.6841,
            "coverage*period": 4.9876,
            "coverage*length": 0.97933,
            "ctx_prev*ctx_prev": 1.0962,
            "ctx_prev*ctx_next": -1.6981,
            "ctx_prev*question": -3.5718,
            "ctx_prev*answers": 2.549,
            "ctx_prev*thread": 2.8168,
            "ctx_prev*when": -1.4421,
            "ctx_prev*period": -0.74639,
            "ctx_prev*length": -0.86902,
            "ctx_next*ctx_next": -0.063666,
            "ctx_next*question": 1.2437,
            "ctx_next*answers": -0.04488,
            "ctx_next*thread": -0.19956,
            "ctx_next*when": 0.31571,
            "ctx_next*period": 0.27521,
            "ctx_next*length": 0.72461,
            "question*question": -5.2368,
            "question*answers": 6.2664,
            "question*thread": 0.31615,
            "question*when": 0.24557,
            "question*period": -1.6998,
            "question*length": -0.61957,
            "answers*answers": -2.7265,
            "answers*thread": 1.7779,
            "answers*when": -1.3366,
            "answers*period": 1.1927,
            "answers*length": -1.3486,
            "thread*thread": 5.709,
            "thread*when": 1.9534,
            "thread*period": 0.66914,
            "thread*length": -0.94164,
            "when*when": 2.2819,
            "when*period": 0.78811,
            "when*length": -2.4276,
            "period*period": 2.7738,
            "period*length": 0.33573,
            "length*length": 0.59029,
        },
        "scale": 0.7112,
        "offset": -4.7423,
    }
)

EMBEDDER_EVIDENCE: dict[str, EvidenceModel] = {
    "sentence-transformers/paraphrase-MiniLM-L3-v2": MINILM_L3_EVIDENCE,
}
"""Evidence models fitted for an embedder other than the default, by the embedder's model id.
Only the fitted part (weights, interactions and calibration) replaces the default's; a preset's
structural settings (``context_hops``, ``thread_top_k``, ``thread_spread``) stay its own."""

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
    if (model.weights, model.interactions, model.scale, model.offset) == (
        default.weights,
        default.interactions,
        default.scale,
        default.offset,
    ):
        swapped = model.model_copy(
            update={
                "weights": fitted.weights,
                "interactions": fitted.interactions,
                "scale": fitted.scale,
                "offset": fitted.offset,
            }
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
