"""LoCoMo at the level of facts and session summaries (issue 41, deliverable 1).

The turn-level runner (:mod:`memvault.bench.locomo`) stores every dialogue turn; a user's store
more often holds short facts. LoCoMo ships both: each conversation's ``observation`` holds, per
session and speaker, facts with the dialogue ids they come from
(``{"session_3_observation": {"Caroline": [["Caroline went ...", "D3:2"], ...]}}``), and its
``session_summary`` a paragraph per session (``{"session_3_summary": "..."}``).

Protocol: one fresh store per conversation; one SEMANTIC memory per fact (``unit="facts"``,
metadata ``{"speaker", "session", "dia_ids"}``) or per session summary (``unit="summaries"``,
metadata ``{"session"}``), ``created_at`` the session's date, all written with one ``add_many``
(dedup off). Gold for a question (categories 1-4 by default) is the set of facts whose evidence
turns overlap the question's evidence turns, or the summaries of the sessions holding an
evidence turn. Per question with at least one gold memory:

* ``recall@5`` / ``recall@10``: the share of its gold memories among the first k search results;
* ``context_hit``: 1 when the default :meth:`~memvault.memory.AsyncMemory.context` injects at
  least one gold memory;
* ``context_precision``: the share of injected memories that are gold (questions with a
  non-empty context only); its micro version pools every injected memory;
* ``injected``: how many memories the context holds.

Pooled over the run: the AUC of ``relevance_score`` between gold and other hits among the top
:data:`AUC_TOP` search results, and, for off-topic questions (those of the next conversation of
the file asked of this store), the share for which ``context()`` injects nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.console import Group
from rich.table import Table

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
    _read_json,
    _Where,
    load_locomo,
    normalize_evidence,
    parse_locomo_datetime,
)
from memvault.bench.metrics import aggregate, recall_at_k
from memvault.bench.report import BenchReport, MetricRow, render_report
from memvault.errors import MemoryStoreError, MemoryValidationError
from memvault.memory import AsyncMemory
from memvault.models import MemoryCategory
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig

__all__ = [
    "AUC_TOP",
    "UNIT_METRICS",
    "LocomoUnit",
    "LocomoUnitsDataset",
    "LocomoUnitsReport",
    "Unit",
    "load_locomo_units",
    "parse_conversations",
    "relevance_auc",
    "render_units_report",
    "run_locomo_facts",
    "run_locomo_summaries",
    "run_locomo_units",
    "select_conversations",
    "unit_items",
]

Unit = Literal["facts", "summaries"]

AUC_TOP = 20
"""Each question's search retrieves this many memories (recall@k and the AUC's pool)."""

UNIT_METRICS = ("recall@5", "recall@10", "context_hit", "context_precision", "injected")
"""The per-question metrics of a facts/summaries run, in report order."""

_OBSERVATION_KEY = re.compile(r"^session_(\d+)_observation$")
_SUMMARY_KEY = re.compile(r"^session_(\d+)_summary$")
_RANGE = re.compile(r"^(\d+)\s*-\s*(\d+)$")


# -- data -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocomoUnit:
    """One memory of a facts/summaries run: a fact (``kind="fact"``) or a session summary.

    ``evidence`` holds the dialogue ids it stands for: a fact's evidence turns (those naming a
    turn of the conversation), or every turn of a summary's session.
    """

    kind: Literal["fact", "summary"]
    content: str
    session: int
    created_at: datetime
    evidence: tuple[str, ...]
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoUnitsDataset:
    """A LoCoMo file loaded with its facts or summaries: ``units[i]`` are conversation i's."""

    unit: Unit
    dataset: LocomoDataset
    units: tuple[tuple[LocomoUnit, ...], ...]
    dropped_evidence_ids: int = 0
    """Fact evidence pieces that are malformed or name no turn of the conversation."""

    @property
    def path(self) -> str:
        """Return the file's path."""
        return self.dataset.path

    @property
    def conversations(self) -> tuple[LocomoConversation, ...]:
        """Return the conversations (turns and questions)."""
        return self.dataset.conversations


