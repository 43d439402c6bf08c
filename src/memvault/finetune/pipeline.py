"""The five stages of embedding fine-tuning, each resumable from its files on disk.

1. **generate** - passages from the organisation's documents (and, optionally, memories), and
   for each passage ``queries_per_passage`` search queries written by an :class:`LLMProvider`
   (or read from a ``pairs_file``). Passages are split into train and held-out validation sets
   *by passage*, so evaluation measures passages the trainer never saw.
2. **mine** - the base model embeds every passage (capped at ``passage_max_tokens``) and every
   query (``query_max_tokens``); for each training query the ``hard_negatives`` most similar
   passages that are not its own become its hard negatives.
3. **train** - contrastive training with InfoNCE (temperature ``tau``) on in-batch plus hard
   negatives: a linear adapter on the frozen base (numpy, always available) or the whole
   bi-encoder (torch, the ``finetune`` extra).
4. **evaluate** - NDCG@10 / Recall@10 of checkpoint and base on the held-out queries against
   every passage, with the stage-2 token caps so both sides see the same text.
5. **deploy** - the checkpoint becomes the registry's active embedder (unless the plan says
   not to, or it did not beat the base and ``require_improvement`` is on). Its model id differs
   from the base's, so stores must be re-embedded (``memvault reindex``).

Every stage logs ``memory.fine_tune.stage_start`` / ``stage_complete`` and checks the run's
cancel marker between batches (:class:`~memvault.errors.FineTuneCancelledError`). Inputs that
overflow a token cap are truncated and reported with a ``memory.fine_tune.encode_truncation_likely``
warning, so silent quality loss is visible.
"""

from __future__ import annotations

import json
import logging
import random
import re
import statistics
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memvault.bench.metrics import ndcg_at_k, recall_at_k
from memvault.errors import FineTuneCancelledError, MemoryValidationError
from memvault.finetune.config import (
    EvalMetrics,
    FineTunePlan,
    FineTuneRun,
    RunStatus,
    Stage,
    StageRecord,
    StageStatus,
)
from memvault.finetune.state import RunStore, activate, checkpoints_dir, now, write_json
from memvault.models import ChatMessage

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from memvault.protocols import Embedder, LLMProvider

__all__ = [
    "DOC_SUFFIXES",
    "Progress",
    "RunContext",
    "TokenCapper",
    "chunk_document",
    "deploy",
    "evaluate",
    "generate",
    "load_documents",
    "mine",
    "run_stage",
    "run_stage_async",
    "run_sync_stages",
    "torch_available",
    "train",
]

logger = logging.getLogger(__name__)

DOC_SUFFIXES = (".md", ".markdown", ".txt", ".rst")
_CHUNK_WORDS = 120
_MIN_PASSAGE_WORDS = 8
_K = 10

Progress = Callable[[Stage, int, int], None]
"""``progress(stage, done, total)``: called as a long stage advances."""


@dataclass
class RunContext:
    """What a stage needs: the run, where its files go, and how to report and cancel."""

    store: RunStore
    run_id: str
    registry: Path
    progress: Progress | None = None
    llm: LLMProvider | None = None
    extra_passages: Sequence[tuple[str, str]] = ()
    actor: str = "fine-tune"
    _stage: Stage | None = field(default=None, repr=False)

    @property
    def run_dir(self) -> Path:
        """The run's directory."""
        return self.store.run_dir(self.run_id)

    def stage_dir(self, stage: Stage) -> Path:
        """Where ``stage`` writes its files (created)."""
        path = self.run_dir / stage.value
        path.mkdir(parents=True, exist_ok=True)
        return path

    def load(self) -> FineTuneRun:
        """The run's current state."""
        return self.store.load(self.run_id)

    def check_cancel(self) -> None:
        """Raise :class:`FineTuneCancelledError` once a cancel was requested."""
        if self.store.cancel_requested(self.run_id):
            stage = self._stage.value if self._stage else None
            raise FineTuneCancelledError(
                f"fine-tune run {self.run_id} was cancelled"
                + (f" during stage {stage}" if stage else ""),
                run_id=self.run_id,
                stage=stage,
            )

    def report(self, done: int, total: int) -> None:
        """Report progress of the current stage (and give a cancel the chance to land)."""
        if self.progress is not None and self._stage is not None:
            self.progress(self._stage, done, total)
        self.check_cancel()


