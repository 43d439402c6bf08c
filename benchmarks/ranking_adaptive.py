"""Query-adaptive ranking experiments on a candidate dump (issue 12, not part of ``make test``).

    python benchmarks/ranking_features.py /tmp/cands.pkl --locomo L --longmemeval M [--embedder E]
    python benchmarks/ranking_adaptive.py /tmp/cands.pkl

Each experiment appends columns to the evidence features of :mod:`memvault.retrieval.evidence`
and refits with the protocol of ``ranking_fit.py`` (listwise, LongMemEval a quarter of the loss;
fitted on LoCoMo + LongMemEval half A, checked on the held-out half B; then fitted on both sets).
A mechanism counts only if it helps LoCoMo and LongMemEval (half B and overall) at once.

Columns tried:

* ``prf``: dense pseudo-relevance feedback (Rocchio): cosine of a candidate with the centroid
  of the first pass's top-k vectors (first pass = the shipped evidence model).
* ``prf*conf``: the same gated by the first pass's best calibrated relevance (an off-topic query
  has no confident first pass, so its feedback must not lift anything).
* ``prf*agree``: gated by the agreement of the dense and lexical lists (overlap of their top 10).
* ``cos*agree``, ``lex*agree``: the dense/lexical weights moved by agreement.
* ``thread*many``: thread strength on aggregation questions ("how many ...").
"""

from __future__ import annotations

import pickle
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ranking_fit as rf

from memvault.retrieval.evidence import FEATURES, evidence_features
from memvault.retrieval.intent import asks_for_many
from memvault.retrieval.presets import DEFAULT_EVIDENCE

NOW = datetime(2030, 1, 1, tzinfo=UTC)
EXTRA = ("prf", "prf*conf", "prf*agree", "cos*agree", "lex*agree", "thread*many")


def extra_columns(rec: dict, k: int = 3) -> np.ndarray:
    cands = rec["cands"]
    f = evidence_features(cands, query_text=rec["q"], now=NOW)
    n = len(f.ids)
    out = np.zeros((n, len(EXTRA)))
    if n == 0:
        return out
    w = DEFAULT_EVIDENCE.vector()
    s0 = f.matrix @ w
    p0 = 1 / (1 + np.exp(-(DEFAULT_EVIDENCE.scale * s0 + DEFAULT_EVIDENCE.offset)))
    conf = float(p0.max())
    dense_top = {i for i, _ in cands.dense[:10]}
    lex_top = {i for i, _ in cands.lexical[:10]}
    agree = len(dense_top & lex_top) / 10.0
    prf = np.zeros(n)
    vec = cands.vectors
    have = [j for j, i in enumerate(f.ids) if vec.get(i) is not None]
    if have and cands.query_vector is not None:
        order = sorted(have, key=lambda j: -s0[j])[:k]
        c = np.mean([np.asarray(vec[f.ids[j]], dtype=np.float64) for j in order], axis=0)
        c /= np.linalg.norm(c) or 1.0
        mat = np.stack([np.asarray(vec[f.ids[j]], dtype=np.float64) for j in have])
        sims = mat @ c
        floor = float(sims.min())
        prf[:] = floor
        prf[have] = sims
    cos = f.matrix[:, FEATURES.index("cos")]
    lex = f.matrix[:, FEATURES.index("lex")]
    thread = f.matrix[:, FEATURES.index("thread")]
    many = 1.0 if asks_for_many(rec["q"]) else 0.0
    out[:, 0] = prf
    out[:, 1] = prf * conf
    out[:, 2] = prf * agree
    out[:, 3] = cos * agree
    out[:, 4] = lex * agree
    out[:, 5] = thread * many
    return out


def main() -> None:
    with open(sys.argv[1], "rb") as fh:
        records = pickle.load(fh)
    qs = rf.build(records)
    for q, rec in zip(qs, records, strict=True):
        q["X"] = np.hstack([q["X"], extra_columns(rec)])
    base = list(range(len(FEATURES)))
    lo = [q for q in qs if q["ds"] == "locomo"]
    A = [q for q in qs if q.get("half") == "A"]
    B = [q for q in qs if q.get("half") == "B"]
    shipped = np.concatenate([DEFAULT_EVIDENCE.vector(), np.zeros(len(EXTRA))])
    print(rf.line("shipped model", rf.evaluate(qs, shipped)))
    print(rf.line("  shipped on half B", rf.evaluate(B, shipped)))
    variants = {"baseline (refit)": base}
    for j, name in enumerate(EXTRA):
        variants[f"+{name}"] = [*base, len(FEATURES) + j]
    variants["+prf*conf +prf*agree"] = [*base, len(FEATURES) + 1, len(FEATURES) + 2]
    variants["+cos*agree +lex*agree"] = [*base, len(FEATURES) + 3, len(FEATURES) + 4]
    for name, cols in variants.items():
        wa = rf.fit(lo + A, cols)
        w = rf.fit(qs, cols)
        print(rf.line(name + " all", rf.evaluate(qs, w)))
        print(rf.line("   heldout B (fit lo+A)", rf.evaluate(B, wa)))
        extra = {
            n: round(float(w[len(FEATURES) + j]), 3)
            for j, n in enumerate(EXTRA)
            if w[len(FEATURES) + j]
        }
        if extra:
            print("   extra weights", extra, flush=True)


if __name__ == "__main__":
    main()