def _session_dates(raw_conv: Mapping[str, Any], where: _Where, loc: str) -> dict[int, datetime]:
    dates: dict[int, datetime] = {}
    for key, value in raw_conv.items():
        m = re.match(r"^session_(\d+)_date_time$", key)
        if m is None or not isinstance(value, str):
            continue
        try:
            dates[int(m.group(1))] = parse_locomo_datetime(value)
        except ValueError as exc:
            raise where.fail(loc, f"{key}: {exc}") from None
    return dates


def _date(dates: Mapping[int, datetime], session: int, where: _Where, loc: str) -> datetime:
    if session not in dates:
        raise where.fail(loc, f"session {session} has no session_{session}_date_time")
    return dates[session]


def _facts(
    raw: Mapping[str, Any],
    conv: LocomoConversation,
    dates: Mapping[int, datetime],
    where: _Where,
    loc: str,
) -> tuple[list[LocomoUnit], int]:
    observation = raw.get("observation")
    if not isinstance(observation, dict):
        raise where.fail(loc, "missing or invalid 'observation' object (needed for unit facts)")
    known = {t.dia_id for t in conv.turns}
    sessions = sorted(
        (int(m.group(1)), key) for key in observation if (m := _OBSERVATION_KEY.match(key))
    )
    units: list[LocomoUnit] = []
    dropped = 0
    for number, key in sessions:
        by_speaker = observation[key]
        if not isinstance(by_speaker, dict):
            raise where.fail(loc, f"{key!r} must be an object of speaker -> facts")
        when = _date(dates, number, where, loc)
        for speaker, facts in by_speaker.items():
            if not isinstance(facts, list):
                raise where.fail(loc, f"{key}.{speaker} must be an array of [fact, evidence]")
            for f_index, fact in enumerate(facts):
                f_loc = f"{loc}, {key}.{speaker} fact {f_index}"
                if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)):
                    raise where.fail(f_loc, "expected [fact text, evidence id(s)]")
                text, evidence = fact[0].strip(), fact[1]
                if isinstance(evidence, str):
                    evidence = [evidence]
                if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
                    raise where.fail(f_loc, "evidence must be a dialogue id or an array of them")
                if not text:
                    continue
                ids, malformed = normalize_evidence(evidence)
                kept = tuple(i for i in ids if i in known)
                dropped += len(malformed) + len(ids) - len(kept)
                units.append(
                    LocomoUnit(
                        kind="fact",
                        content=text,
                        session=number,
                        created_at=when,
                        evidence=kept,
                        speaker=speaker,
                    )
                )
    return units, dropped


def _summaries(
    raw: Mapping[str, Any],
    conv: LocomoConversation,
    dates: Mapping[int, datetime],
    where: _Where,
    loc: str,
) -> list[LocomoUnit]:
    summaries = raw.get("session_summary")
    if not isinstance(summaries, dict):
        raise where.fail(
            loc, "missing or invalid 'session_summary' object (needed for unit summaries)"
        )
    turns_of: dict[int, list[str]] = {}
    for t in conv.turns:
        turns_of.setdefault(t.session, []).append(t.dia_id)
    units: list[LocomoUnit] = []
    for number, key in sorted(
        (int(m.group(1)), key) for key in summaries if (m := _SUMMARY_KEY.match(key))
    ):
        text = summaries[key]
        if not isinstance(text, str):
            raise where.fail(loc, f"{key!r} must be a string")
        if not text.strip():
            continue
        units.append(
            LocomoUnit(
                kind="summary",
                content=text.strip(),
                session=number,
                created_at=_date(dates, number, where, loc),
                evidence=tuple(turns_of.get(number, ())),
            )
        )
    return units


