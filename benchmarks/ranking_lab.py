"""Ranking lab: build every benchmark store once, then evaluate many retrieval configs fast.

Not part of `make test`. Used to tune and ablate the default preset on the two development sets
(LoCoMo and the LongMemEval_S dev questions) with identical stores and cached embeddings:

    python benchmarks/ranking_lab.py --locomo ../shared/bench/locomo10.json \
        --longmemeval ../shared/bench/longmemeval_s_dev100.json --configs default,bm25,dense

Metrics: LoCoMo evidence recall@10 (categories 1-4) per category; LongMemEval turn recall@10,
session recall_any@5 and recall_all@5 per question type. Search limit is 10, as a user's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _embcache import CachedEmbedder

from memvault import AsyncMemory
from memvault.bench._runner import bench_config
from memvault.bench.datasets import load_locomo, load_longmemeval
from memvault.bench.locomo import turn_items
from memvault.bench.longmemeval import haystack_items
from memvault.bench.metrics import recall_at_k
from memvault.embeddings import create_embedder, default_embedder
from memvault.retrieval.evidence import FEATURES
from memvault.retrieval.presets import DEFAULT, DEFAULT_EVIDENCE, RetrievalConfig, get_preset

AGENT = "bench"


class Lab:
    """Open stores for both datasets, with their queries and gold labels."""

    def __init__(
        self, embedder: CachedEmbedder, store_dir: str | None = None, postgres: str | None = None
    ) -> None:
        self.embedder = embedder
        # None: in-process stores; else one SQLite file per conversation/question in this
        # directory (the default store, to check it ranks exactly as the in-process one).
        self.store_dir = store_dir
        # A PostgreSQL URL: one schema per conversation/question there instead.
        self.postgres = postgres
        self._stores = 0
        self.locomo: list[tuple[AsyncMemory, list[tuple[str, str, set[str]]]]] = []
        self.lme: list[tuple[AsyncMemory, str, str, set[str], set[str], Any]] = []

    def _mem(self) -> AsyncMemory:
        if self.postgres is not None:
            from memvault.backends.postgres import PostgresBackend

            self._stores += 1
            store = PostgresBackend(
                self.postgres,
                self.embedder,
                schema=f"lab_{self._stores}",
                pool_max=2,
                max_memories_per_agent=None,
                max_content_chars=1_000_000,
            )
            return AsyncMemory(
                backend=store, config=bench_config(), embedder=self.embedder, track_access=False
            )
        target = "memory://"
        if self.store_dir is not None:
            self._stores += 1
            target = str(Path(self.store_dir) / f"store-{self._stores}.db")
        return AsyncMemory(
            target, config=bench_config(), embedder=self.embedder, track_access=False
        )

    async def load_locomo(self, path: str, max_conv: int | None) -> None:
        data = load_locomo(path)
        for conv in data.conversations[:max_conv]:
            mem = self._mem()
            await mem.__aenter__()
            await mem.add_many(turn_items(conv), agent_id=AGENT, dedup=False)
            qs = [
                (str(qa.category), qa.question, set(qa.evidence))
                for qa in conv.qas
                if qa.category in (1, 2, 3, 4) and qa.evidence
            ]
            self.locomo.append((mem, qs))
        self.embedder.save()

    async def load_lme(self, path: str, max_q: int | None) -> None:
        data = load_longmemeval(path)
        for n, item in enumerate(data.items[:max_q]):
            if item.is_abstention or not item.answer_session_ids:
                continue
            records, gold_turns, _ = haystack_items(item)
            mem = self._mem()
            await mem.__aenter__()
            await mem.add_many(records, agent_id=AGENT, dedup=False)
            self.lme.append(
                (
                    mem,
                    item.question_type,
                    item.question,
                    set(item.answer_session_ids),
                    gold_turns,
                    item.question_date,
                )
            )
            if n % 10 == 9:
                print(f"  lme {n + 1} stores", file=sys.stderr, flush=True)
                self.embedder.save()
        self.embedder.save()


def _key(extra: dict[str, Any]) -> tuple[str, str]:
    return str(extra.get("session_id", "")), f"{extra.get('session_index')}:{extra.get('turn')}"


async def evaluate(lab: Lab, cfg: RetrievalConfig) -> dict[str, dict[str, float]]:
    """Per-group metric means for both datasets (keys 'locomo/<cat>', 'lme/<type>')."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    lat: list[float] = []
    for mem, qs in lab.locomo:
        for cat, q, gold in qs:
            t0 = time.perf_counter()
            hits = await mem.search(q, agent_id=AGENT, limit=10, preset=cfg)
            lat.append(time.perf_counter() - t0)
            ids = [str(h.metadata.extra.get("dia_id")) for h in hits]
            r = {"r10": recall_at_k(gold, ids, 10)}
            groups[f"locomo/{cat}"].append(r)
            groups["locomo/all"].append(r)
    for mem, qtype, q, gold_s, gold_t, asked in lab.lme:
        t0 = time.perf_counter()
        # Asked at the question date, as memvault bench longmemeval asks.
        hits = await mem.search(q, agent_id=AGENT, limit=10, preset=cfg, asked_at=asked)
        lat.append(time.perf_counter() - t0)
        keys = [_key(h.metadata.extra) for h in hits]
        sessions = [s for s, _ in keys]
        top5 = set(list(dict.fromkeys(sessions))[:5])
        r = {
            "turn10": recall_at_k(gold_t, [t for _, t in keys], 10) if gold_t else float("nan"),
            "any5": float(bool(gold_s & top5)),
            "all5": float(gold_s <= top5),
        }
        groups[f"lme/{qtype}"].append(r)
        groups["lme/all"].append(r)
    out: dict[str, dict[str, float]] = {}
    for g, rows in groups.items():
        out[g] = {
            k: statistics.fmean(v for r in rows if (v := r[k]) == v) if rows else 0.0
            for k in rows[0]
        }
        out[g]["n"] = len(rows)
    if lat:
        lat.sort()
        out["latency"] = {
            "p50_ms": lat[len(lat) // 2] * 1000,
            "p95_ms": lat[int(len(lat) * 0.95)] * 1000,
        }
    return out


async def offtopic(lab: Lab, cfg: RetrievalConfig, thresholds: Sequence[float]) -> None:
    """Off-topic rejection and on-topic retention of context injection's relevance gate.

    Off-topic queries: 12 questions of the next LoCoMo conversation per conversation, and the
    next haystack's question per LongMemEval haystack. A query injects nothing when the best
    hit's relevance is below the threshold. On-topic: the gold hits in a search's top 10 count
    as kept when the query's context is injected.
    """
    off: list[float] = []
    for n, (mem, _qs) in enumerate(lab.locomo):
        other = lab.locomo[(n + 1) % len(lab.locomo)][1]
        for _cat, q, _gold in other[:: max(1, len(other) // 12)][:12]:
            hits = await mem.search(q, agent_id=AGENT, limit=20, preset=cfg)
            off.append(max((h.relevance_score or 0.0 for h in hits), default=0.0))
    off_locomo = len(off)
    for n, (mem, *_rest, asked) in enumerate(lab.lme):
        q = lab.lme[(n + 1) % len(lab.lme)][2]
        hits = await mem.search(q, agent_id=AGENT, limit=20, preset=cfg, asked_at=asked)
        off.append(max((h.relevance_score or 0.0 for h in hits), default=0.0))
    kept: list[float] = []  # per gold hit in the top 10: the best relevance of its query
    for mem, qs in lab.locomo:
        for _cat, q, gold in qs:
            hits = await mem.search(q, agent_id=AGENT, limit=20, preset=cfg)
            best = max((h.relevance_score or 0.0 for h in hits), default=0.0)
            kept += [best] * sum(str(h.metadata.extra.get("dia_id")) in gold for h in hits[:10])
    kept_locomo = len(kept)
    for mem, _t, q, _gs, gold_t, asked in lab.lme:
        hits = await mem.search(q, agent_id=AGENT, limit=20, preset=cfg, asked_at=asked)
        best = max((h.relevance_score or 0.0 for h in hits), default=0.0)
        kept += [best] * sum(_key(h.metadata.extra)[1] in gold_t for h in hits[:10])
    print(f"off-topic queries {len(off)}, on-topic gold hits in top 10: {len(kept)}")
    parts = {
        "both": (off, kept),
        "LoCoMo": (off[:off_locomo], kept[:kept_locomo]),
        "LongMemEval": (off[off_locomo:], kept[kept_locomo:]),
    }
    for t in thresholds:
        rates = []
        for name, (o, k) in parts.items():
            if o and k:
                rejected = sum(b < t for b in o) / len(o)
                retained = sum(b >= t for b in k) / len(k)
                rates.append(f"{name} {rejected:.3f} / {retained:.3f}")
        print(
            f"  min_relevance {t:.3f}: off-topic injecting nothing / gold hits kept: "
            + ", ".join(rates)
        )


def show(name: str, res: dict[str, dict[str, float]]) -> None:
    lo = res.get("locomo/all", {})
    lm = res.get("lme/all", {})
    cats = " ".join(f"c{c}={res[f'locomo/{c}']['r10']:.3f}" for c in "1234" if f"locomo/{c}" in res)
    print(
        f"{name:28s} LoCoMo R@10 {lo.get('r10', 0):.4f} [{cats}] | "
        f"LME turn@10 {lm.get('turn10', 0):.4f}"
        f" any@5 {lm.get('any5', 0):.3f} all@5 {lm.get('all5', 0):.3f}"
        f" | p50 {res.get('latency', {}).get('p50_ms', 0):.1f}ms",
        flush=True,
    )
    for g in sorted(k for k in res if k.startswith("lme/") and k != "lme/all"):
        r = res[g]
        print(
            f"    {g:34s} n={int(r['n']):3d} turn@10 {r['turn10']:.3f} "
            f"any@5 {r['any5']:.3f} all@5 {r['all5']:.3f}"
        )


def refit_config(path: str) -> RetrievalConfig:
    """The default preset with the evidence model of a ``ranking_fit.py --json`` file."""
    fitted = json.loads(Path(path).read_text())
    model = DEFAULT_EVIDENCE.model_copy(
        update={
            "weights": fitted["weights"],
            "interactions": fitted.get("interactions", {}),
            "scale": round(fitted["scale"], 4),
            "offset": round(fitted["offset"], 4),
        }
    )
    return DEFAULT.model_copy(update={"name": "refit", "evidence": model})


def ablated(stage: str) -> RetrievalConfig:
    """The default preset with one ranking stage switched off (``--configs ablation``):
    an evidence feature (its weight and interactions), the neighbour fetch, thread spreading."""
    evidence = DEFAULT_EVIDENCE
    if stage == "neighbours":  # no neighbour fetch: the context features see nothing
        model = evidence.model_copy(update={"context_hops": 0})
        return DEFAULT.model_copy(update={"name": "-neighbours", "evidence": model})
    if stage == "spread":
        model = evidence.model_copy(update={"thread_spread": 0.0})
        return DEFAULT.model_copy(update={"name": "-spread", "evidence": model})
    if stage == "interactions":
        model = evidence.model_copy(update={"interactions": {}})
        return DEFAULT.model_copy(update={"name": "-interactions", "evidence": model})
    return DEFAULT.model_copy(update={"name": f"-{stage}", "evidence": evidence.without(stage)})


ABLATION = ("interactions", "neighbours", "spread", *FEATURES)


def resolve(name: str, extra: dict[str, RetrievalConfig]) -> RetrievalConfig:
    if name.startswith("-"):
        return ablated(name[1:])
    return extra[name] if name in extra else get_preset(name)


async def main(
    argv: Sequence[str] | None = None,
    extra: dict[str, RetrievalConfig] | None = None,
    hook: Callable[[Lab], Any] | None = None,
) -> Lab:
    ap = argparse.ArgumentParser()
    ap.add_argument("--locomo")
    ap.add_argument("--longmemeval")
    ap.add_argument("--configs", default="default")
    ap.add_argument("--cache", default="/tmp/memvault-embcache")
    ap.add_argument(
        "--embedder",
        default="default",
        help="embedder spec for create_embedder (e.g. minilm-l3); 'default': the default model",
    )
    ap.add_argument("--max-conv", type=int)
    ap.add_argument("--max-q", type=int)
    ap.add_argument("--offtopic", action="store_true", help="measure the context relevance gate")
    ap.add_argument(
        "--evidence-json",
        help="ranking_fit.py --json output: adds the config 'refit' (default with that model)",
    )
    ap.add_argument(
        "--dump",
        help="after the configs, also write the candidate dump of ranking_features.py here",
    )
    ap.add_argument(
        "--postgres",
        help="build the stores as schemas of this PostgreSQL database ('private': a pgserver)",
    )
    ap.add_argument(
        "--pg-scan-rows",
        help="comma-separated lexical_scan_rows values; every config is evaluated with each",
    )
    ap.add_argument(
        "--sqlite-dir",
        help="build the stores as SQLite files in this (empty) directory instead of in process",
    )
    args = ap.parse_args(argv)
    extra = dict(extra or {})
    if args.evidence_json:
        extra["refit"] = refit_config(args.evidence_json)
    inner = default_embedder() if args.embedder == "default" else create_embedder(args.embedder)
    server = None
    url = args.postgres
    if url == "private":
        import tempfile

        import pgserver

        data = tempfile.mkdtemp(prefix="memvault-lab-")
        server = pgserver.get_server(data, cleanup_mode="stop")
        # One pool per store (110 stores): more than the default 100 connections.
        server.psql("ALTER SYSTEM SET max_connections = 400;")
        server.cleanup()
        server = pgserver.get_server(data, cleanup_mode="stop")
        url = server.get_uri()
    try:
        return await _run(args, extra, hook, inner, url)
    finally:
        if server is not None:
            server.cleanup()


async def _run(
    args: argparse.Namespace,
    extra: dict[str, RetrievalConfig],
    hook: Callable[[Lab], Any] | None,
    inner: Any,
    url: str | None,
) -> Lab:
    lab = Lab(CachedEmbedder(inner, args.cache), args.sqlite_dir, url)
    t0 = time.perf_counter()
    if args.locomo:
        await lab.load_locomo(args.locomo, args.max_conv)
    if args.longmemeval:
        await lab.load_lme(args.longmemeval, args.max_q)
    print(f"stores built in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    if hook is not None:
        await hook(lab)
        return lab
    if args.offtopic:
        from memvault.injection.context import CONTEXT_MIN_RELEVANCE

        grid = sorted({0.01, 0.015, 0.02, 0.03, 0.05, 0.5, 0.7, 0.8, 0.9, CONTEXT_MIN_RELEVANCE})
        await offtopic(lab, resolve(args.configs.split(",")[0], extra or {}), grid)
        return lab
    names = args.configs.split(",")
    if names == ["ablation"]:
        names = ["default", *(f"-{stage}" for stage in ABLATION)]
    for rows in args.pg_scan_rows.split(",") if args.pg_scan_rows else [None]:
        if rows is not None:
            # The PostgreSQL stores' bound on BM25's scanned rows (see PostgresBackend), with
            # its store-size gate lifted: these stores are far below 20,000 rows.
            from memvault.backends.postgres import _candidates

            _candidates._BOUND_MIN_DOCS = 0
            for mem in [m for m, _ in lab.locomo] + [entry[0] for entry in lab.lme]:
                mem.backend._lexical_scan_rows = int(rows)  # type: ignore[attr-defined]
        for name in names:
            label = name if rows is None else f"{name} (lexical_scan_rows={rows})"
            show(label, await evaluate(lab, resolve(name, extra or {})))
    lab.embedder.save()
    if args.dump:
        from ranking_features import dump  # one store build for evaluation and dump

        await dump(lab, args.dump)
    return lab


if __name__ == "__main__":
    asyncio.run(main())
