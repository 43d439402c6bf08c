"""Search latency on a store of real conversational text, this build against another, side by side.

Every distinct turn of both development sets (LoCoMo and the LongMemEval dev haystacks, about
52k memories, many of them 1-4k-character assistant answers) goes into one SQLite store for one
agent (``add_many``, dedup off, vectors from the benchmark embedding cache, so building takes
seconds after the first run). Then the two builds take turns, each in a fresh process running a
chunk of unique questions through ``AsyncMemory.search(limit=10)`` with the real query embedding
(after a short warm-up), the order swapped every round so both see the same machine:

    python benchmarks/bench_real_text.py --locomo ../shared/bench/locomo10.json \\
        --longmemeval ../shared/bench/longmemeval_s_dev100.json --compare ea5af31 [--rounds 4]

``--compare`` takes a git ref (checked out in a temporary worktree, run with this interpreter and
packages) or a source directory. ``--postgres URL`` (or ``private``: a pgserver started for the
run) keeps the store in a PostgreSQL schema instead (``real_text``; reused when an earlier run
on that server filled it). Absolute times on a shared machine drift;
the ratio is the result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _embcache import CachedEmbedder

from memvault import AsyncMemory
from memvault.bench._runner import bench_config
from memvault.bench.datasets import load_locomo, load_longmemeval
from memvault.bench.locomo import turn_items
from memvault.bench.longmemeval import haystack_items
from memvault.embeddings import default_embedder

AGENT = "bench"
WARMUP = 30


def questions(locomo: str, longmemeval: str) -> list[str]:
    """Unique questions of both sets, interleaved (the warm-up takes the last ones)."""
    lo = [qa.question for c in load_locomo(locomo).conversations for qa in c.qas]
    lme = [item.question for item in load_longmemeval(longmemeval).items]
    mixed = [q for pair in zip(lme, lo, strict=False) for q in pair] + lo[len(lme) :]
    return list(dict.fromkeys(mixed))


def with_schema(url: str, schema: str) -> str:
    """A PostgreSQL URL that names the store's schema (memvault reads ``schema=``)."""
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


async def build(path: str, locomo: str, longmemeval: str, cache: str) -> int:
    """Fill the store at ``path`` (a file or a URL) with every distinct turn; returns how
    many."""
    seen: set[str] = set()
    items = []
    turns = [i for c in load_locomo(locomo).conversations for i in turn_items(c)]
    turns += [i for item in load_longmemeval(longmemeval).items for i in haystack_items(item)[0]]
    for i in turns:
        if i["content"] not in seen:
            seen.add(i["content"])
            items.append(i)
    embedder = CachedEmbedder(default_embedder(), cache)
    async with AsyncMemory(
        path, config=bench_config(), embedder=embedder, track_access=False
    ) as mem:
        for start in range(0, len(items), 2000):
            await mem.add_many(items[start : start + 2000], agent_id=AGENT, dedup=False)
    embedder.save()
    return len(items)


async def _filled(db: str) -> bool:
    async with AsyncMemory(db, config=bench_config(), track_access=False) as mem:
        return await mem.count(agent_id=AGENT) > 0