def load_locomo_units(path: str | Path, unit: Unit = "facts") -> LocomoUnitsDataset:
    """Load a LoCoMo file with each conversation's facts (``observation``) or summaries.

    Raises:
        MemoryValidationError: the file is not a LoCoMo file (see :func:`load_locomo`), or a
            conversation lacks (or has a malformed) ``observation`` / ``session_summary``.
    """
    if unit not in ("facts", "summaries"):
        msg = f"unknown LoCoMo unit {unit!r} (use 'facts' or 'summaries')"
        raise MemoryValidationError(msg)
    dataset = load_locomo(path)
    data, where = _read_json(path, "LoCoMo")
    per_conv: list[tuple[LocomoUnit, ...]] = []
    dropped = 0
    for index, (raw, conv) in enumerate(zip(data, dataset.conversations, strict=True)):
        loc = f"conversation {index} ({conv.sample_id})"
        dates = _session_dates(raw["conversation"], where, loc)
        if unit == "facts":
            units, lost = _facts(raw, conv, dates, where, loc)
            dropped += lost
        else:
            units = _summaries(raw, conv, dates, where, loc)
        if not units:
            raise where.fail(loc, f"it has no {unit}")
        per_conv.append(tuple(units))
    return LocomoUnitsDataset(
        unit=unit, dataset=dataset, units=tuple(per_conv), dropped_evidence_ids=dropped
    )


def unit_items(units: Sequence[LocomoUnit]) -> list[dict[str, Any]]:
    """Return the ``add_many`` items of a conversation's units, in order."""
    items: list[dict[str, Any]] = []
    for u in units:
        metadata: dict[str, Any] = {"session": u.session}
        if u.kind == "fact":
            metadata = {"speaker": u.speaker, "session": u.session, "dia_ids": list(u.evidence)}
        items.append(
            {
                "content": u.content,
                "category": MemoryCategory.SEMANTIC,
                "created_at": u.created_at,
                "metadata": metadata,
            }
        )
    return items


# -- selection ------------------------------------------------------------------------------------


def parse_conversations(text: str) -> tuple[int, ...]:
    """Parse a selection of conversation indexes: ``"0-4"``, ``"5-9"``, ``"0,2,5-7"``, ``"3"``.

    Indexes are 0-based positions in the file, returned sorted without duplicates.

    Raises:
        MemoryValidationError: an empty selection, a piece that is not an index or a range, or a
            range whose end is below its start.
    """
    picked: set[int] = set()
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if piece.isdigit():
            picked.add(int(piece))
            continue
        m = _RANGE.match(piece)
        if m is None:
            msg = f"bad conversation selection {piece!r} (use e.g. 0-4 or 0,2,5-7)"
            raise MemoryValidationError(msg)
        lo, hi = int(m.group(1)), int(m.group(2))
        if hi < lo:
            msg = f"bad conversation range {piece!r}: the end is below the start"
            raise MemoryValidationError(msg)
        picked.update(range(lo, hi + 1))
    if not picked:
        msg = f"the conversation selection {text!r} names no conversation"
        raise MemoryValidationError(msg)
    return tuple(sorted(picked))


def select_conversations(selection: str | Collection[int] | None, total: int) -> tuple[int, ...]:
    """Return the conversation indexes a selection names (all ``total`` when it is None).

    Raises:
        MemoryValidationError: a malformed selection or an index ``>= total``.
    """
    if selection is None:
        return tuple(range(total))
    picked = (
        parse_conversations(selection)
        if isinstance(selection, str)
        else tuple(sorted(set(selection)))
    )
    if not picked:
        msg = "the conversation selection names no conversation"
        raise MemoryValidationError(msg)
    bad = [i for i in picked if isinstance(i, bool) or not 0 <= i < total]
    if bad:
        msg = f"conversation indexes {bad} out of range (the file holds {total}: 0-{total - 1})"
        raise MemoryValidationError(msg)
    return picked


# -- metrics --------------------------------------------------------------------------------------


def relevance_auc(gold: Sequence[float], other: Sequence[float]) -> float | None:
    """Return the ROC AUC of scores between gold and other items (ties count one half).

    The probability that a random gold item scores above a random other one; None when either
    side is empty.
    """
    if not gold or not other:
        return None
    pooled = sorted([(s, 1) for s in gold] + [(s, 0) for s in other])
    # Mann-Whitney U from average ranks (1-based); tied scores share their mean rank.
    rank_sum = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        mean_rank = (i + j) / 2 + 1
        rank_sum += mean_rank * sum(flag for _, flag in pooled[i : j + 1])
        i = j + 1
    n_gold, n_other = len(gold), len(other)
    return (rank_sum - n_gold * (n_gold + 1) / 2) / (n_gold * n_other)


