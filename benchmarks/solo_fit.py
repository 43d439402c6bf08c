"""Fit the ranking model of stored facts (``EvidenceModel.solo`` of the default preset).

    python benchmarks/solo_fit.py --locomo ../shared/bench/locomo10.json [--json out.json]

Why: the default evidence model was fitted on conversation turns, where an entry's length and
its thread say a lot. A memory that belongs to no conversation (a stored fact: semantic,
no thread key) has no thread or context evidence, and in a store of a few dozen short facts
that model ranked below plain cosine (small-store suite at 50 facts: answer on top for 0.630
of the questions, cosine alone 0.804), mostly by preferring longer facts.

1. Candidates, as ``relevance_fit.py`` captures them (the feature matrix of every candidate a
   default search ranks): LoCoMo's observation facts of conversations 0-4 (gold = facts whose
   evidence turns overlap the question's; the next conversation's questions off-topic), read as
   if each fact stood alone (no context evidence, its thread itself), and the everyday pairs of
   ``benchmarks/data/everyday_train.json`` in stores of 10, 30 and 50 facts.
2. Fit: the shipped protocol of ``ranking_fit.py`` (listwise softmax, quadratic on
   standardised columns, monotone in the entry's own evidence at the candidates, probe rows and
   twin rows), each source half of the loss, ridge ``--l2``; then Platt calibration on every
   candidate (class-balanced, on- and off-topic).
3. Report (top hit for the everyday stores and the small-store suite, R@10 for LoCoMo facts),
   the default model against the fitted one: conversations 5-9 and the small-store suite
   (``tests/fixtures/small_store_suite.json``) are never fitted on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import ranking_fit as rf
import relevance_fit
from small_store import distractor_order, load_suite

from memvault import AsyncMemory
from memvault.embeddings import default_embedder
from memvault.retrieval.evidence import FEATURES, EvidenceModel
from memvault.retrieval.presets import DEFAULT_EVIDENCE

COLUMN = {name: j for j, name in enumerate(FEATURES)}
SIZES = (10, 30, 50)
SHARES = {"facts": 0.5, "every": 0.5}


def alone(matrix: np.ndarray) -> np.ndarray:
    """The features of the same candidates were each a fact of its own (no conversation)."""
    out = matrix.copy()
    for name in ("ctx_prev", "ctx_next", "answers"):
        out[:, COLUMN[name]] = 0.0
    out[:, COLUMN["thread"]] = np.maximum(out[:, COLUMN["cos"]], 0.0) + out[:, COLUMN["lex"]]
    return out


_EMBEDDER = default_embedder()


async def _store_rows(question: str, answer: str, others: list[str]) -> dict[str, Any]:
    mem = AsyncMemory(embedder=_EMBEDDER)
    contents = [answer, *others]
    ids = await mem.add_many([{"content": c} for c in contents], agent_id="u", dedup=False)
    cand, matrix, _ = await relevance_fit._search(mem, question, 50)
    await mem.close()
    return {"X": matrix, "y": np.array([float(i == ids[0]) for i in cand])}


async def everyday_rows() -> list[dict[str, Any]]:
    data = json.loads(relevance_fit.EVERYDAY.read_text())
    pairs, pool = data["pairs"], data["pool"]
    rng, rows = random.Random(7), []
    for n in SIZES:
        for k, (question, answer) in enumerate(pairs):
            others = [p[1] for j, p in enumerate(pairs) if j != k] + pool
            rng.shuffle(others)
            row = await _store_rows(question, answer, others[: n - 1])
            rows.append({**row, "ds": "every", "n": n})
    return rows


async def suite_rows() -> list[dict[str, Any]]:
    suite = load_suite()
    rows = []
    for index, pair in enumerate(suite.pairs):
        distractors, rng = distractor_order(suite, index, 0)
        for n in (5, 20, 50):
            contents = distractors[: n - 1]
            contents.insert(rng.randint(0, len(contents)), pair.answer)
            others = [c for c in contents if c != pair.answer]
            row = await _store_rows(pair.question, pair.answer, others)
            rows.append({**row, "ds": "suite", "n": n})
    return rows


def top_hit(rows: list[dict[str, Any]], score: Any) -> float:
    return float(np.mean([r["y"][int(np.argmax(score(r["X"])))] for r in rows]))


def recall10(rows: list[dict[str, Any]], score: Any) -> float:
    out = []
    for r in rows:
        order = np.argsort(-score(r["X"]), kind="stable")[:10]
        out.append(r["y"][order].sum() / r["ngold"])
    return float(np.mean(out))


def report(
    label: str, model: EvidenceModel, data: dict[str, list[dict[str, Any]]], *, solo: bool
) -> None:
    """One line of figures; ``solo``: LoCoMo's facts read alone, as the solo model sees them."""

    def score(x: np.ndarray) -> np.ndarray:
        return model.score(alone(x) if solo else x)

    cells = [f"facts {c} R@10 {recall10(data[f'facts{c}'], score):.3f}" for c in ("0-4", "5-9")]
    for ds in ("every", "suite"):
        for n in sorted({r["n"] for r in data[ds]}):
            cells.append(f"{ds}{n} {top_hit([r for r in data[ds] if r['n'] == n], score):.3f}")
    print(f"{label:10s} " + "  ".join(cells), flush=True)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--l2", type=float, default=0.01)
    ap.add_argument("--json", help="write the fitted model here")
    args = ap.parse_args()
    facts = await relevance_fit.locomo_rows(args.locomo)
    data = {
        "facts0-4": [r for r in facts if r["on"] and r["ngold"] and r["conv"] < 5],
        "facts5-9": [r for r in facts if r["on"] and r["ngold"] and r["conv"] >= 5],
        "every": await everyday_rows(),
        "suite": await suite_rows(),
    }
    train = [
        {"ds": "facts" if r["on"] else "off-facts", "X": alone(r["X"]), "y": r["y"] * 1.0}
        for r in facts
        if r["conv"] < 5
    ] + [{"ds": "every", "X": alone(r["X"]), "y": r["y"]} for r in data["every"]]
    model = rf.fit_quadratic(train, train, l2=args.l2, shares=SHARES)
    scale, offset = rf.calibrate(train, model)
    model = model.model_copy(update={"scale": scale, "offset": offset})
    report("default", DEFAULT_EVIDENCE, data, solo=False)
    report("solo", model, data, solo=True)
    fitted = model.model_dump(include={"weights", "interactions", "scale", "offset"})
    print(json.dumps(fitted, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(fitted, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
