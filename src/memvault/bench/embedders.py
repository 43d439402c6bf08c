"""Per-category embedder evaluation: how well each embedder retrieves each kind of memory.

General-purpose embedding leaderboards (MTEB) do not predict memory retrieval (the design notes
quote a slightly *negative* correlation), so memvault measures embedders the way LMEB does: one
retrieval task per memory category, scored by NDCG@10 and Recall@10 over a pool of passages.

A task set (:class:`EvalSuite`) comes from one of three sources:

* :func:`suite_from_locomo` - LoCoMo conversations. LoCoMo is dialogue memory, so its questions
  about the speakers (single-hop, multi-hop, open-domain) form the *social* task and its temporal
  questions the *episodic* task; the passages are dialogue turns, the gold ones the evidence.
* :func:`suite_from_longmemeval` - LongMemEval: temporal-reasoning and multi-session questions are
  *episodic*, single-session-user and knowledge-update *semantic*, single-session-preference
  *social*, and single-session-assistant (what the assistant explained or recommended: mostly
  how-to answers) *procedural*. Passages are haystack turns, the gold ones marked ``has_answer``.
* :func:`suite_from_entries` - a memvault store. Stores hold no questions, so each task is an
  inverse-cloze task (Lee et al., 2019): one sentence of a memory is the query and the rest of
  that memory the passage to find, among the other memories of the same category.

Each category's pool is its gold passages plus distractors drawn (with a fixed seed) from the same
source, capped at ``max_passages``, so the cost is bounded and every embedder sees the same pool.
:func:`evaluate_embedders` then embeds each pool once per embedder and reports quality, speed
(documents embedded per second, median single-query latency) and resident memory.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import random
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memvault.bench.metrics import ndcg_at_k, recall_at_k
from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.models import MemoryCategory, MemoryEntry
from memvault.protocols import Embedder

__all__ = [
    "EVAL_CATEGORIES",
    "CategoryResult",
    "CategoryTask",
    "EmbedderReport",
    "EvalQuery",
    "EvalSuite",
    "available_embedder_specs",
    "evaluate_embedder",
    "evaluate_embedders",
    "rank_passages",
    "render_reports",
    "suite_from_entries",
    "suite_from_locomo",
    "suite_from_longmemeval",
]

logger = logging.getLogger(__name__)

EVAL_CATEGORIES: tuple[MemoryCategory, ...] = (
    MemoryCategory.EPISODIC,
    MemoryCategory.PROCEDURAL,
    MemoryCategory.SEMANTIC,
    MemoryCategory.SOCIAL,
)
"""The categories LMEB has tasks for (working memory lives in context, not in a store)."""

DEFAULT_K = 10
DEFAULT_MAX_QUERIES = 100
DEFAULT_MAX_PASSAGES = 1000

_LOCOMO_CATEGORY = {
    "temporal": MemoryCategory.EPISODIC,
    "single-hop": MemoryCategory.SOCIAL,
    "multi-hop": MemoryCategory.SOCIAL,
    "open-domain": MemoryCategory.SOCIAL,
}
_LONGMEMEVAL_CATEGORY = {
    "temporal-reasoning": MemoryCategory.EPISODIC,
    "multi-session": MemoryCategory.EPISODIC,
    "single-session-user": MemoryCategory.SEMANTIC,
    "knowledge-update": MemoryCategory.SEMANTIC,
    "single-session-preference": MemoryCategory.SOCIAL,
    "single-session-assistant": MemoryCategory.PROCEDURAL,
}


@dataclass(frozen=True, slots=True)
class EvalQuery:
    """A query and the ids of the passages that answer it."""

    text: str
    gold: frozenset[str]


@dataclass(frozen=True, slots=True)
class CategoryTask:
    """One category's retrieval task: queries ranked against a shared pool of passages."""

    category: MemoryCategory
    queries: tuple[EvalQuery, ...]
    passage_ids: tuple[str, ...]
    passages: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvalSuite:
    """The tasks built from one source (a dataset file or a store), keyed by category."""

    source: str
    tasks: Mapping[MemoryCategory, CategoryTask]

    @property
    def query_count(self) -> int:
        """Total number of queries over every task."""
        return sum(len(t.queries) for t in self.tasks.values())


@dataclass(frozen=True, slots=True)
class CategoryResult:
    """An embedder's scores on one category (means over the task's queries)."""

    category: MemoryCategory
    queries: int
    passages: int
    ndcg_at_10: float
    recall_at_10: float


