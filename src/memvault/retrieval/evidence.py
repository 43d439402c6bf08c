"""Evidence scoring: one calibrated relevance probability per candidate, from absolute signals.

Why not min-max fusion: rescaling each list per query makes the best hit 1.0 whatever it is, so a
threshold means nothing, and a fixed blend of two rescaled lists cannot tell a query whose words
match from one whose meaning does. Here every candidate gets a vector of *evidence features*
whose scale is the same in every query and every store: raw cosine, saturated BM25, the share of
the query's terms the entry holds, what its conversation neighbours say (and whether it answers
a matching question just before it), how strongly its thread matches, temporal cues, its own
evidence scaled by its length, and whether it was said by the party the query is about
(:mod:`~memvault.retrieval.speakers`). A model over these features gives a ranking score ``s`` and

    relevance = sigmoid(scale * s + offset)

estimates "this memory is evidence for this query" as a likelihood ratio (the calibration is
class-balanced, so the store's size, which sets the base rate, does not enter): comparable
across queries and stores, so ``min_relevance`` works.

The score is quadratic in the features: ``s = sum_i w_i f_i + sum_{i<=j} w_ij f_i f_j``. The
pairwise terms let one piece of evidence change what another is worth: in the fitted default,
a BM25 match adds less when the cosine is already high (the two partly say the same thing), and
the evidence of a question just before an entry adds more when the entry itself is close in
meaning (an answer, not chit-chat). This is how the model adapts to the evidence of each
query. The fit is constrained so that more of an entry's own evidence (cosine, BM25, term
coverage) never lowers its score where the data lives: left free, the pairwise terms put a
memory holding the query's rare term below one without it. Fitted on half of each development
set and tested on the other half, the pairwise terms lift LoCoMo R@10 from 0.749 to 0.774 and
LongMemEval turn R@10 from 0.804 to 0.819 over the linear model (``benchmarks/ranking_fit.py``,
two-fold cross-validation).

The model adapts to each query through its evidence, not through a per-dataset blend: a query
with a sharp lexical match earns its score from BM25 and term coverage, one with none from the
cosine, and an answer that shares no words with the question inherits from the question turn
it follows. Pool-relative features (gap to the best cosine, share of the best BM25, rank
fusion, list agreement) were tried and did not help once refitted; they would also make the
score relative again. The weights were fitted on the two development sets together, checked on
held-out questions and across sets (fit on one, test on the other): ``benchmarks/ranking_fit.py``.
A query about something the store never held still finds its nearest chit-chat, and that
entry's own features can look like evidence; :class:`TopicGate` multiplies every candidate's
relevance by the probability that the query is on topic at all, judged from its best match
against the bar for a store of that size.
Raw cosines differ between embedding models, so the weights hold for the model they were fitted
on; ``presets.EMBEDDER_EVIDENCE`` holds the refits for other models, picked by the store's model
id (``presets.for_embedder``).

A last feature reads meaning a second way: the cosine of the query and the entry under a static
word-embedding table (:mod:`memvault.retrieval.static`), which sees every word of a long turn
where MiniLM stops at 256 tokens and ranks differently enough to add evidence: with it, two-fold
cross-validation lifts LongMemEval turn recall@10 by about three points and leaves LoCoMo as it
was (``benchmarks/results/ranking.md``, section 0f).

Everything here is pure: no I/O (but reading the static table's package files once per
process), no model calls.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memvault.models import CandidateSet, MemoryCategory, MemoryEntry
from memvault.retrieval.speakers import addressed, entry_speaker
from memvault.retrieval.static import STATIC_DIMENSION, static_embedder
from memvault.retrieval.temporal import (
    asks_when,
    mentions_time,
    query_time_range,
    without_relative_time,
)
from memvault.retrieval.text import analyse, query_terms
from memvault.retrieval.threads import SOLO_THREAD, thread_id

__all__ = [
    "BM25_SATURATION",
    "FEATURES",
    "LENGTH_CAP",
    "EvidenceFeatures",
    "EvidenceModel",
    "RelevanceHead",
    "TopicGate",
    "evidence_features",
    "share_rows",
    "shares",
    "sigmoid",
    "static_blob",
    "static_vectors",
]

BM25_SATURATION = 8.0
"""BM25 is mapped to ``s / (s + BM25_SATURATION)``: 0 for no match, 0.5 at a score of 8."""

LENGTH_CAP = 10
"""Entries of this many terms or more count as equally long: length helps only to tell a bare
"ok, thanks" from a statement, not a long reply from a short fact."""

_LOG_LENGTH = [math.log1p(k) for k in range(LENGTH_CAP + 1)]

FEATURES: tuple[str, ...] = (
    "cos",  # raw cosine of query and entry
    "lex",  # saturated BM25
    "coverage",  # idf-free share of the query's terms the entry contains
    "ctx_prev",  # evidence of the entries just before (answers follow questions)
    "ctx_next",  # evidence of the entries just after
    "question",  # share of the entry's sentences that are questions (asking is not telling)
    "answers",  # evidence of a question just before the entry (the entry may answer it)
    "thread",  # mean evidence of the best entries of the entry's thread
    "when",  # a temporal question ("when ...", or one naming a period) and an entry that says
    # when: "I planted them today", in a session of the period asked about, dates the event
    "period",  # the entry was created in the period the query names
    "length",  # own evidence times log(1 + terms), terms capped at LENGTH_CAP: a bare "ok" says
    # little even when it matches, while length alone never lifts an entry that does not match
    "addressed",  # 0 when the query names a speaker and this entry's is another (speakers.py)
    "static",  # cosine of query and entry under the static word-embedding view
    # (memvault.retrieval.static): a second view of meaning, which reads every word
)
_COLUMN = {name: j for j, name in enumerate(FEATURES)}
_COS = FEATURES.index("cos")
_COVERAGE = FEATURES.index("coverage")


def sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Numerically safe logistic function."""
    out: NDArray[np.float64] = 1.0 / (1.0 + np.exp(-np.clip(x, -40.0, 40.0)))
    return out


