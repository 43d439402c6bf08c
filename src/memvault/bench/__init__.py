"""Retrieval benchmarks: dataset loaders, metrics, runners and reports.

* :func:`load_locomo` / :func:`run_locomo` - LoCoMo (Maharana et al., 2024), the protocol of
  DESIGN section 9: one store per conversation, one memory per dialogue turn, evidence recall.
* :func:`load_locomo_units` / :func:`run_locomo_facts` / :func:`run_locomo_summaries` - LoCoMo
  with its observation facts or session summaries as the memories: recall of gold facts, what
  the default ``context()`` injects, relevance AUC, off-topic questions.
* :func:`load_longmemeval` / :func:`run_longmemeval` - LongMemEval (Wu et al., 2025): one store
  per question, session- and turn-level recall.
* :mod:`memvault.bench.metrics` - recall@k, nDCG@k, MRR, percentiles, aggregation.
* :func:`render_report` - a rich table of a report; every report also has ``to_json()``.

The datasets are not part of memvault (their licences forbid bundling them): the runners take
the path of a file downloaded by the user.
"""

from __future__ import annotations

from memvault.bench.datasets import (
    LOCOMO_CATEGORIES,
    LocomoConversation,
    LocomoDataset,
    LocomoQA,
    LocomoTurn,
    LongMemEvalDataset,
    LongMemEvalItem,
    LongMemEvalSession,
    LongMemEvalTurn,
    load_locomo,
    load_longmemeval,
    normalize_evidence,
    parse_locomo_datetime,
    parse_longmemeval_datetime,
)
from memvault.bench.locomo import run_locomo
from memvault.bench.locomo_units import (
    LocomoUnit,
    LocomoUnitsDataset,
    LocomoUnitsReport,
    load_locomo_units,
    render_units_report,
    run_locomo_facts,
    run_locomo_summaries,
    run_locomo_units,
)
from memvault.bench.longmemeval import run_longmemeval
from memvault.bench.report import (
    BenchReport,
    LocomoReport,
    LongMemEvalReport,
    MetricRow,
    Timing,
    render_report,
)

__all__ = [
    "LOCOMO_CATEGORIES",
    "BenchReport",
    "LocomoConversation",
    "LocomoDataset",
    "LocomoQA",
    "LocomoReport",
    "LocomoTurn",
    "LocomoUnit",
    "LocomoUnitsDataset",
    "LocomoUnitsReport",
    "LongMemEvalDataset",
    "LongMemEvalItem",
    "LongMemEvalReport",
    "LongMemEvalSession",
    "LongMemEvalTurn",
    "MetricRow",
    "Timing",
    "load_locomo",
    "load_locomo_units",
    "load_longmemeval",
    "normalize_evidence",
    "parse_locomo_datetime",
    "parse_longmemeval_datetime",
    "render_report",
    "render_units_report",
    "run_locomo",
    "run_locomo_facts",
    "run_locomo_summaries",
    "run_locomo_units",
    "run_longmemeval",
]