# -- report ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LocomoUnitsReport(BenchReport):
    """Holds the result of :func:`run_locomo_units`; rows are the QA categories.

    ``questions`` counts the questions with at least one gold memory (the ones scored);
    ``no_gold_questions`` those with valid evidence that no fact/summary covers.
    """

    unit_kind: str
    conversation_indexes: tuple[int, ...]
    conversation_ids: tuple[str, ...]
    memories: int
    questions: int
    no_gold_questions: int
    skipped_questions: int
    dropped_evidence_ids: int
    injected_total: int
    context_precision_micro: float | None
    auc_top: int
    auc_gold_hits: int
    auc_other_hits: int
    relevance_auc: float | None
    off_topic_questions: int
    off_topic_empty: float | None
    off_topic_mean_injected: float | None

    benchmark: ClassVar[str] = "locomo-units"
    group_name: ClassVar[str] = "category"
    group_key: ClassVar[str] = "categories"
    unit: ClassVar[str] = "memories"

    @property
    def title(self) -> str:
        """Return a one-line heading naming the benchmark, the unit and the setup."""
        return (
            f"locomo {self.unit_kind} · conversations {_ranges(self.conversation_indexes)} · "
            f"preset {self.preset} · {self.backend} · {self.embedder}"
        )

    def notes(self) -> list[str]:
        """Return lines saying what was evaluated and what was skipped."""
        return [
            f"{self.questions} questions with gold {self.unit_kind} over "
            f"{len(self.conversation_ids)} conversations ({self.memories} {self.unit_kind}); "
            f"{self.no_gold_questions} without gold, {self.skipped_questions} without valid "
            f"evidence; {self.dropped_evidence_ids} {self.unit_kind} evidence ids dropped",
            "R@k: gold memories in the top k of search; context_hit: the default context() "
            "holds a gold memory; context_precision: gold share of injected (non-empty "
            "contexts); injected: memories in the context",
        ]

    def headline(self) -> dict[str, float | None]:
        """Return the run's headline figures by name (the pooled ones included)."""
        o = self.overall.metrics
        return {
            "recall@5": o["recall@5"],
            "recall@10": o["recall@10"],
            "context_hit": o["context_hit"],
            "context_precision": o["context_precision"],
            "context_precision_micro": self.context_precision_micro,
            "injected": o["injected"],
            "relevance_auc": self.relevance_auc,
            "off_topic_empty": self.off_topic_empty,
        }


def _ranges(indexes: Sequence[int]) -> str:
    parts: list[str] = []
    start = prev = None
    for i in indexes:
        if start is None or prev is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None and prev is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts) or "-"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_units_report(report: LocomoUnitsReport) -> Group:
    """Render a facts/summaries report: the per-category table, then the pooled figures."""
    pooled = Table(title="pooled", title_justify="left", show_header=False)
    pooled.add_column("figure")
    pooled.add_column("value", justify="right", no_wrap=True)
    pooled.add_row(
        f"context precision, micro ({report.injected_total} injected)",
        _fmt(report.context_precision_micro),
    )
    pooled.add_row(
        f"relevance AUC, gold vs other in top {report.auc_top} "
        f"({report.auc_gold_hits} gold, {report.auc_other_hits} other)",
        _fmt(report.relevance_auc),
    )
    pooled.add_row(
        f"off-topic questions with an empty context ({report.off_topic_questions} asked)",
        _fmt(report.off_topic_empty),
    )
    pooled.add_row("off-topic: mean injected", _fmt(report.off_topic_mean_injected, 2))
    return Group(render_report(report), pooled)


# -- runner ---------------------------------------------------------------------------------------


def _check_categories(categories: Collection[int]) -> tuple[int, ...]:
    cats = tuple(dict.fromkeys(categories))
    bad = [c for c in cats if isinstance(c, bool) or c not in LOCOMO_CATEGORIES]
    if not cats or bad:
        msg = f"bad LoCoMo categories {sorted(cats)} (known: {sorted(LOCOMO_CATEGORIES)})"
        raise MemoryValidationError(msg)
    return cats


