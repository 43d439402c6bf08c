"""Report records: JSON form and the rich table."""

from __future__ import annotations

import json

from rich.console import Console

from memvault.bench import LocomoReport, LongMemEvalReport, MetricRow, Timing, render_report
from memvault.bench.report import metric_header

NAMES = ("recall@1", "recall@10", "ndcg@10", "mrr")


def _row(
    key: str, label: str, value: float | None, n: int = 2, names: tuple[str, ...] = NAMES
) -> MetricRow:
    return MetricRow(
        key=key,
        label=label,
        questions=n,
        metrics=dict.fromkeys(names, value),
        counts=dict.fromkeys(names, n if value is not None else 0),
    )


def _locomo() -> LocomoReport:
    return LocomoReport(
        dataset="data.json",
        preset="default",
        limit=50,
        backend="sqlite",
        embedder="model-x",
        metric_names=NAMES,
        rows=(_row("1", "multi-hop", 0.25), _row("2", "temporal", None, 0)),
        overall=_row("overall", "overall", 0.25),
        timing=Timing(
            ingest_seconds=2.0, ingested=100, searches=2, search_p50_ms=8.25, search_p95_ms=12.5
        ),
        conversations=1,
        turns=100,
        questions=2,
        skipped_questions=1,
        dropped_evidence_ids=3,
    )


def test_locomo_json_shape() -> None:
    data = _locomo().to_json()
    json.dumps(data)  # JSON-ready
    assert data["benchmark"] == "locomo"
    assert data["metrics"] == list(NAMES)
    assert [c["label"] for c in data["categories"]] == ["multi-hop", "temporal"]
    assert data["categories"][1]["metrics"]["mrr"] is None
    assert data["overall"]["metrics"]["recall@10"] == 0.25
    assert data["timing"]["ingest_per_second"] == 50.0
    assert data["timing"]["search_p95_ms"] == 12.5
    assert (data["skipped_questions"], data["dropped_evidence_ids"]) == (1, 3)


def _lme(
    names: tuple[str, ...], rows: tuple[MetricRow, ...], overall: MetricRow, timing: Timing
) -> LongMemEvalReport:
    return LongMemEvalReport(
        dataset="lme.json",
        preset="bm25",
        limit=10,
        backend="memory",
        embedder="sentence-transformers/all-MiniLM-L6-v2",
        metric_names=names,
        rows=rows,
        overall=overall,
        timing=timing,
        questions=overall.questions,
        turns=30,
        skipped_abstention=1,
        skipped_no_evidence=0,
        skipped_blank_turns=4,
    )


def test_longmemeval_json_shape() -> None:
    report = _lme(
        NAMES,
        (_row("multi-session", "multi-session", 0.5),),
        _row("overall", "overall", 0.5),
        Timing(ingest_seconds=0.0, ingested=0, searches=0, search_p50_ms=None, search_p95_ms=None),
    )
    data = report.to_json()
    assert data["benchmark"] == "longmemeval"
    assert [t["key"] for t in data["question_types"]] == ["multi-session"]
    assert data["timing"]["ingest_per_second"] is None
    assert data["skipped_abstention"] == 1
    text = _render(report)
    assert "p50 -" in text


def _render(report: LocomoReport | LongMemEvalReport) -> str:
    console = Console(width=100, record=True, color_system=None)
    console.print(render_report(report))
    return console.export_text()


def test_table_has_a_row_per_group_an_overall_row_and_a_footer() -> None:
    text = _render(_locomo())
    lines = text.splitlines()
    assert "locomo · preset default · top 50 · sqlite" in lines[0]
    header = next(line for line in lines if "category" in line)
    for head in ("R@1", "R@10", "nDCG@10", "MRR"):
        assert head in header
    multi = next(line for line in lines if "multi-hop" in line)
    assert multi.count("0.250") == 4
    temporal = next(line for line in lines if "temporal" in line)
    assert temporal.count(" - ") >= 4
    assert any("overall" in line and "0.250" in line for line in lines)
    assert lines[-1] == (
        "ingest: 100 turns in 2.0 s (50 turns/s) · search: p50 8.2 ms, p95 12.5 ms over 2 searches"
    )


def test_the_table_fits_80_columns() -> None:
    console = Console(width=80, record=True, color_system=None)
    console.print(render_report(_locomo()))
    assert "…" not in console.export_text()


def test_metric_headers() -> None:
    assert metric_header("recall@10") == "R@10"
    assert metric_header("session_recall@5") == "session R@5"
    assert metric_header("turn_recall@10") == "turn R@10"
    assert metric_header("ndcg@10") == "nDCG@10"
    assert metric_header("mrr") == "MRR"
    assert metric_header("other") == "other"


def test_a_longmemeval_table_fits_80_columns_without_cutting_a_figure() -> None:
    names = ("turn_recall@10", "session_any@5", "session_all@5", "session_recall@10", "ndcg@10")
    types = ("single-session-preference", "single-session-assistant", "temporal-reasoning")
    report = _lme(
        names,
        tuple(_row(t, t, 0.875, 123, names) for t in types),
        _row("overall", "overall", 0.875, 369, names),
        Timing(ingest_seconds=1.0, ingested=10, searches=3, search_p50_ms=9.0, search_p95_ms=12.0),
    )
    console = Console(width=80, record=True, color_system=None)
    console.print(render_report(report))
    text = console.export_text()
    table = text.split("any@k")[0]
    assert "…" not in table
    for head in ("turn R@10", "any@5", "all@5", "session R@10", "nDCG@10"):
        assert head in table
    # Every figure and count is printed whole; long type names wrap instead.
    assert table.count("0.875") == 5 * 4
    assert table.count("123") == 3
    assert "369" in table
    assert "any@k / all@k: any / every answer session" in text