class TopicGate(BaseModel):
    """How likely a store holds anything a query asks about, from the query's best match.

    Per-entry relevance is calibrated on questions that have evidence in the store; a question
    about something the store never saw still finds its nearest chit-chat, and that entry's own
    features can look like evidence. What tells the two apart is the query's *best* match
    against what chance gives: the best cosine of a query unrelated to a store is the maximum
    of ``searched`` draws, which grows like ``sqrt(2 ln N)`` (the expected maximum of N
    normal draws). So the query is on topic with probability

        sigmoid((best - threshold(N)) / width),
        best = max over candidates of (cosine + coverage * share of the query's terms it holds),
        threshold(N) = min(ceiling, base + spread * sqrt(2 ln N)),

    and every candidate's relevance is multiplied by it (P(evidence) = P(on topic) *
    P(evidence | on topic)): the ranking within a query does not change, and an off-topic
    query's results carry low relevance, so ``min_relevance`` turns it away. The threshold
    stops rising at ``ceiling``: in stores of thousands of turns the best cosines of on-topic
    and off-topic questions overlap, and a higher bar would turn away as many of the former.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    coverage: float = Field(ge=0.0)
    base: float
    spread: float = Field(ge=0.0)
    width: float = Field(gt=0.0)
    ceiling: float = Field(le=1.0)

    def threshold(self, searched: int) -> float:
        """The best match a query needs in a store of ``searched`` rows to be even odds."""
        return min(
            self.ceiling, self.base + self.spread * math.sqrt(2.0 * math.log(max(searched, 2)))
        )

    def probability(self, best: float, searched: int) -> float:
        """Probability that a query whose best match is ``best`` among ``searched`` rows is on
        topic (see the class docstring)."""
        z = (best - self.threshold(searched)) / self.width
        return float(sigmoid(np.array([z]))[0])

    def best_match(self, matrix: NDArray[np.float64]) -> float:
        """The query's best match over a feature matrix (columns in :data:`FEATURES` order)."""
        if not len(matrix):
            return 0.0
        # Term coverage, not BM25: its idf collapses in a store of a few memories, where a
        # shared word is still evidence.
        return float(np.max(matrix[:, _COS] + self.coverage * matrix[:, _COVERAGE]))