async def run_chunk(db: str, qs: list[str], out: str) -> None:
    """One build's turn: warm up, then time ``qs`` (appends the latencies to ``out``)."""
    async with AsyncMemory(db, config=bench_config(), track_access=False) as mem:
        for q in qs[:WARMUP]:
            await mem.search(q, agent_id=AGENT, limit=10)
        lat = []
        for q in qs[WARMUP:]:
            t = time.perf_counter()
            await mem.search(q, agent_id=AGENT, limit=10)
            lat.append(time.perf_counter() - t)
    with open(out, "a") as fh:
        fh.write(json.dumps(lat) + "\n")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", required=True)
    ap.add_argument("--longmemeval", required=True)
    ap.add_argument("--compare", required=True, help="git ref or source directory")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--queries", type=int, default=150, help="timed searches per build per round")
    ap.add_argument("--cache", default="/tmp/memvault-embcache")
    ap.add_argument("--db", help="reuse (or create) the store here instead of a temporary file")
    ap.add_argument("--postgres", help="a PostgreSQL URL, or 'private' (a pgserver for the run)")
    ap.add_argument("--_chunk", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._chunk:
        db, spec, out = args._chunk
        start, n = (int(x) for x in spec.split(":"))
        qs = questions(args.locomo, args.longmemeval)
        asyncio.run(run_chunk(db, qs[-WARMUP:] + qs[start : start + n], out))
        return
    here = Path(__file__).resolve().parent.parent
    server = None
    url = args.postgres
    if url == "private":
        import pgserver

        server = pgserver.get_server(
            tempfile.mkdtemp(prefix="memvault-real-text-pg-"), cleanup_mode="stop"
        )
        url = server.get_uri()
    try:
        lat = _compare(args, here, url)
    finally:
        if server is not None:
            server.cleanup()
    _report(lat)


def _compare(args: argparse.Namespace, here: Path, url: str | None) -> dict[str, list[float]]:
    """Build (or reuse) the store, let both builds take turns; their latencies, seconds."""
    with tempfile.TemporaryDirectory(prefix="memvault-real-text-") as tmp_dir:
        tmp = Path(tmp_dir)
        ref_src = Path(args.compare)
        if not ref_src.is_dir():
            tree = tmp / "ref"
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(here),
                    "worktree",
                    "add",
                    "--detach",
                    "--quiet",
                    str(tree),
                    args.compare,
                ],
                check=True,
            )
            ref_src = tree / "src"
        try:
            if url is not None:
                db = with_schema(url, "real_text")
                # A schema filled by an earlier run (a server that outlived it) is reused.
                fresh = not asyncio.run(_filled(db))
            else:
                path = Path(args.db) if args.db else tmp / "real.db"
                db, fresh = str(path), not path.exists()
            if fresh:
                n = asyncio.run(build(db, args.locomo, args.longmemeval, args.cache))
                print(f"stored {n:,} turns", flush=True)
            builds = {"this": here / "src", "ref": ref_src}
            outs = {name: tmp / f"{name}.jsonl" for name in builds}
            for r in range(args.rounds):
                order = ["ref", "this"] if r % 2 == 0 else ["this", "ref"]
                for name in order:
                    env = {**os.environ, "PYTHONPATH": str(builds[name])}
                    cmd = [
                        sys.executable,
                        __file__,
                        "--locomo",
                        args.locomo,
                        "--longmemeval",
                        args.longmemeval,
                        "--compare",
                        args.compare,
                        "--_chunk",
                        str(db),
                        f"{r * args.queries}:{args.queries}",
                        str(outs[name]),
                    ]
                    subprocess.run(cmd, check=True, env=env)
                print(f"round {r + 1}/{args.rounds} done", flush=True)
            lat = {
                n: [x for line in o.read_text().splitlines() for x in json.loads(line)]
                for n, o in outs.items()
            }
        finally:
            if ref_src != Path(args.compare):
                subprocess.run(
                    ["git", "-C", str(here), "worktree", "remove", "--force", str(tmp / "ref")],
                    check=False,
                )
    return lat


def _report(lat: dict[str, list[float]]) -> None:
    print(f"{'build':6s} {'searches':>8s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s}")
    for name in ("this", "ref"):
        v = lat[name]
        print(
            f"{name:6s} {len(v):8d} {_pct(v, 0.5):8.2f} {_pct(v, 0.95):8.2f} {_pct(v, 0.99):8.2f}"
        )
    ratios = [_pct(lat["this"], q) / _pct(lat["ref"], q) for q in (0.5, 0.95, 0.99)]
    print(f"{'ratio':6s} {'':8s} " + " ".join(f"{x:7.2f}x" for x in ratios) + "  (this/ref)")


if __name__ == "__main__":
    main()