@dataclass(frozen=True, slots=True)
class EmbedderReport:
    """An embedder's results over a suite: quality per category, speed and memory."""

    spec: str
    model_id: str
    categories: tuple[CategoryResult, ...]
    embeddings_per_second: float
    query_p50_ms: float
    memory_mb: float
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (the CLI's ``--json`` output)."""
        return {
            "spec": self.spec,
            "model_id": self.model_id,
            "error": self.error,
            "embeddings_per_second": round(self.embeddings_per_second, 2),
            "query_p50_ms": round(self.query_p50_ms, 3),
            "memory_mb": round(self.memory_mb, 1),
            "categories": {
                c.category.value: {
                    "queries": c.queries,
                    "passages": c.passages,
                    "ndcg@10": round(c.ndcg_at_10, 4),
                    "recall@10": round(c.recall_at_10, 4),
                }
                for c in self.categories
            },
        }


# -- building suites ------------------------------------------------------------------------------


@dataclass
class _Builder:
    """Collects queries and passages per category, then samples bounded pools."""

    max_queries: int
    max_passages: int
    seed: int
    queries: dict[MemoryCategory, list[EvalQuery]] = field(default_factory=dict)
    passages: dict[str, str] = field(default_factory=dict)
    # Distractor candidates per category: passages of the same source as the category's gold.
    distractors: dict[MemoryCategory, list[str]] = field(default_factory=dict)

    def add_query(self, category: MemoryCategory, text: str, gold: Iterable[str]) -> None:
        gold_set = frozenset(g for g in gold if g in self.passages)
        if text.strip() and gold_set:
            self.queries.setdefault(category, []).append(EvalQuery(text.strip(), gold_set))

    def build(self, source: str) -> EvalSuite:
        rng = random.Random(self.seed)
        tasks: dict[MemoryCategory, CategoryTask] = {}
        for category in EVAL_CATEGORIES:
            queries = self.queries.get(category, [])
            if not queries:
                continue
            if len(queries) > self.max_queries:
                queries = rng.sample(queries, self.max_queries)
            gold_ids = sorted({g for q in queries for g in q.gold})
            if len(gold_ids) > self.max_passages:
                # Keep whole queries until the gold alone would overflow the pool.
                kept: list[EvalQuery] = []
                ids: set[str] = set()
                for q in queries:
                    if len(ids | q.gold) > self.max_passages:
                        break
                    kept.append(q)
                    ids |= q.gold
                queries, gold_ids = kept, sorted(ids)
            room = self.max_passages - len(gold_ids)
            gold_set = set(gold_ids)
            candidates = [p for p in self.distractors.get(category, []) if p not in gold_set]
            extra = rng.sample(candidates, min(room, len(candidates))) if room > 0 else []
            pool = gold_ids + sorted(extra)
            tasks[category] = CategoryTask(
                category=category,
                queries=tuple(queries),
                passage_ids=tuple(pool),
                passages=tuple(self.passages[p] for p in pool),
            )
        if not tasks:
            raise MemoryValidationError(f"{source}: no category has a usable query/passage pair")
        return EvalSuite(source=source, tasks=tasks)


def suite_from_locomo(
    path: str | Path,
    *,
    max_queries: int = DEFAULT_MAX_QUERIES,
    max_passages: int = DEFAULT_MAX_PASSAGES,
    seed: int = 0,
) -> EvalSuite:
    """Build the episodic and social tasks from a LoCoMo file (see the module docstring).

    Raises:
        MemoryValidationError: the file is not LoCoMo, or yields no usable pair.
    """
    from memvault.bench.datasets import load_locomo

    data = load_locomo(path)
    b = _Builder(max_queries, max_passages, seed)
    for conv in data.conversations:
        ids = []
        for turn in conv.turns:
            pid = f"{conv.sample_id}:{turn.dia_id}"
            b.passages[pid] = f"{turn.speaker}: {turn.text}"
            ids.append(pid)
        for category in set(_LOCOMO_CATEGORY.values()):
            b.distractors.setdefault(category, []).extend(ids)
        for qa in conv.qas:
            qa_category = _LOCOMO_CATEGORY.get(qa.category_name)
            if qa_category is not None:
                b.add_query(
                    qa_category, qa.question, (f"{conv.sample_id}:{e}" for e in qa.evidence)
                )
    return b.build(f"locomo:{Path(path).name}")


def suite_from_longmemeval(
    path: str | Path,
    *,
    max_queries: int = DEFAULT_MAX_QUERIES,
    max_passages: int = DEFAULT_MAX_PASSAGES,
    seed: int = 0,
) -> EvalSuite:
    """Build the four category tasks from a LongMemEval file (see the module docstring).

    Abstention questions (no answer in the history) are skipped: they have no gold passage.

    Raises:
        MemoryValidationError: the file is not LongMemEval, or yields no usable pair.
    """
    from memvault.bench.datasets import load_longmemeval

    data = load_longmemeval(path)
    b = _Builder(max_queries, max_passages, seed)
    for item in data.items:
        category = _LONGMEMEVAL_CATEGORY.get(item.question_type)
        if category is None or item.is_abstention:
            continue
        gold: list[str] = []
        for session in item.sessions:
            for turn in session.turns:
                # Haystacks of different questions share sessions; the id keeps one copy.
                pid = f"{session.session_id}:{turn.index}"
                b.passages[pid] = f"{turn.role}: {turn.content}"
                b.distractors.setdefault(category, []).append(pid)
                if turn.has_answer:
                    gold.append(pid)
        b.add_query(category, item.question, gold)
    for category, ids in b.distractors.items():
        b.distractors[category] = sorted(set(ids))
    return b.build(f"longmemeval:{Path(path).name}")


_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_MIN_QUERY_WORDS = 4


def suite_from_entries(
    entries: Iterable[MemoryEntry | Mapping[str, Any]],
    *,
    max_queries: int = DEFAULT_MAX_QUERIES,
    max_passages: int = DEFAULT_MAX_PASSAGES,
    seed: int = 0,
    source: str = "store",
) -> EvalSuite:
    """Build inverse-cloze tasks from a store's memories (see the module docstring).

    A memory with at least two sentences gives one query (its longest sentence) whose gold is
    the rest of the memory; every memory of the category (whole) is a distractor.

    Raises:
        MemoryValidationError: no memory has two sentences of at least four words.
    """
    b = _Builder(max_queries, max_passages, seed)
    pending: list[tuple[MemoryCategory, str, str]] = []
    for entry in entries:
        if isinstance(entry, MemoryEntry):
            entry_id, raw_category, content = entry.id, entry.category, entry.content
        else:  # an export record
            entry_id, raw_category = str(entry["id"]), entry["category"]
            content = str(entry["content"])
        category = MemoryCategory(raw_category)
        if category not in EVAL_CATEGORIES:
            continue
        b.passages[entry_id] = content
        b.distractors.setdefault(category, []).append(entry_id)
        sentences = [s.strip() for s in _SENTENCE_RE.split(content) if s.strip()]
        if len(sentences) < 2:
            continue
        query = max(sentences, key=len)
        rest = " ".join(s for s in sentences if s is not query)
        if len(query.split()) < _MIN_QUERY_WORDS or len(rest.split()) < _MIN_QUERY_WORDS:
            continue
        pid = f"{entry_id}#rest"
        b.passages[pid] = rest
        pending.append((category, query, pid))
    for category, query, pid in pending:
        b.add_query(category, query, [pid])
    return b.build(source)


# -- running embedders ----------------------------------------------------------------------------


def rank_passages(
    query_vectors: np.ndarray, passage_vectors: np.ndarray, k: int
) -> list[list[int]]:
    """Indices of the ``k`` most similar passages for each query (cosine on unit vectors)."""
    scores = (
        np.asarray(query_vectors, dtype=np.float32)
        @ np.asarray(passage_vectors, dtype=np.float32).T
    )
    k = min(k, scores.shape[1])
    if k == 0:
        return [[] for _ in range(scores.shape[0])]
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    rows = np.arange(scores.shape[0])[:, None]
    order = np.argsort(-scores[rows, top], axis=1, kind="stable")
    return [list(map(int, r)) for r in top[rows, order]]


def _rss_mb() -> float:
    """Resident memory of this process in MiB (current on Linux, the peak elsewhere)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError, AttributeError):
        import resource  # no /proc (macOS): the peak is the best the platform offers

        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024


def evaluate_embedder(
    embedder: Embedder,
    suite: EvalSuite,
    *,
    spec: str | None = None,
    k: int = DEFAULT_K,
    query_sample: int = 50,
    progress: Callable[[str, int, int], None] | None = None,
) -> EmbedderReport:
    """Score one embedder on every task of ``suite``.

    Speed: ``embeddings_per_second`` is passages embedded per second of batch work over all
    pools; ``query_p50_ms`` the median latency of single :meth:`embed_query` calls on up to
    ``query_sample`` queries (each query text is new to the embedder's cache); the model is loaded
    before timing starts. ``memory_mb`` is the growth of the process's resident memory while the
    embedder loaded and ran.
    """
    rss_before = _rss_mb()
    # Load the model outside the timed work: speed is per-embedding cost, and the load shows up
    # in the memory figure instead.
    embedder.embed_documents(["warm-up"])
    results: list[CategoryResult] = []
    embedded = 0
    embed_seconds = 0.0
    latencies: list[float] = []
    total = len(suite.tasks)
    for done, task in enumerate(suite.tasks.values()):
        if progress is not None:
            progress(spec or embedder.model_id, done, total)
        started = time.perf_counter()
        passage_vectors = embedder.embed_documents(list(task.passages))
        embed_seconds += time.perf_counter() - started
        embedded += len(task.passages)
        query_texts = [q.text for q in task.queries]
        for text in query_texts[: max(0, query_sample - len(latencies))]:
            # A suffix unique to this measurement keeps query caches from answering.
            started = time.perf_counter()
            embedder.embed_query(text + " ")
            latencies.append((time.perf_counter() - started) * 1000)
        query_vectors = embedder.embed_documents(query_texts)
        ranked = rank_passages(query_vectors, passage_vectors, k)
        ndcg: list[float] = []
        recall: list[float] = []
        for query, top in zip(task.queries, ranked, strict=True):
            ids = [task.passage_ids[i] for i in top]
            ndcg.append(ndcg_at_k(query.gold, ids, k))
            recall.append(recall_at_k(query.gold, ids, k))
        results.append(
            CategoryResult(
                category=task.category,
                queries=len(task.queries),
                passages=len(task.passages),
                ndcg_at_10=statistics.fmean(ndcg),
                recall_at_10=statistics.fmean(recall),
            )
        )
    if progress is not None:
        progress(spec or embedder.model_id, total, total)
    return EmbedderReport(
        spec=spec or embedder.model_id,
        model_id=embedder.model_id,
        categories=tuple(results),
        embeddings_per_second=embedded / embed_seconds if embed_seconds > 0 else math.inf,
        query_p50_ms=statistics.median(latencies) if latencies else 0.0,
        memory_mb=max(0.0, _rss_mb() - rss_before),
    )


def available_embedder_specs(env: Mapping[str, str] | None = None) -> list[str]:
    """The embedder specs that can run here: the bundled models, hashing, and an
    ``openai:<model>`` one when ``$MEMVAULT_EMBEDDINGS_BASE_URL`` and
    ``$MEMVAULT_EMBEDDINGS_MODEL`` name a server and model."""
    from memvault.embeddings._model_files import locate_model_dir
    from memvault.embeddings.minilm_l3_onnx import locate_minilm_l3_graph

    env = os.environ if env is None else env
    specs: list[str] = []
    try:
        locate_model_dir(None)
        specs += ["minilm", "minilm-numpy"]
        locate_minilm_l3_graph()
        specs.append("minilm-l3")
    except MemoryConfigError:
        pass  # the model (or the optional L3 graph) is not installed: not available here
    specs.append("hashing")
    if env.get("MEMVAULT_EMBEDDINGS_BASE_URL") and env.get("MEMVAULT_EMBEDDINGS_MODEL"):
        specs.append(f"openai:{env['MEMVAULT_EMBEDDINGS_MODEL']}")
    return specs


def evaluate_embedders(
    specs: Sequence[str],
    suite: EvalSuite,
    *,
    k: int = DEFAULT_K,
    factory: Callable[[str], Embedder] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[EmbedderReport]:
    """Run :func:`evaluate_embedder` for every spec; an embedder that fails to load or run is
    reported with its error instead of stopping the others."""
    if factory is None:
        from memvault.embeddings import create_embedder

        factory = create_embedder
    reports = []
    for spec in specs:
        try:
            embedder = factory(spec)
            reports.append(evaluate_embedder(embedder, suite, spec=spec, k=k, progress=progress))
        except Exception as exc:  # one broken embedder must not hide the others' results
            logger.warning(
                "embedders.eval_failed spec=%s error=%s",
                spec,
                exc,
                extra={"event": "embedders.eval_failed", "spec": spec},
            )
            reports.append(EmbedderReport(spec, "?", (), 0.0, 0.0, 0.0, error=str(exc)))
        gc.collect()
    return reports


def render_reports(reports: Sequence[EmbedderReport], suite: EvalSuite) -> str:
    """A plain-text table: one row per embedder, NDCG@10 / Recall@10 per category, speed."""
    cats = [c for c in EVAL_CATEGORIES if c in suite.tasks]
    head = ["embedder"] + [f"{c.value} nDCG/R@10" for c in cats] + ["emb/s", "q p50 ms", "mem MB"]
    rows = [head]
    for r in reports:
        if r.error is not None:
            rows.append([r.spec, f"error: {r.error}"])
            continue
        by_cat = {c.category: c for c in r.categories}
        row = [r.spec]
        for c in cats:
            res = by_cat.get(c)
            row.append("n/a" if res is None else f"{res.ndcg_at_10:.3f}/{res.recall_at_10:.3f}")
        row += [f"{r.embeddings_per_second:.0f}", f"{r.query_p50_ms:.1f}", f"{r.memory_mb:.0f}"]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(len(head))]
    lines = [f"source: {suite.source}"]
    sizes = ", ".join(
        f"{t.category.value} {len(t.queries)} queries / {len(t.passages)} passages"
        for t in suite.tasks.values()
    )
    lines.append(f"tasks: {sizes}")
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines)
