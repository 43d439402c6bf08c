"""Small-store suite (issue 41): does a store of a few one-line facts answer everyday questions?

Data: ``tests/fixtures/small_store_suite.json`` holds question/answer pairs (the answer is the
one-line fact a user would have stored, often sharing no word with the question: "what should I
avoid ordering at restaurants?" -> "Is allergic to shellfish") and a pool of unrelated everyday
facts. For each question and each size N (default 1, 5, 20, 50) a fresh store holds the answer
plus N-1 distractors drawn (seeded) from the pool and the other questions' answers; the
distractors of a smaller size are a prefix of a larger size's, so sizes differ only by what is
added. Everything goes through the public :class:`~memvault.AsyncMemory` API with the bundled
embedder (one instance, its vectors memoised by text, so each text is embedded once per run).

Measured per size: the answer is the top search hit; the answer is in the default
``context()``; how many other memories that context injects; the answer's ``relevance_score``
(search of the whole store). Across sizes: the spread (max - min) of each question's answer
relevance, its mean and max over questions (a calibrated score should not move much with the
number of unrelated memories).

Usage::

    .venv/bin/python benchmarks/small_store.py [--sizes 1,5,20,50] [--preset default]
        [--backend memory|sqlite] [--seed 0] [--json out.json] [--misses]

Not a pass/fail test: ``tests/bench/test_small_store.py`` runs it and checks only sanity.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memvault import AsyncMemory
from memvault.config import MemvaultConfig
from memvault.protocols import Embedder, Vectors

SUITE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "small_store_suite.json"
SIZES = (1, 5, 20, 50)
AGENT = "user"


@dataclass(frozen=True)
class Pair:
    """A question and the one-line fact that answers it."""

    question: str
    answer: str


@dataclass(frozen=True)
class Suite:
    """The question/answer pairs and the pool of unrelated facts."""

    pairs: tuple[Pair, ...]
    pool: tuple[str, ...]


def load_suite(path: str | Path = SUITE) -> Suite:
    """Read the suite file; fails on a malformed file or an answer repeated in the pool."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    pairs = tuple(Pair(str(p["question"]), str(p["answer"])) for p in raw["pairs"])
    pool = tuple(str(f) for f in raw["pool"])
    answers = [p.answer for p in pairs]
    if len(set(answers)) != len(answers) or set(answers) & set(pool):
        msg = f"{path}: an answer is repeated, or also in the pool"
        raise ValueError(msg)
    return Suite(pairs, pool)


class MemoEmbedder:
    """The wrapped embedder, each text embedded once (the vectors are the model's own)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._docs: dict[str, Vectors] = {}
        self._queries: dict[str, Vectors] = {}

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        missing = list(dict.fromkeys(t for t in texts if t not in self._docs))
        if missing:
            for text, vec in zip(missing, self._inner.embed_documents(missing), strict=True):
                self._docs[text] = vec
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._docs[t] for t in texts])

    def embed_query(self, text: str) -> Vectors:
        if text not in self._queries:
            self._queries[text] = self._inner.embed_query(text)
        return self._queries[text]


def distractor_order(suite: Suite, index: int, seed: int) -> tuple[list[str], random.Random]:
    """Return question ``index``'s distractors in draw order (pool + other answers, shuffled)."""
    rng = random.Random(seed * 1_000_003 + index)
    others = [p.answer for i, p in enumerate(suite.pairs) if i != index]
    candidates = [*suite.pool, *others]
    rng.shuffle(candidates)
    return candidates, rng


@dataclass
class Outcome:
    """One question in one store size."""

    size: int
    top_hit: bool
    in_context: bool
    others_injected: int
    relevance: float | None
    top_content: str | None


async def _measure(mem: AsyncMemory, pair: Pair, contents: list[str], size: int) -> Outcome:
    ids = await mem.add_many([{"content": c} for c in contents], agent_id=AGENT, dedup=False)
    answer_id = ids[contents.index(pair.answer)]
    hits = await mem.search(pair.question, agent_id=AGENT, limit=size)
    relevance = next((h.relevance_score for h in hits if h.id == answer_id), None)
    ctx = await mem.context(pair.question, agent_id=AGENT)
    injected = [e.id for e in ctx.entries]
    return Outcome(
        size=size,
        top_hit=bool(hits) and hits[0].id == answer_id,
        in_context=answer_id in injected,
        others_injected=sum(1 for i in injected if i != answer_id),
        relevance=relevance,
        top_content=hits[0].content if hits else None,
    )


