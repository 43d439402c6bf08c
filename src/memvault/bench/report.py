"""Benchmark reports: frozen result records, their JSON form, and a rich table renderer."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text

from memvault.bench.metrics import Summary

__all__ = [
    "BenchReport",
    "LocomoReport",
    "LongMemEvalReport",
    "MetricRow",
    "Timing",
    "metric_header",
    "render_report",
]


@dataclass(frozen=True, slots=True)
class MetricRow:
    """Holds the mean metrics of one group of questions (a category, a question type, or all).

    ``counts[m]`` is how many questions contributed to metric ``m``; ``metrics[m]`` is None when
    none did.
    """

    key: str
    label: str
    questions: int
    metrics: dict[str, float | None]
    counts: dict[str, int]

    @classmethod
    def from_summary(cls, key: str, label: str, summary: Summary) -> MetricRow:
        """Build a row from a :class:`~memvault.bench.metrics.Summary`."""
        return cls(
            key=key,
            label=label,
            questions=summary.questions,
            metrics=dict(summary.means),
            counts=dict(summary.counts),
        )

    def to_json(self) -> dict[str, Any]:
        """Return the row as a JSON object."""
        return {
            "key": self.key,
            "label": self.label,
            "questions": self.questions,
            "metrics": dict(self.metrics),
            "counts": dict(self.counts),
        }


@dataclass(frozen=True, slots=True)
class Timing:
    """Holds the ingest time and search latency of a run.

    ``ingest_seconds`` sums the wall time of the batched writes (embedding included);
    the search latencies are measured around each ``search`` call (query embedding included).
    """

    ingest_seconds: float
    ingested: int
    searches: int
    search_p50_ms: float | None
    search_p95_ms: float | None

    @property
    def ingest_per_second(self) -> float | None:
        """Return ingested items per second, or None when nothing was timed."""
        if self.ingest_seconds <= 0:
            return None
        return self.ingested / self.ingest_seconds

    def to_json(self) -> dict[str, Any]:
        """Return the timing as a JSON object."""
        return {
            "ingest_seconds": self.ingest_seconds,
            "ingested": self.ingested,
            "ingest_per_second": self.ingest_per_second,
            "searches": self.searches,
            "search_p50_ms": self.search_p50_ms,
            "search_p95_ms": self.search_p95_ms,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchReport:
    """Holds what every benchmark report has: setup, metric rows per group, overall, timing."""

    dataset: str
    preset: str
    limit: int
    backend: str
    embedder: str
    metric_names: tuple[str, ...]
    rows: tuple[MetricRow, ...]
    overall: MetricRow
    timing: Timing

    benchmark: ClassVar[str] = "benchmark"
    group_name: ClassVar[str] = "group"
    group_key: ClassVar[str] = "groups"
    unit: ClassVar[str] = "items"

    @property
    def title(self) -> str:
        """Return a one-line heading naming the benchmark and its setup."""
        return (
            f"{self.benchmark} · preset {self.preset} · top {self.limit} · {self.backend} · "
            f"{self.embedder}"
        )

    def notes(self) -> list[str]:
        """Return lines saying what was evaluated and what was skipped."""
        return []

    def _extra_json(self) -> dict[str, Any]:
        # The counts a subclass adds: its own dataclass fields, in declaration order.
        own = {f.name for f in fields(BenchReport)}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in own}

    def to_json(self) -> dict[str, Any]:
        """Return the report as a JSON-ready dict (the ``--json`` output of ``memvault bench``)."""
        return {
            "benchmark": self.benchmark,
            "dataset": self.dataset,
            "preset": self.preset,
            "limit": self.limit,
            "backend": self.backend,
            "embedder": self.embedder,
            **self._extra_json(),
            "metrics": list(self.metric_names),
            self.group_key: [row.to_json() for row in self.rows],
            "overall": self.overall.to_json(),
            "timing": self.timing.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LocomoReport(BenchReport):
    """Holds the result of :func:`~memvault.bench.run_locomo`; rows are the QA categories."""

    conversations: int
    turns: int
    questions: int
    skipped_questions: int
    dropped_evidence_ids: int

    benchmark: ClassVar[str] = "locomo"
    group_name: ClassVar[str] = "category"
    group_key: ClassVar[str] = "categories"
    unit: ClassVar[str] = "turns"

    def notes(self) -> list[str]:
        """Return lines saying what was evaluated and what was skipped."""
        return [
            f"{self.questions} questions over {self.conversations} conversations "
            f"({self.turns} turns); {self.skipped_questions} skipped without valid evidence, "
            f"{self.dropped_evidence_ids} evidence ids dropped (malformed or absent)"
        ]


@dataclass(frozen=True, slots=True, kw_only=True)
class LongMemEvalReport(BenchReport):
    """Holds the result of :func:`~memvault.bench.run_longmemeval`; rows are question types."""

    questions: int
    turns: int
    skipped_abstention: int
    skipped_no_evidence: int
    skipped_blank_turns: int

    benchmark: ClassVar[str] = "longmemeval"
    group_name: ClassVar[str] = "question type"
    group_key: ClassVar[str] = "question_types"
    unit: ClassVar[str] = "turns"

    def notes(self) -> list[str]:
        """Return lines saying what was evaluated and what was skipped."""
        return [
            f"{self.questions} questions ({self.turns} turns); skipped: "
            f"{self.skipped_abstention} abstention, {self.skipped_no_evidence} without evidence "
            f"sessions; {self.skipped_blank_turns} blank turns not stored",
            "any@k / all@k: any / every answer session among the first k sessions of the ranked "
            "turns",
        ]


def metric_header(name: str) -> str:
    """Return the short column heading of a metric (``recall@10`` -> ``R@10``).

    Short headings keep the table readable in an 80-column terminal; JSON keeps the full names.
    """
    head, sep, k = name.partition("@")
    if head == "recall" and sep:
        return f"R@{k}"
    if head.endswith("_recall") and sep:
        return f"{head.removesuffix('_recall')} R@{k}"
    if head in ("session_any", "session_all") and sep:
        # The notes under a LongMemEval table say what "any" and "all" count.
        return f"{head.removeprefix('session_')}@{k}"
    if head == "ndcg" and sep:
        return f"nDCG@{k}"
    return name.upper() if name == "mrr" else name


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def render_report(report: BenchReport) -> Group:
    """Render a report as the metrics table (a row per group, then overall) and a footer line."""
    table = Table(title=report.title, title_justify="left")
    # In a narrow terminal (or a pipe, which rich reads as 80 columns) the group labels wrap;
    # the counts and the figures never shrink, so no number is ever cut to "0.8…".
    table.add_column(report.group_name, overflow="fold")
    table.add_column("n", justify="right", no_wrap=True, min_width=3)
    for name in report.metric_names:
        header = metric_header(name)
        table.add_column(header, justify="right", no_wrap=True, min_width=max(len(header), 5))
    for row in report.rows:
        table.add_row(
            row.label, str(row.questions), *(_fmt(row.metrics[m]) for m in report.metric_names)
        )
    table.add_section()
    overall = report.overall
    table.add_row(
        Text("overall", style="bold"),
        str(overall.questions),
        *(Text(_fmt(overall.metrics[m]), style="bold") for m in report.metric_names),
    )
    t = report.timing
    rate = t.ingest_per_second
    rate_text = "" if rate is None else f" ({rate:.0f} {report.unit}/s)"
    footer = (
        f"ingest: {t.ingested} {report.unit} in {t.ingest_seconds:.1f} s{rate_text} · "
        f"search: p50 {_ms(t.search_p50_ms)}, p95 {_ms(t.search_p95_ms)} "
        f"over {t.searches} searches"
    )
    return Group(table, *(Text(line, style="dim") for line in report.notes()), Text(footer))
