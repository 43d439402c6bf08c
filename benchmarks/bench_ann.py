"""Exact numpy search vs ANN libraries (usearch, hnswlib, faiss-cpu) on 384-d MiniLM vectors.

    python benchmarks/bench_ann.py embed [--budget 300] [--extra-cache other/vectors-*.npz]
    python benchmarks/bench_ann.py run --size 100000 [--libs exact,usearch,hnswlib,faiss]
    python benchmarks/bench_ann.py run --size 1000000 --libs exact,usearch,hnswlib \
        --chunk 100000 --build-budget 240 --ef 64,128 --no-corrupt --tag 1m
    python benchmarks/bench_ann.py e2e --size 100000 --min-rows 20000   # AsyncMemory.search
    python benchmarks/bench_ann.py table /tmp/memvault-ann/results-*.json
    python benchmarks/bench_ann.py filtered [--sizes 50000,100000,1000000]  # masked exact search

``embed`` embeds the turns of LoCoMo and LongMemEval_S (dev100) with the project's default
embedder (``create_embedder()``, bundled MiniLM) for at most ``--budget`` seconds, plus the
benchmark questions as held-out queries, and caches both matrices as ``.npy``. ``run`` completes
the corpus to ``--size`` the way ``bench_scale.py`` does (a random real vector plus Gaussian
noise, renormalised; mean cosine to its source ~0.85) and measures, per library: build time,
index memory (RSS delta), query p50/p95 (k=10, one thread), recall@10 against exact search on
200 real query embeddings, the cost of adding and deleting 1,000 vectors, and what loading a
truncated or byte-flipped saved index does (in a subprocess, so a crash is reported, not
suffered). With ``--build-budget`` a build stops adding chunks after that many seconds and the
full build time is extrapolated (n log n). ``e2e`` times ``AsyncMemory.search`` (default preset,
query embedding included) on one SQLite store, exact and then with the integrated HNSW graph
(``memvault.backends.sqlite._ann``). Not part of the library; data files are never committed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import synthetic_vectors

WORK = Path(os.environ.get("MEMVAULT_ANN_DIR", "/tmp/memvault-ann"))
LOCOMO = Path("/work/shared/bench/locomo10.json")
LME = Path("/work/shared/bench/longmemeval_s_dev100.json")
DIM = 384
K = 10


# --------------------------------------------------------------------------- corpus


def _texts() -> tuple[list[str], list[str]]:
    docs: list[str] = []
    queries: list[str] = []
    seen: set[str] = set()

    def add(text: str) -> None:
        text = text.strip()
        if text and text not in seen:
            seen.add(text)
            docs.append(text)

    locomo = json.loads(LOCOMO.read_text())
    for conv in locomo:
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                for t in turns:
                    add(f"{t.get('speaker', '')}: {t.get('text', '')}")
        queries += [qa["question"] for qa in conv["qa"] if qa.get("question")]
    lme = json.loads(LME.read_text())
    for item in lme:
        for session in item["haystack_sessions"]:
            for t in session:
                add(t["content"])
        queries.append(item["question"])
    # LoCoMo first (short turns), then LongMemEval: interleave so a budget cut keeps both kinds.
    return docs, list(dict.fromkeys(queries))


def cmd_embed(args: argparse.Namespace) -> None:
    from _embcache import CachedEmbedder

    from memvault.embeddings import create_embedder

    WORK.mkdir(parents=True, exist_ok=True)
    emb = CachedEmbedder(create_embedder(), WORK / "emb")
    docs, queries = _texts()
    print(f"{len(docs)} unique turns, {len(queries)} unique questions", flush=True)
    rng = np.random.default_rng(0)
    qsel = [queries[i] for i in sorted(rng.choice(len(queries), 200, replace=False))]
    qvec = np.stack([emb.embed_query(q) for q in qsel]).astype(np.float32)
    np.save(WORK / "real_queries.npy", qvec)
    t0 = time.perf_counter()
    out: list[NDArray[np.float32]] = []
    done = 0
    for start in range(0, len(docs), 256):
        if time.perf_counter() - t0 > args.budget:
            print(f"budget reached after {done} texts", flush=True)
            break
        block = docs[start : start + 256]
        out.append(emb.embed_documents(block))
        done += len(block)
        if (start // 256) % 20 == 0:
            print(f"{done} texts, {time.perf_counter() - t0:.0f}s", flush=True)
    emb.save()
    mat = np.concatenate(out).astype(np.float32)
    for extra in args.extra_cache:
        # Document vectors of another CachedEmbedder file of the same model (queries skipped).
        data = np.load(extra, allow_pickle=False)
        keep = np.array([not str(k).startswith("q:") for k in data["keys"]], dtype=bool)
        mat = np.concatenate([mat, data["vectors"][keep].astype(np.float32)])
    _, first = np.unique(np.round(mat, 5), axis=0, return_index=True)
    mat = mat[np.sort(first)]
    np.save(WORK / "real_docs.npy", mat)
    print(f"saved {mat.shape} docs, {qvec.shape} queries in {time.perf_counter() - t0:.0f}s")


def corpus(
    size: int, seed: int = 1, data: str = "noise"
) -> tuple[NDArray[np.float32], NDArray[np.float32], int]:
    """``size`` unit vectors (real first, then :func:`_corpus.synthetic_vectors` of them with
    ``data``) and the queries."""
    real = np.load(WORK / "real_docs.npy")
    queries = np.load(WORK / "real_queries.npy")
    if size <= len(real):
        return np.ascontiguousarray(real[:size]), queries, size
    rng = np.random.default_rng(seed)
    out = np.empty((size, DIM), dtype=np.float32)
    out[: len(real)] = real
    for start in range(len(real), size, 100_000):
        stop = min(size, start + 100_000)
        out[start:stop] = synthetic_vectors(real, stop - start, rng, data)
    return out, queries, len(real)


# --------------------------------------------------------------------------- libraries


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


M = 16
EF_CONSTRUCTION = 128


class Lib:
    """One library behind a common face: build, search, add, remove, save, load."""

    name = ""

    capacity = 0

    def build(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        raise NotImplementedError

    def add_batch(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        raise NotImplementedError

    def set_ef(self, ef: int) -> None:
        pass

    def search(self, q: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        raise NotImplementedError

    def add_one(self, v: NDArray[np.float32], key: int) -> None:
        raise NotImplementedError

    def remove_one(self, key: int) -> None:
        raise NotImplementedError

    def save(self, path: str) -> None:
        raise NotImplementedError


class Exact(Lib):
    name = "exact numpy (AgentIndex)"

    def build(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        from memvault.backends.sqlite.vector_index import NEVER, AgentIndex, IndexRow

        self.rows = IndexRow
        self.never = NEVER
        self.idx = AgentIndex(DIM, capacity=len(x) + 2048)
        step = 50_000
        for s in range(0, len(x), step):
            block = ids[s : s + step]
            rows = [IndexRow(int(r), 0, 0, 0, NEVER, NEVER, False) for r in block]
            self.idx.add(rows, x[s : s + step])

    def search(self, q: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        m = self.idx.mask(
            now_us=1,
            categories=None,
            since_us=None,
            until_us=None,
            as_of_us=None,
            include_superseded=False,
            allowed_rowids=None,
        )
        return np.array([r for r, _ in self.idx.search(q, m, k)], dtype=np.int64)

    def add_one(self, v: NDArray[np.float32], key: int) -> None:
        self.idx.add([self.rows(key, 0, 0, 0, self.never, self.never, False)], v[None, :])

    def remove_one(self, key: int) -> None:
        self.idx.remove([key])

    def save(self, path: str) -> None:
        raise NotImplementedError


class USearch(Lib):
    name = "usearch (HNSW, f32)"
    dtype = "f32"

    def build(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        from usearch.index import Index

        self.idx = Index(
            ndim=DIM,
            metric="ip",
            dtype=self.dtype,
            connectivity=M,
            expansion_add=EF_CONSTRUCTION,
            expansion_search=64,
        )
        self.idx.add(ids.astype(np.uint64), x, threads=threads)

    def add_batch(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        self.idx.add(ids.astype(np.uint64), x, threads=threads)

    def set_ef(self, ef: int) -> None:
        self.idx.expansion_search = ef

    def search(self, q: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        return np.asarray(self.idx.search(q, k, threads=1).keys, dtype=np.int64)

    def add_one(self, v: NDArray[np.float32], key: int) -> None:
        self.idx.add(key, v, threads=1)

    def remove_one(self, key: int) -> None:
        self.idx.remove(key)

    def save(self, path: str) -> None:
        self.idx.save(path)

    @staticmethod
    def load(path: str) -> Any:
        from usearch.index import Index

        idx = Index.restore(path)
        if idx is None:
            raise ValueError("Index.restore returned None")
        return lambda q: idx.search(q, K, threads=1).keys


class USearchF16(USearch):
    name = "usearch (HNSW, f16)"
    dtype = "f16"


class Hnswlib(Lib):
    name = "hnswlib"

    def build(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        import hnswlib

        self.idx = hnswlib.Index(space="ip", dim=DIM)
        cap = max(self.capacity, len(x)) + 2048
        self.idx.init_index(max_elements=cap, ef_construction=EF_CONSTRUCTION, M=M)
        self.idx.add_items(x, ids, num_threads=threads)
        self.idx.set_num_threads(1)

    def add_batch(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        self.idx.add_items(x, ids, num_threads=threads)
        self.idx.set_num_threads(1)

    def set_ef(self, ef: int) -> None:
        self.idx.set_ef(ef)

    def search(self, q: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        labels, _ = self.idx.knn_query(q, k=k, num_threads=1)
        return np.asarray(labels[0], dtype=np.int64)

    def add_one(self, v: NDArray[np.float32], key: int) -> None:
        self.idx.add_items(v[None, :], [key], num_threads=1)

    def remove_one(self, key: int) -> None:
        self.idx.mark_deleted(key)

    def save(self, path: str) -> None:
        self.idx.save_index(path)

    @staticmethod
    def load(path: str) -> Any:
        import hnswlib

        idx = hnswlib.Index(space="ip", dim=DIM)
        idx.load_index(path)
        return lambda q: idx.knn_query(q, k=K)[0]


class Faiss(Lib):
    name = "faiss-cpu (IndexHNSWFlat + IDMap2)"

    def build(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        import faiss

        faiss.omp_set_num_threads(threads)
        inner = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = EF_CONSTRUCTION
        self.idx = faiss.IndexIDMap2(inner)
        self.inner = inner
        self.idx.add_with_ids(x, ids)
        faiss.omp_set_num_threads(1)

    def add_batch(self, x: NDArray[np.float32], ids: NDArray[np.int64], threads: int) -> None:
        import faiss

        faiss.omp_set_num_threads(threads)
        self.idx.add_with_ids(x, ids)
        faiss.omp_set_num_threads(1)

    def set_ef(self, ef: int) -> None:
        self.inner.hnsw.efSearch = ef

    def search(self, q: NDArray[np.float32], k: int) -> NDArray[np.int64]:
        _, labels = self.idx.search(q[None, :], k)
        return np.asarray(labels[0], dtype=np.int64)

    def add_one(self, v: NDArray[np.float32], key: int) -> None:
        self.idx.add_with_ids(v[None, :], np.array([key], dtype=np.int64))

    def remove_one(self, key: int) -> None:
        import faiss

        self.idx.remove_ids(faiss.IDSelectorBatch(np.array([key], dtype=np.int64)))

    def save(self, path: str) -> None:
        import faiss

        faiss.write_index(self.idx, path)

    @staticmethod
    def load(path: str) -> Any:
        import faiss

        idx = faiss.read_index(path)
        return lambda q: idx.search(q[None, :], K)[1]


LIBS: dict[str, Callable[[], Lib]] = {
    "exact": Exact,
    "usearch": USearch,
    "usearch16": USearchF16,
    "hnswlib": Hnswlib,
    "faiss": Faiss,
}
LOADERS = {"usearch": USearch.load, "usearch16": USearch.load, "hnswlib": Hnswlib.load}
LOADERS["faiss"] = Faiss.load


# --------------------------------------------------------------------------- measurements


def corrupt_check(lib: str, path: str) -> dict[str, str]:
    """Load a truncated and a byte-flipped copy of ``path`` in subprocesses; report outcomes."""
    out: dict[str, str] = {}
    data = Path(path).read_bytes()
    rng = np.random.default_rng(3)
    variants = {
        "truncated": data[: len(data) // 2],
        "header": bytes(rng.integers(0, 256, 64, dtype=np.uint8)) + data[64:],
        "body-flip": data[: len(data) // 2]
        + bytes(rng.integers(0, 256, 4096, dtype=np.uint8))
        + data[len(data) // 2 + 4096 :],
    }
    for kind, blob in variants.items():
        with tempfile.NamedTemporaryFile(suffix=".idx", delete=False) as f:
            f.write(blob)
            bad = f.name
        here = str(Path(__file__).parent)
        code = (
            f"import sys, numpy as np; sys.path.insert(0, {here!r}); import bench_ann as b;"
            f"f = b.LOADERS[{lib!r}]({bad!r}); q = np.load(b.WORK / 'real_queries.npy')[0];"
            "r = f(q); print('loaded; query returned', np.asarray(r).ravel()[:3])"
        )
        try:
            p = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
            )
            if p.returncode < 0:
                out[kind] = f"CRASH (signal {-p.returncode})"
            elif p.returncode != 0:
                last = (p.stderr.strip().splitlines() or ["?"])[-1]
                out[kind] = f"raises: {last[:90]}"
            else:
                out[kind] = "LOADS: " + p.stdout.strip()[:60]
        except subprocess.TimeoutExpired:
            out[kind] = "HANGS (>120 s)"
        os.unlink(bad)
    return out


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def cmd_run(args: argparse.Namespace) -> None:
    x, queries, n_real = corpus(args.size, data=args.data)
    ids = np.arange(1, len(x) + 1, dtype=np.int64)
    print(f"corpus {x.shape} ({n_real} real), {len(queries)} real queries", flush=True)
    exact = Exact()
    gc.collect()
    exact_r0 = rss_mb()
    t0 = time.perf_counter()
    exact.build(x, ids, 1)
    exact_build_s = time.perf_counter() - t0
    exact_mb = rss_mb() - exact_r0
    truth = [set(exact.search(q, K).tolist()) for q in queries]
    extra = x[np.random.default_rng(7).integers(0, len(x), 1000)] + np.random.default_rng(8).normal(
        scale=0.028, size=(1000, DIM)
    ).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    results: list[dict[str, Any]] = []
    for key in args.libs.split(","):
        gc.collect()
        lib = exact if key == "exact" else LIBS[key]()
        r0 = rss_mb()
        t0 = time.perf_counter()
        built = len(x)
        if key != "exact":
            lib.capacity = len(x)
            step = args.chunk or len(x)
            lib.build(x[:step], ids[:step], args.build_threads)
            built = min(step, len(x))
            while built < len(x) and time.perf_counter() - t0 < args.build_budget:
                nxt = slice(built, built + step)
                lib.add_batch(x[nxt], ids[nxt], args.build_threads)
                built = min(len(x), built + step)
        build_s = exact_build_s if key == "exact" else time.perf_counter() - t0
        mem = exact_mb if key == "exact" else rss_mb() - r0
        row: dict[str, Any] = {"lib": lib.name, "n": built, "build_s": build_s, "rss_mb": mem}
        lib_truth = truth
        if built < len(x):
            # Build budget exhausted: extrapolate (HNSW insert cost grows ~log n per vector).
            row["partial_of"] = len(x)
            row["build_extrapolated_s"] = build_s * len(x) / built * np.log(len(x)) / np.log(built)
            sub = x[:built]
            lib_truth = [set((np.argsort(-(sub @ q))[:K] + 1).tolist()) for q in queries]
            print(f"{key}: partial build {built}/{len(x)} in {build_s:.0f}s", flush=True)
        efs = [0] if key == "exact" else [int(e) for e in args.ef.split(",")]
        for ef in efs:
            lib.set_ef(ef)
            for q in queries[:20]:
                lib.search(q, K)  # warm-up
            lat: list[float] = []
            hits = 0
            for q, t in zip(queries, lib_truth, strict=True):
                s = time.perf_counter()
                got = lib.search(q, K)
                lat.append((time.perf_counter() - s) * 1000)
                hits += len(t & set(got.tolist()))
            row[f"ef{ef}"] = {
                "p50_ms": pct(lat, 50),
                "p95_ms": pct(lat, 95),
                "recall": hits / (K * len(queries)),
            }
            print(key, ef, row[f"ef{ef}"], flush=True)
        t0 = time.perf_counter()
        for i, v in enumerate(extra):
            lib.add_one(v, int(len(x) + 10 + i))
        row["add_us"] = (time.perf_counter() - t0) / len(extra) * 1e6
        try:
            t0 = time.perf_counter()
            for i in range(1000):
                lib.remove_one(int(ids[(i * 7) % len(ids)]))
            row["del_us"] = (time.perf_counter() - t0) / 1000 * 1e6
        except Exception as exc:
            row["del_us"] = f"unsupported ({type(exc).__name__}: {str(exc)[:60]})"
        if key != "exact":
            with tempfile.TemporaryDirectory(dir=WORK) as d:
                path = str(Path(d) / "index.bin")
                t0 = time.perf_counter()
                lib.save(path)
                row["save_s"] = time.perf_counter() - t0
                row["file_mb"] = Path(path).stat().st_size / 2**20
                t0 = time.perf_counter()
                LOADERS[key](path)
                row["load_s"] = time.perf_counter() - t0
                if args.corrupt:
                    row["corrupt"] = corrupt_check(key, path)
        print(json.dumps(row), flush=True)
        results.append(row)
        if key != "exact":
            del lib
    out = WORK / f"results-{args.size}-{args.tag}.json"
    out.write_text(json.dumps(results, indent=1))
    print("wrote", out)


def cmd_e2e(args: argparse.Namespace) -> None:
    """End-to-end ``AsyncMemory.search`` (default preset, query embedding included) on one
    SQLite store of ``--size`` memories: exact first, then with the HNSW graph."""
    import asyncio

    asyncio.run(_e2e(args))


async def _e2e(args: argparse.Namespace) -> None:
    from _corpus import memories, queries, timing_embedder
    from bench_scale import AGENT, load
    from rich.console import Console

    from memvault import AsyncMemory
    from memvault.backends.sqlite import _ann

    # Every pass embeds its queries again: exact and graph search time the same questions.
    embedder = timing_embedder()
    x, _, _ = corpus(args.size, data=args.data)
    texts = memories(args.size, seed=args.size)
    qs = queries(args.queries)
    out: dict[str, Any] = {"n": args.size}
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        path = Path(tmp) / "e2e.db"
        mem = AsyncMemory(str(path), embedder=embedder, track_access=False)
        out["load_rows_per_s"] = await load(mem, texts, x, Console(quiet=True))
        await mem.close()
        tops: dict[str, list[list[str]]] = {}
        for mode in ("exact", "ann"):
            _ann.settings.min_rows = 0 if mode == "exact" else args.min_rows
            _ann.settings.background = False
            mem = AsyncMemory(str(path), embedder=embedder, track_access=False)
            t0 = time.perf_counter()
            await mem.search("warm up", agent_id=AGENT)  # loads the matrix (and graph)
            out[f"{mode}_first_search_s"] = time.perf_counter() - t0
            for q in qs[:10]:
                await mem.search(q, agent_id=AGENT, limit=10)
            lat: list[float] = []
            tops[mode] = []
            for q in qs:
                t = time.perf_counter()
                hits = await mem.search(q, agent_id=AGENT, limit=10)
                lat.append((time.perf_counter() - t) * 1000)
                tops[mode].append([h.id for h in hits])
            out[mode] = {"p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)}
            print(mode, out[mode], flush=True)
            t0 = time.perf_counter()
            await mem.close()
            out[f"{mode}_close_s"] = time.perf_counter() - t0
        # Reopen: the graph now loads from <db>.ann (checksum + reconcile) instead of building.
        mem = AsyncMemory(str(path), embedder=embedder, track_access=False)
        t0 = time.perf_counter()
        await mem.search("warm up", agent_id=AGENT)
        out["ann_reopen_first_search_s"] = time.perf_counter() - t0
        await mem.close()
    out["result_overlap@10"] = statistics.mean(
        len(set(a) & set(e)) / max(1, len(e))
        for a, e in zip(tops["ann"], tops["exact"], strict=True)
    )
    print(json.dumps(out), flush=True)
    (WORK / f"e2e-{args.size}-{args.data}.json").write_text(json.dumps(out, indent=1))


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _filtered_rows(n: int, shares: list[float], reps: int, rng: np.random.Generator) -> None:
    """The rows of ``filtered``'s table for one matrix of ``n`` rows."""
    from memvault.backends.sqlite._blas import single_threaded
    from memvault.backends.sqlite.vector_index import GATHER_BELOW, AgentIndex, IndexRow

    dim = 384
    index = AgentIndex(dim, capacity=n)
    for start in range(0, n, 50_000):
        k = min(50_000, n - start)
        vecs = rng.standard_normal((k, dim), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rows = [IndexRow(start + i + 1, 0, 1, 1, 2**62, 2**62, False) for i in range(k)]
        index.add(rows, vecs)
    q = rng.standard_normal(dim, dtype=np.float32)
    q /= np.linalg.norm(q)
    matrix = index.matrix[:, :n]
    for share in shares:
        mask = np.zeros(n, dtype=bool)
        mask[rng.choice(n, max(1, int(n * share)), replace=False)] = True
        pos = np.flatnonzero(mask)
        with single_threaded():
            full = _median_ms(lambda m=mask: np.where(m, q @ matrix, -np.inf), reps)
            gather = _median_ms(lambda p=pos: q @ matrix[:, p], reps)
            search = _median_ms(lambda m=mask: index.search(q, m, 50), reps)
        picks = "gather" if len(pos) * GATHER_BELOW <= n else "full"
        print(
            f"| {n:,} | {share:.1%} | {full:.2f} | {gather:.2f} | {search:.2f} | {picks} |",
            flush=True,
        )


def cmd_filtered(args: argparse.Namespace) -> None:
    """Masked exact search: the full product against scoring only the passing rows.

    For each size, a random unit-vector matrix in ``AgentIndex``'s layout and masks passing a
    share of the rows at random; times (median, one BLAS thread) the full product, the gather of
    the passing columns, and ``AgentIndex.search`` itself, which picks one by ``GATHER_BELOW``.
    """
    from memvault.backends.sqlite.vector_index import GATHER_BELOW

    rng = np.random.default_rng(5)
    print(f"GATHER_BELOW = {GATHER_BELOW} (gather when the mask passes <= {1 / GATHER_BELOW:.2%})")
    print("| rows | passing | full product ms | gather ms | AgentIndex.search ms | picks |")
    print("|---:|---:|---:|---:|---:|---|")
    shares = [float(x) for x in args.shares.split(",")]
    for n in (int(x) for x in args.sizes.split(",")):
        _filtered_rows(n, shares, args.reps, rng)
        gc.collect()


def cmd_table(args: argparse.Namespace) -> None:
    """Markdown table of the result files named on the command line."""
    print(
        "| n | library | build s | RSS MB | file MB | ef | p50 ms | p95 ms | recall@10 |"
        " add us | delete us |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.files:
        for row in json.loads(Path(name).read_text()):
            for key, m in row.items():
                if not key.startswith("ef"):
                    continue
                dele = row["del_us"]
                dele = f"{dele:.1f}" if isinstance(dele, float) else "not supported"
                print(
                    f"| {row['n']:,} | {row['lib']} | {row['build_s']:.1f} | {row['rss_mb']:.0f} |"
                    f" {row.get('file_mb', 0):.0f} | {key[2:] if key != 'ef0' else '-'} |"
                    f" {m['p50_ms']:.2f} | {m['p95_ms']:.2f} | {m['recall']:.3f} |"
                    f" {row['add_us']:.0f} | {dele} |"
                )
    for name in args.files:
        for row in json.loads(Path(name).read_text()):
            if "corrupt" in row:
                print(
                    f"\n{row['lib']} ({row['n']:,}): "
                    + "; ".join(f"{k}: {v}" for k, v in row["corrupt"].items())
                )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("embed")
    e.add_argument("--budget", type=float, default=300.0)
    e.add_argument("--extra-cache", nargs="*", default=[], help="more CachedEmbedder .npz files")
    r = sub.add_parser("run")
    r.add_argument("--size", type=int, default=100_000)
    r.add_argument("--libs", default="exact,usearch,hnswlib,faiss")
    r.add_argument("--ef", default="32,64,128")
    r.add_argument("--build-threads", type=int, default=2)
    r.add_argument("--corrupt", action=argparse.BooleanOptionalAction, default=True)
    r.add_argument("--tag", default="main")
    r.add_argument("--data", choices=("noise", "blend"), default="noise")
    r.add_argument("--chunk", type=int, default=0, help="build in chunks of this many rows")
    r.add_argument("--build-budget", type=float, default=1e9, help="stop adding chunks after")
    e2 = sub.add_parser("e2e")
    e2.add_argument("--size", type=int, default=100_000)
    e2.add_argument("--queries", type=int, default=200)
    e2.add_argument("--min-rows", type=int, default=20_000)
    e2.add_argument("--data", choices=("noise", "blend"), default="noise")
    f = sub.add_parser("filtered")
    f.add_argument("--sizes", default="50000,100000,1000000")
    f.add_argument("--shares", default="0.005,0.01,0.02,0.04,0.0625")
    f.add_argument("--reps", type=int, default=7)
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    args = ap.parse_args()
    commands = {
        "embed": cmd_embed,
        "run": cmd_run,
        "e2e": cmd_e2e,
        "filtered": cmd_filtered,
        "table": cmd_table,
    }
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
