"""Graph memory, five-signal retrieval and tiered recall on LoCoMo and LongMemEval (issue 18).

Not part of `make test`. Builds every benchmark store once with graph memory on (the rule-based
extractor indexes each turn at write), then ranks the same stores with several presets:

    python benchmarks/bench_graph.py --locomo ../shared/bench/locomo10.json \
        --longmemeval ../shared/bench/longmemeval_s_dev100.json

* ``default``: the default preset (the graph is not read: this is the "graph off" row, and its
  p50 shows what a graph-enabled store costs a default search: nothing but the write-time
  indexing);
* ``graph``: graph-expanded search (activation merged into relevance);
* ``five_signal``: the five-signal preset;
* ``tiered``: :meth:`AsyncMemory.recall_tiered` with ``tiered_recall.enabled`` (heuristic
  classifier), with the share of queries per tier and the latency.

``--plain`` also builds graph-off stores and times the default preset on them, so the two
default p50s compare a store without and with a graph.

Metrics are those of ranking_lab.py: LoCoMo evidence recall@10 per category (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop), LongMemEval turn recall@10 per question type.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _embcache import CachedEmbedder
from ranking_lab import AGENT, Lab, _key, evaluate, show

from memvault import AsyncMemory
from memvault.bench._runner import bench_config
from memvault.bench.metrics import recall_at_k
from memvault.config.graph import GraphConfig, TieredRecallConfig
from memvault.embeddings import default_embedder
from memvault.retrieval.presets import get_preset


class GraphLab(Lab):
    """A :class:`ranking_lab.Lab` whose stores keep a graph (and may run tiered recall)."""

    def __init__(self, embedder: CachedEmbedder, *, graph: bool) -> None:
        super().__init__(embedder, None)
        self.graph = graph

    def _mem(self) -> AsyncMemory:
        config = bench_config()
        if self.graph:
            config = config.model_copy(
                update={
                    "graph": GraphConfig(enabled=True, strengthen_on_search=False),
                    "tiered_recall": TieredRecallConfig(enabled=True),
                }
            )
        return AsyncMemory("memory://", config=config, embedder=self.embedder, track_access=False)


async def tiered(lab: GraphLab) -> dict[str, Any]:
    """Recall@10 and latency of recall_tiered, and how often each tier was chosen."""
    tiers: Counter[str] = Counter()
    lat: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[float]] = defaultdict(list)
    for mem, qs in lab.locomo:
        for cat, q, gold in qs:
            t0 = time.perf_counter()
            got = await mem.recall_tiered(q, agent_id=AGENT, limit=10)
            lat[got.tier.value].append(time.perf_counter() - t0)
            tiers[f"locomo/{got.tier.value}"] += 1
            ids = [str(h.metadata.extra.get("dia_id")) for h in got.entries]
            r = recall_at_k(gold, ids, 10)
            groups[f"locomo/{cat}"].append(r)
            groups["locomo/all"].append(r)
    for mem, qtype, q, _gs, gold_t, _date in lab.lme:
        t0 = time.perf_counter()
        got = await mem.recall_tiered(q, agent_id=AGENT, limit=10)
        lat[got.tier.value].append(time.perf_counter() - t0)
        tiers[f"lme/{got.tier.value}"] += 1
        if gold_t:
            r = recall_at_k(gold_t, [_key(h.metadata.extra)[1] for h in got.entries], 10)
            groups[f"lme/{qtype}"].append(r)
            groups["lme/all"].append(r)
    out: dict[str, Any] = {g: statistics.fmean(v) for g, v in groups.items() if v}
    out["tiers"] = dict(tiers)
    out["p50_ms"] = {t: sorted(v)[len(v) // 2] * 1000 for t, v in lat.items() if v}
    every = sorted(x for v in lat.values() for x in v)
    out["p50_ms"]["all"] = every[len(every) // 2] * 1000 if every else 0.0
    return out


def show_tiered(res: dict[str, Any]) -> None:
    cats = " ".join(f"c{c}={res[f'locomo/{c}']:.3f}" for c in "1234" if f"locomo/{c}" in res)
    print(
        f"{'tiered':28s} LoCoMo R@10 {res.get('locomo/all', 0):.4f} [{cats}] | "
        f"LME turn@10 {res.get('lme/all', 0):.4f} | p50 {res['p50_ms']}",
        flush=True,
    )
    print(f"    tiers chosen: {res['tiers']}")
    for g in sorted(k for k in res if k.startswith("lme/") and k != "lme/all"):
        print(f"    {g:34s} turn@10 {res[g]:.3f}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo")
    ap.add_argument("--longmemeval")
    ap.add_argument("--cache", default="/tmp/memvault-embcache")
    ap.add_argument("--max-conv", type=int)
    ap.add_argument("--max-q", type=int)
    ap.add_argument("--configs", default="default,graph,five_signal")
    ap.add_argument("--plain", action="store_true", help="also time default on graph-off stores")
    ap.add_argument("--no-tiered", action="store_true")
    args = ap.parse_args()
    embedder = CachedEmbedder(default_embedder(), args.cache)
    labs = [("graph-on stores", GraphLab(embedder, graph=True))]
    if args.plain:
        labs.insert(0, ("graph-off stores", GraphLab(embedder, graph=False)))
    for title, lab in labs:
        t0 = time.perf_counter()
        if args.locomo:
            await lab.load_locomo(args.locomo, args.max_conv)
        if args.longmemeval:
            await lab.load_lme(args.longmemeval, args.max_q)
        print(f"{title}: built in {time.perf_counter() - t0:.0f}s", flush=True)
        names = ["default"] if not lab.graph else args.configs.split(",")
        for name in names:
            show(f"{name} ({title.split()[0]})", await evaluate(lab, get_preset(name)))
        if lab.graph and not args.no_tiered:
            show_tiered(await tiered(lab))
    embedder.save()


if __name__ == "__main__":
    asyncio.run(main())
