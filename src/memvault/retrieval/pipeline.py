"""The ranking pipeline: pure functions from a :class:`CandidateSet` to ranked entries.

Stages (DESIGN section 5): spread lexical scores to thread neighbours (context expansion) ->
fuse dense and lexical candidates (RRF, or linear over min-max normalised scores) -> linear
ranking with recency and personal boost -> ``min_relevance`` -> filter strategy (fails closed)
-> optional MMR -> top ``limit``. Every result carries its :class:`ScoreBreakdown` so
``--explain`` can show it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memvault.models import CandidateSet, MemoryEntry, ScoreBreakdown
from memvault.retrieval.diversity import mmr
from memvault.retrieval.evidence import (
    FEATURES,
    EvidenceModel,
    evidence_features,
    share_rows,
    sigmoid,
)
from memvault.retrieval.filters import MemoryFilterStrategy, apply_filter
from memvault.retrieval.fusion import min_max, rrf
from memvault.retrieval.intent import asks_for_many
from memvault.retrieval.presets import RetrievalConfig
from memvault.retrieval.temporal import asks_when, mentions_time, query_time_range
from memvault.retrieval.threads import thread_id

__all__ = [
    "adjust",
    "evidence_relevance",
    "fuse",
    "rank",
    "recency",
    "spread_threads",
    "spread_to_neighbours",
]


def recency(created_at: datetime, now: datetime, decay_rate: float) -> float:
    """``exp(-decay_rate * age_hours)``; future timestamps count as age 0."""
    age_hours = max((now - created_at).total_seconds() / 3600.0, 0.0)
    return math.exp(-decay_rate * age_hours)


def spread_to_neighbours(
    scores: dict[str, float],
    neighbours: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
    *,
    prev_weights: tuple[float, ...],
    next_weights: tuple[float, ...],
) -> dict[str, float]:
    """Add to each entry part of the scores of the entries near it in its thread.

    An entry gets ``prev_weights[d-1]`` times the score of the entry ``d`` places before it and
    ``next_weights[d-1]`` times the score of the one ``d`` places after it. Neighbours without
    a score of their own join the result with what they inherit.
    """
    out = dict(scores)
    for entry_id, score in scores.items():
        before, after = neighbours.get(entry_id, ((), ()))
        # This entry lies d places *before* each entry in `after`, so those inherit through
        # their prev weights, and vice versa.
        for distance, other in enumerate(after, start=1):
            if distance <= len(prev_weights):
                out[other] = out.get(other, 0.0) + prev_weights[distance - 1] * score
        for distance, other in enumerate(before, start=1):
            if distance <= len(next_weights):
                out[other] = out.get(other, 0.0) + next_weights[distance - 1] * score
    return out


def fuse(cands: CandidateSet, config: RetrievalConfig) -> dict[str, float]:
    """Relevance in [0, 1] of every candidate, from the sources the config enables."""
    dense = dict(cands.dense) if config.use_dense else {}
    lexical = dict(cands.lexical) if config.use_lexical else {}
    if lexical and config.uses_neighbours:
        lexical = spread_to_neighbours(
            lexical,
            cands.neighbours,
            prev_weights=config.neighbour_prev_weights,
            next_weights=config.neighbour_next_weights,
        )
    if dense and lexical and config.fusion == "rrf":
        raw = rrf(
            [_by_score(dense), _by_score(lexical)],
            k=config.rrf_k,
            weights=[config.dense_weight, config.lexical_weight],
        )
        return min_max(raw)
    if dense and lexical:
        # Linear fusion of min-max normalised scores: unlike RRF it keeps how much better the
        # top hit of a list is than the rest, which matters when one list is much sharper.
        d = min_max(dense)
        s = min_max(lexical)
        total = config.dense_weight + config.lexical_weight or 1.0
        return {
            i: (config.dense_weight * d.get(i, 0.0) + config.lexical_weight * s.get(i, 0.0)) / total
            for i in d.keys() | s.keys()
        }
    return min_max(dense or lexical)


def adjust(
    relevance: dict[str, float],
    cands: CandidateSet,
    config: RetrievalConfig,
    *,
    query_text: str,
    now: datetime,
) -> dict[str, float]:
    """Apply the thread prior and temporal cues to fused relevance; result in [0, 1]."""
    if not relevance:
        return relevance
    out = dict(relevance)
    changed = False
    if config.temporal_intent_boost > 0 and query_text and asks_when(query_text):
        for entry_id in out:
            entry = cands.entries.get(entry_id)
            if entry is not None and mentions_time(entry.content):
                out[entry_id] += config.temporal_intent_boost
                changed = True
    period = query_time_range(query_text, now) if config.time_range_boost > 0 else None
    if period is not None:
        for entry_id in out:
            entry = cands.entries.get(entry_id)
            if entry is not None and period.contains(entry.created_at):
                out[entry_id] += config.time_range_boost
                changed = True
    if config.thread_boost > 0:
        groups: dict[str, list[float]] = {}
        owner: dict[str, str] = {}
        for entry_id, score in out.items():
            entry = cands.entries.get(entry_id)
            if entry is None:
                continue
            key = thread_id(entry)
            owner[entry_id] = key
            groups.setdefault(key, []).append(score)
        strength = {
            key: sum(sorted(scores, reverse=True)[: config.thread_top_k]) / config.thread_top_k
            for key, scores in groups.items()
        }
        prior = min_max(strength)
        for entry_id, key in owner.items():
            out[entry_id] += config.thread_boost * prior[key]
        changed = True
    return min_max(out) if changed else out


def evidence_relevance(
    cands: CandidateSet,
    config: RetrievalConfig,
    model: EvidenceModel,
    *,
    query_text: str,
    now: datetime,
) -> tuple[
    dict[str, float],
    dict[str, float],
    Mapping[str, dict[str, float]],
    dict[str, float],
    float | None,
    dict[str, float] | None,
]:
    """Calibrated relevance of every candidate under ``model``.

    Returns ``(relevance, score, contributions, cosine, on_topic, absolute)``: relevance in
    [0, 1] (the ranking model's calibrated probability, comparable across queries), the model's
    raw ranking score, each feature's share
    of that score (for ``explain``; features that add nothing are left out), the raw cosine of
    every candidate the dense side could score, and the probability that the store holds
    anything the query asks about (``model.topic``; relevance includes it), None when the gate
    does not apply (no gate, no dense side, or a store that cannot tell how many rows it
    compared), and each candidate's own relevance under ``model.absolute`` (independent of what
    else the store holds; None when the model has no such head).
    """
    feats = evidence_features(
        cands,
        query_text=query_text,
        now=now,
        use_dense=config.use_dense,
        use_lexical=config.use_lexical,
        context_hops=model.context_hops,
        thread_top_k=model.thread_top_k,
        mark_solo=model.solo is not None,
    )
    if not feats.ids:
        return {}, {}, {}, {}, None, None if model.absolute is None else {}
    raw = model.score(feats.matrix)
    rel = sigmoid(model.scale * raw + model.offset)
    solo = feats.solo
    if model.solo is not None and solo is not None:
        # Stored facts rank under the model fitted for them; both are calibrated, so a fact
        # and a turn of one store compare by their probabilities.
        raw[solo] = model.solo.score(feats.matrix[solo])
        rel[solo] = sigmoid(model.solo.scale * raw[solo] + model.solo.offset)
    on_topic = None
    gate = model.topic
    if gate is not None and config.use_dense and cands.query_vector is not None and cands.searched:
        on_topic = gate.probability(gate.best_match(feats.matrix), cands.searched)
        rel = rel * on_topic
    parts = _Contributions(feats.ids, feats.matrix, model, solo)
    relevance = dict(zip(feats.ids, rel.tolist(), strict=True))
    score = dict(zip(feats.ids, raw.tolist(), strict=True))
    cosine = {i: c for i, c in zip(feats.ids, feats.cosine, strict=True) if c is not None}
    absolute = None
    if model.absolute is not None:
        absolute = dict(
            zip(feats.ids, model.absolute.probability(feats.matrix).tolist(), strict=True)
        )
    return relevance, score, parts, cosine, on_topic, absolute


class _Contributions(Mapping[str, dict[str, float]]):
    """Each feature's weighted contribution per entry, computed only for entries asked about
    (the few that are returned), not for every candidate."""

    def __init__(
        self,
        ids: Sequence[str],
        matrix: NDArray[np.float64],
        model: EvidenceModel,
        solo: NDArray[np.bool_] | None = None,
    ):
        self._row = {entry_id: row for row, entry_id in enumerate(ids)}
        self._matrix = matrix
        self._form = model.quadratic()
        # Rows ranked by ``model.solo`` explain under its coefficients.
        self._solo = solo
        self._solo_form = model.solo.quadratic() if model.solo is not None else None

    def __getitem__(self, entry_id: str) -> dict[str, float]:
        return self.many([entry_id])[entry_id]

    def many(self, ids: Sequence[str]) -> dict[str, dict[str, float]]:
        """``{id: self[id]}`` for the ``ids`` it holds, in one matrix product."""
        held = [i for i in ids if i in self._row]
        if not held:
            return {}
        rows = [self._row[i] for i in held]
        share = share_rows(self._matrix[rows], *self._form)
        if self._solo is not None and self._solo_form is not None:
            own = self._solo[rows]
            if own.any():
                share[own] = share_rows(self._matrix[rows][own], *self._solo_form)
        return {
            entry_id: {
                name: round(v, 4) for name, v in zip(FEATURES, values, strict=True) if v != 0.0
            }
            for entry_id, values in zip(held, share.tolist(), strict=True)
        }

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


def spread_threads(
    ranked: Sequence[tuple[str, float]],
    thread_of: Callable[[str], str],
    *,
    penalty: float,
    k: int,
    pool: int = 60,
) -> list[str]:
    """Reorder ``ranked`` (``(id, score)``, best first) so its first ``k`` span threads.

    Greedy: each pick is the candidate of the best ``pool`` whose score, minus ``penalty``
    times the number of picks already taken from its thread, is highest (ties: the earlier).
    The rest follow in their original order.
    """
    head = list(ranked[:pool])
    # Each candidate's thread, once: the greedy loop below looks at every one of them per pick.
    threads = [thread_of(entry_id) for entry_id, _ in head]
    taken: dict[str, int] = {}
    picked: list[str] = []
    for _ in range(min(k, len(head))):
        best = max(
            range(len(head)),
            key=lambda j: (head[j][1] - penalty * taken.get(threads[j], 0), -j),
        )
        entry_id = head.pop(best)[0]
        key = threads.pop(best)
        picked.append(entry_id)
        taken[key] = taken.get(key, 0) + 1
    return picked + [i for i, _ in head] + [i for i, _ in ranked[pool:]]


def newest_versions_first(ids: Sequence[str], successor: Mapping[str, str | None]) -> list[str]:
    """``ids`` with each superseded entry moved right after its successor when both are there.

    With ``include_superseded`` an old value can match a query better than the statement that
    replaced it ("uses v1" vs "moved to v2"); the current one must still come first. Entries
    whose successor is not among ``ids`` keep their place; chains (v1 -> v2 -> v3) come out
    newest first.
    """
    present = set(ids)
    held: dict[str, list[str]] = {}
    placed: set[str] = set()
    out: list[str] = []

    def place(entry_id: str) -> None:
        stack = [entry_id]
        while stack:
            current = stack.pop()
            if current in placed:
                continue
            out.append(current)
            placed.add(current)
            stack.extend(reversed(held.pop(current, [])))

    for entry_id in ids:
        nxt = successor.get(entry_id)
        if nxt is not None and nxt in present and nxt not in placed and nxt != entry_id:
            held.setdefault(nxt, []).append(entry_id)
            continue
        place(entry_id)
    for waiting in list(held.values()):  # a cycle of supersessions: keep the score order
        for entry_id in waiting:
            if entry_id not in placed:
                place(entry_id)
    return out


def _by_score(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda i: (scores[i], i), reverse=True)


def rank(
    cands: CandidateSet,
    config: RetrievalConfig,
    *,
    now: datetime,
    limit: int,
    min_relevance: float = 0.0,
    shared_ids: Collection[str] = (),
    filter_strategy: MemoryFilterStrategy | None = None,
    query_text: str = "",
) -> list[MemoryEntry]:
    """Rank candidates and return at most ``limit`` entries with scores attached, best first.

    ``shared_ids`` are entries from shared knowledge: they do not get the personal boost.
    ``filter_strategy`` runs after ranking and before MMR, so entries it removes never act as
    MMR anchors; it fails closed (an exception yields no entries).
    """
    order: dict[str, float] = {}
    parts: Mapping[str, dict[str, float]] = {}
    on_topic: float | None = None
    absolute: dict[str, float] | None = None
    dense = dict(cands.dense)
    if config.uses_evidence:
        assert config.evidence is not None
        relevance, order, parts, cosine, on_topic, absolute = evidence_relevance(
            cands, config, config.evidence, query_text=query_text, now=now
        )
        dense.update(cosine)  # explain shows the raw cosine of every ranked entry
    else:
        relevance = adjust(fuse(cands, config), cands, config, query_text=query_text, now=now)
    threshold = max(min_relevance, config.min_relevance)
    # (ranking key, tie-break, id, relevance, recency, boost, final score). Under a model with
    # an absolute head the results are ordered by the ranking model (which may use what the
    # store says) while each one's relevance, final score and threshold are its own
    # (RelevanceHead): the same memory and query score the same in any store.
    scored: list[tuple[float, float, str, float, float, float, float]] = []
    for entry_id, ranking in relevance.items():
        entry = cands.entries.get(entry_id)
        if entry is None:
            continue
        boost = 0.0 if entry_id in shared_ids else config.personal_boost
        # Recency costs a datetime subtraction per candidate; unweighted, only results need it.
        rec = recency(entry.created_at, now, config.decay_rate) if config.recency_weight else 0.0
        rel = ranking if absolute is None else absolute.get(entry_id, 0.0)
        boosted = min(rel + boost, 1.0)
        combined = config.relevance_weight * boosted + config.recency_weight * rec
        key = (
            combined
            if absolute is None
            else config.relevance_weight * min(ranking + boost, 1.0) + config.recency_weight * rec
        )
        if combined >= threshold:
            scored.append(
                (key, order.get(entry_id, 0.0), entry_id, rel, rec, boosted - rel, combined)
            )
    # Best first (the evidence score breaks ties of saturated probabilities); then the larger
    # id, i.e. the newer entry (UUIDv7 ids sort by creation). Ids are unique, so sorting the
    # tuples themselves never looks past the id and orders as a (score, order, id) key would.
    scored.sort(reverse=True)
    if any(cands.entries[t[2]].superseded_by is not None for t in scored):
        by_id = {t[2]: t for t in scored}
        successor = {t[2]: cands.entries[t[2]].superseded_by for t in scored}
        scored = [by_id[i] for i in newest_versions_first([t[2] for t in scored], successor)]
    evidence = config.evidence if config.uses_evidence else None
    if evidence is not None and evidence.thread_spread > 0 and asks_for_many(query_text):
        # An aggregation question wants evidence from several conversations: spread the top
        # results over threads. Scores stay as they are; only the order changes (as with MMR).
        by_id = {t[2]: t for t in scored}
        order_ids = spread_threads(
            [(t[2], t[1]) for t in scored],
            lambda i: thread_id(cands.entries[i]),
            penalty=evidence.thread_spread,
            k=limit,
        )
        scored = [by_id[i] for i in order_ids]
    # Filtering and MMR choose from a window larger than the result so they have room to work.
    window = (
        limit * config.candidate_pool_multiplier
        if (filter_strategy or config.mmr_enabled)
        else limit
    )
    lexical = dict(cands.lexical)
    dense_rank = {i: r for r, (i, _) in enumerate(cands.dense, start=1)}
    lex_rank = {i: r for r, (i, _) in enumerate(cands.lexical, start=1)}
    ranked: list[MemoryEntry] = []
    head = scored[:window]
    # Contributions exist only under the evidence model (``parts`` is empty otherwise).
    explained = parts.many([t[2] for t in head]) if isinstance(parts, _Contributions) else {}
    for _, _, entry_id, rel, rec, boost, combined in head:
        breakdown = ScoreBreakdown(
            dense=dense.get(entry_id),
            dense_rank=dense_rank.get(entry_id),
            bm25=lexical.get(entry_id),
            bm25_rank=lex_rank.get(entry_id),
            fused=rel,
            recency=rec
            if config.recency_weight
            else recency(cands.entries[entry_id].created_at, now, config.decay_rate),
            boost=boost,
            final=combined,
            evidence=explained.get(entry_id),
            on_topic=on_topic,
        )
        entry = cands.entries[entry_id]
        ranked.append(entry.model_copy(update={"relevance_score": combined, "score": breakdown}))
    if filter_strategy is not None:
        ranked = apply_filter(filter_strategy, ranked, query_text=query_text)
    if config.mmr_enabled and ranked:
        vectors = {i: v for i, v in cands.vectors.items() if v is not None}
        use_cosine = config.mmr_similarity == "cosine" and all(e.id in vectors for e in ranked)
        ranked = mmr(
            ranked,
            lambda_=config.mmr_lambda,
            k=limit,
            similarity="cosine" if use_cosine else "bigram",
            vectors=vectors if use_cosine else None,
        )
    return ranked[:limit]