# -- token caps -----------------------------------------------------------------------------------


class TokenCapper:
    """Truncates texts to a token cap with the MiniLM tokenizer, and counts what it cut.

    The cap is also bounded by the base model's window (256 tokens for MiniLM) when the base is
    a local MiniLM: text past the window is dropped by the model anyway, and cutting it here
    makes mining, training and evaluation see exactly the same tokens.
    """

    def __init__(self, window: int | None) -> None:
        from tokenizers import Tokenizer

        from memvault.embeddings._model_files import load_model_files

        files = load_model_files(None)
        tok: Tokenizer = Tokenizer.from_file(str(files.tokenizer))
        tok.no_padding()
        tok.no_truncation()
        self._tok = tok
        self._window = window

    def cap(self, texts: Sequence[str], max_tokens: int, kind: str, run_id: str) -> list[str]:
        """``texts`` cut to ``max_tokens`` tokens (including [CLS]/[SEP]); warns when any was."""
        limit = max_tokens if self._window is None else min(max_tokens, self._window)
        out: list[str] = []
        cut = 0
        for text, enc in zip(texts, self._tok.encode_batch(list(texts)), strict=True):
            if len(enc.ids) > limit:
                # offsets index the original string; [CLS] takes position 0, so the last kept
                # word piece is at limit - 2.
                end = enc.offsets[limit - 2][1]
                out.append(text[:end])
                cut += 1
            else:
                out.append(text)
        if cut:
            logger.warning(
                "memory.fine_tune.encode_truncation_likely run_id=%s kind=%s cap=%d "
                "truncated=%d/%d",
                run_id,
                kind,
                limit,
                cut,
                len(texts),
                extra={
                    "event": "memory.fine_tune.encode_truncation_likely",
                    "run_id": run_id,
                    "kind": kind,
                    "cap": limit,
                    "truncated": cut,
                    "total": len(texts),
                },
            )
        return out


def _window_of(base_model: str) -> int | None:
    spec = base_model.strip().lower()
    # The token window of each bundled model (longer inputs are truncated by the model).
    if spec in ("", "default", "minilm", "minilm-numpy"):
        return 256  # all-MiniLM-L6-v2, the default
    if spec in ("minilm-l3", "paraphrase-minilm-l3"):
        return 128  # paraphrase-MiniLM-L3-v2
    return None


# -- stage 1: generate ----------------------------------------------------------------------------