@dataclass
class _Tally:
    """The pooled counts of a run."""

    injected: int = 0
    injected_gold: int = 0
    gold_scores: list[float] = field(default_factory=list)
    other_scores: list[float] = field(default_factory=list)
    off_topic: int = 0
    off_topic_empty: int = 0
    off_topic_injected: int = 0


async def _score_question(
    mem: AsyncMemory,
    watch: Stopwatch,
    question: str,
    gold: set[int],
    index_of: Mapping[str, int],
    retrieval: RetrievalConfig,
    tally: _Tally,
) -> dict[str, float]:
    hits = await watch.search(mem, question, agent_id=AGENT_ID, limit=AUC_TOP, preset=retrieval)
    ranked = [index_of.get(h.id, -1) for h in hits]
    for h, i in zip(hits, ranked, strict=True):
        score = h.relevance_score if h.relevance_score is not None else 0.0
        (tally.gold_scores if i in gold else tally.other_scores).append(score)
    ctx = await mem.context(question, agent_id=AGENT_ID)
    injected = [index_of.get(e.id, -1) for e in ctx.entries]
    n_gold = sum(1 for i in injected if i in gold)
    tally.injected += len(injected)
    tally.injected_gold += n_gold
    scores = {
        "recall@5": recall_at_k(gold, ranked, 5),
        "recall@10": recall_at_k(gold, ranked, 10),
        "context_hit": 1.0 if n_gold else 0.0,
        "injected": float(len(injected)),
    }
    if injected:
        scores["context_precision"] = n_gold / len(injected)
    return scores


async def run_locomo_units(
    path: str | Path | LocomoUnitsDataset,
    *,
    unit: Unit = "facts",
    preset: str | RetrievalConfig = "default",
    embedder: Embedder | None = None,
    backend: str = "sqlite",
    store_url_factory: StoreFactory | None = None,
    progress: ProgressCallback | None = None,
    categories: Collection[int] = (1, 2, 3, 4),
    conversations: str | Collection[int] | None = None,
    off_topic: bool = True,
) -> LocomoUnitsReport:
    """Run LoCoMo with facts or session summaries as the memories (see the module docstring).

    ``conversations`` selects conversations by 0-based index (``"0-4"``, ``[5, 6]``; default
    all). Off-topic questions for conversation i are those of conversation i+1 of the whole file
    (the last one takes the first's), so they do not depend on the selection; ``off_topic=False``
    skips them. Stores are made as in :func:`~memvault.bench.run_locomo`.

    Raises:
        MemoryValidationError: unreadable or malformed data, unknown unit, preset, backend or
            category, a bad conversation selection, or a loaded dataset of another unit.
    """
    retrieval = resolve_preset(preset)
    store_kind = check_backend(backend)
    cats = _check_categories(categories)
    if isinstance(path, LocomoUnitsDataset):
        if path.unit != unit:
            msg = f"the dataset holds {path.unit}, not {unit}"
            raise MemoryValidationError(msg)
        data = path
    else:
        data = load_locomo_units(path, unit)
    every = data.conversations
    picked = select_conversations(conversations, len(every))
    model = await resolve_embedder(embedder)

    watch = Stopwatch()
    tally = _Tally()
    scored: list[tuple[str, dict[str, float]]] = []
    skipped = no_gold = memories = 0
    if progress is not None:
        progress(0, len(picked))
    async with open_stores(
        backend=store_kind, factory=store_url_factory, embedder=model, retrieval=retrieval
    ) as stores:
        for done, c_index in enumerate(picked, start=1):
            conv, units = every[c_index], data.units[c_index]
            async with stores.open(conv.sample_id) as mem:
                ids = await watch.ingest(mem, unit_items(units), agent_id=AGENT_ID)
                if len(set(ids)) != len(units):  # pragma: no cover - add_many's contract
                    msg = f"{conv.sample_id}: stored {len(set(ids))} of {len(units)} {unit}"
                    raise MemoryStoreError(msg)
                memories += len(ids)
                index_of = {mid: i for i, mid in enumerate(ids)}
                for qa in conv.qas:
                    if qa.category not in cats:
                        continue
                    if not qa.evidence or not qa.question.strip():
                        skipped += 1
                        continue
                    wanted = set(qa.evidence)
                    gold = {i for i, u in enumerate(units) if wanted.intersection(u.evidence)}
                    if not gold:
                        no_gold += 1
                        continue
                    scores = await _score_question(
                        mem, watch, qa.question, gold, index_of, retrieval, tally
                    )
                    scored.append((str(qa.category), scores))
                if off_topic and len(every) > 1:
                    other = every[(c_index + 1) % len(every)]
                    for qa in other.qas:
                        if qa.category not in cats or not qa.question.strip():
                            continue
                        ctx = await mem.context(qa.question, agent_id=AGENT_ID)
                        tally.off_topic += 1
                        tally.off_topic_injected += len(ctx.entries)
                        tally.off_topic_empty += not ctx.entries
            if progress is not None:
                progress(done, len(picked))

    per_cat, overall = aggregate(scored, UNIT_METRICS, groups=[str(c) for c in cats])
    rows = tuple(
        MetricRow.from_summary(key, LOCOMO_CATEGORIES[int(key)], summary)
        for key, summary in per_cat.items()
    )
    return LocomoUnitsReport(
        dataset=data.path,
        preset=retrieval.name,
        limit=AUC_TOP,
        backend="custom" if store_url_factory is not None else store_kind,
        embedder=model.model_id,
        metric_names=UNIT_METRICS,
        rows=rows,
        overall=MetricRow.from_summary("overall", "overall", overall),
        timing=watch.timing(),
        unit_kind=unit,
        conversation_indexes=picked,
        conversation_ids=tuple(every[i].sample_id for i in picked),
        memories=memories,
        questions=len(scored),
        no_gold_questions=no_gold,
        skipped_questions=skipped,
        dropped_evidence_ids=data.dropped_evidence_ids,
        injected_total=tally.injected,
        context_precision_micro=(tally.injected_gold / tally.injected if tally.injected else None),
        auc_top=AUC_TOP,
        auc_gold_hits=len(tally.gold_scores),
        auc_other_hits=len(tally.other_scores),
        relevance_auc=relevance_auc(tally.gold_scores, tally.other_scores),
        off_topic_questions=tally.off_topic,
        off_topic_empty=(tally.off_topic_empty / tally.off_topic if tally.off_topic else None),
        off_topic_mean_injected=(
            tally.off_topic_injected / tally.off_topic if tally.off_topic else None
        ),
    )


