"""Dump raw candidate sets of both development sets for offline ranking experiments.

Each query's candidates come from the store's own ``search_candidates`` (a large pool), so the
experiments see exactly what the ranking stage sees. Output: a pickle of per-query records.
"""

from __future__ import annotations

import asyncio
import pickle
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ranking_lab

from memvault._search import query_candidates
from memvault.models import MemoryQuery
from memvault.retrieval.presets import DEFAULT as CONFIG

NOW = datetime.now(UTC)


async def dump(lab: ranking_lab.Lab, out: str) -> None:
    records = []

    async def one(mem, q, labels_of, meta):
        store = await mem._ready(settle=False)
        query = MemoryQuery(text=q, limit=10)
        # Exactly the candidates a default search of limit 10 ranks, asked when the question
        # was (LongMemEval's question date; LoCoMo's questions have none: now).
        cands = await query_candidates(
            store, ranking_lab.AGENT, query, CONFIG, now=meta.get("date") or NOW, shared=set()
        )
        labels = {i: labels_of(e.metadata.extra) for i, e in cands.entries.items()}
        records.append({**meta, "q": q, "cands": cands, "labels": labels})

    for mem, qs in lab.locomo:
        for cat, q, gold in qs:
            await one(
                mem,
                q,
                lambda x, g=gold: str(x.get("dia_id")) in g,
                {"ds": "locomo", "group": cat, "gold": sorted(gold), "conv": id(mem)},
            )
    for mem, qtype, q, gold_s, gold_t, date in lab.lme:
        await one(
            mem,
            q,
            lambda x, g=gold_t: f"{x.get('session_index')}:{x.get('turn')}" in g,
            {
                "ds": "lme",
                "group": qtype,
                "gold": sorted(gold_t),
                "gold_s": sorted(gold_s),
                "date": date,
                "conv": id(mem),
            },
        )
    # Off-topic queries: questions of another conversation / another haystack. Nothing in the
    # store answers them, so every candidate is a negative (for calibration and min_relevance).
    for n, (mem, _qs) in enumerate(lab.locomo):
        other = lab.locomo[(n + 1) % len(lab.locomo)][1]
        for cat, q, _gold in other[:: max(1, len(other) // 12)][:12]:
            await one(
                mem,
                q,
                lambda x: False,
                {"ds": "off-locomo", "group": cat, "gold": [], "conv": id(mem)},
            )
    for n, (mem, *_rest) in enumerate(lab.lme):
        other = lab.lme[(n + 1) % len(lab.lme)]
        await one(
            mem,
            other[2],
            lambda x: False,
            {"ds": "off-lme", "group": other[1], "gold": [], "gold_s": [], "conv": id(mem)},
        )
    with open(out, "wb") as fh:
        pickle.dump(records, fh)
    print(f"wrote {len(records)} queries to {out}", file=sys.stderr)


if __name__ == "__main__":
    out = sys.argv[1]
    argv = sys.argv[2:]
    asyncio.run(ranking_lab.main(argv, hook=lambda lab: dump(lab, out)))