def chunk_document(text: str, max_words: int = _CHUNK_WORDS) -> list[str]:
    """Split a document into passages: paragraphs merged up to ``max_words`` words each."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for para in paragraphs:
        if not para:
            continue
        n = len(para.split())
        if current and words + n > max_words:
            chunks.append(" ".join(current))
            current, words = [], 0
        current.append(para)
        words += n
    if current:
        chunks.append(" ".join(current))
    return [c for c in chunks if len(c.split()) >= _MIN_PASSAGE_WORDS]


def load_documents(source_dir: Path) -> list[tuple[str, str]]:
    """``(passage id, text)`` for every chunk of every document under ``source_dir``."""
    passages: list[tuple[str, str]] = []
    for path in sorted(source_dir.rglob("*")):
        if path.suffix.lower() not in DOC_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(source_dir).as_posix()
        passages += [(f"{rel}#{i}", c) for i, c in enumerate(chunk_document(text))]
    return passages


_QUERY_PROMPT = (
    "You write search queries for a retrieval benchmark. Given a passage from an "
    "organisation's internal documents, write {n} different, realistic questions or search "
    "queries an employee would type to find this exact passage. Use the passage's own "
    "terminology, keep each under 25 words, and do not copy whole sentences. Reply with JSON "
    'only: {{"queries": ["...", "..."]}}'
)


def _parse_queries(text: str) -> list[str]:
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(text[start : end + 1])
            raw = data.get("queries") if isinstance(data, dict) else None
            if isinstance(raw, list):
                return [q.strip() for q in raw if isinstance(q, str) and q.strip()]
        except ValueError:
            pass
    # Not JSON: one query per non-empty line, list markers stripped.
    return [
        re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", line).strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith(("{", "}", "```"))
    ]


async def _llm_queries(
    ctx: RunContext, plan: FineTunePlan, passages: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    llm = ctx.llm
    if llm is None:
        raise MemoryValidationError(
            "synthetic query generation needs an LLM provider (configure one), or give the "
            "plan a pairs_file of query/passage pairs"
        )
    from memvault.llm.errors import ProviderError

    pairs: list[tuple[str, str]] = []
    truncated_inputs = 0
    truncated_outputs = 0
    failures = 0
    for i, (pid, text) in enumerate(passages):
        ctx.report(i, len(passages))
        body = text
        if len(body) > plan.llm_max_input_chars:
            body = body[: plan.llm_max_input_chars]
            truncated_inputs += 1
        messages = [
            ChatMessage(role="system", content=_QUERY_PROMPT.format(n=plan.queries_per_passage)),
            ChatMessage(role="user", content=body),
        ]
        try:
            response = await llm.complete(messages, temperature=0.7, max_tokens=plan.llm_max_tokens)
        except ProviderError as exc:
            failures += 1
            logger.warning(
                "memory.fine_tune.generation_failed run_id=%s passage=%s error=%s",
                ctx.run_id,
                pid,
                exc,
                extra={"event": "memory.fine_tune.generation_failed", "run_id": ctx.run_id},
            )
            continue
        if response.finish_reason == "length":
            truncated_outputs += 1
        for query in _parse_queries(response.text)[: plan.queries_per_passage]:
            pairs.append((query, pid))
    ctx.report(len(passages), len(passages))
    if truncated_inputs or truncated_outputs:
        logger.warning(
            "memory.fine_tune.generation_truncated run_id=%s inputs=%d outputs=%d "
            "max_input_chars=%d max_tokens=%d",
            ctx.run_id,
            truncated_inputs,
            truncated_outputs,
            plan.llm_max_input_chars,
            plan.llm_max_tokens,
            extra={
                "event": "memory.fine_tune.generation_truncated",
                "run_id": ctx.run_id,
                "inputs": truncated_inputs,
                "outputs": truncated_outputs,
            },
        )
    if failures == len(passages) and passages:
        raise MemoryValidationError(
            f"the LLM failed on every passage ({failures}); see the "
            "memory.fine_tune.generation_failed warnings"
        )
    return pairs


def _read_pairs_file(path: Path) -> list[tuple[str, str]]:
    pairs = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise MemoryValidationError(f"cannot read pairs_file {path}: {exc}") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            query, passage = str(item["query"]).strip(), str(item["passage"]).strip()
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryValidationError(
                f"{path}:{n}: expected a JSON object with 'query' and 'passage' ({exc})"
            ) from exc
        if query and passage:
            pairs.append((query, passage))
    return pairs


async def generate(ctx: RunContext, plan: FineTunePlan) -> dict[str, Any]:
    """Stage 1: write ``passages.jsonl`` and ``pairs.jsonl`` (with the train/val split)."""
    out = ctx.stage_dir(Stage.GENERATE)
    passages: dict[str, str] = {}
    if plan.source_dir is not None:
        source = Path(plan.source_dir).expanduser()
        if not source.is_dir():
            raise MemoryValidationError(f"source_dir {source} is not a directory")
        passages.update(load_documents(source))
    passages.update(ctx.extra_passages)
    pairs: list[tuple[str, str]]
    if plan.pairs_file is not None:
        # Pair texts are compared stripped (the pairs file is read stripped), so a passage
        # that also arrives as a document or memory is one passage, not a duplicate distractor.
        by_text = {text.strip(): pid for pid, text in passages.items()}
        pairs = []
        for query, text in _read_pairs_file(Path(plan.pairs_file).expanduser()):
            pid = by_text.get(text)
            if pid is None:
                pid = f"pair#{len(by_text)}"
                by_text[text] = pid
                passages[pid] = text
            pairs.append((query, pid))
    else:
        items = sorted(passages.items())
        if plan.max_passages is not None and len(items) > plan.max_passages:
            items = random.Random(plan.seed).sample(items, plan.max_passages)
        pairs = await _llm_queries(ctx, plan, items)
    with_queries = sorted({pid for _, pid in pairs})
    if len(with_queries) < 2:
        raise MemoryValidationError(
            f"only {len(with_queries)} passage(s) got queries: fine-tuning needs at least 2 "
            "(one to train on, one to validate)"
        )
    rng = random.Random(plan.seed)
    shuffled = with_queries[:]
    rng.shuffle(shuffled)
    n_val = min(len(shuffled) - 1, max(1, round(len(shuffled) * plan.validation_fraction)))
    val = set(shuffled[:n_val])
    with (out / "passages.jsonl").open("w", encoding="utf-8") as fh:
        for pid, text in sorted(passages.items()):
            fh.write(json.dumps({"id": pid, "text": text}) + "\n")
    with (out / "pairs.jsonl").open("w", encoding="utf-8") as fh:
        for query, pid in pairs:
            split = "val" if pid in val else "train"
            fh.write(json.dumps({"query": query, "passage_id": pid, "split": split}) + "\n")
    n_train = sum(1 for _, pid in pairs if pid not in val)
    return {
        "passages": len(passages),
        "pairs": len(pairs),
        "train_pairs": n_train,
        "val_pairs": len(pairs) - n_train,
        "source": "pairs_file" if plan.pairs_file else "llm",
    }


# -- shared readers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Data:
    passage_ids: list[str]
    passages: list[str]
    queries: list[str]
    positives: list[int]  # passage index of each query
    splits: list[str]


def _read_data(ctx: RunContext) -> _Data:
    gen = ctx.run_dir / Stage.GENERATE.value
    ids: list[str] = []
    texts: list[str] = []
    for line in (gen / "passages.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        ids.append(item["id"])
        texts.append(item["text"])
    index = {pid: i for i, pid in enumerate(ids)}
    queries, positives, splits = [], [], []
    for line in (gen / "pairs.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        queries.append(item["query"])
        positives.append(index[item["passage_id"]])
        splits.append(item["split"])
    return _Data(ids, texts, queries, positives, splits)


def _embed(embedder: Embedder, texts: Sequence[str], ctx: RunContext, batch: int = 64) -> Any:
    out = []
    for start in range(0, len(texts), batch):
        ctx.report(start, len(texts))
        out.append(np.asarray(embedder.embed_documents(list(texts[start : start + batch]))))
    ctx.report(len(texts), len(texts))
    if not out:
        return np.zeros((0, embedder.dimension), np.float32)
    return np.concatenate(out).astype(np.float32)


def _capped(ctx: RunContext, plan: FineTunePlan, data: _Data) -> tuple[list[str], list[str]]:
    capper = TokenCapper(_window_of(plan.base_model))
    passages = capper.cap(data.passages, plan.passage_max_tokens, "passage", ctx.run_id)
    queries = capper.cap(data.queries, plan.query_max_tokens, "query", ctx.run_id)
    return passages, queries


# -- stage 2: mine --------------------------------------------------------------------------------


def mine(ctx: RunContext, plan: FineTunePlan) -> dict[str, Any]:
    """Stage 2: base-model vectors of every passage and query, and hard negatives per query."""
    from memvault.embeddings import create_embedder

    out = ctx.stage_dir(Stage.MINE)
    data = _read_data(ctx)
    passages, queries = _capped(ctx, plan, data)
    base = create_embedder(plan.base_model)
    p_vec = _embed(base, passages, ctx)
    q_vec = _embed(base, queries, ctx)
    scores = q_vec @ p_vec.T
    negatives: list[list[int]] = []
    k = plan.hard_negatives
    for i, row in enumerate(scores):
        if data.splits[i] != "train" or k == 0:
            negatives.append([])
            continue
        order = np.argsort(-row, kind="stable")
        # Passages sharing the gold text (duplicates) are not negatives either.
        gold_text = data.passages[data.positives[i]]
        picked = [
            int(j)
            for j in order[: k + 8]
            if j != data.positives[i] and data.passages[j] != gold_text
        ][:k]
        negatives.append(picked)
    np.savez(out / "base_vectors.npz", passages=p_vec, queries=q_vec)
    write_json(out / "negatives.json", {"base_model_id": base.model_id, "negatives": negatives})
    train_rows = [i for i, s in enumerate(data.splits) if s == "train"]
    hit = [data.positives[i] in set(np.argsort(-scores[i])[:_K].tolist()) for i in train_rows]
    return {
        "passages": len(passages),
        "queries": len(queries),
        "hard_negatives_per_query": k,
        "base_model_id": base.model_id,
        "base_train_recall_at_10": round(statistics.fmean(hit), 4) if hit else None,
    }


# -- stage 3: train -------------------------------------------------------------------------------


def resolve_trainer(plan: FineTunePlan) -> str:
    """``adapter`` or ``biencoder``: what ``trainer="auto"`` means here (torch installed?)."""
    if plan.trainer != "auto":
        return plan.trainer
    if torch_available() and _window_of(plan.base_model) == 256:
        return "biencoder"
    return "adapter"


def torch_available() -> bool:
    """True when torch can be imported here (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken install, or torch blocked in sys.modules
        return False


def train(ctx: RunContext, plan: FineTunePlan, trainer: str) -> dict[str, Any]:
    """Stage 3: train a checkpoint with InfoNCE; returns its id and directory."""
    from memvault.embeddings.adapter import CheckpointMeta
    from memvault.finetune.state import new_id

    out = ctx.stage_dir(Stage.TRAIN)
    data = _read_data(ctx)
    mined = json.loads((ctx.run_dir / Stage.MINE.value / "negatives.json").read_text("utf-8"))
    negatives: list[list[int]] = mined["negatives"]
    train_rows = [i for i, s in enumerate(data.splits) if s == "train"]
    checkpoint_id = new_id("ckpt")
    ckpt_dir = checkpoints_dir(ctx.registry) / checkpoint_id
    meta = CheckpointMeta(
        checkpoint_id=checkpoint_id,
        kind="adapter" if trainer == "adapter" else "biencoder",
        base_model=plan.base_model,
        base_model_id=str(mined["base_model_id"]),
        created_at=now(),
        run_id=ctx.run_id,
    )
    if trainer == "adapter":
        from memvault.finetune.trainers import train_adapter

        with np.load(ctx.run_dir / Stage.MINE.value / "base_vectors.npz") as vectors:
            p_vec, q_vec = vectors["passages"], vectors["queries"]
        result = train_adapter(
            q_vec,
            p_vec,
            [(i, data.positives[i], negatives[i]) for i in train_rows],
            plan=plan,
            ctx=ctx,
            checkpoint_dir=ckpt_dir,
            meta=meta,
        )
    elif trainer == "biencoder":
        from memvault.finetune.torch_trainer import train_biencoder

        passages, queries = _capped(ctx, plan, data)
        result = train_biencoder(
            queries,
            passages,
            [(i, data.positives[i], negatives[i]) for i in train_rows],
            plan=plan,
            ctx=ctx,
            checkpoint_dir=ckpt_dir,
            meta=meta,
        )
    else:  # pragma: no cover - the plan's Literal allows nothing else
        raise MemoryValidationError(f"unknown trainer {trainer!r}")
    summary = {
        "trainer": trainer,
        "checkpoint_id": checkpoint_id,
        "checkpoint_dir": str(ckpt_dir),
        "train_pairs": len(train_rows),
        **result,
    }
    write_json(out / "result.json", summary)
    return summary


# -- stage 4: evaluate ----------------------------------------------------------------------------


def _scores(q: Any, p: Any, gold: Sequence[int], ids: Sequence[str]) -> tuple[float, float]:
    sims = q @ p.T
    ndcg, recall = [], []
    for row, g in zip(sims, gold, strict=True):
        top = np.argsort(-row, kind="stable")[:_K]
        ranked = [ids[j] for j in top]
        ndcg.append(ndcg_at_k({ids[g]}, ranked, _K))
        recall.append(recall_at_k({ids[g]}, ranked, _K))
    return statistics.fmean(ndcg), statistics.fmean(recall)


def evaluate(ctx: RunContext, plan: FineTunePlan) -> EvalMetrics:
    """Stage 4: checkpoint versus base on the held-out queries, same token caps as mining."""
    from memvault.embeddings import create_embedder
    from memvault.embeddings.adapter import AdapterEmbedder, load_checkpoint_embedder

    out = ctx.stage_dir(Stage.EVALUATE)
    data = _read_data(ctx)
    result = json.loads((ctx.run_dir / Stage.TRAIN.value / "result.json").read_text("utf-8"))
    val_rows = [i for i, s in enumerate(data.splits) if s == "val"]
    gold = [data.positives[i] for i in val_rows]
    with np.load(ctx.run_dir / Stage.MINE.value / "base_vectors.npz") as vectors:
        p_base, q_base = vectors["passages"], vectors["queries"][val_rows]
    base_ndcg, base_recall = _scores(q_base, p_base, gold, data.passage_ids)
    checkpoint = load_checkpoint_embedder(result["checkpoint_dir"], create_base=create_embedder)
    if isinstance(checkpoint, AdapterEmbedder):
        # The adapter runs on the frozen base: its vectors are the cached base ones, mapped.
        p_ft, q_ft = checkpoint.project(p_base), checkpoint.project(q_base)
    else:
        passages, queries = _capped(ctx, plan, data)
        p_ft = _embed(checkpoint, passages, ctx)
        q_ft = _embed(checkpoint, [queries[i] for i in val_rows], ctx)
    ft_ndcg, ft_recall = _scores(q_ft, p_ft, gold, data.passage_ids)
    metrics = EvalMetrics(
        queries=len(val_rows),
        passages=len(data.passages),
        base_ndcg_at_10=base_ndcg,
        base_recall_at_10=base_recall,
        checkpoint_ndcg_at_10=ft_ndcg,
        checkpoint_recall_at_10=ft_recall,
    )
    write_json(out / "metrics.json", metrics.model_dump(mode="json"))
    return metrics


# -- stage 5: deploy ------------------------------------------------------------------------------


def deploy(ctx: RunContext, plan: FineTunePlan, metrics: EvalMetrics | None) -> dict[str, Any]:
    """Stage 5: make the checkpoint the registry's active embedder (see the module docstring)."""
    from memvault.embeddings.adapter import read_active, read_meta

    result = json.loads((ctx.run_dir / Stage.TRAIN.value / "result.json").read_text("utf-8"))
    checkpoint_id = str(result["checkpoint_id"])
    if not plan.deploy:
        return {"deployed": False, "reason": "the plan has deploy: false"}
    if plan.require_improvement and metrics is not None and not metrics.improved:
        return {
            "deployed": False,
            "reason": (
                f"the checkpoint's NDCG@10 {metrics.checkpoint_ndcg_at_10:.4f} does not beat the "
                f"base's {metrics.base_ndcg_at_10:.4f} (require_improvement is on)"
            ),
        }
    previous = read_active(ctx.registry) or {}
    meta = read_meta(Path(result["checkpoint_dir"]))
    activate(
        ctx.registry,
        checkpoint_id,
        base_model=plan.base_model,
        actor=ctx.actor,
        reason=f"deploy of run {ctx.run_id}",
        operation="deploy",
    )
    return {
        "deployed": True,
        "checkpoint_id": checkpoint_id,
        "model_id": meta.model_id,
        "previous_checkpoint_id": previous.get("checkpoint_id"),
        "reindex_required": True,
        "message": (
            f"embedder finetuned:{ctx.registry} now serves {meta.model_id}; stores embedded "
            "with another model must be re-embedded: run `memvault reindex`"
        ),
    }


# -- running a stage ------------------------------------------------------------------------------


def _set_stage(ctx: RunContext, stage: Stage, **update: Any) -> FineTuneRun:
    run = ctx.load()
    stages = tuple(s.model_copy(update=update) if s.stage is stage else s for s in run.stages)
    return ctx.store.save(run.model_copy(update={"stages": stages}))


def _begin(ctx: RunContext, stage: Stage, marker: Callable[[str], None] | None) -> float:
    ctx.check_cancel()
    ctx._stage = stage
    _set_stage(
        ctx, stage, status=StageStatus.RUNNING, started_at=now(), completed_at=None, error=None
    )
    logger.info(
        "memory.fine_tune.stage_start run_id=%s stage=%s",
        ctx.run_id,
        stage.value,
        extra={"event": "memory.fine_tune.stage_start", "run_id": ctx.run_id, "stage": stage.value},
    )
    if marker is not None:
        marker(f"STAGE_START:{stage.value}")
    return time.perf_counter()


def _fail(ctx: RunContext, stage: Stage, exc: BaseException) -> None:
    ctx._stage = None
    if isinstance(exc, FineTuneCancelledError):
        _set_stage(ctx, stage, status=StageStatus.CANCELLED, error=str(exc))
    else:
        _set_stage(ctx, stage, status=StageStatus.FAILED, error=f"{type(exc).__name__}: {exc}")


def _end(
    ctx: RunContext,
    stage: Stage,
    summary: dict[str, Any],
    started: float,
    marker: Callable[[str], None] | None,
) -> None:
    ctx._stage = None
    seconds = time.perf_counter() - started
    status = StageStatus.SKIPPED if summary.get("deployed") is False else StageStatus.COMPLETED
    _set_stage(
        ctx,
        stage,
        status=status,
        completed_at=now(),
        seconds=round(seconds, 3),
        summary=_jsonable(summary),
    )
    logger.info(
        "memory.fine_tune.stage_complete run_id=%s stage=%s seconds=%.2f",
        ctx.run_id,
        stage.value,
        seconds,
        extra={
            "event": "memory.fine_tune.stage_complete",
            "run_id": ctx.run_id,
            "stage": stage.value,
            "seconds": seconds,
        },
    )
    if marker is not None:
        marker(f"STAGE_COMPLETE:{stage.value}")


def run_stage(
    ctx: RunContext,
    stage: Stage,
    work: Callable[[], dict[str, Any]],
    *,
    marker: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run one stage's ``work`` with its log markers, timing, state updates and cancel check.

    ``marker`` receives ``STAGE_START:<stage>`` / ``STAGE_COMPLETE:<stage>`` lines (the
    subprocess runner prints them on stdout for its parent).
    """
    started = _begin(ctx, stage, marker)
    try:
        summary = work()
    except BaseException as exc:
        _fail(ctx, stage, exc)
        raise
    _end(ctx, stage, summary, started, marker)
    return summary


async def run_stage_async(
    ctx: RunContext,
    stage: Stage,
    work: Callable[[], Awaitable[dict[str, Any]]],
    *,
    marker: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """:func:`run_stage` for a coroutine (the LLM-driven generate stage)."""
    started = _begin(ctx, stage, marker)
    try:
        summary = await work()
    except BaseException as exc:
        _fail(ctx, stage, exc)
        raise
    _end(ctx, stage, summary, started, marker)
    return summary


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def finish(ctx: RunContext, status: RunStatus, error: str | None = None) -> FineTuneRun:
    """Record the run's final status (and, when completed, its checkpoint and metrics)."""
    run = ctx.load()
    update: dict[str, Any] = {"status": status, "error": error}
    train_summary = run.stage(Stage.TRAIN).summary
    if train_summary.get("checkpoint_id"):
        update["checkpoint_id"] = train_summary["checkpoint_id"]
        update["trainer"] = train_summary.get("trainer")
    metrics_file = ctx.run_dir / Stage.EVALUATE.value / "metrics.json"
    if run.stage(Stage.EVALUATE).status is StageStatus.COMPLETED and metrics_file.is_file():
        update["metrics"] = EvalMetrics.model_validate_json(metrics_file.read_text("utf-8"))
    update["deployed"] = bool(run.stage(Stage.DEPLOY).summary.get("deployed"))
    return ctx.store.save(run.model_copy(update=update))


def pending_stages(run: FineTuneRun) -> list[Stage]:
    """The stages a (re)start must run: every one not completed or skipped yet, in order."""
    done = (StageStatus.COMPLETED, StageStatus.SKIPPED)
    return [s.stage for s in run.stages if s.status not in done]


def reset_stage_record(record: StageRecord) -> StageRecord:
    """A stage record ready to run again."""
    return StageRecord(stage=record.stage)


def _stage_work(ctx: RunContext, stage: Stage) -> Callable[[], dict[str, Any]]:
    plan = ctx.load().plan
    if stage is Stage.MINE:
        return lambda: mine(ctx, plan)
    if stage is Stage.TRAIN:
        trainer = resolve_trainer(plan)
        return lambda: train(ctx, plan, trainer)
    if stage is Stage.EVALUATE:
        return lambda: evaluate(ctx, plan).model_dump(mode="json")
    if stage is Stage.DEPLOY:
        metrics_file = ctx.run_dir / Stage.EVALUATE.value / "metrics.json"
        metrics = (
            EvalMetrics.model_validate_json(metrics_file.read_text("utf-8"))
            if metrics_file.is_file()
            else None
        )
        return lambda: deploy(ctx, plan, metrics)
    raise MemoryValidationError(f"stage {stage.value} cannot run here")


def run_sync_stages(
    ctx: RunContext,
    stages: Iterable[Stage],
    *,
    marker: Callable[[str], None] | None = None,
) -> None:
    """Run the synchronous stages (mine .. deploy) among ``stages``, in order."""
    for stage in stages:
        run_stage(ctx, stage, _stage_work(ctx, stage), marker=marker)
