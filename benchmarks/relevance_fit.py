"""Fit and check the absolute relevance head (``RelevanceHead``, preset ``absolute``).

    python benchmarks/relevance_fit.py --locomo ../shared/bench/locomo10.json [--every-weight 20]

1. Candidates: each LoCoMo conversation's observation facts as semantic memories (one in-process
   store per conversation); each question of categories 1-4 searched with the default preset
   (top 50); gold = the facts whose evidence turns overlap the question's; the next
   conversation's questions are off-topic (every candidate a negative). Plus the everyday pairs
   of ``benchmarks/data/everyday_train.json`` in stores of 1, 10 and 30 facts (the test suite's
   small-store cases, ``tests/fixtures/small_store_suite.json``, stay out of the fit).
2. Fit: weighted logistic regression (ridge 1.0 on standardised columns) over ``TERMS``, on
   conversations 0-4 and the everyday stores (weight ``--every-weight``); printed as the
   ``RelevanceHead`` to paste into ``retrieval/presets.py``.
3. Check at several context bars: fact R@5/R@10 (the default's order), the AUC of the head
   between gold and other hits of the top 20, the share of questions whose context (hits at or
   above the bar, at most 20) holds a gold fact, context precision, mean injected and off-topic
   empty, conversations 0-4 and 5-9 apart; and the everyday stores (answer on top, in context,
   others injected).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

import memvault.retrieval.pipeline as pipeline
from memvault import AsyncMemory
from memvault.bench.locomo_units import load_locomo_units, relevance_auc, unit_items
from memvault.embeddings import default_embedder
from memvault.retrieval.evidence import FEATURES

EVERYDAY = Path(__file__).parent / "data" / "everyday_train.json"
TERMS = [
    "cos",
    "static",
    "coverage",
    "cos*static",
    "cos*coverage",
    "static*coverage",
    "when",
    "period",
    "cos*when",
    "cos*period",
]
COLUMN = {name: j for j, name in enumerate(FEATURES)}
_captured: list[tuple[tuple[str, ...], np.ndarray]] = []
_features = pipeline.evidence_features


def _capture(cands: Any, **kw: Any) -> Any:
    # The feature matrix of every candidate the default search ranks, as ranking sees it.
    feats = _features(cands, **kw)
    _captured.append((feats.ids, feats.matrix))
    return feats


pipeline.evidence_features = _capture  # type: ignore[assignment]


async def _search(
    mem: AsyncMemory, question: str, limit: int
) -> tuple[list[str], np.ndarray, list[str]]:
    _captured.clear()
    hits = await mem.search(question, agent_id="u", limit=limit)
    ids, matrix = _captured[-1]
    return list(ids), matrix, [h.id for h in hits]


async def locomo_rows(path: str) -> list[dict[str, Any]]:
    # The fact store and gold of `memvault bench locomo --unit facts`, from its own loader.
    data = load_locomo_units(path, "facts")
    embedder = default_embedder()
    rows: list[dict[str, Any]] = []
    for ci, (conv, units) in enumerate(zip(data.conversations, data.units, strict=True)):
        mem = AsyncMemory(embedder=embedder)
        ids = await mem.add_many(unit_items(units), agent_id="u")
        ev_of = {i: set(u.evidence) for i, u in zip(ids, units, strict=True)}
        off_topic = data.conversations[(ci + 1) % len(data.conversations)]
        for asked, on in ((conv, True), (off_topic, False)):
            for qa in asked.qas:
                if qa.category not in (1, 2, 3, 4) or not qa.evidence or not qa.question.strip():
                    continue
                gold = set(qa.evidence)
                cand, matrix, hits = await _search(mem, qa.question, 50)
                y = np.array([int(on and bool(ev_of[i] & gold)) for i in cand])
                ngold = sum(bool(ev & gold) for ev in ev_of.values()) if on else 0
                rows.append(
                    {
                        "conv": ci,
                        "on": on,
                        "ids": cand,
                        "X": matrix,
                        "y": y,
                        "hits": hits,
                        "ngold": ngold,
                        "n": len(units),
                    }
                )
        await mem.close()
        print(f"  conversation {ci}: {len(units)} facts", flush=True)
    return rows


async def everyday_rows() -> list[dict[str, Any]]:
    data = json.loads(EVERYDAY.read_text())
    pairs, pool = data["pairs"], data["pool"]
    embedder, rng, rows = default_embedder(), random.Random(7), []
    for n in (1, 10, 30):
        for k, (question, answer) in enumerate(pairs):
            others = [p[1] for j, p in enumerate(pairs) if j != k] + pool
            rng.shuffle(others)
            mem = AsyncMemory(embedder=embedder)
            ids = await mem.add_many(
                [{"content": t, "category": "semantic"} for t in [answer, *others[: n - 1]]],
                agent_id="u",
            )
            cand, matrix, hits = await _search(mem, question, 20)
            rows.append(
                {
                    "conv": -1,
                    "on": True,
                    "ids": cand,
                    "X": matrix,
                    "y": np.array([int(i == ids[0]) for i in cand]),
                    "hits": hits,
                    "ngold": 1,
                    "n": n,
                }
            )
            await mem.close()
    return rows


def design(matrix: np.ndarray) -> np.ndarray:
    cols = []
    for term in TERMS:
        a, _, b = term.partition("*")
        col = matrix[:, COLUMN[a]]
        cols.append(col * matrix[:, COLUMN[b]] if b else col)
    return np.stack(cols, 1)


def fit(
    rows: list[dict[str, Any]], weights: list[float], l2: float = 1.0
) -> tuple[np.ndarray, float]:
    x = np.concatenate([design(r["X"]) for r in rows])
    y = np.concatenate([r["y"] for r in rows])
    sw = np.concatenate([np.full(len(r["y"]), w) for r, w in zip(rows, weights, strict=True)])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    for _ in range(60):  # Newton steps
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (sw * (p - y)) + l2 * np.r_[w[:-1], 0]
        hess = (z * (sw * p * (1 - p))[:, None]).T @ z + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w[:-1] / sd, float(w[-1] - (w[:-1] * mu / sd).sum())


def report(label: str, rows: list[dict[str, Any]], w: np.ndarray, b: float, bar: float) -> None:
    r5 = r10 = held = 0.0
    pos: list[float] = []
    neg: list[float] = []
    prec: list[float] = []
    inj: list[int] = []
    off_empty = off = 0
    on = [r for r in rows if r["on"] and r["ngold"]]
    for r in on + [r for r in rows if not r["on"]]:
        s = dict(zip(r["ids"], 1 / (1 + np.exp(-(design(r["X"]) @ w + b))), strict=True))
        y = dict(zip(r["ids"], r["y"].tolist(), strict=True))
        ctx = [i for i in r["hits"] if s[i] >= bar][:20]
        if not r["on"]:
            off += 1
            off_empty += not ctx
            continue
        r5 += sum(y[i] for i in r["hits"][:5]) / r["ngold"]
        r10 += sum(y[i] for i in r["hits"][:10]) / r["ngold"]
        for i in r["hits"][:20]:
            (pos if y[i] else neg).append(float(s[i]))
        held += any(y[i] for i in ctx)
        inj.append(len(ctx))
        if ctx:
            prec.append(sum(y[i] for i in ctx) / len(ctx))
    n = max(len(on), 1)
    area = relevance_auc(pos, neg)
    print(
        f"{label:18s} bar {bar:.2f}  R@5 {r5 / n:.3f}  R@10 {r10 / n:.3f}  "
        f"AUC {float('nan') if area is None else area:.3f}  "
        f"holds gold {held / n:.3f}  precision {np.mean(prec) if prec else 0:.3f}  "
        f"injected {np.mean(inj):.2f}  off-topic empty {off_empty / max(off, 1):.3f}"
    )


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--every-weight", type=float, default=20.0)
    args = ap.parse_args()
    facts = await locomo_rows(args.locomo)
    every = await everyday_rows()
    train = [r for r in facts if r["conv"] < 5]
    w, b = fit(train + every, [1.0] * len(train) + [args.every_weight] * len(every))
    terms = ",\n".join(f'        "{t}": {v:.4f}' for t, v in zip(TERMS, w, strict=True))
    print(f"RelevanceHead(\n    terms={{\n{terms},\n    }},\n    offset={b:.4f},\n)")
    for bar in (0.02, 0.05, 0.1, 0.2, 0.3):
        report("facts 0-4", train, w, b, bar)
        report("facts 5-9", [r for r in facts if r["conv"] >= 5], w, b, bar)
        for n in (1, 10, 30):
            report(f"everyday n={n}", [r for r in every if r["n"] == n], w, b, bar)


if __name__ == "__main__":
    asyncio.run(main())
