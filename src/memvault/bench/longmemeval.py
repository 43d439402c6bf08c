"""The LongMemEval retrieval benchmark.

Protocol: one fresh store per question; one episodic memory per haystack turn, content
``"<role>: <content>"``, ``created_at`` the session's date, metadata ``{"session_id",
"session_index", "turn", "has_answer"}``. The question retrieves the top ``limit`` (10) turns.

* session recall: the sessions of the ranked turns, in rank order without repeats (as in
  LongMemEval's turn-to-session evaluation); ``session_any@5`` is 1 when any answer session is
  among the first five of them, ``session_all@5`` when every one is; ``session_recall@10`` is
  the share of answer sessions that hold one of the top 10 turns.
* turn recall@10 and nDCG@10: gold = the turns marked ``has_answer``; questions without such
  turns are left out of these metrics only.

Turns are stored the way a user would store them: ``add_many`` with default options. Searches
are asked at the question date (``asked_at``: "two weeks ago" counts back from it) but not
``as_of`` it: some haystacks hold sessions dated after their question, and an as-of search
would hide them.

Abstention questions (id ending ``_abs``) ask about something the history does not contain, so
they have no evidence to retrieve and are skipped unless ``include_abstention`` is set, as in
LongMemEval's own retrieval evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from memvault.bench.datasets import LongMemEvalDataset, LongMemEvalItem, load_longmemeval
from memvault.bench.metrics import aggregate, ndcg_at_k, recall_at_k
from memvault.bench.report import LongMemEvalReport, MetricRow
from memvault.errors import MemoryValidationError
from memvault.models import MemoryCategory
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig

__all__ = ["LONGMEMEVAL_METRICS", "haystack_items", "run_longmemeval"]

LONGMEMEVAL_METRICS = (
    "turn_recall@10",
    "session_any@5",
    "session_all@5",
    "session_recall@10",
    "ndcg@10",
)
"""The metrics a LongMemEval run reports.