async def run_suite(
    suite: Suite,
    *,
    sizes: Sequence[int] = SIZES,
    embedder: Embedder | None = None,
    preset: str = "default",
    backend: str = "memory",
    seed: int = 0,
) -> dict[str, Any]:
    """Measure every question at every size; returns the report (see :func:`summarise`)."""
    if embedder is None:
        from memvault.embeddings import default_embedder

        embedder = default_embedder()
    model = MemoEmbedder(embedder)
    need = max(sizes) - 1
    if need > len(suite.pool) + len(suite.pairs) - 1:
        msg = f"size {max(sizes)} needs {need} distractors; the suite has fewer"
        raise ValueError(msg)
    config = MemvaultConfig()
    started = time.perf_counter()
    per_question: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="small-store-") as tmp:
        serial = 0
        for index, pair in enumerate(suite.pairs):
            distractors, rng = distractor_order(suite, index, seed)
            outcomes: list[Outcome] = []
            for size in sizes:
                contents = distractors[: size - 1]
                contents.insert(rng.randint(0, len(contents)), pair.answer)
                serial += 1
                url = "memory://"
                if backend == "sqlite":
                    url = str(Path(tmp) / f"store-{serial}.db")
                async with AsyncMemory(
                    url, config=config, embedder=model, preset=preset, track_access=False
                ) as mem:
                    outcomes.append(await _measure(mem, pair, contents, size))
            per_question.append(
                {
                    "question": pair.question,
                    "answer": pair.answer,
                    "outcomes": [vars(o) for o in outcomes],
                }
            )
    return summarise(
        per_question,
        sizes=sizes,
        setup={
            "preset": preset,
            "backend": backend,
            "seed": seed,
            "embedder": model.model_id,
            "questions": len(suite.pairs),
            "pool": len(suite.pool),
            "seconds": round(time.perf_counter() - started, 2),
        },
    )


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarise(
    per_question: list[dict[str, Any]], *, sizes: Sequence[int], setup: dict[str, Any]
) -> dict[str, Any]:
    """Per-size shares and means, and the spread of the answer's relevance across sizes."""
    rows = []
    for k, size in enumerate(sizes):
        got = [q["outcomes"][k] for q in per_question]
        rel = [o["relevance"] for o in got if o["relevance"] is not None]
        rows.append(
            {
                "size": size,
                "questions": len(got),
                "top_hit": _mean([float(o["top_hit"]) for o in got]),
                "in_context": _mean([float(o["in_context"]) for o in got]),
                "others_injected": _mean([float(o["others_injected"]) for o in got]),
                "relevance_mean": _mean(rel),
                "relevance_median": statistics.median(rel) if rel else None,
                "relevance_min": min(rel) if rel else None,
                "answer_not_returned": len(got) - len(rel),
            }
        )
    spreads = []
    for q in per_question:
        rel = [o["relevance"] for o in q["outcomes"] if o["relevance"] is not None]
        if len(rel) == len(sizes):
            spreads.append((max(rel) - min(rel), q["question"]))
    widest = max(spreads) if spreads else None
    return {
        "benchmark": "small_store",
        **setup,
        "sizes": list(sizes),
        "rows": rows,
        "relevance_spread": {
            "questions": len(spreads),
            "mean": _mean([s for s, _ in spreads]),
            "max": widest[0] if widest else None,
            "max_question": widest[1] if widest else None,
        },
        "per_question": per_question,
    }


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render(report: dict[str, Any], *, misses: bool = False) -> str:
    """The per-size table, the spread line and (optionally) each question the top hit missed."""
    lines = [
        f"small-store suite · {report['questions']} questions · pool {report['pool']} · preset "
        f"{report['preset']} · {report['backend']} · {report['embedder']} · "
        f"{report['seconds']} s",
        "",
        f"{'size':>5} {'n':>4} {'top hit':>8} {'in ctx':>7} {'others inj':>11} "
        f"{'rel mean':>9} {'rel med':>8} {'rel min':>8} {'not ret':>8}",
    ]
    for r in report["rows"]:
        lines.append(
            f"{r['size']:>5} {r['questions']:>4} {_f(r['top_hit']):>8} {_f(r['in_context']):>7} "
            f"{_f(r['others_injected'], 2):>11} {_f(r['relevance_mean']):>9} "
            f"{_f(r['relevance_median']):>8} {_f(r['relevance_min']):>8} "
            f"{r['answer_not_returned']:>8}"
        )
    s = report["relevance_spread"]
    lines += [
        "",
        f"answer relevance spread across sizes (max - min): mean {_f(s['mean'])}, max "
        f"{_f(s['max'])} ({s['max_question']!r}) over {s['questions']} questions",
    ]
    if misses:
        lines.append("")
        for q in report["per_question"]:
            for o in q["outcomes"]:
                if not o["top_hit"] or not o["in_context"]:
                    lines.append(
                        f"size {o['size']:>3}  top={'y' if o['top_hit'] else 'n'} "
                        f"ctx={'y' if o['in_context'] else 'n'} rel={_f(o['relevance'])}  "
                        f"{q['question']!r} -> {q['answer']!r}  (top: {o['top_content']!r})"
                    )
    return "\n".join(lines)


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(s) for s in text.split(",") if s.strip())
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("sizes must be positive integers, e.g. 1,5,20,50")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite and print the table (and write the JSON report with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=SUITE, help="suite file")
    parser.add_argument("--sizes", type=_sizes, default=SIZES, help="store sizes: 1,5,20,50")
    parser.add_argument("--preset", default="default", help="retrieval preset")
    parser.add_argument("--backend", choices=("memory", "sqlite"), default="memory")
    parser.add_argument("--seed", type=int, default=0, help="distractor draw seed")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument("--misses", action="store_true", help="list each miss")
    args = parser.parse_args(argv)
    report = asyncio.run(
        run_suite(
            load_suite(args.data),
            sizes=args.sizes,
            preset=args.preset,
            backend=args.backend,
            seed=args.seed,
        )
    )
    print(render(report, misses=args.misses))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
