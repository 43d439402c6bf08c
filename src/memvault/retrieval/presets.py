"""Retrieval configuration and named presets.

A preset is a frozen :class:`RetrievalConfig`. ``default`` ranks with the calibrated evidence
model (:mod:`memvault.retrieval.evidence`), so its ``relevance_score`` is an absolute probability
and ``min_relevance`` means the same in every query; ``fast`` is its cheaper variant. ``legacy``,
``hybrid``, ``bm25`` and ``dense`` are reference points whose scores are rescaled per query.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memvault.retrieval.evidence import EvidenceModel, RelevanceHead, TopicGate
from memvault.retrieval.signals import FiveSignalWeights

__all__ = [
    "DEFAULT",
    "DEFAULT_EVIDENCE",
    "DEFAULT_EVIDENCE_MODEL_ID",
    "DEFAULT_SOLO",
    "DEFAULT_TOPIC_GATE",
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
# LongMemEval a quarter of it; LongMemEval's features at its question dates): the thirteen
# evidence features and their pairwise products (ridge on standardised columns, written back as
# raw weights and interactions), constrained so that more of an entry's own evidence (cosine,
# BM25, term coverage, being by the party the query is about, static cosine) never lowers its
# score where the data lives (at the training candidates, at probe rows spanning their range,
# and at twin rows where a higher cosine or BM25 also raises what reads them: the entry's length
# feature and its own thread's strength). Two-fold cross-validation (half of each set fitted,
# the other half scored) gives LoCoMo R@10 0.793 and LongMemEval turn R@10 0.903, session
# any@5 0.989 and all@5 0.862 (0.791, 0.871, 0.968 and 0.851 without the static feature,
# `static`; 0.775 and 0.817 without the speaker feature, `addressed`). Fitted on one set alone,
# it scores 0.851 on LongMemEval and 0.707 on LoCoMo.
# Calibration fitted on every candidate of on- and off-topic questions with both classes weighed
# equally, so relevance is a likelihood ratio free of the store's size. The individual weights
# are not meant to be read one by one (the pairwise terms trade off against them); `explain`
# splits each interaction between its two features. See the docstring of retrieval.evidence.
DEFAULT_EVIDENCE_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
"""The embedder :data:`DEFAULT_EVIDENCE` was fitted on (memvault's default model)."""

# The off-topic gate of the default model (see TopicGate), fitted on the off-topic questions of
# `benchmarks/ranking_lab.py --offtopic` (a question of another LoCoMo conversation or another
# LongMemEval haystack, 214) against the gold hits of the on-topic ones, under the default
# `context()` threshold (CONTEXT_MIN_RELEVANCE): 92.1% of the off-topic questions inject
# nothing and 97.2% of the gold hits are kept (evidence model of 2026-11-26, evening). Those
# stores hold 480-660 rows; how the threshold moves with the store's size (`spread`) was set
# where the best cosines of off-topic questions in subsampled conversations put it (about 0.30
# at 12 rows, 0.45 at 600) and so that small stores keep their on-topic questions (the twelve
# facts of `examples/demo.py`, the one lesson of docs/concepts/learning.md) and turn away
# off-topic ones. The ceiling is the bar at about a thousand rows. See
# benchmarks/results/ranking.md.
DEFAULT_TOPIC_GATE = TopicGate(coverage=0.15, base=-0.04, spread=0.16, width=0.01, ceiling=0.55)

ABSOLUTE_RELEVANCE = RelevanceHead(
    terms={
        "cos": 11.9624,
        "static": -0.4089,
        "coverage": 2.2741,
        "cos*static": -9.6301,
        "cos*coverage": -6.1969,
        "static*coverage": 12.0634,
        "when": -3.9652,
        "period": -0.7857,
        "cos*when": 5.644,
        "cos*period": 2.6299,
    },
    offset=-8.6104,
)
"""Absolute relevance of the ``absolute`` preset (``benchmarks/relevance_fit.py``): logistic
over the pair's own evidence, fitted on the candidates of LoCoMo's observation facts
(conversations 0-4, with the next conversation's questions as off-topic) and the everyday facts
of ``benchmarks/data/everyday_train.json`` in stores of 1, 10 and 30 (weight 20). Not the
default: it scores short everyday facts low (the answer of an everyday question reaches 0.1 in
about a quarter of the training questions), because LoCoMo's gold is narrow and its other
candidates look like answers; see ``benchmarks/results/ranking.md`` section 0h."""

# The ranking model of stored facts (memories that belong to no conversation), fitted by
# `benchmarks/solo_fit.py` with the shipped protocol (monotone in the entry's own evidence) on
# LoCoMo's observation facts of conversations 0-4, read as standing alone, and the everyday
# pairs of `benchmarks/data/everyday_train.json` in stores of 10-50 facts, half the loss each.
# Held out: LoCoMo facts 5-9 R@10 0.788 (turn model 0.776); small-store suite, answer on top at
# 5/20/50 facts 0.913/0.826/0.674 (turn model 0.891/0.783/0.630). See ranking.md section 0j.
DEFAULT_SOLO = EvidenceModel(
    weights={
        "cos": 4.5175,
        "lex": -1.4535,
        "coverage": -0.206,
        "thread": 7.0858,
        "when": 0.50435,
        "period": -0.20528,
        "length": 1.2921,
        "addressed": 1.0509,
        "static": 1.5428,
    },
    interactions={
        "cos*cos": 4.6285,
        "cos*lex": 0.95293,
        "cos*coverage": 0.18583,
        "cos*thread": 0.90865,
        "cos*when": -3.2831,
        "cos*period": 1.7821,
        "cos*length": -1.3298,
        "cos*addressed": -0.25206,
        "cos*static": -0.25427,
        "lex*lex": 3.4327,
        "lex*coverage": 0.87044,
        "lex*thread": -1.689,
        "lex*when": 0.28772,
        "lex*period": 2.2385,
        "lex*length": 0.60056,
        "lex*addressed": 2.3718,
        "lex*static": 1.4522,
        "coverage*coverage": 0.05677,
        "coverage*thread": -0.46903,
        "coverage*when": 2.1228,
        "coverage*period": 1.4477,
        "coverage*length": 0.13099,
        "coverage*addressed": 0.57727,
        "coverage*static": 0.15505,
        "thread*thread": -2.1265,
        "thread*when": -0.38908,
        "thread*period": -4.0627,
        "thread*length": -1.639,
        "thread*addressed": -0.045601,
        "thread*static": -1.5651,
        "when*when": 0.5918,
        "when*period": 0.71544,
        "when*length": -0.0084249,
        "when*addressed": -0.035043,
        "when*static": 1.3594,
        "period*period": 4.7422,
        "period*length": 0.022715,
        "period*addressed": 0.59968,
        "period*static": -0.40075,
        "length*length": 0.59859,
        "length*addressed": 0.13287,
        "length*static": 0.060777,
        "addressed*addressed": -0.27076,
        "addressed*static": 0.3331,
        "static*static": -0.11652,
    },
    scale=0.64234,
    offset=-5.187,
)
"""Ranking model of :data:`DEFAULT_EVIDENCE` for stored facts (``EvidenceModel.solo``)."""

DEFAULT_EVIDENCE = EvidenceModel(
    weights={
        "cos": 2.363,
        "lex": 0.83615,
        "coverage": 1.0521,
        "ctx_prev": -0.15203,
        "ctx_next": 1.0058,
        "question": 1.0113,
        "answers": -2.3557,
        "thread": -2.1304,
        "when": -0.44406,
        "period": -0.21533,
        "length": 0.83565,
        "addressed": 0.73947,
        "static": 1.9597,
    },
    interactions={
        "cos*cos": 0.12303,
        "cos*lex": -0.19244,
        "cos*coverage": -0.47984,
        "cos*ctx_prev": 1.3318,
        "cos*ctx_next": 0.028606,
        "cos*question": -0.28965,
        "cos*answers": 6.1132,
        "cos*thread": 0.045922,
        "cos*when": 0.57309,
        "cos*period": -0.28307,
        "cos*length": -0.3115,
        "cos*addressed": -0.69287,
        "cos*static": -0.92752,
        "lex*lex": 6.0977,
        "lex*coverage": 0.59547,
        "lex*ctx_prev": -1.0885,
        "lex*ctx_next": 0.16109,
        "lex*question": 2.1044,
        "lex*answers": -0.10108,
        "lex*thread": 0.4713,
        "lex*when": -0.069095,
        "lex*period": -0.31019,
        "lex*length": -0.091148,
        "lex*addressed": 0.33324,
        "lex*static": 0.31457,
        "coverage*coverage": 0.88436,
        "coverage*ctx_prev": -0.45548,
        "coverage*ctx_next": 0.44778,
        "coverage*question": -0.20086,
        "coverage*answers": 0.23271,
        "coverage*thread": -0.44799,
        "coverage*when": 1.0546,
        "coverage*period": -0.30863,
        "coverage*length": 0.1352,
        "coverage*addressed": 0.66498,
        "coverage*static": -0.44972,
        "ctx_prev*ctx_prev": 3.1603,
        "ctx_prev*ctx_next": -1.7639,
        "ctx_prev*question": -2.4815,
        "ctx_prev*answers": 2.5985,
        "ctx_prev*thread": -0.23674,
        "ctx_prev*when": -1.3887,
        "ctx_prev*period": -0.42729,
        "ctx_prev*length": -1.1573,
        "ctx_prev*addressed": 1.2809,
        "ctx_prev*static": 0.21205,
        "ctx_next*ctx_next": 1.0149,
        "ctx_next*question": 0.40442,
        "ctx_next*answers": 0.41752,
        "ctx_next*thread": -0.45672,
        "ctx_next*when": -0.10769,
        "ctx_next*period": -0.23554,
        "ctx_next*length": -0.10142,
        "ctx_next*addressed": -0.084014,
        "ctx_next*static": -0.3692,
        "question*question": -3.1332,
        "question*answers": 3.1936,
        "question*thread": -0.023942,
        "question*when": 0.053703,
        "question*period": -0.15299,
        "question*length": -0.11553,
        "question*addressed": -0.13687,
        "question*static": 0.096644,
        "answers*answers": -3.4409,
        "answers*thread": 2.1896,
        "answers*when": -2.2161,
        "answers*period": 1.296,
        "answers*length": -0.30834,
        "answers*addressed": -0.0057057,
        "answers*static": -0.40259,
        "thread*thread": 4.1281,
        "thread*when": -0.11544,
        "thread*period": -0.10821,
        "thread*length": -0.6917,
        "thread*addressed": 0.8171,
        "thread*static": -0.049576,
        "when*when": 2.6131,
        "when*period": -0.21002,
        "when*length": -0.60019,
        "when*addressed": 0.74754,
        "when*static": 1.1173,
        "period*period": 3.1001,
        "period*length": 0.16859,
        "period*addressed": 0.48148,
        "period*static": -0.20858,
        "length*length": 0.11235,
        "length*addressed": 0.30614,
        "length*static": 0.046469,
        "addressed*addressed": -0.34687,
        "addressed*static": -0.056832,
        "static*static": -0.44079,
    },
    scale=0.7344,
    offset=-4.2764,
    context_hops=2,
    thread_top_k=3,
    thread_spread=1.0,
    topic=DEFAULT_TOPIC_GATE,
    solo=DEFAULT_SOLO,
)

# The same model refitted, with the same protocol and data, on the cosines of
# paraphrase-MiniLM-L3-v2 (`create_embedder("minilm-l3")`). Cosine scales differ between models,
# so a store indexed with L3 ranks with these coefficients: see :func:`for_embedder`. Two-fold
# cross-validation: LoCoMo R@10 0.771, LongMemEval turn R@10 0.822 (linear on L3: 0.752, 0.812).
MINILM_L3_EVIDENCE = DEFAULT_EVIDENCE.model_copy(
    update={
        "weights": {
            "cos": 5.082,
            "lex": 1.366,
            "coverage": 3.1031,
            "ctx_prev": -0.33476,
            "ctx_next": 0.92444,
            "question": 3.1273,
            "answers": -2.4162,
            "thread": -2.6465,
            "when": -1.3082,
            "period": 0.036106,
            "length": 1.1869,
        },
        "interactions": {
            "cos*cos": -3.7455,
            "cos*lex": 0.013529,
            "cos*coverage": 0.045997,
            "cos*ctx_prev": 2.8159,
            "cos*ctx_next": 0.27782,
            "cos*question": -0.50636,
            "cos*answers": 7.7266,
            "cos*thread": 1.3333,
            "cos*when": 3.7319,
            "cos*period": -0.96434,
            "cos*length": -0.51616,
            "lex*lex": 0.31977,
            "lex*coverage": -0.83071,
            "lex*ctx_prev": -1.4292,
            "lex*ctx_next": -0.090443,
            "lex*question": 6.2473,
            "lex*answers": -0.1555,
            "lex*thread": 0.15681,
            "lex*when": 0.82483,
            "lex*period": -0.51235,
            "lex*length": 0.53603,
            "coverage*coverage": -0.65556,
            "coverage*ctx_prev": -0.91906,
            "coverage*ctx_next": 0.82805,
            "coverage*question": -1.4356,
            "coverage*answers": 1.7429,
            "coverage*thread": -0.78738,
            "coverage*when": 2.7758,
            "coverage*period": 4.9165,
            "coverage*length": 0.51783,
            "ctx_prev*ctx_prev": 1.2842,
            "ctx_prev*ctx_next": -1.5962,
            "ctx_prev*question": -3.9125,
            "ctx_prev*answers": 2.5888,
            "ctx_prev*thread": 2.7804,
            "ctx_prev*when": -1.3488,
            "ctx_prev*period": -0.88097,
            "ctx_prev*length": -1.4718,
            "ctx_next*ctx_next": 0.028827,
            "ctx_next*question": 1.1084,
            "ctx_next*answers": -0.18989,
            "ctx_next*thread": -0.37288,
            "ctx_next*when": 0.36942,
            "ctx_next*period": 0.21776,
            "ctx_next*length": 0.090037,
            "question*question": -5.9729,
            "question*answers": 6.4126,
            "question*thread": -0.41922,
            "question*when": 0.15101,
            "question*period": -1.6402,
            "question*length": -0.92461,
            "answers*answers": -2.7738,
            "answers*thread": 1.8755,
            "answers*when": -1.4427,
            "answers*period": 1.2625,
            "answers*length": -0.9226,
            "thread*thread": 5.8613,
            "thread*when": 2.0477,
            "thread*period": 0.44958,
            "thread*length": -1.8094,
            "when*when": 2.3386,
            "when*period": 0.726,
            "when*length": -1.8189,
            "period*period": 2.7258,
            "period*length": -0.8188,
            "length*length": 0.53602,
        },
        "scale": 0.7047,
        "offset": -4.3677,
        # L3's cosines run higher than L6's; no gate is fitted for them yet.
        "topic": None,
        # Nor a model for stored facts: L3 ranks them with the coefficients above.
        "solo": None,
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
    # Each result's relevance from the pair alone (RelevanceHead): the same in a store of one
    # memory or of thousands; the order is the default's.
    "absolute": DEFAULT.model_copy(
        update={
            "name": "absolute",
            "evidence": DEFAULT_EVIDENCE.model_copy(update={"absolute": ABSOLUTE_RELEVANCE}),
        }
    ),
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
_FITTED = ("weights", "interactions", "scale", "offset")
"""The parts of an evidence model a refit for another embedder replaces."""


def for_embedder(config: RetrievalConfig, model_id: str) -> RetrievalConfig:
    """``config`` with the evidence coefficients fitted for the embedder ``model_id``.

    Raw cosines mean different things under different models, so the default evidence model's
    coefficients hold only for the model they were fitted on (:data:`DEFAULT_EVIDENCE_MODEL_ID`).
    When ``config`` ranks with the default coefficients (any preset built on
    :data:`DEFAULT_EVIDENCE`) and :data:`EMBEDDER_EVIDENCE` has coefficients for ``model_id``,
    those replace them, off-topic gate included; for a model without a fit the coefficients stay
    and the off-topic gate is dropped. A custom evidence model or a non-evidence preset is
    returned as is.
    Pure; the result is memoised per (config, model) since this runs on every search.
    """
    model = config.evidence
    if model is None or not config.uses_evidence or model_id == DEFAULT_EVIDENCE_MODEL_ID:
        return config
    key = (id(config), model_id)
    hit = _FOR_EMBEDDER.get(key)
    if hit is not None and hit[0] is config:
        return hit[1]
    out = config
    if all(getattr(model, f) == getattr(DEFAULT_EVIDENCE, f) for f in _FITTED):
        fitted = EMBEDDER_EVIDENCE.get(model_id)
        # Without a fit for this model, the ranking keeps the default coefficients (roughly
        # right for any sentence embedder) but not the off-topic gate: its threshold is a
        # cosine, and what counts as a close cosine differs from model to model.
        update = (
            {"topic": None}
            if fitted is None
            else {f: getattr(fitted, f) for f in (*_FITTED, "topic", "solo")}
        )
        out = config.model_copy(update={"evidence": model.model_copy(update=update)})
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