``turn_recall@10``: share of the gold turns among the top 10; ``session_any@5`` /
``session_all@5``: 1 when any / every answer session is among the first five distinct sessions
of the ranked turns (LongMemEval's recall_any@5 and recall_all@5); ``session_recall@10``: share
of answer sessions among the top 10 turns' sessions; ``ndcg@10``: of the gold turns.
"""


def _turn_key(session_index: int, turn_index: int) -> str:
    return f"{session_index}:{turn_index}"


def haystack_items(item: LongMemEvalItem) -> tuple[list[dict[str, Any]], set[str], int]:
    """Return the ``add_many`` items of a question's haystack, in order.

    Returns ``(items, gold_turns, blank)``: gold turns are the ``"<session index>:<turn
    index>"`` keys of stored turns marked ``has_answer``; blank turns (empty content) cannot be
    stored and are only counted.
    """
    items: list[dict[str, Any]] = []
    gold: set[str] = set()
    blank = 0
    for s_index, session in enumerate(item.sessions):
        for turn in session.turns:
            if not turn.content.strip():
                blank += 1
                continue
            if turn.has_answer:
                gold.add(_turn_key(s_index, turn.index))
            items.append(
                {
                    "content": f"{turn.role}: {turn.content}",
                    "category": MemoryCategory.EPISODIC,
                    "created_at": session.date,
                    "metadata": {
                        "session_id": session.session_id,
                        "session_index": s_index,
                        "turn": turn.index,
                        "has_answer": turn.has_answer,
                    },
                }
            )
    return items, gold, blank


def _keys(extra: Mapping[str, Any]) -> tuple[str, str]:
    session_id = extra.get("session_id")
    s_index, t_index = extra.get("session_index"), extra.get("turn")
    turn = (
        _turn_key(s_index, t_index) if isinstance(s_index, int) and isinstance(t_index, int) else ""
    )
    return (session_id if isinstance(session_id, str) else ""), turn


async def run_longmemeval(
    path: str | Path | LongMemEvalDataset,
    *,
    preset: str | RetrievalConfig = "default",
    limit: int = 10,
    embedder: Embedder | None = None,
    backend: str = "sqlite",
    store_url_factory: StoreFactory | None = None,
    progress: ProgressCallback | None = None,
    max_questions: int | None = None,
    include_abstention: bool = False,
    dedup: bool | None = None,
) -> LongMemEvalReport:
    """Run the LongMemEval retrieval benchmark on the file at ``path`` (or a loaded dataset).

    Each question gets a fresh store (see :func:`~memvault.bench.run_locomo` for ``backend``
    and ``store_url_factory``, which here receives the ``question_id``). ``max_questions``
    evaluates only the first questions of the file; ``progress`` is called with
    ``(questions done, total)``. ``dedup`` None ingests with the store's default (on).

    Raises:
        MemoryValidationError: unreadable or malformed data file, unknown preset or backend,
            ``limit < 10`` (the metrics need ten results) or ``max_questions < 1``.
    """
    retrieval = resolve_preset(preset)
    store_kind = check_backend(backend)
    if limit < 10:
        msg = f"limit must be >= 10 (session and turn recall@10 need ten results), got {limit}"
        raise MemoryValidationError(msg)
    if max_questions is not None and max_questions < 1:
        msg = f"max_questions must be >= 1, got {max_questions}"
        raise MemoryValidationError(msg)
    dataset = path if isinstance(path, LongMemEvalDataset) else load_longmemeval(path)
    items = dataset.items[:max_questions]
    model = await resolve_embedder(embedder)

    watch = Stopwatch()
    scored: list[tuple[str, dict[str, float]]] = []
    types: list[str] = []
    skipped_abs = skipped_none = blank_total = turns = 0
    total = len(items)
    if progress is not None:
        progress(0, total)
    async with open_stores(
        backend=store_kind, factory=store_url_factory, embedder=model, retrieval=retrieval
    ) as stores:
        for done, item in enumerate(items, start=1):
            if item.question_type not in types:
                types.append(item.question_type)
            records, gold_turns, blank = haystack_items(item)
            if item.is_abstention and not include_abstention:
                skipped_abs += 1
            elif not item.answer_session_ids or not records or not item.question.strip():
                skipped_none += 1
            else:
                blank_total += blank
                async with stores.open(item.question_id) as mem:
                    turns += len(await watch.ingest(mem, records, agent_id=AGENT_ID, dedup=dedup))
                    hits = await watch.search(
                        mem,
                        item.question,
                        agent_id=AGENT_ID,
                        limit=limit,
                        preset=retrieval,
                        asked_at=item.question_date,
                    )
                keys = [_keys(h.metadata.extra) for h in hits]
                sessions = [s for s, _ in keys]
                gold_sessions = set(item.answer_session_ids)
                # As LongMemEval's turn-to-session evaluation: sessions ranked by their best
                # turn, duplicates dropped, then the first five.
                top5 = set(list(dict.fromkeys(sessions))[:5])
                scores = {
                    "session_any@5": float(bool(gold_sessions & top5)),
                    "session_all@5": float(gold_sessions <= top5),
                    "session_recall@10": recall_at_k(gold_sessions, sessions, 10),
                }
                if gold_turns:
                    ranked_turns = [t for _, t in keys]
                    scores["turn_recall@10"] = recall_at_k(gold_turns, ranked_turns, 10)
                    scores["ndcg@10"] = ndcg_at_k(gold_turns, ranked_turns, 10)
                scored.append((item.question_type, scores))
            if progress is not None:
                progress(done, total)

    per_type, overall = aggregate(scored, LONGMEMEVAL_METRICS, groups=types)
    rows = tuple(MetricRow.from_summary(t, t, s) for t, s in per_type.items())
    return LongMemEvalReport(
        dataset=dataset.path,
        preset=retrieval.name,
        limit=limit,
        backend="custom" if store_url_factory is not None else store_kind,
        embedder=model.model_id,
        metric_names=LONGMEMEVAL_METRICS,
        rows=rows,
        overall=MetricRow.from_summary("overall", "overall", overall),
        timing=watch.timing(),
        questions=len(scored),
        turns=turns,
        skipped_abstention=skipped_abs,
        skipped_no_evidence=skipped_none,
        skipped_blank_turns=blank_total,
    )