class RelevanceHead(BaseModel):
    """The absolute relevance of one memory to one query: ``sigmoid(offset + sum terms[t] * t)``
    over terms that are features or products of two (``"cos*static"``).

    Only features that the pair itself decides enter (cosine, the static view's cosine, term
    coverage, temporal cues): no BM25 (its idf and length
    norm come from the store), no thread or context evidence, no off-topic gate (its bar rises
    with the store's size). So the same memory and question score the same whether the store
    holds that memory alone or among thousands, which is what lets ``min_relevance`` and
    ``context()`` keep each memory on its own score. The ranking model still orders the
    results: it may use what the store says (a word common in the store tells less), and its
    order is what the turn-level figures measure. Fitted by ``benchmarks/relevance_fit.py``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    terms: dict[str, float]
    offset: float = 0.0

    @field_validator("terms")
    @classmethod
    def _known_terms(cls, value: dict[str, float]) -> dict[str, float]:
        for key in value:
            names = key.split("*")
            if len(names) > 2 or any(name not in FEATURES for name in names):
                msg = f"relevance term {key!r} must name one or two evidence features as 'a*b'"
                raise ValueError(msg)
            if {"lex", "thread", "ctx_prev", "ctx_next", "answers", "length"} & set(names):
                msg = f"relevance term {key!r} reads store-relative evidence"
                raise ValueError(msg)
        return value

    def probability(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        """Relevance of each row of a feature matrix (columns in :data:`FEATURES` order)."""
        logit = np.full(len(matrix), self.offset)
        for key, weight in self.terms.items():
            a, _, b = key.partition("*")
            column = matrix[:, _COLUMN[a]]
            logit = logit + weight * (column * matrix[:, _COLUMN[b]] if b else column)
        return sigmoid(logit)


class EvidenceModel(BaseModel):
    """An evidence model: ranking score ``s = sum_i weights[f_i] * f_i + sum interactions[
    "a*b"] * f_a * f_b`` over :data:`FEATURES`, and relevance ``sigmoid(scale * s + offset)``
    (Platt calibration).

    Features a model does not name weigh 0; pairs it does not name interact with weight 0
    (an empty ``interactions`` is a linear model). ``context_hops`` is how far along a thread the
    context features look; ``thread_top_k`` how many of a thread's best entries make its
    strength; ``thread_spread`` how strongly aggregation questions spread their results over
    threads (see :func:`memvault.retrieval.pipeline.spread_threads`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    weights: dict[str, float]
    interactions: dict[str, float] = Field(default_factory=dict)
    scale: float = Field(default=1.0, gt=0.0)
    offset: float = 0.0
    context_hops: int = Field(default=2, ge=0, le=5)
    thread_top_k: int = Field(default=3, ge=1, le=20)
    # Aggregation questions ("how many ...", "in total"): each result already taken from a
    # thread lowers the score of that thread's next candidate by this much, so the top results
    # gather evidence from several conversations. 0 turns it off.
    thread_spread: float = Field(default=0.0, ge=0.0, le=20.0)
    # The off-topic gate fitted with this model's cosines; None: relevance is not adjusted.
    topic: TopicGate | None = None
    # Each result's own relevance, independent of the store (see RelevanceHead); None: the
    # ranking model's calibrated probability (times the gate) is the relevance.
    absolute: RelevanceHead | None = None
    # The model (weights, interactions and calibration) for stored facts (semantic candidates
    # that belong to no conversation): a fact has no thread or context evidence, and what
    # ranks the turns of a long chat (their length, their thread) misranks a handful of short
    # facts. None: this model ranks every candidate. Its own ``solo``, ``topic`` and
    # ``absolute`` are not read.
    solo: EvidenceModel | None = None

    @field_validator("weights")
    @classmethod
    def _known(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(FEATURES))
        if unknown:
            msg = f"unknown evidence features {unknown} (known: {', '.join(FEATURES)})"
            raise ValueError(msg)
        return value

    @field_validator("interactions")
    @classmethod
    def _known_pairs(cls, value: dict[str, float]) -> dict[str, float]:
        for key in value:
            names = key.split("*")
            if len(names) != 2 or any(name not in FEATURES for name in names):
                msg = (
                    f"interaction {key!r} must name two evidence features as 'a*b' "
                    f"(known: {', '.join(FEATURES)})"
                )
                raise ValueError(msg)
        return value

    def vector(self) -> NDArray[np.float64]:
        """The weights in :data:`FEATURES` order."""
        return np.array([self.weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)

    def quadratic(self) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
        """The model as ``(w, Q)``: score(x) = x.w + x.Q.x / 2, ``Q`` symmetric (each
        interaction ``a*b`` of weight v at Q[a, b] and Q[b, a], a square at 2v on the diagonal);
        None when the model has no interactions. Cached per distinct set of coefficients."""
        return _quadratic(tuple(self.weights.items()), tuple(self.interactions.items()))

    def score(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        """Ranking score of each row of a feature matrix (columns in :data:`FEATURES` order)."""
        w, q = self.quadratic()
        out: NDArray[np.float64] = matrix @ w
        if q is not None:
            # One product with the interaction matrix instead of a column product per pair.
            out = out + 0.5 * np.einsum("ij,ij->i", matrix @ q, matrix)
        return out

    def contributions(self, row: NDArray[np.float64]) -> dict[str, float]:
        """Each feature's share of one row's score (for ``explain``): its own term plus half
        of each interaction it takes part in, so the shares add up to the score."""
        return shares(row, *self.quadratic())

    def without(self, *names: str) -> EvidenceModel:
        """This model with the named features switched off (for ablations), interactions
        that involve them included."""
        return self.model_copy(
            update={
                "weights": {k: v for k, v in self.weights.items() if k not in names},
                "interactions": {
                    k: v for k, v in self.interactions.items() if not set(k.split("*")) & set(names)
                },
            }
        )


def shares(
    row: NDArray[np.float64], w: NDArray[np.float64], q: NDArray[np.float64] | None
) -> dict[str, float]:
    """:meth:`EvidenceModel.contributions` of one feature row, given the model's
    :meth:`~EvidenceModel.quadratic` form."""
    return dict(zip(FEATURES, share_rows(row[None, :], w, q)[0].tolist(), strict=True))


def share_rows(
    rows: NDArray[np.float64], w: NDArray[np.float64], q: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    """Each feature's share of each row's score (columns in :data:`FEATURES` order), given the
    model's :meth:`~EvidenceModel.quadratic` form: its own term plus half of each interaction
    it takes part in, so a row's shares add up to its score. One product for many rows."""
    share: NDArray[np.float64] = rows * w
    if q is not None:
        share = share + 0.5 * rows * (rows @ q)
    return share


@lru_cache(maxsize=64)
def _quadratic(
    weights: tuple[tuple[str, float], ...], interactions: tuple[tuple[str, float], ...]
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    index = {name: j for j, name in enumerate(FEATURES)}
    w = np.zeros(len(FEATURES))
    for name, value in weights:
        w[index[name]] = value
    w.setflags(write=False)  # shared by every caller of the cache
    if not interactions:
        return w, None
    q = np.zeros((len(FEATURES), len(FEATURES)))
    for key, value in interactions:
        x, y = (index[name] for name in key.split("*"))
        q[x, y] += value
        q[y, x] += value
    q.setflags(write=False)
    return w, q


@dataclass(frozen=True, slots=True)
class EvidenceFeatures:
    """Feature matrix of one query's candidates: row ``i`` describes ``ids[i]``.

    ``cosine`` and ``bm25`` hold the raw values (None where the source did not score the entry)
    for ``--explain``.
    """

    ids: tuple[str, ...]
    matrix: NDArray[np.float64]
    cosine: tuple[float | None, ...]
    bm25: tuple[float | None, ...]
    # Rows of stored facts (semantic entries that belong to no conversation: no thread key),
    # which :attr:`EvidenceModel.solo` ranks; None: no such row.
    solo: NDArray[np.bool_] | None = None


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")


def _question_share(text: str) -> float:
    """Share of a text's sentences that end with a question mark."""
    if "?" not in text:
        return 0.0
    sentences = [m.group().strip() for m in _SENTENCE.finditer(text)]
    sentences = [x for x in sentences if len(x) > 1]
    if not sentences:
        return 0.0
    return sum(1 for x in sentences if x.endswith("?")) / len(sentences)


class _Terms(NamedTuple):
    """A candidate's index terms, as coverage and length read them."""

    padded: str
    """The terms, each between spaces (``" a b "``): a query term ``t`` is among them iff
    ``f" {t} "`` is a substring. A string several times smaller than a frozenset of the same
    terms, so the memo holds several times more of a big store's long turns."""
    length: int
    """How many terms (repeats counted), capped at :data:`LENGTH_CAP`."""


def _terms_of(text: str, analysed: str | None) -> _Terms:
    """The :class:`_Terms` of a candidate: from the analysed content its store handed over
    (``CandidateSet.analysed``; repeats kept, which neither coverage nor length minds), else
    from its text."""
    if analysed is None:
        terms, length = analyse(text)
        return _Terms(f" {' '.join(terms)} ", min(length, LENGTH_CAP))
    if not analysed:
        return _Terms(" ", 0)
    return _Terms(f" {analysed} ", min(analysed.count(" ") + 1, LENGTH_CAP))


class _Profile(NamedTuple):
    """What ranking reads from a candidate whatever the query: the same candidates come back
    query after query, and deriving these (a regular expression for the speaker, the text's
    terms and sentences) cost more than the rest of the features together."""

    content: tuple[int, int]
    analysed: tuple[int, int] | None
    extra: dict[str, object]
    created_at: datetime
    category: object
    """What it was derived from, checked on every use: an entry rewritten under its id gets a
    new profile. Texts are checked by length and hash (:func:`_text_key`), not kept: the
    profile must not hold a long turn alive."""
    speaker: str | None
    thread: str
    asking: float
    terms: _Terms
    when: bool | None
    """Whether the text says when (:func:`~memvault.retrieval.temporal.mentions_time`); None
    until a temporal query first asks (it reads every word of the text)."""
    static: bytes | None
    """The content's static word-embedding vector (:func:`static_vectors`) as little-endian
    float16 bytes, when ranking had to compute it (a store that keeps the vectors hands them
    over with the candidates instead); None otherwise."""


_PROFILE_LIMIT = 32_768
"""Profiles kept (about a kilobyte each for a long turn). Past it the memo starts over: a
plain dict, whose single operations are atomic, needs no lock where searches of several
threads rank at once."""
_profiles: dict[str, _Profile] = {}


def _text_key(text: str) -> tuple[int, int]:
    # A string caches its hash: for the entry cache's own objects this costs nothing.
    return len(text), hash(text)


def _profile(entry: MemoryEntry, analysed: str | None) -> _Profile:
    """The :class:`_Profile` of a candidate (``analysed`` as :func:`_terms_of` takes it)."""
    found = _profiles.get(entry.id)
    extra = entry.metadata.extra
    text = entry.content
    content = _text_key(text)
    analysed_key = None if analysed is None else _text_key(analysed)
    if (
        found is not None
        and found.content == content
        and found.analysed == analysed_key
        and found.extra == extra
        and found.created_at == entry.created_at
        and found.category is entry.category
    ):
        return found
    made = _Profile(
        content,
        analysed_key,
        dict(extra),
        entry.created_at,
        entry.category,
        entry_speaker(entry),
        thread_id(entry),
        _question_share(text),
        _terms_of(text, analysed),
        None,
        None,
    )
    if len(_profiles) >= _PROFILE_LIMIT:
        _profiles.clear()
    _profiles[entry.id] = made
    return made


_SOURCE = 5
"""The leading :class:`_Profile` fields: what a profile was derived from."""


def _remember(entry_id: str, made: _Profile) -> _Profile:
    """Keep ``made`` (a profile whose lazy fields, derived on first use, were just filled) in
    the memo, merged into the memo's copy, which may have gained other lazy fields meanwhile,
    as long as that copy was derived from the same entry. Returns ``made``."""
    current = _profiles.get(entry_id)
    if current is not None and current[:_SOURCE] == made[:_SOURCE]:
        _profiles[entry_id] = _Profile._make(
            mine if mine is not None else theirs for mine, theirs in zip(made, current, strict=True)
        )
    return made


def _says_when(entry_id: str, profile: _Profile, text: str) -> bool:
    """``profile.when``, derived from ``text`` (the entry's content) and kept on first use."""
    if profile.when is not None:
        return profile.when
    when = mentions_time.uncached(text)
    _remember(entry_id, profile._replace(when=when))
    return when


def static_vectors(texts: Sequence[str]) -> NDArray[np.float16]:
    """Static word-embedding vectors of ``texts`` as ranking keeps and stores them: the
    :mod:`memvault.retrieval.static` view, rounded to float16 (so a vector a store kept and
    one computed here are the same numbers)."""
    return static_embedder().embed(texts).astype(np.float16)


def static_blob(vector: NDArray[np.floating]) -> bytes:
    """A static vector as stores keep it and ranking gathers it: little-endian float16 bytes."""
    return np.ascontiguousarray(vector, dtype="<f2").tobytes()


_STATIC_BYTES = 2 * STATIC_DIMENSION


def _static_column(
    cands: CandidateSet,
    ids: Sequence[str],
    profiles: list[_Profile],
    query_text: str,
) -> NDArray[np.float64]:
    """Cosine of the query and each candidate under the static view (0 for an empty query).

    A candidate's vector comes from the store (``CandidateSet.static``: the little-endian
    float16 bytes it keeps, or an array), else from its profile, else it is computed here (all
    missing ones in one batch) and kept in the profile. The vectors are gathered as bytes and
    converted in one step: per candidate, a look-up."""
    n = len(ids)
    if not query_text.strip():
        return np.zeros(n)
    stored = cands.static
    blobs: list[bytes | None] = []
    todo: list[int] = []
    for k, entry_id in enumerate(ids):
        blob = stored.get(entry_id)
        if blob is not None and not isinstance(blob, bytes):
            blob = static_blob(blob)
        if blob is None or len(blob) != _STATIC_BYTES:  # none stored, or not this view's
            blob = profiles[k].static
        if blob is None:
            todo.append(k)
        blobs.append(blob)
    if todo:
        made = static_vectors([cands.entries[ids[k]].content for k in todo])
        for k, vec in zip(todo, made, strict=True):
            blobs[k] = static_blob(vec)
            profiles[k] = _remember(ids[k], profiles[k]._replace(static=blobs[k]))
    joined = b"".join(b for b in blobs if b is not None)
    matrix = np.frombuffer(joined, dtype="<f2").reshape(n, -1).astype(np.float32)
    column: NDArray[np.float64] = (matrix @ _static_query(query_text)).astype(np.float64)
    return column


@lru_cache(maxsize=256)
def _static_query(text: str) -> NDArray[np.float32]:
    """A query's static vector (as float32), kept for the searches that ask it again: ranking
    runs twice in a search with a feedback pass, and a service sees repeated questions."""
    vector: NDArray[np.float32] = static_vectors([text])[0].astype(np.float32)
    vector.setflags(write=False)
    return vector


def _cosines(cands: CandidateSet, ids: Sequence[str]) -> dict[str, float]:
    """Cosine of every candidate: from the dense list, else from its stored vector."""
    out = dict(cands.dense)
    q = cands.query_vector
    if q is None:
        return out
    qv = np.asarray(q, dtype=np.float32)
    missing = [i for i in ids if i not in out and cands.vectors.get(i) is not None]
    if missing:
        mat = np.stack([np.asarray(cands.vectors[i], dtype=np.float32) for i in missing])
        sims = mat @ qv
        out.update({i: float(s) for i, s in zip(missing, sims, strict=True)})
    return out


def _hop_rows(
    near: Mapping[str, list[str]], row: Mapping[str, int], n: int, hops: int
) -> NDArray[np.intp]:
    """``out[d - 1, k]``: the row of candidate ``k``'s ``d``-th neighbour in ``near`` (nearest
    first), or ``n`` where it has none among the candidates."""
    out = np.full((hops, n), n, dtype=np.intp)
    for entry_id, others in near.items():
        k = row.get(entry_id)
        if k is None:
            continue
        for d, other in enumerate(others[:hops]):
            j = row.get(other)
            if j is not None:
                out[d, k] = j
    return out


def _context(values: NDArray[np.float64], rows: NDArray[np.intp]) -> NDArray[np.float64]:
    """Best of ``values`` over each candidate's neighbours, divided by their distance."""
    best = np.zeros(rows.shape[1])
    for d in range(rows.shape[0]):
        np.maximum(best, values[rows[d]] / (d + 1), out=best)
    return best


def evidence_features(
    cands: CandidateSet,
    *,
    query_text: str,
    now: datetime,
    use_dense: bool = True,
    use_lexical: bool = True,
    context_hops: int = 2,
    thread_top_k: int = 3,
    mark_solo: bool = False,
) -> EvidenceFeatures:
    """Evidence features of every candidate (dense, lexical and their thread neighbours);
    ``mark_solo`` (a model with a ``solo`` part ranks them) also marks the stored facts."""
    dense_list = cands.dense if use_dense else []
    lex_list = cands.lexical if use_lexical else []
    ids: list[str] = [i for i, _ in dense_list] + [i for i, _ in lex_list]
    if use_lexical:
        # Neighbours of candidates join: an answer often lies in the turn after the question.
        for before, after in cands.neighbours.values():
            ids.extend((*before, *after))
    ids = [i for i in dict.fromkeys(ids) if i in cands.entries]
    n = len(ids)
    if n == 0:
        return EvidenceFeatures((), np.zeros((0, len(FEATURES))), (), ())

    cos = _cosines(cands, ids) if use_dense else {}
    lex = dict(lex_list)
    dense_vals = [s for _, s in dense_list]
    # An entry the dense side did not return (and whose vector the store did not hand over) is
    # at best as close as the pool's weakest member.
    floor_cos = min(dense_vals) if dense_vals else 0.0

    # The words naming a period relative to now are matched by date (``period``), not as text.
    terms = set(query_terms(without_relative_time(query_text))) if use_lexical else set()
    asks = bool(query_text) and asks_when(query_text)
    period = query_time_range(query_text, now) if query_text else None

    # Per-entry base evidence (absolute): used by context and thread features. Arrays indexed
    # like ``ids``; every column below is computed on them, not per candidate in Python.
    cos_col = (
        np.array([cos.get(i, floor_cos) for i in ids], dtype=np.float64)
        if use_dense
        else np.zeros(n)
    )
    raw_lex = np.array([lex.get(i, 0.0) for i in ids], dtype=np.float64)
    lex_col = np.zeros(n)
    np.divide(raw_lex, raw_lex + BM25_SATURATION, out=lex_col, where=raw_lex > 0)
    base = np.maximum(cos_col, 0.0) + lex_col

    # Thread neighbours, both directions, known only around the anchors (the best lexical and
    # dense candidates); an entry that is an anchor's neighbour learns its own neighbours from
    # that relation.
    prev_of: dict[str, list[str]] = {}
    next_of: dict[str, list[str]] = {}
    for anchor, (before, after) in cands.neighbours.items():
        prev_of.setdefault(anchor, list(before))
        next_of.setdefault(anchor, list(after))
        chain = [*reversed(before), anchor, *after]
        for pos, other in enumerate(chain):
            prev_of.setdefault(other, list(reversed(chain[:pos])))
            next_of.setdefault(other, chain[pos + 1 :])

    entries: Mapping[str, MemoryEntry] = cands.entries
    analysed = cands.analysed
    profiles = [_profile(entries[i], analysed.get(i)) for i in ids]
    row = {i: k for k, i in enumerate(ids)}
    asking = np.array([p.asking for p in profiles], dtype=np.float64)
    # Index n is a neighbour that is not a candidate (or no neighbour): evidence 0, which the
    # max below ignores as the scalar version's "best = 0.0" did (evidence is never negative).
    base_ext = np.append(base, 0.0)
    asking_ext = np.append(asking, 0.0)
    prev_rows = _hop_rows(prev_of, row, n, context_hops)
    next_rows = _hop_rows(next_of, row, n, context_hops)

    groups: dict[str, list[float]] = {}
    owner = [p.thread for p in profiles]
    for key, value in zip(owner, base.tolist(), strict=True):
        groups.setdefault(key, []).append(value)
    # A thread's strength is the mean of its best entries; an entry outside any conversation
    # (a stored fact) is a thread of its own, as strong as itself.
    # Most groups hold one entry (a fact is its own thread): no sort for those.
    strength = {
        key: vals[0]
        if len(vals) == 1
        else sum(top := sorted(vals, reverse=True)[:thread_top_k]) / len(top)
        for key, vals in groups.items()
    }

    padded = [f" {t} " for t in terms]
    # Filled by rows of columns and handed over transposed, as the feature order reads.
    columns = np.zeros((len(FEATURES), n))
    columns[_COLUMN["cos"]] = cos_col
    columns[_COLUMN["lex"]] = lex_col
    if terms:
        texts = [p.terms.padded for p in profiles]
        found = np.zeros(n, dtype=np.int64)
        for term in padded:
            found += np.array([term in text for text in texts], dtype=np.int64)
        columns[_COLUMN["coverage"]] = found / len(padded)
    columns[_COLUMN["ctx_prev"]] = _context(base_ext, prev_rows)
    columns[_COLUMN["ctx_next"]] = _context(base_ext, next_rows)
    columns[_COLUMN["question"]] = asking
    columns[_COLUMN["answers"]] = _context(base_ext * asking_ext, prev_rows)
    columns[_COLUMN["thread"]] = [strength[key] for key in owner]
    # A question naming a period ("two weeks ago", "in May 2023") is as temporal as a "when"
    # question: of the entries created in the period, one that says when ("today", "last
    # weekend") reports a dated event rather than chat that happened to fall in those days.
    if asks or period is not None:
        columns[_COLUMN["when"]] = [
            1.0 if _says_when(i, p, entries[i].content) else 0.0
            for i, p in zip(ids, profiles, strict=True)
        ]
    if period is not None:
        columns[_COLUMN["period"]] = [
            1.0 if period.contains(entries[i].created_at) else 0.0 for i in ids
        ]
    columns[_COLUMN["length"]] = np.array([_LOG_LENGTH[p.terms.length] for p in profiles]) * base
    columns[_COLUMN["addressed"]] = addressed(query_text, [p.speaker for p in profiles])
    if use_dense:
        columns[_COLUMN["static"]] = _static_column(cands, ids, profiles, query_text)
    matrix = columns.T
    solo = None
    if mark_solo:
        # Stored facts: semantic memories outside any conversation, what the solo model was
        # fitted on (lessons, profiles and working notes keep the turn model).
        facts = np.array(
            [
                p.category is MemoryCategory.SEMANTIC and p.thread.startswith(SOLO_THREAD)
                for p in profiles
            ],
            dtype=np.bool_,
        )
        solo = facts if facts.any() else None
    return EvidenceFeatures(
        ids=tuple(ids),
        matrix=matrix,
        cosine=tuple(cos.get(i) if use_dense else None for i in ids),
        bm25=tuple(lex.get(i) for i in ids),
        solo=solo,
    )