async def run_locomo_facts(
    path: str | Path | LocomoUnitsDataset,
    *,
    preset: str | RetrievalConfig = "default",
    embedder: Embedder | None = None,
    backend: str = "sqlite",
    store_url_factory: StoreFactory | None = None,
    progress: ProgressCallback | None = None,
    categories: Collection[int] = (1, 2, 3, 4),
    conversations: str | Collection[int] | None = None,
    off_topic: bool = True,
) -> LocomoUnitsReport:
    """:func:`run_locomo_units` with ``unit="facts"``: the observation facts as memories."""
    return await run_locomo_units(
        path,
        unit="facts",
        preset=preset,
        embedder=embedder,
        backend=backend,
        store_url_factory=store_url_factory,
        progress=progress,
        categories=categories,
        conversations=conversations,
        off_topic=off_topic,
    )


async def run_locomo_summaries(
    path: str | Path | LocomoUnitsDataset,
    *,
    preset: str | RetrievalConfig = "default",
    embedder: Embedder | None = None,
    backend: str = "sqlite",
    store_url_factory: StoreFactory | None = None,
    progress: ProgressCallback | None = None,
    categories: Collection[int] = (1, 2, 3, 4),
    conversations: str | Collection[int] | None = None,
    off_topic: bool = True,
) -> LocomoUnitsReport:
    """:func:`run_locomo_units` with ``unit="summaries"``: a memory per session summary."""
    return await run_locomo_units(
        path,
        unit="summaries",
        preset=preset,
        embedder=embedder,
        backend=backend,
        store_url_factory=store_url_factory,
        progress=progress,
        categories=categories,
        conversations=conversations,
        off_topic=off_topic,
    )
