"""The LoCoMo retrieval benchmark (DESIGN section 9).

Protocol: one fresh store per conversation; one episodic memory per dialogue turn, content
``"<speaker>: <text>"`` plus ``" [shares <blip_caption>]"`` when the turn shares an image,
``created_at`` the session's date, metadata ``{"dia_id": ..., "session": <n>}``, all turns of a
conversation written with one ``add_many`` (so ids follow turn order). Queries are the questions
of categories 1-4 with at least one valid evidence id; each retrieves the top ``limit`` memories,
which map back to dialogue ids through their metadata. Reported: recall@{1,5,10,50}, nDCG@10
and MRR per category and overall (macro over questions), ingest time, search p50/p95.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from memvault.bench._runner import (
    AGENT_ID,
    ProgressCallback,
    Stopwatch,
    StoreFactory,
    check_backend,
    open_stores,
    resolve_embedder,
    resolve_preset,
)
from memvault.bench.datasets import (
    LOCOMO_CATEGORIES,
    LocomoConversation,
    LocomoDataset,
    LocomoTurn,
    load_locomo,
)
from memvault.bench.metrics import aggregate, mrr, ndcg_at_k, recall_at_k
from memvault.bench.report import LocomoReport, MetricRow
from memvault.errors import MemoryStoreError, MemoryValidationError
from memvault.models import MemoryCategory
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig

__all__ = ["RECALL_KS", "locomo_metric_names", "run_locomo", "turn_content", "turn_items"]

RECALL_KS = (1, 5, 10, 50)
"""The cut-offs of the reported recall@k."""


def turn_content(turn: LocomoTurn) -> str:
    """Return a turn's memory content: ``"<speaker>: <text>"`` [+ ``" [shares <caption>]"``]."""
    content = f"{turn.speaker}: {turn.text}"
    if turn.blip_caption:
        content += f" [shares {turn.blip_caption}]"
    return content


def turn_items(conversation: LocomoConversation) -> list[dict[str, Any]]:
    """Return the ``add_many`` items of a conversation, one per turn, in turn order."""
    return [
        {
            "content": turn_content(t),
            "category": MemoryCategory.EPISODIC,
            "created_at": t.session_datetime,
            "metadata": {"dia_id": t.dia_id, "session": t.session},
        }
        for t in conversation.turns
    ]


def locomo_metric_names(limit: int) -> tuple[str, ...]:
    """Return the names of the metrics a run with ``limit`` results reports.

    recall@k for k beyond ``limit`` would silently equal recall@limit, so it is left out.
    """
    return (*(f"recall@{k}" for k in RECALL_KS if k <= limit), "ndcg@10", "mrr")


def _scores(gold: Collection[str], ranked: Sequence[str], limit: int) -> dict[str, float]:
    scores = {f"recall@{k}": recall_at_k(gold, ranked, k) for k in RECALL_KS if k <= limit}
    scores["ndcg@10"] = ndcg_at_k(gold, ranked, 10)
    scores["mrr"] = mrr(gold, ranked)
    return scores


def _check_categories(categories: Collection[int]) -> tuple[int, ...]:
    cats = tuple(dict.fromkeys(categories))
    if not cats:
        msg = "categories must name at least one LoCoMo category"
        raise MemoryValidationError(msg)
    bad = [c for c in cats if isinstance(c, bool) or c not in LOCOMO_CATEGORIES]
    if bad:
        msg = f"unknown LoCoMo categories {bad} (known: {sorted(LOCOMO_CATEGORIES)})"
        raise MemoryValidationError(msg)
    return cats


def _dia_id(extra: Mapping[str, Any]) -> str:
    value = extra.get("dia_id")
    return value if isinstance(value, str) else ""


async def run_locomo(
    path: str | Path | LocomoDataset,
    *,
    preset: str | RetrievalConfig = "default",
    limit: int = 50,
    embedder: Embedder | None = None,
    backend: str = "sqlite",
    store_url_factory: StoreFactory | None = None,
    progress: ProgressCallback | None = None,
    categories: Collection[int] = (1, 2, 3, 4),
    max_conversations: int | None = None,
) -> LocomoReport:
    """Run the LoCoMo retrieval benchmark on the file at ``path`` (or a loaded dataset).

    Each conversation gets a fresh store: a SQLite file in a temporary directory (``backend=
    "sqlite"``, the embedded default) or an in-process store (``backend="memory"``);
    ``store_url_factory`` overrides both by mapping a conversation's ``sample_id`` to a URL.
    ``progress`` is called with ``(conversations done, total)``.

    Raises:
        MemoryValidationError: unreadable or malformed data file, unknown preset, backend or
            category, ``limit < 1`` or ``max_conversations < 1``.
    """
    retrieval = resolve_preset(preset)
    store_kind = check_backend(backend)
    cats = _check_categories(categories)
    if limit < 1:
        msg = f"limit must be >= 1, got {limit}"
        raise MemoryValidationError(msg)
    if max_conversations is not None and max_conversations < 1:
        msg = f"max_conversations must be >= 1, got {max_conversations}"
        raise MemoryValidationError(msg)
    dataset = path if isinstance(path, LocomoDataset) else load_locomo(path)
    conversations = dataset.conversations[:max_conversations]
    metric_names = locomo_metric_names(limit)
    model = await resolve_embedder(embedder)

    watch = Stopwatch()
    scored: list[tuple[str, dict[str, float]]] = []
    skipped = dropped = turns = 0
    total = len(conversations)
    if progress is not None:
        progress(0, total)
    async with open_stores(
        backend=store_kind, factory=store_url_factory, embedder=model, retrieval=retrieval
    ) as stores:
        for done, conv in enumerate(conversations, start=1):
            async with stores.open(conv.sample_id) as mem:
                ids = await watch.ingest(mem, turn_items(conv), agent_id=AGENT_ID)
                if len(ids) != len(conv.turns):  # pragma: no cover - add_many's contract
                    msg = f"{conv.sample_id}: stored {len(ids)} of {len(conv.turns)} turns"
                    raise MemoryStoreError(msg)
                turns += len(ids)
                for qa in conv.qas:
                    if qa.category not in cats:
                        continue
                    dropped += len(qa.dropped_evidence)
                    if not qa.evidence or not qa.question.strip():
                        skipped += 1
                        continue
                    hits = await watch.search(
                        mem, qa.question, agent_id=AGENT_ID, limit=limit, preset=retrieval
                    )
                    ranked = [_dia_id(h.metadata.extra) for h in hits]
                    scored.append((str(qa.category), _scores(qa.evidence, ranked, limit)))
            if progress is not None:
                progress(done, total)

    per_cat, overall = aggregate(scored, metric_names, groups=[str(c) for c in cats])
    rows = tuple(
        MetricRow.from_summary(key, LOCOMO_CATEGORIES[int(key)], summary)
        for key, summary in per_cat.items()
    )
    return LocomoReport(
        dataset=dataset.path,
        preset=retrieval.name,
        limit=limit,
        backend="custom" if store_url_factory is not None else store_kind,
        embedder=model.model_id,
        metric_names=metric_names,
        rows=rows,
        overall=MetricRow.from_summary("overall", "overall", overall),
        timing=watch.timing(),
        conversations=len(conversations),
        turns=turns,
        questions=len(scored),
        skipped_questions=skipped,
        dropped_evidence_ids=dropped,
    )
